"""``torch.fx._symbolic_trace``: the names of :mod:`torch.fx` (no FX tracing in jflow)."""

from . import *  # noqa: F403
from . import __all__  # noqa: F401
