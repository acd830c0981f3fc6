"""torch.linalg's LU / triangular / eig / *_ex functions and PyTorch's older torch.*
factorizations against PyTorch on random inputs (values float32, gradients float64), the
*_ex functions' info, and the pinv / nuclear-norm fixes."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(7)


def _r(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _well(*shape, dtype=np.float32):
    n = shape[-1]
    return (_r(*shape, dtype=np.float64) * 0.3 + np.diag(np.arange(2.0, 2.0 + n))).astype(dtype)


def _spd(*shape, dtype=np.float32):
    x = _r(*shape, dtype=np.float64)
    return (x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _close(a, b, tol=1e-4):
    a = a.numpy() if hasattr(a, "numpy") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _grads(fn_flow, fn_torch, *arrays, tol=1e-6):
    """fn(*tensors) -> a scalar; compare the float64 gradients of every input."""
    fx = [flow.tensor(a.astype(np.float64), requires_grad=True) for a in arrays]
    tx = [torch.tensor(a.astype(np.float64), requires_grad=True) for a in arrays]
    fn_flow(*fx).backward()
    fn_torch(*tx).backward()
    for f, t in zip(fx, tx):
        _close(f.grad, t.grad, tol)


def _wsum(out, w):
    """A generic scalar loss: sum(out * w) (w a fixed random weight)."""
    return (out * w).sum()


# -- values (float32) -------------------------------------------------------------------------

def test_lu_family_values():
    for shape in ((2, 3, 5), (5, 3)):
        a = _r(*shape)
        f, t = flow.linalg.lu_factor(flow.tensor(a)), torch.linalg.lu_factor(torch.tensor(a))
        _close(f.LU, t.LU)
        np.testing.assert_array_equal(f.pivots.numpy(), t.pivots.numpy())
        assert f.pivots.dtype == flow.int32
        p, l_, u = flow.linalg.lu(flow.tensor(a))
        tp, tl, tu = torch.linalg.lu(torch.tensor(a))
        _close(p, tp)
        _close(l_, tl)
        _close(u, tu)
        up = flow.lu_unpack(f.LU, f.pivots)
        _close(up.L, torch.lu_unpack(t.LU, t.pivots).L)
        _close(up.P, torch.lu_unpack(t.LU, t.pivots).P)
    a, b = _well(2, 4, 4), _r(2, 4, 3)
    f, t = flow.linalg.lu_factor(flow.tensor(a)), torch.linalg.lu_factor(torch.tensor(a))
    for left, adjoint in ((True, True), (False, False)):
        bb = b if left else np.swapaxes(b, -1, -2)
        _close(flow.linalg.lu_solve(f.LU, f.pivots, flow.tensor(bb), left=left,
                                    adjoint=adjoint),
               torch.linalg.lu_solve(t.LU, t.pivots, torch.tensor(bb), left=left,
                                     adjoint=adjoint))
    _close(flow.lu_solve(flow.tensor(b), f.LU, f.pivots),
           torch.linalg.lu_solve(t.LU, t.pivots, torch.tensor(b)))


def test_triangular_and_cholesky_values():
    a, b = _well(2, 4, 4), _r(2, 4, 3)
    fa, ta, fb, tb = flow.tensor(a), torch.tensor(a), flow.tensor(b), torch.tensor(b)
    for upper in (True, False):
        for unit in (True, False):
            _close(flow.linalg.solve_triangular(fa, fb, upper=upper, unitriangular=unit),
                   torch.linalg.solve_triangular(ta, tb, upper=upper, unitriangular=unit))
        bt = np.swapaxes(b, -1, -2)
        _close(flow.linalg.solve_triangular(fa, flow.tensor(bt), upper=upper, left=False),
               torch.linalg.solve_triangular(ta, torch.tensor(bt), upper=upper, left=False))
        for trans in (True, False):
            x, c = flow.triangular_solve(fb, fa, upper, trans)
            tx, tc = torch.triangular_solve(tb, ta, upper, trans)
            _close(x, tx)
            _close(c, tc)
    s = _spd(2, 4, 4)
    low = np.linalg.cholesky(s.astype(np.float64)).astype(np.float32)
    for upper, f in ((False, low), (True, np.swapaxes(low, -1, -2).copy())):
        _close(flow.cholesky_solve(fb, flow.tensor(f), upper),
               torch.cholesky_solve(tb, torch.tensor(f), upper), 1e-3)
        _close(flow.cholesky_inverse(flow.tensor(f[0]), upper),
               torch.cholesky_inverse(torch.tensor(f[0]), upper), 1e-3)
        _close(flow.cholesky(flow.tensor(s), upper), torch.cholesky(torch.tensor(s), upper))
    _close(fb.cholesky_solve(flow.tensor(low)), tb.cholesky_solve(torch.tensor(low)), 1e-3)


def test_eig_values():
    a = _r(3, 4, 4)
    w, v = flow.linalg.eig(flow.tensor(a))
    assert w.dtype == flow.complex64 and v.dtype == flow.complex64
    tw = torch.linalg.eig(torch.tensor(a)).eigenvalues
    # same multiset of eigenvalues (orders may differ between LAPACK builds)
    key = lambda z: np.sort_complex(np.round(z, 4))  # noqa: E731
    np.testing.assert_allclose(key(w.numpy()), key(tw.numpy()), atol=1e-3)
    # A V = V diag(w), unit columns
    av = a.astype(np.complex128) @ v.numpy()
    np.testing.assert_allclose(av, v.numpy() * w.numpy()[..., None, :], atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(v.numpy(), axis=-2), 1.0, atol=1e-5)
    e = flow.linalg.eigvals(flow.tensor(a.astype(np.float64)))
    assert e.dtype == flow.complex128


def test_svd_qr_old_api_and_misc_values():
    a = _r(2, 5, 3)
    fa, ta = flow.tensor(a), torch.tensor(a)
    u, s, v = flow.svd(fa)
    tu, ts, tv = torch.svd(ta)
    _close(s, ts)
    _close(u @ flow.diag_embed(s) @ v.transpose(-2, -1), ta)
    assert tuple(v.shape) == tuple(tv.shape)
    assert tuple(flow.svd(fa, some=False).U.shape) == tuple(torch.svd(ta, some=False).U.shape)
    z = flow.svd(fa, compute_uv=False)
    assert tuple(z.U.shape) == (2, 5, 5) and float(z.V.abs().sum()) == 0.0
    q, r = flow.qr(fa, some=False)
    tq, tr = torch.qr(ta, some=False)
    assert tuple(q.shape) == tuple(tq.shape) and tuple(r.shape) == tuple(tr.shape)
    _close(q @ r, ta)
    _close(fa.qr().R.abs(), ta.qr().R.abs())
    x, y = _r(3, 4), _r(4)
    _close(flow.linalg.vecdot(flow.tensor(x), flow.tensor(y)),
           torch.linalg.vecdot(torch.tensor(x), torch.tensor(y)))
    m = _well(3, 3)
    for p in (None, -2, "nuc", float("inf")):
        _close(flow.linalg.cond(flow.tensor(m), p), torch.linalg.cond(torch.tensor(m), p), 1e-3)
    t4 = _well(6, 6).reshape(2, 3, 6)
    _close(flow.linalg.tensorinv(flow.tensor(t4), ind=2),
           torch.linalg.tensorinv(torch.tensor(t4), ind=2), 1e-3)
    ts_a, ts_b = _well(6, 6).reshape(2, 3, 6), _r(2, 3)
    _close(flow.linalg.tensorsolve(flow.tensor(ts_a), flow.tensor(ts_b)),
           torch.linalg.tensorsolve(torch.tensor(ts_a), torch.tensor(ts_b)), 1e-3)
    xv = _r(2, 3)
    _close(flow.linalg.vander(flow.tensor(xv), N=4), torch.linalg.vander(torch.tensor(xv), N=4))
    iv = np.array([1, 2, 3], np.int32)
    assert flow.linalg.vander(flow.tensor(iv)).dtype == flow.int64
    _close(flow.linalg.diagonal(flow.tensor(a), offset=1),
           torch.linalg.diagonal(ta, offset=1))
    _close(flow.linalg.matmul(fa, fa.transpose(-2, -1)), torch.linalg.matmul(ta, ta.mT))
    e = _r(2, 3, 3) * 0.5
    _close(flow.matrix_exp(flow.tensor(e)), torch.matrix_exp(torch.tensor(e)))
    _close(flow.tensor(e).matrix_exp(), torch.linalg.matrix_exp(torch.tensor(e)))
    h, tau = _r(5, 3), _r(2)
    _close(flow.linalg.householder_product(flow.tensor(h), flow.tensor(tau)),
           torch.linalg.householder_product(torch.tensor(h), torch.tensor(tau)))


# -- info semantics ---------------------------------------------------------------------------

def test_ex_info():
    sing = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 1.0]]], np.float32)
    fa, ta = flow.tensor(sing), torch.tensor(sing)
    np.testing.assert_array_equal(flow.linalg.inv_ex(fa).info.numpy(),
                                  torch.linalg.inv_ex(ta).info.numpy())
    np.testing.assert_array_equal(flow.linalg.lu_factor_ex(fa).info.numpy(),
                                  torch.linalg.lu_factor_ex(ta).info.numpy())
    b = flow.tensor(np.ones((2, 2, 1), np.float32))
    res = flow.linalg.solve_ex(fa, b)
    np.testing.assert_array_equal(res.info.numpy(), [2, 0])
    _close(res.result[1], np.array([[0.5], [1.0]]))
    assert flow.linalg.inv_ex(fa).inverse.dtype == flow.float32
    with pytest.raises(RuntimeError, match="singular"):
        flow.linalg.inv_ex(fa, check_errors=True)
    with pytest.raises(RuntimeError, match="singular"):
        flow.linalg.solve_ex(fa, b, check_errors=True)
    with pytest.raises(RuntimeError, match="lu_factor"):
        flow.linalg.lu_factor(fa)
    notpd = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]], np.float32)
    spd = _spd(3, 3)
    both = np.stack([notpd, spd, -spd])
    got = flow.linalg.cholesky_ex(flow.tensor(both))
    np.testing.assert_array_equal(got.info.numpy(),
                                  torch.linalg.cholesky_ex(torch.tensor(both)).info.numpy())
    np.testing.assert_array_equal(got.info.numpy(), [2, 0, 1])
    _close(got.L[1], torch.linalg.cholesky(torch.tensor(spd)))
    with pytest.raises(RuntimeError, match="positive-definite"):
        flow.linalg.cholesky_ex(flow.tensor(notpd), check_errors=True)


def test_errors():
    with pytest.raises(TypeError, match="float32 or float64"):
        flow.linalg.lu_factor(flow.tensor(np.ones((3, 3), np.int64)))
    with pytest.raises(ValueError, match="square"):
        flow.linalg.solve_triangular(flow.tensor(_r(3, 4)), flow.tensor(_r(3, 2)), upper=True)
    with pytest.raises(ValueError, match="Incompatible"):
        flow.linalg.solve_triangular(flow.tensor(_r(3, 3)), flow.tensor(_r(4, 2)), upper=True)
    with pytest.raises(ValueError, match="square"):
        flow.linalg.eig(flow.tensor(_r(3, 4)))
    with pytest.raises(TypeError, match="int32"):
        flow.lu_unpack(flow.tensor(_r(3, 3)), flow.tensor(np.ones(3, np.int64)))
    with pytest.raises(ValueError, match="tensorinv"):
        flow.linalg.tensorinv(flow.tensor(_r(2, 3)), ind=1)


# -- gradients (float64) ----------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2)])
def test_lu_grads(shape):
    a = _r(*shape)
    wl, wp = _r(*shape, dtype=np.float64), _r(*shape[:-2], shape[-2], shape[-1])
    _grads(lambda x: _wsum(flow.linalg.lu_factor(x).LU, flow.tensor(wl)),
           lambda x: _wsum(torch.linalg.lu_factor(x).LU, torch.tensor(wl)), a)
    del wp
    k = min(shape)
    w1, w2 = _r(shape[0], k, dtype=np.float64), _r(k, shape[1], dtype=np.float64)
    _grads(lambda x: (lambda r: _wsum(r.L, flow.tensor(w1)) + _wsum(r.U, flow.tensor(w2)))(
        flow.linalg.lu(x)),
        lambda x: (lambda r: _wsum(r.L, torch.tensor(w1)) + _wsum(r.U, torch.tensor(w2)))(
        torch.linalg.lu(x)), a)


def test_solve_grads():
    a, b = _well(4, 4), _r(4, 2)
    w = _r(4, 2, dtype=np.float64)
    for up in (True,):
        def f1(x, y, lib, up=up):
            return _wsum(lib.linalg.solve_triangular(x, y, upper=up, unitriangular=True),
                         lib.tensor(w))

        def f2(x, y, lib, up=up):
            return _wsum(lib.linalg.solve_triangular(x, y.T, upper=up, left=False),
                         lib.tensor(w.T))
        for fn in (f1, f2):
            _grads(lambda x, y, fn=fn: fn(x, y, flow), lambda x, y, fn=fn: fn(x, y, torch), a, b)
    _grads(lambda x, y: _wsum(flow.triangular_solve(y, x, transpose=True)[0], flow.tensor(w)),
           lambda x, y: _wsum(torch.triangular_solve(y, x, transpose=True)[0], torch.tensor(w)),
           a, b)
    _grads(lambda x, y: (lambda f: _wsum(flow.linalg.lu_solve(f.LU, f.pivots, y, adjoint=True),
                                         flow.tensor(w)))(flow.linalg.lu_factor(x)),
           lambda x, y: (lambda f: _wsum(torch.linalg.lu_solve(f.LU, f.pivots, y, adjoint=True),
                                         torch.tensor(w)))(torch.linalg.lu_factor(x)), a, b)
    _grads(lambda x, y: _wsum(flow.linalg.solve_ex(x, y).result, flow.tensor(w)),
           lambda x, y: _wsum(torch.linalg.solve_ex(x, y).result, torch.tensor(w)), a, b)
    low = np.tril(_well(4, 4))
    # PyTorch's own gradcheck of cholesky_solve / cholesky_inverse feeds a triangular input
    _grads(lambda x, y: _wsum(flow.cholesky_solve(y, flow.tril(x)), flow.tensor(w)),
           lambda x, y: _wsum(torch.cholesky_solve(y, torch.tril(x)), torch.tensor(w)), low, b)
    wi = _r(4, 4, dtype=np.float64)
    _grads(lambda x: _wsum(flow.cholesky_inverse(flow.tril(x)), flow.tensor(wi)),
           lambda x: _wsum(torch.cholesky_inverse(torch.tril(x)), torch.tensor(wi)), low)
    _grads(lambda x: _wsum(flow.linalg.inv_ex(x).inverse, flow.tensor(wi)),
           lambda x: _wsum(torch.linalg.inv_ex(x).inverse, torch.tensor(wi)), a)
    # (jflow's cholesky sends the gradient to the triangle it reads: compare on a symmetric
    # parametrisation)
    _grads(lambda x: _wsum(flow.linalg.cholesky_ex(x + x.T).L, flow.tensor(wi)),
           lambda x: _wsum(torch.linalg.cholesky_ex(x + x.T).L, torch.tensor(wi)), _spd(4, 4))


def test_eig_matrix_exp_and_misc_grads():
    a = _r(4, 4)
    _grads(lambda x: flow.real(flow.linalg.eigvals(x)).sum() + flow.imag(
        flow.linalg.eigvals(x)).pow(2).sum(),
        lambda x: torch.linalg.eigvals(x).real.sum() + torch.linalg.eigvals(x).imag.pow(2).sum(),
        a, tol=1e-5)
    # a phase-invariant function of the eigenvectors
    _grads(lambda x: flow.linalg.eig(x).eigenvectors.abs().pow(2).mul(
        flow.tensor(np.arange(16.0).reshape(4, 4))).sum(),
        lambda x: torch.linalg.eig(x).eigenvectors.abs().pow(2).mul(
        torch.tensor(np.arange(16.0).reshape(4, 4))).sum(), a, tol=1e-5)
    w = _r(2, 3, 3, dtype=np.float64)
    _grads(lambda x: _wsum(flow.linalg.matrix_exp(x), flow.tensor(w)),
           lambda x: _wsum(torch.linalg.matrix_exp(x), torch.tensor(w)), _r(2, 3, 3) * 0.5)
    h, tau = _r(5, 3), _r(2)
    wh = _r(5, 3, dtype=np.float64)
    _grads(lambda x, t: _wsum(flow.linalg.householder_product(x, t), flow.tensor(wh)),
           lambda x, t: _wsum(torch.linalg.householder_product(x, t), torch.tensor(wh)), h, tau)
    _grads(lambda x: flow.linalg.cond(x), lambda x: torch.linalg.cond(x), _well(3, 3))
    _grads(lambda x, y: flow.linalg.vecdot(x, y).pow(2).sum(),
           lambda x, y: torch.linalg.vecdot(x, y).pow(2).sum(), _r(3, 4), _r(4))
    ws = _r(3, dtype=np.float64)
    _grads(lambda x: _wsum(flow.svd(x).S, flow.tensor(ws)) + flow.svd(x).V.abs().sum(),
           lambda x: _wsum(torch.svd(x).S, torch.tensor(ws)) + torch.svd(x).V.abs().sum(),
           _r(5, 3))
    _grads(lambda x: flow.linalg.vander(x, N=3).pow(2).sum(),
           lambda x: torch.linalg.vander(x, N=3).pow(2).sum(), _r(4))
    _grads(lambda x: flow.linalg.tensorinv(x, ind=1).pow(2).sum(),
           lambda x: torch.linalg.tensorinv(x, ind=1).pow(2).sum(), _well(4, 4).reshape(4, 2, 2))


# -- pinv / matrix_rank / nuclear norm fixes ----------------------------------------------------

def _repeated_sv(seed=3):
    """Q1 diag(1, 1, 2) Q2^T: a repeated singular value (the SVD's gradient is undefined there,
    pinv's is not)."""
    r = np.random.default_rng(seed)
    q1, _ = np.linalg.qr(r.standard_normal((3, 3)))
    q2, _ = np.linalg.qr(r.standard_normal((3, 3)))
    return q1 @ np.diag([1.0, 1.0, 2.0]) @ q2.T


def _fd_grad(fn, a, eps=1e-6):
    g = np.zeros_like(a)
    for idx in np.ndindex(*a.shape):
        d = np.zeros_like(a)
        d[idx] = eps
        g[idx] = (fn(a + d) - fn(a - d)) / (2 * eps)
    return g


def test_pinv_grad_at_repeated_singular_values():
    a = _repeated_sv()
    w = np.random.default_rng(1).standard_normal((3, 3))
    x = flow.tensor(a, requires_grad=True)
    (flow.linalg.pinv(x) * flow.tensor(w)).sum().backward()
    fd = _fd_grad(lambda m: float((np.linalg.pinv(m) * w).sum()), a)
    np.testing.assert_allclose(x.grad.numpy(), fd, atol=1e-6)
    t = torch.tensor(a, requires_grad=True)
    (torch.linalg.pinv(t) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), atol=1e-8)
    for shape in ((3, 5), (5, 3)):   # wide and tall
        ones = np.ones(shape[::-1])
        _grads(lambda m, ones=ones: _wsum(flow.linalg.pinv(m), flow.tensor(ones)),
               lambda m, ones=ones: _wsum(torch.linalg.pinv(m), torch.tensor(ones)),
               _r(*shape))


def test_pinv_hermitian_reads_lower_triangle():
    s = _spd(2, 4, 4) - 3 * np.eye(4, dtype=np.float32)       # indefinite, symmetric
    junk = s + np.triu(_r(2, 4, 4), 1)                        # the upper triangle is ignored
    got = flow.linalg.pinv(flow.tensor(junk), hermitian=True)
    _close(got, torch.linalg.pinv(torch.tensor(junk), hermitian=True), 1e-3)
    _close(got, np.linalg.pinv(s.astype(np.float64)), 1e-3)
    _grads(lambda m: _wsum(flow.linalg.pinv(m, hermitian=True), flow.tensor(np.ones((4, 4)))),
           lambda m: _wsum(torch.linalg.pinv(m, hermitian=True), torch.tensor(np.ones((4, 4)))),
           s[0])


def test_tolerance_tensors():
    a = (_r(2, 4, 3) * np.array([1.0, 1e-3, 1.0], np.float32))
    fa, ta = flow.tensor(a), torch.tensor(a)
    for kw in ({"rtol": 0.01}, {"atol": 0.1}, {"atol": 0.1, "rtol": 0.5}):
        fk = {k: flow.tensor(np.float32(v)) for k, v in kw.items()}
        tk = {k: torch.tensor(np.float32(v)) for k, v in kw.items()}
        _close(flow.linalg.pinv(fa, **fk), torch.linalg.pinv(ta, **tk), 1e-3)
        np.testing.assert_array_equal(flow.linalg.matrix_rank(fa, **fk).numpy(),
                                      torch.linalg.matrix_rank(ta, **tk).numpy())
    bt = np.array([1e-4, 0.5], np.float32)    # one tolerance per matrix
    np.testing.assert_array_equal(
        flow.linalg.matrix_rank(fa, atol=flow.tensor(bt)).numpy(),
        torch.linalg.matrix_rank(ta, atol=torch.tensor(bt)).numpy())
    _close(flow.linalg.pinv(fa, flow.tensor(np.float32(0.01))),
           torch.linalg.pinv(ta, torch.tensor(np.float32(0.01))), 1e-3)
    np.testing.assert_array_equal(flow.linalg.matrix_rank(fa, hermitian=False).numpy(),
                                  torch.linalg.matrix_rank(ta).numpy())


def test_nuclear_norm():
    a = _r(2, 4, 3)
    fa, ta = flow.tensor(a), torch.tensor(a)
    _close(flow.linalg.matrix_norm(fa, "nuc"), torch.linalg.matrix_norm(ta, "nuc"))
    _close(flow.linalg.norm(fa[0], "nuc"), torch.linalg.norm(ta[0], "nuc"))
    _close(flow.norm(fa[0], p="nuc"), torch.norm(ta[0], p="nuc"))
    _close(flow.norm(fa, p="nuc", dim=(0, 2)), torch.norm(ta, p="nuc", dim=(0, 2)))
    _grads(lambda x: flow.linalg.matrix_norm(x, "nuc").sum(),
           lambda x: torch.linalg.matrix_norm(x, "nuc").sum(), a)
    _grads(lambda x: flow.norm(x, p="nuc"), lambda x: torch.norm(x, p="nuc"), a[0])
    # exactly repeated singular values: finite (the vectors get no gradient)
    x = flow.tensor(np.eye(3), requires_grad=True)
    flow.linalg.matrix_norm(x, "nuc").backward()
    _close(x.grad, np.eye(3))


def test_ldl():
    s = _spd(2, 4, 4) - 4 * np.eye(4, dtype=np.float32)       # symmetric indefinite
    junk = s + np.triu(_r(2, 4, 4), 1)                        # only the lower triangle is read
    f, t = flow.linalg.ldl_factor_ex(flow.tensor(junk)), torch.linalg.ldl_factor_ex(
        torch.tensor(junk))
    _close(f.LD, t.LD)
    np.testing.assert_array_equal(f.pivots.numpy(), t.pivots.numpy())
    np.testing.assert_array_equal(f.info.numpy(), t.info.numpy())
    b = _r(2, 4, 3)
    _close(flow.linalg.ldl_solve(f.LD, f.pivots, flow.tensor(b)),
           torch.linalg.ldl_solve(t.LD, t.pivots, torch.tensor(b)), 1e-3)
    ld, piv = flow.linalg.ldl_factor(flow.tensor(s[0]))
    _close(ld, torch.linalg.ldl_factor(torch.tensor(s[0])).LD)
    z = np.diag([0.0, 1.0, 1.0]).astype(np.float32)
    np.testing.assert_array_equal(flow.linalg.ldl_factor_ex(flow.tensor(z)).info.numpy(),
                                  torch.linalg.ldl_factor_ex(torch.tensor(z)).info.numpy())
    with pytest.raises(RuntimeError, match="singular"):
        flow.linalg.ldl_factor(flow.tensor(z))
