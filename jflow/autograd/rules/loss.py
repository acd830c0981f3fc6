"""Backward rules of the loss ops (``jflow/ops/loss.py``)."""

from __future__ import annotations

from ..grad_mode import is_grad_enabled
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


@register_backward("sparse_softmax_cross_entropy", save=["logits", "labels", "lse"])
def _sparse_softmax_cross_entropy(ctx, dloss, dlse):
    """One sparse_softmax_cross_entropy_grad op (the softmax is never kept: exp(x - lse))."""
    x, labels, lse = ctx.saved_tensors
    return [O.sparse_softmax_cross_entropy_grad(x, labels, lse, dloss, dlse,
                                                ignore_index=ctx.ignore_index), None]


@register_backward("sparse_softmax_cross_entropy_grad", save=["logits", "labels", "lse", "dloss",
                                                              "dlse"])
def _sparse_softmax_cross_entropy_grad(ctx, g):
    """out = p * c - onehot * dl, p = exp(x - lse), c = dl + dlse, dl = dloss * valid:
    to x g p c; to lse -sum(g p c); to dloss (sum(g p) - g[label]) * valid; to dlse sum(g p)."""
    x, labels, lse, dloss, dlse = ctx.saved_tensors
    n, v = tuple(ctx.input_shapes[0])
    dt = ctx.input_dtypes[0]
    tdt = ctx.input_dtypes[1]
    cast = (lambda t: t if t._meta.dtype == dt else O.cast(t, dtype=dt))  # noqa: E731
    valid = O.cast(O.ne(labels, O.full(shape=(), value=float(ctx.ignore_index), dtype=tdt)),
                   dtype=dt)
    dl = O.mul(cast(dloss), valid)
    c = O.add(dl, cast(dlse))
    p = O.exp(O.sub(x, O.reshape(cast(lse), shape=(n, 1))))
    gp = O.mul(g, p)
    gx = O.mul(gp, O.reshape(c, shape=(n, 1)))
    sum_gp = O.reduce_sum(gp, axis=(1,), keepdim=False)
    t = O.where(O.ne(valid, scalar_like(0.0, valid)), labels,
                O.full(shape=(), value=-1.0, dtype=tdt))
    g_label = O.reduce_sum(O.mul(g, O.one_hot(t, num_classes=v, dtype=dt)), axis=(1,),
                           keepdim=False)
    back = (lambda t_, i: t_ if t_._meta.dtype == ctx.input_dtypes[i]  # noqa: E731
            else O.cast(t_, dtype=ctx.input_dtypes[i]))
    need = ctx.needs_input_grad
    return [gx if need[0] else None, None,
            back(O.neg(O.reduce_sum(gx, axis=(1,), keepdim=False)), 2) if need[2] else None,
            back(O.mul(O.sub(sum_gp, g_label), valid), 3) if need[3] else None,
            back(sum_gp, 4) if need[4] else None]


@register_backward("ctc_loss", save=["log_probs", "targets", "input_lengths", "target_lengths"])
def _ctc_loss(ctx, dloss):
    """d loss_n / d log_probs[:, n, :] (one ctc_loss_grad op: JAX's vjp of the forward scan)
    times dloss[n]; none to the integer inputs. The derivative itself is not differentiable:
    a second derivative (create_graph) raises, as PyTorch's ctc_loss."""
    lp, tg, il, tl = ctx.saved_tensors
    if is_grad_enabled() and lp.requires_grad:
        raise NotImplementedError("ctc_loss: second derivatives in log_probs are not supported "
                                  "(as PyTorch's ctc_loss double backward)")
    unit = O.ctc_loss_grad(lp, tg, il, tl, blank=ctx.blank)
    n = tuple(ctx.input_shapes[0])[1]
    return [O.mul(unit, O.reshape(dloss, shape=(1, n, 1))), None, None, None]
