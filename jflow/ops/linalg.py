"""Linear algebra ops — definition, xla kernel and SBP signatures side by side.

=====================  =========================================  ==============================
op                     operands                                    results
=====================  =========================================  ==============================
``einsum``             operands (variadic); ``equation`` (explicit  the contraction
                       ``"ab,bc->ac"``, letters only: the functor
                       expands ``...`` and implicit outputs)
``diag_embed``         x (..., n); ``offset``                       (..., n+|o|, n+|o|)
``linalg_inv``         a (..., n, n)                               inverse
``linalg_det``         a (..., n, n)                               det (...)
``linalg_slogdet``     a (..., n, n)                               sign, logabsdet (...)
``linalg_solve``       a (..., n, n), b (..., n, k) (same batch)   x with a @ x = b
``linalg_cholesky``    a (..., n, n); ``upper``                    L (or U = L^T)
``linalg_qr``          a (..., m, n); ``mode`` reduced/complete    q, r
``geqrf``              input (..., m, n), real or complex          a (R on and above the
                                                                   diagonal, reflectors
                                                                   below), tau (..., min(m, n))
``linalg_svd``         a (..., m, n); ``full_matrices``            u, s, vh
``linalg_eigh``        a (..., n, n); ``upper`` (UPLO == "U")      eigenvalues (ascending), vectors
=====================  =========================================  ==============================

The factorizations read one triangle of a symmetric input as PyTorch does (cholesky the lower,
eigh the ``UPLO`` one): the kernel builds the symmetric matrix from that triangle, so the
backward rules send the gradient to that triangle only. They take float32/float64 only
(PyTorch's CPU kernels refuse half precision and integers; ``geqrf`` takes complex too, as
PyTorch's). Batch dims lead and are the same for every operand (the functors broadcast them),
so each batch axis split is one signature.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, P, S, Signature
from . import cost
from .infer import desc
from .precision import float32_products
from .primitive import define_op
from .registry import Attr, Input

_HIGHEST = lax.Precision.HIGHEST
_LINALG_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in x.shape)


def _check_float(fname: str, arg: str, x: Any) -> None:
    if np.dtype(x.dtype) not in _LINALG_DTYPES:
        raise TypeError(f"{fname}: argument '{arg}' must be float32 or float64, got "
                        f"{np.dtype(x.dtype).name}")


def check_matrix_shape(fname: str, arg: str, s: tuple[int, ...], square: bool) -> None:
    """PyTorch's check of a linalg operand's shape, and its wording: at least 2-D, and square
    matrices when ``square``. The one copy: the functors that call these ops use it too."""
    if len(s) < 2:
        raise ValueError(f"{fname}: argument '{arg}' must have at least 2 dimensions, got "
                         f"shape {s}")
    if square and s[-1] != s[-2]:
        raise ValueError(f"{fname}: argument '{arg}' must be batches of square matrices, but "
                         f"they are {s[-2]} by {s[-1]} matrices")


def _check_matrix(fname: str, arg: str, x: Any, square: bool,
                  complex_ok: bool = False) -> tuple[int, ...]:
    if not (complex_ok and np.dtype(x.dtype) in (np.complex64, np.complex128)):
        _check_float(fname, arg, x)
    s = _shape(x)
    check_matrix_shape(fname, arg, s, square)
    return s


def _batch_sbp(n_in: int, n_out: int, core: int = 2):
    """Each batch axis (all but the last ``core`` dims of the first input) split in every
    operand splits every result on the same axis (batch dims lead everywhere)."""
    def sbp(in_shapes: Any, n_out_: int = n_out, **_: Any) -> list[Signature]:
        nb = len(in_shapes[0]) - core
        return [Signature((S(j),) * n_in, (S(j),) * n_out) for j in range(nb)]
    return sbp


def _sym_from_triangle(a: Any, upper: bool) -> Any:
    """The symmetric matrix whose ``upper``/lower triangle is that of ``a`` (PyTorch reads one
    triangle of a symmetric input)."""
    if upper:
        a = jnp.swapaxes(a, -1, -2)
    low = jnp.tril(a)
    return low + jnp.swapaxes(jnp.tril(a, -1), -1, -2)


def _linalg_op(name: str, inputs: list, outputs: list, infer: Any, kernel: Any,
               attrs: tuple = (), n_in: int = 1, doc: str = "") -> None:
    """Declare one batched linalg op and its xla kernel (the shared shape of all of them)."""
    define_op(name, inputs=inputs, outputs=outputs, attrs=list(attrs), infer=infer,
              sbp=_batch_sbp(n_in, len(outputs)), doc=doc)
    register_kernel(name, kernel, name=f"{name}_xla")


# -- inv / slogdet / solve --------------------------------------------------------------------

def _inv_infer(a: Any) -> Any:
    s = _check_matrix("linalg.inv", "A", a, square=True)
    return desc(s, a.dtype)


_linalg_op("linalg_inv", ["a"], ["out"], _inv_infer, lambda a: jnp.linalg.inv(a),
           doc="the inverse of each square matrix")


def _slogdet_infer(a: Any) -> Any:
    s = _check_matrix("linalg.slogdet", "A", a, square=True)
    return desc(s[:-2], a.dtype), desc(s[:-2], a.dtype)


def _slogdet_kernel(a: Any) -> Any:
    sign, logabs = jnp.linalg.slogdet(a)
    return sign.astype(a.dtype), logabs.astype(a.dtype)


_linalg_op("linalg_slogdet", ["a"], ["sign", "logabsdet"], _slogdet_infer, _slogdet_kernel,
           doc="sign and log|det| of each square matrix")


def _det_infer(a: Any) -> Any:
    s = _check_matrix("linalg.det", "A", a, square=True)
    return desc(s[:-2], a.dtype)


_linalg_op("linalg_det", ["a"], ["out"], _det_infer, lambda a: jnp.linalg.det(a),
           doc="the determinant of each square matrix (its own op: the gradient, the "
               "cofactor matrix, is defined at singular inputs too)")


def _solve_infer(a: Any, b: Any) -> Any:
    # complex too: the eig rule solves with complex eigenvectors
    sa = _check_matrix("linalg.solve", "A", a, square=True, complex_ok=True)
    sb = _check_matrix("linalg.solve", "B", b, square=False, complex_ok=True)
    if np.dtype(a.dtype) != np.dtype(b.dtype):
        raise TypeError(f"linalg.solve: A and B must have the same dtype, got "
                        f"{np.dtype(a.dtype).name} and {np.dtype(b.dtype).name}")
    if sb[:-2] != sa[:-2] or sb[-2] != sa[-1]:
        raise ValueError(f"linalg.solve: incompatible shapes of A {sa} and B {sb} (B must be "
                         f"(..., {sa[-1]}, k) with A's batch dims)")
    return desc(sb, a.dtype)


def _solve_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Batch axes split alike; x is linear in b, column by column: b's columns split x's,
    and a partial b gives a partial x."""
    nd = len(in_shapes[1])
    return _batch_sbp(2, 1)(in_shapes) + [Signature((B, S(nd - 1)), (S(nd - 1),)),
                                          Signature((B, P), (P,))]


define_op("linalg_solve", inputs=["a", "b"], outputs=["x"], infer=_solve_infer, sbp=_solve_sbp,
          doc="x with a @ x = b")
register_kernel("linalg_solve", lambda a, b: jnp.linalg.solve(a, b), name="linalg_solve_xla")


# -- factorizations ----------------------------------------------------------------------------

def _cholesky_infer(a: Any, upper: bool) -> Any:
    return desc(_check_matrix("linalg.cholesky", "A", a, square=True), a.dtype)


def _cholesky_kernel(a: Any, upper: bool) -> Any:
    low = lax.linalg.cholesky(_sym_from_triangle(a, upper), symmetrize_input=False)
    return jnp.swapaxes(low, -1, -2) if upper else low


_linalg_op("linalg_cholesky", ["a"], ["out"], _cholesky_infer, _cholesky_kernel,
           attrs=(Attr("upper", "bool", False),),
           doc="the Cholesky factor of the symmetric matrix read from one triangle of a")


def _qr_shapes(s: tuple[int, ...], mode: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    m, n = s[-2], s[-1]
    k = m if mode == "complete" else min(m, n)
    return s[:-2] + (m, k), s[:-2] + (k, n)


def _qr_infer(a: Any, mode: str) -> Any:
    if mode not in ("reduced", "complete"):
        raise ValueError(f"linalg.qr: argument 'mode' must be 'reduced' or 'complete', got "
                         f"{mode!r}")
    sq, sr = _qr_shapes(_check_matrix("linalg.qr", "A", a, square=False), mode)
    return desc(sq, a.dtype), desc(sr, a.dtype)


_linalg_op("linalg_qr", ["a"], ["q", "r"], _qr_infer,
           lambda a, mode: tuple(jnp.linalg.qr(a, mode=mode)),
           attrs=(Attr("mode", "string", "reduced"),), doc="a = q @ r")


_GEQRF_DTYPES = _LINALG_DTYPES + (np.dtype(np.complex64), np.dtype(np.complex128))


def _geqrf_infer(input: Any) -> Any:
    dt = np.dtype(input.dtype)
    if dt not in _GEQRF_DTYPES:
        raise TypeError(f"geqrf: argument 'input' must be float32, float64, complex64 or "
                        f"complex128, got {dt.name}")
    s = _shape(input)
    check_matrix_shape("geqrf", "input", s, square=False)
    return desc(s, dt), desc(s[:-2] + (min(s[-2:]),), dt)


def _geqrf_kernel(input: Any) -> Any:
    # NumPy's "raw" mode is LAPACK geqrf's result, transposed (Fortran order); public, where
    # jax.lax.linalg.geqrf is private in JAX 0.10 (XLA drops the two transposes)
    h, tau = jnp.linalg.qr(input, mode="raw")
    return jnp.swapaxes(h, -1, -2), tau


_linalg_op("geqrf", ["input"], ["a", "tau"], _geqrf_infer, _geqrf_kernel,
           doc="LAPACK geqrf's compact QR: R on and above the diagonal of a, the Householder "
               "vectors (unit leading entry implied) below it, and their scalars tau, so that "
               "Q = H_1 ... H_k with H_i = I - tau_i v_i v_i^H (k = min(m, n))")


def _svd_infer(a: Any, full_matrices: bool) -> Any:
    s = _check_matrix("linalg.svd", "A", a, square=False)
    m, n = s[-2], s[-1]
    k = min(m, n)
    ku, kv = (m, n) if full_matrices else (k, k)
    return (desc(s[:-2] + (m, ku), a.dtype), desc(s[:-2] + (k,), a.dtype),
            desc(s[:-2] + (kv, n), a.dtype))


_linalg_op("linalg_svd", ["a"], ["u", "s", "vh"], _svd_infer,
           lambda a, full_matrices: tuple(jnp.linalg.svd(a, full_matrices=full_matrices)),
           attrs=(Attr("full_matrices", "bool", True),),
           doc="a = u @ diag(s) @ vh, s descending")


def _eigh_infer(a: Any, upper: bool) -> Any:
    s = _check_matrix("linalg.eigh", "A", a, square=True)
    return desc(s[:-1], a.dtype), desc(s, a.dtype)


def _eigh_kernel(a: Any, upper: bool) -> Any:
    w, v = jnp.linalg.eigh(_sym_from_triangle(a, upper), symmetrize_input=False)
    return w, v


_linalg_op("linalg_eigh", ["a"], ["eigenvalues", "eigenvectors"], _eigh_infer, _eigh_kernel,
           attrs=(Attr("upper", "bool", False),),
           doc="eigenvalues (ascending) and orthonormal eigenvectors of a symmetric matrix")


# -- einsum ------------------------------------------------------------------------------------

def parse_explicit(equation: str) -> tuple[list[str], str]:
    """``"ab,bc->ac"`` -> (["ab", "bc"], "ac"): the op's own (explicit, letters-only) form."""
    lhs, sep, out = equation.partition("->")
    if not sep:
        raise ValueError(f"einsum: the op's equation must be explicit (with '->'), got "
                         f"{equation!r}")
    return lhs.split(","), out


def _einsum_infer(operands: Any, equation: str) -> Any:
    terms, out = parse_explicit(equation)
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): the equation {equation!r} has {len(terms)} operand(s) but "
                         f"{len(operands)} were given")
    dt = np.dtype(operands[0].dtype)
    sizes: dict[str, int] = {}
    for k, (t, x) in enumerate(zip(terms, operands)):
        if np.dtype(x.dtype) != dt:
            raise TypeError(f"einsum(): operands must have the same dtype, got {dt.name} and "
                            f"{np.dtype(x.dtype).name} (operand {k})")
        s = _shape(x)
        if len(t) != len(s) or (t and not t.isalpha()):
            raise ValueError(f"einsum(): the subscripts {t!r} do not match operand {k} of "
                             f"shape {s}")
        for c, n in zip(t, s):
            if sizes.setdefault(c, n) != n:
                raise ValueError(f"einsum(): subscript {c!r} has size {n} for operand {k} "
                                 f"but {sizes[c]} elsewhere")
    if len(set(out)) != len(out) or any(c not in sizes for c in out):
        raise ValueError(f"einsum(): invalid output subscripts {out!r} in {equation!r}")
    return desc(tuple(sizes[c] for c in out), dt)


def _einsum_sbp(in_shapes: Any, n_out: int = 1, equation: str = "", **_: Any) -> list[Signature]:
    """A letter kept in the output splits the operands holding it (others broadcast) and the
    output on its position; a summed letter gives a partial sum; and the contraction is
    linear in each operand, so one partial operand gives a partial sum."""
    terms, out = parse_explicit(equation)
    sigs = []
    for c in dict.fromkeys("".join(terms)):
        if any(t.count(c) > 1 for t in terms):
            continue  # a diagonal: the split axes would not line up
        ins = tuple(S(t.index(c)) if c in t else B for t in terms)
        # a kept letter splits the output; a summed one leaves each rank a partial sum over
        # its slice of that letter's range (operands without it are needed whole: B)
        sigs.append(Signature(ins, (S(out.index(c)),) if c in out else (P,)))
    for k in range(len(terms)):
        sigs.append(Signature(tuple(P if i == k else B for i in range(len(terms))), (P,)))
    return sigs


def _einsum_kernel(operands: Any, equation: str) -> Any:
    return jnp.einsum(equation, *operands, precision=float32_products())


define_op("einsum", inputs=[Input("operands", variadic=True, min=1)], outputs=["out"],
          attrs=[Attr("equation", "string")], infer=_einsum_infer, sbp=_einsum_sbp,
          flops=cost.contraction,
          doc="Einstein summation over an explicit equation of single letters")
register_kernel("einsum", _einsum_kernel, name="einsum_xla")


# -- diag_embed --------------------------------------------------------------------------------

def _diag_embed_infer(x: Any, offset: int) -> Any:
    s = _shape(x)
    if len(s) < 1:
        raise ValueError("diag_embed(): argument 'input' must have at least 1 dimension")
    n = s[-1] + abs(offset)
    return desc(s[:-1] + (n, n), x.dtype)


def _diag_embed_kernel(x: Any, offset: int) -> Any:
    n = x.shape[-1] + abs(offset)
    out = jnp.zeros(x.shape[:-1] + (n, n), x.dtype)
    i = jnp.arange(x.shape[-1])
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    return out.at[..., r, c].set(x)


def _diag_embed_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Leading axes split the output alike; linear, so a partial input gives a partial sum."""
    nd = len(in_shapes[0])
    return [Signature((S(j),), (S(j),)) for j in range(nd - 1)] + [Signature((P,), (P,))]


define_op("diag_embed", inputs=["x"], outputs=["y"], attrs=[Attr("offset", "int64", 0)],
          infer=_diag_embed_infer, sbp=_diag_embed_sbp,
          doc="x's last dim placed on the offset diagonal of new last two dims")
register_kernel("diag_embed", _diag_embed_kernel, name="diag_embed_xla")


# -- LU, triangular solves, matrix exponential, eig, pinv ---------------------------------------
# Kernels PyTorch's torch.linalg needs that no composition gives: the LU factorization (LAPACK
# getrf's packed LU and 1-based int32 pivots), the pivots' permutation, triangular solves,
# expm, the general (non-symmetric) eigendecomposition and the pseudo-inverse (an op of its
# own so that its gradient is pinv's, not the SVD's: the SVD's is undefined at repeated
# singular values where pinv's is not).

_INT32 = np.dtype(np.int32)
_COMPLEX = {np.dtype(np.float32): np.dtype(np.complex64),
            np.dtype(np.float64): np.dtype(np.complex128)}


def _lu_factor_infer(a: Any) -> Any:
    s = _check_matrix("linalg.lu_factor", "A", a, square=False)
    return desc(s, a.dtype), desc(s[:-2] + (min(s[-2:]),), _INT32)


def _lu_factor_kernel(a: Any) -> Any:
    lu, piv, _ = lax.linalg.lu(a)
    return lu, (piv + 1).astype(jnp.int32)


_linalg_op("linalg_lu_factor", ["a"], ["LU", "pivots"], _lu_factor_infer, _lu_factor_kernel,
           doc="P A = L U packed as LAPACK's getrf (L unit lower below the diagonal, U on and "
               "above), pivots 1-based int32 row swaps")


def _piv_infer(pivots: Any, m: int) -> Any:
    s = _shape(pivots)
    if np.dtype(pivots.dtype) != _INT32 or len(s) < 1:
        raise TypeError(f"lu_unpack: argument 'pivots' must be an int32 tensor of at least 1 "
                        f"dimension, got {np.dtype(pivots.dtype).name} of shape {s}")
    if s[-1] > m:
        raise ValueError(f"lu_unpack: pivots of length {s[-1]} for {m} rows")
    return desc(s[:-1] + (m,), _INT32)


def _piv_kernel(pivots: Any, m: int) -> Any:
    return lax.linalg.lu_pivots_to_permutation(pivots - 1, m)


define_op("lu_pivots_to_permutation", inputs=["pivots"], outputs=["perm"],
          attrs=[Attr("m", "int64")], infer=_piv_infer, sbp=_batch_sbp(1, 1, core=1),
          traits=("NoSideEffect", "NoGrad"),
          doc="the row permutation (0-based, length m) of sequential 1-based row swaps: row i "
              "of P^T A is row perm[i] of A")
register_kernel("lu_pivots_to_permutation", _piv_kernel, name="lu_pivots_to_permutation_xla")


def _trisolve_infer(a: Any, b: Any, upper: bool, left: bool, unitriangular: bool) -> Any:
    sa = _check_matrix("linalg.solve_triangular", "A", a, square=True)
    sb = _check_matrix("linalg.solve_triangular", "B", b, square=False)
    if np.dtype(a.dtype) != np.dtype(b.dtype):
        raise TypeError(f"linalg.solve_triangular: A and B must have the same dtype, got "
                        f"{np.dtype(a.dtype).name} and {np.dtype(b.dtype).name}")
    if sb[:-2] != sa[:-2] or (sb[-2] if left else sb[-1]) != sa[-1]:
        raise ValueError(f"linalg.solve_triangular: incompatible shapes of A {sa} and B {sb}")
    return desc(sb, a.dtype)


def _trisolve_kernel(a: Any, b: Any, upper: bool, left: bool, unitriangular: bool) -> Any:
    return lax.linalg.triangular_solve(a, b, left_side=left, lower=not upper,
                                       unit_diagonal=unitriangular)


define_op("linalg_solve_triangular", inputs=["a", "b"], outputs=["x"],
          attrs=[Attr("upper", "bool"), Attr("left", "bool", True),
                 Attr("unitriangular", "bool", False)],
          infer=_trisolve_infer, sbp=_batch_sbp(2, 1),
          doc="x with a x = b (left) or x a = b, reading a's upper/lower triangle only")
register_kernel("linalg_solve_triangular", _trisolve_kernel, name="linalg_solve_triangular_xla")


def _expm_infer(a: Any) -> Any:
    return desc(_check_matrix("linalg.matrix_exp", "A", a, square=True), a.dtype)


def _expm_kernel(a: Any) -> Any:
    if a.ndim == 2:
        return jsl.expm(a)
    flat = a.reshape((-1,) + a.shape[-2:])
    return jax.vmap(jsl.expm)(flat).reshape(a.shape)


_linalg_op("linalg_matrix_exp", ["a"], ["out"], _expm_infer, _expm_kernel,
           doc="the matrix exponential (Pade approximation with scaling and squaring)")


def _eig_infer(a: Any) -> Any:
    s = _check_matrix("linalg.eig", "A", a, square=True)
    c = _COMPLEX[np.dtype(a.dtype)]
    return desc(s[:-1], c), desc(s, c)


def _eig_kernel(a: Any) -> Any:
    w, v = jnp.linalg.eig(a)
    c = _COMPLEX[np.dtype(a.dtype)]
    return w.astype(c), v.astype(c)


define_op("linalg_eig", inputs=["a"], outputs=["eigenvalues", "eigenvectors"], infer=_eig_infer,
          sbp=_batch_sbp(1, 2), doc="eigenvalues and unit-norm eigenvectors of a real square "
          "matrix, complex (LAPACK geev: CPU only)")
register_kernel("linalg_eig", _eig_kernel, name="linalg_eig_xla", platforms=("cpu",))


def _pinv_infer(a: Any, tol: Any, hermitian: bool) -> Any:
    s = _check_matrix("linalg.pinv", "A", a, square=hermitian)
    if np.dtype(tol.dtype) != np.dtype(a.dtype) or _shape(tol) != s[:-2]:
        raise ValueError(f"linalg.pinv: the tolerance must be a {np.dtype(a.dtype).name} "
                         f"tensor of shape {s[:-2]}, got {_shape(tol)}")
    return desc(s[:-2] + (s[-1], s[-2]), a.dtype)


def _pinv_kernel(a: Any, tol: Any, hermitian: bool) -> Any:
    if hermitian:    # A = V diag(w) V^T from the lower triangle; pinv = V diag(1/w) V^T
        w, v = jnp.linalg.eigh(_sym_from_triangle(a, False), symmetrize_input=False)
        keep = jnp.abs(w) > tol[..., None]
        winv = jnp.where(keep, 1.0 / jnp.where(keep, w, 1.0), 0.0)
        return jnp.matmul(v * winv[..., None, :], jnp.swapaxes(v, -1, -2), precision=_HIGHEST)
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    keep = s > tol[..., None]
    sinv = jnp.where(keep, 1.0 / jnp.where(keep, s, 1.0), 0.0)
    return jnp.matmul(jnp.swapaxes(vh, -1, -2) * sinv[..., None, :], jnp.swapaxes(u, -1, -2),
                      precision=_HIGHEST)


define_op("linalg_pinv", inputs=["a", "tol"], outputs=["out"],
          attrs=[Attr("hermitian", "bool", False)], infer=_pinv_infer,
          sbp=_batch_sbp(2, 1),
          doc="the pseudo-inverse over the singular values (|eigenvalues| when hermitian) "
              "above tol (one per matrix)")
register_kernel("linalg_pinv", _pinv_kernel, name="linalg_pinv_xla")


# -- LDL (Bunch-Kaufman) ------------------------------------------------------------------------
# LAPACK sytrf / sytrs through SciPy's LAPACK wrappers on the host (python kernels): PyTorch
# returns sytrf's packed factor and its pivot encoding (negative entries mark 2x2 blocks), which
# no XLA kernel produces. Not differentiable, as in PyTorch.

def _lapack(name: str, dtype: Any) -> Any:
    # imported here, not at module level: scipy.linalg costs ~0.6 s at `import jflow`, and only
    # the LDL ops need it (SciPy is not a cycle risk: no jflow module is involved)
    from scipy.linalg import lapack as _sp_lapack
    return getattr(_sp_lapack, ("s" if np.dtype(dtype) == np.float32 else "d") + name)


def _ldl_factor_infer(a: Any, hermitian: bool) -> Any:
    s = _check_matrix("linalg.ldl_factor", "A", a, square=True)
    return desc(s, a.dtype), desc(s[:-1], _INT32), desc(s[:-2], _INT32)


def _ldl_factor_host(a: np.ndarray, hermitian: bool) -> Any:
    sytrf = _lapack("sytrf", a.dtype)
    flat = a.reshape((int(np.prod(a.shape[:-2])),) + a.shape[-2:])
    lds, pivs, infos = [], [], []
    for m in flat:
        if m.shape[-1] == 0:
            lds.append(m.copy())
            pivs.append(np.zeros(0, np.int32))
            infos.append(0)
            continue
        ld, piv, info = sytrf(m, lower=1)
        lds.append(np.tril(ld))
        pivs.append(np.asarray(piv, np.int32))
        infos.append(max(int(info), 0))
    if not lds:
        return (a.copy(), np.zeros(a.shape[:-1], np.int32), np.zeros(a.shape[:-2], np.int32))
    return (np.stack(lds).reshape(a.shape).astype(a.dtype),
            np.stack(pivs).reshape(a.shape[:-1]).astype(np.int32),
            np.asarray(infos, np.int32).reshape(a.shape[:-2]))


define_op("linalg_ldl_factor", inputs=["a"], outputs=["LD", "pivots", "info"],
          attrs=[Attr("hermitian", "bool", False)], infer=_ldl_factor_infer,
          sbp=_batch_sbp(1, 3), traits=("NoSideEffect", "NoGrad"),
          doc="LAPACK sytrf of the lower triangle: packed L and block-diagonal D, 1-based "
              "pivots (negative: a 2x2 block), info > 0 where D is singular")
register_kernel("linalg_ldl_factor", _ldl_factor_host, backend="python",
                name="linalg_ldl_factor_sytrf")


def _ldl_solve_infer(ld: Any, pivots: Any, b: Any, hermitian: bool) -> Any:
    s = _check_matrix("linalg.ldl_solve", "LD", ld, square=True)
    sb = _check_matrix("linalg.ldl_solve", "B", b, square=False)
    if np.dtype(ld.dtype) != np.dtype(b.dtype):
        raise TypeError(f"linalg.ldl_solve: LD and B must have the same dtype, got "
                        f"{np.dtype(ld.dtype).name} and {np.dtype(b.dtype).name}")
    if np.dtype(pivots.dtype) != _INT32 or _shape(pivots) != s[:-1]:
        raise TypeError(f"linalg.ldl_solve: pivots must be int32 of shape {s[:-1]}, got "
                        f"{np.dtype(pivots.dtype).name} of shape {_shape(pivots)}")
    if sb[:-2] != s[:-2] or sb[-2] != s[-1]:
        raise ValueError(f"linalg.ldl_solve: incompatible shapes of LD {s} and B {sb}")
    return desc(sb, b.dtype)


def _ldl_solve_host(ld: np.ndarray, pivots: np.ndarray, b: np.ndarray, hermitian: bool) -> Any:
    sytrs = _lapack("sytrs", ld.dtype)
    nb = int(np.prod(ld.shape[:-2]))
    fl = ld.reshape((nb,) + ld.shape[-2:])
    fp = pivots.reshape((nb,) + pivots.shape[-1:])
    fb = b.reshape((nb,) + b.shape[-2:])
    out = [fb[i] if fl[i].shape[-1] == 0 or fb[i].size == 0
           else sytrs(fl[i], fp[i], fb[i], lower=1)[0] for i in range(fl.shape[0])]
    return np.stack(out).reshape(b.shape).astype(b.dtype) if out else b.copy()


define_op("linalg_ldl_solve", inputs=["ld", "pivots", "b"], outputs=["x"],
          attrs=[Attr("hermitian", "bool", False)], infer=_ldl_solve_infer,
          sbp=_batch_sbp(3, 1), traits=("NoSideEffect", "NoGrad"),
          doc="x with A x = b from linalg_ldl_factor's LD and pivots (LAPACK sytrs)")
register_kernel("linalg_ldl_solve", _ldl_solve_host, backend="python",
                name="linalg_ldl_solve_sytrs")
