"""Functors of the factory ops: defaults (float32 / int64), devices and generators; the draws
with tensor parameters (``poisson``, ``binomial``) with their value checks."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ... import dtypes as _dt
from ...device import device as _device
from ...dispatch import _WATCH
from ...lazy_mode.checks import defer_check
from ...lazy_values import LOCAL, LazyTensor
from ...meta import meta_value
from ...ops import get
from ...random import default_generator
from ...tensor import HOST_DATA, Tensor, _wants_meta, _wrap
from ...value_bounds import note as note_bounds
from ..promotion import scalar_tensor
from ..registry import functor
from ._checks import torch_name

_full, _arange, _linspace, _eye = (get(n).apply for n in ("full", "arange", "linspace", "eye"))
_uniform, _normal, _randint = (get(n).apply for n in ("uniform", "normal", "randint"))
_add, _mul = get("add").apply, get("mul").apply


def on_device(t: Tensor, device: Any) -> Tensor:
    """Move ``t`` to ``device`` when one is given and differs (the meta device, given or the
    default: ``t``'s shape and dtype only)."""
    if isinstance(t._meta, jax.core.Tracer):
        return t
    if _wants_meta(device):
        t._value = meta_value(t._meta.shape, t._meta.dtype)
        return t
    if device is None:
        return t
    target = device.jax_device()
    if target not in t._value.devices():
        t._value = jax.device_put(t._value, target)
    return t


_CPU = _device("cpu")  # (inside jax.eval_shape the result is abstract: nothing is placed)


def _meta(shape: tuple, dtype: Any) -> Tensor:
    """A new meta tensor (jflow.meta): a factory on the meta device allocates nothing and
    draws no random numbers (the generator's state is unchanged, as in PyTorch)."""
    return _wrap(meta_value(shape, dtype))


def _abstract(fn: Any) -> Tensor:
    """``fn()``'s result as a meta tensor, from JAX's abstract evaluation (nothing runs)."""
    v = jax.eval_shape(lambda: fn()._value)
    return _meta(v.shape, v.dtype)


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
    if _wants_meta(device):
        if type(value) is int:
            _check_int_range("full", "fill value", value, dtype)
        return _meta(size, dtype.np)
    if type(value) is int:
        _check_int_range("full", "fill value", value, dtype)
        if abs(value) > _EXACT and dtype.category == 1:
            zeros = _full(shape=size, value=0.0, dtype=dtype.np)
            return on_device(_add(zeros, scalar_tensor(value, dtype.np)), device)
    host = _host_full(size, value, dtype, device)
    if host is not None:
        return host
    return on_device(_full(shape=size, value=float(value), dtype=dtype.np), device)


#: the largest ``full`` made on the host (elements), and the sightings of one (shape, dtype,
#: value) made there before its op is compiled
HOST_FULL_MAX = 1 << 20
HOST_FULL_SIGHTINGS = 64
_FULL_SEEN: OrderedDict[tuple, int] = OrderedDict()
_FULL_TABLE = 256  # (shape, dtype, value) keys remembered, least recently seen dropped


def _full_value_key(value: Any) -> Any:
    """``value`` as a table key: floats by their bits (NaN equal to NaN, -0.0 not 0.0)."""
    return float(value).hex() if isinstance(value, float) else value


def _host_full(size: tuple, value: Any, dtype: Any, device: Any) -> Tensor | None:
    """A constant made by NumPy and placed on the CPU the first
    :data:`HOST_FULL_SIGHTINGS` times its (shape, dtype, value) is asked for, else None (the
    op). Why: building a model makes each parameter with ``empty`` / ``zeros`` / ``ones``
    once per shape and layer, and each shape compiled a ``full`` program (~30 ms; a
    ResNet-18's construction: 19 of them, 0.65 s cold). A constant that keeps recurring (a
    training loop's zeros) then compiles the op once and takes its faster dispatch (~12 µs,
    where a ``device_put`` costs ~45): its first sightings cost ~2 ms in all. Not under a
    ``flow.jit`` trace (the op joins the program), not while this thread records lazily (a
    constant as pending host data would key its segment apart from a later step that has a
    device array in its place: measured on an optimizer's first state, every later step
    compiled again), off the CPU, or over :data:`HOST_FULL_MAX` elements. (Lazy mode's
    optimizer step makes its first state with recording paused: here, no program.)"""
    if _WATCH[0] is not None or math.prod(size) > HOST_FULL_MAX or (
            HOST_DATA[0] is not None and LOCAL.active is not None):
        return None
    target = None if device is None else device.jax_device()
    if (jax.default_backend() if target is None else target.platform) != "cpu":
        return None
    key = (size, dtype.np, _full_value_key(value))
    seen = _FULL_SEEN.pop(key, 0) + 1
    _FULL_SEEN[key] = seen
    if len(_FULL_SEEN) > _FULL_TABLE:
        _FULL_SEEN.popitem(last=False)
    if seen > HOST_FULL_SIGHTINGS:
        return None
    return _host(np.full(size, float(value), dtype.np), device)  # (converted as the op's)


@functor("Arange")
def arange(start: Any, end: Any, step: Any, dtype: Any, device: Any) -> Tensor:
    if dtype is None:
        dtype = _dt.result_type([], [], [max(_dt.scalar_category(v) for v in (start, end, step)),
                                         1])
    if _wants_meta(device):
        return _abstract(lambda: arange(start, end, step, dtype, _CPU))
    ints = all(type(v) is int for v in (start, end, step))
    out = None
    if ints and dtype.category == 1 and step and 0 <= (end - start) * step:
        out = _host_arange(start, end, step, dtype, device)
    if out is None and ints and dtype.category == 1 and \
            max(abs(start), abs(end), abs(step)) > _EXACT:
        out = on_device(_exact_int_arange(start, end, step, dtype), device)
    elif out is None:
        out = on_device(_arange(start=float(start), end=float(end), step=float(step),
                                dtype=dtype.np), device)
    v = out._meta
    if (ints and dtype.category == 1 and isinstance(v, jax.Array) and v.size
            and not isinstance(v, jax.core.Tracer)):
        last = start + (v.size - 1) * step  # (position ids on an accelerator: their bounds
        note_bounds(v, min(start, last), max(start, last))  # check reads these)
    return out


#: the longest integer range :func:`_host_arange` makes on the host
HOST_ARANGE_MAX = 1 << 16


def _host_arange(start: int, end: int, step: int, dtype: Any, device: Any) -> Tensor | None:
    """An integer range made by NumPy and placed on the CPU (no watcher on op calls, at
    most :data:`HOST_ARANGE_MAX` values, every value in the dtype's range), else None.
    Why: the op's executable would queue behind the computations still running, and
    position ids are read at once by the next op's bounds check (``emb(arange(t))``), which
    would then wait for the previous training step to finish; a placed host array is ready
    at once (a zero-copy ``device_put`` on CPU; in lazy mode a pending input whose values
    the check reads from the host: :func:`_host`)."""
    if _WATCH[0] is not None:  # (a flow.jit trace watches op calls: the op's path)
        return None
    n = -((start - end) // step)
    info = np.iinfo(dtype.np)
    if n > HOST_ARANGE_MAX or not (info.min <= min(start, end) and max(start, end) <= info.max):
        return None  # (long, or values the dtype wraps: the op's path and its messages)
    target = None if device is None else device.jax_device()  # (None: JAX's default device)
    if (jax.default_backend() if target is None else target.platform) != "cpu":
        return None
    return _host(np.arange(start, end, step, dtype=dtype.np), device)


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
    if _wants_meta(device):
        if steps < 0:
            raise RuntimeError(f"linspace(): number of steps must be non-negative, got {steps}")
        return _meta((steps,), d.np)
    if _aten_arith(d) and steps >= 0:
        return _host(_aten_linspace(start, end, steps, d.np), device)
    return on_device(_linspace(start=float(start), end=float(end), steps=steps, dtype=d.np), device)


@functor("Eye")
def eye(n: int, m: Any, dtype: Any, device: Any) -> Tensor:
    d = _dt.get_default_dtype() if dtype is None else dtype
    if _wants_meta(device):
        return _abstract(lambda: _eye(n=n, m=n if m is None else m, dtype=d.np))
    return on_device(_eye(n=n, m=n if m is None else m, dtype=d.np), device)


@functor("Rand")
def rand(size: tuple, generator: Any, dtype: Any, device: Any) -> Tensor:
    if _wants_meta(device):
        return _meta(size, _float_dtype(dtype, "rand").np)
    key, counter = (generator or default_generator)._next()
    return on_device(_uniform(key, counter, shape=size, dtype=_float_dtype(dtype, "rand").np),
                     device)


@functor("Randn")
def randn(size: tuple, generator: Any, dtype: Any, device: Any) -> Tensor:
    if _wants_meta(device):
        return _meta(size, _float_dtype(dtype, "randn").np)
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
    if _wants_meta(device):
        return _meta(size, d.np)
    key, counter = (generator or default_generator)._next()
    return on_device(_randint(key, counter, shape=size, dtype=d.np, low=low, high=high), device)


# -- draws with tensor parameters: poisson, binomial ---------------------------------------------

_poisson_op, _binomial_op = get("poisson").apply, get("binomial").apply


def _check_values(t: Tensor, stats: Any, check: Any) -> None:
    """``check(*stats(values of t))``: now when the values are at hand (on the host), when the
    lazy segment runs when they are pending (no flush: ``stats``' jitted twin recorded in the
    segment), never under a trace (the draw is then defined by the op for any values, as the
    other random functions' arguments are unchecked there)."""
    if isinstance(t._meta, jax.core.Tracer) or t._meta.size == 0 or t.is_meta:
        return
    if defer_check(_JITTED[stats], (t,), check, host=stats):
        return
    check(*stats(np.asarray(t._value)))


def _rate_stats(x: Any) -> tuple[Any, Any]:
    """(a rate is negative or NaN, a rate is infinite): NumPy or traced JAX arrays."""
    xp = np if isinstance(x, np.ndarray) else jnp
    return xp.any(xp.isnan(x) | (x < 0)), xp.any(xp.isinf(x))


def _check_rates(bad: Any, inf: Any) -> None:
    if bool(bad):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    if bool(inf):
        raise RuntimeError("poisson(): a rate is inf; its draw is undefined (PyTorch returns "
                           "a meaningless number there), so jflow refuses it")


@functor("Poisson")
def poisson(input: Tensor, generator: Any) -> Tensor:  # noqa: A002  (PyTorch's name)
    """torch.poisson: one draw from Poisson(``input``) per element, in ``input``'s dtype
    (floating), from ``generator`` (default: the global one). Rates must be finite and
    non-negative (checked on concrete values; under a trace they are not). The gradient is
    zero, as PyTorch's."""
    if not input.is_floating_point():
        raise NotImplementedError(f"poisson(): expected a floating point tensor of rates, got "
                                  f"{input.dtype} (PyTorch: \"poisson\" not implemented for "
                                  f"'{torch_name(input._meta.dtype)}')")
    _check_values(input, _rate_stats, _check_rates)
    key, counter = (generator or default_generator)._next()
    return _poisson_op(input, key, counter)


def _count_stats(x: Any) -> tuple[Any]:
    """(a count is not a whole finite number,): NumPy or traced JAX arrays."""
    xp = np if isinstance(x, np.ndarray) else jnp
    return (xp.any(~xp.isfinite(x) | (x != xp.round(x))),)


#: the value checks' jitted twins (one object each: a lazy segment's structure names them)
_JITTED = {f: jax.jit(f) for f in (_rate_stats, _count_stats)}


def _check_counts(bad: Any) -> None:
    if bool(bad):
        raise RuntimeError("binomial(): count must hold whole, finite numbers of trials "
                           "(PyTorch's sampler gives no binomial draw for others: it loops "
                           "forever on nan); jflow refuses them")


@functor("Binomial")
def binomial(count: Tensor, prob: Tensor, generator: Any) -> Tensor:
    """torch.binomial: one draw from Binomial(``count``, ``prob``) per element (the two
    broadcast), in their floating dtype, from ``generator`` (default: the global one). As
    PyTorch's sampler: 0 where ``count <= 0`` or ``prob <= 0``, ``count`` where ``prob >= 1``,
    NaN where ``prob`` is NaN. Counts must be whole and finite (checked on concrete values).
    No derivative: a backward through it raises, as PyTorch's."""
    if not count.is_floating_point():
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{torch_name(count._meta.dtype)}")
    if prob._meta.dtype != count._meta.dtype:
        raise RuntimeError(f"binomial(): Found dtype {torch_name(prob._meta.dtype)} but "
                           f"expected {torch_name(count._meta.dtype)} (prob must have "
                           f"count's dtype)")
    _check_values(count, _count_stats, _check_counts)
    key, counter = (generator or default_generator)._next()
    return _binomial_op(count, prob, key, counter)


# -- more factories (logspace & co.) -------------------------------------------------------------


@functor("Logspace")
def logspace(start: Any, end: Any, steps: int, base: float, dtype: Any, device: Any) -> Tensor:
    """torch.logspace: ``base ** linspace(start, end, steps)`` (computed in float64, then in
    ``dtype``: the default float dtype unless given)."""
    if steps < 0:
        raise ValueError(f"logspace(): argument 'steps' must be non-negative, got {steps}")
    d = _dt.get_default_dtype() if dtype is None else dtype
    if _aten_arith(d) and d.is_floating_point:  # float16 / bfloat16: ATen's arithmetic
        # (PyTorch computes in float32 from the bounds rounded to the dtype; one step is
        # ``base ** start`` from the exact start)
        t = np.dtype(d.np).type
        if steps == 1:
            return _host(np.array([float(base) ** float(start)]).astype(d.np), device)
        exps = _aten_linspace(float(t(float(start))), float(t(float(end))), steps, np.float32)
        vals = np.power(np.float32(base), exps)
        return _host(vals.astype(d.np), device)
    if not d.is_floating_point:  # ATen converts the bounds to the integer type first
        start, end = int(float(start)), int(float(end))
    exps = np.linspace(float(start), float(end), steps, dtype=np.float64)
    vals = np.power(float(base), exps)
    if not d.is_floating_point:
        vals = np.trunc(vals)
    return _host(vals.astype(d.np), device)


def _window(fname: str, length: int, periodic: bool, dtype: Any, device: Any,
            formula: Any) -> Tensor:
    """A window of ``length`` points: ``formula(n, N)`` over ``n = 0..length-1`` with
    ``N = length + 1`` when ``periodic`` (the symmetric window one longer, its last point
    dropped), computed in float64, then in ``dtype`` (floating; default float dtype)."""
    if length < 0:
        raise ValueError(f"{fname}(): argument 'window_length' must be non-negative, got "
                         f"{length}")
    d = _float_dtype(dtype, fname)
    if length <= 1:
        vals = np.ones(length, np.float64)
    else:
        n_pts = length + 1 if periodic else length
        vals = formula(np.arange(length, dtype=np.float64), float(n_pts - 1))
    return _host(vals.astype(d.np), device)


@functor("HannWindow")
def hann_window(window_length: int, periodic: bool, dtype: Any, device: Any) -> Tensor:
    """torch.hann_window: ``0.5 - 0.5 cos(2 pi n / (N - 1))``."""
    return _window("hann_window", window_length, periodic, dtype, device,
                   lambda n, m: 0.5 - 0.5 * np.cos(2 * np.pi * n / m))


@functor("HammingWindow")
def hamming_window(window_length: int, periodic: bool, alpha: float, beta: float, dtype: Any,
                   device: Any) -> Tensor:
    """torch.hamming_window: ``alpha - beta cos(2 pi n / (N - 1))``."""
    return _window("hamming_window", window_length, periodic, dtype, device,
                   lambda n, m: alpha - beta * np.cos(2 * np.pi * n / m))


@functor("BlackmanWindow")
def blackman_window(window_length: int, periodic: bool, dtype: Any, device: Any) -> Tensor:
    """torch.blackman_window: ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, device,
                   lambda n, m: 0.42 - 0.5 * np.cos(2 * np.pi * n / m)
                   + 0.08 * np.cos(4 * np.pi * n / m))


@functor("BartlettWindow")
def bartlett_window(window_length: int, periodic: bool, dtype: Any, device: Any) -> Tensor:
    """torch.bartlett_window: ``1 - |2 n / (N - 1) - 1|``."""
    return _window("bartlett_window", window_length, periodic, dtype, device,
                   lambda n, m: 1.0 - np.abs(2.0 * n / m - 1.0))


@functor("KaiserWindow")
def kaiser_window(window_length: int, periodic: bool, beta: float, dtype: Any, device: Any
                  ) -> Tensor:
    """torch.kaiser_window: ``I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta)``."""
    return _window("kaiser_window", window_length, periodic, dtype, device,
                   lambda n, m: np.i0(beta * np.sqrt(np.clip(1.0 - (2.0 * n / m - 1.0) ** 2,
                                                             0.0, None))) / np.i0(beta))


# -- linspace / logspace in ATen's arithmetic for integer and 16-bit float dtypes ----------------

def _aten_arith(d: Any) -> bool:
    """Whether ``d`` is a dtype whose linspace PyTorch computes in its own arithmetic (bounds
    converted first, then ``start + step * i`` up to halfway, ``end - step * (n - 1 - i)``
    after): integers (double step, truncated) and float16 / bfloat16 (every operation
    rounded to the dtype)."""
    return (not d.is_floating_point and d is not _dt.bool_) or d in (_dt.float16, _dt.bfloat16)


def _aten_linspace(start: Any, end: Any, steps: int, np_dtype: Any) -> np.ndarray:
    dt = np.dtype(np_dtype)
    idx = np.arange(steps)
    if dt.kind in "iu":
        s, e = float(int(float(start))), float(int(float(end)))
        if steps == 1:
            return np.full(1, s).astype(dt)
        step = (e - s) / (steps - 1) if steps > 1 else 0.0
        vals = np.where(idx < steps // 2, s + step * idx, e - step * (steps - 1 - idx))
        return np.trunc(vals).astype(dt)
    t = dt.type
    s, e = t(float(start)), t(float(end))
    if steps <= 1:
        return np.full(steps, s, dt)
    step = (e - s) / t(steps - 1)
    lo = s + step * idx.astype(dt)
    hi = e - step * (steps - 1 - idx).astype(dt)
    return np.where(idx < steps // 2, lo, hi).astype(dt)


def _host(vals: np.ndarray, device: Any = None) -> Tensor:
    """A fresh host array (never written to after) as a tensor on ``device`` (None: the
    default device). In lazy mode on the default device, a pending input of the thread's
    next run, as ``flow.tensor``'s data: no transfer of its own (``device_put`` costs ~45 µs
    in Python, a step's position ids every step), and its values stay known for checks
    (``lazy_mode.checks.host_value``: an embedding's bounds check reads them at once).
    Otherwise ``device_put``: it compiles nothing (``jnp.asarray`` compiles a copy program
    per shape) and on CPU the array is ready at once, where an executable would queue behind
    the computations still running. Placed as an op's result is: on JAX's default device,
    not committed to it, then moved only if ``device`` is another (a committed array makes
    every executable it reaches commit its outputs, and the next training step, on
    committed parameters, compiles everything again)."""
    if device is None and HOST_DATA[0] is not None and not _wants_meta(None):
        ref = HOST_DATA[0](vals)
        if ref is not None:
            t = _wrap(ref)
            t.__class__ = LazyTensor
            return t
    return on_device(_wrap(jax.device_put(vals)), device)
