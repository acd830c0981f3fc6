"""Reading a node's saved values back for its backward (also ``Function.ctx.saved_tensors``).

Saved values are checked against the version their tensor had when saved (PyTorch's "modified
by an inplace operation" error) and refused once the graph was freed; for ``create_graph`` they
come back as tensors still connected to the graph.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.core import Tracer

from ..sharding.spec import info_of_value
from ..tensor import Tensor
from ..tensor import _wrap as _wrap_value
from .graph import LEAF, Node, version_error
from .rule import is_differentiable_dtype

__all__ = ["FREED", "saved_tensors", "wrap_saved"]


def wrap_saved(value: Any) -> Tensor:
    """A Tensor around a saved value, global (placement + SBP read from its sharding) when the
    value is a global array."""
    t = _wrap_value(value)
    sh = getattr(value, "sharding", None)
    if sh is not None and not isinstance(sh, jax.sharding.SingleDeviceSharding):
        t._global = info_of_value(value)
    elif sh is None and isinstance(value, Tracer):
        t._global = info_of_value(value)
    return t


FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
          "after they have already been freed). Saved intermediate values of the graph are freed "
          "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need "
          "to backward through the graph a second time or if you need to access saved tensors "
          "after calling backward.")


def saved_tensors(node: Node, connect: bool) -> list[Any]:
    """The node's saved values, after the version check; as graph-connected Tensors when
    ``connect`` (create_graph), else as plain values."""
    if node.freed:
        raise RuntimeError(FREED)
    out = []
    for value, ref, version, nr in node.saved:  # type: ignore[union-attr]
        t = ref if nr == LEAF else ref()
        if t is not None and t._version != version:
            raise version_error(node, value, nr, t._version, version)
        if not connect:
            out.append(value)
        elif nr == LEAF:
            out.append(t)
        elif t is not None and t.grad_fn is node:
            out.append(t)
        elif not is_differentiable_dtype(value.dtype):  # e.g. saved indices: a constant
            out.append(wrap_saved(value))
        else:  # the output tensor is gone: a new handle on its value, still on the graph
            n = wrap_saved(value)
            n._requires_grad = True
            n.grad_fn = node
            n._output_nr = nr
            out.append(n)
    return out
