"""``torch.fx.graph_module``: the names of :mod:`torch.fx` (no FX tracing in jflow), plus the
two helpers libraries import from here to build modules out of a traced graph's pieces
(``_copy_attr``, ``_CodeOnlyModule``): plain module operations, PyTorch's code for them."""

from __future__ import annotations

from typing import Any

from jflow.nn import Module, Parameter
from jflow.tensor import Tensor

from . import *  # noqa: F403
from . import __all__ as _fx_all

__all__ = [*_fx_all, "_copy_attr", "_CodeOnlyModule", "_USER_PRESERVED_ATTRIBUTES_KEY"]

#: the attribute a GraphModule keeps user-preserved attributes under (PyTorch's name)
_USER_PRESERVED_ATTRIBUTES_KEY = "_user_preserved_attributes"


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    """Copy the attribute at dotted path ``target`` of ``from_module`` into ``to_module``,
    creating empty parent modules on the way (a tensor that is no parameter becomes a
    buffer), as PyTorch's helper does."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:  # a parent was installed already: its children came with it
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


class _CodeOnlyModule(Module):
    """A module whose ``__dict__`` is ``body`` (PyTorch's: the instance state of another
    module, reused for generated code)."""

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__()
        self.__dict__ = body
