"""Pallas layer_norm / rms_norm, forward and backward (the grad ops ``layer_norm_grad`` /
``rms_norm_grad``): forward is one read of x, one write of y plus the saved statistics
(mean / inv_std, inv_rms) the backward uses; backward one read of x and dy, one write of dx,
with dweight / dbias accumulated per program; float32 accumulation.

The normalised axes (``begin_norm_axis`` on) are flattened into one row; rows longer than
``MAX_ROW`` run the xla kernel (``begin_norm_axis`` is an attr, which the registry's
condition cannot see).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp

from ._base import FLOAT_DTYPES, count_launch, register_pallas_kernel, xla_kernel
from ._compat import cdiv, compiler_params, load, out_struct, pl, store
from ._rows import MAX_ROW, row_block, row_tiling


def _kernel(*refs: Any, br: int, bc: int, eps: float, centered: bool, has_w: bool,
            has_b: bool) -> None:
    refs = list(refs)
    x_ref = refs.pop(0)
    w_ref = refs.pop(0) if has_w else None
    b_ref = refs.pop(0) if has_b else None
    y_ref = refs.pop(0)
    stat_refs = refs  # (mean, inv_std) or (inv_rms,)
    n_rows, n_cols = x_ref.shape
    rs, cs, mask, rmask = row_block(n_rows, n_cols, br, bc)
    cmask = jnp.arange(bc, dtype=jnp.int32) < n_cols
    x = load(x_ref.at[rs, cs], mask=mask, other=0.0).astype(jnp.float32)
    inv_n = 1.0 / n_cols
    if centered:
        mean = jnp.sum(x, axis=1) * inv_n
        c = jnp.where(mask, x - mean[:, None], 0.0)
    else:
        c = x
    r = jax.lax.rsqrt(jnp.sum(c * c, axis=1) * inv_n + eps)
    y = c * r[:, None]
    if w_ref is not None:
        y = y * load(w_ref.at[cs], mask=cmask, other=0.0).astype(jnp.float32)[None, :]
    if b_ref is not None:
        y = y + load(b_ref.at[cs], mask=cmask, other=0.0).astype(jnp.float32)[None, :]
    store(y_ref.at[rs, cs], y.astype(y_ref.dtype), mask=mask)
    stats = (mean, r) if centered else (r,)
    for ref, v in zip(stat_refs, stats):
        store(ref.at[rs], v.astype(ref.dtype), mask=rmask)


def _norm(name: str, x: Any, params: list[Any], begin: int, eps: float, centered: bool,
          has: tuple[bool, ...], interpret: bool) -> Any:
    lead = x.shape[:begin]
    r, n = math.prod(lead), math.prod(x.shape[begin:])
    x2 = x.reshape(r, n)
    br, bc, warps = row_tiling(r, n, interpret)
    n_stats = 2 if centered else 1
    out_shape = [out_struct((r, n), x.dtype)] + \
                [out_struct((r,), x.dtype)] * n_stats
    count_launch(name)
    call = pl.pallas_call(
        functools.partial(_kernel, br=br, bc=bc, eps=float(eps), centered=centered,
                          has_w=has[0], has_b=has[1] if len(has) > 1 else False),
        out_shape=out_shape, grid=(cdiv(r, br),), interpret=interpret, name=name,
        compiler_params=compiler_params(warps))
    outs = call(x2, *[p.reshape(n) for p in params if p is not None])
    return (outs[0].reshape(x.shape),) + tuple(o.reshape(lead) for o in outs[1:])


def _usable(x: Any, begin: int) -> bool:
    n = math.prod(x.shape[begin:])
    return 0 < n <= MAX_ROW and math.prod(x.shape[:begin]) > 0


_ln_xla = xla_kernel("layer_norm")
_rms_xla = xla_kernel("rms_norm")


def layer_norm_pallas(x: Any, weight: Any, bias: Any, *, begin_norm_axis: int, eps: float,
                      interpret: bool) -> Any:
    if not _usable(x, begin_norm_axis):
        return _ln_xla(x, weight, bias, begin_norm_axis=begin_norm_axis, eps=eps)
    return _norm("layer_norm_pallas", x, [weight, bias], begin_norm_axis, eps, True,
                 (weight is not None, bias is not None), interpret)


def rms_norm_pallas(x: Any, weight: Any, *, begin_norm_axis: int, eps: float,
                    interpret: bool) -> Any:
    if not _usable(x, begin_norm_axis):
        return _rms_xla(x, weight, begin_norm_axis=begin_norm_axis, eps=eps)
    return _norm("rms_norm_pallas", x, [weight], begin_norm_axis, eps, False,
                 (weight is not None,), interpret)


def _cond(x: Any, *params: Any) -> bool:
    """Non-empty x (the row length, which depends on begin_norm_axis, is checked in the
    kernel function)."""
    return len(x.shape) >= 1 and all(d > 0 for d in x.shape)


# -- backward: layer_norm_grad / rms_norm_grad ------------------------------------------------
# G programs; program p walks the row blocks p, p + G, ... writing dx and accumulating its
# partial dweight / dbias in registers; XLA sums the G partial rows (G << rows).

def _bwd_kernel(*refs: Any, br: int, bc: int, n_progs: int, centered: bool,
                has_w: bool) -> None:
    refs = list(refs)
    x_ref = refs.pop(0)
    mean_ref = refs.pop(0) if centered else None
    r_ref = refs.pop(0)
    dy_ref = refs.pop(0)
    dmean_ref = refs.pop(0) if centered else None
    dr_ref = refs.pop(0)
    w_ref = refs.pop(0) if has_w else None
    dx_ref, dw_ref = refs[0], refs[1]
    db_ref = refs[2] if centered else None
    n_rows, n_cols = x_ref.shape
    p = pl.program_id(0)
    cols = jnp.arange(bc, dtype=jnp.int32)
    cmask = cols < n_cols
    cs = pl.ds(jnp.int32(0), bc)
    inv_n = 1.0 / n_cols
    w = load(w_ref.at[cs], mask=cmask, other=0.0).astype(jnp.float32) if has_w else None

    def body(t: Any, carry: Any) -> Any:
        dw, db = carry
        blk = p + t * n_progs
        rows = blk * br + jnp.arange(br, dtype=jnp.int32)
        rmask = rows < n_rows
        mask = rmask[:, None] & cmask[None, :]
        rs = pl.ds(blk * br, br)
        x = load(x_ref.at[rs, cs], mask=mask, other=0.0).astype(jnp.float32)
        dy = load(dy_ref.at[rs, cs], mask=mask, other=0.0).astype(jnp.float32)
        r = load(r_ref.at[rs], mask=rmask, other=0.0).astype(jnp.float32)
        dr = load(dr_ref.at[rs], mask=rmask, other=0.0).astype(jnp.float32)
        if centered:
            mean = load(mean_ref.at[rs], mask=rmask, other=0.0).astype(jnp.float32)
            xc = jnp.where(mask, x - mean[:, None], 0.0)
        else:
            xc = x
        xhat = xc * r[:, None]
        g = dy * w[None, :] if has_w else dy
        inner = xhat * (jnp.sum(g * xhat, axis=1) * inv_n)[:, None]
        if centered:
            inner = inner + (jnp.sum(g, axis=1) * inv_n)[:, None]
        dx = r[:, None] * (g - inner) - (dr * r * r * inv_n)[:, None] * xhat
        if centered:
            dmean = load(dmean_ref.at[rs], mask=rmask, other=0.0).astype(jnp.float32)
            dx = dx + (dmean * inv_n)[:, None]
        store(dx_ref.at[rs, cs], dx.astype(dx_ref.dtype), mask=mask)
        return dw + jnp.sum(dy * xhat, axis=0), db + jnp.sum(dy, axis=0)

    n_blocks = cdiv(n_rows, br)
    n_iter = jax.lax.div(n_blocks - p + n_progs - 1, jnp.int32(n_progs))
    zero = jnp.zeros((bc,), jnp.float32)
    dw, db = jax.lax.fori_loop(jnp.int32(0), n_iter, body, (zero, zero))
    ps = pl.ds(p, 1)
    store(dw_ref.at[ps, cs], dw[None, :], mask=cmask[None, :])
    if db_ref is not None:
        store(db_ref.at[ps, cs], db[None, :], mask=cmask[None, :])


def _norm_grad(name: str, x: Any, stats: list[Any], dy: Any, dstats: list[Any], weight: Any,
               begin: int, interpret: bool) -> Any:
    centered = len(stats) == 2
    lead, tail = x.shape[:begin], x.shape[begin:]
    r, n = math.prod(lead), math.prod(tail)
    br, bc, warps = row_tiling(r, n, interpret)
    n_blocks = cdiv(r, br)
    n_progs = min(n_blocks, 2 if interpret else 512)
    flat = [x.reshape(r, n)]
    if centered:
        flat.append(stats[0].reshape(r))
    flat += [stats[-1].reshape(r), dy.reshape(r, n)]
    if centered:
        flat.append(dstats[0].reshape(r))
    flat.append(dstats[-1].reshape(r))
    if weight is not None:
        flat.append(weight.reshape(n))
    out_shape = [out_struct((r, n), x.dtype)] + \
        [out_struct((n_progs, n), jnp.float32)] * (2 if centered else 1)
    count_launch(name)
    outs = pl.pallas_call(
        functools.partial(_bwd_kernel, br=br, bc=bc, n_progs=n_progs, centered=centered,
                          has_w=weight is not None),
        out_shape=out_shape, grid=(n_progs,), interpret=interpret, name=name,
        compiler_params=compiler_params(warps))(*flat)
    dx = outs[0].reshape(x.shape)
    parts = tuple(jnp.sum(o, axis=0).astype(x.dtype).reshape(tail) for o in outs[1:])
    return (dx,) + parts


_lng_xla = xla_kernel("layer_norm_grad")
_rmsg_xla = xla_kernel("rms_norm_grad")


def layer_norm_grad_pallas(x: Any, mean: Any, inv_std: Any, dy: Any, dmean: Any,
                           dinv_std: Any, weight: Any, *, begin_norm_axis: int,
                           interpret: bool) -> Any:
    if not _usable(x, begin_norm_axis):
        return _lng_xla(x, mean, inv_std, dy, dmean, dinv_std, weight,
                        begin_norm_axis=begin_norm_axis)
    return _norm_grad("layer_norm_grad_pallas", x, [mean, inv_std], dy, [dmean, dinv_std],
                      weight, begin_norm_axis, interpret)


def rms_norm_grad_pallas(x: Any, inv_rms: Any, dy: Any, dinv_rms: Any, weight: Any, *,
                         begin_norm_axis: int, interpret: bool) -> Any:
    if not _usable(x, begin_norm_axis):
        return _rmsg_xla(x, inv_rms, dy, dinv_rms, weight, begin_norm_axis=begin_norm_axis)
    return _norm_grad("rms_norm_grad_pallas", x, [inv_rms], dy, [dinv_rms], weight,
                      begin_norm_axis, interpret)


register_pallas_kernel("layer_norm_grad", layer_norm_grad_pallas, name="layer_norm_grad_pallas",
                       dtypes={"x": FLOAT_DTYPES}, condition=_cond)
register_pallas_kernel("rms_norm_grad", rms_norm_grad_pallas, name="rms_norm_grad_pallas",
                       dtypes={"x": FLOAT_DTYPES}, condition=_cond)
register_pallas_kernel("layer_norm", layer_norm_pallas, name="layer_norm_pallas",
                       dtypes={"x": FLOAT_DTYPES}, condition=_cond)
register_pallas_kernel("rms_norm", rms_norm_pallas, name="rms_norm_pallas",
                       dtypes={"x": FLOAT_DTYPES}, condition=_cond)
