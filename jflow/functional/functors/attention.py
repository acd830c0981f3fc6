"""Functor of ``scaled_dot_product_attention`` (``jflow/ops/attention.py``): PyTorch's
``torch.nn.functional.scaled_dot_product_attention`` arguments, then the fused op.

* Leading (batch, heads) dims of query, key and value broadcast against each other (expanded
  here; the op wants them equal). ``attn_mask`` is passed as it is (the op broadcasts it):
  bool (True = take part) or float (added to the scores; cast to the query's dtype).
* ``scale=None`` is ``1 / sqrt(E)``.
* ``dropout_p > 0`` takes a composite path (jflow ops on the materialised probabilities, the
  ``dropout`` op with the global jflow Generator), as PyTorch's math backend does; dropout is
  applied whenever ``dropout_p > 0`` (PyTorch: the caller passes 0.0 in eval mode).
* ``enable_gqa=True``: grouped-query attention; the key / value heads (dim -3) are repeated
  to the query's (which must be a multiple), as PyTorch; their gradients sum over the group.
* A fully masked query row gives zeros (PyTorch's math backend gives NaN; jflow follows
  FlashAttention) — on both paths.

:func:`attention_math` (the composite path, which can also return the probabilities) is what
``nn.MultiheadAttention`` uses when it must return attention weights.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ops import get
from ...tensor import Tensor
from ..promotion import cast, scalar_tensor
from ..registry import functor
from .nn import dropout

_sdpa = get("scaled_dot_product_attention").apply
_expand = get("expand").apply
_batch_matmul = get("batch_matmul").apply
_matmul = get("matmul").apply
_where = get("where").apply
_add = get("add").apply
_ne = get("ne").apply
_ge = get("ge").apply
_unsqueeze = get("unsqueeze").apply
_reshape = get("reshape").apply
_reduce_max = get("reduce_max").apply
_softmax = get("softmax").apply
_arange = get("arange").apply

_FN = "scaled_dot_product_attention()"


def _mm(a: Tensor, b: Tensor, tb: bool = False, alpha: float = 1.0) -> Tensor:
    f = _matmul if a._meta.ndim == 2 else _batch_matmul
    return f(a, b, transpose_b=tb, alpha=float(alpha))


def _prepare(query: Tensor, key: Tensor, value: Tensor, attn_mask: Any,
             scale: Any) -> tuple[Tensor, Tensor, Tensor, Any, float]:
    """Checks, broadcast of the leading dims, the mask's dtype and the default scale."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not t.is_floating_point():
            raise TypeError(f"{_FN}: expected a floating point {name}, got {t.dtype}")
        if t._meta.ndim < 2:
            raise ValueError(f"{_FN}: {name} must have at least 2 dims (..., L or S, E), got "
                             f"shape {list(t._meta.shape)}")
    if not (query.dtype == key.dtype == value.dtype):
        raise TypeError(f"{_FN}: expected query, key and value to have the same dtype, got "
                        f"{query.dtype}, {key.dtype} and {value.dtype}")
    shapes = [tuple(t._meta.shape) for t in (query, key, value)]
    try:  # (equal leading dims, the usual case, skip NumPy's broadcast: ~10 µs a call)
        lead = shapes[0][:-2]
        if not (shapes[1][:-2] == lead == shapes[2][:-2]):
            lead = tuple(np.broadcast_shapes(*(s[:-2] for s in shapes)))
    except ValueError:
        raise ValueError(f"{_FN}: the leading (batch, heads) dims of query, key and value "
                         f"cannot be broadcast together: shapes {shapes}") from None
    query, key, value = (t if s[:-2] == lead else _expand(t, shape=lead + s[-2:])
                         for t, s in zip((query, key, value), shapes))
    if attn_mask is not None and attn_mask.is_floating_point():
        attn_mask = cast(attn_mask, query._meta.dtype)
    e = shapes[0][-1]
    if scale is None:
        scale = 1.0 / math.sqrt(e) if e else 1.0
    return query, key, value, attn_mask, float(scale)


def attention_math(query: Tensor, key: Tensor, value: Tensor, attn_mask: Any, dropout_p: float,
                   is_causal: bool, scale: Any, generator: Any) -> tuple[Tensor, Tensor]:
    """(out, probabilities) with jflow ops on the materialised (..., L, S) probabilities
    (the composite path: dropout, or when the caller needs the weights). The returned
    probabilities are those applied to ``value`` (after dropout, as PyTorch's
    multi_head_attention_forward returns them). Fully masked rows give zero probabilities."""
    q, k, v, mask, scale = _prepare(query, key, value, attn_mask, scale)
    dt = q._meta.dtype
    low = np.dtype(dt) in (np.dtype(np.float16), np.dtype("bfloat16"))
    if low:  # float32 statistics, as the fused op
        q, k, v = (cast(t, np.dtype(np.float32)) for t in (q, k, v))
        mask = mask if mask is None or not mask.is_floating_point() else \
            cast(mask, np.dtype(np.float32))
    cd = q._meta.dtype
    s = _mm(q, k, tb=True, alpha=scale)
    neg = scalar_tensor(-math.inf, cd)
    if mask is not None:
        s = _where(mask, s, neg) if not mask.is_floating_point() else _add(s, mask)
    if is_causal:
        n_l, n_s = s._meta.shape[-2:]
        rows = _arange(start=0.0, end=float(n_l), step=1.0, dtype=np.int64)
        cols = _arange(start=0.0, end=float(n_s), step=1.0, dtype=np.int64)
        s = _where(_ge(_unsqueeze(rows, dim=1), cols), s, neg)
    valid = _ne(_reduce_max(s, axis=(s._meta.ndim - 1,), keepdim=True), neg)
    zero = scalar_tensor(0.0, cd)
    p = _where(valid, _softmax(_where(valid, s, zero), dim=-1), zero)
    if dropout_p > 0.0:
        p = dropout(p, p=dropout_p, training=True, inplace=False, generator=generator)
    out = _mm(p, v)
    if low:
        out, p = cast(out, dt), cast(p, dt)
    return out, p


def _repeat_kv(query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
    """Grouped-query attention: key and value heads (dim -3) repeated so that each serves
    ``Hq / Hkv`` consecutive query heads (as ``repeat_interleave``), as PyTorch."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t._meta.ndim < 3:
            raise ValueError(f"{_FN}: enable_gqa=True needs a heads dim (..., H, L or S, E) in "
                             f"{name}, got shape {list(t._meta.shape)}")
    hq, hk, hv = (int(t._meta.shape[-3]) for t in (query, key, value))
    if hk != hv or hk == 0 or hq % hk:
        raise ValueError(f"{_FN}: enable_gqa=True needs the query heads ({hq}) to be a multiple "
                         f"of the key and value heads (got {hk} and {hv})")
    g = hq // hk
    if g == 1:
        return key, value

    def rep(t: Tensor) -> Tensor:
        s = tuple(t._meta.shape)
        t = _expand(_unsqueeze(t, dim=len(s) - 2), shape=s[:-2] + (g,) + s[-2:])
        return _reshape(t, shape=s[:-3] + (hq,) + s[-2:])
    return rep(key), rep(value)


@functor("ScaledDotProductAttention")
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Any,
                                 dropout_p: float, is_causal: bool, scale: Any,
                                 enable_gqa: bool) -> Tensor:
    """softmax(query @ key^T * scale + mask) @ value (torch.nn.functional's), fused: the
    probabilities are never stored; the backward recomputes them from the rows' log-sum-exp."""
    if enable_gqa:
        key, value = _repeat_kv(query, key, value)
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{_FN}: dropout_p must be in [0, 1], got {dropout_p}")
    if dropout_p > 0.0:
        return attention_math(query, key, value, attn_mask, dropout_p, is_causal, scale,
                              generator=None)[0]
    q, k, v, mask, scale = _prepare(query, key, value, attn_mask, scale)
    return _sdpa(q, k, v, mask, is_causal=bool(is_causal), scale=scale)[0]
