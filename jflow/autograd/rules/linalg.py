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


@register_backward("geqrf")
def _geqrf(ctx, da, dtau):
    """No derivative, as PyTorch's (derivatives.yaml: not_implemented): the outputs of a
    call on a tensor requiring grad require grad, and a gradient reaching them raises
    PyTorch's error. The op's samples declare it (``grad_error``), the checker checks it."""
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


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
    num = O.add(O.mul(skew_u, _col(s)), O.mul(_row(s), skew_v))
    # exactly equal singular values (e == 0) with no gradient on the vectors (num == 0: a
    # norm or svdvals) give 0, not 0/0
    zero_e = O.eq(e, _scalar(0.0, e))
    inner = O.where(zero_e, O.mul(num, _scalar(0.0, num)),
                    O.div(num, O.where(zero_e, _ones((k, k), e), e)))
    ga = _mm(_mm(u, O.add(inner, O.diag_embed(ds))), vh)
    if m > k:    # (I - U U^T) dU S^{-1} V^T
        x = O.div(O.sub(du, _mm(u, uhgu)), _col(s))
        ga = O.add(ga, _mm(x, vh))
    if n > k:    # U S^{-1} dV^T (I - V V^T)
        x = O.div(O.sub(_mT(dvh), _mm(vh, vhgv, ta=True)), _col(s))
        ga = O.add(ga, _mm(u, x, tb=True))
    return ga


# -- LU, triangular solves, matrix exponential, eig, pinv ---------------------------------------

def _narrow(x, dim: int, start: int, length: int):
    return O.narrow(x, dim=_nd(x) + dim if dim < 0 else dim, start=start, length=length)


def _trisolve(a, b, upper: bool, left: bool = True, unit: bool = False):
    return O.linalg_solve_triangular(a, b, upper=upper, left=left, unitriangular=unit)


def _perm_matmul(perm, g, m: int):
    """P @ g for the permutation matrix P[j, i] = (j == perm[i]) (A = P L U)."""
    onehot = O.one_hot(perm, num_classes=m, dtype=g._meta.dtype)       # P^T
    return _mm(onehot, g, ta=True)


def lu_backward(l_grad, u_grad, perm, low, up, m: int, n: int):
    """The gradient of A = P L U (L (m, k) unit lower, U (k, n) upper): PyTorch's
    linalg_lu_backward for square and wide (m < n) inputs; for tall ones (m > n) derived from
    A1 = L1 U, A2 = L2 U (only the strictly lower part of L's gradient counts, so the packed
    gradient of lu_factor can be passed as is)."""
    k = min(m, n)
    if m == n:
        g = O.add(O.tril(_mm(low, l_grad, ta=True), diagonal=-1),
                  O.triu(_mm(u_grad, up, tb=True)))
        g = _trisolve(_mT(up), g, upper=False, left=False)
        g = _trisolve(_mT(low), g, upper=True, left=True, unit=True)
    elif m < n:
        u1, u1_grad = _narrow(up, -1, 0, k), _narrow(u_grad, -1, 0, k)
        g = O.sub(_mm(low, l_grad, ta=True), _mm(O.triu(u_grad), up, tb=True))
        g = _trisolve(_mT(u1), O.tril(g, diagonal=-1), upper=False, left=False)
        g = O.cat([O.add(g, O.triu(u1_grad)), _narrow(u_grad, -1, k, n - k)], dim=_nd(g) - 1)
        g = _trisolve(_mT(low), g, upper=True, left=True, unit=True)
    else:
        # A1 = L1 U, A2 = L2 U: gA1 = L1^{-T} (tril_(L1^T gL1) + triu(gU U^T - L2^T gL2))
        # U^{-T}, gA2 = gL2 U^{-T} (only the strictly lower part of gL1 counts)
        l1, l1_grad = _narrow(low, -2, 0, k), _narrow(l_grad, -2, 0, k)
        l2, l2_grad = _narrow(low, -2, k, m - k), _narrow(l_grad, -2, k, m - k)
        g = O.add(O.tril(_mm(l1, l1_grad, ta=True), diagonal=-1),
                  O.triu(O.sub(_mm(u_grad, up, tb=True), _mm(l2, l2_grad, ta=True))))
        g = _trisolve(_mT(l1), g, upper=True, left=True, unit=True)
        g = O.cat([g, l2_grad], dim=_nd(g) - 2)
        g = _trisolve(_mT(up), g, upper=False, left=False)
    return _perm_matmul(perm, g, m)


def unpack_lu(lu, m: int, n: int):
    """(L, U) of a packed LU: L (m, k) unit lower, U (k, n) upper."""
    k = min(m, n)
    low = O.add(O.tril(_narrow(lu, -1, 0, k), diagonal=-1),
                O.eye(n=m, m=k, dtype=lu._meta.dtype))
    return low, O.triu(_narrow(lu, -2, 0, k))


@register_backward("linalg_lu_factor", save=["LU", "pivots"])
def _lu_factor(ctx, dlu, dpiv):
    """PyTorch's lu_factor_ex_backward: the packed gradient's first k columns are L's, its
    first k rows U's."""
    lu, piv = ctx.saved_tensors
    m, n = ctx.input_shapes[0][-2:]
    k = min(m, n)
    low, up = unpack_lu(lu, m, n)
    perm = O.lu_pivots_to_permutation(piv, m=m)
    return lu_backward(_narrow(dlu, -1, 0, k), _narrow(dlu, -2, 0, k), perm, low, up, m, n)


@register_backward("linalg_solve_triangular", save=["a", "x"])
def _solve_triangular(ctx, dx):
    """left: X = A^{-1} B, dB = A^{-T} dX, dA = -dB X^T; right: X = B A^{-1}, dB = dX A^{-T},
    dA = -X^T dB; dA kept on the triangle read (without the diagonal when unitriangular)."""
    a, x = ctx.saved_tensors
    up, left, unit = ctx.upper, ctx.left, ctx.unitriangular
    db = _trisolve(_mT(a), dx, upper=not up, left=left, unit=unit)
    da = None
    if ctx.needs_input_grad[0]:
        full = O.neg(_mm(db, x, tb=True) if left else _mm(x, db, ta=True))
        off = 1 if unit else 0
        da = O.triu(full, diagonal=off) if up else O.tril(full, diagonal=-off)
    return da, db if ctx.needs_input_grad[1] else None


@register_backward("linalg_matrix_exp", save=["a"])
def _matrix_exp(ctx, dy):
    """dA = the top-right block of exp([[A^T, dY], [0, A^T]]) (PyTorch's, Najfeld-Havel)."""
    (a,) = ctx.saved_tensors
    n = ctx.input_shapes[0][-1]
    nd = _nd(a)
    at = _mT(a)
    zero = O.mul(at, _scalar(0.0, at))
    big = O.cat([O.cat([at, dy], dim=nd - 1), O.cat([zero, at], dim=nd - 1)], dim=nd - 2)
    return _narrow(_narrow(O.linalg_matrix_exp(big), -2, 0, n), -1, n, n)


def _cplx(x):
    return O.complex(x, O.mul(x, _scalar(0.0, x)))


@register_backward("linalg_eig", save=["eigenvalues", "eigenvectors"])
def _eig(ctx, dl, dv):
    """PyTorch's linalg_eig_backward (non-Hermitian case), in PyTorch's gradient convention
    (the incoming JAX-convention gradients conjugated, the result conjugated back):
    gA = V^{-H} (diag(gL) + (V^H gV - V^H V diag(re diag(V^H gV))) / E) V^H with
    E_ij = conj(L_j) - conj(L_i); the real part for a real input."""
    w, v = ctx.saved_tensors
    n = ctx.input_shapes[0][-1]
    gl, gv = O.conj(dl), O.conj(dv)
    vh = O.conj(_mT(v))
    vhgv = _mm(vh, gv)
    re_diag = O.real(_diag(vhgv))
    eye_r = O.eye(n=n, m=n, dtype=re_diag._meta.dtype)
    eye = _cplx(eye_r)
    lc = O.conj(w)
    e = O.add(O.sub(_col(lc), _row(lc)), eye)
    inner = O.sub(vhgv, _mm(vh, O.mul(v, _col(_cplx(re_diag)))))
    off = O.mul(O.div(inner, e), _cplx(O.sub(_ones((n, n), eye_r), eye_r)))
    ret = O.add(off, O.diag_embed(gl))
    ga = O.linalg_solve(vh, _mm(ret, vh))
    if ctx.input_dtypes[0].kind == "c":
        return O.conj(ga)
    return O.real(ga)


@register_backward("linalg_pinv", save=["a", "out"])
def _pinv(ctx, dy):
    """PyTorch's pinv_backward (the Golub-Pereyra derivative of A^+, defined wherever the rank
    is locally constant, repeated singular values included), with the input A itself (for
    ``hermitian`` too, as PyTorch)."""
    a, x = ctx.saved_tensors
    m, n = ctx.input_shapes[0][-2:]
    gt = _mT(dy)                                                  # (m, n)
    if m <= n:
        k = _mm(gt, x)                                            # (m, m)
        kxt = _mm(k, x, tb=True)                                  # (m, n)
        ga = O.add(O.sub(kxt, _mT(_mm(x, k))),
                   O.sub(_mm(_mm(x, x, ta=True), O.sub(gt, _mm(k, a))),
                         _mm(_mm(a, x), kxt)))
    else:
        k = _mm(x, gt)                                            # (n, n)
        xtk = _mm(x, k, ta=True)                                  # (m, n)
        ga = O.add(O.sub(xtk, _mT(_mm(k, x))),
                   O.sub(_mm(_mm(O.sub(gt, _mm(a, k)), x), x, tb=True),
                         _mm(_mm(xtk, x), a)))
    return ga, None
