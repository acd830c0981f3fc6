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
from ..tensor import Tensor, _flatten

__all__ = ["Parameter", "is_parameter"]


class Parameter(Tensor):
    """A leaf tensor that is a module parameter: ``nn.Parameter(flow.randn(3, 4))``.

    It shares the value (and placement/SBP) of ``data`` (an immutable array, so nothing is
    copied) and requires grad unless ``requires_grad=False``. Ops on a parameter give plain
    tensors; in-place updates (under ``flow.no_grad()``) keep the same ``Parameter`` object.
    ``p.data`` is a detached view (``p.data.mul_(0.9)`` updates ``p``, untracked).
    """

    __slots__ = ()

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"nn.Parameter(): data must be a Tensor, got {type(data).__name__}")
        self._value = data._value
        self._requires_grad = False
        self._grad = None
        self.grad_fn = None
        self._version = 0
        self._global = data._global
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
    p = object.__new__(Parameter)
    p._value = children[0]
    p._grad = None
    p.grad_fn = None
    p._version = 0
    if aux.__class__ is tuple:
        p._requires_grad, p._global = aux
    else:
        p._requires_grad, p._global = aux, None
    return p


jax.tree_util.register_pytree_node(Parameter, _flatten, _unflatten_parameter)


def is_parameter(x: object) -> bool:
    return isinstance(x, Parameter)
