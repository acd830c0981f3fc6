"""Functors of the factory ops: defaults (float32 / int64), devices and generators."""

from __future__ import annotations

from typing import Any

import jax

from ... import dtypes as _dt
from ...ops import get
from ...random import default_generator
from ...tensor import Tensor
from ..registry import functor

_full, _arange, _linspace, _eye = (get(n).apply for n in ("full", "arange", "linspace", "eye"))
_uniform, _normal, _randint = (get(n).apply for n in ("uniform", "normal", "randint"))


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


@functor("Full")
def full(size: tuple, value: Any, dtype: Any = None, device: Any = None) -> Tensor:
    if dtype is None:
        dtype = _dt.result_type([], [], [_dt.scalar_category(value)])
    return on_device(_full(shape=size, value=float(value), dtype=dtype.np), device)


@functor("Arange")
def arange(start: Any, end: Any, step: Any = 1, dtype: Any = None, device: Any = None) -> Tensor:
    if dtype is None:
        dtype = _dt.result_type([], [], [max(_dt.scalar_category(v) for v in (start, end, step)),
                                         1])
    return on_device(_arange(start=float(start), end=float(end), step=float(step),
                             dtype=dtype.np), device)


@functor("ArangeEnd")
def arange_end(end: Any, dtype: Any = None, device: Any = None) -> Tensor:
    return arange(0, end, 1, dtype, device)


@functor("Linspace")
def linspace(start: Any, end: Any, steps: int, dtype: Any = None, device: Any = None) -> Tensor:
    d = _dt.get_default_dtype() if dtype is None else dtype
    return on_device(_linspace(start=float(start), end=float(end), steps=steps, dtype=d.np), device)


@functor("Eye")
def eye(n: int, m: Any = None, dtype: Any = None, device: Any = None) -> Tensor:
    d = _dt.get_default_dtype() if dtype is None else dtype
    return on_device(_eye(n=n, m=n if m is None else m, dtype=d.np), device)


@functor("Rand")
def rand(size: tuple, generator: Any = None, dtype: Any = None, device: Any = None) -> Tensor:
    key, counter = (generator or default_generator)._next()
    return on_device(_uniform(key, counter, shape=size, dtype=_float_dtype(dtype, "rand").np),
                     device)


@functor("Randn")
def randn(size: tuple, generator: Any = None, dtype: Any = None, device: Any = None) -> Tensor:
    key, counter = (generator or default_generator)._next()
    return on_device(_normal(key, counter, shape=size, dtype=_float_dtype(dtype, "randn").np),
                     device)


@functor("RandInt")
def randint(low: int, high: int, size: tuple, generator: Any = None, dtype: Any = None,
            device: Any = None) -> Tensor:
    d = _dt.int64 if dtype is None else dtype
    if d.is_floating_point or d is _dt.bool_:
        raise TypeError(f"randint(): dtype must be an integer dtype, got {d}")
    key, counter = (generator or default_generator)._next()
    return on_device(_randint(key, counter, shape=size, dtype=d.np, low=low, high=high), device)
