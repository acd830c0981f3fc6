"""Checker samples for jflow/ops/linalg.py.

References come from ``numpy.linalg`` (LAPACK) in float64, or from explicit loops (einsum,
diag_embed). Inputs are well conditioned: SPD matrices for cholesky, symmetric matrices with
well separated eigenvalues for eigh, matrices with distinct singular values for svd, so that
finite differences are meaningful. Factorizations whose sign conventions are free (qr, svd,
eigh vectors) are checked with ``verify``: reconstruction, orthonormality, triangularity and
agreement with NumPy up to the sign of each vector.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(14)
_TOL32 = {"rtol": 1e-4, "atol": 1e-4}


def _f(*shape, dtype=np.float32):
    return _rng.uniform(-1.0, 1.0, shape).astype(dtype)


def _well(*shape, dtype=np.float32):
    """Square matrices near a diagonal with distinct entries 2, 3, ...: invertible, with
    distinct singular values."""
    n = shape[-1]
    return (_f(*shape, dtype=np.float64) * 0.3 + np.diag(np.arange(2.0, 2.0 + n))).astype(dtype)


def _spd(*shape, dtype=np.float32):
    x = _f(*shape, dtype=np.float64)
    n = shape[-1]
    return (x @ np.swapaxes(x, -1, -2) + n * np.eye(n)).astype(dtype)


def _symm(*shape, dtype=np.float32):
    x = _f(*shape, dtype=np.float64) * 0.3
    n = shape[-1]
    return (x + np.swapaxes(x, -1, -2) + np.diag(np.arange(1.0, 1.0 + n) * 1.5)).astype(dtype)


def _tall(*shape, dtype=np.float32):
    """(.., m, n): a well-conditioned matrix with distinct singular values."""
    m, n = shape[-2:]
    base = np.zeros((m, n))
    k = min(m, n)
    base[np.arange(k), np.arange(k)] = np.arange(3.0, 3.0 + k)
    return (_f(*shape, dtype=np.float64) * 0.3 + base).astype(dtype)


def _w(x):
    return np.asarray(x, np.float64)


def _tri_sym(a, upper):
    a = _w(a)
    if upper:
        a = np.swapaxes(a, -1, -2)
    low = np.tril(a)
    return low + np.swapaxes(np.tril(a, -1), -1, -2)


def _close(a, b, tol, what):
    np.testing.assert_allclose(_w(a), _w(b), rtol=tol, atol=tol, err_msg=what)


def _tol(x):
    return 1e-3 if np.asarray(x).dtype == np.float32 else 1e-8


def _eye_like(x, n):
    return np.broadcast_to(np.eye(n), x.shape[:-2] + (n, n))


_BAD = [ErrorSample([_f(3, 4)], {}, ValueError, "square"),
        ErrorSample([_f(3)], {}, ValueError, "at least 2 dimensions"),
        ErrorSample([np.ones((3, 3), np.int64)], {}, TypeError, "float32 or float64")]


# -- inv / slogdet / solve ------------------------------------------------------------------

register_samples("linalg_inv", [
    Sample([_well(3, 3)], **_TOL32),
    Sample([_well(2, 4, 4, dtype=np.float64)], name="batched"),
], lambda a: np.linalg.inv(_w(a)), errors=_BAD)


def _slogdet_ref(a):
    sign, logabs = np.linalg.slogdet(_w(a))
    return sign, logabs


register_samples("linalg_slogdet", [
    Sample([_well(3, 3) * np.float32(-1.0)], name="negative determinant", **_TOL32),
    Sample([_well(2, 4, 4, dtype=np.float64)], name="batched"),
], _slogdet_ref, errors=_BAD)

_SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
register_samples("linalg_det", [
    Sample([_well(3, 3)], **_TOL32),
    Sample([_well(2, 4, 4, dtype=np.float64) * -1.0], name="batched"),
    # rank n - 1: det is 0 but its gradient (the cofactor matrix) is not
    Sample([_SINGULAR], name="singular", atol=1e-12),
], lambda a: np.linalg.det(_w(a)), errors=_BAD)

register_samples("linalg_solve", [
    Sample([_well(3, 3), _f(3, 2)], **_TOL32),
    Sample([_well(2, 4, 4, dtype=np.float64), _f(2, 4, 2, dtype=np.float64)], name="batched"),
], lambda a, b: np.linalg.solve(_w(a), _w(b)), errors=[
    ErrorSample([_f(3, 4), _f(3, 2)], {}, ValueError, "square"),
    ErrorSample([_well(3, 3), _f(4, 2)], {}, ValueError, "incompatible shapes"),
    ErrorSample([_well(3, 3), _f(3, 2, dtype=np.float64)], {}, TypeError, "same dtype"),
])


# -- factorizations --------------------------------------------------------------------------

def _cholesky_ref(a, upper=False):
    low = np.linalg.cholesky(_tri_sym(a, upper))
    return np.swapaxes(low, -1, -2) if upper else low


# a non-symmetric perturbation of the other triangle shows that only one triangle is read
_SPD_LOW = _spd(3, 3) + np.triu(_f(3, 3), 1)
register_samples("linalg_cholesky", [
    Sample([_SPD_LOW], name="reads the lower triangle", **_TOL32),
    Sample([_spd(2, 4, 4, dtype=np.float64)], {"upper": True}, name="batched, upper"),
], _cholesky_ref, errors=_BAD)


def _verify_qr(outs, a, mode="reduced"):
    q, r = (_w(o) for o in outs)
    a64 = _w(a)
    t = _tol(a)
    m, n = a.shape[-2:]
    k = m if mode == "complete" else min(m, n)
    assert q.shape == a.shape[:-2] + (m, k) and r.shape == a.shape[:-2] + (k, n)
    _close(q @ r, a64, t, "q @ r == a")
    _close(np.swapaxes(q, -1, -2) @ q, _eye_like(q, k), t, "q^T q == I")
    _close(np.tril(r, -1), np.zeros_like(r), t, "r upper triangular")
    # |diag r| is unique: NumPy's (LAPACK) factorization agrees on it
    _close(np.abs(np.diagonal(r, axis1=-2, axis2=-1)),
           np.abs(np.diagonal(np.linalg.qr(a64, mode=mode)[1], axis1=-2, axis2=-1)), t,
           "|diag r| as numpy.linalg.qr")


register_samples("linalg_qr", [
    Sample([_tall(4, 3)]),
    Sample([_tall(2, 3, 3, dtype=np.float64)], {"mode": "complete"}, name="batched, complete"),
    Sample([_tall(3, 5, dtype=np.float64)], name="wide"),
    # complete mode of a tall matrix has no gradient (as PyTorch): checked forward only
    Sample([_tall(4, 2, dtype=np.float64)], {"mode": "complete"}, grad=False,
           name="tall, complete"),
], verify=_verify_qr, errors=[
    ErrorSample([_f(3, 3)], {"mode": "r"}, ValueError, "mode"),
    ErrorSample([_f(3)], {}, ValueError, "at least 2 dimensions"),
])


def _verify_svd(outs, a, full_matrices=True):
    u, s, vh = (_w(o) for o in outs)
    a64 = _w(a)
    t = _tol(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    _close(s, np.linalg.svd(a64, compute_uv=False), t, "s as numpy.linalg.svd")
    uk, vk = u[..., :, :k], vh[..., :k, :]
    _close((uk * s[..., None, :]) @ vk, a64, t, "u diag(s) vh == a")
    _close(np.swapaxes(u, -1, -2) @ u, _eye_like(u, u.shape[-1]), t, "u orthonormal")
    _close(vh @ np.swapaxes(vh, -1, -2), _eye_like(vh, vh.shape[-2]), t, "vh orthonormal")


register_samples("linalg_svd", [
    Sample([_tall(4, 3)], {"full_matrices": False}),
    Sample([_tall(2, 3, 4, dtype=np.float64)], {"full_matrices": False}, name="batched, wide"),
    # the last m - n columns of u are any orthonormal completion: the rule leaves them out
    # (PyTorch refuses this backward), so finite differences through them would not agree
    Sample([_tall(4, 2, dtype=np.float64)], {"full_matrices": True}, grad=False,
           name="full, tall"),
], verify=_verify_svd, errors=[
    ErrorSample([_f(3)], {}, ValueError, "at least 2 dimensions"),
    ErrorSample([np.ones((2, 2), np.int32)], {}, TypeError, "float32 or float64"),
])


def _verify_eigh(outs, a, upper=False):
    w, v = (_w(o) for o in outs)
    sym = _tri_sym(a, upper)
    t = _tol(a)
    _close(w, np.linalg.eigvalsh(sym), t, "eigenvalues as numpy.linalg.eigvalsh")
    _close(sym @ v, v * w[..., None, :], t, "a v == v diag(w)")
    _close(np.swapaxes(v, -1, -2) @ v, _eye_like(v, v.shape[-1]), t, "v orthonormal")


register_samples("linalg_eigh", [
    Sample([_symm(3, 3) + np.triu(_f(3, 3), 1)], name="reads the lower triangle"),
    Sample([_symm(2, 4, 4, dtype=np.float64)], {"upper": True}, name="batched, upper"),
], verify=_verify_eigh, errors=_BAD)


# -- einsum / diag_embed ---------------------------------------------------------------------

def _einsum_ref(operands, equation):
    """An explicit loop over every letter's range (no np.einsum)."""
    terms, out = equation.split("->")[0].split(","), equation.split("->")[1]
    sizes = {}
    for t, x in zip(terms, operands):
        sizes.update(zip(t, x.shape))
    letters = sorted(sizes)
    res = np.zeros(tuple(sizes[c] for c in out), np.result_type(*operands, np.float64))
    for idx in itertools.product(*(range(sizes[c]) for c in letters)):
        env = dict(zip(letters, idx))
        p = 1.0
        for t, x in zip(terms, operands):
            p = p * _w(x)[tuple(env[c] for c in t)]
        res[tuple(env[c] for c in out)] += p
    return res


register_samples("einsum", [
    Sample([[_f(2, 3), _f(3, 4)]], {"equation": "ij,jk->ik"}, **_TOL32),
    Sample([[_f(2, 3, 3, dtype=np.float64)]], {"equation": "bii->bi"}, name="diagonal"),
    Sample([[_f(2, 3, dtype=np.float64), _f(2, 3, dtype=np.float64),
             _f(4, dtype=np.float64)]], {"equation": "bi,bi,k->bk"}, name="three operands"),
    Sample([[_f(2, 3, dtype=np.float64)]], {"equation": "ij->"}, name="full sum"),
], _einsum_ref, errors=[
    ErrorSample([[_f(2, 3), _f(4, 4)]], {"equation": "ij,jk->ik"}, ValueError, "subscript"),
    ErrorSample([[_f(2, 3)]], {"equation": "ij,jk->ik"}, ValueError, "operand"),
    ErrorSample([[_f(2, 3), _f(3, 2, dtype=np.float64)]], {"equation": "ij,jk->ik"}, TypeError,
                "same dtype"),
    ErrorSample([[_f(2, 3)]], {"equation": "ij->iz"}, ValueError, "output subscripts"),
])


def _diag_embed_ref(x, offset=0):
    n = x.shape[-1]
    m = n + abs(offset)
    out = np.zeros(x.shape[:-1] + (m, m), x.dtype)
    for i in range(n):
        r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
        out[..., r, c] = x[..., i]
    return out


register_samples("diag_embed", [
    Sample([_f(2, 3)], {"offset": 1}),
    Sample([_f(4, dtype=np.float64)], {"offset": -2}),
    Sample([np.arange(6, dtype=np.int64).reshape(2, 3)], {}),
], _diag_embed_ref, errors=[
    ErrorSample([np.float32(1.0)], {}, ValueError, "at least 1 dimension"),
])


# -- LU, triangular solves, matrix exponential, eig, pinv ------------------------------------
# References: scipy.linalg (LAPACK getrf, trtrs, expm), numpy.linalg.eig / pinv.

def _lu_factor_ref(a):
    import scipy.linalg as sl
    a = _w(a)
    flat = a.reshape((-1,) + a.shape[-2:])
    lus, pivs = [], []
    for m in flat:
        lu, piv = sl.lu_factor(m) if m.shape[0] == m.shape[1] else _lu_rect(m)
        lus.append(lu)
        pivs.append(np.asarray(piv, np.int32) + 1)
    k = min(a.shape[-2:])
    return (np.stack(lus).reshape(a.shape),
            np.stack(pivs).reshape(a.shape[:-2] + (k,)).astype(np.int32))


def _lu_rect(m):
    """getrf of a rectangular matrix from scipy's P L U (row swaps recovered from P)."""
    import scipy.linalg as sl
    p, low, up = sl.lu(m)
    rows, k = m.shape[0], min(m.shape)
    lu = np.zeros_like(m)
    lu[:, :k] = np.tril(low, -1)
    lu[:k, :] += np.triu(up)
    perm = list(np.argmax(p, axis=0))          # row i of P^T A is row perm[i] of A
    cur = list(range(rows))
    piv = []
    for i in range(k):
        j = cur.index(perm[i])
        piv.append(j)
        cur[i], cur[j] = cur[j], cur[i]
    return lu, np.asarray(piv)


register_samples("linalg_lu_factor", [
    Sample([_f(4, 4)], **_TOL32),
    Sample([_well(2, 3, 3, dtype=np.float64)], name="batched"),
    Sample([_tall(3, 5, dtype=np.float64)], name="wide"),
    Sample([_tall(5, 3, dtype=np.float64)], name="tall"),
], _lu_factor_ref, errors=[
    ErrorSample([_f(3)], {}, ValueError, "at least 2 dimensions"),
    ErrorSample([np.ones((3, 3), np.int64)], {}, TypeError, "float32 or float64"),
])


def _piv_ref(pivots, m):
    out = []
    for row in np.asarray(pivots).reshape(-1, pivots.shape[-1]):
        perm = list(range(m))
        for i, p in enumerate(row):
            perm[i], perm[p - 1] = perm[p - 1], perm[i]
        out.append(perm)
    return np.asarray(out, np.int32).reshape(pivots.shape[:-1] + (m,))


register_samples("lu_pivots_to_permutation", [
    Sample([np.array([3, 3, 3], np.int32)], {"m": 3}),
    Sample([np.array([[2, 2], [1, 3]], np.int32)], {"m": 4}, name="batched, tall"),
], _piv_ref, errors=[
    ErrorSample([np.array([1, 2], np.int64)], {"m": 2}, TypeError, "int32"),
])


def _trisolve_ref(a, b, upper, left=True, unitriangular=False):
    a, b = _w(a), _w(b)
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        eye = np.eye(a.shape[-1])
        t = t * (1 - eye) + eye
    if left:
        return np.linalg.solve(t, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


register_samples("linalg_solve_triangular", [
    Sample([_well(3, 3), _f(3, 2)], {"upper": True}, **_TOL32),
    Sample([_well(2, 3, 3, dtype=np.float64), _f(2, 3, 2, dtype=np.float64)],
           {"upper": False, "unitriangular": True}, name="batched, lower, unit"),
    Sample([_well(3, 3, dtype=np.float64), _f(2, 3, dtype=np.float64)],
           {"upper": True, "left": False}, name="right"),
], _trisolve_ref, errors=[
    ErrorSample([_f(3, 4), _f(3, 2)], {"upper": True}, ValueError, "square"),
    ErrorSample([_well(3, 3), _f(4, 2)], {"upper": True}, ValueError, "incompatible"),
    ErrorSample([_well(3, 3), _f(3, 2, dtype=np.float64)], {"upper": True}, TypeError,
                "same dtype"),
])


def _expm_ref(a):
    import scipy.linalg as sl
    a = _w(a)
    flat = a.reshape((-1,) + a.shape[-2:])
    return np.stack([sl.expm(m) for m in flat]).reshape(a.shape)


register_samples("linalg_matrix_exp", [
    Sample([_f(3, 3)], **_TOL32),
    Sample([_f(2, 3, 3, dtype=np.float64)], name="batched"),
], _expm_ref, errors=_BAD)


def _verify_eig(outs, a):
    w, v = (np.asarray(o) for o in outs)
    a64 = _w(a)
    t = _tol(a)
    assert w.dtype.kind == "c" and v.dtype.kind == "c"
    ref = np.linalg.eigvals(a64)
    _close(np.sort_complex(np.round(w, 6)).real, np.sort_complex(np.round(ref, 6)).real, t,
           "eigenvalues as numpy.linalg.eigvals")
    np.testing.assert_allclose(a64 @ v, v * w[..., None, :], rtol=t, atol=t,
                               err_msg="a v == v diag(w)")
    np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1.0, rtol=t, atol=t,
                               err_msg="unit eigenvectors")


# eigenvectors are defined up to a complex phase; with real distinct eigenvalues they stay
# real (unit norm, LAPACK's sign) under small real perturbations, so finite differences are
# meaningful there. Complex pairs: the gradient (PyTorch's formula) is checked against PyTorch
# in tests/test_linalg_more_parity.py on phase-invariant functions.
register_samples("linalg_eig", [
    Sample([_well(3, 3)], rtol=1e-4, atol=1e-4),
    Sample([_well(3, 3, dtype=np.float64)], name="real eigenvalues"),
    Sample([_f(2, 4, 4, dtype=np.float64)], grad=False, name="batched, complex pairs"),
], verify=_verify_eig, errors=_BAD)


def _pinv_ref(a, tol, hermitian=False):
    a = _w(a)
    if hermitian:
        a = _tri_sym(a, False)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    keep = s > _w(tol)[..., None]
    sinv = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
    return np.swapaxes(vh, -1, -2) @ (sinv[..., :, None] * np.swapaxes(u, -1, -2))


_REP = (lambda q1, q2: q1 @ np.diag([1.0, 1.0, 2.0]) @ q2.T)(
    np.linalg.qr(_f(3, 3, dtype=np.float64))[0], np.linalg.qr(_f(3, 3, dtype=np.float64))[0])
register_samples("linalg_pinv", [
    Sample([_tall(4, 3), np.float32(1e-5)], **_TOL32),
    Sample([_tall(2, 3, 5, dtype=np.float64), np.array([1e-10, 0.5])], name="batched, wide"),
    # repeated singular values: pinv's gradient is defined (the SVD's is not)
    Sample([_REP, np.float64(1e-10)], name="repeated singular values"),
    # PyTorch's pinv_backward differentiates as if the whole input were read (also with
    # hermitian=True, where the value reads the lower triangle): the gradient is PyTorch's,
    # checked against it in tests/test_linalg_more_parity.py, not finite differences here
    Sample([_symm(3, 3, dtype=np.float64) + np.triu(_f(3, 3, dtype=np.float64), 1),
            np.float64(1e-10)], {"hermitian": True}, grad=False,
           name="hermitian reads the lower triangle"),
], _pinv_ref, errors=[
    ErrorSample([_f(3), np.float32(0)], {}, ValueError, "at least 2 dimensions"),
    ErrorSample([_f(3, 3), np.zeros(2, np.float32)], {}, ValueError, "tolerance"),
])


# -- LDL (host LAPACK kernels, NoGrad) --------------------------------------------------------
# Independent checks: LD is lower triangular, and solving with (LD, pivots) gives what
# numpy.linalg.solve gives on the symmetric matrix read from the lower triangle.

def _verify_ldl(outs, a, hermitian=False):
    ld, piv, info = (np.asarray(o) for o in outs)
    sym = _tri_sym(a, False)
    t = _tol(a)
    assert piv.dtype == np.int32 and info.dtype == np.int32 and (info == 0).all()
    _close(np.triu(ld, 1), np.zeros_like(ld), t, "LD lower triangular")
    # a 1x1 pivot with no interchange at the first step: D[0, 0] = A[0, 0]
    if piv.reshape(-1, piv.shape[-1])[0, 0] == 1:
        _close(ld.reshape(-1, *ld.shape[-2:])[0, 0, 0], sym.reshape(-1, *sym.shape[-2:])[0, 0, 0],
               t, "D[0, 0]")


register_samples("linalg_ldl_factor", [
    Sample([_symm(3, 3)]),
    Sample([_symm(2, 4, 4, dtype=np.float64) - 3.0 * np.eye(4)], name="batched, indefinite"),
], verify=_verify_ldl, errors=[
    ErrorSample([_f(3, 4)], {}, ValueError, "square"),
    ErrorSample([np.ones((3, 3), np.int64)], {}, TypeError, "float32 or float64"),
])


def _ldl_solve_ref(ld, pivots, b, hermitian=False):
    return np.linalg.solve(_LDL_A, _w(b))


def _ldl_parts(a):
    from scipy.linalg import lapack
    ld, piv, _ = lapack.dsytrf(a, lower=1)
    return np.tril(ld), np.asarray(piv, np.int32)


_LDL_A = _symm(4, 4, dtype=np.float64) - 3.0 * np.eye(4)
_LDL_LD, _LDL_PIV = _ldl_parts(_LDL_A)
register_samples("linalg_ldl_solve", [
    Sample([_LDL_LD, _LDL_PIV, _f(4, 2, dtype=np.float64)], vmap=False),
], _ldl_solve_ref, errors=[
    ErrorSample([_LDL_LD, _LDL_PIV.astype(np.int64), _f(4, 2, dtype=np.float64)], {}, TypeError,
                "int32"),
    ErrorSample([_LDL_LD, _LDL_PIV, _f(3, 2, dtype=np.float64)], {}, ValueError, "incompatible"),
])


# -- geqrf (registered last: its draws leave the other samples' inputs as they were) -----

def _geqrf_ref(a):
    """LAPACK geqr2's column loop in NumPy (xLARFG's reflector: beta = -sign(Re alpha) *
    ||(alpha, x)||, tau = (beta - alpha) / beta, v = x / (alpha - beta); none, tau = 0,
    when x is zero and alpha real), float64 / complex128, one matrix at a time."""
    a = np.array(a, np.complex128 if np.iscomplexobj(a) else np.float64)
    k = min(a.shape[-2:])
    tau = np.zeros(a.shape[:-2] + (k,), a.dtype)
    for idx in np.ndindex(*a.shape[:-2]):
        r, t = a[idx], tau[idx]
        for j in range(k):
            alpha, x = r[j, j], r[j + 1:, j]
            xnorm = np.linalg.norm(x)
            if xnorm == 0 and np.imag(alpha) == 0:
                continue
            beta = -np.copysign(np.hypot(abs(alpha), xnorm), np.real(alpha))
            t[j] = (beta - alpha) / beta
            r[j + 1:, j] = x / (alpha - beta)
            r[j, j] = beta
            w = np.concatenate([[1.0], r[j + 1:, j]])   # H_j^H applied to the rest
            r[j:, j + 1:] -= np.conj(t[j]) * np.outer(w, np.conj(w) @ r[j:, j + 1:])
    return a, tau


_C64 = (_f(4, 3) + 1j * _f(4, 3)).astype(np.complex64)
register_samples("geqrf", [
    Sample([_tall(5, 3)], **_TOL32),
    Sample([_tall(2, 3, 5, dtype=np.float64)], name="batched, wide"),
    Sample([np.triu(_f(3, 3, dtype=np.float64)) + np.eye(3)], name="triangular: tau == 0"),
    Sample([_C64], name="complex", **_TOL32),
], _geqrf_ref, errors=[
    ErrorSample([_f(3)], {}, ValueError, "at least 2 dimensions"),
    ErrorSample([np.ones((3, 3), np.int64)], {}, TypeError, "float32, float64, complex64"),
], grad_error=ErrorSample([_tall(4, 3, dtype=np.float64)], {}, NotImplementedError,
                          "the derivative for 'geqrf' is not implemented"))
