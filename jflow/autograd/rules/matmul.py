"""Backward rules of the matmul ops (``jflow/ops/matmul.py``).

For ``out = alpha * op(a) @ op(b)`` (``op`` = optional transpose of the last two dims):
``d op(a) = alpha * dy @ op(b)^T`` and ``d op(b) = alpha * op(a)^T @ dy``; a transposed operand
gets the transpose of that, which the transpose flags of the same op express without any
explicit transpose. Broadcast batch dims of ``batch_matmul`` are summed back (``sum_to``).
"""

from __future__ import annotations

from ..rule import register_backward
from ._util import O, sum_to


def _mm_grads(mm, ctx, dy, a, b):
    """(da, db) of ``alpha * op(a) @ op(b)`` with ``mm`` = matmul or batch_matmul; the results
    have the broadcast batch shape (callers sum them back)."""
    ta, tb, alpha = ctx.transpose_a, ctx.transpose_b, ctx.alpha
    da = db = None
    if ctx.needs_input_grad[0]:
        if ta:   # a = (alpha dy @ op(b)^T)^T = alpha op(b) @ dy^T
            da = mm(b, dy, transpose_a=tb, transpose_b=True, alpha=alpha)
        else:    # a = alpha dy @ op(b)^T
            da = mm(dy, b, transpose_a=False, transpose_b=not tb, alpha=alpha)
    if ctx.needs_input_grad[1]:
        if tb:   # b = (alpha op(a)^T @ dy)^T = alpha dy^T @ op(a)
            db = mm(dy, a, transpose_a=True, transpose_b=ta, alpha=alpha)
        else:    # b = alpha op(a)^T @ dy
            db = mm(a, dy, transpose_a=not ta, transpose_b=False, alpha=alpha)
    return da, db


@register_backward("matmul", save=["a", "b"])
def _matmul(ctx, dy):
    a, b = ctx.saved_tensors
    return _mm_grads(O.matmul, ctx, dy, a, b)


@register_backward("batch_matmul", save=["a", "b"])
def _batch_matmul(ctx, dy):
    # dy is at least 3-D (the output is), so every product below is a valid batch_matmul
    a, b = ctx.saved_tensors
    da, db = _mm_grads(O.batch_matmul, ctx, dy, a, b)
    return (None if da is None else sum_to(da, ctx.input_shapes[0]),
            None if db is None else sum_to(db, ctx.input_shapes[1]))


def _prod(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _vec_times_batched(mat, dy, transpose):
    """``sum over batch of op(mat)^T-contracted dy``, i.e. the vector ``v`` with
    ``v[j] = sum_{..., i} op(mat)[..., i, j] * dy[..., i]`` where ``op(mat)`` is ``mat`` or its
    transpose (``transpose``) and ``dy`` has shape ``batch + (rows of op(mat),)``."""
    shape = tuple(mat._meta.shape)
    batch = shape[:-2]
    if not batch:
        return O.matrix_vector_product(mat, dy, transpose_a=not transpose)
    if not transpose:  # mat (..., i, j): merge batch and i, contract them with dy
        rows, k = _prod(shape[:-1]), shape[-1]
        return O.matrix_vector_product(O.reshape(mat, shape=(rows, k)),
                                       O.reshape(dy, shape=(rows,)), transpose_a=True)
    # mat (..., j, i): mat @ dy[..., :, None] per batch, summed over the batch
    col = O.batch_matmul(mat, O.reshape(dy, shape=batch + (shape[-1], 1)))
    return O.reduce_sum(col, axis=tuple(range(len(batch))) + (len(batch) + 1,), keepdim=False)


@register_backward("matrix_vector_product", save=["a", "b"])
def _mv(ctx, dy):
    # out[..., i] = sum_j op(a)[..., i, j] * b[j]
    a, b = ctx.saved_tensors
    ta = ctx.transpose_a
    sa = ctx.input_shapes[0]
    batch, k = sa[:-2], ctx.input_shapes[1][0]
    m = sa[-1] if ta else sa[-2]
    da = db = None
    if ctx.needs_input_grad[0]:
        if ta:   # da[..., j, i] = b[j] * dy[..., i]
            da = O.mul(O.reshape(b, shape=(k, 1)), O.reshape(dy, shape=batch + (1, m)))
        else:    # da[..., i, j] = dy[..., i] * b[j]
            da = O.mul(O.reshape(dy, shape=batch + (m, 1)), O.reshape(b, shape=(1, k)))
    if ctx.needs_input_grad[1]:
        # db[j] = sum_{..., i} op(a)[..., i, j] * dy[..., i]
        db = _vec_times_batched(a, dy, ta)
    return da, db


@register_backward("vector_matrix_product", save=["a", "b"])
def _vm(ctx, dy):
    # out[..., j] = sum_i a[i] * op(b)[..., i, j]
    a, b = ctx.saved_tensors
    tb = ctx.transpose_b
    sb = ctx.input_shapes[1]
    batch, k = sb[:-2], ctx.input_shapes[0][0]
    n = sb[-2] if tb else sb[-1]
    da = db = None
    if ctx.needs_input_grad[0]:
        # da[i] = sum_{..., j} op(b)[..., i, j] * dy[..., j]
        da = _vec_times_batched(b, dy, not tb)
    if ctx.needs_input_grad[1]:
        if tb:   # db[..., j, i] = dy[..., j] * a[i]
            db = O.mul(O.reshape(dy, shape=batch + (n, 1)), O.reshape(a, shape=(1, k)))
        else:    # db[..., i, j] = a[i] * dy[..., j]
            db = O.mul(O.reshape(a, shape=(k, 1)), O.reshape(dy, shape=batch + (1, n)))
    return da, db


@register_backward("dot", save=["a", "b"])
def _dot(ctx, dy):
    a, b = ctx.saved_tensors
    return (O.mul(dy, b) if ctx.needs_input_grad[0] else None,
            O.mul(dy, a) if ctx.needs_input_grad[1] else None)


@register_backward("outer", save=["a", "b"])
def _outer(ctx, dy):
    # out[i, j] = a[i] * b[j]
    a, b = ctx.saved_tensors
    return (O.matrix_vector_product(dy, b) if ctx.needs_input_grad[0] else None,
            O.vector_matrix_product(a, dy) if ctx.needs_input_grad[1] else None)


def _mT(x):
    """``x`` with its last two dims swapped."""
    nd = x._meta.ndim
    return O.transpose(x, perm=tuple(range(nd - 2)) + (nd - 1, nd - 2))


@register_backward("grouped_mm", save=["mat_a", "mat_b", "offs"])
def _grouped_mm(ctx, dy):
    # In each of the four layouts (jflow/ops/matmul.py) the gradients are grouped products
    # over the same offs: d mat_a = grouped_mm(dy, mat_b^T), d mat_b = grouped_mm(mat_a^T, dy)
    # (2-D 3-D: d mat_a is 2-D 3-D again, d mat_b 2-D 2-D; 3-D 2-D: 2-D 2-D and 3-D 2-D;
    # 2-D 2-D: 3-D 2-D and 2-D 3-D; 3-D 3-D: batched). Rows outside every group get zeros.
    # offs is an integer input: no gradient.
    a, b, offs = ctx.saved_tensors
    da = O.grouped_mm(dy, _mT(b), offs) if ctx.needs_input_grad[0] else None
    db = O.grouped_mm(_mT(a), dy, offs) if ctx.needs_input_grad[1] else None
    return (da, db) if offs is None else (da, db, None)
