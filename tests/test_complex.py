"""complex64 / complex128 (issue 14): dtypes and promotion, creation, elementwise math and
matmul on complex values, the complex ops and views, and gradients in PyTorch's conjugate
Wirtinger convention — against NumPy, finite differences (the checker's gradient check, which
steps real and imaginary parts) and PyTorch on random inputs when it is installed."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow
from jflow.tensor import _wrap
from jflow.testing.grad_check import check_grad
from jflow.testing.samples import Sample

rng = np.random.default_rng(2026)


def _c(*shape, dtype=np.complex64, lo=-1.0, hi=1.0):
    return (rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape)).astype(dtype)


def _unit(*shape, dtype=np.complex64):
    """Modulus in [0.5, 1.5]: away from the poles and kinks at 0."""
    r, t = rng.uniform(0.5, 1.5, shape), rng.uniform(-3.0, 3.0, shape)
    return (r * np.exp(1j * t)).astype(dtype)


# -- dtypes, promotion, creation -----------------------------------------------------------

def test_dtypes_and_names():
    assert flow.cfloat is flow.complex64 and flow.cdouble is flow.complex128
    assert flow.complex64.is_complex and not flow.complex64.is_floating_point
    assert flow.dtypes.as_dtype(complex) is flow.complex128
    z = flow.tensor([1 + 2j, 3 - 1j])
    assert z.dtype is flow.complex64 and z.is_complex() and flow.is_complex(z)
    assert not flow.ones(2).is_complex()
    assert flow.tensor(np.array([1j], np.complex128)).dtype is flow.complex128
    flow.set_default_dtype(flow.float64)
    try:
        assert flow.tensor([1j]).dtype is flow.complex128  # the default float's complex type
    finally:
        flow.set_default_dtype(flow.float32)
    np.testing.assert_array_equal(z.numpy(), np.array([1 + 2j, 3 - 1j], np.complex64))
    assert z[0].item() == 1 + 2j
    assert flow.ones(2).cfloat().dtype is flow.complex64
    assert flow.ones(2).cdouble().dtype is flow.complex128
    with pytest.raises(TypeError, match="complex32 is not supported"):
        flow.ones(2).chalf()


def test_promotion_matches_torch():
    torch = pytest.importorskip("torch")
    names = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
             "float32", "float64", "complex64", "complex128"]
    for a, b in itertools.product(names, names):
        if "complex" not in a + b:
            continue
        got = flow.promote_types(getattr(flow, a if a != "bool" else "bool"), getattr(flow, b))
        want = torch.promote_types(getattr(torch, a), getattr(torch, b))
        if "float16" in (a, b) and want == torch.complex32:
            continue
        assert got.name == str(want).split(".")[1], (a, b)
    # scalar tiers: a Python complex over a float64 tensor keeps float64's width
    for dt in ("float32", "float64", "int64", "complex64"):
        x = flow.ones(2, dtype=getattr(flow, dt))
        tx = torch.ones(2, dtype=getattr(torch, dt))
        assert (x * 1j).dtype.name == str((tx * 1j).dtype).split(".")[1], dt
        assert (x + flow.tensor(1 + 1j, dtype=flow.complex128)).dtype.name == \
            str((tx + torch.tensor(1 + 1j, dtype=torch.complex128)).dtype).split(".")[1]


# -- forward values against PyTorch ----------------------------------------------------------

_UNARY = ["exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "reciprocal",
          "square", "neg", "abs", "sgn", "angle", "conj_physical"]
_BINARY = ["add", "sub", "mul", "div", "pow"]


def test_forward_matches_torch_random():
    torch = pytest.importorskip("torch")
    for dtype in (np.complex64, np.complex128):
        a, b = _unit(3, 4, dtype=dtype), _unit(4, dtype=dtype)
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        fa, fb = flow.tensor(a), flow.tensor(b)
        tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.complex64 else dict(rtol=1e-11)
        for name in _UNARY:
            np.testing.assert_allclose(getattr(flow, name)(fa).numpy(),
                                       getattr(torch, name)(ta).numpy(), **tol, err_msg=name)
        for name in _BINARY:
            np.testing.assert_allclose(getattr(flow, name)(fa, fb).numpy(),
                                       getattr(torch, name)(ta, tb).numpy(), **tol, err_msg=name)
        m = _c(4, 2, dtype=dtype)
        np.testing.assert_allclose((fa @ flow.tensor(m)).numpy(),
                                   (ta @ torch.from_numpy(m)).numpy(), **tol)
        np.testing.assert_allclose(fa.sum(1).numpy(), ta.sum(1).numpy(), **tol)
        np.testing.assert_allclose(fa.mean().numpy(), ta.mean().numpy(), **tol)
        np.testing.assert_array_equal((fa == fa.conj()).numpy(), (ta == ta.conj()).numpy())
        np.testing.assert_array_equal(flow.isreal(fa).numpy(), torch.isreal(ta).numpy())
        # scalars: Python complex and real operands
        np.testing.assert_allclose((fa * (2 - 1j) + 0.5).numpy(),
                                   (ta * (2 - 1j) + 0.5).numpy(), **tol)
        re, im = rng.standard_normal(5).astype(dtype(0).real.dtype), \
            rng.standard_normal(5).astype(dtype(0).real.dtype)
        np.testing.assert_allclose(flow.complex(flow.tensor(re), flow.tensor(im)).numpy(),
                                   torch.complex(torch.from_numpy(re), torch.from_numpy(im)))
        np.testing.assert_allclose(flow.polar(flow.tensor(re), flow.tensor(im)).numpy(),
                                   torch.polar(torch.from_numpy(re), torch.from_numpy(im)),
                                   **tol)


def test_angle_of_real_input_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.array([-2.0, -0.0, 0.0, 1.5, np.nan], np.float32)
    np.testing.assert_array_equal(flow.angle(flow.tensor(x)).numpy(),
                                  torch.angle(torch.from_numpy(x)).numpy())
    assert flow.angle(flow.tensor([1, -1])).dtype is flow.float32


# -- gradients: finite differences (independent of every rule) ------------------------------

@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh",
                                  "sigmoid", "reciprocal", "square", "neg", "abs"])
def test_unary_gradient_finite_differences(name):
    assert check_grad(name, Sample([_unit(2, 3)]))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow"])
def test_binary_gradient_finite_differences(name):
    assert check_grad(name, Sample([_unit(2, 3), _unit(3)]))


def test_matmul_and_sum_gradient_finite_differences():
    assert check_grad("batch_matmul", Sample([_c(2, 2, 3), _c(3, 2)],
                                             {"transpose_a": False, "transpose_b": False,
                                              "alpha": 1.0}))
    assert check_grad("reduce_sum", Sample([_c(3, 4)], {"axis": [1], "keepdim": False}))
    # a real input feeding a complex computation: the cast's transpose takes the real part
    assert check_grad("cast", Sample([rng.standard_normal(4)],
                                     {"dtype": np.dtype(np.complex128)}))


# -- gradients against PyTorch on random inputs ----------------------------------------------

def _loss_pair(flow_fn, torch_fn, *arrays):
    """Leaf gradients of the real loss sum(|f(z)|^2 * w) in jflow and PyTorch."""
    torch = pytest.importorskip("torch")
    w = rng.uniform(0.5, 1.5, flow_fn(*[flow.tensor(a) for a in arrays]).shape)
    fs = [flow.tensor(a).requires_grad_() for a in arrays]
    ts = [torch.from_numpy(a).requires_grad_() for a in arrays]
    fo = flow_fn(*fs)
    to = torch_fn(*ts)
    fl = ((fo.abs() ** 2) * flow.tensor(w.astype(np.float32))).sum()
    tl = ((to.abs() ** 2) * torch.from_numpy(w.astype(np.float32))).sum()
    fl.backward()
    tl.backward()
    return [f.grad.numpy() for f in fs], [t.grad.resolve_conj().numpy() for t in ts]


@pytest.mark.parametrize("name", _UNARY[:-3] + ["conj", "real", "sgn"])
def test_unary_grads_match_torch(name):
    torch = pytest.importorskip("torch")
    z = _unit(3, 4)
    if name == "real":
        ff, tf = (lambda x: flow.real(x) * x), (lambda x: torch.real(x) * x)
    else:
        ff, tf = getattr(flow, name), getattr(torch, name)
    got, want = _loss_pair(ff, tf, z)
    np.testing.assert_allclose(got[0], want[0], rtol=2e-4, atol=2e-5, err_msg=name)


def test_binary_matmul_angle_imag_grads_match_torch():
    torch = pytest.importorskip("torch")
    a, b = _unit(3, 4), _unit(3, 4)
    for name in _BINARY:
        got, want = _loss_pair(getattr(flow, name), getattr(torch, name), a, b)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5, err_msg=name)
    got, want = _loss_pair(lambda x, y: x @ y.T, lambda x, y: x @ y.T, a, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)
    got, want = _loss_pair(lambda x: flow.angle(x) * x.imag, lambda x: torch.angle(x) * x.imag,
                           a)
    np.testing.assert_allclose(got[0], want[0], rtol=2e-4, atol=2e-5)
    re, im = rng.uniform(0.5, 2, 4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    got, want = _loss_pair(lambda r, i: flow.polar(r, i) * flow.complex(i, r),
                           lambda r, i: torch.polar(r, i) * torch.complex(i, r), re, im)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)


def test_boundaries_use_torch_convention():
    """backward(gradient=), autograd.grad, hooks and retain_grad all see PyTorch's values."""
    torch = pytest.importorskip("torch")
    z, g = _unit(4), _c(4)
    fz, tz = flow.tensor(z).requires_grad_(), torch.from_numpy(z).requires_grad_()
    seen, tseen = [], []
    fz.register_hook(lambda gr: seen.append(gr.numpy()))
    tz.register_hook(lambda gr: tseen.append(gr.numpy()))
    fy, ty = fz * fz.exp(), tz * tz.exp()
    fy.retain_grad()
    ty.retain_grad()
    fu, tu = fy.sin(), ty.sin()
    fu.backward(flow.tensor(g))
    tu.backward(torch.from_numpy(g))
    np.testing.assert_allclose(fz.grad.numpy(), tz.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(seen[0], tseen[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fy.grad.numpy(), ty.grad.numpy(), rtol=1e-4, atol=1e-5)
    (fgz,) = flow.autograd.grad((fz * fz.conj()).real.sum() + (fz * fz).imag.sum(), fz)
    (tgz,) = torch.autograd.grad((tz * tz.conj()).real.sum() + (tz * tz).imag.sum(), tz)
    np.testing.assert_allclose(fgz.numpy(), tgz.numpy(), rtol=1e-5, atol=1e-6)


def test_custom_function_sees_torch_convention():
    class Square(flow.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, gy):
            (x,) = ctx.saved_tensors
            return gy * (2 * x).conj()  # PyTorch's rule for a holomorphic square

    z = _unit(3)
    a = flow.tensor(z).requires_grad_()
    b = flow.tensor(z).requires_grad_()
    (Square.apply(a).abs().sum()).backward()
    ((b * b).abs().sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_jax_grad_through_flow_ops_is_jax_convention():
    """Under jax.grad, flow ops are JAX primitives and follow JAX's convention (the
    conjugate of the tape's), exactly as jnp does."""
    z = _unit(4)
    t = flow.tensor(z).requires_grad_()
    (flow.exp(t * t).abs() ** 2).sum().backward()
    g = jax.grad(lambda v: (flow.exp(_wrap(v) * _wrap(v)).abs() ** 2).sum()._value)(
        jnp.asarray(z))
    g_jnp = jax.grad(lambda v: jnp.sum(jnp.abs(jnp.exp(v * v)) ** 2))(jnp.asarray(z))
    np.testing.assert_allclose(np.asarray(g), np.asarray(g_jnp), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(t.grad.numpy(), np.conj(np.asarray(g)), rtol=1e-5, atol=1e-6)


# -- views: real / imag / conj / view_as_real / view_as_complex alias their input -----------

def test_views_write_through_like_torch():
    torch = pytest.importorskip("torch")
    z = _c(3, 4)
    fz, tz = flow.tensor(z), torch.from_numpy(z.copy())
    fz.real.mul_(2)
    tz.real.mul_(2)
    fz.imag[0] = 5.0
    tz.imag[0] = 5.0
    flow.view_as_real(fz)[1:, :, 1].add_(1)
    torch.view_as_real(tz)[1:, :, 1].add_(1)
    fz.conj()[2, 0] = 1 + 1j
    tz.conj()[2, 0] = 1 + 1j
    np.testing.assert_allclose(fz.numpy(), tz.numpy(), rtol=1e-6)
    x = rng.standard_normal((2, 3, 2)).astype(np.float32)
    fx, tx = flow.tensor(x), torch.from_numpy(x.copy())
    fc, tc = flow.view_as_complex(fx), torch.view_as_complex(tx)
    fc.mul_(1j)
    tc.mul_(1j)
    np.testing.assert_allclose(fx.numpy(), tx.numpy(), rtol=1e-6)
    assert fc._base is fx and flow.view_as_real(fz)._base is fz
    assert fz.conj().is_conj() and not fz.is_conj() and not fz.conj().resolve_conj().is_conj()
    # a write elsewhere shows in the view on its next read
    fz.mul_(0)
    assert float(flow.view_as_real(fz).abs().sum()) == 0.0
    assert flow.view_as_real(fz).stride() == tuple(torch.view_as_real(tz).stride())
    assert flow.ones(2).real.dtype is flow.float32  # real of a real tensor is itself
    fz.real = flow.ones(3, 4)
    np.testing.assert_array_equal(fz.numpy().real, np.ones((3, 4)))


def test_view_write_gradient_matches_torch():
    """A recorded write through view_as_real (PyTorch's CopySlices) differentiates to the
    same gradients."""
    torch = pytest.importorskip("torch")
    z, w = _c(3, 2), rng.standard_normal(3).astype(np.float32)
    outs = []
    for lib, mk in ((flow, flow.tensor), (torch, torch.from_numpy)):
        zl = mk(z.copy()).requires_grad_()
        wl = mk(w.copy()).requires_grad_()
        y = zl * 2
        lib.view_as_real(y)[:, 0, 1] = wl * 3  # the imaginary part of column 0
        loss = (y.abs() ** 2).sum()
        loss.backward()
        outs.append((zl.grad.numpy(), wl.grad.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_rotary_embedding_matches_torch():
    """The rotary-embedding idiom (Llama): view_as_complex * polar, view_as_real, flatten."""
    torch = pytest.importorskip("torch")
    q = rng.standard_normal((2, 5, 4, 8)).astype(np.float32)
    freqs = np.outer(np.arange(5), 1.0 / 10000 ** (np.arange(0, 8, 2) / 8)).astype(np.float32)

    def rope(lib, x, f):
        cis = lib.polar(lib.ones_like(f), f)
        xc = lib.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return lib.view_as_real(xc * cis.reshape(1, 5, 1, 4)).flatten(3)

    fq, tq = flow.tensor(q).requires_grad_(), torch.from_numpy(q).requires_grad_()
    fo, to = rope(flow, fq, flow.tensor(freqs)), rope(torch, tq, torch.from_numpy(freqs))
    np.testing.assert_allclose(fo.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-5)
    (fo * fo.detach()).sum().backward()
    (to * to.detach()).sum().backward()
    np.testing.assert_allclose(fq.grad.numpy(), tq.grad.numpy(), rtol=1e-5, atol=1e-5)


# -- errors --------------------------------------------------------------------------------

def test_clear_errors():
    z = flow.tensor([1 + 1j])
    with pytest.raises(TypeError, match="relu.*complex64"):
        flow.relu(z)
    with pytest.raises(TypeError, match="lt"):
        z < z  # noqa: B015  (ordering is undefined for complex, as PyTorch)
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        flow.imag(flow.ones(2))
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        flow.view_as_complex(flow.ones(2, 3))
    with pytest.raises(RuntimeError, match="only supported for complex"):
        flow.view_as_real(flow.ones(2))
    with pytest.raises(TypeError, match="same dtype"):
        flow.complex(flow.ones(2), flow.ones(2, dtype=flow.float64))
    with pytest.raises(RuntimeError, match="as_strided"):
        flow.view_as_real(flow.tensor([1j, 2j])).as_strided((2,), (2,))
    assert flow.ones(2, dtype=flow.complex64).requires_grad_().requires_grad
    with pytest.raises(RuntimeError, match="floating point and complex"):
        flow.ones(2, dtype=flow.int64).requires_grad_()
