"""Type promotion and operand preparation for functors (ops themselves are dtype-strict).

Hot path: the common case (same dtypes) costs one dtype comparison.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import dtypes as _dt
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.graph import rebase_inplace
from ..ops import get as _get_op
from ..tensor import Tensor, _wrap, mark_constant
from .wrapped_number import WrappedNumber

__all__ = ["result_dtype", "cast", "promote", "scalar_tensor", "scalar_result_dtype",
           "to_float", "assign_inplace", "default_float_np"]

_cast = _get_op("cast").apply
_where = _get_op("where").apply
_BOOL = np.dtype(np.bool_)
_SCALAR_CACHE: dict[Any, Tensor] = {}
_SCALAR_CACHE_SIZE = 1024


def default_float_np() -> np.dtype:
    return _dt.get_default_dtype().np


def cast(t: Tensor, np_dtype: np.dtype) -> Tensor:
    """``t`` as ``np_dtype`` (itself when it already is)."""
    if t._meta.dtype == np_dtype:
        return t
    return _cast(t, dtype=np_dtype)


def result_dtype(*tensors: Tensor, scalars: tuple[Any, ...] = ()) -> np.dtype:
    """PyTorch's result type of tensors (0-dim ones in their own tier) and Python scalars
    (with them, :class:`WrappedNumber` tensors: a traced step's learning rate)."""
    dims, zero, numbers = [], [], [_dt.scalar_category(s) for s in scalars]
    for t in tensors:
        d = _dt.from_numpy_dtype(t._meta.dtype)
        if t.__class__ is WrappedNumber:
            numbers.append(d.category)
        else:
            (dims if t._meta.ndim else zero).append(d)
    return _dt.result_type(dims, zero, numbers).np


def promote(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """Cast two tensors to their PyTorch result type."""
    da, db = a._meta.dtype, b._meta.dtype
    if da == db:
        return a, b
    rt = result_dtype(a, b)
    return cast(a, rt), cast(b, rt)


def scalar_result_dtype(t: Tensor, s: Any) -> np.dtype:
    """Result type of a tensor and a Python scalar (the tensor wins unless the scalar's
    category is higher: int tensor * 0.5 -> default float, bool tensor + 1 -> int64)."""
    d = t._meta.dtype
    cat = _dt.scalar_category(s)
    tcat = _dt.from_numpy_dtype(d).category
    if cat <= tcat:
        return d
    if cat == 3:  # a Python complex: the complex type of a float tensor's width
        return _dt.complex_of(_dt.from_numpy_dtype(d) if tcat == 2
                              else _dt.get_default_dtype()).np
    return (np.dtype(np.bool_), np.dtype(np.int64), default_float_np())[cat]


def scalar_tensor(value: Any, np_dtype: np.dtype) -> Tensor:
    """A cached 0-dim tensor holding ``value`` as ``np_dtype`` (bounded cache).

    The key tells ``0.0`` from ``-0.0`` (equal and same hash, but ``x * -0.0`` differs) and
    ``1`` from ``True``; NaN never equals itself and is simply not cached.
    """
    key = (type(value), value, np_dtype, math.copysign(1.0, value)
           if type(value) is float else 0)
    t = _SCALAR_CACHE.get(key)
    if t is None:
        nd = np.dtype(np_dtype)
        if isinstance(value, complex) and nd.kind != "c":
            raise TypeError(f"cannot use the complex number {value} as a {nd.name} scalar "
                            f"(its imaginary part would be lost)")
        if isinstance(value, float) and nd.kind in "iub" and value != int(value):
            raise TypeError(f"cannot use the float {value} as a {nd.name} scalar")
        if isinstance(value, int) and nd.kind in "iu":
            info = np.iinfo(nd)
            if not info.min <= value <= info.max:
                raise OverflowError(f"the Python scalar {value} cannot be converted to "
                                    f"{_dt.from_numpy_dtype(nd)} without overflow (range "
                                    f"[{info.min}, {info.max}])")
        with jax.ensure_compile_time_eval():  # a concrete array even while tracing: it is
            t = mark_constant(_wrap(jnp.asarray(value, dtype=np_dtype)))  # cached: no tracer
        if value == value:
            if len(_SCALAR_CACHE) >= _SCALAR_CACHE_SIZE:
                _SCALAR_CACHE.clear()
            _SCALAR_CACHE[key] = t
    return t


def to_float(t: Tensor) -> Tensor:
    """Integer/bool tensors become the default float dtype (for float-only math)."""
    d = t._meta.dtype
    if d.kind in "iub":
        return _cast(t, dtype=default_float_np())
    return t


def _can_cast(src: np.dtype, dst: np.dtype) -> bool:
    """PyTorch's can_cast for in-place results: no float->int, no number->bool."""
    s, d = _dt.from_numpy_dtype(src).category, _dt.from_numpy_dtype(dst).category
    return s <= d


#: PyTorch's ScalarType names, used in messages that mirror PyTorch's.
_TORCH_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                "float64": "Double"}


def assign_inplace(target: Tensor, result: Tensor, fname: str) -> Tensor:
    """Write ``result`` into ``target`` (dtype kept, shape must match), bump its version.

    As in PyTorch the result is cast to the target's dtype, except from a higher category to a
    lower one (bool < integer < floating), which is refused: ``int_tensor += 0.5`` raises
    ``RuntimeError: result type Float can't be cast to the desired output type Long``.
    """
    tv, rv = target._meta, result._meta
    if tuple(rv.shape) != tuple(tv.shape):
        raise RuntimeError(f"{fname}: output with shape {list(tv.shape)} doesn't match the "
                           f"broadcast shape {list(rv.shape)}")
    if rv.dtype != tv.dtype:
        if not _can_cast(rv.dtype, tv.dtype):
            src, dst = _dt.from_numpy_dtype(rv.dtype).name, _dt.from_numpy_dtype(tv.dtype).name
            raise RuntimeError(f"{fname}: result type {_TORCH_NAMES[src]} can't be cast to the "
                               f"desired output type {_TORCH_NAMES[dst]}")
        result = _cast(result, dtype=tv.dtype)
    return rebase_inplace(target, _keep_history(target, result), fname)


def _keep_history(target: Tensor, result: Tensor) -> Tensor:
    """``result`` on the tape when it is not, but ``target`` or ``result`` requires grad.

    As PyTorch, an in-place op never drops the graph: ``y.zero_()`` / ``y.fill_(v)`` /
    ``y.copy_(src)`` on a ``y`` with history still requires grad, and the gradient reaching
    the old ``y`` is zero (``y.copy_(leaf)`` sends it to the leaf instead). A value with no
    node of its own (a constant, or a leaf) is joined by ``where(True, result, target)``: the
    same values, a zero gradient to ``target``. In-place ops that read ``target`` already
    have a node, so they pay one attribute test.
    """
    if result.grad_fn is None and (target.grad_fn is not None or result._requires_grad) \
            and is_grad_enabled():
        return _where(scalar_tensor(True, _BOOL), result, target)
    return result
