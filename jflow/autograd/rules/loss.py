"""Backward rules of the loss ops (``jflow/ops/loss.py``)."""

from __future__ import annotations

from ..rule import register_backward
from ._util import O, scalar_like, sum_to


@register_backward("mse_loss", save=["x", "target"])
def _mse_loss(ctx, dy):
    """2 (x - t) dy, to x and (negated) to target."""
    x, t = ctx.saved_tensors
    g = O.mul(O.mul(dy, O.sub(x, t)), scalar_like(2.0, dy))
    return [sum_to(g, ctx.input_shapes[0]) if ctx.needs_input_grad[0] else None,
            sum_to(O.neg(g), ctx.input_shapes[1]) if ctx.needs_input_grad[1] else None]


@register_backward("l1_loss", save=["x", "target"])
def _l1_loss(ctx, dy):
    """sign(x - t) dy (0 where x == t, as PyTorch), to x and (negated) to target."""
    x, t = ctx.saved_tensors
    g = O.mul(dy, O.sign(O.sub(x, t)))
    return [sum_to(g, ctx.input_shapes[0]) if ctx.needs_input_grad[0] else None,
            sum_to(O.neg(g), ctx.input_shapes[1]) if ctx.needs_input_grad[1] else None]


def _softplus_neg(x):
    """log(1 + exp(-x)), stable."""
    return O.add(O.log1p(O.exp(O.neg(O.abs(x)))), O.relu(O.neg(x)))


@register_backward("binary_cross_entropy_with_logits", save=["x", "target", "weight",
                                                             "pos_weight"])
def _bce_with_logits(ctx, dy):
    """l = (1 - t) x + lw sp(-x), lw = 1 + (pw - 1) t, times w:
    dl/dx = (1 - t) - lw sigmoid(-x); dl/dt = -x + (pw - 1) sp(-x); dl/dpw = t sp(-x)."""
    x, t, w, pw = ctx.saved_tensors
    lay = ctx.layout or (1, 1, 1, 1)
    one = scalar_like(1.0, x)
    g = dy if w is None else O.mul(dy, w)
    sp = _softplus_neg(x)
    lw = one if pw is None else O.add(one, O.mul(O.sub(pw, one), t))
    shapes = list(ctx.input_shapes)
    grads = [sum_to(O.mul(g, O.sub(O.sub(one, t), O.mul(lw, O.sigmoid(O.neg(x))))), shapes[0])]
    dt = O.neg(x) if pw is None else O.add(O.neg(x), O.mul(O.sub(pw, one), sp))
    grads.append(sum_to(O.mul(g, dt), shapes[1]))
    k = 2
    if lay[2]:
        unweighted = O.add(O.mul(O.sub(one, t), x), O.mul(lw, sp))
        grads.append(sum_to(O.mul(dy, unweighted), shapes[k]))
        k += 1
    if lay[3]:
        grads.append(sum_to(O.mul(g, O.mul(t, sp)), shapes[k]))
    return grads


@register_backward("nll_loss", save=["x", "target", "target_weight"])
def _nll_loss(ctx, dloss, dwt):
    """dx = -w[t] dloss at the target class; dweight[c] = sum over elements with t == c of
    (-x[t] dloss + d target_weight)."""
    x, target, wt = ctx.saved_tensors
    xs = tuple(ctx.input_shapes[0])
    nd = len(xs)
    c = xs[0] if nd == 1 else xs[1]
    dt = ctx.input_dtypes[0]
    tdt = ctx.input_dtypes[1]
    ignore = O.full(shape=(), value=float(ctx.ignore_index), dtype=tdt)
    valid = O.ne(target, ignore)
    t = O.where(valid, target, O.full(shape=(), value=-1.0, dtype=tdt))
    oh = O.one_hot(t, num_classes=c, dtype=dt)          # target.shape + (C,); 0 where ignored
    if nd > 2:  # (N, d..., C) -> (N, C, d...)
        oh_x = O.transpose(oh, perm=(0, nd - 1) + tuple(range(1, nd - 1)))
    else:
        oh_x = oh
    axis = 0 if nd == 1 else 1
    grads = [O.mul(oh_x, O.unsqueeze(O.neg(O.mul(wt, dloss)), dim=axis)), None]
    if len(ctx.input_shapes) == 3:
        xt = O.reduce_sum(O.mul(x, oh_x), axis=(axis,), keepdim=False)
        dwt_total = O.add(O.neg(O.mul(xt, dloss)), dwt)
        per = O.mul(oh, O.unsqueeze(dwt_total, dim=nd - 1))
        grads.append(O.reduce_sum(per, axis=tuple(range(nd - 1)), keepdim=False)
                     if nd > 1 else per)
    return grads
