"""Backward rules of the index ops (``jflow/ops/index.py``).

Gathers (``dim_gather``, ``index_select``, ``sort`` / ``topk`` values) send their gradient
back with a scatter-add into zeros; scatters send it on with a gather. Entries with an
out-of-range index read a fill value (gather) or are dropped (scatter) in the forward pass, so
they get / give no gradient. Index inputs are integers: their gradient is ``None``.

``dim_scatter`` is differentiable for every ``reduce``:

* ``'none'``: the input's gradient is ``dy`` with the written positions zeroed; ``src``'s is
  ``dy`` gathered at its target (as PyTorch: when several ``src`` entries target one position,
  which one is written is unspecified, and each gets that position's gradient). A 0-d ``src``
  (one value written everywhere) gets the sum of ``dy`` over the written positions, exactly.
* ``'add'``: the input's gradient is ``dy``; ``src``'s is ``dy`` gathered.
* ``'multiply'``: ``out[t] = input[t] * prod(src[i] -> t)``; the input's gradient is ``dy``
  times that product, ``src[i]``'s is ``dy[t] * input[t] * prod(src[j] -> t, j != i)``,
  computed without dividing by zero (zeros in ``src`` are counted per target, as PyTorch's
  ``scatter_reduce(reduce='prod')`` does); first and second derivatives are exact everywhere.
* ``'max'`` / ``'min'``: ``dy`` at a target is shared evenly among the entries that reach the
  extreme there (the input's own value and the ``src`` entries equal to the output), as
  PyTorch's ``scatter_reduce(reduce='amax' / 'amin')``.
"""

from __future__ import annotations

import numpy as np

from ..rule import register_backward
from ._util import O, scalar_like, sum_to


def _full(shape, value, dtype):
    return O.full(shape=tuple(shape), value=value, dtype=dtype)


def _axis(dim: int, ndim: int) -> int:
    return dim % ndim if ndim else 0


def _iota(shape, d):
    """An int64 index of ``shape`` holding each element's own position along axis ``d``."""
    n = shape[d]
    r = O.arange(start=0.0, end=float(n), step=1.0, dtype=np.int64)
    r = O.reshape(r, shape=tuple(n if i == d else 1 for i in range(len(shape))))
    return O.expand(r, shape=tuple(shape))


def _crop(t, shape, d):
    """The leading ``shape`` block of ``t`` (a gather with a positional index)."""
    if tuple(t._meta.shape) == tuple(shape):
        return t
    return O.dim_gather(t, _iota(shape, d), dim=d)


def _pad_to(g, shape, d):
    """``g`` in the leading block of a zero tensor of ``shape`` (the transpose of ``_crop``)."""
    gs = tuple(g._meta.shape)
    if gs == tuple(shape):
        return g
    return O.dim_scatter(_full(shape, 0.0, g._meta.dtype), _iota(gs, d), g, dim=d,
                         reduce="none")


def _in_range(index, size: int):
    """Bool mask of the index entries in [0, size)."""
    ge0 = O.ge(index, scalar_like(0, index))
    if size == 0:
        return O.logical_and(ge0, O.lt(index, scalar_like(0, index)))
    top = min(size - 1, int(np.iinfo(index._meta.dtype).max))
    return O.logical_and(ge0, O.le(index, scalar_like(top, index)))


# -- dim_gather --------------------------------------------------------------------------------

@register_backward("dim_gather", save=["index"])
def _dim_gather(ctx, dy):
    (index,) = ctx.saved_tensors
    zeros = _full(ctx.input_shapes[0], 0.0, ctx.input_dtypes[0])
    return O.dim_scatter(zeros, index, dy, dim=ctx.dim, reduce="add"), None


# -- dim_scatter -------------------------------------------------------------------------------

@register_backward("dim_scatter", save=["input", "index", "src", "output"])
def _dim_scatter(ctx, dy):
    x, index, src, out = ctx.saved_tensors
    reduce = ctx.reduce
    sx, si, ss = ctx.input_shapes
    d = _axis(ctx.dim, len(sx))
    need_x, need_src = ctx.needs_input_grad[0], ctx.needs_input_grad[2]
    dx = dsrc = None

    if reduce in ("max", "min"):
        return _extreme_grads(x, index, src, out, dy, si, ss, d, need_x, need_src)

    if need_x or (need_src and reduce == "none" and not ss):
        if reduce == "none":    # written positions take src: no gradient to input there
            dx = O.dim_scatter(dy, index, scalar_like(0.0, dy), dim=d, reduce="none")
        elif reduce == "add":
            dx = dy
        else:                   # 'multiply': out = input * (product of src scattered there)
            ones = _full(sx, 1.0, ctx.input_dtypes[0])
            dx = O.mul(dy, O.dim_scatter(ones, index, src, dim=d, reduce="multiply"))

    if need_src:
        if reduce == "none" and not ss:
            # one value written at every (distinct) target position
            dsrc = O.reduce_sum(O.sub(dy, dx))
        else:
            # per index entry: in range? and a safe index to gather with (masked afterwards)
            valid = _in_range(index, sx[d] if sx else 1)
            safe = O.where(valid, index, scalar_like(0, index))
            zero = scalar_like(0.0, dy)
            g = O.dim_gather(dy, safe, dim=d)
            if reduce == "multiply":
                g = O.mul(g, _prod_of_others(x, index, safe, src, out, si, ss, d))
            g = O.where(valid, g, zero)
            dsrc = O.reduce_sum(g) if not ss else _pad_to(g, ss, d)

    return (dx if need_x else None), None, dsrc


def _extreme_grads(x, index, src, out, dy, si, ss, d, need_x, need_src):
    """The gradients of ``dim_scatter`` with ``reduce='max'`` / ``'min'``: each target's
    ``dy`` divided by the number of its entries (input and src) equal to the output."""
    sx = tuple(x._meta.shape)
    valid = _in_range(index, sx[d] if sx else 1)
    safe = O.where(valid, index, scalar_like(0, index))
    s = _crop(src, si, d) if ss else O.expand(src, shape=tuple(si))
    one, zero = scalar_like(1.0, dy), scalar_like(0.0, dy)
    hit = O.logical_and(O.eq(s, O.dim_gather(out, safe, dim=d)), valid)
    x_hit = O.where(O.eq(x, out), one, zero)
    zeros = _full(sx, 0.0, dy._meta.dtype)
    count = O.add(x_hit, O.dim_scatter(zeros, index, O.where(hit, one, zero), dim=d,
                                       reduce="add"))
    share = O.div(dy, O.where(O.eq(count, zero), one, count))
    dx = O.mul(share, x_hit) if need_x else None
    dsrc = None
    if need_src:
        g = O.where(hit, O.dim_gather(share, safe, dim=d), zero)
        dsrc = O.reduce_sum(g) if not ss else _pad_to(g, ss, d)
    return dx, None, dsrc


def _prod_of_others(x, index, safe, src, out, si, ss, d):
    """For each index entry i (target t): ``input[t] * prod(src[j] -> t, j != i)``, without
    dividing by zero (as PyTorch's ``scatter_reduce(reduce='prod')`` backward). With
    ``P[t] = input[t] * prod(nonzero src -> t)`` and ``Z[t]`` zero src entries sent to t:

    * ``src[i] != 0``: ``out[t] / src[i]``;
    * ``src[i] == 0``, ``Z[t] == 1``: ``P[t]``;
    * ``src[i] == 0``, ``Z[t] == 2``: ``P[t] * (the other zero entry)`` — 0, written so that
      its derivative (a second derivative of the op) is right;
    * otherwise 0.

    So first and second derivatives are exact everywhere (PyTorch raises on the double
    backward where two zeros meet at one target)."""
    s = _crop(src, si, d) if ss else O.expand(src, shape=tuple(si))
    one, zero = scalar_like(1.0, s), scalar_like(0.0, s)
    two = scalar_like(2.0, s)
    is_zero = O.eq(s, zero)
    s_safe = O.where(is_zero, one, s)
    zeros = _full(x._meta.shape, 0.0, x._meta.dtype)

    def at_entries(t):
        return O.dim_gather(t, safe, dim=d)

    n_zero = at_entries(O.dim_scatter(zeros, index, O.where(is_zero, one, zero), dim=d,
                                      reduce="add"))
    prod_nz = at_entries(O.dim_scatter(x, index, s_safe, dim=d, reduce="multiply"))
    # sum of the zero entries sent to each target, minus the entry itself: the other zero
    other_zero = O.sub(at_entries(O.dim_scatter(zeros, index, O.where(is_zero, s, zero), dim=d,
                                                reduce="add")), O.where(is_zero, s, zero))
    at_zero = O.where(O.eq(n_zero, one), prod_nz,
                      O.where(O.eq(n_zero, two), O.mul(prod_nz, other_zero), zero))
    return O.where(is_zero, at_zero, O.div(at_entries(out), s_safe))


# -- index_select ------------------------------------------------------------------------------

@register_backward("index_select", save=["index"])
def _index_select(ctx, dy):
    (index,) = ctx.saved_tensors
    sx = ctx.input_shapes[0]
    zeros = _full(sx, 0.0, ctx.input_dtypes[0])
    if not sx:  # 0-d input: one index element, 0-d output
        return O.dim_scatter(zeros, O.reshape(index, shape=()), dy, dim=0, reduce="add"), None
    d = _axis(ctx.dim, len(sx))
    sy = tuple(dy._meta.shape)
    n = sy[d]
    return O.index_add(zeros, O.reshape(index, shape=(n,)), dy, dim=d), None


# -- index_add ---------------------------------------------------------------------------------

@register_backward("index_add", save=["index"])
def _index_add(ctx, dy):
    """Linear in (input, src): input's gradient is dy; src's is dy at the indexed slices
    (index_select), 0 for an out-of-range index, whose slice was dropped."""
    (index,) = ctx.saved_tensors
    shape = tuple(ctx.input_shapes[0])
    d = _axis(ctx.dim, len(shape))
    dsrc = None
    if ctx.needs_input_grad[2]:
        dsrc = O.index_select(dy, index, dim=d)
        valid = O.logical_and(O.ge(index, scalar_like(0, index)),
                              O.lt(index, scalar_like(shape[d], index)))
        valid = O.reshape(valid, shape=tuple(-1 if i == d else 1 for i in range(len(shape))))
        dsrc = O.where(valid, dsrc, scalar_like(0.0, dsrc))
    return dy if ctx.needs_input_grad[0] else None, None, dsrc


# -- masked_fill -------------------------------------------------------------------------------

@register_backward("masked_fill", save=["mask"])
def _masked_fill(ctx, dy):
    (mask,) = ctx.saved_tensors
    zero = scalar_like(0.0, dy)
    dx = dv = None
    if ctx.needs_input_grad[0]:
        dx = sum_to(O.where(mask, zero, dy), ctx.input_shapes[0])
    if ctx.needs_input_grad[2]:
        dv = O.reduce_sum(O.where(mask, dy, zero))
    return dx, None, dv


# -- sort / topk -------------------------------------------------------------------------------

def _scatter_values_back(ctx, dv, indices):
    zeros = _full(ctx.input_shapes[0], 0.0, ctx.input_dtypes[0])
    return O.dim_scatter(zeros, indices, dv, dim=_axis(ctx.dim, len(ctx.input_shapes[0])),
                         reduce="add")


@register_backward("sort", save=["indices"])
def _sort(ctx, dvalues, dindices):
    (indices,) = ctx.saved_tensors
    return _scatter_values_back(ctx, dvalues, indices)


@register_backward("topk", save=["indices"])
def _topk(ctx, dvalues, dindices):
    (indices,) = ctx.saved_tensors
    return _scatter_values_back(ctx, dvalues, indices)
