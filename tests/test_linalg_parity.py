"""issue 14, linear algebra: jflow against PyTorch on random inputs — values (float32 and
float64, batched), gradients (float64), integer inputs refused as PyTorch refuses them, and
clear errors for bad shapes. Skipped without torch."""

from __future__ import annotations

import math

import numpy as np
import pytest

import jflow as flow
import jflow.linalg

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(1414)


def _r(*shape, dtype=np.float64):
    return _rng.standard_normal(shape).astype(dtype)


def _well(*shape, dtype=np.float64):
    n = shape[-1]
    return (_r(*shape) * 0.3 + np.diag(np.arange(2.0, 2.0 + n))).astype(dtype)


def _spd(*shape, dtype=np.float64):
    x = _r(*shape)
    return (x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _tol(dtype):
    return {"rtol": 2e-4, "atol": 2e-4} if dtype == np.float32 else {"rtol": 1e-9, "atol": 1e-9}


def _both(arrays, grad=False):
    fl = [flow.tensor(a, requires_grad=grad) for a in arrays]
    th = [torch.tensor(a, requires_grad=grad) for a in arrays]
    return fl, th


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().numpy())


def _compare(f_fn, t_fn, arrays, dtype=np.float64, grad=False, out=None):
    """Run both; compare the outputs (``out`` picks them) and, with ``grad``, the gradients of
    the sum of every output times fixed random weights."""
    fl, th = _both(arrays, grad)
    fo, to = f_fn(*fl), t_fn(*th)
    fo = fo if isinstance(fo, tuple) else (fo,)
    to = to if isinstance(to, tuple) else (to,)
    if out is not None:
        fo, to = tuple(fo[i] for i in out), tuple(to[i] for i in out)
    for a, b in zip(fo, to):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(_np(a), _np(b), **_tol(dtype))
    if grad:
        ws = [_r(*tuple(b.shape)) for b in to]
        # d sum_k sum(out_k * w_k): backward from the outputs with the w_k as their gradients
        # (one compiled backward, no mul / sum / add programs per output shape)
        keep = [k for k, b in enumerate(to) if b.requires_grad]
        flow.autograd.backward([fo[k] for k in keep],
                               [flow.tensor(ws[k], dtype=fo[k].dtype) for k in keep])
        torch.autograd.backward([to[k] for k in keep],
                                [torch.tensor(ws[k], dtype=to[k].dtype) for k in keep])
        for a, b in zip(fl, th):
            np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-6, atol=1e-6)


_DTYPES = [np.float32, np.float64]


# -- products with an accumulator ------------------------------------------------------------

@pytest.mark.parametrize("dtype", _DTYPES)
def test_addmm_family(dtype) -> None:
    kw = {"beta": 0.5, "alpha": 2.0}
    _compare(lambda i, a, b: flow.addmm(i, a, b, **kw), lambda i, a, b: torch.addmm(i, a, b, **kw),
             [_r(3, dtype=dtype), _r(2, 4, dtype=dtype), _r(4, 3, dtype=dtype)], dtype,
             grad=dtype == np.float64)
    _compare(lambda i, a, b: flow.addmv(i, a, b, **kw), lambda i, a, b: torch.addmv(i, a, b, **kw),
             [_r(2, dtype=dtype), _r(2, 4, dtype=dtype), _r(4, dtype=dtype)], dtype,
             grad=dtype == np.float64)
    _compare(flow.baddbmm, torch.baddbmm,
             [_r(2, 3, 5, dtype=dtype), _r(2, 3, 4, dtype=dtype), _r(2, 4, 5, dtype=dtype)], dtype,
             grad=dtype == np.float64)
    _compare(lambda i, a, b: i.addbmm(a, b, alpha=-1.0), lambda i, a, b: i.addbmm(a, b, alpha=-1.0),
             [_r(3, 5, dtype=dtype), _r(2, 3, 4, dtype=dtype), _r(2, 4, 5, dtype=dtype)], dtype,
             grad=dtype == np.float64)


def test_addmm_beta_zero_ignores_nan_and_int() -> None:
    i = np.full((2, 2), np.nan)
    a, b = _r(2, 3), _r(3, 2)
    _compare(lambda i, a, b: flow.addmm(i, a, b, beta=0),
             lambda i, a, b: torch.addmm(i, a, b, beta=0), [i, a, b])
    ii = np.arange(4).reshape(2, 2)
    _compare(lambda i, a, b: flow.addmm(i, a, b, beta=2, alpha=3),
             lambda i, a, b: torch.addmm(i, a, b, beta=2, alpha=3), [ii, ii, ii])
    with pytest.raises(TypeError, match="addmm"):
        flow.addmm(flow.tensor(ii), flow.tensor(ii), flow.tensor(ii), alpha=0.5)
    with pytest.raises(ValueError, match="mat2"):
        flow.addmm(flow.tensor(a), flow.tensor(a), flow.tensor(_r(2, 3, 4)))


# -- einsum and contractions ------------------------------------------------------------------

@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),                      # implicit output
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (4, 3, 2)]),  # ellipsis broadcast (size-1 dim)
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),                                  # trace
    ("i,j->ij", [(3,), (4,)]),
    ("ba,a", [(2, 3), (3,)]),
    ("...i->...", [(2, 3, 4)]),
    (" i j , j k -> k i ", [(2, 3), (3, 2)]),
])
def test_einsum(eq, shapes) -> None:
    arrays = [_r(*s) for s in shapes]
    _compare(lambda *t: flow.einsum(eq, *t), lambda *t: torch.einsum(eq, *t), arrays, grad=True)


def test_einsum_float32_list_and_errors() -> None:
    arrays = [_r(2, 3, dtype=np.float32), _r(3, 4, dtype=np.float32)]
    _compare(lambda a, b: flow.einsum("ij,jk->ik", [a, b]),
             lambda a, b: torch.einsum("ij,jk->ik", [a, b]), arrays, np.float32)
    a = flow.tensor(_r(2, 3))
    with pytest.raises(ValueError, match="einsum"):
        flow.einsum("ij,jk->ik", a)
    with pytest.raises(ValueError, match="einsum"):
        flow.einsum("ijk->i", a)


@pytest.mark.parametrize("dims,shapes", [
    (2, [(2, 3, 4), (3, 4, 5)]), (1, [(2, 3), (3, 4)]), (0, [(2,), (3,)]),
    (([1, 0], [0, 1]), [(3, 2, 4), (2, 3, 5)]), (([2], [1]), [(2, 3, 4), (5, 4)]),
])
def test_tensordot(dims, shapes) -> None:
    _compare(lambda x, y: flow.tensordot(x, y, dims=dims),
             lambda x, y: torch.tensordot(x, y, dims=dims), [_r(*s) for s in shapes], grad=True)


@pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated")
def test_kron_inner_outer_vdot_multi_dot() -> None:
    _compare(flow.kron, torch.kron, [_r(2, 3), _r(3, 2)], grad=True)
    _compare(flow.kron, torch.kron, [_r(2, 2, 2), _r(3, 2)], grad=True)
    _compare(flow.inner, torch.inner, [_r(2, 3), _r(4, 3)], grad=True)
    _compare(flow.inner, torch.inner, [_r(3), _r(3)])
    _compare(flow.ger, torch.ger, [_r(3), _r(4)], grad=True)
    _compare(flow.vdot, torch.vdot, [_r(5), _r(5)], grad=True)
    _compare(lambda *t: flow.linalg.multi_dot(list(t)), lambda *t: torch.linalg.multi_dot(list(t)),
             [_r(3), _r(3, 4), _r(4, 2), _r(2)], grad=True)
    _compare(flow.chain_matmul, torch.chain_matmul, [_r(2, 3), _r(3, 4), _r(4, 2)], grad=True)
    _compare(lambda a, b: a.kron(b), lambda a, b: a.kron(b), [_r(2, 2, dtype=np.float32),
             _r(2, dtype=np.float32)], np.float32)
    with pytest.raises(ValueError, match="inner"):
        flow.inner(flow.tensor(_r(2, 3)), flow.tensor(_r(2, 4)))


# -- diagonals / trace / cross / cdist -------------------------------------------------------

@pytest.mark.parametrize("offset", [0, 1, -2])
def test_diag_family(offset) -> None:
    _compare(lambda x: flow.diag(x, offset), lambda x: torch.diag(x, offset), [_r(4)], grad=True)
    _compare(lambda x: flow.diag(x, offset), lambda x: torch.diag(x, offset), [_r(3, 5)],
             grad=True)
    _compare(lambda x: flow.diag_embed(x, offset, 0, 2),
             lambda x: torch.diag_embed(x, offset, 0, 2), [_r(2, 3)], grad=True)
    _compare(lambda x: x.diag_embed(offset), lambda x: x.diag_embed(offset), [_r(2, 3)])


def test_trace_and_ints() -> None:
    _compare(flow.trace, torch.trace, [_r(3, 4)], grad=True)
    _compare(flow.trace, torch.trace, [np.arange(9, dtype=np.int32).reshape(3, 3)])
    with pytest.raises(ValueError, match="trace"):
        flow.trace(flow.tensor(_r(2, 2, 2)))
    with pytest.raises(ValueError, match="diag"):
        flow.diag(flow.tensor(_r(2, 2, 2)))


def test_cross() -> None:
    _compare(lambda a, b: flow.linalg.cross(a, b), lambda a, b: torch.linalg.cross(a, b),
             [_r(2, 4, 3), _r(1, 4, 3)], grad=True)
    with pytest.raises(RuntimeError):
        torch.linalg.cross(torch.tensor(_r(2, 4, 3)), torch.tensor(_r(4, 3)))
    with pytest.raises(ValueError, match="same number of dimensions"):
        flow.linalg.cross(flow.tensor(_r(2, 4, 3)), flow.tensor(_r(4, 3)))
    _compare(lambda a, b: flow.cross(a, b, dim=0), lambda a, b: torch.cross(a, b, dim=0),
             [_r(3, 2, dtype=np.float32), _r(3, 2, dtype=np.float32)], np.float32)
    with pytest.raises(ValueError, match="length 3"):
        flow.linalg.cross(flow.tensor(_r(2, 4)), flow.tensor(_r(2, 4)))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, math.inf, 0.5])
def test_cdist(p) -> None:
    _compare(lambda a, b: flow.cdist(a, b, p=p), lambda a, b: torch.cdist(a, b, p=p),
             [_r(2, 3, 4), _r(2, 5, 4)], grad=p != math.inf)
    with pytest.raises(TypeError, match="cdist"):
        flow.cdist(flow.tensor(np.ones((2, 3), np.int64)), flow.tensor(np.ones((2, 3), np.int64)))


# -- torch.linalg -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", _DTYPES)
def test_inv_det_slogdet_solve(dtype) -> None:
    g = dtype == np.float64
    a = _well(2, 3, 3, dtype=dtype)
    _compare(flow.linalg.inv, torch.linalg.inv, [a], dtype, grad=g)
    _compare(flow.inverse, torch.inverse, [a[0]], dtype)
    _compare(flow.linalg.det, torch.linalg.det, [a * np.array(-1, dtype)], dtype, grad=g)
    _compare(flow.linalg.slogdet, torch.linalg.slogdet, [-a], dtype, grad=g)
    _compare(flow.linalg.solve, torch.linalg.solve, [a, _r(2, 3, 2, dtype=dtype)], dtype, grad=g)
    _compare(flow.linalg.solve, torch.linalg.solve, [a, _r(3, dtype=dtype)], dtype, grad=g)
    _compare(lambda x, y: flow.linalg.solve(x, y, left=False),
             lambda x, y: torch.linalg.solve(x, y, left=False), [a, _r(4, 3, dtype=dtype)], dtype,
             grad=g)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_cholesky_eigh(dtype) -> None:
    for upper in (False, True):
        _compare(lambda x, u=upper: flow.linalg.cholesky(x, upper=u),
                 lambda x, u=upper: torch.linalg.cholesky(x, upper=u),
                 [_spd(2, 3, 3, dtype=dtype)], dtype)
    # A = X + X^T from a leaf X: both libraries' gradients of X are then comparable (each
    # puts the gradient of a symmetric input on its own choice of entries)
    x = _spd(2, 4, 4) / 2
    fl, th = _both([x], True)
    fo = flow.linalg.cholesky(fl[0] + fl[0].transpose(-1, -2))
    to = torch.linalg.cholesky(th[0] + th[0].mT)
    w = _r(2, 4, 4)
    fo.backward(flow.tensor(w, dtype=fo.dtype))  # = d sum(fo * w)
    to.backward(torch.tensor(w, dtype=to.dtype))
    np.testing.assert_allclose(_np(fo), _np(to), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(_np(fl[0].grad), _np(th[0].grad), rtol=1e-6, atol=1e-6)
    # eigh: values, vectors up to sign, gradients of the values and of sign-invariant v v^T
    s = _r(2, 4, 4, dtype=dtype)
    for uplo in ("L", "U"):
        _compare(lambda a, u=uplo: flow.linalg.eigvalsh(a, UPLO=u),
                 lambda a, u=uplo: torch.linalg.eigvalsh(a, UPLO=u), [s], dtype)
    fl, th = _both([s.astype(np.float64)], True)
    fw, fv = flow.linalg.eigh(fl[0] + fl[0].transpose(-1, -2))
    tw, tv = torch.linalg.eigh(th[0] + th[0].mT)
    fp = fv[..., :, :1] * fv[..., :, :1].transpose(-1, -2)
    tp = tv[..., :, :1] * tv[..., :, :1].mT
    np.testing.assert_allclose(_np(fp), _np(tp), rtol=1e-8, atol=1e-8)
    ((fw * flow.tensor([1.0, 2, 3, 4])).sum() + fp.sum() * 0.5).backward()
    ((tw * torch.tensor([1.0, 2, 3, 4])).sum() + tp.sum() * 0.5).backward()
    np.testing.assert_allclose(_np(fl[0].grad), _np(th[0].grad), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_qr_svd(dtype) -> None:
    g = dtype == np.float64
    a = _r(2, 5, 3, dtype=dtype)
    for mode in ("reduced", "complete"):
        fq, fr = flow.linalg.qr(flow.tensor(a), mode=mode)
        tq, tr = torch.linalg.qr(torch.tensor(a), mode=mode)
        assert tuple(fq.shape) == tuple(tq.shape) and tuple(fr.shape) == tuple(tr.shape)
        # both use Householder QR: the same signs
        np.testing.assert_allclose(_np(fr), _np(tr), **_tol(dtype))
        np.testing.assert_allclose(_np(fq @ fr), a, **_tol(dtype))
    _compare(lambda x: flow.linalg.qr(x), lambda x: torch.linalg.qr(x), [a], dtype, grad=g)
    _compare(lambda x: flow.linalg.qr(x), lambda x: torch.linalg.qr(x),
             [np.swapaxes(a, -1, -2).copy()], dtype, grad=g)   # wide
    _compare(flow.linalg.svdvals, torch.linalg.svdvals, [a], dtype, grad=g)
    for full in (True, False):
        fu, fs, fvh = flow.linalg.svd(flow.tensor(a), full_matrices=full)
        tu, ts, tvh = torch.linalg.svd(torch.tensor(a), full_matrices=full)
        assert tuple(fu.shape) == tuple(tu.shape) and tuple(fvh.shape) == tuple(tvh.shape)
        np.testing.assert_allclose(_np(fs), _np(ts), **_tol(dtype))
    if g:  # sign-invariant function of the vectors: u_i v_i^T
        fl, th = _both([a], True)
        fu, fs, fvh = flow.linalg.svd(fl[0], full_matrices=False)
        tu, ts, tvh = torch.linalg.svd(th[0], full_matrices=False)
        w = _r(2, 5, 3)
        (((fu * flow.tensor([1.0, 2.0, 3.0])) @ fvh) * flow.tensor(w)).sum().backward()
        (((tu * torch.tensor([1.0, 2.0, 3.0])) @ tvh) * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(_np(fl[0].grad), _np(th[0].grad), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_pinv_lstsq_rank(dtype) -> None:
    g = dtype == np.float64
    a = _r(2, 5, 3, dtype=dtype)
    _compare(flow.linalg.pinv, torch.linalg.pinv, [a], dtype, grad=g)
    _compare(lambda x, y: flow.linalg.lstsq(x, y).solution,
             lambda x, y: torch.linalg.lstsq(x, y).solution, [a, _r(2, 5, 2, dtype=dtype)], dtype,
             grad=g)
    for driver in ("gels", "gelsy", "gelsd", "gelss"):
        fr = flow.linalg.lstsq(flow.tensor(a), flow.tensor(_r(2, 5, 2, dtype=dtype)),
                               driver=driver)
        tr = torch.linalg.lstsq(torch.tensor(a), torch.tensor(_r(2, 5, 2, dtype=dtype)),
                                driver=driver)
        for f, t in zip(fr[2:], tr[2:]):  # rank, singular values: present / empty alike
            assert tuple(f.shape) == tuple(t.shape)
        assert tuple(fr.residuals.shape) == tuple(tr.residuals.shape)
    b = _r(2, 5, 2, dtype=dtype)
    fr = flow.linalg.lstsq(flow.tensor(a), flow.tensor(b), driver="gelsd")
    tr = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver="gelsd")
    for f, t in zip(fr, tr):
        np.testing.assert_allclose(_np(f), _np(t), **_tol(dtype))
    low = (_r(4, 2) @ _r(2, 4)).astype(dtype)
    _compare(flow.linalg.matrix_rank, torch.linalg.matrix_rank, [low])
    _compare(flow.linalg.matrix_rank, torch.linalg.matrix_rank, [a])


@pytest.mark.parametrize("ord", [None, "fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2])
def test_matrix_norms(ord) -> None:
    a = _r(2, 3, 4)
    g = True  # random inputs: no ties among the sums or singular values
    if ord is not None:
        _compare(lambda x: flow.linalg.matrix_norm(x, ord),
                 lambda x: torch.linalg.matrix_norm(x, ord), [a], grad=g)
        _compare(lambda x: flow.linalg.matrix_norm(x, ord, dim=(0, 2), keepdim=True),
                 lambda x: torch.linalg.matrix_norm(x, ord, dim=(0, 2), keepdim=True), [a])
    _compare(lambda x: flow.linalg.norm(x, ord), lambda x: torch.linalg.norm(x, ord), [a[0]],
             grad=g)
    _compare(lambda x: flow.linalg.norm(x, ord, dim=(1, 2)),
             lambda x: torch.linalg.norm(x, ord, dim=(1, 2)), [a.astype(np.float32)], np.float32)


@pytest.mark.parametrize("ord", [2, 1, 3.5, math.inf, -math.inf, 0])
def test_vector_norms(ord) -> None:
    a = _r(2, 3, 4)
    _compare(lambda x: flow.linalg.vector_norm(x, ord), lambda x: torch.linalg.vector_norm(x, ord),
             [a], grad=ord != 0)
    _compare(lambda x: flow.linalg.vector_norm(x, ord, dim=(0, 2), keepdim=True),
             lambda x: torch.linalg.vector_norm(x, ord, dim=(0, 2), keepdim=True), [a])
    _compare(lambda x: flow.linalg.norm(x, ord, dim=1), lambda x: torch.linalg.norm(x, ord, dim=1),
             [a.astype(np.float32)], np.float32)


# -- errors --------------------------------------------------------------------------------------

_INT = np.arange(9, dtype=np.int64).reshape(3, 3)


@pytest.mark.parametrize("fn", ["inv", "det", "slogdet", "cholesky", "qr", "svd", "svdvals",
                                "eigh", "eigvalsh", "pinv", "matrix_rank", "vector_norm",
                                "matrix_norm", "norm"])
def test_int_inputs_raise_like_torch(fn) -> None:
    with pytest.raises(RuntimeError):
        getattr(torch.linalg, fn)(torch.tensor(_INT))
    with pytest.raises(TypeError, match=r"linalg\..*float"):
        getattr(flow.linalg, fn)(flow.tensor(_INT))


def test_bad_shapes_and_singular() -> None:
    rect, vec = flow.tensor(_r(3, 4)), flow.tensor(_r(3))
    for fn in ("inv", "det", "slogdet", "cholesky", "eigh"):
        with pytest.raises(ValueError, match=rf"linalg\.{fn}.*'A'.*square"):
            getattr(flow.linalg, fn)(rect)
        with pytest.raises(ValueError, match=rf"linalg\.{fn}.*'A'.*2 dimensions"):
            getattr(flow.linalg, fn)(vec)
    with pytest.raises(ValueError, match=r"linalg\.solve"):
        flow.linalg.solve(flow.tensor(_well(3, 3)), flow.tensor(_r(4, 2)))
    sing = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(RuntimeError, match="singular"):
        flow.linalg.inv(flow.tensor(sing))
    with pytest.raises(RuntimeError, match="singular"):
        flow.linalg.solve(flow.tensor(sing), flow.tensor(_r(2)))
    with pytest.raises(RuntimeError, match="positive-definite"):
        flow.linalg.cholesky(flow.tensor(-np.eye(2)))
    with pytest.raises(ValueError, match="UPLO"):
        flow.linalg.eigh(flow.tensor(_well(2, 2)), UPLO="X")
    with pytest.raises(ValueError, match="mode"):
        flow.linalg.qr(flow.tensor(_well(2, 2)), mode="bad")
    with pytest.raises(TypeError, match="dtype"):
        flow.linalg.solve(flow.tensor(_well(2, 2)), flow.tensor(_r(2, dtype=np.float32)))
    # det of a singular matrix: jflow's gradient is the cofactor matrix (the exact one, which
    # finite differences confirm); PyTorch 2.13 returns zeros for this input
    a = flow.tensor(sing, requires_grad=True)
    flow.linalg.det(a).backward()
    np.testing.assert_allclose(a.grad.numpy(), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)
    # slogdet of a singular matrix: (0, -inf) as torch
    s, l = flow.linalg.slogdet(flow.tensor(sing))
    assert float(s) == 0.0 and float(l) == -math.inf


def test_compiled_step_and_jax_grad() -> None:
    """The ops under flow.jit (traced) and jax.grad (through the ops' JAX rules)."""
    a = _well(2, 3, 3)

    @flow.jit
    def step(x):
        return flow.linalg.slogdet(x).logabsdet + flow.linalg.svdvals(x).sum(-1)

    want = torch.linalg.slogdet(torch.tensor(a)).logabsdet + \
        torch.linalg.svdvals(torch.tensor(a)).sum(-1)
    np.testing.assert_allclose(step(flow.tensor(a)).numpy(), want.numpy(), rtol=1e-9)
    g = flow.func.grad(lambda x: flow.linalg.det(x).sum())(flow.tensor(a))
    t = torch.tensor(a, requires_grad=True)
    torch.linalg.det(t).sum().backward()
    np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-8)
