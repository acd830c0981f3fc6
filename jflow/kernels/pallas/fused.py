"""Pallas kernel of ``fused_bias_add_activation``: one read of x and bias, one write of y.

Exact GELU needs ``erf``, which the Triton lowering of JAX 0.10 does not provide; the kernel
uses Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7, below float32 rounding of the
result), the same formula in interpret mode, so CI checks the numbers the GPU computes.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax.numpy as jnp

from ...ops.fused import apply_activation
from ._base import FLOAT_DTYPES, count_launch, register_pallas_kernel
from ._compat import cdiv, compiler_params, load, next_power_of_2, out_struct, pl, store

_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)
_P = 0.3275911


def _erf(x: Any) -> Any:
    """erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7), sign-symmetric."""
    a = jnp.abs(x)
    t = 1.0 / (1.0 + _P * a)
    poly = t * (_A[0] + t * (_A[1] + t * (_A[2] + t * (_A[3] + t * _A[4]))))
    r = 1.0 - poly * jnp.exp(-a * a)
    return jnp.where(x < 0, -r, r)


def _act(z: Any, activation: str) -> Any:
    if activation == "gelu":
        return 0.5 * z * (1.0 + _erf(z * (1.0 / math.sqrt(2.0))))
    if activation == "silu":
        return z / (1.0 + jnp.exp(-z))
    return apply_activation(z, activation)


def _kernel(x_ref, b_ref, y_ref, *, br: int, bc: int, activation: str) -> None:
    n_rows, n_cols = x_ref.shape
    i, j = pl.program_id(0), pl.program_id(1)
    rows = i * br + jnp.arange(br, dtype=jnp.int32)
    cols = j * bc + jnp.arange(bc, dtype=jnp.int32)
    cmask = cols < n_cols
    mask = (rows < n_rows)[:, None] & cmask[None, :]
    rs, cs = pl.ds(i * br, br), pl.ds(j * bc, bc)
    x = load(x_ref.at[rs, cs], mask=mask, other=0.0).astype(jnp.float32)
    b = load(b_ref.at[cs], mask=cmask, other=0.0).astype(jnp.float32)
    y = _act(x + b[None, :], activation)
    store(y_ref.at[rs, cs], y.astype(y_ref.dtype), mask=mask)


def tiling(n_rows: int, n_cols: int) -> tuple[int, int]:
    bc = min(next_power_of_2(n_cols), 1024)
    br = max(1, min(next_power_of_2(n_rows), 4096 // bc))
    return br, bc


def fused_bias_add_activation_pallas(x: Any, bias: Any, *, activation: str,
                                     interpret: bool) -> Any:
    c = x.shape[-1]
    x2 = x.reshape(-1, c)
    r = x2.shape[0]
    br, bc = tiling(r, c)
    count_launch("fused_bias_add_activation_pallas")
    call = pl.pallas_call(functools.partial(_kernel, br=br, bc=bc, activation=activation),
                          out_shape=out_struct(x2.shape, x.dtype),
                          grid=(cdiv(r, br), cdiv(c, bc)), interpret=interpret,
                          name="fused_bias_add_activation",
                          compiler_params=compiler_params(4 if br * bc <= 2048 else 8))
    return call(x2, bias).reshape(x.shape)


def _cond(x: Any, bias: Any) -> bool:
    return len(x.shape) >= 1 and all(d > 0 for d in x.shape)


register_pallas_kernel("fused_bias_add_activation", fused_bias_add_activation_pallas,
                       name="fused_bias_add_activation_pallas", dtypes={"x": FLOAT_DTYPES},
                       condition=_cond)
