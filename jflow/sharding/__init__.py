"""Placement + SBP (OneFlow's distributed model) on ``jax.sharding``.

This package now holds the SBP values and the op-signature helpers every op declares with;
placement, boxing and sharded execution build on them.
"""

from . import sbp
from .placement import placement

__all__ = ["sbp", "placement"]
