"""``torch.cuda.graphs``: see :mod:`torch.cuda` (streams, events and graphs)."""

from . import *  # noqa: F403
from . import __all__  # noqa: F401
