"""Parity with PyTorch for the misc torch.* / Tensor functions: shifts, gcd / lcm, nextafter,
frexp, normal, unfold, histogram(dd), unravel_index, gradient, put, index_reduce, the in-place
random fills and shape changes, empty_strided, H / mH, get_device, and the calls jflow used
to refuse (rsub's order, to()'s positional flags, 0-d tensor bounds, tensor_split by tensor,
randint_like of a float tensor, fill's history, gather of 0-d tensors)."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(0)


def _f(t):
    """A jflow tensor holding a torch tensor's values."""
    return flow.tensor(t.detach().numpy())


def _close(got, want, tol=1e-5):
    a = np.asarray(got.detach().numpy() if isinstance(got, flow.Tensor) else got)
    b = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    assert a.shape == b.shape, (a.shape, b.shape)
    if isinstance(got, flow.Tensor) and isinstance(want, torch.Tensor):
        assert got.dtype.name == str(want.dtype).split(".")[1], (got.dtype, want.dtype)
    np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=tol, atol=tol,
                               equal_nan=True)


# -- shifts ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "int64"])
def test_shifts_match_torch_past_the_bit_width(dt):
    info = np.iinfo(dt)
    x = _rng.integers(info.min, int(info.max) + 1, (3, 5), dtype=dt)
    n = _rng.integers(0 if dt == "uint8" else -3, 2 * info.bits, (3, 5)).astype(dt)
    tx, tn = torch.from_numpy(x), torch.from_numpy(n)
    fx, fn = flow.tensor(x), flow.tensor(n)
    _close(flow.bitwise_left_shift(fx, fn), torch.bitwise_left_shift(tx, tn), 0)
    _close(flow.bitwise_right_shift(fx, fn), torch.bitwise_right_shift(tx, tn), 0)
    _close(fx << fn, tx << tn, 0)
    _close(fx >> 3, tx >> 3, 0)
    _close(fx.bitwise_left_shift(2), tx.bitwise_left_shift(2), 0)


def test_shift_operators_reflected_inplace_and_promotion():
    t = torch.tensor([1, 2, 3])
    f = flow.tensor([1, 2, 3])
    _close(1 << f, 1 << t, 0)
    _close(64 >> f, 64 >> t, 0)
    _close(flow.bitwise_left_shift(3, f), torch.bitwise_left_shift(3, t), 0)
    _close(flow.tensor([True, False]) << 1, torch.tensor([True, False]) << 1, 0)  # int64
    _close(flow.tensor([1, 2], dtype=flow.uint8) << flow.tensor([1, 2], dtype=flow.int8),
           torch.tensor([1, 2], dtype=torch.uint8) << torch.tensor([1, 2], dtype=torch.int8), 0)
    g = f.clone()
    g <<= 2
    g >>= 1
    assert g.tolist() == [2, 4, 6]
    g.bitwise_left_shift_(1)
    assert g.tolist() == [4, 8, 12]
    with pytest.raises(TypeError, match="integer"):
        flow.tensor([1.5]) << 1


# -- gcd / lcm / nextafter / frexp ---------------------------------------------------------------

def test_gcd_lcm_match_torch():
    a = _rng.integers(-30, 30, (4, 6))
    b = _rng.integers(-30, 30, (4, 6))
    a[0, 0] = b[0, 0] = 0
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    _close(flow.gcd(flow.tensor(a), flow.tensor(b)), torch.gcd(ta, tb), 0)
    _close(flow.lcm(flow.tensor(a), flow.tensor(b)), torch.lcm(ta, tb), 0)
    _close(flow.tensor(a).lcm(flow.tensor(b[:1])), ta.lcm(tb[:1]), 0)
    x = flow.tensor(a)
    x.gcd_(flow.tensor(b))
    _close(x, torch.gcd(ta, tb), 0)
    _close(flow.gcd(flow.tensor([4], dtype=flow.int8), flow.tensor([6])),
           torch.gcd(torch.tensor([4], dtype=torch.int8), torch.tensor([6])), 0)
    with pytest.raises(TypeError, match="integer"):
        flow.gcd(flow.tensor([True]), flow.tensor([True]))


def test_nextafter_values_edges_and_gradient():
    x = torch.randn(3, 4)
    y = torch.randn(3, 4)
    _close(flow.nextafter(_f(x), _f(y)), torch.nextafter(x, y), 0)
    e = torch.tensor([0.0, -0.0, 1.0, float("inf"), float("nan"), 1e-45])
    o = torch.tensor([1.0, -1.0, 1.0, 0.0, 1.0, 0.0])
    _close(flow.nextafter(_f(e), _f(o)), torch.nextafter(e, o), 0)
    # gradients: identity for input, zero for other (PyTorch's rule)
    x64, y64 = x.double().requires_grad_(), y.double().requires_grad_()
    torch.nextafter(x64, y64).mul(x64).sum().backward()
    fx, fy = _f(x64).requires_grad_(), _f(y64).requires_grad_()
    flow.nextafter(fx, fy).mul(fx).sum().backward()
    _close(fx.grad, x64.grad, 1e-12)
    _close(fy.grad, y64.grad, 0)


@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
def test_frexp_matches_torch_including_subnormals(dt):
    v = [0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e-40, -7e-45, 3.0, -0.75,
         1e30, 6e-8, 1e-310]
    t = torch.tensor(v, dtype=getattr(torch, dt))
    m, e = flow.frexp(flow.tensor(t.numpy()))
    tm, te = torch.frexp(t)
    _close(m, tm, 0)
    _close(e, te, 0)
    assert flow.tensor(t.numpy()).frexp().exponent.dtype is flow.int32
    with pytest.raises(TypeError, match="floating"):
        flow.frexp(flow.tensor([1, 2]))


def test_frexp_gradient():
    x = (torch.randn(5, dtype=torch.float64) * 10).requires_grad_()
    m, _ = torch.frexp(x)
    (m * m).sum().backward()
    fx = _f(x).requires_grad_()
    fm, _ = flow.frexp(fx)
    (fm * fm).sum().backward()
    _close(fx.grad, x.grad, 1e-12)


# -- normal ----------------------------------------------------------------------------------------

def test_normal_overloads_shapes_dtypes_and_seed():
    flow.manual_seed(3)
    a = flow.normal(flow.zeros(2), flow.ones(3, 2))
    flow.manual_seed(3)
    b = flow.normal(flow.zeros(2), flow.ones(3, 2))
    assert a.shape == (3, 2) and bool((a == b).all())
    assert flow.normal(0.0, flow.ones(2, dtype=flow.float64)).dtype is flow.float64
    assert flow.normal(flow.zeros(2), flow.ones(2, dtype=flow.float64)).dtype is flow.float64
    assert flow.normal(2, 3, size=(2,), dtype=flow.float64).dtype is flow.float64
    big = flow.normal(5.0, 2.0, (4000,))
    assert abs(float(big.mean()) - 5.0) < 0.15 and abs(float(big.std()) - 2.0) < 0.15
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        flow.normal(flow.zeros(2), -1.0)
    with pytest.raises(RuntimeError, match="all elements of std"):
        flow.normal(flow.zeros(2), flow.tensor([1.0, -1.0]))
    with pytest.raises(RuntimeError, match="floating point"):
        flow.normal(flow.zeros(2, dtype=flow.int64), 1.0)


def test_normal_gradient_is_reparameterised():
    mean = flow.tensor(np.zeros(4), requires_grad=True)
    std = flow.tensor(np.full(4, 2.0), requires_grad=True)
    out = flow.normal(mean, std)
    (out * 3).sum().backward()
    np.testing.assert_allclose(mean.grad.numpy(), np.full(4, 3.0))
    np.testing.assert_allclose(std.grad.numpy(), 3 * (out.detach().numpy() - 0.0) / 2.0,
                               rtol=1e-12)
    m = flow.tensor(np.ones(3), requires_grad=True)
    flow.normal(m, 0.5).sum().backward()
    np.testing.assert_allclose(m.grad.numpy(), np.ones(3))


# -- unfold ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [(0, 3, 2), (1, 2, 1), (-1, 4, 3), (1, 5, 1)])
def test_unfold_values_view_and_gradient(args):
    x = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    y = x.unfold(*args)
    (y * y).sum().backward()
    fx = _f(x).requires_grad_()
    fy = fx.unfold(*args)
    _close(fy, y, 1e-12)
    assert fy.stride() == y.stride()
    (fy * fy).sum().backward()
    _close(fx.grad, x.grad, 1e-12)


def test_unfold_edges_and_errors():
    _close(flow.tensor(2.0).unfold(0, 1, 1), torch.tensor(2.0).unfold(0, 1, 1), 0)
    assert flow.ones(3).unfold(0, 0, 1).shape == torch.ones(3).unfold(0, 0, 1).shape
    base = flow.zeros(6)
    v = base.unfold(0, 2, 2)
    v[1, 0] = 7.0  # a view: the write reaches the base
    assert base.tolist() == [0, 0, 7, 0, 0, 0]
    with pytest.raises(RuntimeError, match="maximum size"):
        flow.ones(3).unfold(0, 4, 1)
    with pytest.raises(RuntimeError, match="step is 0"):
        flow.ones(3).unfold(0, 2, 0)


# -- histogram / histogramdd / unravel_index / gradient ------------------------------------------

def test_histogram_matches_torch():
    x = torch.randn(50)
    w = torch.rand(50)
    for kw in [dict(), dict(range=(-1.0, 2.0), weight=w, density=True)]:
        fk = {k: (_f(v) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
        h, e = torch.histogram(x, 7, **kw)
        fh, fe = flow.histogram(_f(x), 7, **fk)
        _close(fh, h, 1e-5)
        _close(fe, e, 1e-5)
    edges = torch.tensor([-1.0, 0.0, 0.5, 2.0])
    _close(flow.histogram(_f(x), _f(edges)).hist, torch.histogram(x, edges).hist, 0)
    _close(flow.histogram(flow.ones(3), 2).bin_edges, torch.histogram(torch.ones(3), 2)[1], 0)
    _close(flow.histogram(flow.tensor([]), 2).bin_edges,
           torch.histogram(torch.tensor([]), 2)[1], 0)
    with pytest.raises(RuntimeError, match="floating"):
        flow.histogram(flow.tensor([1, 2]), 2)


def test_histogramdd_matches_torch():
    x = torch.rand(40, 3)
    w = torch.rand(40)
    h, e = torch.histogramdd(x, [2, 3, 4], weight=w, density=True)
    fh, fe = flow.histogramdd(_f(x), [2, 3, 4], weight=_f(w), density=True)
    _close(fh, h, 1e-5)
    for a, b in zip(fe, e):
        _close(a, b, 1e-6)
    h, _ = torch.histogramdd(x[:, :2], 3, range=[0.0, 0.5, 0.2, 1.0])
    fh, _ = flow.histogramdd(_f(x[:, :2]), 3, range=[0.0, 0.5, 0.2, 1.0])
    _close(fh, h, 0)


def test_unravel_index_matches_torch():
    idx = torch.tensor([[0, 5, 23], [-1, 7, 24]])
    for got, want in zip(flow.unravel_index(_f(idx), (2, 3, 4)),
                         torch.unravel_index(idx, (2, 3, 4))):
        _close(got, want, 0)
    _close(flow.unravel_index(flow.tensor(4), 5)[0], torch.unravel_index(torch.tensor(4), 5)[0],
           0)
    with pytest.raises(TypeError, match="integer dtype"):
        flow.unravel_index(flow.tensor([1.0]), (2,))


@pytest.mark.parametrize("kw", [dict(), dict(spacing=2.0), dict(dim=1, edge_order=2),
                                dict(spacing=[0.5, 3.0]), dict(dim=[0], edge_order=2)])
def test_gradient_matches_torch_with_gradients(kw):
    x = torch.randn(4, 5, dtype=torch.float64, requires_grad=True)
    outs = torch.gradient(x, **kw)
    sum(o.pow(2).sum() for o in outs).backward()
    fx = _f(x).requires_grad_()
    fouts = flow.gradient(fx, **kw)
    assert len(fouts) == len(outs)
    for a, b in zip(fouts, outs):
        _close(a, b, 1e-10)
    sum(o.pow(2).sum() for o in fouts).backward()
    _close(fx.grad, x.grad, 1e-10)


def test_gradient_coordinates_integers_and_errors():
    c = torch.tensor([0.0, 1.0, 3.0, 4.5, 7.0])
    y = torch.randn(5)
    for order in (1, 2):
        want = torch.gradient(y, spacing=(c,), edge_order=order)[0]
        _close(flow.gradient(_f(y), spacing=(_f(c),), edge_order=order)[0], want, 1e-5)
    _close(flow.gradient(flow.tensor([1, 4, 9, 16]))[0],
           torch.gradient(torch.tensor([1, 4, 9, 16]))[0], 0)
    with pytest.raises(RuntimeError, match="edge_order"):
        flow.gradient(flow.tensor([1.0, 4.0]), edge_order=2)


# -- put / index_reduce ----------------------------------------------------------------------------

def test_put_matches_torch_with_gradients():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    s = torch.randn(5, dtype=torch.float64, requires_grad=True)
    idx = torch.tensor([0, -1, 5, 5, 2])
    for acc in (False, True):
        i = idx if acc else torch.tensor([0, -1, 5, 7, 2])
        out = torch.put(x, i, s, acc)
        (out * out).sum().backward()
        fx, fs = _f(x).requires_grad_(), _f(s).requires_grad_()
        fo = flow.put(fx, _f(i), fs, acc)
        _close(fo, out, 1e-12)
        (fo * fo).sum().backward()
        _close(fx.grad, x.grad, 1e-12)
        _close(fs.grad, s.grad, 1e-12)
        x.grad = s.grad = None
    y = flow.zeros(2, 3)
    y.put_(flow.tensor([1, 4]), flow.tensor([1.0, 2.0]), accumulate=True)
    assert y.tolist() == [[0, 1, 0], [0, 2, 0]]
    with pytest.raises(ValueError, match="same number of elements"):
        flow.put(flow.zeros(3), flow.tensor([0, 1]), flow.tensor([1.0]))
    with pytest.raises(IndexError, match="out of bounds"):
        flow.put(flow.zeros(3), flow.tensor([3]), flow.tensor([1.0]))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_matches_torch_with_gradients(reduce, include_self):
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    src = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    idx = torch.tensor([0, 2, 0, 3, 2])
    out = x.index_reduce(0, idx, src, reduce, include_self=include_self)
    (out * out).sum().backward()
    fx, fs = _f(x).requires_grad_(), _f(src).requires_grad_()
    fo = fx.index_reduce(0, _f(idx), fs, reduce, include_self=include_self)
    _close(fo, out, 1e-12)
    (fo * fo).sum().backward()
    _close(fx.grad, x.grad, 1e-10)
    _close(fs.grad, src.grad, 1e-10)


def test_index_reduce_inplace_integers_and_errors():
    t = torch.arange(12).reshape(3, 4)
    f = flow.tensor(t.numpy())
    i = torch.tensor([1, 1, 3])
    src = torch.tensor([[5, 6, 7], [1, 2, 3], [4, 0, 9]])
    want = t.clone().index_reduce_(1, i, src, "mean")
    got = f.clone()
    got.index_reduce_(1, _f(i), flow.tensor(src.numpy()), "mean")
    _close(got, want, 0)
    with pytest.raises(ValueError, match="reduce argument"):
        f.index_reduce(0, flow.tensor([0]), f[:1], "sum")


# -- in-place random fills -------------------------------------------------------------------------

def test_random_fills_reproducible_and_distributed():
    for name, args in [("cauchy_", (1.0, 2.0)), ("log_normal_", (0.5, 0.4)),
                       ("geometric_", (0.3,))]:
        flow.manual_seed(7)
        a = getattr(flow.zeros(4000), name)(*args)
        flow.manual_seed(7)
        b = getattr(flow.zeros(4000), name)(*args)
        assert bool((a == b).all()), name
    c = flow.zeros(4000).cauchy_(1.0, 2.0).numpy()
    assert abs(np.median(c) - 1.0) < 0.2 and abs(np.percentile(c, 75) - 3.0) < 0.4
    ln = flow.zeros(4000).log_normal_(0.5, 0.4).numpy()
    assert abs(np.log(ln).mean() - 0.5) < 0.04 and abs(np.log(ln).std() - 0.4) < 0.04
    g = flow.zeros(4000, dtype=flow.int64).geometric_(0.3).numpy()
    assert g.min() >= 1 and abs(g.mean() - 1 / 0.3) < 0.25
    with pytest.raises(RuntimeError, match="p to be in"):
        flow.zeros(3).geometric_(1.5)
    with pytest.raises(RuntimeError, match="floating point"):
        flow.zeros(3, dtype=flow.int64).cauchy_()


# -- in-place shape changes, empty_strided, H / mH, get_device ----------------------------------

def test_inplace_shape_changes_keep_history():
    a = torch.ones(1, 3, dtype=torch.float64, requires_grad=True)
    fa = _f(a).requires_grad_()
    b, fb = a * 2, fa * 2
    b.squeeze_().unsqueeze_(1).t_().transpose_(0, 1)
    fb.squeeze_().unsqueeze_(1).t_().transpose_(0, 1)
    assert tuple(fb.shape) == tuple(b.shape)
    (b * b).sum().backward()
    (fb * fb).sum().backward()
    _close(fa.grad, a.grad, 0)
    x = flow.ones(2, 1, 3)
    assert x.squeeze_(1) is x and tuple(x.shape) == (2, 3)
    with pytest.raises(RuntimeError, match="leaf"):
        flow.ones(1, 3, requires_grad=True).squeeze_()


def test_empty_strided_h_mh_get_device():
    t = torch.empty_strided((2, 3), (1, 2))
    f = flow.empty_strided((2, 3), (1, 2))
    assert f.shape == t.shape and f.stride() == t.stride()
    assert flow.empty_strided((2, 3), (3, 1), dtype=flow.float64).dtype is flow.float64
    z = torch.randn(2, 3, dtype=torch.complex64)
    fz = flow.tensor(z.numpy())
    _close(fz.H, z.H.resolve_conj(), 0)
    _close(fz.mH, z.mH.resolve_conj(), 0)
    zb = torch.randn(2, 2, 3)
    _close(_f(zb).mH, zb.mH, 0)
    _close(_f(zb).mT, zb.mT, 0)
    with pytest.raises(RuntimeError, match="matrices"):
        _ = flow.ones(3).H
    with pytest.raises(RuntimeError, match="matrices"):
        _ = flow.ones(3).mH
    assert flow.ones(2).get_device() == torch.ones(2).get_device() == -1


# -- calls jflow refused where PyTorch computes ---------------------------------------------------

def test_rsub_argument_order_and_alpha():
    x, y = torch.tensor([1.0, 2.0]), torch.tensor([5.0, 7.0])
    _close(flow.rsub(_f(x), _f(y), alpha=2), torch.rsub(x, y, alpha=2), 0)
    _close(flow.rsub(_f(x), 5), torch.rsub(x, 5), 0)
    _close(flow.rsub(flow.tensor([1, 2]), 5, alpha=2), torch.rsub(torch.tensor([1, 2]), 5, alpha=2),
           0)
    _close(flow.rsub(flow.tensor([1, 2]), 2.5, 2), torch.rsub(torch.tensor([1, 2]), 2.5, 2), 0)


def test_to_with_positional_flags():
    x = flow.ones(2)
    y = x.to("cpu", flow.float64, False, True)
    assert y.dtype is flow.float64
    z = x.to(flow.float32, False, True)
    assert z is not x and z.dtype is flow.float32
    assert x.to(flow.float32, False) is x
    assert x.to(flow.zeros(1, dtype=flow.int32), False, False).dtype is flow.int32


def test_zero_dim_tensor_bounds():
    _close(flow.linspace(flow.tensor(0.0), flow.tensor(1.0), 5),
           torch.linspace(torch.tensor(0.0), torch.tensor(1.0), 5), 1e-6)
    _close(flow.logspace(flow.tensor(0), 2, 3), torch.logspace(torch.tensor(0), 2, 3), 1e-5)
    _close(flow.narrow(flow.arange(5), 0, flow.tensor(1), 2),
           torch.narrow(torch.arange(5), 0, torch.tensor(1), 2), 0)
    for got, want in zip(flow.tensor_split(flow.arange(7), flow.tensor([1, 3])),
                         torch.tensor_split(torch.arange(7), torch.tensor([1, 3]))):
        _close(got, want, 0)
    for got, want in zip(flow.arange(7).tensor_split(flow.tensor(3)),
                         torch.arange(7).tensor_split(torch.tensor(3))):
        _close(got, want, 0)
    with pytest.raises(RuntimeError, match="dtype of long"):
        flow.tensor_split(flow.arange(7), flow.tensor([1.0]))
    with pytest.raises(RuntimeError, match="0-dim integral"):
        flow.narrow(flow.arange(5), 0, flow.tensor([1]), 2)


def test_take_along_dim_negative_indices_as_torch():
    x = torch.arange(20.0).reshape(4, 5)
    i = torch.tensor([[-5, -1, 0, 4]] * 4)
    _close(flow.take_along_dim(_f(x), _f(i), 1), torch.take_along_dim(x, i, 1), 0)
    with pytest.raises(IndexError):  # flattened (dim=None): PyTorch refuses negatives too
        flow.take_along_dim(flow.arange(5.0), flow.tensor([-1]))


def test_randint_like_float_fill_and_gather_zero_dim():
    r = flow.randint_like(flow.zeros(100), 3, 10)
    assert r.dtype is flow.float32 and bool((r == r.floor()).all())
    assert 3 <= float(r.min()) and float(r.max()) < 10
    # fill: a result with history; zero gradient to input, the sum to a 0-d value tensor
    x = torch.randn(3, requires_grad=True)
    v = torch.tensor(2.0, requires_grad=True)
    (torch.fill(x, v) * torch.arange(3.0)).sum().backward()
    fx, fv = _f(x).requires_grad_(), flow.tensor(2.0, requires_grad=True)
    out = flow.fill(fx, fv)
    assert out.requires_grad
    (out * flow.arange(3.0)).sum().backward()
    _close(fx.grad, x.grad, 0)
    _close(fv.grad, v.grad, 0)
    assert flow.fill(flow.zeros(2, requires_grad=True), 1.0).requires_grad
    # gather: a 0-d input or index counts as 1-d
    _close(flow.gather(flow.tensor(5.0), 0, flow.tensor([0, 0])),
           torch.gather(torch.tensor(5.0), 0, torch.tensor([0, 0])), 0)
    _close(flow.gather(flow.arange(5.0), 0, flow.tensor(2)),
           torch.gather(torch.arange(5.0), 0, torch.tensor(2)), 0)
    assert flow.gather(flow.arange(5.0), 0, flow.zeros(2, 0, dtype=flow.int64)).shape == (2, 0)


@pytest.mark.parametrize("dt", ["int16", "int64", "bfloat16", "float16"])
def test_linspace_logspace_in_atens_arithmetic(dt):
    for a, b, n in [(4.3, -3, 50), (-2.0, 4, 1), (0, 2, 4)]:
        _close(flow.linspace(a, b, n, dtype=getattr(flow, dt)).float(),
               torch.linspace(a, b, n, dtype=getattr(torch, dt)).float(), 0)
        _close(flow.logspace(a, b, n, dtype=getattr(flow, dt)).float(),
               torch.logspace(a, b, n, dtype=getattr(torch, dt)).float(), 0)
