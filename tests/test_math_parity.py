"""PyTorch parity of the elementwise math of issue 14: unary float functions, predicates,
``nan_to_num``, the binary float functions, ``float_power`` and the aliases. Each case
compares values, result dtypes (integer inputs, float16, bfloat16: PyTorch's promotion), edge
values (inf, nan, 0, -0, negatives, poles) and float64 gradients against ``torch``."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(14)
_EDGE = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, -1.0, 1.0, 0.5, -2.0, 3.0])
_VALUES = np.concatenate([_RNG.uniform(-3, 3, 14), _EDGE]).astype(np.float32)  # one shape
_INTS = np.array([-3, -1, 0, 1, 2, 5], np.int64)
_TOL = {"float32": (2e-5, 1e-6), "float64": (1e-10, 1e-12), "float16": (2e-3, 2e-3),
        "bfloat16": (1.6e-2, 1e-2)}


def _pair(a: np.ndarray, dtype: str | None = None):
    """The same values as a jflow and a torch tensor (``dtype`` may be float16 / bfloat16)."""
    f, t = flow.tensor(a), torch.tensor(a)
    if dtype is not None:
        f, t = f.to(getattr(flow, dtype)), t.to(getattr(torch, dtype))
    return f, t


def _np(t) -> np.ndarray:
    if hasattr(t, "detach"):
        t = t.detach()
        if t.dtype == torch.bfloat16 or t.dtype == torch.float16:
            t = t.float()
        return t.numpy()
    if t.dtype in (flow.bfloat16, flow.float16):
        t = t.to(flow.float32)
    return t.numpy()


def _name(dtype) -> str:
    return str(dtype).split(".")[-1]


def _check(got, want, rtol: float | None = None, atol: float | None = None) -> None:
    assert _name(got.dtype) == _name(want.dtype), (got.dtype, want.dtype)
    r, a = _TOL.get(_name(want.dtype), (0.0, 0.0))
    g, w = _np(got), _np(want)
    np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), equal_nan=True,
                               rtol=rtol if rtol is not None else r,
                               atol=atol if atol is not None else a)


# name -> (domain of the gradient check (lo, hi), relative tolerance in float32)
UNARY = {
    "asin": ((-0.9, 0.9), None), "acos": ((-0.9, 0.9), None), "atan": ((-3, 3), None),
    "asinh": ((-3, 3), None), "acosh": ((1.1, 3), None), "atanh": ((-0.9, 0.9), None),
    "sinh": ((-3, 3), None), "cosh": ((-3, 3), None), "log2": ((0.1, 3), None),
    "log10": ((0.1, 3), None), "exp2": ((-3, 3), None), "erfc": ((-2, 2), None),
    "erfinv": ((-0.9, 0.9), 1e-4), "lgamma": ((0.1, 3), 1e-4), "digamma": ((0.1, 3), 1e-4),
    "i0": ((-3, 3), 1e-4), "sinc": ((-3, 3), 1e-4), "deg2rad": ((-3, 3), None),
    "rad2deg": ((-3, 3), None), "trunc": ((-3, 3), None), "frac": ((-3, 3), None),
    "sgn": ((-3, 3), None), "fix": ((-3, 3), None),
    "arcsin": ((-0.9, 0.9), None), "arccos": ((-0.9, 0.9), None), "arctan": ((-3, 3), None),
    "arcsinh": ((-3, 3), None), "arccosh": ((1.1, 3), None), "arctanh": ((-0.9, 0.9), None),
    "negative": ((-3, 3), None), "absolute": ((-3, 3), None),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_dtypes_edges_and_grads(name) -> None:
    (lo, hi), rtol = UNARY[name]
    fj, ft = getattr(flow, name), getattr(torch, name)
    for dtype in (None, "float16", "bfloat16"):
        xj, xt = _pair(_VALUES, dtype)
        _check(fj(xj), ft(xt), rtol=rtol if dtype is None else None)
        _check(getattr(xj, name)(), getattr(xt, name)())  # the Tensor method
    # integers: the default float dtype (trunc / fix / sgn / negative / absolute keep them;
    # frac refuses them, as PyTorch)
    xj, xt = _pair(_INTS)
    try:
        want = ft(xt)
    except RuntimeError:
        with pytest.raises((TypeError, RuntimeError), match=name if name != "fix" else "trunc"):
            fj(xj)
    else:
        _check(fj(xj), want, rtol=rtol)
    # float64 gradients inside the domain
    a = _RNG.uniform(lo, hi, 8)
    xj = flow.tensor(a, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    (fj(xj) * flow.tensor(np.arange(1.0, 9.0))).sum().backward()
    (ft(xt) * torch.arange(1.0, 9.0, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(force=True), rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("name", ["asin", "erfinv", "lgamma", "digamma", "i0", "sinc", "trunc",
                                  "frac", "sgn", "fix", "arccos", "negative", "absolute"])
def test_unary_in_place(name) -> None:
    xj, xt = _pair(_VALUES)
    rj, rt = getattr(xj, f"{name}_")(), getattr(xt, f"{name}_")()
    assert rj is xj
    _check(xj, xt, rtol=1e-4)
    _check(rj, rt, rtol=1e-4)
    if name not in ("sgn", "trunc", "fix", "negative", "absolute"):  # float results
        # frac refuses integers outright (PyTorch: not implemented for 'Long')
        exc, match = (TypeError, "'frac'") if name == "frac" else (RuntimeError, "can't be cast")
        with pytest.raises(exc, match=match):
            getattr(flow.tensor(_INTS), f"{name}_")()


def test_poles_and_signed_zeros() -> None:
    z = np.array([0.0, -0.0, -1.0, -2.0, 1.0], np.float32)
    for name in ("digamma", "lgamma"):
        _check(getattr(flow, name)(flow.tensor(z)), getattr(torch, name)(torch.tensor(z)))
    # digamma(+0) = -inf, digamma(-0) = +inf: the sign of the zero picks the side of the pole
    assert np.signbit(flow.digamma(flow.tensor(z)).numpy()[0])
    assert not np.signbit(flow.digamma(flow.tensor(z)).numpy()[1])
    # sinc'(0) = 0; i0 at 0 has gradient i1(0) = 0
    for name in ("sinc", "i0"):
        x = flow.tensor([0.0], dtype=flow.float64, requires_grad=True)
        getattr(flow, name)(x).sum().backward()
        assert x.grad.numpy()[0] == 0.0


@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma(n) -> None:
    a = _RNG.uniform(0.2, 4, 10)
    xj, xt = _pair(a.astype(np.float32))
    _check(flow.polygamma(n, xj), torch.polygamma(n, xt), rtol=2e-4)
    _check(xj.polygamma(n), xt.polygamma(n), rtol=2e-4)
    _check(flow.polygamma(n, flow.tensor(_INTS[3:])), torch.polygamma(n, torch.tensor(_INTS[3:])),
           rtol=2e-4)
    xj = flow.tensor(a, requires_grad=True)
    xt = torch.tensor(a, requires_grad=True)
    flow.polygamma(n, xj).sum().backward()
    torch.polygamma(n, xt).sum().backward()
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(force=True), rtol=1e-6)
    with pytest.raises(RuntimeError, match="polygamma.*'n'"):
        flow.polygamma(-1, xj)


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite", "isposinf", "isneginf"])
def test_predicates(name) -> None:
    for a, dtype in ((_VALUES, None), (_VALUES, "float16"), (_VALUES, "bfloat16"),
                     (_INTS, None), (_INTS > 0, None)):
        xj, xt = _pair(a, dtype)
        _check(getattr(flow, name)(xj), getattr(torch, name)(xt))
        _check(getattr(xj, name)(), getattr(xt, name)())
    x = flow.tensor(_VALUES, requires_grad=True)
    assert not getattr(flow, name)(x).requires_grad


@pytest.mark.parametrize("kwargs", [{}, {"nan": 1.5}, {"posinf": 7.0, "neginf": -8.0},
                                    {"nan": -1.0, "posinf": 1e30}])
def test_nan_to_num(kwargs) -> None:
    for a, dtype in ((_VALUES, None), (_VALUES.astype(np.float64), None), (_VALUES, "float16"),
                     (_VALUES, "bfloat16"), (_INTS, None), (_INTS > 0, None)):
        xj, xt = _pair(a, dtype)
        _check(flow.nan_to_num(xj, **kwargs), torch.nan_to_num(xt, **kwargs))
        _check(xj.nan_to_num(**kwargs), xt.nan_to_num(**kwargs))
        rj = xj.nan_to_num_(**kwargs)
        xt.nan_to_num_(**kwargs)
        assert rj is xj
        _check(xj, xt)
    # the gradient flows where the input is finite, and is 0 where it was replaced
    xj = flow.tensor(_VALUES.astype(np.float64), requires_grad=True)
    xt = torch.tensor(_VALUES.astype(np.float64), requires_grad=True)
    (flow.nan_to_num(xj, **kwargs) * 3).sum().backward()
    (torch.nan_to_num(xt, **kwargs) * 3).sum().backward()
    np.testing.assert_array_equal(xj.grad.numpy(), xt.grad.numpy(force=True))


_A = np.concatenate([_RNG.uniform(-3, 3, 10), [np.inf, -np.inf, np.nan, 0.0, -0.0, 0.0, 2.0,
                                                np.inf]]).astype(np.float32)
_B = np.concatenate([_RNG.uniform(-3, 3, 10), [1.0, np.inf, 2.0, np.nan, 1.0, 0.0, -np.inf,
                                                np.inf]]).astype(np.float32)
BINARY = {  # name: (scalar forms PyTorch has, gradient domain of the first argument)
    "xlogy": (("ts", "st"), (0.1, 3)), "copysign": (("ts",), (-3, 3)),
    "logaddexp": ((), (-3, 3)), "logaddexp2": ((), (-3, 3)), "hypot": ((), (-3, 3)),
    "float_power": (("ts", "st"), (0.1, 3)),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_promotion_edges_and_grads(name) -> None:
    forms, (lo, hi) = BINARY[name]
    fj, ft = getattr(flow, name), getattr(torch, name)
    for da, db in ((None, None), ("float16", "float16"), ("bfloat16", "bfloat16"),
                   ("float16", "bfloat16"), (None, "float16")):
        (aj, at), (bj, bt) = _pair(_A, da), _pair(_B, db)
        _check(fj(aj, bj), ft(at, bt), rtol=1e-4 if da is None and db is None else None)
        _check(getattr(aj, name)(bj), getattr(at, name)(bt),
               rtol=1e-4 if da is None and db is None else None)
    # broadcasting, and float64 with float32
    (aj, at), (bj, bt) = _pair(_A.reshape(3, 6)), _pair(_B[:6].astype(np.float64))
    _check(fj(aj, bj), ft(at, bt))
    # integer tensors: the default float dtype or PyTorch's refusal
    (ij, it), (kj, kt) = _pair(_INTS), _pair(_INTS[::-1].copy())
    try:
        want = ft(it, kt)
    except RuntimeError:
        with pytest.raises(TypeError, match=f"'{name}'.*floating"):
            fj(ij, kj)
    else:
        _check(fj(ij, kj), want)
    _check(fj(ij, _pair(_B[:6])[0]), ft(it, torch.tensor(_B[:6])))
    # Python scalars
    if "ts" in forms:
        for s in (2, 2.5, -1.5, True):
            _check(fj(_pair(_A)[0], s), ft(torch.tensor(_A), s), rtol=1e-5)
            _check(fj(ij, s), ft(it, s), rtol=1e-5)
    if "st" in forms:
        for s in (2, 0.5, 0):
            _check(fj(s, _pair(_B)[0]), ft(s, torch.tensor(_B)), rtol=1e-5)
    # float64 gradients for both arguments
    a, b = _RNG.uniform(lo, hi, 8), _RNG.uniform(0.1, 3, 8) * _RNG.choice([-1, 1], 8)
    if name == "xlogy":
        b = np.abs(b)
    aj, bj = flow.tensor(a, requires_grad=True), flow.tensor(b, requires_grad=True)
    at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (fj(aj, bj) * flow.tensor(np.arange(1.0, 9.0))).sum().backward()
    (ft(at, bt) * torch.arange(1.0, 9.0, dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(aj.grad.numpy(), at.grad.numpy(force=True), rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(bj.grad.numpy(), bt.grad.numpy(force=True), rtol=1e-7, atol=1e-12)


def test_binary_gradients_at_special_points() -> None:
    # xlogy: x == 0 gives 0, and still log(y) as x's gradient; copysign: 0 at x == 0
    x = np.array([0.0, 0.0, 1.5, -0.0]), np.array([2.0, 0.5, 3.0, 4.0])
    for name in ("xlogy", "copysign", "logaddexp", "hypot"):
        aj, bj = (flow.tensor(v, requires_grad=True) for v in x)
        at, bt = (torch.tensor(v, requires_grad=True) for v in x)
        getattr(flow, name)(aj, bj).sum().backward()
        getattr(torch, name)(at, bt).sum().backward()
        np.testing.assert_allclose(aj.grad.numpy(), at.grad.numpy(force=True), rtol=1e-12)
        np.testing.assert_allclose(bj.grad.numpy(), bt.grad.numpy(force=True), rtol=1e-12)


def test_binary_in_place_forms() -> None:
    for name in ("xlogy", "copysign", "hypot"):
        (aj, at), (bj, bt) = _pair(_A), _pair(_B)
        assert getattr(aj, f"{name}_")(bj) is aj
        getattr(at, f"{name}_")(bt)
        _check(aj, at, rtol=1e-5)
    # float_power_: only into float64 (PyTorch refuses to round the float64 result)
    (aj, at), (bj, bt) = _pair(_A.astype(np.float64)), _pair(_B)
    aj.float_power_(bj)
    at.float_power_(bt)
    _check(aj, at)
    with pytest.raises(RuntimeError, match="float_power_"):
        flow.tensor(_A).float_power_(2)


def test_aliases() -> None:
    (aj, at), (bj, bt) = _pair(_A), _pair(np.where(_B == 0, 1, _B).astype(np.float32))
    for name, args in [("true_divide", (bj,)), ("multiply", (bj,)), ("subtract", (bj,)),
                       ("true_divide", (2,)), ("multiply", (3,)), ("subtract", (1.5,)),
                       ("clip", (-1, 1)), ("clamp_min", (0.5,)), ("clamp_max", (-0.5,))]:
        targs = tuple(bt if a is bj else a for a in args)
        _check(getattr(flow, name)(aj, *args), getattr(torch, name)(at, *targs))
        _check(getattr(aj, name)(*args), getattr(at, name)(*targs))
    _check(flow.subtract(aj, bj, alpha=2), torch.subtract(at, bt, alpha=2))
    ij, it = _pair(_INTS)
    _check(flow.clamp_min(ij, 1.5), torch.clamp_min(it, 1.5))
    _check(flow.true_divide(ij, 2), torch.true_divide(it, 2))
    for name, args in [("clip_", (-1, 1)), ("clamp_min_", (0.5,)), ("clamp_max_", (0.5,)),
                       ("true_divide_", (2.0,)), ("multiply_", (3,)), ("subtract_", (1,))]:
        (xj, xt) = _pair(_A)
        assert getattr(xj, name)(*args) is xj
        getattr(xt, name)(*args)
        _check(xj, xt)
    # clamp_min's gradient: as clamp's
    xj = flow.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    flow.clamp_min(xj, 0.5).sum().backward()
    np.testing.assert_array_equal(xj.grad.numpy(), [0.0, 1.0, 1.0])


def test_bad_inputs_name_the_op_and_argument() -> None:
    with pytest.raises(TypeError, match="'frac'.*input.*floating"):
        flow.frac(flow.tensor(_INTS))
    with pytest.raises(TypeError, match="'hypot'.*floating"):
        flow.hypot(flow.tensor(_INTS), flow.tensor(_INTS))
    with pytest.raises(TypeError):
        flow.logaddexp(flow.tensor(_A), 2.0)  # tensors only, as PyTorch
    with pytest.raises(ValueError, match="broadcast"):
        flow.xlogy(flow.tensor(_A), flow.tensor(_A[:5]))


@pytest.mark.parametrize("decimals", [0, 1, 2, 3, -1, -2])
def test_round_decimals(decimals) -> None:
    vals = np.concatenate([_RNG.uniform(-500, 500, 12), [0.125, 2.5, -2.5, 1250.0, 0.0],
                           _EDGE[:3]]).astype(np.float32)
    for a, dtype in ((vals, None), (vals.astype(np.float64), None), (vals, "float16"),
                     (vals, "bfloat16")):
        xj, xt = _pair(a, dtype)
        _check(flow.round(xj, decimals=decimals), torch.round(xt, decimals=decimals))
        _check(xj.round(decimals=decimals), xt.round(decimals=decimals))
    ij, it = _pair(_INTS)
    if decimals == 0:
        _check(flow.round(ij), torch.round(it))
    else:
        with pytest.raises(RuntimeError, match="decimals"):
            flow.round(ij, decimals=decimals)
    xj = flow.tensor(vals[:12].astype(np.float64), requires_grad=True)
    flow.round(xj, decimals=decimals).sum().backward()
    np.testing.assert_array_equal(xj.grad.numpy(), np.zeros(12))


def test_clamp_with_tensor_bounds() -> None:
    x = _RNG.uniform(-3, 3, (4, 5))
    lo = _RNG.uniform(-2, 0.5, (4, 1))
    hi = _RNG.uniform(-0.5, 2, (5,))
    x[0, :2] = lo[0, 0]  # ties with min keep the gradient in the input
    for kw in ({"min": lo}, {"max": hi}, {"min": lo, "max": hi}):
        tj = {k: flow.tensor(v, requires_grad=True) for k, v in kw.items()}
        tt = {k: torch.tensor(v, requires_grad=True) for k, v in kw.items()}
        xj, xt = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        rj, rt = flow.clamp(xj, **tj), torch.clamp(xt, **tt)
        _check(rj, rt)
        _check(xj.clip(**tj), xt.clip(**tt))
        (rj * flow.tensor(np.arange(20.0).reshape(4, 5))).sum().backward()
        (rt * torch.arange(20.0, dtype=torch.float64).reshape(4, 5)).sum().backward()
        np.testing.assert_array_equal(xj.grad.numpy(), xt.grad.numpy(force=True))
        for k in kw:
            np.testing.assert_allclose(tj[k].grad.numpy(), tt[k].grad.numpy(force=True))
    # promotion: an integer input with float bounds is float; clamp_min / clamp_max / in place
    ij, it = _pair(_INTS)
    _check(flow.clamp(ij, min=flow.tensor([0.5])), torch.clamp(it, min=torch.tensor([0.5])))
    _check(flow.clamp_min(ij, flow.tensor(1)), torch.clamp_min(it, torch.tensor(1)))
    _check(flow.clamp_max(ij, flow.tensor(1)), torch.clamp_max(it, torch.tensor(1)))
    xj, xt = _pair(x)
    xj.clamp_(min=flow.tensor(lo), max=flow.tensor(hi))
    xt.clamp_(min=torch.tensor(lo), max=torch.tensor(hi))
    _check(xj, xt)
    with pytest.raises(TypeError, match="clamp"):  # a tensor and a number: no overload
        flow.clamp(xj, min=flow.tensor(lo), max=1.0)


# -- a tensor to a Python number: PyTorch's specialized exponents ------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_number_exponent_is_pytorchs_bit_for_bit(dtype) -> None:
    """``x ** n`` for the exponents PyTorch's CPU kernel specializes (2, 3, -2, -1: products
    and a reciprocal) equals PyTorch's bit for bit (jflow's ``pow_scalar`` op; ``pow`` with the
    exponent as an operand rounds differently in ~25% of the values of ``x ** 3``); 0.5 and
    -0.5 equal PyTorch's own sqrt / rsqrt relation (``x ** 0.5`` is ``sqrt(x)`` in both), and
    the gradients agree to rounding, on random values with zeros and infinities."""
    a = np.concatenate([_RNG.standard_normal(2000) * 3, [0.0, -0.0, np.inf, -np.inf, np.nan]])
    a = a.astype(dtype)
    pos = np.abs(a[:2000]) + 1e-3
    g = _RNG.standard_normal(a.shape).astype(dtype)
    rtol = 1e-6 if dtype == "float32" else 1e-14
    for e in (2, 3, -2, -1, 2.0, 3.0, 0.5, -0.5):
        v = pos if e in (0.5, -0.5) else a
        x, tx = flow.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
        y, ty = x ** e, tx ** e
        if e in (0.5, -0.5):  # (XLA's sqrt / rsqrt are not PyTorch's bit for bit)
            f = flow.sqrt if e == 0.5 else flow.rsqrt
            np.testing.assert_array_equal(y.detach().numpy(), f(x.detach()).numpy())
            _check(y, ty)
        else:
            np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy(), err_msg=e)
        y.backward(flow.tensor(g[:len(v)]))
        ty.backward(torch.tensor(g[:len(v)]))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=0,
                                   equal_nan=True, err_msg=str(e))
    # the same op under flow.jit and in lazy mode (one executable of the exponent's own)
    x = flow.tensor(a)
    want = torch.tensor(a).pow(3.0).numpy()
    np.testing.assert_array_equal(flow.jit(lambda t: t ** 3.0)(x).numpy(), want)
    with flow.lazy():
        got = (x ** 3.0).numpy()
    np.testing.assert_array_equal(got, want)
    # other exponents and dtypes keep pow with the exponent as an operand: PyTorch's values
    for e, dt in ((4.0, dtype), (3.0, "bfloat16")):
        xf, xt = _pair(pos, dt)
        _check(xf ** e, xt ** e)
