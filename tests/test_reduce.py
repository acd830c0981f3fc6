"""Functional-level tests of the reductions and scans (flow.sum ... flow.cumprod).

Values are compared with NumPy (and with PyTorch where it is installed); dtype rules,
negative dims, keepdim, named-tuple returns, empty inputs and PyTorch's error types and
messages are checked at the ``flow.*`` level. The op-level checks (inference, jit, vmap) are
the checker's (jflow/testing/op_samples/reduce.py).
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

import jflow as flow

_rng = np.random.default_rng(7)
A = _rng.uniform(-2, 2, (3, 4)).astype(np.float32)
A3 = _rng.uniform(-2, 2, (2, 3, 4)).astype(np.float32)
IA = _rng.integers(-5, 6, (3, 4)).astype(np.int64)


def t(a):
    return flow.tensor(np.asarray(a))


def npv(x):
    return np.asarray(x._value)


def close(x, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(npv(x).astype(np.float64), np.asarray(want, np.float64),
                               rtol=rtol, atol=atol)


# -- sum / mean / prod --------------------------------------------------------------------------

@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (-1, True), ((0, 2), False),
                                         ([-3, -1], True), ((), False)])
def test_sum_mean_prod_dims(dim, keepdim):
    x = t(A3)
    axis = None if dim in (None, ()) else (tuple(dim) if isinstance(dim, (list, tuple)) else dim)
    for fn, ref in [(flow.sum, np.sum), (flow.mean, np.mean), (flow.prod, np.prod)]:
        out = fn(x, dim, keepdim)
        want = ref(A3.astype(np.float64), axis=axis, keepdims=keepdim)
        assert out.dtype == flow.float32
        assert tuple(out.shape) == want.shape
        close(out, want)


def test_sum_keyword_arguments_and_0d():
    x = t(A)
    close(flow.sum(x, dim=0, keepdim=True), A.sum(0, keepdims=True))
    s = t(np.float32(2.5))
    assert tuple(flow.sum(s).shape) == ()
    close(flow.sum(s, 0), 2.5)
    close(flow.sum(s, -1, True), 2.5)


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int8, np.int32, np.int64])
def test_sum_prod_of_integers_is_int64(dtype):
    a = (IA > 0) if dtype is np.bool_ else np.abs(IA).astype(dtype)
    assert flow.sum(t(a)).dtype == flow.int64
    assert flow.prod(t(a), 1).dtype == flow.int64
    assert flow.sum(t(a)).item() == int(a.astype(np.int64).sum())
    np.testing.assert_array_equal(npv(flow.prod(t(a), 1)), a.astype(np.int64).prod(1))


def test_sum_dtype_argument_casts_first():
    x = t(A * 3)
    out = flow.sum(x, dtype=flow.int32)
    assert out.dtype == flow.int32
    assert out.item() == int((A * 3).astype(np.int32).sum())
    assert flow.sum(t(IA), 1, dtype=flow.float16).dtype == flow.float16
    assert flow.prod(t(IA), dtype=flow.float64).dtype == flow.float64
    with pytest.raises(TypeError, match=r"sum\(\).*dtype=flow.bool"):
        flow.sum(x, dtype=flow.bool)


def test_empty_sum_prod_mean():
    e = t(np.zeros((0, 3), np.float32))
    np.testing.assert_array_equal(npv(flow.sum(e, 0)), np.zeros(3))
    np.testing.assert_array_equal(npv(flow.prod(e, 0)), np.ones(3))
    assert flow.sum(e).item() == 0 and flow.prod(e).item() == 1
    assert math.isnan(flow.mean(e).item())
    assert tuple(flow.sum(e, 1).shape) == (0,)


def test_mean_dtype_rules():
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype.*Got: Long"):
        flow.mean(t(IA))
    with pytest.raises(RuntimeError, match="Optional dtype must be.*Got: Int"):
        flow.mean(t(A), dtype=flow.int32)
    out = flow.mean(t(IA), dtype=flow.float64)
    assert out.dtype == flow.float64
    close(out, IA.mean())
    assert flow.mean(t(A.astype(np.float16))).dtype == flow.float16


def test_float16_sum_accumulates_in_float32():
    x = t(np.full(10000, 0.1, np.float16))
    assert flow.sum(x).dtype == flow.float16
    assert abs(flow.sum(x).item() - 999.76) < 1.0  # a float16 accumulator stalls far lower
    assert abs(float(npv(flow.cumsum(x, 0))[-1]) - 999.76) < 1.0


# -- max / min ---------------------------------------------------------------------------------

def test_max_min_whole_tensor():
    x = t(A)
    out = flow.max(x)
    assert tuple(out.shape) == () and out.dtype == flow.float32
    assert out.item() == A.max() and flow.min(x).item() == A.min()
    assert flow.max(t(IA)).dtype == flow.int64
    assert flow.max(t(IA > 0)).dtype == flow.bool


def test_max_min_with_dim_named_tuple():
    x = t(A3)
    r = flow.max(x, 1)
    assert type(r).__name__ == "max" and r._fields == ("values", "indices")
    values, indices = r
    close(values, A3.max(1))
    np.testing.assert_array_equal(npv(indices), A3.argmax(1))
    assert indices.dtype == flow.int64
    r = flow.min(x, dim=-1, keepdim=True)
    assert tuple(r.values.shape) == (2, 3, 1)
    np.testing.assert_array_equal(npv(r.indices), A3.argmin(-1)[..., None])
    v, i = flow.max(t(np.float32(3.0)), 0)
    assert v.item() == 3.0 and i.item() == 0


def test_max_min_first_occurrence_and_nan():
    ties = t(np.array([[1, 3, 3, 2], [5, 5, 0, 5]]))
    np.testing.assert_array_equal(npv(flow.max(ties, 1).indices), [1, 0])
    np.testing.assert_array_equal(npv(flow.min(ties, 1).indices), [0, 2])
    np.testing.assert_array_equal(npv(flow.argmax(ties, 1)), [1, 0])
    assert flow.argmax(ties).item() == 4
    n = t(np.array([1.0, np.nan, 3.0, np.nan], np.float32))
    r = flow.max(n, 0)
    assert math.isnan(r.values.item()) and r.indices.item() == 1
    assert math.isnan(flow.min(n).item())
    assert flow.argmin(n).item() == 1


def test_max_min_elementwise_overload():
    a, b = t(A), t(A[::-1].copy())
    close(flow.max(a, b), np.maximum(A, A[::-1]))
    close(flow.min(a, other=b), np.minimum(A, A[::-1]))


def test_max_bad_arguments():
    x = t(A)
    with pytest.raises(TypeError, match=r"max\(\) received an invalid combination"):
        flow.max(x, 1.5)
    with pytest.raises(IndexError, match=r"max\(\): Dimension out of range .*\[-2, 1\].*got 2"):
        flow.max(x, 2)
    e = t(np.zeros((0, 3), np.float32))
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified for "
                                           r"input.numel\(\) == 0"):
        flow.max(e)
    with pytest.raises(IndexError, match=r"min\(\): Expected reduction dim 0 to have non-zero"):
        flow.min(e, 0)
    assert tuple(flow.max(e, 1).values.shape) == (0,)


def test_amax_amin():
    x = t(A3)
    close(flow.amax(x, (0, -1)), A3.max((0, 2)))
    close(flow.amin(x, 1, True), A3.min(1, keepdims=True))
    close(flow.amax(x), A3.max())
    e = t(np.zeros((2, 0), np.float32))
    with pytest.raises(RuntimeError, match=r"amax\(\): Expected reduction dim to be specified"):
        flow.amax(e)
    with pytest.raises(IndexError, match=r"amin\(\): Expected reduction dim 1 to have non-zero"):
        flow.amin(e, 1)
    assert tuple(flow.amax(e, 0).shape) == (0,)


def test_argmax_argmin():
    x = t(A3)
    out = flow.argmax(x)
    assert out.dtype == flow.int64 and tuple(out.shape) == ()
    assert out.item() == A3.argmax()
    assert tuple(flow.argmax(x, keepdim=True).shape) == (1, 1, 1)
    np.testing.assert_array_equal(npv(flow.argmin(x, -2)), A3.argmin(1))
    np.testing.assert_array_equal(npv(flow.argmax(x, 2, True)), A3.argmax(2)[..., None])
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be specified"):
        flow.argmax(t(np.zeros(0, np.float32)))
    with pytest.raises(IndexError, match=r"argmin\(\): Dimension out of range"):
        flow.argmin(x, 3)
    with pytest.raises(TypeError, match=r"argmax\(\): argument 'dim'"):
        flow.argmax(x, dim=(0, 1))


# -- var / std / logsumexp --------------------------------------------------------------------

@pytest.mark.parametrize("dim,unbiased,keepdim", [(None, True, False), (1, False, False),
                                                  ((0, 2), True, True), (-1, True, False)])
def test_var_std(dim, unbiased, keepdim):
    x = t(A3)
    axis = tuple(dim) if isinstance(dim, tuple) else dim
    want = np.var(A3.astype(np.float64), axis=axis, ddof=int(unbiased), keepdims=keepdim)
    close(flow.var(x, dim, unbiased, keepdim), want, rtol=1e-5)
    close(flow.std(x, dim, unbiased=unbiased, keepdim=keepdim), np.sqrt(want), rtol=1e-5)


def test_var_overloads_and_errors():
    x = t(A)
    close(flow.var(x, False), np.var(A.astype(np.float64)))
    close(flow.std(x, True), np.std(A.astype(np.float64), ddof=1))
    assert math.isnan(flow.var(t(np.float32([1.0]))).item())
    assert flow.var(t(np.float32([1.0])), False).item() == 0.0
    close(flow.var(t(A + 1000), 1), np.var(A.astype(np.float64) + 1000, 1, ddof=1), rtol=1e-3)
    with pytest.raises(RuntimeError, match=r"var\(\): std and var only support floating point"):
        flow.var(t(IA))
    with pytest.raises(RuntimeError, match=r"std\(\): std and var"):
        flow.std(t(IA), 0)


def test_logsumexp():
    x = t(A3 * 300)  # exp overflows float32 without the max shift
    want = np.logaddexp.reduce(A3.astype(np.float64) * 300, axis=(0, 2))
    close(flow.logsumexp(x, (0, -1)), want, rtol=1e-6)
    assert tuple(flow.logsumexp(x, 1, True).shape) == (2, 1, 4)
    inf = t(np.array([[np.inf, 1.0], [-np.inf, -np.inf]], np.float32))
    np.testing.assert_array_equal(npv(flow.logsumexp(inf, 1)), [np.inf, -np.inf])
    out = flow.logsumexp(t(IA), 1)
    assert out.dtype == flow.float32
    close(out, np.logaddexp.reduce(IA.astype(np.float64), 1))
    np.testing.assert_array_equal(npv(flow.logsumexp(t(np.zeros((0, 2), np.float32)), 0)),
                                  [-np.inf, -np.inf])
    with pytest.raises(TypeError, match=r"logsumexp\(\).*'dim'"):
        flow.logsumexp(x)


# -- any / all ----------------------------------------------------------------------------------

@pytest.mark.parametrize("a", [IA > 0, IA, A, np.array([[0.0, np.nan], [0.0, 0.0]], np.float32)])
def test_any_all(a):
    x = t(a)
    for fn, ref in [(flow.any, np.any), (flow.all, np.all)]:
        out = fn(x)
        assert out.dtype == flow.bool and out.item() == bool(ref(a != 0))
        np.testing.assert_array_equal(npv(fn(x, 1)), ref(a != 0, 1))
        np.testing.assert_array_equal(npv(fn(x, -2, True)), ref(a != 0, 0, keepdims=True))


def test_any_all_empty():
    e = t(np.zeros((0, 2), np.float32))
    assert flow.any(e).item() is False and flow.all(e).item() is True
    np.testing.assert_array_equal(npv(flow.all(e, 0)), [True, True])


# -- norm ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [2, 1, math.inf, -math.inf, 0, 3, 0.5, -1])
def test_norm_vector(p):
    x = t(np.where(np.abs(A3) > 0.5, A3, 0).astype(np.float32))
    flat = np.where(np.abs(A3) > 0.5, A3, 0).astype(np.float64)
    with np.errstate(divide="ignore"):  # p < 0 with zeros: 1/0 = inf, and the norm is 0
        whole = np.linalg.norm(flat.reshape(-1), p)
        want = np.linalg.norm(flat, p, axis=1)
    close(flow.norm(x, p), whole)
    close(flow.norm(x, p, 1), want)
    assert tuple(flow.norm(x, p, -1, True).shape) == (2, 3, 1)


def test_norm_fro_dims_and_dtype():
    x = t(A3)
    close(flow.norm(x), np.sqrt((A3.astype(np.float64) ** 2).sum()))
    close(flow.norm(x, "fro", (0, 1)), np.sqrt((A3.astype(np.float64) ** 2).sum((0, 1))))
    close(flow.norm(x, p=2, dim=(0, 1, 2)), np.sqrt((A3.astype(np.float64) ** 2).sum()))
    assert flow.norm(x, dtype=flow.float64).dtype == flow.float64
    assert flow.norm(t(np.zeros(0, np.float32))).item() == 0.0


def test_norm_errors():
    x = t(A3)
    with pytest.raises(ValueError, match=r"norm\(\): p='nuc'"):
        flow.norm(x, "nuc")
    with pytest.raises(ValueError, match=r"norm\(\): p='abc' is not supported"):
        flow.norm(x, "abc")
    with pytest.raises(ValueError, match=r"'fro' needs at most 2 dims"):
        flow.norm(x, "fro", (0, 1, 2))
    with pytest.raises(RuntimeError, match=r"norm\(\): Expected a floating point.*Got Long"):
        flow.norm(t(IA))
    with pytest.raises(TypeError, match=r"norm\(\): argument 'p'"):
        flow.norm(x, True)
    with pytest.raises(RuntimeError, match="inf norm on an empty tensor"):
        flow.norm(t(np.zeros((0, 2), np.float32)), math.inf, 0)


# -- cumsum / cumprod -----------------------------------------------------------------------------

def test_cumsum_cumprod():
    x = t(A3)
    close(flow.cumsum(x, 1), np.cumsum(A3, 1))
    close(flow.cumprod(x, -1), np.cumprod(A3.astype(np.float64), -1), rtol=1e-5)
    for a in [IA.astype(np.int32), IA > 0, np.abs(IA).astype(np.uint8)]:
        out = flow.cumsum(t(a), 0)
        assert out.dtype == flow.int64
        np.testing.assert_array_equal(npv(out), np.cumsum(a.astype(np.int64), 0))
        assert flow.cumprod(t(a), 1).dtype == flow.int64
    out = flow.cumsum(t(IA), 1, dtype=flow.float32)
    assert out.dtype == flow.float32
    close(out, np.cumsum(IA, 1))
    s = flow.cumsum(t(np.float32(3.0)), 0)
    assert tuple(s.shape) == () and s.item() == 3.0
    with pytest.raises(IndexError, match=r"cumsum\(\): Dimension out of range.*got 3"):
        flow.cumsum(x, 3)
    with pytest.raises(TypeError, match=r"cumprod\(\)"):
        flow.cumprod(x)


# -- dims ---------------------------------------------------------------------------------------

def test_dim_errors():
    x = t(A)
    with pytest.raises(IndexError, match=r"sum\(\): Dimension out of range \(expected to be in "
                                         r"range of \[-2, 1\], but got -3\)"):
        flow.sum(x, -3)
    with pytest.raises(RuntimeError, match=r"mean\(\): dim 1 appears multiple times"):
        flow.mean(x, (1, -1))
    with pytest.raises(TypeError, match=r"sum\(\): argument 'dim'"):
        flow.sum(x, "0")
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-1, 0\], but got 1\)"):
        flow.sum(t(np.float32(1.0)), 1)


# -- tracing -----------------------------------------------------------------------------------

def test_under_jax_jit_and_vmap():
    x = t(A3)

    @jax.jit
    def f(v):
        r = flow.max(v, 1)
        return flow.sum(v, (0, -1)), r.values, r.indices, flow.argmax(v)

    s, v, i, a = f(x)
    close(s, A3.sum((0, 2)))
    close(v, A3.max(1))
    np.testing.assert_array_equal(npv(i), A3.argmax(1))
    assert a.item() == A3.argmax()
    out = jax.vmap(lambda v: flow.logsumexp(v, -1))(x)
    close(out, np.logaddexp.reduce(A3.astype(np.float64), -1))


# -- PyTorch as a second reference -----------------------------------------------------------------

_TORCH_CASES = [
    ("sum", (A3,), {"dim": (0, 2), "keepdim": True}), ("sum", (IA,), {}),
    ("mean", (A3,), {"dim": -1}), ("prod", (IA,), {"dim": 1}), ("amax", (A3,), {"dim": (1, 2)}),
    ("amin", (A3,), {"dim": 0, "keepdim": True}), ("argmax", (A3,), {"dim": 1}),
    ("argmin", (A3,), {}), ("var", (A3,), {"dim": 1, "unbiased": False}),
    ("std", (A3,), {"dim": (0, 2), "keepdim": True}), ("logsumexp", (A3,), {"dim": 1}),
    ("any", (IA,), {"dim": 1}), ("all", (A3,), {}), ("norm", (A3,), {"p": 3, "dim": 2}),
    ("norm", (A3,), {"p": "fro", "dim": (0, 1)}), ("cumsum", (IA > 0,), {"dim": 1}),
    ("cumprod", (A3,), {"dim": -1}),
]


@pytest.mark.parametrize("name,args,kwargs", _TORCH_CASES)
def test_against_torch(name, args, kwargs):
    torch = pytest.importorskip("torch")
    got = getattr(flow, name)(*[t(a) for a in args], **kwargs)
    want = getattr(torch, name)(*[torch.from_numpy(np.asarray(a)) for a in args], **kwargs)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(npv(got).astype(np.float64), want.double().numpy(), rtol=1e-5,
                               atol=1e-6)


def test_max_dim_against_torch():
    torch = pytest.importorskip("torch")
    a = np.array([[1.0, 3.0, 3.0, np.nan], [2.0, 2.0, 0.0, 1.0]], np.float32)
    for name in ("max", "min"):
        got = getattr(flow, name)(t(a), 1)
        want = getattr(torch, name)(torch.from_numpy(a), 1)
        np.testing.assert_array_equal(npv(got.indices), want.indices.numpy())
        np.testing.assert_array_equal(npv(got.values), want.values.numpy())
