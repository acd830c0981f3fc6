"""Functors of the factory ops: defaults (float32 / int64), devices and generators."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ... import dtypes as _dt
from ...ops import get
from ...random import default_generator
from ...tensor import Tensor
from ..promotion import scalar_tensor
from ..registry import functor

_full, _arange, _linspace, _eye = (get(n).apply for n in ("full", "arange", "linspace", "eye"))
_uniform, _normal, _randint = (get(n).apply for n in ("uniform", "normal", "randint"))
_add, _mul = get("add").apply, get("mul").apply


def on_device(t: Tensor, device: Any) -> Tensor:
    """Move ``t`` to ``device`` when one is given and differs."""
    if device is None or isinstance(t._value, jax.core.Tracer):
        return t
    target = device.jax_device()
    if target not in t._value.devices():
        t._value = jax.device_put(t._value, target)
    return t


def _float_dtype(dtype: Any, fname: str) -> Any:
    d = _dt.get_default_dtype() if dtype is None else dtype
    if not d.is_floating_point:
        raise TypeError(f"{fname}(): dtype must be a floating dtype, got {d}")
    return d


_EXACT = 1 << 53  # ints beyond this lose digits in the op's double ``value`` attr


def _check_int_range(fname: str, what: str, value: int, dtype: Any) -> None:
    if dtype.category == 1:  # integer dtypes
        info = np.iinfo(dtype.np)
        if not info.min <= value <= info.max:
            raise OverflowError(f"{fname}(): {what} {value} cannot be converted to {dtype} "
                                f"without overflow (range [{info.min}, {info.max}])")


@functor("Full")
def full(size: tuple, value: Any, dtype: Any, device: Any) -> Tensor:
    """``value`` as a scalar of ``dtype`` (default: bool / int64 / default float by the
    value's kind); integers that a double cannot hold exactly are added on exactly."""
    if dtype is None:
        dtype = _dt.result_type([], [], [_dt.scalar_category(value)])
    if type(value) is int:
        _check_int_range("full", "fill value", value, dtype)
        if abs(value) > _EXACT and dtype.category == 1:
            zeros = _full(shape=size, value=0.0, dtype=dtype.np)
            return on_device(_add(zeros, scalar_tensor(value, dtype.np)), device)
    return on_device(_full(shape=size, value=float(value), dtype=dtype.np), device)


@functor("Arange")
def arange(start: Any, end: Any, step: Any, dtype: Any, device: Any) -> Tensor:
    if dtype is None:
        dtype = _dt.result_type([], [], [max(_dt.scalar_category(v) for v in (start, end, step)),
                                         1])
    ints = all(type(v) is int for v in (start, end, step))
    if ints and dtype.category == 1 and max(abs(start), abs(end), abs(step)) > _EXACT:
        return on_device(_exact_int_arange(start, end, step, dtype), device)
    return on_device(_arange(start=float(start), end=float(end), step=float(step),
                             dtype=dtype.np), device)


def _exact_int_arange(start: int, end: int, step: int, dtype: Any) -> Tensor:
    """Integer ranges beyond 2**53, which the op's double attrs would round (even to an
    empty range): ``start + step * arange(n)`` with exact integer scalars."""
    if step == 0:
        raise ValueError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange(): upper bound and larger bound inconsistent with step sign "
                         f"(start={start}, end={end}, step={step})")
    n = -((start - end) // step)  # ceil((end - start) / step), exactly
    if n:
        _check_int_range("arange", "start", start, dtype)
        _check_int_range("arange", "last value", start + (n - 1) * step, dtype)
    base = _arange(start=0.0, end=float(n), step=1.0, dtype=dtype.np)
    return _add(_mul(base, scalar_tensor(step, dtype.np)), scalar_tensor(start, dtype.np))


@functor("ArangeEnd")
def arange_end(end: Any, dtype: Any, device: Any) -> Tensor:
    return arange(0, end, 1, dtype, device)


@functor("Linspace")
def linspace(start: Any, end: Any, steps: int, dtype: Any, device: Any) -> Tensor:
    d = _dt.get_default_dtype() if dtype is None else dtype
    return on_device(_linspace(start=float(start), end=float(end), steps=steps, dtype=d.np), device)


@functor("Eye")
def eye(n: int, m: Any, dtype: Any, device: Any) -> Tensor:
    d = _dt.get_default_dtype() if dtype is None else dtype
    return on_device(_eye(n=n, m=n if m is None else m, dtype=d.np), device)


@functor("Rand")
def rand(size: tuple, generator: Any, dtype: Any, device: Any) -> Tensor:
    key, counter = (generator or default_generator)._next()
    return on_device(_uniform(key, counter, shape=size, dtype=_float_dtype(dtype, "rand").np),
                     device)


@functor("Randn")
def randn(size: tuple, generator: Any, dtype: Any, device: Any) -> Tensor:
    key, counter = (generator or default_generator)._next()
    return on_device(_normal(key, counter, shape=size, dtype=_float_dtype(dtype, "randn").np),
                     device)


@functor("RandInt")
def randint(low: int, high: int, size: tuple, generator: Any, dtype: Any, device: Any) -> Tensor:
    d = _dt.int64 if dtype is None else dtype
    if d.is_floating_point or d is _dt.bool_:
        raise TypeError(f"randint(): dtype must be an integer dtype, got {d}")
    if low >= high:
        raise ValueError(f"randint(): low ({low}) must be less than high ({high})")
    _check_int_range("randint", "low", low, d)
    _check_int_range("randint", "high - 1", high - 1, d)
    key, counter = (generator or default_generator)._next()
    return on_device(_randint(key, counter, shape=size, dtype=d.np, low=low, high=high), device)
