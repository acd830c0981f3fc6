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
    Sample([_well(2, 4, 4, dtype=np.float64), _f(2, 4, 3, dtype=np.float64)], name="batched"),
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
