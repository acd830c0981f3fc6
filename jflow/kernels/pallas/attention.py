"""Flash attention (Pallas / Triton) behind ``scaled_dot_product_attention`` and its grad op
(jflow/ops/attention.py): causal and non-causal, head dims 64 and 128, no ``attn_mask``.

Forward (FlashAttention-2): a program owns ``BQ`` query rows of one (batch, head) and streams
the keys in blocks of ``BK`` with an online softmax; it writes ``out`` and the rows'
log-sum-exp ``lse`` (float32), never an (L, S) matrix. Backward: ``delta = rowsum(dout * out)
- dlse`` (XLA, O(L E)), then one kernel per key block accumulating dK and dV over the query
blocks, and one per query block accumulating dQ over the key blocks; probabilities are
recomputed from ``lse``. Sequence lengths need not be multiples of the blocks (masked), and
the op's conventions hold: top-left causal diagonal, a fully masked row gives out 0 and
lse +inf. In interpret mode the blocks are 16 so small test shapes run several, partial.

Float32 inputs: the kernels' block products use TF32 when the float32 matmul precision allows
it (``flow.set_float32_matmul_precision("high")``). Under ``"highest"`` (PyTorch's default)
the xla kernel runs instead on a GPU: Triton's exact float32 ``dot`` runs on the CUDA cores,
and on an H200 the GPT of benchmarks/gpu_models.py spent 312 of its 356 ms per step in these
kernels that way (~1 TFLOP/s); with the xla kernel's cuBLAS products its exact step takes 104
ms (PyTorch: 102), and with TF32 these kernels beat the xla kernel, 26.5 against 29.4 ms per
step (benchmarks/results_gpu_models_NVIDIA_H200.txt). Interpret mode (CPU tests) still runs
them exact.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax.numpy as jnp
from jax import lax

from ...ops.precision import float32_exact
from ._base import FLOAT_DTYPES, count_launch, interpret_enabled, register_pallas_kernel
from ._compat import SQUEEZED, cdiv, compiler_params, dot, load, out_struct, pl, store

HEAD_DIMS = (64, 128)
_I32 = jnp.int32


def _whole(ref: Any) -> Any:
    """The whole last axis of a 2-d ref (an int32 start: x64 is on in jflow)."""
    return pl.ds(_I32(0), ref.shape[1])


def _blocks(e: int, interpret: bool) -> tuple[int, int, int]:
    if interpret:
        return 16, 16, 4
    return (128, 64, 8) if e <= 64 else (64, 64, 4)


def _masked_scores(q: Any, k: Any, rows: Any, cols: Any, n_k: int, scale: float,
                   causal: bool, exact: bool) -> Any:
    s = dot(q, k, trans_b=True, exact=exact) * scale
    valid = (cols < n_k)[None, :]
    if causal:
        valid = valid & (rows[:, None] >= cols[None, :])
    return jnp.where(valid, s, -jnp.inf)


def _fwd_kernel(q_ref, k_ref, v_ref, o_ref, lse_ref, *, bq: int, bk: int, scale: float,
                causal: bool, exact: bool) -> None:
    n_q, e = q_ref.shape
    n_k = k_ref.shape[0]
    i = pl.program_id(0)
    rows = i * bq + jnp.arange(bq, dtype=_I32)
    rmask = rows < n_q
    qs = pl.ds(i * bq, bq)
    q = load(q_ref.at[qs, _whole(q_ref)], mask=rmask[:, None], other=0.0)

    def body(j: Any, carry: Any) -> Any:
        o, m, l_ = carry
        cols = j * bk + jnp.arange(bk, dtype=_I32)
        cmask = (cols < n_k)[:, None]
        ks = pl.ds(j * bk, bk)
        k = load(k_ref.at[ks, _whole(k_ref)], mask=cmask, other=0.0)
        v = load(v_ref.at[ks, _whole(v_ref)], mask=cmask, other=0.0)
        s = _masked_scores(q, k, rows, cols, n_k, scale, causal, exact)
        m_new = jnp.maximum(m, jnp.max(s, axis=1))
        m_safe = jnp.where(m_new == -jnp.inf, 0.0, m_new)
        alpha = jnp.exp(m - m_safe)
        p = jnp.exp(s - m_safe[:, None])
        l_ = l_ * alpha + jnp.sum(p, axis=1)
        o = o * alpha[:, None] + dot(p.astype(v.dtype), v, exact=exact)
        return o, m_new, l_

    n_blocks = cdiv(n_k, bk)
    if causal:  # keys past the block's last row are all masked
        upper = jnp.minimum(lax.div((i + 1) * bq + bk - 1, _I32(bk)), _I32(n_blocks))
    else:
        upper = _I32(n_blocks)
    init = (jnp.zeros((bq, e), jnp.float32), jnp.full((bq,), -jnp.inf, jnp.float32),
            jnp.zeros((bq,), jnp.float32))
    o, m, l_ = lax.fori_loop(_I32(0), upper, body, init)
    empty = l_ == 0.0
    o = o / jnp.where(empty, 1.0, l_)[:, None]
    lse = jnp.where(empty, jnp.inf, m + jnp.log(jnp.where(empty, 1.0, l_)))
    store(o_ref.at[qs, _whole(o_ref)], o.astype(o_ref.dtype), mask=rmask[:, None])
    store(lse_ref.at[qs], lse.astype(lse_ref.dtype), mask=rmask)


def _dkdv_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dk_ref, dv_ref, *, bq: int,
                 bk: int, scale: float, causal: bool, exact: bool) -> None:
    n_q, e = q_ref.shape
    n_k = k_ref.shape[0]
    j = pl.program_id(0)
    cols = j * bk + jnp.arange(bk, dtype=_I32)
    cmask = (cols < n_k)[:, None]
    ks = pl.ds(j * bk, bk)
    k = load(k_ref.at[ks, _whole(k_ref)], mask=cmask, other=0.0)
    v = load(v_ref.at[ks, _whole(v_ref)], mask=cmask, other=0.0)

    def body(i: Any, carry: Any) -> Any:
        dk, dv = carry
        rows = i * bq + jnp.arange(bq, dtype=_I32)
        rmask = rows < n_q
        qs = pl.ds(i * bq, bq)
        q = load(q_ref.at[qs, _whole(q_ref)], mask=rmask[:, None], other=0.0)
        do = load(do_ref.at[qs, _whole(do_ref)], mask=rmask[:, None], other=0.0)
        lse = load(lse_ref.at[qs], mask=rmask, other=jnp.inf)
        delta = load(delta_ref.at[qs], mask=rmask, other=0.0)
        s = _masked_scores(q, k, rows, cols, n_k, scale, causal, exact)
        p = jnp.exp(s - lse[:, None])
        dv = dv + dot(p.astype(do.dtype), do, trans_a=True, exact=exact)
        dp = dot(do, v, trans_b=True, exact=exact)
        ds = p * (dp - delta[:, None]) * scale
        dk = dk + dot(ds.astype(q.dtype), q, trans_a=True, exact=exact)
        return dk, dv

    lower = lax.div(j * bk, _I32(bq)) if causal else _I32(0)
    init = (jnp.zeros((bk, e), jnp.float32), jnp.zeros((bk, v_ref.shape[1]), jnp.float32))
    dk, dv = lax.fori_loop(lower, _I32(cdiv(n_q, bq)), body, init)
    store(dk_ref.at[ks, _whole(dk_ref)], dk.astype(dk_ref.dtype), mask=cmask)
    store(dv_ref.at[ks, _whole(dv_ref)], dv.astype(dv_ref.dtype), mask=cmask)


def _dq_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dq_ref, *, bq: int, bk: int,
               scale: float, causal: bool, exact: bool) -> None:
    n_q, e = q_ref.shape
    n_k = k_ref.shape[0]
    i = pl.program_id(0)
    rows = i * bq + jnp.arange(bq, dtype=_I32)
    rmask = rows < n_q
    qs = pl.ds(i * bq, bq)
    q = load(q_ref.at[qs, _whole(q_ref)], mask=rmask[:, None], other=0.0)
    do = load(do_ref.at[qs, _whole(do_ref)], mask=rmask[:, None], other=0.0)
    lse = load(lse_ref.at[qs], mask=rmask, other=jnp.inf)
    delta = load(delta_ref.at[qs], mask=rmask, other=0.0)

    def body(j: Any, dq: Any) -> Any:
        cols = j * bk + jnp.arange(bk, dtype=_I32)
        cmask = (cols < n_k)[:, None]
        ks = pl.ds(j * bk, bk)
        k = load(k_ref.at[ks, _whole(k_ref)], mask=cmask, other=0.0)
        v = load(v_ref.at[ks, _whole(v_ref)], mask=cmask, other=0.0)
        s = _masked_scores(q, k, rows, cols, n_k, scale, causal, exact)
        p = jnp.exp(s - lse[:, None])
        dp = dot(do, v, trans_b=True, exact=exact)
        ds = p * (dp - delta[:, None]) * scale
        return dq + dot(ds.astype(k.dtype), k, exact=exact)

    n_blocks = cdiv(n_k, bk)
    if causal:
        upper = jnp.minimum(lax.div((i + 1) * bq + bk - 1, _I32(bk)), _I32(n_blocks))
    else:
        upper = _I32(n_blocks)
    dq = lax.fori_loop(_I32(0), upper, body, jnp.zeros((bq, e), jnp.float32))
    store(dq_ref.at[qs, _whole(dq_ref)], dq.astype(dq_ref.dtype), mask=rmask[:, None])


def _spec(n: int, e: int | None = None) -> Any:
    """One (batch, head) slice per program (the grid's axis 1), whole along the rest."""
    if e is None:
        return pl.BlockSpec((SQUEEZED, n), lambda a, b: (b, 0))
    return pl.BlockSpec((SQUEEZED, n, e), lambda a, b: (b, 0, 0))


def _flat(t: Any) -> Any:
    return t.reshape((math.prod(t.shape[:-2]),) + t.shape[-2:])


def sdpa_pallas(query: Any, key: Any, value: Any, attn_mask: Any, *, is_causal: bool,
                scale: float, interpret: bool) -> Any:
    lead = query.shape[:-2]
    q, k, v = _flat(query), _flat(key), _flat(value)
    bh, n_q, e = q.shape
    n_k = k.shape[1]
    bq, bk, warps = _blocks(e, interpret)
    count_launch("scaled_dot_product_attention_pallas")
    call = pl.pallas_call(
        functools.partial(_fwd_kernel, bq=bq, bk=bk, scale=float(scale), causal=is_causal,
                          exact=_exact(q.dtype)),
        out_shape=[out_struct((bh, n_q, v.shape[2]), q.dtype),
                   out_struct((bh, n_q), jnp.float32)],
        grid=(cdiv(n_q, bq), bh),
        in_specs=[_spec(n_q, e), _spec(n_k, e), _spec(n_k, v.shape[2])],
        out_specs=[_spec(n_q, v.shape[2]), _spec(n_q)],
        interpret=interpret, name="flash_attention_fwd",
        compiler_params=compiler_params(warps, 2))
    out, lse = call(q, k, v)
    return out.reshape(lead + out.shape[1:]), lse.reshape(lead + (n_q,))


def sdpa_grad_pallas(query: Any, key: Any, value: Any, out: Any, lse: Any, dout: Any,
                     dlse: Any, attn_mask: Any, *, is_causal: bool, scale: float,
                     interpret: bool) -> Any:
    q, k, v, o, do = (_flat(t) for t in (query, key, value, out, dout))
    bh, n_q, e = q.shape
    n_k, ev = k.shape[1], v.shape[2]
    lse2 = lse.reshape(bh, n_q).astype(jnp.float32)
    delta = (jnp.sum(o.astype(jnp.float32) * do.astype(jnp.float32), axis=-1)
             - dlse.reshape(bh, n_q).astype(jnp.float32))
    bq, bk, warps = _blocks(e, interpret)
    kw = dict(bq=bq, bk=bk, scale=float(scale), causal=is_causal,
              exact=_exact(q.dtype))
    ins = [_spec(n_q, e), _spec(n_k, e), _spec(n_k, ev), _spec(n_q, ev), _spec(n_q),
           _spec(n_q)]
    count_launch("scaled_dot_product_attention_grad_pallas")
    dk, dv = pl.pallas_call(
        functools.partial(_dkdv_kernel, **kw),
        out_shape=[out_struct(k.shape, k.dtype), out_struct(v.shape, v.dtype)],
        grid=(cdiv(n_k, bk), bh), in_specs=ins, out_specs=[_spec(n_k, e), _spec(n_k, ev)],
        interpret=interpret, name="flash_attention_dkdv",
        compiler_params=compiler_params(warps, 2))(q, k, v, do, lse2, delta)
    dq = pl.pallas_call(
        functools.partial(_dq_kernel, **kw),
        out_shape=out_struct(q.shape, q.dtype),
        grid=(cdiv(n_q, bq), bh), in_specs=ins, out_specs=_spec(n_q, e),
        interpret=interpret, name="flash_attention_dq",
        compiler_params=compiler_params(warps, 2))(q, k, v, do, lse2, delta)
    return (dq.reshape(query.shape), dk.reshape(key.shape), dv.reshape(value.shape))


def _exact(dtype: Any) -> bool:
    """Float32 products without TF32: float32 inputs while the float32 matmul precision is
    ``"highest"`` (PyTorch's default)."""
    return dtype == jnp.float32 and float32_exact()


def _fits(q: Any, k: Any, v: Any) -> bool:
    e = q.shape[-1]
    if _exact(q.dtype) and not interpret_enabled():
        return False  # exact float32 on a GPU: the xla kernel (see the module docstring)
    return (e in HEAD_DIMS and v.shape[-1] == e and q.shape[-2] > 0 and k.shape[-2] > 0
            and math.prod(q.shape[:-2]) > 0)


def _cond(query: Any, key: Any, value: Any, attn_mask: Any = None) -> bool:
    return attn_mask is None and _fits(query, key, value)


def _grad_cond(query: Any, key: Any, value: Any, out: Any, lse: Any, dout: Any, dlse: Any,
               attn_mask: Any = None) -> bool:
    return attn_mask is None and _fits(query, key, value)


register_pallas_kernel("scaled_dot_product_attention", sdpa_pallas,
                       name="scaled_dot_product_attention_pallas",
                       dtypes={"query": FLOAT_DTYPES}, condition=_cond)
register_pallas_kernel("scaled_dot_product_attention_grad", sdpa_grad_pallas,
                       name="scaled_dot_product_attention_grad_pallas",
                       dtypes={"query": FLOAT_DTYPES}, condition=_grad_cond)
