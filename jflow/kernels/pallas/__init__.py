"""Pallas kernels for jflow's hot paths, the ``pallas`` kernel backend.

Importing this package registers the backend and the kernels: OPTIMIZED-priority kernels for
``cuda`` (Triton, see :mod:`._compat` and docs/kernels.md) with dtype / shape conditions,
each with a CPU twin that runs in interpret mode only while :func:`set_interpret` (or
``flow.config.enable_pallas_interpret``) is on. Outside the conditions the xla kernel runs.
"""

from ._base import (
    FLOAT_DTYPES,
    LAUNCHES,
    interpret,
    interpret_enabled,
    register_pallas_kernel,
    set_interpret,
)

__all__ = ["FLOAT_DTYPES", "LAUNCHES", "interpret", "interpret_enabled",
           "register_pallas_kernel", "set_interpret"]

from . import attention, cross_entropy, fused, norm, softmax  # noqa: E402,F401  (register the kernels)
