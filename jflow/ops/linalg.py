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
``linalg_svd``         a (..., m, n); ``full_matrices``            u, s, vh
``linalg_eigh``        a (..., n, n); ``upper`` (UPLO == "U")      eigenvalues (ascending), vectors
=====================  =========================================  ==============================

The factorizations read one triangle of a symmetric input as PyTorch does (cholesky the lower,
eigh the ``UPLO`` one): the kernel builds the symmetric matrix from that triangle, so the
backward rules send the gradient to that triangle only. They take float32/float64 only
(PyTorch's CPU kernels refuse half precision and integers). Batch dims lead and are the same
for every operand (the functors broadcast them), so each batch axis split is one signature.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, P, S, Signature
from . import cost
from .infer import desc
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


def _check_matrix(fname: str, arg: str, x: Any, square: bool) -> tuple[int, ...]:
    _check_float(fname, arg, x)
    s = _shape(x)
    if len(s) < 2:
        raise ValueError(f"{fname}: argument '{arg}' must have at least 2 dimensions, got "
                         f"shape {s}")
    if square and s[-1] != s[-2]:
        raise ValueError(f"{fname}: argument '{arg}' must be a batch of square matrices, got "
                         f"shape {s}")
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
    sa = _check_matrix("linalg.solve", "A", a, square=True)
    sb = _check_matrix("linalg.solve", "B", b, square=False)
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
    return jnp.einsum(equation, *operands, precision=_HIGHEST)


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
