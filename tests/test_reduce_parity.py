"""PyTorch parity of the issue-14 reductions (var/std correction, var_mean, std_mean, nansum,
nanmean, count_nonzero, aminmax, isclose, allclose, equal, cummax, cummin).

Random inputs against torch: values, result dtypes (integer and bool inputs included), nan/inf
edge values, tie-breaking of the cummax/cummin indices, gradients, and the errors of bad
arguments. The op-level checks are the checker's (jflow/testing/op_samples/reduce.py).
Three-way parametrizations are pairwise (tests/_pairwise.py): every pair of values runs.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _pairwise import pairwise

import jflow as flow

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(14)
NAN, INF = float("nan"), float("inf")


def _rand(shape, dtype=np.float32):
    if np.dtype(dtype).kind == "b":
        return _rng.random(shape) > 0.5
    if np.dtype(dtype).kind in "iu":
        lo = 0 if np.dtype(dtype).kind == "u" else -4
        return _rng.integers(lo, 5, shape).astype(dtype)
    return _rng.standard_normal(shape).astype(dtype)


def _with_edges(shape=(4, 5)):
    a = _rand(shape, np.float64)
    a[0, 1] = a[2, 3] = NAN
    a[1, 0], a[3, 2] = INF, -INF
    return a


def _np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x._value)


def same(got, want, rtol=1e-5, atol=1e-6):
    """Values, dtype and shape equal (nan where torch has nan)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, rtol, atol)
        return
    g, w = _np(got), _np(want)
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    assert g.shape == w.shape, (g.shape, w.shape)
    if g.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)


def _grads(fname, a, kw, pick=lambda r: r, **extra):
    """Gradient of sum(out * w) in jflow and torch (same random w)."""
    x = flow.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    out, tout = pick(getattr(flow, fname)(x, **kw)), pick(getattr(torch, fname)(tx, **kw))
    w = _rng.standard_normal(tuple(tout.shape)).astype(a.dtype)
    out.backward(flow.tensor(w))  # = d sum(out * w), without mul / sum programs per shape
    tout.backward(torch.tensor(w))
    same(x.grad, tx.grad, **extra)


# -- var / std / var_mean / std_mean -----------------------------------------------------------

_VAR_FNAMES = ["var", "std", "var_mean", "std_mean"]
_VAR_KWS = [{}, {"dim": 1}, {"dim": (0, 2), "keepdim": True}, {"correction": 0},
            {"dim": -1, "correction": 2}, {"dim": 1, "correction": 0.5}, {"unbiased": False},
            {"dim": 0, "unbiased": True, "keepdim": True}]


# The four share one argument parser and variance kernel (functors/reduce.py: ``_var_of`` /
# ``_var_mean_of``); std adds a sqrt, the *_mean forms a mean over the same dims. So each
# argument form runs with a plain and a *_mean form (var with var_mean on the even forms, std
# with std_mean on the odd ones): every form, every function, and each function with a dim, a
# keepdim and a correction or unbiased form, without the 32-case product.
@pytest.mark.parametrize("fname,kw", [(_VAR_FNAMES[(i + j) % 4], kw)
                                      for i, kw in enumerate(_VAR_KWS) for j in (0, 2)])
def test_var_family_values_and_grads(fname, kw):
    a = _rand((3, 4, 5), np.float64)
    same(getattr(flow, fname)(flow.tensor(a), **kw), getattr(torch, fname)(torch.tensor(a), **kw))
    pick = (lambda r: r[0] * 2 + r[1]) if fname.endswith("_mean") else (lambda r: r)
    _grads(fname, a, kw, pick)


@pytest.mark.filterwarnings("ignore:.*degrees of freedom")
@pytest.mark.parametrize("fname", ["var", "std", "var_mean", "std_mean"])
def test_var_family_dtypes_and_edges(fname):
    for dt in (np.float32, np.float16):
        a = _rand((4, 6), dt)
        same(getattr(flow, fname)(flow.tensor(a), 1), getattr(torch, fname)(torch.tensor(a), 1),
             rtol=2e-3, atol=2e-3)
    a = _with_edges()
    got = getattr(flow, fname)(flow.tensor(a), 1)
    if fname.endswith("_mean"):
        # a deliberate difference: torch's var_mean computes the mean with Welford's update,
        # which turns a row holding inf into nan; jflow's mean is torch.mean's (inf)
        same(got, (getattr(torch, fname[:3])(torch.tensor(a), 1), torch.mean(torch.tensor(a), 1)))
    else:
        same(got, getattr(torch, fname)(torch.tensor(a), 1))
    # n <= correction: nan / inf, as torch
    one = _rand((3, 1), np.float64)
    same(getattr(flow, fname)(flow.tensor(one), 1),
         getattr(torch, fname)(torch.tensor(one), 1))
    same(getattr(flow, fname)(flow.tensor(one), 1, correction=3),
         getattr(torch, fname)(torch.tensor(one), 1, correction=3))
    # the positional overload var(x, unbiased)
    b = _rand((4, 5), np.float64)
    same(getattr(flow, fname)(flow.tensor(b), False), getattr(torch, fname)(torch.tensor(b),
                                                                            False))


@pytest.mark.parametrize("fname", ["var", "std", "var_mean", "std_mean"])
def test_var_family_errors(fname):
    x = flow.tensor(_rand((3, 4)))
    with pytest.raises(RuntimeError, match=f"{fname}\\(\\).*both 'unbiased' and 'correction'"):
        getattr(flow, fname)(x, 1, unbiased=True, correction=0)
    with pytest.raises(RuntimeError, match="floating point"):
        getattr(flow, fname)(flow.tensor(_rand((3, 4), np.int64)))
    with pytest.raises(TypeError, match="correction"):
        getattr(flow, fname)(x, 1, correction=INF)


# -- nansum / nanmean / count_nonzero --------------------------------------------------------------

_NANSUM_DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_]
_NANSUM_KWS = [{}, {"dim": 1}, {"dim": (0, 1), "keepdim": True}]


# the dtype decides the nan masking and the result dtype, the kw the sum's dims: each dtype
# with two of the three argument forms, each form with four dtypes (floats and integers)
@pytest.mark.parametrize("dtype,kw", [(dt, _NANSUM_KWS[(i + j) % 3])
                                      for i, dt in enumerate(_NANSUM_DTYPES) for j in (0, 1)])
def test_nansum_dtypes(dtype, kw):
    a = _with_edges() if dtype == np.float64 else _rand((4, 5), dtype)
    if dtype == np.float32:
        a[1, 2] = NAN
    same(flow.nansum(flow.tensor(a), **kw), torch.nansum(torch.tensor(a), **kw))
    same(flow.tensor(a).nansum(**kw), torch.tensor(a).nansum(**kw))


def test_nansum_dtype_arg_and_grad():
    a = _rand((3, 4), np.float64)
    a[0, 0] = a[2, 1] = NAN
    same(flow.nansum(flow.tensor(a), 1, dtype=flow.float32),
         torch.nansum(torch.tensor(a), 1, dtype=torch.float32))
    _grads("nansum", a, {"dim": 1})
    _grads("nanmean", a, {"dim": 0})
    _grads("nanmean", a, {})


@pytest.mark.parametrize("kw", [{}, {"dim": 1}, {"dim": 0, "keepdim": True},
                                {"dim": (0, 1)}])
def test_nanmean(kw):
    a = _with_edges()
    a[:, 4] = NAN  # an all-nan column: nan, as torch
    same(flow.nanmean(flow.tensor(a), **kw), torch.nanmean(torch.tensor(a), **kw))
    b = _rand((4, 5), np.float32)
    b[1, 1] = NAN
    same(flow.tensor(b).nanmean(**kw), torch.tensor(b).nanmean(**kw))
    ia = _rand((4, 5), np.int64)  # dtype= makes an integer input floating first
    same(flow.nanmean(flow.tensor(ia), **kw, dtype=flow.float64),
         torch.nanmean(torch.tensor(ia).double(), **kw))


def test_nanmean_int_errors():
    with pytest.raises(RuntimeError, match="nanmean\\(\\).*floating point"):
        flow.nanmean(flow.tensor(_rand((3,), np.int64)))


_COUNT_DTYPES = [np.float32, np.float64, np.int64, np.uint8, np.bool_]
_COUNT_DIMS = [None, 0, -1, (0, 1)]


# the dtype decides the != 0 test (nan and inf count), the dim the sum: each dtype with a
# whole-tensor count (None or (0, 1)) and a one-dim count (0 or -1), each dim with two or
# three dtypes
@pytest.mark.parametrize("dtype,dim", [(dt, _COUNT_DIMS[(i + j) % 4])
                                       for i, dt in enumerate(_COUNT_DTYPES) for j in (0, 2)])
def test_count_nonzero(dtype, dim):
    a = _with_edges() if dtype == np.float64 else _rand((4, 5), dtype)
    kw = {} if dim is None else {"dim": dim}
    same(flow.count_nonzero(flow.tensor(a), **kw), torch.count_nonzero(torch.tensor(a), **kw))
    same(flow.tensor(a).count_nonzero(**kw), torch.tensor(a).count_nonzero(**kw))


# -- aminmax -------------------------------------------------------------------------------------

_AMINMAX_DTYPES = [np.float32, np.float64, np.int64, np.uint8, np.bool_]
_AMINMAX_KWS = [{}, {"dim": 1}, {"dim": -1, "keepdim": True}, {"keepdim": True}]


# each dtype with a whole-tensor and a per-dim reduction (kw k and k + 2 of the list), each
# argument form with at least two dtypes: every dtype's min/max path meets both reductions
@pytest.mark.parametrize("dtype,kw", [(dt, _AMINMAX_KWS[(i + j) % 4])
                                      for i, dt in enumerate(_AMINMAX_DTYPES) for j in (0, 2)])
def test_aminmax(dtype, kw):
    a = _with_edges() if dtype == np.float64 else _rand((4, 5), dtype)
    got, want = flow.aminmax(flow.tensor(a), **kw), torch.aminmax(torch.tensor(a), **kw)
    same(tuple(got), tuple(want))
    assert got.min is got[0] and got.max is got[1]
    same(tuple(flow.tensor(a).aminmax(**kw)), tuple(torch.tensor(a).aminmax(**kw)))


def test_aminmax_grad_and_errors():
    a = _rand((3, 5), np.float64)
    x = flow.tensor(a, requires_grad=True)
    mn, mx = flow.aminmax(x, dim=1)
    (mn * 2 + mx).sum().backward()
    want = np.zeros_like(a)
    want[np.arange(3), a.argmin(1)] += 2
    want[np.arange(3), a.argmax(1)] += 1
    np.testing.assert_allclose(_np(x.grad), want)
    with pytest.raises(RuntimeError, match="aminmax"):
        flow.aminmax(flow.tensor(np.zeros((0, 3), np.float32)))
    with pytest.raises(IndexError, match="aminmax"):
        flow.aminmax(flow.tensor(np.zeros((0, 3), np.float32)), dim=0)
    with pytest.raises(IndexError, match="aminmax.*out of range"):
        flow.aminmax(flow.tensor(a), dim=2)


# -- isclose / allclose / equal ------------------------------------------------------------------

_A = np.array([1.0, NAN, INF, -INF, INF, 0.0, 1e-9, 1.0, 2.0, NAN])
_B = np.array([1.0, NAN, INF, -INF, -INF, 1e-9, 0.0, 1.0 + 1e-6, 2.1, 1.0])


@pytest.mark.parametrize("kw", [{}, {"equal_nan": True}, {"rtol": 0.1},
                                {"rtol": 0.0, "atol": 0.0}, {"atol": 1e-8, "rtol": 0.0},
                                {"rtol": 1e-3, "atol": 0.2, "equal_nan": True}])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_isclose_edges(kw, dtype):
    a, b = _A.astype(dtype), _B.astype(dtype)
    same(flow.isclose(flow.tensor(a), flow.tensor(b), **kw),
         torch.isclose(torch.tensor(a), torch.tensor(b), **kw))
    same(flow.tensor(a).isclose(flow.tensor(b), **kw),
         torch.tensor(a).isclose(torch.tensor(b), **kw))
    assert flow.allclose(flow.tensor(a), flow.tensor(b), **kw) == \
        torch.allclose(torch.tensor(a), torch.tensor(b), **kw)
    assert flow.tensor(a[:2]).allclose(flow.tensor(a[:2]), **kw) == \
        torch.tensor(a[:2]).allclose(torch.tensor(a[:2]), **kw)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.bool_])
def test_isclose_ints_and_broadcast(dtype):
    a, b = _rand((4, 5), dtype), _rand((5,), dtype)
    for kw in ({}, {"atol": 1.0}, {"rtol": 0.5, "atol": 0.0}):
        if dtype == np.bool_ and kw:
            continue  # torch refuses subtraction of bools
        same(flow.isclose(flow.tensor(a), flow.tensor(b), **kw),
             torch.isclose(torch.tensor(a), torch.tensor(b), **kw))
        assert flow.allclose(flow.tensor(a), flow.tensor(a), **kw)


def test_isclose_errors():
    with pytest.raises(RuntimeError, match="isclose\\(\\).*same dtype"):
        flow.isclose(flow.tensor([1.0]), flow.tensor([1]))
    with pytest.raises(RuntimeError, match="isclose\\(\\): rtol"):
        flow.isclose(flow.tensor([1.0]), flow.tensor([1.0]), rtol=-1.0)
    with pytest.raises(RuntimeError, match="isclose\\(\\): atol"):
        flow.allclose(flow.tensor([1.0]), flow.tensor([1.0]), atol=-1.0)


def test_allclose_under_tracing_is_a_clear_error():
    def f(v):
        return flow.allclose(flow.tensor(v), flow.tensor(v))
    with pytest.raises(RuntimeError, match="allclose\\(\\).*tracing"):
        jax.jit(f)(np.ones(3, np.float32))


@pytest.mark.parametrize("a,b", [
    (np.array([1.0, 2.0]), np.array([1.0, 2.0])),
    (np.array([1.0, NAN]), np.array([1.0, NAN])),
    (np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0])),
    (np.array([[1.0, 2.0]]), np.array([1.0, 2.0])),
    (np.array([1, 2], np.int64), np.array([1.0, 2.0], np.float32)),
    (np.array([1, 3], np.int64), np.array([1, 2], np.int64)),
    (np.array([True, False]), np.array([1, 0], np.int64)),
    (np.zeros((0, 2), np.float32), np.zeros((0, 2), np.float32)),
])
def test_equal(a, b):
    got = flow.equal(flow.tensor(a), flow.tensor(b))
    assert type(got) is bool
    assert got == torch.equal(torch.tensor(a), torch.tensor(b))
    assert flow.tensor(a).equal(flow.tensor(b)) == got


# -- cummax / cummin ---------------------------------------------------------------------------

@pytest.mark.parametrize("fname,dtype,dim", pairwise(
    ["cummax", "cummin"], [np.float32, np.float64, np.int64, np.int32, np.uint8, np.bool_],
    [0, 1, -1]))
def test_cummax_cummin_values_ties_nan(fname, dtype, dim):
    # integers in a small range: many ties, whose index torch gives to the later entry
    a = _with_edges((6, 7)) if dtype == np.float64 else _rand((6, 7), dtype)
    got = getattr(flow, fname)(flow.tensor(a), dim)
    want = getattr(torch, fname)(torch.tensor(a), dim)
    same(tuple(got), tuple(want))
    assert got.values is got[0] and got.indices is got[1]
    same(tuple(getattr(flow.tensor(a), fname)(dim)), tuple(getattr(torch.tensor(a), fname)(dim)))


@pytest.mark.parametrize("fname", ["cummax", "cummin"])
def test_cummax_cummin_grads_and_edges(fname):
    a = np.round(_rand((4, 6), np.float64) * 2) / 2  # ties: gradient to the selected entry
    for dim in (0, 1):
        _grads(fname, a, {"dim": dim}, pick=lambda r: r[0])
    same(tuple(getattr(flow, fname)(flow.tensor(np.float32(1.5)), 0)),
         tuple(getattr(torch, fname)(torch.tensor(np.float32(1.5)), 0)))
    e = np.zeros((0, 3), np.float32)
    same(tuple(getattr(flow, fname)(flow.tensor(e), 0)),
         tuple(getattr(torch, fname)(torch.tensor(e), 0)))
    with pytest.raises(IndexError, match=f"{fname}\\(\\).*out of range"):
        getattr(flow, fname)(flow.tensor(a), 2)


# -- logcumsumexp --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp_values_and_grads(dtype, dim):
    a = (_rand((5, 6), np.float64) * 30).astype(dtype)  # a wide range: no underflow to -inf
    a[0, 0] = -200.0
    same(flow.logcumsumexp(flow.tensor(a), dim), torch.logcumsumexp(torch.tensor(a), dim),
         rtol=1e-5, atol=1e-4)
    same(flow.tensor(a).logcumsumexp(dim), torch.tensor(a).logcumsumexp(dim), rtol=1e-5,
         atol=1e-4)
    if dtype == np.float64:
        _grads("logcumsumexp", a, {"dim": dim})


def test_logcumsumexp_edges_and_errors():
    a = _with_edges((4, 5))
    for dim in (0, 1):
        same(flow.logcumsumexp(flow.tensor(a), dim), torch.logcumsumexp(torch.tensor(a), dim))
    # -inf entries get gradient 0; torch agrees except for a leading -inf (its y is -inf too),
    # where its formula gives nan (-inf - -inf): jflow gives 0 there as well
    b = np.array([[-INF, 1.0, -INF, 0.5], [2.0, -INF, -1.0, 3.0]])
    x, tx = flow.tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
    flow.logcumsumexp(x, 1).sum().backward()
    torch.logcumsumexp(tx, 1).sum().backward()
    want = tx.grad.numpy().copy()
    assert np.isnan(want[0, 0])
    want[0, 0] = 0.0
    np.testing.assert_allclose(_np(x.grad), want, rtol=1e-6)
    same(flow.logcumsumexp(flow.tensor(np.float32(2.0)), 0),
         torch.logcumsumexp(torch.tensor(np.float32(2.0)), 0))
    with pytest.raises(RuntimeError, match="logcumsumexp\\(\\).*floating"):
        flow.logcumsumexp(flow.tensor(_rand((3,), np.int64)), 0)
    with pytest.raises(IndexError, match="logcumsumexp\\(\\).*out of range"):
        flow.logcumsumexp(flow.tensor(a), 2)


# -- median / nanmedian / mode / kthvalue --------------------------------------------------------

def _check_selection(got, want, a, dim, exact_index):
    """Values as torch; indices point at the value (torch's tie index is its quickselect's)."""
    same(got.values, want.values)
    if exact_index:
        same(got.indices, want.indices)
    idx = np.expand_dims(_np(got.indices), dim) if not got.values.ndim == a.ndim else \
        _np(got.indices)
    at = np.take_along_axis(a, idx, axis=dim).reshape(_np(got.values).shape)
    np.testing.assert_array_equal(at, _np(got.values))


@pytest.mark.parametrize("fname,dtype,dim_keepdim", pairwise(
    ["median", "nanmedian"], [np.float32, np.float64, np.int64, np.int32, np.uint8],
    [(0, False), (1, True), (-1, False)]))
def test_median_dim(fname, dtype, dim_keepdim):
    dim, keepdim = dim_keepdim
    a = _with_edges((5, 6)) if dtype == np.float64 else _rand((5, 6), dtype)
    if dtype == np.float64:
        a[4, :] = NAN  # an all-nan slice
    got = getattr(flow, fname)(flow.tensor(a), dim, keepdim)
    want = getattr(torch, fname)(torch.tensor(a), dim, keepdim)
    _check_selection(got, want, a, dim, exact_index=dtype == np.float32)
    got = getattr(flow.tensor(a), fname)(dim, keepdim=keepdim)
    _check_selection(got, want, a, dim, exact_index=dtype == np.float32)


@pytest.mark.parametrize("fname", ["median", "nanmedian"])
def test_median_all_and_grads(fname):
    for a in (_rand((4, 5)), _with_edges(), _rand((3, 3), np.int64), _rand((7,), np.uint8),
              np.float32(1.5), np.zeros((0, 3), np.float32)):
        a = np.asarray(a)
        same(getattr(flow, fname)(flow.tensor(a)), getattr(torch, fname)(torch.tensor(a)))
    a = _rand((4, 6), np.float64)
    _grads(fname, a, {})
    _grads(fname, a, {"dim": 1}, pick=lambda r: r[0])
    with pytest.raises(IndexError, match=f"{fname}\\(\\).*non-zero size"):
        getattr(flow, fname)(flow.tensor(np.zeros((0, 3), np.float32)), 0)


# the call forms: flow.mode(x, dim) and x.mode(dim, keepdim=True) (each its own program)
_FORMS = ["function", "method keepdim"]


@pytest.mark.parametrize("dtype,dim,form", pairwise(
    [np.float32, np.float64, np.int64, np.uint8, np.bool_], [0, -1], _FORMS))
def test_mode(dtype, dim, form):
    if dtype == np.float64:
        # infinities, no nan: torch's mode counts equal nans together on some paths and not
        # on others (implementation-defined); jflow counts each nan once (nan != nan)
        a = np.nan_to_num(_with_edges((6, 7)), nan=INF)
        a[5, :] = -INF
    elif dtype == np.float32:
        a = np.round(_rand((6, 7), dtype))  # float ties
    else:
        a = _rand((6, 7), dtype)
    if form == "function":
        got, want = flow.mode(flow.tensor(a), dim), torch.mode(torch.tensor(a), dim)
    else:
        got, want = flow.tensor(a).mode(dim, True), torch.tensor(a).mode(dim, True)
    same(tuple(got), tuple(want))  # the last index of the mode: exactly torch's


@pytest.mark.parametrize("dtype,k_dim,form", pairwise(
    [np.float32, np.float64, np.int64, np.uint8], [(1, 0), (3, 1), (6, -1), (2, 0)], _FORMS))
def test_kthvalue(dtype, k_dim, form):
    k, dim = k_dim
    a = _with_edges((6, 6)) if dtype == np.float64 else _rand((6, 6), dtype)
    if form == "function":
        got, want = flow.kthvalue(flow.tensor(a), k, dim), torch.kthvalue(torch.tensor(a), k, dim)
    else:
        got, want = flow.tensor(a).kthvalue(k, dim, True), torch.tensor(a).kthvalue(k, dim, True)
    _check_selection(got, want, a, dim, exact_index=dtype == np.float32)


def test_order_stat_grads_and_errors():
    a = _rand((4, 6), np.float64)
    _grads("kthvalue", a, {"k": 2, "dim": 1}, pick=lambda r: r[0])
    _grads("mode", a, {"dim": 0}, pick=lambda r: r[0])
    x = flow.tensor(a)
    with pytest.raises(RuntimeError, match="kthvalue\\(\\).*k=7 out of range"):
        flow.kthvalue(x, 7, 1)
    with pytest.raises(RuntimeError, match="kthvalue\\(\\).*k=0"):
        flow.kthvalue(x, 0)
    with pytest.raises(IndexError, match="mode\\(\\).*out of range"):
        flow.mode(x, 3)


# -- quantile / nanquantile ----------------------------------------------------------------------

# The programs depend on the function, the dims / keepdim, the input (shape, dtype) and the
# shape of a tensor q, not on a scalar q's value nor (but for a select or two) on the
# interpolation: so those three are pairwise over the rows, and every row runs every
# interpolation with every scalar q (the ends, interior values, 0.5: ties for 'nearest' /
# 'midpoint'), and a tensor q (1-d or 0-d, of the input's dtype as torch requires) with each
# interpolation. The input: float64 with nan and an all-nan row through the function, or
# float32 with ties through the Tensor method.
_INTERPOLATIONS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("fname,kw,data", pairwise(
    ["quantile", "nanquantile"],
    [{}, {"dim": 1}, {"dim": -2, "keepdim": True}, {"keepdim": True}],
    ["float64 nan, function", "float32 ties, method"]))
def test_quantile_values(fname, kw, data):
    if data.startswith("float64"):
        a = _rand((5, 6), np.float64)
        a[1, 2] = a[3, 0] = NAN
        a[4, :] = NAN  # an all-nan row
    else:
        a = np.round(_rand((4, 7), np.float32) * 2) / 2  # float32, with ties from rounding
    qs = [0.0, 0.37, 0.4, 0.5, 1.0]
    tensor_q = (0.1, 0.5, 0.9) if data.startswith("float64") == ("dim" in kw) else (0.25,)
    qa = np.array(tensor_q if len(tensor_q) > 1 else tensor_q[0], a.dtype)  # 1-d / 0-d
    cases = [(q, q, interpolation) for interpolation in _INTERPOLATIONS for q in qs]
    cases += [(flow.tensor(qa), torch.tensor(qa), interpolation)
              for interpolation in _INTERPOLATIONS]
    for fq, tq, interpolation in cases:
        if data.endswith("function"):
            got = getattr(flow, fname)(flow.tensor(a), fq, interpolation=interpolation, **kw)
            want = getattr(torch, fname)(torch.tensor(a), tq, interpolation=interpolation, **kw)
        else:
            got = getattr(flow.tensor(a), fname)(fq, interpolation=interpolation, **kw)
            want = getattr(torch.tensor(a), fname)(tq, interpolation=interpolation, **kw)
        same(got, want)


@pytest.mark.parametrize("fname", ["quantile", "nanquantile"])
def test_quantile_grads_and_errors(fname):
    a = _rand((4, 6), np.float64)
    for interpolation in ("linear", "midpoint", "lower"):
        _grads(fname, a, {"q": 0.3, "dim": 1, "interpolation": interpolation})
    _grads(fname, a, {"q": 0.6})
    x = flow.tensor(a)
    with pytest.raises(RuntimeError, match=f"{fname}\\(\\) q must be in the range"):
        getattr(flow, fname)(x, 1.5)
    with pytest.raises(RuntimeError, match=f"{fname}\\(\\) q values must be in the range"):
        getattr(flow, fname)(x, flow.tensor(np.array([0.5, -0.1])))
    with pytest.raises(RuntimeError, match=f"{fname}\\(\\) q tensor must be same dtype"):
        getattr(flow, fname)(x, flow.tensor(np.array([0.5], np.float32)))
    with pytest.raises(RuntimeError, match=f"{fname}\\(\\) input tensor must be either float"):
        getattr(flow, fname)(flow.tensor(_rand((3,), np.int64)), 0.5)
    with pytest.raises(ValueError, match=f"{fname}\\(\\) interpolation"):
        getattr(flow, fname)(x, 0.5, interpolation="cubic")
    with pytest.raises(IndexError, match=f"{fname}\\(\\).*out of range"):
        getattr(flow, fname)(x, 0.5, dim=2)


# -- searchsorted / bucketize --------------------------------------------------------------------

_SEARCH_DTYPES = [(np.float32, np.float32), (np.int64, np.float64), (np.int32, np.int64),
                  (np.float64, np.int64), (np.uint8, np.int32)]
_SEARCH_KWS = [{}, {"right": True}, {"side": "right"}, {"side": "left"}, {"out_int32": True}]


# every dtype pair (a promotion path) with a left and a right search, each argument form
# with two pairs or more (side= and right= reach the same search: functors/search.py)
@pytest.mark.parametrize("seq_dtype,val_dtype,kw", [
    (*_SEARCH_DTYPES[i], _SEARCH_KWS[k])
    for i, k in [(0, 0), (0, 2), (1, 1), (1, 3), (2, 2), (2, 4), (3, 1), (3, 0), (4, 2), (4, 3),
                 (4, 4)]])
def test_searchsorted(seq_dtype, val_dtype, kw):
    seq = np.sort(_rand((9,), seq_dtype))  # small integer range: repeated entries
    vals = _rand((3, 4), val_dtype)
    same(flow.searchsorted(flow.tensor(seq), flow.tensor(vals), **kw),
         torch.searchsorted(torch.tensor(seq), torch.tensor(vals), **kw))
    seq2 = np.sort(_rand((2, 3, 8), seq_dtype), -1)  # batched sequences
    vals2 = _rand((2, 3, 5), val_dtype)
    same(flow.searchsorted(flow.tensor(seq2), flow.tensor(vals2), **kw),
         torch.searchsorted(torch.tensor(seq2), torch.tensor(vals2), **kw))
    same(flow.searchsorted(flow.tensor(seq), 2, **kw), torch.searchsorted(torch.tensor(seq), 2,
                                                                          **kw))
    same(flow.bucketize(flow.tensor(vals), flow.tensor(seq), right=bool(kw.get("right"))),
         torch.bucketize(torch.tensor(vals), torch.tensor(seq), right=bool(kw.get("right"))))


def test_searchsorted_sorter_nan_and_errors():
    u = _rand((7,), np.float64)
    u[2] = u[5]  # a repeated entry
    vals = np.array([-INF, u[5], 0.0, INF, NAN, u[0]])
    srt = np.argsort(u, kind="stable")
    for kw in ({}, {"right": True}):
        same(flow.searchsorted(flow.tensor(u), flow.tensor(vals), sorter=flow.tensor(srt), **kw),
             torch.searchsorted(torch.tensor(u), torch.tensor(vals), sorter=torch.tensor(srt),
                                **kw))
        s = np.array([1.0, 2.0, 2.0, NAN])  # nan in the sequence: torch's search, step for step
        same(flow.searchsorted(flow.tensor(s), flow.tensor(vals), **kw),
             torch.searchsorted(torch.tensor(s), torch.tensor(vals), **kw))
    same(flow.bucketize(3.5, flow.tensor(np.array([1.0, 3.5, 4.0])), right=True),
         torch.bucketize(3.5, torch.tensor(np.array([1.0, 3.5, 4.0])), right=True))
    seq = flow.tensor(np.array([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="searchsorted\\(\\): side and right"):
        flow.searchsorted(seq, flow.tensor(np.array([1.0])), right=True, side="left")
    with pytest.raises(ValueError, match="searchsorted\\(\\): side must be"):
        flow.searchsorted(seq, flow.tensor(np.array([1.0])), side="middle")
    with pytest.raises(RuntimeError, match="searchsorted\\(\\): sorter"):
        flow.searchsorted(seq, flow.tensor(np.array([1.0])), sorter=flow.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match="searchsorted\\(\\): boundaries tensor should be 1"):
        flow.searchsorted(flow.tensor(np.zeros((2, 3))), flow.tensor(np.zeros((3, 3))))
    with pytest.raises(RuntimeError, match="searchsorted\\(\\): input value can be a scalar"):
        flow.searchsorted(flow.tensor(np.zeros((2, 3))), 1.0)
    with pytest.raises(RuntimeError, match="bucketize\\(\\): boundaries tensor must be 1"):
        flow.bucketize(flow.tensor(np.zeros(3)), flow.tensor(np.zeros((2, 2))))
    out = flow.searchsorted(seq, flow.tensor(np.array([1.5]), requires_grad=True))
    assert not out.requires_grad  # indices: no gradient, as torch


# -- histc / bincount ------------------------------------------------------------------------------

# each dtype with a range taken from the data and a given range (values outside it dropped)
@pytest.mark.parametrize("dtype,kw", [(np.float32, {}),
                                      (np.float32, {"bins": 5, "min": -1.0, "max": 1.0}),
                                      (np.float64, {"bins": 7}),
                                      (np.float64, {"bins": 8, "min": -0.5, "max": 0.5})])
def test_histc(dtype, kw):
    a = _rand((40, 3), dtype)
    a[0, 0], a[1, 1] = 1.0, -1.0  # values on the range's ends and on edges
    a[2, 2] = 0.0
    same(flow.histc(flow.tensor(a), **kw), torch.histc(torch.tensor(a), **kw))
    same(flow.tensor(a).histc(**kw), torch.tensor(a).histc(**kw))


def test_histc_edges_and_errors():
    for a, kw in ((np.array([1.0, 1.0]), {"bins": 4}),  # a point range: widened by 1
                  (np.array([NAN, 0.5, INF, -INF, 0.25]), {"bins": 4, "min": 0.0, "max": 1.0}),
                  (np.zeros((0,), np.float32), {"bins": 3}),
                  (np.linspace(0, 1, 11), {"bins": 10, "min": 0.0, "max": 1.0})):
        same(flow.histc(flow.tensor(a), **kw), torch.histc(torch.tensor(a), **kw))
    x = flow.tensor(_rand((5,)))
    with pytest.raises(RuntimeError, match="histc\\(\\): bins must be > 0"):
        flow.histc(x, bins=0)
    with pytest.raises(RuntimeError, match="histc\\(\\): max must be larger than min"):
        flow.histc(x, min=2.0, max=1.0)
    with pytest.raises(RuntimeError, match="histc\\(\\): range.*not finite"):
        flow.histc(flow.tensor(np.array([NAN, 1.0])))
    with pytest.raises(RuntimeError, match="histc\\(\\): expected a floating point"):
        flow.histc(flow.tensor(np.array([1, 2])))
    # under jax.jit: the bins are a static size, so histc traces
    out = jax.jit(lambda v: flow.histc(flow.tensor(v), bins=4, min=-1.0, max=1.0)._value)(
        np.array([-1.0, 0.0, 0.5, 1.0], np.float32))
    np.testing.assert_array_equal(np.asarray(out), [1, 0, 1, 2])  # 0.5 is an edge: upper bin


@pytest.mark.parametrize("dtype,wdtype,minlength", pairwise(
    [np.int64, np.int32, np.uint8, np.int8], [None, np.float32, np.float64, np.int64],
    [0, 3, 12]))
def test_bincount(dtype, wdtype, minlength):
    a = _rng.integers(0, 7, (15,)).astype(dtype)
    w = None if wdtype is None else _rand((15,), wdtype)
    got = flow.bincount(flow.tensor(a), None if w is None else flow.tensor(w), minlength)
    want = torch.bincount(torch.tensor(a), None if w is None else torch.tensor(w), minlength)
    same(got, want)
    same(flow.tensor(a).bincount(minlength=minlength), torch.tensor(a).bincount(
        minlength=minlength))


def test_bincount_edges_and_errors():
    same(flow.bincount(flow.tensor(np.zeros((0,), np.int64))),
         torch.bincount(torch.tensor(np.zeros((0,), np.int64))))
    with pytest.raises(RuntimeError, match="bincount\\(\\): input must be non-negative"):
        flow.bincount(flow.tensor([-1, 2]))
    with pytest.raises(RuntimeError, match="bincount\\(\\): input must be a 1-d"):
        flow.bincount(flow.tensor([[1, 2]]))
    with pytest.raises(RuntimeError, match="bincount\\(\\): input must be a 1-d.*Float"):
        flow.bincount(flow.tensor(np.array([1.0], np.float32)))
    with pytest.raises(RuntimeError, match="bincount\\(\\): weights"):
        flow.bincount(flow.tensor([1, 2]), flow.tensor([1.0]))
    with pytest.raises(RuntimeError, match="bincount\\(\\): minlength"):
        flow.bincount(flow.tensor([1, 2]), minlength=-1)
    with pytest.raises(RuntimeError, match="bincount\\(\\).*eagerly only.*tracing"):
        jax.jit(lambda v: flow.bincount(flow.tensor(v))._value)(np.array([1, 2]))


# -- unique / unique_consecutive -------------------------------------------------------------------

@pytest.mark.parametrize("fname,dtype,inv_cnt", pairwise(
    ["unique", "unique_consecutive"], [np.float32, np.float64, np.int64, np.uint8, np.bool_],
    [(False, False), (True, False), (False, True), (True, True)]))
def test_unique(fname, dtype, inv_cnt):
    inv, cnt = inv_cnt
    a = _rand((4, 6), dtype)
    if dtype == np.float32:
        a = np.round(a)  # repeats
    if dtype == np.float64:
        a = np.round(_with_edges((4, 6)))  # nan (each its own value), inf
    kw = {"return_inverse": inv, "return_counts": cnt}
    got = getattr(flow, fname)(flow.tensor(a), **kw)
    want = getattr(torch, fname)(torch.tensor(a), **kw)
    if inv and fname == "unique" and dtype == np.float64:
        # the nans' slots among the (all-nan) tail of the values: torch's sort is not
        # stable there; jflow gives them in order of appearance. Everything else agrees.
        nan = np.isnan(a)
        gi, wi = _np(got[1]), _np(want[1])
        np.testing.assert_array_equal(gi[~nan], wi[~nan])
        assert sorted(gi[nan]) == sorted(wi[nan])
        got, want = tuple(g for k, g in enumerate(got) if k != 1), \
            tuple(w for k, w in enumerate(want) if k != 1)
        want = want if len(want) > 1 else want[0]
        got = got if len(got) > 1 else got[0]
    if isinstance(want, tuple):
        same(tuple(got), tuple(want))
    else:
        same(got, want)
    m = getattr(flow.tensor(a), fname)(return_counts=cnt)
    w = getattr(torch.tensor(a), fname)(return_counts=cnt)
    same(tuple(m) if cnt else m, tuple(w) if cnt else w)


def test_unique_edges_and_errors():
    same(flow.unique(flow.tensor(np.array([3, 1, 3, 2])), sorted=False),
         torch.unique(torch.tensor(np.array([3, 1, 3, 2])), sorted=False))
    e = np.zeros((0,), np.float32)
    same(tuple(flow.unique(flow.tensor(e), return_counts=True)),
         tuple(torch.unique(torch.tensor(e), return_counts=True)))
    same(flow.unique_consecutive(flow.tensor(np.float32(2.0))),
         torch.unique_consecutive(torch.tensor(np.float32(2.0))))
    with pytest.raises(NotImplementedError, match="unique\\(\\): dim=0"):
        flow.unique(flow.tensor([1, 2]), dim=0)
    for fname in ("unique", "unique_consecutive"):
        with pytest.raises(RuntimeError, match=f"{fname}\\(\\).*eagerly only.*tracing"):
            jax.jit(lambda v, f=fname: getattr(flow, f)(flow.tensor(v))._value)(np.ones(3))
