"""Backward rules of the norm ops (``jflow/ops/norm.py``), batch_norm included.

Each rule also takes the gradients of the statistics outputs (zeros when they got none), so
``mean`` / ``inv_std`` / ``inv_rms`` are differentiable outputs like ``y``.
"""

from __future__ import annotations

import math

import numpy as np

from ..rule import register_backward
from ._util import O, scalar_like


def _present(ctx, n_inputs):
    """Which of the op's declared inputs were given (optional weight / bias)."""
    lay = ctx.layout
    return [True] * n_inputs if lay is None else [bool(k) for k in lay]


def _normalize_backward(x, mean, r, g, dmean, dr, axes, bshape, n):
    """Gradient of x for y = xhat with xhat = (x - mean) * r, given its gradient ``g`` and
    those of the statistics (mean and r, of shape ``bshape`` after reshape)."""
    r_b = O.reshape(r, shape=bshape)
    xhat = O.mul(O.sub(x, O.reshape(mean, shape=bshape)), r_b)
    inner = O.add(O.mul(xhat, O.reduce_mean(O.mul(g, xhat), axis=axes, keepdim=True)),
                  O.reduce_mean(g, axis=axes, keepdim=True))
    dx = O.mul(r_b, O.sub(g, inner))
    inv_n = scalar_like(1.0 / n if n else 0.0, x)
    # d r / d x = -r^3 (x - mean) / n = -r^2 xhat / n
    dr_b = O.reshape(dr, shape=bshape)
    dx = O.sub(dx, O.mul(O.mul(dr_b, O.mul(r_b, r_b)), O.mul(xhat, inv_n)))
    dx = O.add(dx, O.mul(O.reshape(dmean, shape=bshape), inv_n))
    return dx, xhat


def _float32(*ts):
    """Half-precision tensors in float32, the dtype the forward kernels compute in (and
    PyTorch's CPU kernels accumulate these gradients in); None and wider ones as they are."""
    return [t if t is None or t._meta.dtype.itemsize >= 4 else O.cast(t, dtype=np.float32)
            for t in ts]


def _as_inputs(ctx, grads):
    """``grads`` (one per input, or None) cast back to the inputs' dtypes."""
    return [g if g is None or g._meta.dtype == dt else O.cast(g, dtype=dt)
            for g, dt in zip(grads, ctx.input_dtypes)]


def _sum_lead(t, b):
    return O.reduce_sum(t, axis=tuple(range(b)), keepdim=False) if b else t


@register_backward("layer_norm", save=["x", "weight", "mean", "inv_std"])
def _layer_norm(ctx, dy, dmean, dr):
    """One layer_norm_grad op (a Pallas kernel on GPU) gives dx, dweight and dbias."""
    x, w, mean, r = ctx.saved_tensors
    has = _present(ctx, 3)
    dx, dw, db = O.layer_norm_grad(x, mean, r, dy, dmean, dr, w,
                                   begin_norm_axis=ctx.begin_norm_axis)
    grads = [dx]
    if has[1]:
        grads.append(dw)
    if has[2]:
        grads.append(db)
    return grads


@register_backward("rms_norm", save=["x", "weight", "inv_rms"])
def _rms_norm(ctx, dy, dr):
    """One rms_norm_grad op (a Pallas kernel on GPU) gives dx and dweight."""
    x, w, r = ctx.saved_tensors
    has = _present(ctx, 2)
    dx, dw = O.rms_norm_grad(x, r, dy, dr, w, begin_norm_axis=ctx.begin_norm_axis)
    return [dx, dw] if has[1] else [dx]


def _norm_grad_backward(ctx, x, mean, r, dy, dr, w, gx, gw, gb, centered):
    """Gradients of the grad op's inputs. Its outputs, per normalised row of n elements,
    with xhat = (x - mean) r (or x r), g = dy w, A = mean(g xhat), M = mean(g):
    dx = r (g - xhat A - M) - dr r^2 xhat / n + dmean / n, dw = sum_rows dy xhat,
    db = sum_rows dy. Returns (x, mean, r, dy, dmean, dr, w) grads (mean/dmean None when
    not centered)."""
    shape = tuple(ctx.input_shapes[0])
    b = ctx.begin_norm_axis
    axes = tuple(range(b, len(shape)))
    bshape = shape[:b] + (1,) * len(axes)
    n = math.prod(shape[b:])
    inv_n = scalar_like(1.0 / n if n else 0.0, x)
    rb = O.reshape(r, shape=bshape)
    xc = O.sub(x, O.reshape(mean, shape=bshape)) if centered else x
    xhat = O.mul(xc, rb)
    g = dy if w is None else O.mul(dy, w)

    def rmean(t):
        return O.reduce_mean(t, axis=axes, keepdim=True)

    def rsum(t):
        return O.reduce_sum(t, axis=axes, keepdim=True)

    a = rmean(O.mul(g, xhat))
    b1 = rmean(O.mul(gx, xhat))
    b0 = rmean(gx) if centered else None
    drb = O.reshape(dr, shape=bshape)
    # d/dg (holding xhat, r): r (gx - xhat B1 - B0)
    inner = O.mul(xhat, b1)
    if centered:
        inner = O.add(inner, b0)
    hg = O.mul(rb, O.sub(gx, inner))
    # d/dxhat (holding g, r), plus dweight's and dbias' parts
    hxhat = O.neg(O.add(O.mul(O.mul(rb, a), gx), O.mul(O.mul(rb, b1), g)))
    hxhat = O.sub(hxhat, O.mul(O.mul(O.mul(drb, O.mul(rb, rb)), inv_n), gx))
    hxhat = O.add(hxhat, O.mul(gw, dy))
    # d/dr (holding g, xhat)
    core = O.sub(g, O.mul(xhat, a))
    if centered:
        core = O.sub(core, rmean(g))
    hr = O.sub(rsum(O.mul(gx, core)),
               O.mul(O.mul(O.mul(drb, rb), scalar_like(2.0, x)), b1))
    hr = O.add(hr, rsum(O.mul(hxhat, xc)))
    lead_shape = shape[:b]
    gr = O.reshape(hr, shape=lead_shape)
    gxin = O.mul(hxhat, rb)
    gmean = O.reshape(O.neg(rsum(gxin)), shape=lead_shape) if centered else None
    gdy = O.add(O.add(hg if w is None else O.mul(hg, w), O.mul(gw, xhat)), gb)
    gdr = O.reshape(O.neg(O.mul(O.mul(rb, rb), b1)), shape=lead_shape)
    gdmean = O.reshape(b0, shape=lead_shape) if centered else None
    gw_in = None
    if w is not None:
        t = O.mul(hg, dy)
        gw_in = O.reduce_sum(t, axis=tuple(range(b)), keepdim=False) if b else t
    return gxin, gmean, gr, gdy, gdmean, gdr, gw_in


@register_backward("layer_norm_grad", save=["x", "mean", "inv_std", "dy", "dinv_std", "weight"])
def _layer_norm_grad(ctx, gx, gw, gb):
    x, mean, r, dy, dr, w = ctx.saved_tensors
    outs = _norm_grad_backward(ctx, x, mean, r, dy, dr, w, gx, gw, gb, True)
    grads = list(outs[:6])
    if _present(ctx, 7)[6]:
        grads.append(outs[6])
    return grads


@register_backward("rms_norm_grad", save=["x", "inv_rms", "dy", "dinv_rms", "weight"])
def _rms_norm_grad(ctx, gx, gw):
    x, r, dy, dr, w = ctx.saved_tensors
    zero_b = scalar_like(0.0, x)
    gxin, _, gr, gdy, _, gdr, gw_in = _norm_grad_backward(ctx, x, None, r, dy, dr, w, gx, gw,
                                                          zero_b, False)
    grads = [gxin, gr, gdy, gdr]
    if _present(ctx, 5)[4]:
        grads.append(gw_in)
    return grads


@register_backward("group_norm", save=["x", "weight", "mean", "inv_std"])
def _group_norm(ctx, dy, dmean, dr):
    x, w, mean, r, dy, dmean, dr = _float32(*ctx.saved_tensors, dy, dmean, dr)
    has = _present(ctx, 3)
    shape = tuple(ctx.input_shapes[0])
    n, c, g = shape[0], shape[1], ctx.num_groups
    m = math.prod(shape[1:]) // g if g else 0
    pshape = (1, c) + (1,) * (len(shape) - 2)
    gy = dy if w is None else O.mul(dy, O.reshape(w, shape=pshape))
    xg = O.reshape(x, shape=(n, g, m))
    dxg, xhat = _normalize_backward(xg, mean, r, O.reshape(gy, shape=(n, g, m)), dmean, dr,
                                    (2,), (n, g, 1), m)
    grads = [O.reshape(dxg, shape=shape)]
    red = (0,) + tuple(range(2, len(shape)))
    if has[1]:
        grads.append(O.reduce_sum(O.mul(dy, O.reshape(xhat, shape=shape)), axis=red,
                                  keepdim=False))
    if has[2]:
        grads.append(O.reduce_sum(dy, axis=red, keepdim=False))
    return _as_inputs(ctx, grads)


@register_backward("batch_norm", save=["x", "weight", "mean", "inv_std"])
def _batch_norm(ctx, dy, dmean, dr):
    """PyTorch's CPU formula, its per-channel factors first: with d = x - mean, r = inv_std,
    a = r * weight, the sums S = sum(dy) and D = sum(dy * d) over every axis but 1, and n
    values per channel::

        dx = dy * a + d * b + c,  b = -(a r^2 D + dr r^3) / n,  c = (dmean - a S) / n
        dweight = D * r,  dbias = S

    — the statistics' own gradients (dmean, dr: zeros unless the outputs mean / inv_std
    were used) enter only the per-channel b and c, and the full-size work is two reductions
    and one elementwise pass (the op-by-op form, r * (dy w - xhat mean(dy w xhat) -
    mean(dy w)), ran 3.6 against 2.3 ms for a (32, 16, 32, 32) batch on XLA CPU:
    benchmarks/results_ecosystem_models_cpu.txt, session 27)."""
    x, w, mean, r, dy, dmean, dr = _float32(*ctx.saved_tensors, dy, dmean, dr)
    has = _present(ctx, 3)
    shape = tuple(ctx.input_shapes[0])
    c = shape[1]
    axes = (0,) + tuple(range(2, len(shape)))
    bshape = (1, c) + (1,) * (len(shape) - 2)
    n = math.prod(shape) // c if c else 0
    inv_n = scalar_like(1.0 / n if n else 0.0, r)
    d = O.sub(x, O.reshape(mean, shape=bshape))
    total = O.reduce_sum(dy, axis=axes, keepdim=False)
    dot = O.reduce_sum(O.mul(dy, d), axis=axes, keepdim=False)
    a = r if w is None else O.mul(r, w)
    r2 = O.mul(r, r)
    b = O.neg(O.mul(O.add(O.mul(O.mul(a, r2), dot), O.mul(O.mul(dr, r2), r)), inv_n))
    cst = O.mul(O.sub(dmean, O.mul(a, total)), inv_n)
    dx = O.add(O.add(O.mul(dy, O.reshape(a, shape=bshape)), O.mul(d, O.reshape(b, shape=bshape))),
               O.reshape(cst, shape=bshape))
    grads = [dx]
    if has[1]:
        grads.append(O.mul(dot, r))
    if has[2]:
        grads.append(total)
    return _as_inputs(ctx, grads)
