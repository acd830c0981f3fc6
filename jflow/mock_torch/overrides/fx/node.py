"""``torch.fx.node``: the names of :mod:`torch.fx` (no FX tracing in jflow), and the type
aliases libraries annotate with (``Target``, ``Argument``: PyTorch's definitions, loosely)."""

from collections.abc import Callable
from typing import Any, Union

from . import *  # noqa: F403
from . import __all__ as _fx_all

__all__ = [*_fx_all, "Target", "Argument"]

#: what a node calls: a function or a qualified name (PyTorch's alias)
Target = Union[Callable[..., Any], str]  # noqa: UP007  (a runtime alias, as PyTorch's)
#: a node's argument (PyTorch's recursive alias, without the recursion)
Argument = Any
