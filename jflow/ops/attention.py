"""Attention ops: ``scaled_dot_product_attention`` and its gradient op — definition,
xla kernel and SBP signatures side by side.

``scaled_dot_product_attention(query, key, value, attn_mask?, *, is_causal, scale)
-> (out, lse)``

* ``query (..., L, E)``, ``key (..., S, E)``, ``value (..., S, Ev)``: one floating dtype and the
  same leading (batch, heads) dims (the functor broadcasts them).
* ``attn_mask``: optional, broadcastable to ``(..., L, S)`` (at most query's rank). A bool mask
  says which positions take part (True = attend, PyTorch's convention); a float mask (the
  query's dtype) is added to the scaled scores.
* ``is_causal``: PyTorch's top-left aligned causal mask, ``tril(ones(L, S))`` (query i attends
  keys j <= i), combined with ``attn_mask`` when both are given.
* ``scale``: multiplies ``query @ key^T`` (the functor passes ``1 / sqrt(E)`` by default).
* ``out (..., L, Ev)`` in the inputs' dtype; ``lse (..., L)``: the log-sum-exp of the scaled,
  masked scores of each query row, kept for the backward (probabilities are recomputed from it,
  so no ``(L, S)`` matrix is saved). ``lse`` is float32 for float16 / bfloat16 / float32 inputs
  and float64 for float64 inputs; the softmax statistics are always computed in that dtype.
* A fully masked row (every key masked, by the bool mask, ``-inf`` in a float mask, or both)
  gives ``out = 0`` and ``lse = +inf`` (as FlashAttention does), not PyTorch's math-backend NaN:
  ``exp(score - lse)`` is then 0 for every key, so the backward needs no special case and the
  row's gradients are 0.

``scaled_dot_product_attention_grad(query, key, value, out, lse, dout, dlse, attn_mask?, *,
is_causal, scale) -> (dq, dk, dv)`` (optional inputs come last in a jflow op, hence the mask's
place) is the vector-Jacobian product of both outputs:
``p = exp(s - lse)``, ``ds = p * (dout @ v^T - (rowsum(dout * out) - dlse))``,
``dq = scale * ds @ k``, ``dk = scale * ds^T @ q``, ``dv = p^T @ dout``. ``dlse`` (the
cotangent of ``lse``, lse's dtype and shape; zeros when only ``out`` is used) only shifts the
per-row ``delta`` term. The gradient of a float ``attn_mask`` (``ds`` summed to the mask's
shape) is not an output: the backward rule computes it with jflow ops when it is needed.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, P, S, Signature
from . import cost
from .infer import FLOAT, check_dtype, desc, kind
from .precision import float32_products
from .primitive import define_op
from .registry import Attr, Input


def stat_dtype(dtype: Any) -> np.dtype:
    """The dtype of ``lse`` and of the softmax statistics for inputs of ``dtype``."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


# -- inference -----------------------------------------------------------------------------------

def _check_qkv(q: Any, k: Any, v: Any) -> None:
    check_dtype(q, FLOAT, "query")
    for name, t in (("key", k), ("value", v)):
        if np.dtype(t.dtype) != np.dtype(q.dtype):
            raise TypeError(f"{name} must have the query's dtype {np.dtype(q.dtype).name}, got "
                            f"{np.dtype(t.dtype).name}")
    qs, ks, vs = tuple(q.shape), tuple(k.shape), tuple(v.shape)
    if len(qs) < 2 or len(ks) != len(qs) or len(vs) != len(qs):
        raise ValueError(f"expected query (..., L, E), key (..., S, E) and value (..., S, Ev) "
                         f"of the same rank >= 2, got shapes {qs}, {ks} and {vs}")
    if qs[:-2] != ks[:-2] or qs[:-2] != vs[:-2]:
        raise ValueError(f"query, key and value must have the same leading (batch, heads) "
                         f"dims, got shapes {qs}, {ks} and {vs}")
    if ks[-1] != qs[-1]:
        raise ValueError(f"key's last dim must equal query's embedding dim {qs[-1]}, got shapes "
                         f"{qs} and {ks}")
    if vs[-2] != ks[-2]:
        raise ValueError(f"value must have as many rows as key ({ks[-2]}), got shapes {ks} and "
                         f"{vs}")


def _check_mask(q: Any, k: Any, mask: Any) -> None:
    if mask is None:
        return
    if kind(mask.dtype) not in ("bool", "float"):
        raise TypeError(f"attn_mask must be bool or of the query's dtype, got "
                        f"{np.dtype(mask.dtype).name}")
    if kind(mask.dtype) == "float" and np.dtype(mask.dtype) != np.dtype(q.dtype):
        raise TypeError(f"a float attn_mask must have the query's dtype "
                        f"{np.dtype(q.dtype).name}, got {np.dtype(mask.dtype).name}")
    target = tuple(q.shape[:-1]) + (k.shape[-2],)
    ms = tuple(mask.shape)
    if len(ms) > len(target) or any(m not in (1, t) for m, t in
                                     zip(ms[::-1], target[::-1])):
        raise ValueError(f"attn_mask of shape {ms} cannot be broadcast to the attention "
                         f"scores' shape {target} (..., L, S)")


def _infer(q: Any, k: Any, v: Any, mask: Any, is_causal: bool, scale: float) -> Any:
    _check_qkv(q, k, v)
    _check_mask(q, k, mask)
    return (desc(tuple(q.shape[:-1]) + (v.shape[-1],), q.dtype),
            desc(tuple(q.shape[:-1]), stat_dtype(q.dtype)))


def _grad_infer(q: Any, k: Any, v: Any, out: Any, lse: Any, dout: Any, dlse: Any, mask: Any,
                is_causal: bool, scale: float) -> Any:
    _check_qkv(q, k, v)
    _check_mask(q, k, mask)
    os_ = tuple(q.shape[:-1]) + (v.shape[-1],)
    sd = stat_dtype(q.dtype)
    for name, t, shape, dt in (("out", out, os_, q.dtype), ("dout", dout, os_, q.dtype),
                               ("lse", lse, os_[:-1], sd), ("dlse", dlse, os_[:-1], sd)):
        if tuple(t.shape) != shape or np.dtype(t.dtype) != np.dtype(dt):
            raise ValueError(f"{name} must be {np.dtype(dt).name}{list(shape)}, got "
                             f"{np.dtype(t.dtype).name}{list(t.shape)}")
    return desc(q.shape, q.dtype), desc(k.shape, k.dtype), desc(v.shape, v.dtype)


# -- xla kernels -----------------------------------------------------------------------------------

def _scores(q: Any, k: Any, mask: Any, is_causal: bool, scale: float, cd: Any) -> Any:
    """Scaled, masked scores in the compute dtype ``cd``; masked positions are -inf."""
    s = jnp.einsum("...le,...se->...ls", q.astype(cd), k.astype(cd), precision=float32_products())
    s = s * jnp.asarray(scale, cd)
    neg = jnp.asarray(-jnp.inf, cd)
    if mask is not None:
        s = jnp.where(mask, s, neg) if mask.dtype == jnp.bool_ else s + mask.astype(cd)
    if is_causal:
        n_l, n_s = s.shape[-2:]
        s = jnp.where(jnp.tril(jnp.ones((n_l, n_s), jnp.bool_)), s, neg)
    return s


def _sdpa(q: Any, k: Any, v: Any, mask: Any, is_causal: bool, scale: float) -> Any:
    cd = stat_dtype(q.dtype)
    s = _scores(q, k, mask, is_causal, scale, cd)
    m = jnp.max(s, axis=-1, keepdims=True)
    m = jnp.where(m == -jnp.inf, jnp.zeros_like(m), m)    # fully masked row: no shift
    e = jnp.exp(s - m)
    denom = jnp.sum(e, axis=-1, keepdims=True)
    empty = denom == 0
    out = jnp.einsum("...ls,...sd->...ld", e, v.astype(cd), precision=float32_products())
    out = out / jnp.where(empty, jnp.ones_like(denom), denom)
    lse = jnp.where(empty, jnp.asarray(jnp.inf, cd), m + jnp.log(denom))[..., 0]
    return out.astype(q.dtype), lse


def _sdpa_grad(q: Any, k: Any, v: Any, out: Any, lse: Any, dout: Any, dlse: Any, mask: Any,
               is_causal: bool, scale: float) -> Any:
    cd = stat_dtype(q.dtype)
    s = _scores(q, k, mask, is_causal, scale, cd)
    p = jnp.exp(s - lse.astype(cd)[..., None])             # lse = +inf: p = 0
    doutf = dout.astype(cd)
    dp = jnp.einsum("...ld,...sd->...ls", doutf, v.astype(cd), precision=float32_products())
    delta = jnp.sum(doutf * out.astype(cd), axis=-1) - dlse.astype(cd)
    ds = p * (dp - delta[..., None])
    sc = jnp.asarray(scale, cd)
    dq = jnp.einsum("...ls,...se->...le", ds, k.astype(cd), precision=float32_products()) * sc
    dk = jnp.einsum("...ls,...le->...se", ds, q.astype(cd), precision=float32_products()) * sc
    dv = jnp.einsum("...ls,...ld->...sd", p, doutf, precision=float32_products())
    return dq.astype(q.dtype), dk.astype(k.dtype), dv.astype(v.dtype)


# -- SBP -------------------------------------------------------------------------------------------

def _mask_sbp(mask_shape: Any, n: int, axis: int) -> Any:
    """The mask's sbp when query's axis ``axis`` (of ``n`` dims) is split: the matching mask
    axis if the mask has it (size > 1), else broadcast."""
    j = axis - (n - len(mask_shape))
    return S(j) if j >= 0 and mask_shape[j] != 1 else B


def _sdpa_sbp(in_shapes: Any, n_out: int = 2, is_causal: bool = False,
              **_: Any) -> list[Signature]:
    """Split a leading (batch / head) axis of query, key and value together -> the same split
    of out and lse; or split query's L axis with key and value broadcast (rows are
    independent), except with ``is_causal``: a shard's local row numbers would shift the
    top-left causal diagonal."""
    qs = tuple(in_shapes[0])
    n = len(qs)
    mask = tuple(in_shapes[3]) if len(in_shapes) == 4 else None
    sigs = []
    for i in range(n - 2):
        m = () if mask is None else (_mask_sbp(mask, n, i),)
        sigs.append(Signature((S(i),) * 3 + m, (S(i), S(i))))
    if not is_causal:
        m = () if mask is None else (_mask_sbp(mask, n, n - 2),)
        sigs.append(Signature((S(n - 2), B, B) + m, (S(n - 2), S(n - 2))))
    return sigs


def _sdpa_grad_sbp(in_shapes: Any, n_out: int = 3, is_causal: bool = False,
                   **_: Any) -> list[Signature]:
    """As the forward: a leading-axis split of everything -> the same split of dq, dk, dv; or
    a split of the query rows (query, out, lse, dout, dlse) with key and value broadcast ->
    dq split, dk and dv partial sums over the rows (not with ``is_causal``)."""
    qs = tuple(in_shapes[0])
    n = len(qs)
    mask = tuple(in_shapes[7]) if len(in_shapes) == 8 else None
    sigs = []
    for i in range(n - 2):
        m = () if mask is None else (_mask_sbp(mask, n, i),)
        sigs.append(Signature((S(i),) * 7 + m, (S(i),) * 3))
    if not is_causal:
        r = S(n - 2)
        m = () if mask is None else (_mask_sbp(mask, n, n - 2),)
        sigs.append(Signature((r, B, B, r, r, r, r) + m, (r, P, P)))
    return sigs


# scale is static: the Pallas kernels bake it into the kernel body
_ATTRS = [Attr("is_causal", "bool", False), Attr("scale", "double", static=True)]

define_op("scaled_dot_product_attention",
          inputs=["query", "key", "value", Input("attn_mask", optional=True)],
          outputs=["out", "lse"], attrs=_ATTRS, infer=_infer, sbp=_sdpa_sbp,
          flops=cost.attention,
          doc="softmax(scale * query @ key^T + mask) @ value, and the rows' log-sum-exp")
register_kernel("scaled_dot_product_attention", _sdpa, name="scaled_dot_product_attention_xla")

define_op("scaled_dot_product_attention_grad",
          inputs=["query", "key", "value", "out", "lse", "dout", "dlse",
                  Input("attn_mask", optional=True)],
          outputs=["dq", "dk", "dv"], attrs=_ATTRS, infer=_grad_infer, sbp=_sdpa_grad_sbp,
          doc="the gradient of scaled_dot_product_attention (both outputs) with respect to "
              "query, key and value, recomputing the probabilities from lse")
register_kernel("scaled_dot_product_attention_grad", _sdpa_grad,
                name="scaled_dot_product_attention_grad_xla")
