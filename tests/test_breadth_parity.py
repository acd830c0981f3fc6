"""PyTorch parity of issue 14's second breadth round: in-place forms (methods, ``flow.<op>_``
and ``nn.functional.<act>_``), aliases, the torch.* dtype / shape helpers and the small math,
reduction, linear-algebra, index and factory compositions. Values, result dtypes and float64
gradients are compared against ``torch`` on random inputs; error paths name the function and
the argument."""
# ruff: noqa: B023  (the loops' lambdas are called at once, inside the loop)

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(1402)


def _name(dtype) -> str:
    return str(dtype).split(".")[-1]


def _np(t) -> np.ndarray:
    if isinstance(t, flow.Tensor):
        if t.dtype in (flow.float16, flow.bfloat16):
            t = t.to(flow.float32)
        return t.detach().numpy()
    t = t.detach()
    if t.dtype in (torch.float16, torch.bfloat16):
        t = t.float()
    return t.numpy()


def _check(got, want, rtol: float = 1e-6, atol: float = 1e-7) -> None:
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _check(g, w, rtol, atol)
        return
    assert _name(got.dtype) == _name(want.dtype), (got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape), (got.shape, want.shape)
    np.testing.assert_allclose(_np(got).astype(np.float64), _np(want).astype(np.float64),
                               rtol=rtol, atol=atol, equal_nan=True)


def _pair(a: np.ndarray, requires_grad: bool = False):
    return (flow.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _grads(fj, ft, *arrays: np.ndarray, rtol: float = 1e-7, atol: float = 1e-10) -> None:
    """Forward and float64 gradients of ``fj(*tensors)`` against ``ft`` (a random weighted
    sum of the output as the loss)."""
    js = [flow.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    oj, ot = fj(*js), ft(*ts)
    _check(oj, ot, rtol=1e-9, atol=1e-12)
    w = _RNG.uniform(0.5, 1.5, tuple(ot.shape))
    oj.backward(flow.tensor(w))  # = d sum(out * w), without mul / sum programs per shape
    ot.backward(torch.tensor(w))
    for j, t in zip(js, ts):
        gt = t.grad if t.grad is not None else torch.zeros_like(t)
        gj = j.grad.numpy() if j.grad is not None else np.zeros(t.shape)
        np.testing.assert_allclose(gj, gt.numpy(), rtol=rtol, atol=atol)


# -- in-place forms --------------------------------------------------------------------------

_UNARY_INPLACE = ["cos", "sin", "tan", "expm1", "log1p", "rsqrt", "square", "reciprocal", "erf",
                  "sign", "logical_not", "bitwise_not"]
_BINARY_INPLACE = ["eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
                   "less_equal", "not_equal", "logical_and", "logical_or", "logical_xor",
                   "atan2", "arctan2", "divide"]


def test_in_place_methods_match_torch() -> None:
    a = _RNG.uniform(0.2, 2.0, (3, 4)).astype(np.float32)
    b = np.round(_RNG.uniform(0.2, 2.0, (3, 4)), 1).astype(np.float32)
    b[0, :2] = a[0, :2]
    for name in _UNARY_INPLACE:
        src = (a * 10).astype(np.int64) if name == "bitwise_not" else a
        xj, xt = _pair(src)
        rj = getattr(xj, f"{name}_")()
        getattr(xt, f"{name}_")()
        assert rj is xj, name
        _check(xj, xt, rtol=2e-6)
    for name in _BINARY_INPLACE:
        xj, xt = _pair(a)
        rj = getattr(xj, f"{name}_")(flow.tensor(b))
        getattr(xt, f"{name}_")(torch.tensor(b))
        assert rj is xj, name
        _check(xj, xt, rtol=2e-6)
    ints = _RNG.integers(-5, 6, (3, 4))
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "eq", "lt"):
        xj, xt = _pair(ints)
        getattr(xj, f"{name}_")(3)
        getattr(xt, f"{name}_")(3)
        _check(xj, xt)
    for name in ("cumsum", "cumprod"):
        xj, xt = _pair(a)
        getattr(xj, f"{name}_")(1)
        getattr(xt, f"{name}_")(1)
        _check(xj, xt, rtol=2e-6)
    # the result dtype is cast to the tensor's, and float results into ints are refused
    xj, xt = _pair(ints.astype(np.int32))
    xj.cumsum_(0)
    xt.cumsum_(0)
    _check(xj, xt)
    with pytest.raises(RuntimeError, match="reciprocal_.*can't be cast"):
        flow.tensor(ints).reciprocal_()
    # div_ with rounding_mode through its alias
    xj, xt = _pair(a)
    xj.divide_(flow.tensor(b), rounding_mode="floor")
    xt.divide_(torch.tensor(b), rounding_mode="floor")
    _check(xj, xt)


def test_in_place_writes_through_views_and_keeps_the_graph() -> None:
    a = _RNG.uniform(0.2, 2.0, (4, 3))
    xj, xt = _pair(a, requires_grad=True)
    yj, yt = xj * 2, xt * 2
    yj.cumsum_(0)
    yt.cumsum_(0)
    yj[1].sin_()
    yt[1].sin_()
    _check(yj, yt, rtol=1e-12)
    yj.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="cos_.*leaf"):
        flow.tensor(a, requires_grad=True).cos_()


def test_top_level_in_place_functions() -> None:
    a = _RNG.uniform(0.2, 0.8, (2, 5)).astype(np.float32)
    for name in ["abs_", "acos_", "arcsin_", "ceil_", "cos_", "deg2rad_", "erf_", "exp2_",
                 "expm1_", "fix_", "frac_", "i0_", "log2_", "logit_", "negative_", "rad2deg_",
                 "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sinc_", "square_",
                 "tan_", "trunc_", "zero_", "selu_", "celu_"]:
        xj, xt = _pair(a)
        rj = getattr(flow, name)(xj)
        getattr(torch, name)(xt)
        assert rj is xj, name
        _check(xj, xt, rtol=2e-6)
    for name, args in [("clamp_", (0.3, 0.6)), ("clamp_min_", (0.5,)), ("clip_", (None, 0.4)),
                       ("nan_to_num_", ()), ("threshold_", (0.5, -1.0)), ("xlogy_", (2.0,)),
                       ("fill_", (1.5,)), ("ldexp_", (torch.tensor(3),))]:
        xj, xt = _pair(a)
        fargs = tuple(flow.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v for v in args)
        getattr(flow, name)(xj, *fargs)
        getattr(torch, name)(xt, *args)
        _check(xj, xt, rtol=2e-6)
    xj, xt = _pair(a)
    _check(flow.fill(xj, 2.0), torch.fill(xt, 2.0))
    _check(xj, xt)  # out of place: input unchanged
    with pytest.raises(TypeError, match="cos_.*'input' must be Tensor"):
        flow.cos_([1.0])


def test_functional_in_place_activations() -> None:
    F, TF = flow.nn.functional, torch.nn.functional
    a = _RNG.uniform(-2, 2, (3, 4)).astype(np.float32)
    for name, args in [("relu_", ()), ("elu_", (0.7,)), ("leaky_relu_", (0.1,)),
                       ("hardtanh_", (-0.5, 0.5)), ("threshold_", (0.1, 9.0)),
                       ("celu_", (1.3,)), ("selu_", ()), ("rrelu_", (0.1, 0.3, False))]:
        xj, xt = _pair(a)
        rj = getattr(F, name)(xj, *args)
        getattr(TF, name)(xt, *args)
        assert rj is xj, name
        _check(xj, xt, rtol=2e-6)


# -- aliases and dtype / shape helpers ---------------------------------------------------------

def test_aliases_match_torch() -> None:
    a = _RNG.normal(size=(2, 3, 4))
    b = _RNG.normal(size=(2, 3, 4))
    b[0, 0] = a[0, 0]
    (xj, xt), (yj, yt) = _pair(a), _pair(b)
    for name in ("arctan2", "divide", "greater", "greater_equal", "less", "less_equal",
                 "not_equal"):
        _check(getattr(flow, name)(xj, yj), getattr(torch, name)(xt, yt))
        _check(getattr(xj, name)(yj), getattr(xt, name)(yt))
    _check(flow.divide(xj, yj, rounding_mode="trunc"), torch.divide(xt, yt, rounding_mode="trunc"))
    _check(flow.moveaxis(xj, 0, -1), torch.moveaxis(xt, 0, -1))
    _check(xj.moveaxis([0, 1], [2, 0]), xt.moveaxis([0, 1], [2, 0]))
    _check(flow.concatenate([xj, yj], axis=1), torch.concatenate([xt, yt], axis=1))
    _check(flow.ravel(xj), torch.ravel(xt))
    _check(xj.ravel(), xt.ravel())
    _check(flow.positive(xj), torch.positive(xt))
    _check(flow.msort(xj), torch.msort(xt))
    _check(flow.adjoint(xj), torch.adjoint(xt))
    _check(flow.diagflat(xj[0, :2], 1), torch.diagflat(xt[0, :2], 1))
    _check(flow.select(xj, 1, -1), torch.select(xt, 1, -1))
    _check(flow.detach(xj), torch.detach(xt))
    assert xj.ndimension() == 3
    assert flow.numel(xj) == 24 and flow.is_floating_point(xj)
    with pytest.raises(RuntimeError, match="positive.*bool"):
        flow.positive(flow.tensor([True]))
    with pytest.raises(ValueError, match="adjoint.*'input'.*at least 2"):
        flow.adjoint(xj[0, 0])


def test_views_of_aliases_write_through() -> None:
    x = flow.zeros(2, 3)
    x.ravel()[1] = 5.0
    flow.adjoint(x)[2, 1] = 7.0
    np.testing.assert_array_equal(x.numpy(), [[0, 5, 0], [0, 0, 7]])
    parts = flow.tensor_split(x, 3, 1)
    parts[0].fill_(1.0)
    np.testing.assert_array_equal(x.numpy()[:, 0], [1, 1])


def test_alias_gradients() -> None:
    a, b = _RNG.uniform(0.5, 2, (3, 4)), _RNG.uniform(0.5, 2, (3, 4))
    _grads(flow.arctan2, torch.arctan2, a, b)
    _grads(flow.divide, torch.divide, a, b)
    _grads(lambda x: flow.adjoint(x) * 1, lambda x: torch.adjoint(x) * 1, a)
    _grads(flow.msort, torch.msort, a)
    _grads(lambda x, y: flow.concatenate([x, y], axis=0),
           lambda x, y: torch.concatenate([x, y], axis=0), a, b)


@pytest.mark.parametrize("shape,arg,dim", [((7,), 3, 0), ((5, 6), [1, 4], 1),
                                           ((4, 3), [3, 1, 9], 0), ((6, 2), 4, -2)])
def test_tensor_split(shape, arg, dim) -> None:
    a = _RNG.normal(size=shape)
    xj, xt = _pair(a)
    _check(flow.tensor_split(xj, arg, dim), torch.tensor_split(xt, arg, dim))
    _check(xj.tensor_split(arg, dim), xt.tensor_split(arg, dim))
    _grads(lambda x: flow.cat(flow.tensor_split(x, arg, dim)[::-1], dim),
           lambda x: torch.cat(torch.tensor_split(x, arg, dim)[::-1], dim), a)


def test_hsplit_vsplit_dsplit_split_with_sizes() -> None:
    a = _RNG.normal(size=(4, 6, 2))
    xj, xt = _pair(a)
    for name, arg in [("hsplit", 3), ("hsplit", [1, 4]), ("vsplit", 2), ("vsplit", [3]),
                      ("dsplit", 2), ("dsplit", [1])]:
        _check(getattr(flow, name)(xj, arg), getattr(torch, name)(xt, arg))
        _check(getattr(xj, name)(arg), getattr(xt, name)(arg))
    _check(flow.hsplit(xj[0, :, 0], 2), torch.hsplit(xt[0, :, 0], 2))
    _check(flow.split_with_sizes(xj, [1, 3], 0), torch.split_with_sizes(xt, [1, 3], 0))
    _check(xj.split_with_sizes([4, 2], 1), xt.split_with_sizes([4, 2], 1))
    with pytest.raises(ValueError, match="hsplit.*'sections'.*evenly"):
        flow.hsplit(xj, 4)
    with pytest.raises(ValueError, match="dsplit.*'input'.*3"):
        flow.dsplit(xj[0], 2)
    with pytest.raises(ValueError, match="tensor_split.*sections"):
        flow.tensor_split(xj, 0)


def test_shape_and_dtype_helpers() -> None:
    assert tuple(flow.broadcast_shapes((3, 1), (1, 4), 4)) == (3, 4)
    assert flow.broadcast_shapes() == torch.broadcast_shapes()
    with pytest.raises(RuntimeError, match="broadcast_shapes.*mismatch"):
        flow.broadcast_shapes((2, 3), (4,))
    aj, bj = flow.broadcast_tensors(flow.ones(3, 1), flow.zeros(4))
    assert tuple(aj.shape) == tuple(bj.shape) == (3, 4)
    for fj, ft in ((flow.atleast_1d, torch.atleast_1d), (flow.atleast_2d, torch.atleast_2d),
                   (flow.atleast_3d, torch.atleast_3d)):
        for shape in [(), (3,), (2, 3), (2, 3, 4)]:
            a = _RNG.normal(size=shape)
            _check(fj(flow.tensor(a)), ft(torch.tensor(a)))
        outs = fj(flow.tensor(1.0), flow.ones(2))
        want = ft(torch.tensor(1.0), torch.ones(2))
        _check(outs, want)
    dts = [(flow.int8, torch.int8), (flow.uint8, torch.uint8), (flow.bool, torch.bool),
           (flow.float16, torch.float16), (flow.int64, torch.int64),
           (flow.float64, torch.float64), (flow.bfloat16, torch.bfloat16)]
    for fa, ta in dts:
        for fb, tb in dts:
            assert flow.can_cast(fa, fb) == torch.can_cast(ta, tb), (fa, fb)
            xj, xt = flow.ones(2, dtype=fa), torch.ones(2, dtype=ta)
            yj, yt = flow.ones((), dtype=fb), torch.ones((), dtype=tb)
            assert _name(flow.result_type(xj, yj)) == _name(torch.result_type(xt, yt))
        assert _name(flow.result_type(flow.ones(2, dtype=fa), 2.5)) == \
            _name(torch.result_type(torch.ones(2, dtype=ta), 2.5))
        assert flow.ones(1, dtype=fa).is_signed() == torch.ones(1, dtype=ta).is_signed()
        assert flow.is_signed(flow.ones(1, dtype=fa)) == torch.is_signed(torch.ones(1, dtype=ta))
    assert _name(flow.result_type(2, 3.0)) == _name(torch.result_type(2, 3.0))
    with pytest.raises(TypeError, match="result_type.*'tensor2'"):
        flow.result_type(flow.ones(1), "x")
    with pytest.raises(TypeError, match="can_cast.*'to'"):
        flow.can_cast(flow.int8, "int8")
    assert flow.is_nonzero(flow.tensor([2])) and not flow.tensor(0.0).is_nonzero()
    with pytest.raises(RuntimeError, match="is_nonzero.*more than one"):
        flow.is_nonzero(flow.ones(2))
    assert flow.is_same_size(flow.ones(2, 3), flow.zeros(2, 3))
    assert not flow.ones(2).is_same_size(flow.ones(3))
    _check(flow.scalar_tensor(3), torch.scalar_tensor(3))
    _check(flow.scalar_tensor(2, dtype=flow.int32), torch.scalar_tensor(2, dtype=torch.int32))


def test_where_method_and_sum_to_size() -> None:
    a, b = _RNG.normal(size=(3, 4)), _RNG.normal(size=(3, 4))
    (xj, xt), (yj, yt) = _pair(a), _pair(b)
    _check(xj.where(xj > 0, yj), xt.where(xt > 0, yt))
    _check(xj.where(xj > 0, 0.0), xt.where(xt > 0, 0.0))
    c = _RNG.normal(size=(2, 3, 4))
    for size in [(3, 4), (1, 4), (3, 1), (1, 1), (4,), (2, 1, 4)]:
        _grads(lambda x: x.sum_to_size(size), lambda x: x.sum_to_size(size), c)
    _check(flow.tensor(c).sum_to_size(1, 4), torch.tensor(c).sum_to_size(1, 4))
    with pytest.raises(RuntimeError, match="sum_to_size.*'size'"):
        flow.tensor(c).sum_to_size(2, 4)


# -- small math ----------------------------------------------------------------------------------

def test_fmax_fmin_values_nan_and_grads() -> None:
    a = np.array([1.0, np.nan, 2.0, np.nan, -1.0, 3.0])
    b = np.array([2.0, 1.0, np.nan, np.nan, -1.0, 0.5])
    for name in ("fmax", "fmin"):
        _check(getattr(flow, name)(*_pair(a)[:1], flow.tensor(b)),
               getattr(torch, name)(torch.tensor(a), torch.tensor(b)))
        ij, it = _pair(np.array([1, 5, -2], np.int32))
        _check(getattr(flow, name)(ij, flow.tensor([3.5, 2.0, -2.0])),
               getattr(torch, name)(it, torch.tensor([3.5, 2.0, -2.0])))
        x, y = _RNG.normal(size=(3, 4)), _RNG.normal(size=(4,))
        x[0] = y
        _grads(getattr(flow, name), getattr(torch, name), x, y)
        _check(getattr(flow.tensor(x), name)(flow.tensor(y)),
               getattr(torch.tensor(x), name)(torch.tensor(y)))


def test_heaviside_ldexp_logit_signbit_mvlgamma() -> None:
    x = np.array([-1.5, 0.0, -0.0, 2.0, np.nan, 0.0], np.float32)
    v = np.array([0.5, 0.25, 0.75, 9.0, 9.0, 1.0], np.float32)
    _check(flow.heaviside(flow.tensor(x), flow.tensor(v)),
           torch.heaviside(torch.tensor(x), torch.tensor(v)))
    _check(flow.heaviside(flow.tensor([-2, 0, 3]), flow.tensor([7])),
           torch.heaviside(torch.tensor([-2, 0, 3]), torch.tensor([7])))
    with pytest.raises(RuntimeError, match="heaviside.*'values'.*dtype"):
        flow.heaviside(flow.tensor(x), flow.tensor([1.0], dtype=flow.float64))
    with pytest.raises(RuntimeError, match="heaviside.*derivative"):
        flow.heaviside(flow.tensor(x, requires_grad=True), flow.tensor(v))
    _check(flow.signbit(flow.tensor(x)), torch.signbit(torch.tensor(x)))
    _check(flow.signbit(flow.tensor([-3, 0, 2])), torch.signbit(torch.tensor([-3, 0, 2])))
    _check(flow.signbit(flow.tensor([True, False])), torch.signbit(torch.tensor([True, False])))
    a = _RNG.normal(size=(3, 4))
    e = _RNG.integers(-3, 4, (4,))
    _check(flow.ldexp(flow.tensor(a), flow.tensor(e)), torch.ldexp(torch.tensor(a),
                                                                  torch.tensor(e)))
    _check(flow.ldexp(flow.tensor([1, 2]), flow.tensor([3, -1])),
           torch.ldexp(torch.tensor([1, 2]), torch.tensor([3, -1])))
    # PyTorch's gradient is 2 ** other in integer arithmetic: 0 for a negative integer
    # exponent (a PyTorch bug); jflow's is 2.0 ** other. Compared on exponents >= 0, and the
    # negative ones against the formula.
    ep = np.abs(e)
    _grads(lambda x: flow.ldexp(x, flow.tensor(ep)), lambda x: torch.ldexp(x, torch.tensor(ep)),
           a)
    xj = flow.tensor(a, requires_grad=True)
    flow.ldexp(xj, flow.tensor(e)).sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), np.broadcast_to(2.0 ** e, a.shape))
    p = _RNG.uniform(0.01, 0.99, (3, 4))
    p[0, 0], p[0, 1] = 0.001, 0.9995
    for eps in (None, 0.01):
        _grads(lambda x: flow.logit(x, eps), lambda x: torch.logit(x, eps), p)
        _grads(lambda x: x.logit(eps), lambda x: x.logit(eps), p)
    _check(flow.logit(flow.tensor([0, 1])), torch.logit(torch.tensor([0, 1])))
    for pp in (1, 3):
        q = _RNG.uniform(1.2, 4.0, (5,))
        _grads(lambda x: flow.mvlgamma(x, pp), lambda x: torch.mvlgamma(x, pp), q, rtol=1e-6)
    _check(flow.mvlgamma(flow.tensor([3, 4]), 2), torch.mvlgamma(torch.tensor([3, 4]), 2))
    with pytest.raises(RuntimeError, match="mvlgamma.*greater than"):
        flow.mvlgamma(flow.tensor([0.2]), 2)


# -- reductions ----------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf"), 0.0])
def test_dist(p) -> None:
    a, b = _RNG.normal(size=(3, 4)), _RNG.normal(size=(4,))
    if p == 0.0:
        _check(flow.dist(flow.tensor(a), flow.tensor(b), p),
               torch.dist(torch.tensor(a), torch.tensor(b), p))
    else:
        _grads(lambda x, y: flow.dist(x, y, p), lambda x, y: torch.dist(x, y, p), a, b)
    with pytest.raises(RuntimeError, match="dist.*'input'.*floating"):
        flow.dist(flow.tensor([1, 2]), flow.tensor([1.0, 2.0]))


def test_cov_and_corrcoef() -> None:
    a = _RNG.normal(size=(3, 6))
    fw = _RNG.integers(0, 4, (6,))
    aw = _RNG.uniform(0.1, 2, (6,))
    for kw in ({}, {"correction": 0}, {"correction": 2}):
        _grads(lambda x: flow.cov(x, **kw), lambda x: torch.cov(x, **kw), a)
    for fwj, awj, fwt, awt in [(flow.tensor(fw), None, torch.tensor(fw), None),
                               (None, flow.tensor(aw), None, torch.tensor(aw)),
                               (flow.tensor(fw), flow.tensor(aw), torch.tensor(fw),
                                torch.tensor(aw))]:
        _grads(lambda x: flow.cov(x, fweights=fwj, aweights=awj),
               lambda x: torch.cov(x, fweights=fwt, aweights=awt), a)
    _check(flow.cov(flow.tensor(a[0])), torch.cov(torch.tensor(a[0])))
    _check(flow.cov(flow.tensor([[1, 2, 4], [0, 1, 1]])),
           torch.cov(torch.tensor([[1, 2, 4], [0, 1, 1]])))
    _grads(flow.corrcoef, torch.corrcoef, a)
    _check(flow.tensor(a).corrcoef(), torch.tensor(a).corrcoef())
    with pytest.raises(RuntimeError, match="cov.*'fweights'.*integer"):
        flow.cov(flow.tensor(a), fweights=flow.tensor(aw))
    with pytest.raises(RuntimeError, match="cov.*'aweights'.*6 observations"):
        flow.cov(flow.tensor(a), aweights=flow.tensor(aw[:3]))


def test_trapezoid_and_cumulative() -> None:
    y = _RNG.normal(size=(3, 5))
    x1 = np.sort(_RNG.uniform(0, 3, 5))
    x2 = np.sort(_RNG.uniform(0, 3, (3, 5)), axis=1)
    _check(flow.trapz(flow.tensor(y), dx=2.0), torch.trapz(torch.tensor(y), dx=2.0))
    for fj, ft in ((flow.trapezoid, torch.trapezoid),
                   (flow.cumulative_trapezoid, torch.cumulative_trapezoid)):
        _grads(lambda t: fj(t, dx=0.5, dim=0), lambda t: ft(t, dx=0.5, dim=0), y)
        _grads(lambda t, s: fj(t, s), lambda t, s: ft(t, s), y, x1)
        _grads(lambda t, s: fj(t, s, dim=1), lambda t, s: ft(t, s, dim=1), y, x2)
        _check(fj(flow.tensor([1, 2, 4])), ft(torch.tensor([1, 2, 4])))
    _check(flow.trapezoid(flow.ones(3, 0)), torch.trapezoid(torch.ones(3, 0)))
    with pytest.raises(RuntimeError, match="trapezoid.*'x'.*5"):
        flow.trapezoid(flow.tensor(y), flow.tensor(x1[:3]))


# -- linear algebra ------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 2, 5, -1, -3])
def test_matrix_power(n) -> None:
    a = _RNG.normal(size=(2, 3, 3)) + 2 * np.eye(3)
    _grads(lambda x: flow.matrix_power(x, n), lambda x: torch.matrix_power(x, n), a,
           rtol=1e-6, atol=1e-9)
    _check(flow.linalg.matrix_power(flow.tensor(a), n), torch.linalg.matrix_power(
        torch.tensor(a), n), rtol=1e-9)
    if n >= 0:
        m = _RNG.integers(-2, 3, (3, 3))
        _check(flow.tensor(m).matrix_power(n), torch.tensor(m).matrix_power(n))
    with pytest.raises(ValueError, match="matrix_power.*'input'.*square"):
        flow.matrix_power(flow.ones(2, 3), n)


def test_pinverse_logdet_addr_renorm_vander() -> None:
    a = _RNG.normal(size=(4, 3))
    _grads(flow.pinverse, torch.pinverse, a, rtol=1e-6, atol=1e-9)
    _check(flow.tensor(a).pinverse(rcond=0.5), torch.tensor(a).pinverse(rcond=0.5), rtol=1e-9)
    s = _RNG.normal(size=(2, 3, 3))
    _check(flow.logdet(flow.tensor(s)), torch.logdet(torch.tensor(s)), rtol=1e-9)
    spd = s @ s.transpose(0, 2, 1) + np.eye(3)
    _grads(flow.logdet, torch.logdet, spd, rtol=1e-6, atol=1e-9)
    _check(flow.logdet(flow.zeros(2, 2, dtype=flow.float64)),
           torch.logdet(torch.zeros(2, 2, dtype=torch.float64)))
    m, u, v = _RNG.normal(size=(3, 4)), _RNG.normal(size=3), _RNG.normal(size=4)
    _grads(flow.addr, torch.addr, m, u, v)
    _grads(lambda x, y, z: flow.addr(x, y, z, beta=0.5, alpha=2.0),
           lambda x, y, z: torch.addr(x, y, z, beta=0.5, alpha=2.0), m, u, v)
    _check(flow.tensor([[1, 2]]).addr(flow.tensor([3]), flow.tensor([1, 2]), beta=2),
           torch.tensor([[1, 2]]).addr(torch.tensor([3]), torch.tensor([1, 2]), beta=2))
    bm = np.array([[True, False], [False, False]])
    bu, bv = np.array([True, False]), np.array([False, True])
    _check(flow.addr(flow.tensor(bm), flow.tensor(bu), flow.tensor(bv)),
           torch.addr(torch.tensor(bm), torch.tensor(bu), torch.tensor(bv)))
    with pytest.raises(ValueError, match="addr.*'vec1'.*vector"):
        flow.addr(flow.tensor(m), flow.tensor(m), flow.tensor(v))
    r = _RNG.normal(size=(3, 4)) * 3
    for p, dim, maxnorm in [(2.0, 0, 2.0), (1.0, -1, 3.0)]:
        _grads(lambda x: flow.renorm(x, p, dim, maxnorm),
               lambda x: torch.renorm(x, p, dim, maxnorm), r, rtol=1e-6)
    with pytest.raises(TypeError, match="renorm.*'input'.*floating"):
        flow.renorm(flow.tensor([1, 2]), 2.0, 0, 1.0)
    x = _RNG.normal(size=4)
    for N, inc in [(None, False), (3, True), (0, False)]:
        # (torch.vander's own backward fails: the reference is its definition)
        k = np.arange(x.size if N is None else N)
        k = k if inc else k[::-1]
        _grads(lambda t: flow.vander(t, N, inc),
               lambda t: torch.stack([t ** int(p) for p in k], 1) if k.size else
               torch.vander(t.detach(), N, inc) * t[:1].sum() * 0, x)
        _check(flow.vander(flow.tensor(x), N, inc), torch.vander(torch.tensor(x), N, inc))
    _check(flow.vander(flow.tensor([1, 2, 3], dtype=flow.int32)),
           torch.vander(torch.tensor([1, 2, 3], dtype=torch.int32)))
    d = _RNG.normal(size=(2, 2))
    _grads(lambda t: flow.diagflat(t, -1), lambda t: torch.diagflat(t, -1), d)


# -- index ---------------------------------------------------------------------------------------

def test_isin() -> None:
    e = _RNG.integers(0, 8, (3, 4))
    t = _RNG.integers(0, 8, (5,))
    for invert in (False, True):
        _check(flow.isin(flow.tensor(e), flow.tensor(t), invert=invert),
               torch.isin(torch.tensor(e), torch.tensor(t), invert=invert))
    _check(flow.isin(flow.tensor(e), 3), torch.isin(torch.tensor(e), 3))
    _check(flow.isin(3, flow.tensor(t)), torch.isin(3, torch.tensor(t)))
    _check(flow.isin(flow.tensor([1, 2]), flow.tensor([1.0, 2.5])),
           torch.isin(torch.tensor([1, 2]), torch.tensor([1.0, 2.5])))


def test_select_slice_diagonal_scatter() -> None:
    a = _RNG.normal(size=(4, 5))
    _grads(lambda x, s: flow.select_scatter(x, s, 1, -2),
           lambda x, s: torch.select_scatter(x, s, 1, -2), a, _RNG.normal(size=4))
    for dim, start, end, step, n in [(0, 1, None, 2, 2), (1, -3, None, 2, 2), (0, 3, 1, 1, 0)]:
        shape = (n, 5) if dim == 0 else (4, n)
        _grads(lambda x, s: flow.slice_scatter(x, s, dim, start, end, step),
               lambda x, s: torch.slice_scatter(x, s, dim, start, end, step), a,
               _RNG.normal(size=shape))
    b = _RNG.normal(size=(2, 4, 3))
    for offset, d1, d2, n in [(1, 1, 2, 2), (-2, 1, 2, 2), (1, 2, 0, 1)]:
        shape = tuple(s for i, s in enumerate(b.shape) if i not in (d1 % 3, d2 % 3)) + (n,)
        _grads(lambda x, s: flow.diagonal_scatter(x, s, offset, d1, d2),
               lambda x, s: torch.diagonal_scatter(x, s, offset, d1, d2), b,
               _RNG.normal(size=shape))
    xj = flow.tensor(a)
    _check(xj.select_scatter(flow.ones(5), 0, 0),
           torch.tensor(a).select_scatter(torch.ones(5, dtype=torch.float64), 0, 0))
    with pytest.raises(RuntimeError, match="select_scatter.*'src'.*\\[4\\]"):
        flow.select_scatter(xj, flow.ones(5), 1, 0)
    with pytest.raises(IndexError, match="select_scatter.*index 9"):
        flow.select_scatter(xj, flow.ones(5), 0, 9)
    with pytest.raises(ValueError, match="slice_scatter.*'step'"):
        flow.slice_scatter(xj, flow.ones(4, 5), 0, step=0)


# -- factories -----------------------------------------------------------------------------------

def test_logspace_and_windows() -> None:
    for args, kw in [((0, 3, 4), {}), ((-1.5, 2.0, 7), {"base": 2.0}), ((1, 2, 1), {}),
                     ((0, 2, 3), {"dtype": torch.float64}), ((0, 3, 4), {"dtype": torch.int64})]:
        fkw = {k: getattr(flow, _name(v)) if k == "dtype" else v for k, v in kw.items()}
        _check(flow.logspace(*args, **fkw), torch.logspace(*args, **kw), rtol=1e-6)
    for name in ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
                 "kaiser_window"):
        for n in (0, 1, 2, 7, 8):
            for periodic in (True, False):
                _check(getattr(flow, name)(n, periodic), getattr(torch, name)(n, periodic),
                       rtol=1e-5, atol=1e-6)
        _check(getattr(flow, name)(6, dtype=flow.float64),
               getattr(torch, name)(6, dtype=torch.float64), rtol=1e-12, atol=1e-12)
        with pytest.raises(TypeError, match=f"{name}.*floating"):
            getattr(flow, name)(4, dtype=flow.int64)
    _check(flow.hamming_window(9, False, 0.5, 0.5), torch.hamming_window(9, False, 0.5, 0.5))
    _check(flow.kaiser_window(9, True, 3.0), torch.kaiser_window(9, True, 3.0), rtol=1e-5)
    _check(flow.kaiser_window(9, beta=3.0), torch.kaiser_window(9, True, 3.0), rtol=1e-5)


# -- fill_diagonal_, random_, nbytes, gumbel_softmax ----------------------------------------------

@pytest.mark.parametrize("shape,wrap", [((3, 3), False), ((7, 3), True), ((7, 3), False),
                                        ((3, 7), True), ((4, 4, 4), False)])
def test_fill_diagonal_matches_torch(shape, wrap):
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(len(shape) + wrap).standard_normal(shape).astype(np.float32)
    a, b = flow.tensor(data), torch.from_numpy(data.copy())
    assert a.fill_diagonal_(2.5, wrap=wrap) is a
    b.fill_diagonal_(2.5, wrap=wrap)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    x = flow.tensor(data, requires_grad=True)
    y = x * 1
    y.fill_diagonal_(0.0, wrap=wrap)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (b != 2.5).numpy().astype(np.float32))
    with pytest.raises(RuntimeError, match="fill_diagonal_: all dimensions"):
        flow.zeros(2, 3, 4).fill_diagonal_(1.0)


def test_random_draws_integers_in_range():
    x = flow.zeros(2000)
    assert x.random_(3, 7) is x
    assert set(np.unique(x.numpy())) == {3.0, 4.0, 5.0, 6.0}
    assert set(np.unique(flow.zeros(500, dtype=flow.int64).random_(4).numpy())) == {0, 1, 2, 3}
    assert set(np.unique(flow.zeros(200, dtype=flow.bool).random_().numpy())) == {False, True}
    v = flow.zeros(4000, dtype=flow.int8).random_().numpy()
    assert v.min() >= 0 and v.max() > 100                   # [0, 127], as PyTorch
    f = flow.zeros(4000, dtype=flow.float16).random_().numpy()
    assert f.min() >= 0 and f.max() <= 2 ** 11 and (f == np.round(f)).all()
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        flow.zeros(3).random_(5, 2)
    assert flow.zeros(3, 5, dtype=flow.float64).nbytes == 120


def test_gumbel_softmax_samples_the_softmax_with_straight_through_gradients():
    F = flow.nn.functional
    logits = flow.tensor([[1.0, 0.0, -1.0, 2.0]]).repeat(4000, 1).requires_grad_()
    flow.manual_seed(3)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    values = hard.detach().numpy()
    assert set(np.unique(values)) == {0.0, 1.0} and (values.sum(1) == 1).all()
    # The Gumbel-max trick: the argmax is distributed as softmax(logits).
    p = np.exp([1.0, 0.0, -1.0, 2.0]) / np.exp([1.0, 0.0, -1.0, 2.0]).sum()
    np.testing.assert_allclose(values.mean(0), p, atol=0.03)
    w = flow.arange(4.0)
    (hard * w).sum().backward()
    g_hard = logits.grad.numpy()
    logits.grad = None
    flow.manual_seed(3)                                        # the same noise
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.detach().numpy().sum(1), 1.0, rtol=1e-5)
    assert (soft.detach().numpy().argmax(1) == values.argmax(1)).all()
    (soft * w).sum().backward()
    np.testing.assert_allclose(g_hard, logits.grad.numpy(), rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="gumbel_softmax.*'tau' must be positive"):
        F.gumbel_softmax(logits, tau=0.0)


def test_fill_diagonal_on_a_global_tensor_matches_the_local_result():
    p = flow.placement("cpu", [0, 1, 2, 3])
    g = flow.zeros(8, 3).to_global(p, flow.sbp.split(0))
    g.fill_diagonal_(3.0, wrap=True)
    assert g.sbp == (flow.sbp.split(0),)
    np.testing.assert_array_equal(g.numpy(), flow.zeros(8, 3).fill_diagonal_(3.0, wrap=True)
                                  .numpy())
