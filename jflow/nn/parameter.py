"""``nn.Parameter``: a :class:`~jflow.Tensor` that a :class:`~jflow.nn.Module` registers.

``Parameter`` is a real ``Tensor`` subclass (no extra slots), so every op, operator and
method accepts it, ``isinstance(p, flow.Tensor)`` holds, and it is a JAX pytree like a
``Tensor``: flattening gives its value, unflattening gives a ``Parameter`` back.
"""

from __future__ import annotations

import copy
from typing import Any

import jax

from ..creation import empty
from ..lazy_values import register_lazy_class
from ..tensor import Tensor, _flatten, _start, _wrap, new_tensor

__all__ = ["Parameter", "Buffer", "is_parameter"]



def _adopt(t: Tensor, data: Tensor | None, fname: str) -> None:
    """``t`` takes ``data``'s value (no copy) as a fresh leaf: no grad, no history."""
    if data is None:
        data = empty(0)
    if not isinstance(data, Tensor):
        raise TypeError(f"{fname}(): data must be a Tensor, got {type(data).__name__}")
    _start(t, data._value)
    t._global = data._global


class Parameter(Tensor):
    """A leaf tensor that is a module parameter: ``nn.Parameter(flow.randn(3, 4))``.

    It shares the value (and placement/SBP) of ``data`` (an immutable array, so nothing is
    copied) and requires grad unless ``requires_grad=False``. Ops on a parameter give plain
    tensors; in-place updates (under ``flow.no_grad()``) keep the same ``Parameter`` object.
    ``p.data`` is a detached view (``p.data.mul_(0.9)`` updates ``p``, untracked).
    """

    # no __slots__: a parameter takes attributes of its own (``p._is_hf_initialized = True``,
    # ``p.sequence_parallel``), as PyTorch's does; pickling and deepcopy of a tensor subclass
    # keep its ``__dict__`` (tensor.py)

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        _adopt(self, data, "nn.Parameter")
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        out = Parameter(self.detach(), requires_grad=self._requires_grad)
        if self.grad is not None:
            out.grad = copy.deepcopy(self.grad, memo)
        memo[id(self)] = out
        return out


def _unflatten_parameter(aux: Any, children: Any) -> Parameter:
    p = new_tensor(Parameter, children[0])
    if aux.__class__ is tuple:
        p._requires_grad, p._global = aux
    else:
        p._requires_grad, p._global = aux, None
    return p


jax.tree_util.register_pytree_node(Parameter, _flatten, _unflatten_parameter)
# (lazy mode: an optimizer's in-place update of a parameter records; the parameter is pending
# until read, and stays an ``nn.Parameter`` throughout)
register_lazy_class(Parameter, _unflatten_parameter)


class Buffer(Tensor):
    """A tensor to register as a buffer by attribute assignment (PyTorch >= 2.5):
    ``self.running = nn.Buffer(flow.zeros(3), persistent=False)`` is
    ``self.register_buffer("running", flow.zeros(3), persistent=False)``.

    Only a marker: the module stores a plain ``Tensor`` with the same value (ops, compiled
    steps and checkpoints never see a ``Buffer``), as PyTorch's ``Buffer`` is a plain tensor
    with a flag. Like PyTorch, the data is detached and keeps its ``requires_grad``.
    """

    __slots__ = ("persistent",)

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        _adopt(self, data, "nn.Buffer")
        self.persistent = bool(persistent)
        if data.requires_grad:
            self.requires_grad_(True)

    def _as_tensor(self) -> Tensor:
        """The plain tensor a module stores for this buffer."""
        t = _wrap(self._value)
        t._global = self._global
        t._requires_grad = self._requires_grad
        return t


def is_parameter(x: object) -> bool:
    """Whether ``x`` is a ``Parameter``."""
    return isinstance(x, Parameter)
