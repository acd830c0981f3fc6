"""Helpers shared by the backward rules: direct op access and broadcast reduction."""

from __future__ import annotations

from typing import Any

import jax

from ...functional.promotion import scalar_tensor
from ...ops import registry as _registry
from ...ops.attrs import scalar_as
from ...tensor import Tensor, _wrap

__all__ = ["O", "sum_to", "zeros", "zeros_like", "ones_like", "scalar_like", "keep_where"]


class _Ops:
    """``O.mul(x, y)``: an op's ``apply`` (no functor promotion: rules know their dtypes)."""

    def __getattr__(self, name: str) -> Any:
        f = _registry.get(name).apply
        setattr(self, name, f)
        return f


O = _Ops()


def sum_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Reduce a broadcast gradient back to ``shape`` (sum over the broadcast dimensions)."""
    gs = tuple(g._meta.shape)
    shape = tuple(shape)
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and gs[lead + i] != 1)
    r = O.reduce_sum(g, axis=axes, keepdim=True) if axes else g
    return O.reshape(r, shape=shape) if tuple(r._meta.shape) != shape else r


def scalar_like(value: Any, like: Tensor) -> Tensor:
    """A 0-d tensor of ``like``'s dtype (cached per value/dtype: no recompiles). ``value`` may
    be a dynamic attr's 0-d array (a tracer in a compiled rule): it is rounded as the same
    Python float would be."""
    if value.__class__ is not float and isinstance(value, jax.Array):
        return _wrap(scalar_as(value, like._meta.dtype))
    return scalar_tensor(value, like._meta.dtype)


def zeros(shape: tuple[int, ...], like: Tensor) -> Tensor:
    """Zeros of ``like``'s dtype and the given shape."""
    return O.full(shape=tuple(shape), value=0.0, dtype=like._meta.dtype)


def zeros_like(t: Tensor) -> Tensor:
    return O.full(shape=tuple(t._meta.shape), value=0.0, dtype=t._meta.dtype)


def ones_like(t: Tensor) -> Tensor:
    return O.full(shape=tuple(t._meta.shape), value=1.0, dtype=t._meta.dtype)


def keep_where(cond: Tensor, dy: Tensor) -> Tensor:
    """``dy`` where ``cond``, else 0 (the gradient of piecewise ops like relu and clamp)."""
    return O.where(cond, dy, scalar_like(0.0, dy))
