"""Checker samples for jflow/ops/factory.py.

The deterministic factories (full, arange, linspace, eye) have NumPy references. The random
draws (uniform, normal, randint) cannot be predicted, so their ``verify`` functions check the
properties that define them: shape and dtype, the value range, rough statistics on large
draws, determinism for the same (key, counter), and that another counter or another key
gives other numbers. Random inputs are ``[key uint32[2], counter int64[]]``.
"""

from __future__ import annotations

from typing import Any

import jax
import ml_dtypes
import numpy as np

from ..samples import ErrorSample, Sample, register_samples, rerun

_BF16 = np.dtype(ml_dtypes.bfloat16)

# -- full ----------------------------------------------------------------------------------

register_samples(
    "full",
    [Sample([], {"shape": (2, 3), "value": 1.5, "dtype": np.float32}),
     Sample([], {"shape": (4,), "value": -7.0, "dtype": np.int64}),
     Sample([], {"shape": (2, 2), "value": 3.0, "dtype": np.uint8}),
     Sample([], {"shape": (3,), "value": 1.0, "dtype": np.bool_}),
     Sample([], {"shape": (2,), "value": 0.0, "dtype": np.bool_}),
     Sample([], {"shape": (2, 1), "value": 0.1, "dtype": np.float16}),
     Sample([], {"shape": (3,), "value": 2.5, "dtype": _BF16}),
     Sample([], {"shape": (), "value": -0.25, "dtype": np.float64}),
     Sample([], {"shape": (0, 3), "value": 1.0, "dtype": np.float32})],
    lambda shape, value, dtype: np.full(shape, value, dtype=dtype),
    errors=[ErrorSample([], {"shape": (2, -1), "value": 0.0, "dtype": np.float32}, ValueError,
                        "non-negative"),
            ErrorSample([], {"shape": (2,), "value": 0.0, "dtype": "complex32"}, TypeError,
                        "dtype")])

# -- arange --------------------------------------------------------------------------------


def _arange_ref(start: float, end: float, step: float, dtype: Any) -> np.ndarray:
    n = max(0, int(np.ceil((end - start) / step)))
    return (np.float64(start) + np.float64(step) * np.arange(n, dtype=np.float64)).astype(dtype)


register_samples(
    "arange",
    [Sample([], {"start": 0.0, "end": 5.0, "step": 1.0, "dtype": np.int64}),
     Sample([], {"start": -3.0, "end": 10.0, "step": 4.0, "dtype": np.int32}),
     Sample([], {"start": 0.0, "end": 1.0, "step": 0.25, "dtype": np.float32}),
     Sample([], {"start": 5.0, "end": 0.0, "step": -1.5, "dtype": np.float64}),
     Sample([], {"start": 0.0, "end": 0.3, "step": 0.1, "dtype": np.float64}),
     Sample([], {"start": 2.0, "end": 2.0, "step": 1.0, "dtype": np.float32}),
     Sample([], {"start": 0.0, "end": 4.0, "step": 1.0, "dtype": np.float16})],
    _arange_ref,
    errors=[ErrorSample([], {"start": 0.0, "end": 5.0, "step": 0.0, "dtype": np.int64},
                        ValueError, "step must be nonzero"),
            ErrorSample([], {"start": 0.0, "end": 5.0, "step": -1.0, "dtype": np.float32},
                        ValueError, "inconsistent with step sign")])

# -- linspace ------------------------------------------------------------------------------


def _linspace_ref(start: float, end: float, steps: int, dtype: Any) -> np.ndarray:
    if steps == 1:
        return np.array([start], dtype=np.float64).astype(dtype)
    i = np.arange(steps, dtype=np.float64)
    return (start + (end - start) * i / max(steps - 1, 1)).astype(dtype)


register_samples(
    "linspace",
    [Sample([], {"start": 0.0, "end": 1.0, "steps": 5, "dtype": np.float32}),
     Sample([], {"start": -2.0, "end": 3.0, "steps": 11, "dtype": np.float64}),
     Sample([], {"start": 0.0, "end": 10.0, "steps": 5, "dtype": np.int64}),
     Sample([], {"start": 4.0, "end": -4.0, "steps": 3, "dtype": np.float16}),
     Sample([], {"start": 1.5, "end": 9.0, "steps": 1, "dtype": np.float32}),
     Sample([], {"start": 0.0, "end": 1.0, "steps": 0, "dtype": np.float32})],
    _linspace_ref,
    errors=[ErrorSample([], {"start": 0.0, "end": 1.0, "steps": -1, "dtype": np.float32},
                        ValueError, "non-negative")])

# -- eye -----------------------------------------------------------------------------------


def _eye_ref(n: int, m: int, dtype: Any) -> np.ndarray:
    out = np.zeros((n, m), dtype=np.float64)
    for i in range(min(n, m)):
        out[i, i] = 1
    return out.astype(dtype)


register_samples(
    "eye",
    [Sample([], {"n": 3, "m": 3, "dtype": np.float32}),
     Sample([], {"n": 2, "m": 4, "dtype": np.int64}),
     Sample([], {"n": 4, "m": 2, "dtype": np.bool_}),
     Sample([], {"n": 1, "m": 1, "dtype": _BF16}),
     Sample([], {"n": 0, "m": 3, "dtype": np.float64})],
    _eye_ref,
    errors=[ErrorSample([], {"n": -1, "m": 2, "dtype": np.float32}, ValueError,
                        "non-negative")])

# -- random draws --------------------------------------------------------------------------


def _key(seed: int) -> np.ndarray:
    """A raw uint32[2] PRNG key (what ``flow.Generator`` hands the random ops)."""
    return np.asarray(jax.random.PRNGKey(seed), dtype=np.uint32)


_K0, _K1 = _key(0), _key(12345)
_C0, _C1 = np.array(0, np.int64), np.array(7, np.int64)


def _draw(op: str, key: np.ndarray, counter: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """The op again on (key, counter): under the checker by the path whose outputs verify
    checks, with its executable (:func:`jflow.testing.samples.rerun`)."""
    return rerun(op, [key, counter], attrs)[0]


def _check_common(op: str, out: np.ndarray, key: np.ndarray, counter: np.ndarray,
                  attrs: dict[str, Any], varies: bool = True) -> None:
    """Shape and dtype; same (key, counter) -> same numbers; another counter or key differs
    (for draws of 16+ values that can vary at all)."""
    shape, dtype = tuple(attrs["shape"]), np.dtype(attrs["dtype"])
    assert out.shape == shape, f"{op}: shape {out.shape}, expected {shape}"
    assert out.dtype == dtype, f"{op}: dtype {out.dtype}, expected {dtype}"
    again = _draw(op, key, counter, attrs)
    assert np.array_equal(out, again), f"{op}: the same key and counter gave other numbers"
    if varies and out.size >= 16:
        nxt = _draw(op, key, counter + 1, attrs)
        assert not np.array_equal(out, nxt), f"{op}: counters {counter} and {counter + 1} " \
                                             f"gave the same numbers"
        other_key = key ^ np.array([0, 1], np.uint32)
        assert not np.array_equal(out, _draw(op, other_key, counter, attrs)), \
            f"{op}: two different keys gave the same numbers"


def _verify_uniform(outs: list[np.ndarray], key: np.ndarray, counter: np.ndarray,
                    shape: Any, dtype: Any, low: float = 0.0, high: float = 1.0) -> None:
    attrs = {"shape": shape, "dtype": dtype, "low": low, "high": high}
    out = outs[0]
    _check_common("uniform", out, key, counter, attrs)
    x = out.astype(np.float64)
    assert np.all((x >= low) & (x < high)), \
        f"uniform: values outside [{low}, {high}): min {x.min()}, max {x.max()}"
    if x.size >= 1000:  # mean of U(low, high) within 6 standard errors
        se = (high - low) / np.sqrt(12 * x.size)
        assert abs(x.mean() - (low + high) / 2) < 6 * se, f"uniform: mean {x.mean()}"
        assert x.max() - x.min() > 0.9 * (high - low), "uniform: values do not span the range"


def _verify_normal(outs: list[np.ndarray], key: np.ndarray, counter: np.ndarray,
                   shape: Any, dtype: Any, mean: float = 0.0, std: float = 1.0) -> None:
    attrs = {"shape": shape, "dtype": dtype, "mean": mean, "std": std}
    out = outs[0]
    _check_common("normal", out, key, counter, attrs)
    x = out.astype(np.float64)
    assert np.all(np.isfinite(x)), "normal: non-finite values"
    if x.size >= 1000:
        n = x.size
        assert abs(x.mean() - mean) < 6 * std / np.sqrt(n), f"normal: mean {x.mean()}"
        assert abs(x.std() / std - 1) < 6 / np.sqrt(2 * n) + 0.01, f"normal: std {x.std()}"
        z = (x - mean) / std  # about 68.3% within one sd
        assert abs(np.mean(np.abs(z) < 1) - 0.6827) < 0.05, "normal: not bell-shaped"


def _verify_randint(outs: list[np.ndarray], key: np.ndarray, counter: np.ndarray,
                    shape: Any, dtype: Any, low: int, high: int) -> None:
    attrs = {"shape": shape, "dtype": dtype, "low": low, "high": high}
    out = outs[0]
    _check_common("randint", out, key, counter, attrs, varies=high - low > 1)
    x = out.astype(np.int64)
    assert np.all((x >= low) & (x < high)), \
        f"randint: values outside [{low}, {high}): min {x.min()}, max {x.max()}"
    if x.size >= 50 * (high - low):  # every value is drawn
        assert len(np.unique(x)) == high - low, f"randint: values drawn {np.unique(x)}"


def _rand_samples(attrs_list: list[dict[str, Any]], no_vmap: int = 0) -> list[Sample]:
    """Samples alternating two (key, counter) pairs; the last ``no_vmap`` skip the vmap check
    (each compile of a PRNG kernel costs ~0.15 s, and vmap adds two)."""
    out = []
    for i, attrs in enumerate(attrs_list):
        key, counter = (_K0, _C0) if i % 2 == 0 else (_K1, _C1)
        out.append(Sample([key, counter], attrs, batch=[_key(99 + i), counter + 3],
                          vmap=i < len(attrs_list) - no_vmap))
    return out


def _random_errors(attrs: dict[str, Any], bad_dtype: Any, dtype_msg: str) -> list[ErrorSample]:
    return [ErrorSample([_K0, _C0], {**attrs, "dtype": bad_dtype}, TypeError, dtype_msg),
            ErrorSample([_K0, _C0], {**attrs, "shape": (-1, 2)}, ValueError, "non-negative"),
            ErrorSample([_K0.astype(np.int32), _C0], attrs, TypeError, "uint32"),
            ErrorSample([np.zeros(3, np.uint32), _C0], attrs, TypeError, "uint32")]


register_samples(
    "uniform",
    _rand_samples([{"shape": (2, 3), "dtype": np.float32},
                   {"shape": (4000,), "dtype": np.float32, "low": -2.0, "high": 3.0},
                   {"shape": (2000,), "dtype": _BF16, "low": -1.0, "high": 1.0},
                   {"shape": (2000,), "dtype": np.float16},
                   {"shape": (), "dtype": np.float64},
                   {"shape": (0, 4), "dtype": np.float32}], no_vmap=4),
    verify=_verify_uniform,
    errors=_random_errors({"shape": (3,), "dtype": np.float32}, np.int64, "floating"))

register_samples(
    "normal",
    _rand_samples([{"shape": (3, 2), "dtype": np.float32},
                   {"shape": (4000,), "dtype": np.float64, "mean": 2.0, "std": 0.5},
                   {"shape": (4000,), "dtype": np.float16},
                   {"shape": (4000,), "dtype": _BF16, "mean": -1.0, "std": 3.0},
                   {"shape": (), "dtype": np.float32}], no_vmap=3),
    verify=_verify_normal,
    errors=_random_errors({"shape": (3,), "dtype": np.float32}, np.int32, "floating"))

register_samples(
    "randint",
    _rand_samples([{"shape": (2000,), "dtype": np.int64, "low": -5, "high": 5},
                   {"shape": (20000,), "dtype": np.uint8, "low": 0, "high": 256},
                   {"shape": (1000,), "dtype": np.int8, "low": -128, "high": 128},
                   {"shape": (500,), "dtype": np.int32, "low": 7, "high": 8},
                   {"shape": (), "dtype": np.int16, "low": -3, "high": 3},
                   {"shape": (0,), "dtype": np.int64, "low": 0, "high": 2}], no_vmap=4),
    verify=_verify_randint,
    errors=[*_random_errors({"shape": (3,), "dtype": np.int64, "low": 0, "high": 5},
                            np.float32, "integer"),
            ErrorSample([_K0, _C0], {"shape": (3,), "dtype": np.int64, "low": 5, "high": 5},
                        ValueError, "less than")])

# -- draws with tensor parameters: poisson, binomial ---------------------------------------
# inputs (params..., key, counter); verify: shape / dtype, whole non-negative values, the
# parameters' fixed points (rate 0; count 0, prob 0 or 1), determinism for the same (key,
# counter) and other numbers for another counter, and the mean of a large draw.

# (float64, gradient-checked: rates under 10, where JAX draws by Knuth's product of uniforms,
# piecewise constant in the rate at the finite differences' scale, and none at 0, whose
# negative neighbour has no draw; the rejection sampler's rates (10 and up) are in the
# float32 sample, rate 0 in the bfloat16 one)
_P_RATES = np.array([0.25, 0.5, 3.0, 2.0, 7.5, 1.0], np.float64)


def _verify_poisson(outs: list[np.ndarray], rate: np.ndarray, key: np.ndarray,
                    counter: np.ndarray) -> None:
    out, rate = outs[0], np.asarray(rate)
    assert out.shape == rate.shape and out.dtype == rate.dtype, \
        f"poisson: {out.dtype}{out.shape}, expected {rate.dtype}{rate.shape}"
    x = out.astype(np.float64)
    assert np.all(x >= 0) and np.all(x == np.round(x)), "poisson: not whole non-negative numbers"
    assert np.all(x[rate == 0] == 0), "poisson: rate 0 drew a non-zero count"
    assert np.array_equal(out, rerun("poisson", [rate, key, counter], {})[0]), \
        "poisson: the same key and counter gave other numbers"
    if out.size >= 16 and rate.min() > 0:
        assert not np.array_equal(out, rerun("poisson", [rate, key, counter + 1], {})[0]), \
            "poisson: counters gave the same numbers"
    if out.size >= 1000:  # all rates equal here: the mean within 6 standard errors
        lam = float(rate.astype(np.float64).mean())
        assert abs(x.mean() - lam) < 6 * np.sqrt(lam / x.size) + 1e-3 * lam, \
            f"poisson: mean {x.mean()}, rate {lam}"


def _verify_binomial(outs: list[np.ndarray], count: np.ndarray, prob: np.ndarray,
                     key: np.ndarray, counter: np.ndarray) -> None:
    out = outs[0]
    count, prob = np.broadcast_arrays(np.asarray(count), np.asarray(prob))
    assert out.shape == count.shape and out.dtype == count.dtype, \
        f"binomial: {out.dtype}{out.shape}, expected {count.dtype}{count.shape}"
    x, n, p = (a.astype(np.float64) for a in (out, count, prob))
    assert np.all((x >= 0) & (x <= np.maximum(n, 0))) and np.all(x == np.round(x)), \
        "binomial: values outside 0 .. count"
    assert np.all(x[(n <= 0) | (p <= 0)] == 0), "binomial: count or prob 0 drew successes"
    assert np.all(x[(p >= 1) & (n > 0)] == n[(p >= 1) & (n > 0)]), \
        "binomial: prob 1 drew fewer than count"
    assert np.array_equal(out, rerun("binomial", [count, prob, key, counter], {})[0]), \
        "binomial: the same key and counter gave other numbers"
    if out.size >= 1000:
        mean, var = float((n * p).mean()), float((n * p * (1 - p)).mean())
        assert abs(x.mean() - mean) < 6 * np.sqrt(var / x.size) + 1e-3 * mean, \
            f"binomial: mean {x.mean()}, n p {mean}"


register_samples(
    "poisson",
    [Sample([_P_RATES, _K0, _C0], batch=[_P_RATES * 2, _key(5), _C1]),
     # (no gradient check: the zero rule is checked on the first sample; finite
     # differences here would be 4,000 runs of the rejection sampler, ~25 s of the suite)
     Sample([np.full(2000, 25.0, np.float32), _K1, _C1], vmap=False, grad=False),
     Sample([np.array([[0.0, 2.0], [7.5, 1.0]], _BF16), _K0, _C1], vmap=False),
     Sample([np.zeros((0, 3), np.float32), _K0, _C0], vmap=False)],
    verify=_verify_poisson,
    errors=[ErrorSample([np.array([1, 2], np.int64), _K0, _C0], {}, TypeError, "floating"),
            ErrorSample([np.ones(2, np.float32), _K0.astype(np.int32), _C0], {}, TypeError,
                        "uint32")])

_B_COUNT = np.array([[5.0, 0.0, 10.0, 3.0, 20.0, 7.0]], np.float64)
_B_PROB = np.array([[0.3], [1.0], [0.0], [0.7]], np.float64)

register_samples(
    "binomial",
    [Sample([_B_COUNT, _B_PROB, _K0, _C0], name="broadcast; prob 0 and 1, count 0",
            batch=[_B_COUNT * 2, _B_PROB * 0.5, _key(5), _C1]),
     Sample([np.full(2000, 30.0, np.float32), np.full(2000, 0.25, np.float32), _K1, _C1],
            vmap=False)],
    verify=_verify_binomial,
    errors=[ErrorSample([np.ones(2, np.float32), np.ones(2, np.float64) / 2, _K0, _C0], {},
                        TypeError, "same dtype"),
            ErrorSample([np.ones(2, np.int64), np.ones(2, np.int64), _K0, _C0], {}, TypeError,
                        "floating"),
            ErrorSample([np.ones(2, np.float32), np.ones(3, np.float32), _K0, _C0], {},
                        ValueError, "broadcast")],
    grad_error=ErrorSample([_B_COUNT, np.full((1, 6), 0.5), _K0, _C0], {},
                           NotImplementedError, "derivative for aten::binomial"))
