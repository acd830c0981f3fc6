"""Pallas kernels of ``sparse_softmax_cross_entropy`` and its grad op: the vocabulary is
streamed in blocks of ``BV`` columns with an online logsumexp (running max and rescaled sum),
so no (N, V) softmax is ever written; the backward recomputes ``exp(x - lse)`` per block.

In interpret mode the vocabulary block is small (64), so tests on small shapes still run
several blocks, the last one partial.
"""

from __future__ import annotations

import functools
from typing import Any

import jax.numpy as jnp
from jax import lax

from ._base import FLOAT_DTYPES, count_launch, register_pallas_kernel
from ._compat import cdiv, compiler_params, load, next_power_of_2, out_struct, pl, store

_I32 = jnp.int32


def _row_vectors(refs: list[Any], rs: Any, rmask: Any, others: list[Any]) -> list[Any]:
    return [load(r.at[rs], mask=rmask, other=o) for r, o in zip(refs, others)]


def _fwd_kernel(x_ref, lab_ref, loss_ref, lse_ref, *, br: int, bv: int,
                ignore_index: int) -> None:
    n, v = x_ref.shape
    i = pl.program_id(0)
    rows = i * br + jnp.arange(br, dtype=_I32)
    rmask = rows < n
    rs = pl.ds(i * br, br)
    lab = load(lab_ref.at[rs], mask=rmask, other=0)
    lab32 = lab.astype(_I32)

    def body(j: Any, carry: Any) -> Any:
        m, s, pick = carry
        cols = j * bv + jnp.arange(bv, dtype=_I32)
        mask = rmask[:, None] & (cols < v)[None, :]
        x = load(x_ref.at[rs, pl.ds(j * bv, bv)], mask=mask, other=-jnp.inf
                 ).astype(jnp.float32)
        m_new = jnp.maximum(m, jnp.max(x, axis=1))
        s = s * jnp.exp(m - m_new) + jnp.sum(jnp.exp(x - m_new[:, None]), axis=1)
        hit = mask & (cols[None, :] == lab32[:, None])
        pick = pick + jnp.sum(jnp.where(hit, x, 0.0), axis=1)
        return m_new, s, pick

    init = (jnp.full((br,), -jnp.inf, jnp.float32), jnp.zeros((br,), jnp.float32),
            jnp.zeros((br,), jnp.float32))
    m, s, pick = lax.fori_loop(_I32(0), _I32(cdiv(v, bv)), body, init)
    lse = m + jnp.log(s)
    valid = lab != ignore_index
    loss = jnp.where(valid, lse - pick, 0.0)
    store(loss_ref.at[rs], loss.astype(loss_ref.dtype), mask=rmask)
    store(lse_ref.at[rs], lse.astype(lse_ref.dtype), mask=rmask)


def _bwd_kernel(x_ref, lab_ref, lse_ref, dloss_ref, dlse_ref, dx_ref, *, br: int, bv: int,
                ignore_index: int) -> None:
    n, v = x_ref.shape
    i, j = pl.program_id(0), pl.program_id(1)
    rows = i * br + jnp.arange(br, dtype=_I32)
    cols = j * bv + jnp.arange(bv, dtype=_I32)
    rmask = rows < n
    mask = rmask[:, None] & (cols < v)[None, :]
    rs, cs = pl.ds(i * br, br), pl.ds(j * bv, bv)
    lab, lse, dloss, dlse = _row_vectors([lab_ref, lse_ref, dloss_ref, dlse_ref], rs, rmask,
                                         [0, 0.0, 0.0, 0.0])
    valid = lab != ignore_index
    dl = jnp.where(valid, dloss.astype(jnp.float32), 0.0)
    c = dl + dlse.astype(jnp.float32)
    x = load(x_ref.at[rs, cs], mask=mask, other=0.0).astype(jnp.float32)
    p = jnp.exp(x - lse.astype(jnp.float32)[:, None])
    hit = cols[None, :] == lab.astype(_I32)[:, None]
    g = p * c[:, None] - jnp.where(hit, dl[:, None], 0.0)
    store(dx_ref.at[rs, cs], g.astype(dx_ref.dtype), mask=mask)


def _tiles(n: int, v: int, max_bv: int, interpret: bool) -> tuple[int, int]:
    bv = min(next_power_of_2(v), 64 if interpret else max_bv)
    br = max(1, min(next_power_of_2(n), 4096 // bv))
    return br, bv


def sce_pallas(logits: Any, labels: Any, *, ignore_index: int, interpret: bool) -> Any:
    n, v = logits.shape
    br, bv = _tiles(n, v, 4096, interpret)
    br = 1 if not interpret else min(br, 4)   # one row per program: the vocab loop is long
    lse_dt = jnp.float32 if logits.dtype != jnp.float64 else logits.dtype
    count_launch("sparse_softmax_cross_entropy_pallas")
    call = pl.pallas_call(
        functools.partial(_fwd_kernel, br=br, bv=bv, ignore_index=int(ignore_index)),
        out_shape=[out_struct((n,), logits.dtype), out_struct((n,), lse_dt)],
        grid=(cdiv(n, br),), interpret=interpret, name="sparse_softmax_cross_entropy",
        compiler_params=compiler_params(8 if bv >= 2048 else 4))
    return tuple(call(logits, labels))


def sce_grad_pallas(logits: Any, labels: Any, lse: Any, dloss: Any, dlse: Any, *,
                    ignore_index: int, interpret: bool) -> Any:
    n, v = logits.shape
    br, bv = _tiles(n, v, 1024, interpret)
    count_launch("sparse_softmax_cross_entropy_grad_pallas")
    call = pl.pallas_call(
        functools.partial(_bwd_kernel, br=br, bv=bv, ignore_index=int(ignore_index)),
        out_shape=out_struct((n, v), logits.dtype),
        grid=(cdiv(n, br), cdiv(v, bv)), interpret=interpret,
        name="sparse_softmax_cross_entropy_grad",
        compiler_params=compiler_params(4 if br * bv <= 2048 else 8))
    return call(logits, labels, lse, dloss, dlse)


def _cond(logits: Any, labels: Any, *rest: Any) -> bool:
    n, v = logits.shape
    return n > 0 and 0 < v < 2 ** 31


register_pallas_kernel("sparse_softmax_cross_entropy", sce_pallas,
                       name="sparse_softmax_cross_entropy_pallas",
                       dtypes={"logits": FLOAT_DTYPES}, condition=_cond)
register_pallas_kernel("sparse_softmax_cross_entropy_grad", sce_grad_pallas,
                       name="sparse_softmax_cross_entropy_grad_pallas",
                       dtypes={"logits": FLOAT_DTYPES}, condition=_cond)
