"""``torch.distributed.checkpoint.default_planner`` (planners raise when constructed)."""

from . import _Refused

__all__ = ["DefaultLoadPlanner", "DefaultSavePlanner"]


class DefaultLoadPlanner(_Refused):
    """Raises when constructed."""


class DefaultSavePlanner(_Refused):
    """Raises when constructed."""
