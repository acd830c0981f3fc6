"""``torch.autograd.Variable``: the pre-0.4 wrapper, kept for old code.

Since PyTorch 0.4 a ``Variable`` *is* a ``Tensor``: ``Variable(t, requires_grad=True)``
returns a tensor (a leaf sharing ``t``'s data, detached from ``t``'s history) and
``isinstance(x, Variable)`` holds for every tensor. jflow's is the same: ``Variable(t)`` is
``t.detach()`` (a view of ``t``: writes to either show in the other) with
``requires_grad`` set, and the class only answers ``isinstance``.
"""

from __future__ import annotations

import warnings
from typing import Any

import jax.numpy as jnp

from ..tensor import Tensor, _wrap

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)

    def __call__(cls, data: Any = None, requires_grad: bool = False, volatile: bool = False
                 ) -> Tensor:
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "torch.no_grad():` instead.", UserWarning, stacklevel=2)
        if data is None:
            return _wrap(jnp.zeros((0,), jnp.float32))
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got "
                            f"{type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False, volatile=False)``: ``data`` detached, as a
    (leaf) tensor; ``isinstance(t, Variable)`` is True for any tensor."""
