"""Backward rules of the reductions (``jflow/ops/reduce.py``)."""

from __future__ import annotations

import math

import numpy as np

from ..rule import register_backward
from ._util import O, scalar_like, zeros_like


def _axes(ctx) -> tuple[int, ...]:
    nd = len(ctx.input_shapes[0])
    axis = ctx.axis
    return tuple(range(nd)) if not axis else tuple(a % nd for a in axis) if nd else ()


def expand_back(ctx, dy):
    """A reduced gradient broadcast back to the input's shape."""
    shape = ctx.input_shapes[0]
    kept = tuple(1 if i in _axes(ctx) else s for i, s in enumerate(shape))
    if tuple(dy._meta.shape) != kept:
        dy = O.reshape(dy, shape=kept)
    return O.expand(dy, shape=shape) if kept != tuple(shape) else dy


@register_backward("reduce_sum")
def _sum(ctx, dy):
    return expand_back(ctx, dy)


@register_backward("reduce_mean")
def _mean(ctx, dy):
    shape = ctx.input_shapes[0]
    n = 1
    for a in _axes(ctx):
        n *= shape[a]
    return O.mul(expand_back(ctx, dy), scalar_like(1.0 / max(n, 1), dy))


# -- helpers -----------------------------------------------------------------------------------

def _c(v: float, like):  # a cached 0-d constant of like's dtype
    return scalar_like(v, like)


def _count(mask, like, axis):
    """Number of True entries of ``mask`` over ``axis`` (kept dims), in ``like``'s dtype."""
    return O.reduce_sum(O.cast(mask, dtype=like._meta.dtype), axis=axis, keepdim=True)


def _isnan(t):
    return O.ne(t, t)


def _even_split(ctx, x, y, dy):
    """Gradient of max/min over ``ctx.axis``: ``dy`` split evenly among the entries equal to
    the extremum (as torch.amax / amin); a nan result sends it to the nans."""
    ye = expand_back(ctx, y)
    mask = O.logical_or(O.eq(x, ye), O.logical_and(_isnan(x), _isnan(ye)))
    share = O.div(expand_back(ctx, dy), O.expand(_count(mask, x, _axes(ctx)),
                                                 shape=tuple(x._meta.shape)))
    return O.where(mask, share, _c(0.0, dy))


# -- reductions over an axis list --------------------------------------------------------------

@register_backward("reduce_max", save=["x", "y"])
def _max(ctx, dy):
    x, y = ctx.saved_tensors
    return _even_split(ctx, x, y, dy)


@register_backward("reduce_min", save=["x", "y"])
def _min(ctx, dy):
    x, y = ctx.saved_tensors
    return _even_split(ctx, x, y, dy)


@register_backward("reduce_prod", save=["x", "y"])
def _prod(ctx, dy):
    """d prod / d x_i = the product of the others, correct with zeros (no division by zero):
    a nonzero x_i gets y / x_i; a zero x_i gets P times the other zeros of its group, P the
    product of the nonzero entries: P if it is the only zero, P * (the other zero) if there are
    two (0, written so that its derivative is right), else 0. Second derivatives are therefore
    exact too, as PyTorch's."""
    x, y = ctx.saved_tensors
    axes = _axes(ctx)
    shape = tuple(x._meta.shape)
    zero = O.eq(x, _c(0.0, x))
    one = _c(1.0, x)
    x_safe = O.where(zero, one, x)
    others = O.div(expand_back(ctx, y), x_safe)  # exact for a nonzero x_i
    p_nz = O.reduce_prod(x_safe, axis=axes, keepdim=True)  # product of the nonzero entries
    nz = _count(zero, x, axes)
    zsum = O.reduce_sum(O.where(zero, x, _c(0.0, x)), axis=axes, keepdim=True)  # 0
    other_zero = O.sub(O.expand(zsum, shape=shape), x)  # the other zero when there are two
    q = O.where(O.expand(O.eq(nz, one), shape=shape), one,
                O.where(O.expand(O.eq(nz, _c(2.0, x)), shape=shape), other_zero, _c(0.0, x)))
    at_zero = O.mul(O.expand(p_nz, shape=shape), q)
    return O.mul(expand_back(ctx, dy), O.where(zero, at_zero, others))


@register_backward("reduce_logsumexp", save=["x", "y"])
def _logsumexp(ctx, dy):
    x, y = ctx.saved_tensors
    return O.mul(expand_back(ctx, dy), O.exp(O.sub(x, expand_back(ctx, y))))


@register_backward("reduce_var", save=["x"])
def _var(ctx, dy):
    """2 (x - mean) / max(n - correction, 0); n <= correction divides by zero (inf/nan, as
    torch)."""
    (x,) = ctx.saved_tensors
    axes = _axes(ctx)
    shape = ctx.input_shapes[0]
    n = 1
    for a in axes:
        n *= shape[a]
    d = O.sub(x, O.reduce_mean(x, axis=axes, keepdim=True))
    scale = O.div(_c(2.0, x), _c(max(n - float(ctx.correction), 0.0), x))
    return O.mul(O.mul(expand_back(ctx, dy), d), scale)


@register_backward("reduce_norm", save=["x", "y"])
def _norm(ctx, dy):
    """Gradient of the vector p-norm (torch.linalg.vector_norm); 0 where the norm is 0 and, for
    p != 2, at zero entries (the subgradient 0). ord 0 has zero gradient; +-inf split evenly
    among the tied extreme |x| (as torch)."""
    x, y = ctx.saved_tensors
    p = ctx.ord
    zero = _c(0.0, x)
    if p == 0:
        return O.mul(O.mul(x, zero), expand_back(ctx, dy))
    if p == 1:
        return O.mul(expand_back(ctx, dy), O.sign(x))
    if math.isinf(p):
        return O.mul(_even_split(ctx, O.abs(x), y, dy), O.sign(x))
    ye = expand_back(ctx, y)
    y0 = O.eq(ye, zero)
    y_safe = O.where(y0, _c(1.0, x), ye)
    if p == 2:  # x / y; at y == 0 all of the group is 0
        return O.where(y0, zero, O.mul(expand_back(ctx, dy), O.div(x, y_safe)))
    # sign(x) |x|^(p-1) / y^(p-1)
    x0 = O.eq(x, zero)
    ax_safe = O.where(x0, _c(1.0, x), O.abs(x))
    pm1 = _c(p - 1.0, x)
    num = O.mul(O.sign(x), O.pow(ax_safe, pm1))
    g = O.div(O.mul(expand_back(ctx, dy), num), O.pow(y_safe, pm1))
    return O.where(O.logical_or(x0, y0), zero, g)


# -- max / min with indices along one axis -------------------------------------------------------

def _dim_backward(ctx, dy, _):
    """dy sent to the selected index (PyTorch's max(x, dim)): where(iota == index, dy, 0)."""
    (idx,) = ctx.saved_tensors
    shape = tuple(ctx.input_shapes[0])
    nd = len(shape)
    if nd == 0:
        return dy
    a = ctx.axis % nd
    kept = tuple(1 if i == a else s for i, s in enumerate(shape))
    if tuple(idx._meta.shape) != kept:
        idx = O.reshape(idx, shape=kept)
        dy = O.reshape(dy, shape=kept)
    iota = O.arange(start=0.0, end=float(shape[a]), step=1.0, dtype=idx._meta.dtype)
    iota = O.reshape(iota, shape=tuple(shape[a] if i == a else 1 for i in range(nd)))
    mask = O.eq(O.expand(idx, shape=shape), O.expand(iota, shape=shape))
    return O.where(mask, O.expand(dy, shape=shape), _c(0.0, dy))


register_backward("max_dim", save=["indices"])(_dim_backward)
register_backward("min_dim", save=["indices"])(_dim_backward)
# the order statistics: dy to the selected entry, as PyTorch's (a tie's other entries get 0)
for _name in ("kthvalue", "median_dim", "mode"):
    register_backward(_name, save=["indices"])(_dim_backward)


# -- scans -------------------------------------------------------------------------------------

def _rev_cumsum(t, dim):
    """sum_{j >= i} t_j along dim (flip, cumsum, flip)."""
    if t._meta.ndim == 0:
        return t
    return O.flip(O.cumsum(O.flip(t, axes=(dim,)), dim=dim), axes=(dim,))


@register_backward("cumsum")
def _cumsum(ctx, dy):
    return _rev_cumsum(dy, ctx.dim)


@register_backward("cumprod", save=["x", "y"])
def _cumprod(ctx, dy):
    """dx_k = sum_{i >= k} dy_i prod_{j <= i, j != k} x_j, correct with zeros (no division by
    zero). With z the first zero along dim, x' = x with x_z = 1 and R = revcumsum(dy *
    cumprod(x')): k < z gets revcumsum(dy y)_k / x_k; k == z gets R_z; k > z gets
    x_z R_k / x_k (0, written so that its derivative is right) up to the second zero, and 0
    from it on. Second derivatives are exact when a slice holds at most one zero; with more,
    those with respect to the second and later zeros are given as 0."""
    x, y = ctx.saved_tensors
    if x._meta.ndim == 0:
        return dy
    dim = ctx.dim
    zero = O.eq(x, _c(0.0, x))
    nzeros = O.cumsum(O.cast(zero, dtype=np.int64), dim=dim)  # zeros up to and including i
    before = O.eq(nzeros, scalar_like(0, nzeros))
    one_zero = O.eq(nzeros, scalar_like(1, nzeros))
    first = O.logical_and(zero, one_zero)
    after = O.logical_and(O.logical_not(zero), one_zero)  # past the first zero, before another
    one, zero_c = _c(1.0, x), _c(0.0, x)
    g_before = O.div(_rev_cumsum(O.mul(dy, y), dim), O.where(before, x, one))
    g_first = _rev_cumsum(O.mul(dy, O.cumprod(O.where(first, one, x), dim=dim)), dim)
    x_z = O.reduce_sum(O.where(first, x, zero_c), axis=(dim,), keepdim=True)  # 0
    g_after = O.mul(x_z, O.div(g_first, O.where(after, x, one)))
    return O.where(before, g_before,
                   O.where(first, g_first, O.where(after, g_after, zero_c)))


def _cumext_backward(ctx, dy, _):
    """Each output's gradient goes to the input it copied (torch: scatter_add of dy at the
    indices along dim); an entry that stays the running extremum collects several."""
    (idx,) = ctx.saved_tensors
    if idx._meta.ndim == 0:
        return dy
    return O.dim_scatter(zeros_like(dy), idx, dy, dim=ctx.dim % idx._meta.ndim, reduce="add")


register_backward("cummax", save=["indices"])(_cumext_backward)
register_backward("cummin", save=["indices"])(_cumext_backward)


@register_backward("logcumsumexp", save=["x", "y"])
def _logcumsumexp(ctx, dy):
    """dx_j = sum_{i >= j} dy_i exp(x_j - y_i) as a masked (n, n) weight per slice: every
    exponent is <= 0 (y_i >= x_j), so nothing overflows, and the rule is linear in dy (JAX's
    forward mode linearizes it at dy = 0, which PyTorch's log|dy| form cannot survive). The
    cost is quadratic in the scanned length; a -inf entry gets 0 (its finite difference)."""
    x, y = ctx.saved_tensors
    shape = tuple(x._meta.shape)
    if not shape or 0 in shape:
        return dy
    d = ctx.dim % len(shape)
    n = shape[d]
    rows = shape[:d] + (n, 1) + shape[d + 1:]  # i (the output) on axis d
    cols = shape[:d] + (1, n) + shape[d + 1:]  # j (the input) on axis d + 1
    iota = O.arange(start=0.0, end=float(n), step=1.0, dtype=np.int64)
    i_ = O.reshape(iota, shape=tuple(n if a == d else 1 for a in range(len(rows))))
    j_ = O.reshape(iota, shape=tuple(n if a == d + 1 else 1 for a in range(len(rows))))
    xj = O.reshape(x, shape=cols)
    live = O.logical_and(O.le(j_, i_), O.ne(xj, _c(-math.inf, x)))
    e = O.where(live, O.sub(xj, O.reshape(y, shape=rows)), _c(-math.inf, x))
    w = O.mul(O.exp(e), O.reshape(dy, shape=rows))
    return O.reshape(O.reduce_sum(w, axis=(d,), keepdim=False), shape=shape)
