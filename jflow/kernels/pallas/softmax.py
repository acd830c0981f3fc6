"""Pallas softmax / log_softmax over the last axis, and their backward ops
(``softmax_grad`` / ``log_softmax_grad`` in jflow/ops/fused.py): one pass over each row,
computed in float32, rounded once to the input's dtype (as the xla kernels)."""

from __future__ import annotations

import functools
from typing import Any

import jax.numpy as jnp

from ._base import FLOAT_DTYPES, count_launch, register_pallas_kernel, xla_kernel
from ._compat import cdiv, compiler_params, load, out_struct, pl, store
from ._rows import fits_row, row_block, row_tiling


def _fwd_kernel(x_ref, y_ref, *, br: int, bc: int, log: bool) -> None:
    n_rows, n_cols = x_ref.shape
    rs, cs, mask, _ = row_block(n_rows, n_cols, br, bc)
    x = load(x_ref.at[rs, cs], mask=mask, other=-jnp.inf).astype(jnp.float32)
    m = jnp.max(x, axis=1, keepdims=True)
    e = jnp.exp(x - m)
    s = jnp.sum(e, axis=1, keepdims=True)
    y = (x - m) - jnp.log(s) if log else e / s
    store(y_ref.at[rs, cs], y.astype(y_ref.dtype), mask=mask)


def _bwd_kernel(y_ref, dy_ref, dx_ref, *, br: int, bc: int, log: bool) -> None:
    n_rows, n_cols = y_ref.shape
    rs, cs, mask, _ = row_block(n_rows, n_cols, br, bc)
    y = load(y_ref.at[rs, cs], mask=mask, other=0.0).astype(jnp.float32)
    dy = load(dy_ref.at[rs, cs], mask=mask, other=0.0).astype(jnp.float32)
    if log:   # dx = dy - exp(y) * sum(dy)
        dx = dy - jnp.exp(y) * jnp.sum(dy, axis=1, keepdims=True)
    else:     # dx = y * (dy - sum(dy * y))
        dx = y * (dy - jnp.sum(dy * y, axis=1, keepdims=True))
    store(dx_ref.at[rs, cs], dx.astype(dx_ref.dtype), mask=mask)


def _rowwise(kernel: Any, name: str, xs: list[Any], interpret: bool, **kw: Any) -> Any:
    shape = xs[0].shape
    n = shape[-1]
    flat = [x.reshape(-1, n) for x in xs]
    r = flat[0].shape[0]
    br, bc, warps = row_tiling(r, n, interpret)
    count_launch(name)
    call = pl.pallas_call(functools.partial(kernel, br=br, bc=bc, **kw),
                          out_shape=out_struct(flat[0].shape, xs[0].dtype),
                          grid=(cdiv(r, br),), interpret=interpret, name=name,
                          compiler_params=compiler_params(warps))
    return call(*flat).reshape(shape)


def _is_last(x: Any, dim: int) -> bool:
    return x.ndim >= 1 and dim % x.ndim == x.ndim - 1


def _make_fwd(op_name: str, log: bool) -> Any:
    xla = xla_kernel(op_name)

    def kernel(x: Any, *, dim: int, interpret: bool) -> Any:
        if not _is_last(x, dim):  # the registry's condition cannot see attrs
            return xla(x, dim=dim)
        return _rowwise(_fwd_kernel, f"{op_name}_pallas", [x], interpret, log=log)
    kernel.__name__ = f"{op_name}_pallas"
    return kernel


def _make_bwd(op_name: str, log: bool) -> Any:
    xla = xla_kernel(op_name)

    def kernel(y: Any, dy: Any, *, dim: int, interpret: bool) -> Any:
        if not _is_last(y, dim):
            return xla(y, dy, dim=dim)
        return _rowwise(_bwd_kernel, f"{op_name}_pallas", [y, dy], interpret, log=log)
    kernel.__name__ = f"{op_name}_pallas"
    return kernel


def _cond1(x: Any) -> bool:
    return fits_row(x)


def _cond2(y: Any, dy: Any) -> bool:
    return fits_row(y)


for _op, _log in (("softmax", False), ("log_softmax", True)):
    register_pallas_kernel(_op, _make_fwd(_op, _log), name=f"{_op}_pallas",
                           dtypes={"x": FLOAT_DTYPES}, condition=_cond1)
for _op, _log in (("softmax_grad", False), ("log_softmax_grad", True)):
    register_pallas_kernel(_op, _make_bwd(_op, _log), name=f"{_op}_pallas",
                           dtypes={"y": FLOAT_DTYPES}, condition=_cond2)
