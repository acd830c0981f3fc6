"""Backward rules of the linear algebra ops (``jflow/ops/linalg.py``), written with jflow ops
so that higher derivatives, ``jax.grad`` and compiled steps use the same code.

Real-valued formulas (Giles 2008; Murray 2016 for Cholesky; PyTorch's ``FunctionsManual``
for QR and SVD). The factorizations of symmetric inputs (cholesky, eigh) read one triangle,
so their gradient ``S`` (symmetric) lands on that triangle: ``2 tril(S) - diag(S)``.
"""

from __future__ import annotations

import string

from ...ops.linalg import parse_explicit
from ..rule import register_backward
from ._util import O


def _nd(x) -> int:
    return x._meta.ndim


def _mT(x):
    nd = _nd(x)
    return O.transpose(x, perm=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def _mm(a, b, ta: bool = False, tb: bool = False):
    """op(a) @ op(b) for matrices or equal-batch stacks of them."""
    if _nd(a) == 2 and _nd(b) == 2:
        return O.matmul(a, b, transpose_a=ta, transpose_b=tb)
    return O.batch_matmul(a, b, transpose_a=ta, transpose_b=tb)


def _scalar(v: float, like):
    return O.full(shape=(), value=v, dtype=like._meta.dtype)


def _ones(shape: tuple[int, ...], like):
    return O.full(shape=shape, value=1.0, dtype=like._meta.dtype)


def _eye(n: int, like):
    return O.eye(n=n, m=n, dtype=like._meta.dtype)


def _diag(x):
    """The main diagonal of the last two dims (``...ii->...i``)."""
    b = string.ascii_letters[:_nd(x) - 2]
    return O.einsum([x], equation=f"{b}yy->{b}y")


def _col(v):
    """(..., n) -> (..., 1, n): scales the columns of a matrix when multiplied."""
    s = tuple(v._meta.shape)
    return O.reshape(v, shape=s[:-1] + (1, s[-1]))


def _row(v):
    """(..., n) -> (..., n, 1): scales the rows."""
    s = tuple(v._meta.shape)
    return O.reshape(v, shape=s + (1,))


def _sym(g):
    return O.mul(O.add(g, _mT(g)), _scalar(0.5, g))


def _to_triangle(s, upper: bool):
    """The gradient of ``A -> symmetric matrix built from A's triangle`` applied to the
    symmetric ``s``: off-diagonal entries of that triangle count twice."""
    tri = O.triu(s) if upper else O.tril(s)
    return O.sub(O.mul(tri, _scalar(2.0, s)), O.diag_embed(_diag(s)))


# -- einsum -----------------------------------------------------------------------------------

@register_backward("einsum", save=["operands"])
def _einsum(ctx, dy):
    """d operand k = einsum(dy, the other operands -> operand k's subscripts); a letter
    repeated in operand k (a diagonal) gets a fresh letter tied to it by an identity matrix,
    and a letter that only operand k has (summed out) is broadcast by a ones vector."""
    (ops,) = ctx.saved_tensors
    terms, out = parse_explicit(ctx.equation)
    fresh = [c for c in string.ascii_letters if c not in ctx.equation]
    grads = []
    for k, t in enumerate(terms):
        if not ctx.needs_input_grad[k]:
            grads.append(None)
            continue
        shape = ctx.input_shapes[k]
        ins = [(out, dy)] + [(terms[i], ops[i]) for i in range(len(terms)) if i != k]
        used = set("".join(s for s, _ in ins))
        target, seen, extra, fi = "", {}, [], 0
        for c, n in zip(t, shape):
            if c in seen:
                f = fresh[fi]
                fi += 1
                target += f
                extra.append((c + f, _eye(n, dy)))
            else:
                seen[c] = n
                target += c
        extra += [(c, O.full(shape=(n,), value=1.0, dtype=dy._meta.dtype))
                  for c, n in seen.items() if c not in used]
        allin = ins + extra
        eq = ",".join(s for s, _ in allin) + "->" + target
        grads.append(O.einsum([x for _, x in allin], equation=eq))
    return grads


@register_backward("diag_embed")
def _diag_embed(ctx, dy):
    n = ctx.input_shapes[0][-1]
    o = ctx.offset
    nd = _nd(dy)
    r0, c0 = (0, o) if o >= 0 else (-o, 0)
    block = O.narrow(O.narrow(dy, dim=nd - 2, start=r0, length=n), dim=nd - 1, start=c0,
                     length=n)
    return _diag(block)


# -- inv / slogdet / solve --------------------------------------------------------------------

@register_backward("linalg_inv", save=["out"])
def _inv(ctx, dy):
    (y,) = ctx.saved_tensors          # dA = -Y^T dY Y^T
    return O.neg(_mm(_mm(y, dy, ta=True), y, tb=True))


@register_backward("linalg_slogdet", save=["a"])
def _slogdet(ctx, dsign, dlogabs):
    (a,) = ctx.saved_tensors          # d log|det A| = A^{-T}
    s = tuple(dlogabs._meta.shape)
    return O.mul(O.reshape(dlogabs, shape=s + (1, 1)), _mT(O.linalg_inv(a)))


@register_backward("linalg_det", save=["a"])
def _det(ctx, dy):
    """d det(A) = cof(A), the cofactor matrix, from the SVD A = U S V^T:
    cof(A) = det(U) det(V) U diag(prod_{j != i} s_j) V^T, defined for singular A as well
    (where det(A) A^{-T} is not), as PyTorch's."""
    (a,) = ctx.saved_tensors
    u, s, vh = O.linalg_svd(a, full_matrices=False)
    n = ctx.input_shapes[0][-1]
    eye = _eye(n, s)
    others = O.reduce_prod(O.add(O.mul(_col(s), O.sub(_ones((n, n), s), eye)), eye),
                           axis=(_nd(s),), keepdim=False)       # prod_{j != i} s_j
    sign = O.mul(O.linalg_slogdet(u)[0], O.linalg_slogdet(vh)[0])
    scale = O.mul(others, _row(O.mul(sign, dy)) if _nd(dy) else O.mul(sign, dy))
    return _mm(O.mul(u, _col(scale)), vh)


@register_backward("linalg_solve", save=["a", "x"])
def _solve(ctx, dx):
    a, x = ctx.saved_tensors          # dB = A^{-T} dX, dA = -dB X^T
    db = O.linalg_solve(_mT(a), dx)
    da = O.neg(_mm(db, x, tb=True)) if ctx.needs_input_grad[0] else None
    return da, db if ctx.needs_input_grad[1] else None


# -- factorizations ----------------------------------------------------------------------------

@register_backward("linalg_cholesky", save=["out"])
def _cholesky(ctx, dy):
    (f,) = ctx.saved_tensors
    low, dlow = (_mT(f), _mT(dy)) if ctx.upper else (f, dy)
    p = _mm(low, dlow, ta=True)       # Phi(L^T dL): lower triangle, halved diagonal
    phi = O.sub(O.tril(p), O.mul(O.diag_embed(_diag(p)), _scalar(0.5, p)))
    linv = O.linalg_inv(low)
    g = _mm(_mm(linv, phi, ta=True), linv)    # L^{-T} Phi L^{-1}
    return _to_triangle(_sym(g), ctx.upper)


@register_backward("linalg_eigh", save=["eigenvalues", "eigenvectors"])
def _eigh(ctx, dw, dv):
    w, v = ctx.saved_tensors
    n = ctx.input_shapes[0][-1]
    eye = _eye(n, w)
    gap = O.add(O.sub(_col(w), _row(w)), eye)                    # w_j - w_i, 1 on the diagonal
    f = O.div(O.sub(_ones((n, n), w), eye), gap)
    inner = O.add(O.diag_embed(dw), O.mul(f, _mm(v, dv, ta=True)))
    g = _mm(_mm(v, inner), v, tb=True)
    return _to_triangle(_sym(g), ctx.upper)


def _qr_square_grad(q, r, dq, dr):
    """A = QR with R square (m >= n): M = R dR^T - dQ^T Q;  dA = (dQ + Q copyltu(M)) R^{-T}."""
    mm_ = O.sub(_mm(r, dr, tb=True), _mm(dq, q, ta=True))
    copyltu = O.add(O.tril(mm_), _mT(O.tril(mm_, diagonal=-1)))
    return _mm(O.add(dq, _mm(q, copyltu)), O.linalg_inv(r), tb=True)


@register_backward("linalg_qr", save=["a", "q", "r"])
def _qr(ctx, dq, dr):
    """m >= n: the square-R formula. m < n (reduced): A = [X | Y] with X = Q U square and
    Y = Q V, so dY = Q dV and X gets the square formula with dQ + Y dV^T (PyTorch's)."""
    a, q, r = ctx.saved_tensors
    m, n = ctx.input_shapes[0][-2:]
    if ctx.mode == "complete" and m > n:
        raise NotImplementedError(
            f"linalg.qr: the backward of mode='complete' is not defined for a tall input "
            f"({m}x{n}): the last {m - n} columns of Q are not determined by it (as PyTorch)")
    if m >= n:
        return _qr_square_grad(q, r, dq, dr)
    nd = _nd(r)
    cut = lambda t, start, length: O.narrow(t, dim=nd - 1, start=start, length=length)  # noqa: E731
    u, du, dv = cut(r, 0, m), cut(dr, 0, m), cut(dr, m, n - m)
    y = cut(a, m, n - m)
    dx = _qr_square_grad(q, u, O.add(dq, _mm(y, dv, tb=True)), du)
    return O.cat([dx, _mm(q, dv)], dim=nd - 1)


@register_backward("linalg_svd", save=["u", "s", "vh"])
def _svd(ctx, du, ds, dvh):
    """PyTorch's svd_backward (real case). With ``full_matrices`` and a non-square input only
    the first min(m, n) singular vectors are defined by the input: the others (and their
    gradients) are left out, where PyTorch refuses the backward."""
    u, s, vh = ctx.saved_tensors
    m, n = ctx.input_shapes[0][-2:]
    k = min(m, n)
    if ctx.full_matrices and m != n:
        nd = _nd(u)
        u, du = (O.narrow(t, dim=nd - 1, start=0, length=k) for t in (u, du))
        vh, dvh = (O.narrow(t, dim=nd - 2, start=0, length=k) for t in (vh, dvh))
    s2 = O.mul(s, s)
    e = O.add(O.sub(_col(s2), _row(s2)), _eye(k, s))            # s_j^2 - s_i^2, 1 on diagonal
    uhgu = _mm(u, du, ta=True)
    vhgv = _mm(vh, dvh, tb=True)                                  # V^T dV with V = vh^T
    skew_u, skew_v = O.sub(uhgu, _mT(uhgu)), O.sub(vhgv, _mT(vhgv))
    inner = O.div(O.add(O.mul(skew_u, _col(s)), O.mul(_row(s), skew_v)), e)
    ga = _mm(_mm(u, O.add(inner, O.diag_embed(ds))), vh)
    if m > k:    # (I - U U^T) dU S^{-1} V^T
        x = O.div(O.sub(du, _mm(u, uhgu)), _col(s))
        ga = O.add(ga, _mm(x, vh))
    if n > k:    # U S^{-1} dV^T (I - V V^T)
        x = O.div(O.sub(_mT(dvh), _mm(vh, vhgv, ta=True)), _col(s))
        ga = O.add(ga, _mm(u, x, tb=True))
    return ga
