"""nn ops: softmax and log_softmax (normalising along one axis) and their grad ops, linear,
embedding and dropout — definition, xla kernel and SBP signatures side by side.

softmax and log_softmax are numerically stable (the row maximum is subtracted before
``exp``) and float-only. float16 / bfloat16 inputs are computed in float32 and rounded once
at the end, as PyTorch's CPU and CUDA kernels accumulate in float. A row that is entirely
``-inf`` gives NaN, as in PyTorch. A 0-d input is one row of one element (softmax 1,
log_softmax 0); a size-0 axis gives an empty result. Unlike OneFlow's softmax op (always the
last axis, transposes in the functor) the axis is an attr, so no transpose is ever
materialised.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, P, S, Signature
from . import cost
from .factory import flat_draw
from .infer import FLOAT, INT, check_dtype, desc, normalize_axis
from .precision import float32_products
from .primitive import define_op
from .registry import Attr, Input

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(jnp.bfloat16))


def _to_compute(x: Any) -> Any:
    """float16 / bfloat16 computed in float32, other dtypes as they are."""
    return x.astype(np.float32) if x.dtype in _LOW_PRECISION else x


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
    xf = _to_compute(x)
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


# -- softmax_grad / log_softmax_grad -------------------------------------------------
# The backward of softmax / log_softmax from their output y (y * (dy - sum(dy * y)) and
# dy - exp(y) * sum(dy) along dim): their rules call these, so one kernel (xla, or Pallas on
# GPU) computes the whole gradient. They have rules of their own, so higher orders still work.

def _sg_infer(y: Any, dy: Any, dim: int) -> Any:
    check_dtype(y, FLOAT, "y")
    if np.dtype(dy.dtype) != np.dtype(y.dtype) or tuple(dy.shape) != tuple(y.shape):
        raise ValueError(f"dy must have y's shape {tuple(y.shape)} and dtype "
                         f"{np.dtype(y.dtype).name}, got {tuple(dy.shape)} "
                         f"{np.dtype(dy.dtype).name}")
    normalize_axis(dim, max(len(y.shape), 1))
    return desc(y.shape, y.dtype)


def _sg_sbp(in_shapes: Any, n_out: int = 1, dim: int = -1, **_: Any) -> list[Signature]:
    """Split any axis but ``dim``; linear in dy: (B, P) -> P."""
    nd = len(in_shapes[0])
    sigs = [Signature((B, P), (P,))]
    if nd:
        d = dim % nd
        sigs += [Signature((S(i), S(i)), (S(i),)) for i in range(nd) if i != d]
    return sigs


def _along(y: Any, dy: Any, dim: int, f: Any) -> Any:
    """``f(y, dy, axis)`` in float32 (or wider) along ``dim``; 0-d inputs as 1-element rows."""
    if y.size == 0:
        return dy
    yf, g = _to_compute(y), _to_compute(dy)
    d = dim % max(y.ndim, 1) if y.ndim else None
    if d is None:
        yf, g, d = yf.reshape(1), g.reshape(1), 0
    return f(yf, g, d).reshape(y.shape).astype(y.dtype)


def _softmax_grad(y: Any, dy: Any, dim: int) -> Any:
    return _along(y, dy, dim, lambda y, g, d: y * (g - jnp.sum(g * y, axis=d, keepdims=True)))


def _log_softmax_grad(y: Any, dy: Any, dim: int) -> Any:
    return _along(y, dy, dim,
                  lambda y, g, d: g - jnp.exp(y) * jnp.sum(g, axis=d, keepdims=True))


define_op("softmax_grad", inputs=["y", "dy"], outputs=["dx"], attrs=[Attr("dim", "int64", -1)],
          infer=_sg_infer, sbp=_sg_sbp,
          doc="backward of softmax from its output: y * (dy - sum(dy * y)) along dim")
register_kernel("softmax_grad", _softmax_grad, name="softmax_grad_xla")

define_op("log_softmax_grad", inputs=["y", "dy"], outputs=["dx"],
          attrs=[Attr("dim", "int64", -1)], infer=_sg_infer, sbp=_sg_sbp,
          doc="backward of log_softmax from its output: dy - exp(y) * sum(dy) along dim")
register_kernel("log_softmax_grad", _log_softmax_grad, name="log_softmax_grad_xla")


# -- linear, embedding, dropout -------------------------------------------------------
# linear: y = x @ weight^T + bias, x (..., in), weight (out, in), bias (out,) optional (as
# torch.nn.functional.linear; x may be 1-d). embedding: weight[indices] with integer indices of
# any shape. dropout: the keep mask is an output (bool), drawn from the generator's (key,
# counter) inputs as the random factories are, and reused by the backward rule.

def _linear_infer(x: Any, weight: Any, bias: Any) -> Any:
    check_dtype(x, FLOAT, "input")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and np.dtype(t.dtype) != np.dtype(x.dtype):
            raise TypeError(f"{name} must have the input's dtype {np.dtype(x.dtype).name}, got "
                            f"{np.dtype(t.dtype).name}")
    xs, ws = tuple(x.shape), tuple(weight.shape)
    if len(xs) < 1 or len(ws) != 2:
        raise ValueError(f"input must be at least 1-d and weight 2-d (out_features, "
                         f"in_features), got shapes {xs} and {ws}")
    if xs[-1] != ws[1]:
        raise ValueError(f"shapes cannot be multiplied: input {xs} has {xs[-1]} features, "
                         f"weight {ws} expects {ws[1]}")
    if bias is not None and tuple(bias.shape) != (ws[0],):
        raise ValueError(f"bias must have shape ({ws[0]},), got {tuple(bias.shape)}")
    return desc(xs[:-1] + (ws[0],), x.dtype)


def _linear_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Batch axes of x split the output; the out_features axis of weight (and bias) splits
    the last output axis; without bias, splitting the contracted axis gives a partial sum and
    the op is linear in x and in weight."""
    nd = len(in_shapes[0])
    has_bias = len(in_shapes) == 3
    rest = (B,) * (len(in_shapes) - 1)
    sigs = [Signature((S(i),) + rest, (S(i),)) for i in range(nd - 1)]
    sigs.append(Signature((B, S(0)) + ((S(0),) if has_bias else ()), (S(nd - 1),)))
    if not has_bias:
        sigs += [Signature((S(nd - 1), S(1)), (P,)), Signature((P, B), (P,)),
                 Signature((B, P), (P,))]
    return sigs


def _linear(x: Any, weight: Any, bias: Any) -> Any:
    y = jnp.matmul(x, weight.T, precision=float32_products())
    return y if bias is None else y + bias


define_op("linear", inputs=["x", "weight", Input("bias", optional=True)], outputs=["y"],
          infer=_linear_infer, sbp=_linear_sbp, flops=cost.contraction,
          doc="x @ weight^T + bias")
register_kernel("linear", _linear, name="linear_xla")


def _embedding_infer(weight: Any, indices: Any, padding_idx: Any) -> Any:
    check_dtype(weight, FLOAT, "weight")
    check_dtype(indices, INT, "indices")
    if len(weight.shape) != 2:
        raise ValueError(f"weight must be 2-d (num_embeddings, embedding_dim), got shape "
                         f"{tuple(weight.shape)}")
    n = weight.shape[0]
    if padding_idx is not None and not -n <= padding_idx < n:
        raise ValueError(f"padding_idx {padding_idx} must be within num_embeddings ({n})")
    return desc(tuple(indices.shape) + (weight.shape[1],), weight.dtype)


def _embedding_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Any axis of the indices splits the output; the embedding axis of weight splits the
    last output axis."""
    ni = len(in_shapes[1])
    return [Signature((B, S(i)), (S(i),)) for i in range(ni)] + [
        Signature((S(1), B), (S(ni),))]


def _embedding(weight: Any, indices: Any, padding_idx: Any) -> Any:
    # out-of-range rows read as 0 (eager calls are checked by the functor)
    return jnp.take(weight, indices, axis=0, mode="fill", fill_value=0)


define_op("embedding", inputs=["weight", "indices"], outputs=["y"],
          attrs=[Attr("padding_idx", "int64", None)], infer=_embedding_infer,
          sbp=_embedding_sbp, doc="weight[indices] (the padding_idx row gets no gradient)")
register_kernel("embedding", _embedding, name="embedding_xla")


def _embedding_grad_infer(dy: Any, indices: Any, num_embeddings: int, padding_idx: Any) -> Any:
    check_dtype(dy, FLOAT, "dy")
    check_dtype(indices, INT, "indices")
    if tuple(dy.shape[:-1]) != tuple(indices.shape) or len(dy.shape) != len(indices.shape) + 1:
        raise ValueError(f"dy must have shape indices.shape + (embedding_dim,) = "
                         f"{tuple(indices.shape)} + (d,), got {tuple(dy.shape)}")
    n = num_embeddings
    if n < 0:
        raise ValueError(f"num_embeddings must be >= 0, got {n}")
    if padding_idx is not None and not -n <= padding_idx < n:
        raise ValueError(f"padding_idx {padding_idx} must be within num_embeddings ({n})")
    return desc((n, dy.shape[-1]), dy.dtype)


def _embedding_grad_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Rows of dy split with their indices: each device's partial sum of the table; the
    embedding axis of dy splits the table's columns; a partial dy gives a partial table."""
    ni = len(in_shapes[1])
    return [Signature((S(i), S(i)), (P,)) for i in range(ni)] + [
        Signature((S(ni), B), (S(1),)), Signature((P, B), (P,))]


def _embedding_grad(dy: Any, indices: Any, num_embeddings: int, padding_idx: Any) -> Any:
    # one scatter-add of whole rows (not of single elements). Unchecked indices (under a
    # trace) mirror the forward's take(mode="fill"): -n <= i < 0 counts from the end, and an
    # index out of range, which read 0, adds nothing
    n, d = num_embeddings, dy.shape[-1]
    dw = jnp.zeros((n, d), dy.dtype).at[indices.reshape(-1)].add(dy.reshape(-1, d), mode="drop")
    if padding_idx is not None:
        dw = dw.at[padding_idx % n].set(0)
    return dw


define_op("embedding_grad", inputs=["dy", "indices"], outputs=["dweight"],
          attrs=[Attr("num_embeddings", "int64"), Attr("padding_idx", "int64", None)],
          infer=_embedding_grad_infer, sbp=_embedding_grad_sbp,
          doc="The gradient of embedding's weight: the rows of dy summed into a "
              "(num_embeddings, d) table at their indices' rows (the padding_idx row 0)")
register_kernel("embedding_grad", _embedding_grad, name="embedding_grad_xla")


def _dropout_check(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_infer(x: Any, key: Any, counter: Any, p: float) -> Any:
    check_dtype(x, FLOAT, "input")
    if tuple(key.shape) != (2,) or key.dtype != jnp.uint32:
        raise TypeError(f"key must be a uint32[2] PRNG key, got {key.dtype}{list(key.shape)}")
    return desc(x.shape, x.dtype), desc(x.shape, np.bool_)


def _dropout(x: Any, key: Any, counter: Any, p: float) -> Any:
    k = jax.random.fold_in(key, counter.astype(jnp.uint32))
    keep = flat_draw(lambda n: jax.random.bernoulli(k, 1.0 - p, n), x.shape)
    scale = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
    y = jnp.where(keep, x * jnp.asarray(scale, x.dtype), jnp.zeros((), x.dtype))
    return y, keep


define_op("dropout", inputs=["x", "key", "counter"], outputs=["y", "mask"],
          attrs=[Attr("p", "double", 0.5, static=True)], check=_dropout_check, infer=_dropout_infer,
          doc="zero each element with probability p, scale the rest by 1 / (1 - p); mask = kept")
register_kernel("dropout", _dropout, name="dropout_xla")
