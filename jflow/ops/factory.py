"""Factory ops (no tensor inputs, or only a PRNG key): full, arange, linspace, eye and the
random draws, with the draws whose parameters are tensors (``poisson``, ``binomial``). Random
ops take the generator's key and a draw counter as inputs, so a new draw never recompiles and
the same (seed, counter) always gives the same numbers."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from ..kernels.registry import register_kernel
from .infer import FLOAT, INT, broadcast_shapes, check_dtype, desc
from .primitive import define_op
from .registry import Attr

_FACTORY = ("NoSideEffect", "NoGrad")


def _check_shape(shape, **_):
    if any(s < 0 for s in shape):
        raise ValueError(f"sizes must be non-negative, got {list(shape)}")


define_op("full", outputs=["out"], traits=_FACTORY, check=_check_shape,
          attrs=[Attr("shape", "shape"), Attr("value", "double", static=True),
                 Attr("dtype", "dtype")],
          infer=lambda shape, value, dtype: desc(shape, dtype))
register_kernel("full", lambda shape, value, dtype: jnp.full(shape, value, dtype), name="full_xla")


def _arange_len(start, end, step):
    return max(0, math.ceil((end - start) / step))


def _arange_check(start, end, step, dtype):
    if step == 0:
        raise ValueError("step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"upper bound and larger bound inconsistent with step sign "
                         f"(start={start}, end={end}, step={step})")


def _arange_kernel(start, end, step, dtype):
    n = _arange_len(start, end, step)
    if jnp.issubdtype(dtype, jnp.integer) and all(float(v).is_integer() for v in (start, step)):
        return (int(start) + int(step) * jnp.arange(n, dtype=jnp.int64)).astype(dtype)
    return (start + step * jnp.arange(n, dtype=jnp.float64)).astype(dtype)


define_op("arange", outputs=["out"], traits=_FACTORY, check=_arange_check,
          attrs=[Attr("start", "double", static=True), Attr("end", "double", static=True),
                 Attr("step", "double", static=True), Attr("dtype", "dtype")],  # the length
          infer=lambda start, end, step, dtype: desc((_arange_len(start, end, step),), dtype))
register_kernel("arange", _arange_kernel, name="arange_xla")


def _linspace_check(start, end, steps, dtype):
    if steps < 0:
        raise ValueError(f"number of steps must be non-negative, got {steps}")


define_op("linspace", outputs=["out"], traits=_FACTORY, check=_linspace_check,
          attrs=[Attr("start", "double", static=True), Attr("end", "double", static=True),
                 Attr("steps", "int64"), Attr("dtype", "dtype")],
          infer=lambda start, end, steps, dtype: desc((steps,), dtype))
register_kernel("linspace", lambda start, end, steps, dtype:
                jnp.linspace(start, end, steps, dtype=jnp.float64).astype(dtype),
                name="linspace_xla")


def _eye_check(n, m, dtype):
    if n < 0 or m < 0:
        raise ValueError(f"n and m must be non-negative, got n={n}, m={m}")


define_op("eye", outputs=["out"], traits=_FACTORY, check=_eye_check,
          attrs=[Attr("n", "int64"), Attr("m", "int64"), Attr("dtype", "dtype")],
          infer=lambda n, m, dtype: desc((n, m), dtype))
register_kernel("eye", lambda n, m, dtype: jnp.eye(n, m, dtype=dtype), name="eye_xla")


# -- random: inputs (key uint32[2], counter int64[]) ----------------------------------------

def _key_of(key, counter):
    return jax.random.fold_in(key, counter.astype(jnp.uint32))


def flat_draw(draw: Any, shape: Any) -> Any:
    """``draw(n)`` for the ``n`` elements of ``shape``, reshaped. The same numbers as drawing
    ``shape`` directly (JAX's threefry counts elements in row-major order either way), but
    XLA compiles the 1-d draw 4-7x faster than an n-d one (e.g. 0.3 s instead of 2 s for a
    4-d conv weight on CPU), and every new parameter shape of a model compiles one."""
    return draw((math.prod(shape),)).reshape(shape)


def _random_infer(allowed):
    def infer(key, counter, shape, dtype, **_):
        if tuple(key.shape) != (2,) or key.dtype != jnp.uint32:
            raise TypeError(f"key must be a uint32[2] PRNG key, got {key.dtype}{list(key.shape)}")
        check_dtype(desc((), dtype), allowed, "dtype")
        return desc(shape, dtype)
    return infer


define_op("uniform", inputs=["key", "counter"], outputs=["out"], traits=_FACTORY,
          check=lambda shape, dtype, low, high: _check_shape(shape),
          # static: as operands, float16 draws would round differently
          attrs=[Attr("shape", "shape"), Attr("dtype", "dtype"),
                 Attr("low", "double", 0.0, static=True),
                 Attr("high", "double", 1.0, static=True)], infer=_random_infer(FLOAT))
register_kernel("uniform", lambda key, counter, shape, dtype, low, high: flat_draw(
    lambda n: jax.random.uniform(_key_of(key, counter), n, dtype, low, high), shape),
    name="uniform_xla")

define_op("normal", inputs=["key", "counter"], outputs=["out"], traits=_FACTORY,
          check=lambda shape, dtype, mean, std: _check_shape(shape),
          attrs=[Attr("shape", "shape"), Attr("dtype", "dtype"),
                 Attr("mean", "double", 0.0, static=True),
                 Attr("std", "double", 1.0, static=True)], infer=_random_infer(FLOAT))
register_kernel("normal", lambda key, counter, shape, dtype, mean, std: (
    mean + std * flat_draw(lambda n: jax.random.normal(
        _key_of(key, counter), n, jnp.float32 if dtype in (jnp.float16, jnp.bfloat16) else dtype),
        shape)).astype(dtype), name="normal_xla")


def _randint_check(shape, dtype, low, high):
    _check_shape(shape)
    if low >= high:
        raise ValueError(f"low ({low}) must be less than high ({high})")


define_op("randint", inputs=["key", "counter"], outputs=["out"], traits=_FACTORY,
          check=_randint_check,
          attrs=[Attr("shape", "shape"), Attr("dtype", "dtype"), Attr("low", "int64"),
                 Attr("high", "int64")], infer=_random_infer(INT))
register_kernel("randint", lambda key, counter, shape, dtype, low, high: flat_draw(
    lambda n: jax.random.randint(_key_of(key, counter), n, low, high, dtype), shape),
    name="randint_xla")


# -- random draws with tensor parameters: poisson, binomial ---------------------------------
# inputs (params..., key uint32[2], counter int64[]); half-precision parameters are drawn in
# float32 and rounded. Not NoGrad: PyTorch's outputs require grad when a parameter does
# (poisson's gradient is zero, binomial's raises: autograd/rules/factory.py).

_HALF = (jnp.float16, jnp.bfloat16)


def _check_key(key: Any) -> None:
    if tuple(key.shape) != (2,) or key.dtype != jnp.uint32:
        raise TypeError(f"key must be a uint32[2] PRNG key, got {key.dtype}{list(key.shape)}")


def _draw_dtype(dtype: Any) -> Any:
    return jnp.float32 if dtype in _HALF else dtype


def _poisson_infer(rate: Any, key: Any, counter: Any) -> Any:
    check_dtype(rate, FLOAT, "input")
    _check_key(key)
    return desc(rate.shape, rate.dtype)


def _poisson_kernel(rate: Any, key: Any, counter: Any) -> Any:
    lam = rate.astype(_draw_dtype(rate.dtype)).reshape(-1)
    n = flat_draw(lambda s: jax.random.poisson(_key_of(key, counter), lam, s, jnp.int64),
                  rate.shape)
    return n.astype(rate.dtype)


define_op("poisson", inputs=["rate", "key", "counter"], outputs=["out"],
          infer=_poisson_infer,
          doc="one Poisson draw per element of the non-negative rates (JAX's Knuth / "
              "transformed-rejection sampler), in the rates' dtype")
register_kernel("poisson", _poisson_kernel, name="poisson_xla")


def _binomial_infer(count: Any, prob: Any, key: Any, counter: Any) -> Any:
    check_dtype(count, FLOAT, "count")
    check_dtype(prob, FLOAT, "prob")
    if count.dtype != prob.dtype:
        raise TypeError(f"count and prob must have the same dtype, got {count.dtype} and "
                        f"{prob.dtype}")
    _check_key(key)
    return desc(broadcast_shapes(count.shape, prob.shape), count.dtype)


def _binomial_kernel(count: Any, prob: Any, key: Any, counter: Any) -> Any:
    shape = jnp.broadcast_shapes(count.shape, prob.shape)
    d = _draw_dtype(count.dtype)
    n = jnp.broadcast_to(count, shape).astype(d)
    p = jnp.broadcast_to(prob, shape).astype(d)
    # PyTorch's sampler (ATen's sample_binomial): 0 where count <= 0 or prob <= 0, count
    # where prob >= 1; JAX's draw only sees parameters inside its domain
    zero, full = (n <= 0) | (p <= 0), p >= 1
    safe_n = jnp.where(zero | full, jnp.ones((), d), n).reshape(-1)
    safe_p = jnp.where(zero | full, jnp.full((), 0.5, d), p).reshape(-1)
    draw = flat_draw(lambda s: jax.random.binomial(_key_of(key, counter), safe_n, safe_p, s, d),
                     shape)
    out = jnp.where(zero, jnp.zeros((), d), jnp.where(full, n, draw))
    return out.astype(count.dtype)


define_op("binomial", inputs=["count", "prob", "key", "counter"], outputs=["out"],
          infer=_binomial_infer,
          doc="one binomial draw per element of (count, prob), broadcast; 0 where count <= 0 "
              "or prob <= 0 and count where prob >= 1 (PyTorch's sampler)")
register_kernel("binomial", _binomial_kernel, name="binomial_xla")
