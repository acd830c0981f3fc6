"""Backward rules of the attention ops (``jflow/ops/attention.py``).

``scaled_dot_product_attention``'s rule calls the fused gradient op
``scaled_dot_product_attention_grad`` (probabilities recomputed from ``lse``; no ``(L, S)``
matrix is kept between forward and backward). The gradient of a float ``attn_mask`` — rarely
wanted — is computed here with jflow ops on the materialised probabilities, only when the mask
requires grad.

The gradient op's own rule (second-order derivatives) is written with jflow ops on the
materialised ``(L, S)`` probabilities: with ``s = scale * q k^T + mask``, ``p = exp(s - lse)``,
``dp = dout v^T``, ``delta = rowsum(dout * out) - dlse``, ``ds = p * (dp - delta)`` the op
computes ``dq = scale ds k``, ``dk = scale ds^T q``, ``dv = p^T dout``, and the rule is the
chain rule through those lines. Every op used has a rule, so any order works.
"""

from __future__ import annotations

import numpy as np

from ..rule import register_backward
from ._util import O, scalar_like, sum_to


def _cast(t, dt):
    return t if t is None or np.dtype(t._meta.dtype) == np.dtype(dt) else O.cast(t, dtype=dt)


def _mm(a, b, ta=False, tb=False, alpha=1.0):
    """a @ b over the last two dims (optionally transposed), any number of leading dims."""
    f = O.matmul if a._meta.ndim == 2 else O.batch_matmul
    return f(a, b, transpose_a=ta, transpose_b=tb, alpha=float(alpha))


def _rowsum(t):
    return O.reduce_sum(t, axis=(t._meta.ndim - 1,), keepdim=False)


def _col(t):
    return O.unsqueeze(t, dim=t._meta.ndim)


def _is_float_mask(mask):
    return mask is not None and np.dtype(mask._meta.dtype) != np.dtype(np.bool_)


def _probs(q, k, mask, lse, is_causal, scale):
    """exp(s - lse) with jflow ops, in lse's dtype; masked positions (and fully masked rows,
    whose lse is +inf) give 0."""
    s = _mm(q, k, tb=True, alpha=scale)
    neg = scalar_like(-np.inf, s)
    if mask is not None:
        s = O.add(s, _cast(mask, lse._meta.dtype)) if _is_float_mask(mask) else \
            O.where(mask, s, neg)
    if is_causal:
        n_l, n_s = s._meta.shape[-2:]
        rows = O.arange(start=0.0, end=float(n_l), step=1.0, dtype=np.int64)
        cols = O.arange(start=0.0, end=float(n_s), step=1.0, dtype=np.int64)
        s = O.where(O.ge(_col(rows), cols), s, neg)
    return O.exp(O.sub(s, _col(lse)))


@register_backward("scaled_dot_product_attention",
                   save=["query", "key", "value", "attn_mask", "out", "lse"])
def _sdpa(ctx, dout, dlse):
    q, k, v, mask, out, lse = ctx.saved_tensors
    need = ctx.needs_input_grad
    grads = [None, None, None]
    if any(need[:3]):
        grads = list(O.scaled_dot_product_attention_grad(
            q, k, v, out, lse, dout, dlse, mask, is_causal=ctx.is_causal, scale=ctx.scale))
    if mask is not None:
        dm = None
        if need[3] and _is_float_mask(mask):
            cd = lse._meta.dtype
            qf, kf, vf, of, gf = (_cast(t, cd) for t in (q, k, v, out, dout))
            p = _probs(qf, kf, mask, lse, ctx.is_causal, ctx.scale)
            delta = O.sub(_rowsum(O.mul(gf, of)), dlse)
            ds = O.mul(p, O.sub(_mm(gf, vf, tb=True), _col(delta)))
            dm = _cast(sum_to(ds, tuple(mask._meta.shape)), mask._meta.dtype)
        grads.append(dm)
    return grads


@register_backward("scaled_dot_product_attention_grad",
                   save=["query", "key", "value", "out", "lse", "dout", "dlse", "attn_mask"])
def _sdpa_grad(ctx, gq, gk, gv):
    q, k, v, out, lse, dout, dlse, mask = ctx.saved_tensors
    scale = ctx.scale
    cd = lse._meta.dtype
    qf, kf, vf, of, df, gq, gk, gv = (_cast(t, cd) for t in (q, k, v, out, dout, gq, gk, gv))
    p = _probs(qf, kf, mask, lse, ctx.is_causal, scale)
    delta = O.sub(_rowsum(O.mul(df, of)), dlse)
    dpd = O.sub(_mm(df, vf, tb=True), _col(delta))          # dp - delta
    ds = O.mul(p, dpd)
    # cotangent of ds (through dq = scale ds k and dk = scale ds^T q) and of p (dv = p^T dout)
    g_ds = O.add(_mm(gq, kf, tb=True, alpha=scale), _mm(qf, gk, tb=True, alpha=scale))
    g_dp = O.mul(g_ds, p)
    g_delta = O.neg(_rowsum(g_dp))
    g_s = O.mul(O.add(_mm(df, gv, tb=True), O.mul(g_ds, dpd)), p)   # g_p * p
    g_q = O.add(_mm(ds, gk, alpha=scale), _mm(g_s, kf, alpha=scale))
    g_k = O.add(_mm(ds, gq, ta=True, alpha=scale), _mm(g_s, qf, ta=True, alpha=scale))
    g_v = _mm(g_dp, df, ta=True)
    g_dout = O.add(O.add(_mm(p, gv), _mm(g_dp, vf)), O.mul(_col(g_delta), of))
    g_out = O.mul(_col(g_delta), df)
    g_lse = O.neg(_rowsum(g_s))
    g_dlse = O.neg(g_delta)
    dt = q._meta.dtype
    grads = [_cast(g_q, dt), _cast(g_k, dt), _cast(g_v, dt), _cast(g_out, dt), g_lse,
             _cast(g_dout, dt), g_dlse]
    if mask is not None:
        grads.append(_cast(sum_to(g_s, tuple(mask._meta.shape)), mask._meta.dtype)
                     if _is_float_mask(mask) else None)
    return grads
