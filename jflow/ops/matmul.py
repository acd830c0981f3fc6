"""Matrix products — definition, xla kernel and SBP signatures side by side.

OneFlow splits ``torch.matmul`` into several ops, and so does jflow, so that every case has
exact SBP signatures and the functor never needs a reshape:

=========================  ==========================================  =====================
op                         operands                                     result
=========================  ==========================================  =====================
``matmul``                 a (m, k), b (k, n); ``transpose_a/b``, alpha  (m, n)
``batch_matmul``           a (..., m, k), b (..., k, n), one >= 3-D;    (broadcast(...), m, n)
                           batch dims broadcast (OneFlow's batch_matmul
                           + broadcast_matmul); ``transpose_a/b``, alpha
``matrix_vector_product``  a (..., m, k), b (k,); ``transpose_a``       (..., m)
``vector_matrix_product``  a (k,), b (..., k, n); ``transpose_b``       (..., n)
``dot``                    a (k,), b (k,)                               ()
``outer``                  a (n,), b (m,)                               (n, m)
``grouped_mm``             mat_a, mat_b 2-D or 3-D, int32 ``offs``      see below
=========================  ==========================================  =====================

``transpose_a`` / ``transpose_b`` transpose the last two dims of that operand before the product
(XLA folds the transpose into the dot). Ops are dtype-strict: both operands have the same dtype
(``torch.matmul`` does not promote either). Float32 products are full float32 on every
backend, PyTorch's default, until ``flow.set_float32_matmul_precision`` allows TF32 / bfloat16
passes (:mod:`.precision`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.custom_batching import custom_vmap

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, P, S, Signature
from . import cost
from .infer import ANY, FLOAT, NUMBER_C, broadcast_shapes, check_dtype, desc, kind
from .precision import float32_products
from .primitive import define_op
from .registry import Attr, Input

# -- shared inference helpers ----------------------------------------------------------------

def _same_dtype(a: Any, b: Any) -> None:
    if np.dtype(a.dtype) != np.dtype(b.dtype):
        raise TypeError(f"a and b must have the same dtype (matrix products do not promote), "
                        f"got {np.dtype(a.dtype).name} and {np.dtype(b.dtype).name}")


def _check_alpha(a: Any, alpha: float) -> None:
    if alpha != 1.0 and kind(a.dtype) != "float":
        raise TypeError(f"alpha must be 1 for {np.dtype(a.dtype).name} inputs (a scale factor "
                        f"needs floating inputs), got alpha={alpha}")


def _mat(shape: tuple[int, ...], transpose: bool) -> tuple[int, int]:
    """(rows, cols) of the last two dims of ``shape`` after the optional transpose."""
    r, c = shape[-2], shape[-1]
    return (c, r) if transpose else (r, c)


def _tag(transpose: bool) -> str:
    return "^T" if transpose else ""


def _contract(m: int, k: int, k2: int, n: int, ta: bool, tb: bool) -> None:
    if k != k2:
        raise ValueError(f"shapes cannot be multiplied (a{_tag(ta)} is {m}x{k}, "
                         f"b{_tag(tb)} is {k2}x{n}; the inner sizes {k} and {k2} differ)")


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in x.shape)


# -- kernels ---------------------------------------------------------------------------------

def _t(x: Any, transpose: bool) -> Any:
    return jnp.swapaxes(x, -1, -2) if transpose else x


def _scale(out: Any, alpha: float) -> Any:
    return out if alpha == 1.0 else out * jnp.asarray(alpha, out.dtype)


def _matmul_kernel(a: Any, b: Any, transpose_a: bool, transpose_b: bool, alpha: float) -> Any:
    return _scale(jnp.matmul(_t(a, transpose_a), _t(b, transpose_b),
                             precision=float32_products()), alpha)


# -- matmul (2-D) ----------------------------------------------------------------------------

def _matmul_infer(a: Any, b: Any, transpose_a: bool, transpose_b: bool, alpha: float) -> Any:
    _same_dtype(a, b)
    check_dtype(a, NUMBER_C, "a")
    _check_alpha(a, alpha)
    sa, sb = _shape(a), _shape(b)
    if len(sa) != 2 or len(sb) != 2:
        raise ValueError(f"a and b must be 2-D matrices (batch_matmul takes batched inputs), "
                         f"got shapes {sa} and {sb}")
    m, k = _mat(sa, transpose_a)
    k2, n = _mat(sb, transpose_b)
    _contract(m, k, k2, n, transpose_a, transpose_b)
    return desc((m, n), a.dtype)


def _matmul_sbp(in_shapes: Any, n_out: int = 1, transpose_a: bool = False,
                transpose_b: bool = False, **_: Any) -> list[Signature]:
    """OneFlow's matmul: (S(m), B) -> S(0), (B, S(n)) -> S(1), (S(k), S(k)) -> P,
    (P, B) -> P, (B, P) -> P, where the m/k/n axes move with the transpose flags."""
    a_m, a_k = (1, 0) if transpose_a else (0, 1)
    b_k, b_n = (1, 0) if transpose_b else (0, 1)
    return [Signature((S(a_m), B), (S(0),)), Signature((B, S(b_n)), (S(1),)),
            Signature((S(a_k), S(b_k)), (P,)), Signature((P, B), (P,)),
            Signature((B, P), (P,))]


_MM_ATTRS = [Attr("transpose_a", "bool", False), Attr("transpose_b", "bool", False),
             Attr("alpha", "double", 1.0, static=True)]  # inference reads it; matmul's hot path

define_op("matmul", inputs=["a", "b"], outputs=["out"], attrs=_MM_ATTRS, infer=_matmul_infer,
          sbp=_matmul_sbp, flops=cost.contraction,
          doc="alpha * op(a) @ op(b) for 2-D a and b (op = optional transpose)")
register_kernel("matmul", _matmul_kernel, name="matmul_xla")


# -- batch_matmul (N-d, broadcast batch dims) --------------------------------------------------

def _batch_matmul_infer(a: Any, b: Any, transpose_a: bool, transpose_b: bool,
                        alpha: float) -> Any:
    _same_dtype(a, b)
    check_dtype(a, NUMBER_C, "a")
    _check_alpha(a, alpha)
    sa, sb = _shape(a), _shape(b)
    if len(sa) < 2 or len(sb) < 2 or max(len(sa), len(sb)) < 3:
        raise ValueError(f"a and b must be at least 2-D and one of them at least 3-D (matmul "
                         f"takes two matrices), got shapes {sa} and {sb}")
    try:
        batch = broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise ValueError(f"the batch dimensions {sa[:-2]} of a and {sb[:-2]} of b cannot be "
                         f"broadcast together (shapes {sa} and {sb})") from None
    m, k = _mat(sa, transpose_a)
    k2, n = _mat(sb, transpose_b)
    _contract(m, k, k2, n, transpose_a, transpose_b)
    return desc(batch + (m, n), a.dtype)


def _batch_axis_sbp(shapes: list[tuple[int, ...]], ranks: list[int], nb: int, j: int) -> list:
    """SBP of each operand for a split of output batch axis ``j`` (broadcast operands: B)."""
    out_d = 1
    for s, r in zip(shapes, ranks):
        i = j - (nb - r)
        if i >= 0 and s[i] != 1:
            out_d = s[i]
    res = []
    for s, r in zip(shapes, ranks):
        i = j - (nb - r)
        res.append(B if i < 0 or (s[i] == 1 and out_d != 1) else S(i))
    return res


def _batch_matmul_sbp(in_shapes: Any, n_out: int = 1, transpose_a: bool = False,
                      transpose_b: bool = False, **_: Any) -> list[Signature]:
    """Each output batch axis splits the operands that have it (broadcast ones stay B); the
    matrix axes follow matmul's signatures, shifted past the batch dims."""
    sa, sb = (tuple(s) for s in in_shapes)
    ra, rb = len(sa) - 2, len(sb) - 2
    nb = max(ra, rb)
    sigs = []
    for j in range(nb):
        ins = _batch_axis_sbp([sa[:-2], sb[:-2]], [ra, rb], nb, j)
        sigs.append(Signature(tuple(ins), (S(j),)))
    a_m, a_k = (ra + 1, ra) if transpose_a else (ra, ra + 1)
    b_k, b_n = (rb + 1, rb) if transpose_b else (rb, rb + 1)
    sigs += [Signature((S(a_m), B), (S(nb),)), Signature((B, S(b_n)), (S(nb + 1),)),
             Signature((S(a_k), S(b_k)), (P,)), Signature((P, B), (P,)),
             Signature((B, P), (P,))]
    return sigs


define_op("batch_matmul", inputs=["a", "b"], outputs=["out"], attrs=_MM_ATTRS,
          infer=_batch_matmul_infer, sbp=_batch_matmul_sbp, flops=cost.contraction,
          doc="alpha * op(a) @ op(b) over broadcast batch dims (torch.matmul for N-d inputs)")
register_kernel("batch_matmul", _matmul_kernel, name="batch_matmul_xla")


# -- matrix_vector_product / vector_matrix_product --------------------------------------------

def _mv_infer(a: Any, b: Any, transpose_a: bool) -> Any:
    _same_dtype(a, b)
    check_dtype(a, NUMBER_C, "a")
    sa, sb = _shape(a), _shape(b)
    if len(sa) < 2 or len(sb) != 1:
        raise ValueError(f"a must be at least 2-D and b 1-D, got shapes {sa} and {sb}")
    m, k = _mat(sa, transpose_a)
    _contract(m, k, sb[0], 1, transpose_a, False)
    return desc(sa[:-2] + (m,), a.dtype)


def _mv_sbp(in_shapes: Any, n_out: int = 1, transpose_a: bool = False,
            **_: Any) -> list[Signature]:
    """Batch axes of a split the output; the m axis of a -> S(last); k -> P; linear in each."""
    ra = len(in_shapes[0]) - 2
    sigs = [Signature((S(j), B), (S(j),)) for j in range(ra)]
    a_m, a_k = (ra + 1, ra) if transpose_a else (ra, ra + 1)
    sigs += [Signature((S(a_m), B), (S(ra),)), Signature((S(a_k), S(0)), (P,)),
             Signature((P, B), (P,)), Signature((B, P), (P,))]
    return sigs


def _mv_kernel(a: Any, b: Any, transpose_a: bool) -> Any:
    return jnp.matmul(_t(a, transpose_a), b, precision=float32_products())


define_op("matrix_vector_product", inputs=["a", "b"], outputs=["out"],
          attrs=[Attr("transpose_a", "bool", False)], infer=_mv_infer, sbp=_mv_sbp,
          flops=cost.contraction,
          doc="op(a) @ b for a (..., m, k) and a vector b (k,): (..., m)")
register_kernel("matrix_vector_product", _mv_kernel, name="matrix_vector_product_xla")


def _vm_infer(a: Any, b: Any, transpose_b: bool) -> Any:
    _same_dtype(a, b)
    check_dtype(a, NUMBER_C, "a")
    sa, sb = _shape(a), _shape(b)
    if len(sa) != 1 or len(sb) < 2:
        raise ValueError(f"a must be 1-D and b at least 2-D, got shapes {sa} and {sb}")
    k2, n = _mat(sb, transpose_b)
    _contract(1, sa[0], k2, n, False, transpose_b)
    return desc(sb[:-2] + (n,), a.dtype)


def _vm_sbp(in_shapes: Any, n_out: int = 1, transpose_b: bool = False,
            **_: Any) -> list[Signature]:
    """Batch axes of b split the output; the n axis of b -> S(last); k -> P; linear in each."""
    rb = len(in_shapes[1]) - 2
    sigs = [Signature((B, S(j)), (S(j),)) for j in range(rb)]
    b_k, b_n = (rb + 1, rb) if transpose_b else (rb, rb + 1)
    sigs += [Signature((B, S(b_n)), (S(rb),)), Signature((S(0), S(b_k)), (P,)),
             Signature((P, B), (P,)), Signature((B, P), (P,))]
    return sigs


def _vm_kernel(a: Any, b: Any, transpose_b: bool) -> Any:
    return jnp.matmul(a, _t(b, transpose_b), precision=float32_products())


define_op("vector_matrix_product", inputs=["a", "b"], outputs=["out"],
          attrs=[Attr("transpose_b", "bool", False)], infer=_vm_infer, sbp=_vm_sbp,
          flops=cost.contraction,
          doc="a @ op(b) for a vector a (k,) and b (..., k, n): (..., n)")
register_kernel("vector_matrix_product", _vm_kernel, name="vector_matrix_product_xla")


# -- dot / outer -------------------------------------------------------------------------------

def _dot_infer(a: Any, b: Any) -> Any:
    _same_dtype(a, b)
    check_dtype(a, NUMBER_C, "a")
    sa, sb = _shape(a), _shape(b)
    if len(sa) != 1 or len(sb) != 1:
        raise ValueError(f"a and b must be 1-D, got shapes {sa} and {sb}")
    if sa != sb:
        raise ValueError(f"a and b must have the same number of elements, got {sa[0]} and "
                         f"{sb[0]}")
    return desc((), a.dtype)


def _dot_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """(S0, S0) -> P (each rank sums its slice), and linear in each operand."""
    return [Signature((S(0), S(0)), (P,)), Signature((P, B), (P,)), Signature((B, P), (P,))]


define_op("dot", inputs=["a", "b"], outputs=["out"], infer=_dot_infer, sbp=_dot_sbp,
          flops=cost.contraction,
          doc="sum(a * b) of two vectors")
register_kernel("dot", lambda a, b: jnp.dot(a, b, precision=float32_products()), name="dot_xla")


def _outer_infer(a: Any, b: Any) -> Any:
    _same_dtype(a, b)
    check_dtype(a, ANY, "a")
    sa, sb = _shape(a), _shape(b)
    if len(sa) != 1 or len(sb) != 1:
        raise ValueError(f"a and b must be 1-D, got shapes {sa} and {sb}")
    return desc((sa[0], sb[0]), a.dtype)


def _outer_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """(S0, B) -> S0, (B, S0) -> S1, and linear in each operand."""
    return [Signature((S(0), B), (S(0),)), Signature((B, S(0)), (S(1),)),
            Signature((P, B), (P,)), Signature((B, P), (P,))]


define_op("outer", inputs=["a", "b"], outputs=["out"], infer=_outer_infer, sbp=_outer_sbp,
          doc="a[i] * b[j] of two vectors (bool: logical and)")
register_kernel("outer", lambda a, b: jnp.multiply(a[:, None], b[None, :]), name="outer_xla")


# -- grouped_mm (torch.nn.functional.grouped_mm: mixture-of-experts products) ------------------
#
# Four layouts, as PyTorch's (``offs``: int32 cumulative group ends, one per group):
#
# =======  ===========================  ===========  ==============================================
# layout   mat_a, mat_b                 offs         out
# =======  ===========================  ===========  ==============================================
# 2-D 3-D  (S, K), (G, K, N)            (G,)         (S, N): rows of group g times mat_b[g]
# 3-D 2-D  (G, M, K), (K, S)            (G,)         (M, S): mat_a[g] times the columns of group g
# 2-D 2-D  (M, S), (S, N)               (G,)         (G, M, N): group g's slice of the shared
#                                                    S axis contracted (weight gradients)
# 3-D 3-D  (G, M, K), (G, K, N)         none         (G, M, N): a batched product
# =======  ===========================  ===========  ==============================================
#
# Group g spans ``[end[g-1], end[g])`` of the ragged axis S, ``end = cummax(clip(offs, 0, S))``:
# for increasing offs within S (the documented use) PyTorch's groups. Rows (3-D 2-D: columns)
# past ``offs[-1]`` are zeros, where PyTorch leaves them unwritten (uninitialised memory);
# ends past S are clipped, as PyTorch's slices clip them; a decreasing end gives an empty group
# (PyTorch recomputes the overlap with the later group). The group sizes are computed on the
# device from offs (no host read: it traces under jax.jit), and the products are
# ``lax.ragged_dot_general`` (XLA's ragged dot on GPU / TPU, a masked dense product on CPU).

def _grouped_infer(mat_a: Any, mat_b: Any, offs: Any) -> Any:
    if np.dtype(mat_a.dtype) != np.dtype(mat_b.dtype):
        raise TypeError(f"mat_a and mat_b must have the same dtype, got "
                        f"{np.dtype(mat_a.dtype).name} and {np.dtype(mat_b.dtype).name}")
    check_dtype(mat_a, FLOAT, "mat_a")
    sa, sb = _shape(mat_a), _shape(mat_b)
    if len(sa) not in (2, 3) or len(sb) not in (2, 3):
        raise ValueError(f"mat_a and mat_b must be 2-D or 3-D, got shapes {sa} and {sb}")
    if offs is None:
        if len(sa) == 2 or len(sb) == 2:
            raise ValueError(f"offs is required when mat_a or mat_b is 2-D (shapes {sa} and "
                             f"{sb}): the int32 group ends of the ragged dimension")
    else:
        if len(sa) == 3 and len(sb) == 3:
            raise ValueError(f"offs must be None for a 3-D mat_a and mat_b (a batched product "
                             f"of shapes {sa} and {sb})")
        if np.dtype(offs.dtype) != np.int32 or len(offs.shape) != 1:
            raise TypeError(f"offs must be a 1-D int32 tensor, got a {len(offs.shape)}-D "
                            f"{np.dtype(offs.dtype).name} tensor")
    if len(sa) == 2 and len(sb) == 2:
        if sa[1] != sb[0]:
            raise ValueError(f"mat_a's columns and mat_b's rows are the grouped dimension and "
                             f"must have the same size, got shapes {sa} and {sb}")
        return desc((int(offs.shape[0]), sa[0], sb[1]), mat_a.dtype)
    if sa[-1] != sb[-2]:
        raise ValueError(f"the contraction dimensions of mat_a {sa} and mat_b {sb} differ "
                         f"({sa[-1]} and {sb[-2]})")
    groups = sb[0] if len(sa) == 2 else sa[0]
    if len(sa) == 3 and len(sb) == 3:
        if sa[0] != sb[0]:
            raise ValueError(f"mat_a and mat_b must have the same number of groups (dim 0), "
                             f"got shapes {sa} and {sb}")
        return desc((sa[0], sa[1], sb[2]), mat_a.dtype)
    if int(offs.shape[0]) != groups:
        which = "mat_b" if len(sa) == 2 else "mat_a"
        raise ValueError(f"offs must have one entry per group ({which} has {groups}), got "
                         f"{int(offs.shape[0])}")
    return desc((sa[0], sb[2]) if len(sa) == 2 else (sa[1], sb[1]), mat_a.dtype)


def _grouped_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """offs is always broadcast (its ends index the whole ragged axis), so the ragged axis
    and the group axis of a grouped operand never split. 2-D 3-D: N of mat_b -> S(1) of out,
    K -> P; 3-D 2-D: M of mat_a -> S(0), K -> P; 2-D 2-D: M -> S(1), N -> S(2); 3-D 3-D as
    batch_matmul (groups, M, N split, K -> P); every layout linear in each matrix."""
    ra, rb = len(in_shapes[0]), len(in_shapes[1])
    if ra == 3 and rb == 3:
        return [Signature((S(0), S(0)), (S(0),)), Signature((S(1), B), (S(1),)),
                Signature((B, S(2)), (S(2),)), Signature((S(2), S(1)), (P,)),
                Signature((P, B), (P,)), Signature((B, P), (P,))]
    if ra == 2 and rb == 3:
        sigs = [Signature((B, S(2), B), (S(1),)), Signature((S(1), S(1), B), (P,))]
    elif ra == 3:
        sigs = [Signature((S(1), B, B), (S(0),)), Signature((S(2), S(0), B), (P,))]
    else:
        sigs = [Signature((S(0), B, B), (S(1),)), Signature((B, S(1), B), (S(2),))]
    return sigs + [Signature((P, B, B), (P,)), Signature((B, P, B), (P,))]


def _grouped_flops(ins: Any, outs: Any) -> int:
    """Each output element is one K-long dot product (2-D 2-D: each element of mat_a times
    one row of mat_b), whatever the group sizes."""
    a, b, out = ins[0], ins[1], outs[0]
    if a.ndim == 2 and b.ndim == 2:
        return int(a.size * b.shape[1])
    return int(out.size * a.shape[-1])


@functools.cache
def _ragged(contracting: bool, nb: int) -> Callable[..., Any]:
    """``lax.ragged_dot_general`` over ``nb`` leading batch dims of all three operands: rows
    (``contracting=False``) ``(*b, M, K) x (*b, G, K, N) -> (*b, M, N)`` with the M axis in
    groups, or ``(*b, M, K) x (*b, K, N) -> (*b, G, M, N)`` with the K axis in groups; group
    sizes ``(*b, G)``. JAX batches ragged_dot only when every operand is batched on axis 0, so
    under ``jax.vmap`` (the op's generic batching lowers the kernel under vmap) the operands
    are broadcast to the batch and the product takes one more batch dim."""
    dims = tuple(range(nb))
    if contracting:
        dn = lax.RaggedDotDimensionNumbers(((((nb + 1,), (nb,))), (dims, dims)),
                                           lhs_ragged_dimensions=[nb + 1],
                                           rhs_group_dimensions=[])
    else:
        dn = lax.RaggedDotDimensionNumbers(((((nb + 1,), (nb + 1,))), (dims, dims)),
                                           lhs_ragged_dimensions=[nb],
                                           rhs_group_dimensions=[nb])

    @custom_vmap
    def product(lhs: Any, rhs: Any, sizes: Any) -> Any:
        out = lax.ragged_dot_general(lhs, rhs, sizes, dn, precision=float32_products(),
                                     preferred_element_type=lhs.dtype)
        return jnp.moveaxis(out, 0, nb) if contracting else out  # groups after the batch

    @product.def_vmap
    def _batched(axis_size: int, in_batched: Any, lhs: Any, rhs: Any, sizes: Any) -> Any:
        args = [x if batched else jnp.broadcast_to(x, (axis_size,) + x.shape)
                for x, batched in zip((lhs, rhs, sizes), in_batched)]
        return _ragged(contracting, nb + 1)(*args), True

    return product


def _group_ends(offs: Any, total: int) -> Any:
    """The groups' ends along a ragged axis of ``total``: offs clipped to ``[0, total]``, made
    non-decreasing."""
    return lax.cummax(jnp.clip(offs, 0, total), axis=0)


def _group_sizes(ends: Any) -> Any:
    return jnp.diff(ends, prepend=jnp.zeros((1,), ends.dtype))


def _rows_before(ends: Any, axis: int, out: Any) -> Any:
    """``out`` with the positions ``>= ends[-1]`` of ``axis`` zeroed: they are in no group."""
    keep = lax.broadcasted_iota(jnp.int32, out.shape, axis) < ends[-1]
    return jnp.where(keep, out, jnp.zeros((), out.dtype))


def _grouped_mm(mat_a: Any, mat_b: Any, offs: Any) -> Any:
    if offs is None:
        return jnp.matmul(mat_a, mat_b, precision=float32_products())
    if mat_a.ndim == 2 and mat_b.ndim == 2:  # (M, S) x (S, N) -> (G, M, N)
        if offs.shape[0] == 0:
            return jnp.zeros((0, mat_a.shape[0], mat_b.shape[1]), mat_a.dtype)
        ends = _group_ends(offs, mat_a.shape[1])
        return _ragged(True, 0)(mat_a, mat_b, _group_sizes(ends))
    if mat_a.ndim == 2:  # (S, K) x (G, K, N) -> (S, N)
        lhs, rhs, axis = mat_a, mat_b, 0
        n = mat_a.shape[0]
    else:                # (G, M, K) x (K, S) -> (M, S), as (S, K) x (G, K, M) transposed
        lhs, rhs, axis = mat_b.T, jnp.swapaxes(mat_a, 1, 2), 1
        n = mat_b.shape[1]
    out_shape = (n, rhs.shape[2])
    if offs.shape[0] == 0:
        out = jnp.zeros(out_shape, mat_a.dtype)
        return out if axis == 0 else out.T
    ends = _group_ends(offs, n)
    out = _ragged(False, 0)(lhs, rhs, _group_sizes(ends))
    out = out if axis == 0 else out.T
    return _rows_before(ends, axis, out)


define_op("grouped_mm", inputs=["mat_a", "mat_b", Input("offs", optional=True)],
          outputs=["out"], infer=_grouped_infer, sbp=_grouped_sbp, flops=_grouped_flops,
          doc="per-group matrix products over int32 group ends offs "
              "(torch.nn.functional.grouped_mm; layouts in jflow/ops/matmul.py)")
register_kernel("grouped_mm", _grouped_mm, name="grouped_mm_xla")
