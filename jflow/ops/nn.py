"""Normalising ops along one axis: softmax and log_softmax — definition, xla kernel and SBP
signatures side by side.

Both are numerically stable (the row maximum is subtracted before ``exp``) and float-only.
float16 / bfloat16 inputs are computed in float32 and rounded once at the end, as PyTorch's
CPU and CUDA kernels accumulate in float. A row that is entirely ``-inf`` gives NaN, as in
PyTorch. A 0-d input is one row of one element (softmax 1, log_softmax 0); a size-0 axis
gives an empty result. Unlike OneFlow's softmax op (always the last axis, transposes in the
functor) the axis is an attr, so no transpose is ever materialised.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from ..kernels.registry import register_kernel
from ..sharding.sbp import S, Signature
from .infer import FLOAT, check_dtype, desc, normalize_axis
from .registry import Attr, define_op

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(jnp.bfloat16))


def _infer(x: Any, dim: int) -> Any:
    check_dtype(x, FLOAT, "input")
    normalize_axis(dim, len(x.shape))
    return desc(x.shape, x.dtype)


def _sbp(in_shapes: Any, n_out: int = 1, dim: int = -1, **_: Any) -> list[Signature]:
    """Split any axis but the softmax axis."""
    nd = len(in_shapes[0])
    if nd == 0:
        return []
    d = dim % nd
    return [Signature((S(i),), (S(i),)) for i in range(nd) if i != d]


def _prepare(x: Any, dim: int) -> tuple[Any, int, Any]:
    """(x as a >=1-d compute-dtype array, its axis, the shifted values x - max)."""
    xf = x.astype(np.float32) if x.dtype in _LOW_PRECISION else x
    if xf.ndim == 0:
        xf = xf.reshape(1)
    d = dim % xf.ndim
    return xf, d, xf - jnp.max(xf, axis=d, keepdims=True)


def _softmax(x: Any, dim: int) -> Any:
    if x.size == 0:
        return x
    _, d, shifted = _prepare(x, dim)
    e = jnp.exp(shifted)
    return (e / jnp.sum(e, axis=d, keepdims=True)).reshape(x.shape).astype(x.dtype)


def _log_softmax(x: Any, dim: int) -> Any:
    if x.size == 0:
        return x
    _, d, shifted = _prepare(x, dim)
    out = shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis=d, keepdims=True))
    return out.reshape(x.shape).astype(x.dtype)


define_op("softmax", inputs=["x"], outputs=["y"], attrs=[Attr("dim", "int64", -1)],
          infer=_infer, sbp=_sbp, doc="exp(x) / sum(exp(x)) along dim (numerically stable)")
register_kernel("softmax", _softmax, name="softmax_xla")

define_op("log_softmax", inputs=["x"], outputs=["y"], attrs=[Attr("dim", "int64", -1)],
          infer=_infer, sbp=_sbp, doc="x - logsumexp(x) along dim (numerically stable)")
register_kernel("log_softmax", _log_softmax, name="log_softmax_xla")
