"""Loss ops: definition, xla kernel and SBP signatures side by side.

The ops compute per-element losses (PyTorch's ``reduction="none"``); the functors reduce
(sum / mean) with the reduction ops, so a loss over batch-split data gives a partial sum and
no op needs a reduction attr. ``nll_loss`` also returns, per element, the weight of its target
class (0 where the target is ``ignore_index``): the "mean" reduction divides by its sum, as
PyTorch does.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, S, Signature, elementwise
from .infer import FLOAT, INT, broadcast_binary, broadcast_shapes, check_dtype, desc
from .primitive import define_op
from .registry import Attr, Input

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(jnp.bfloat16))


def _up(x: Any) -> Any:
    return x.astype(np.float32) if x.dtype in _LOW_PRECISION else x

# -- elementwise losses ------------------------------------------------------------------------

define_op("mse_loss", inputs=["x", "target"], outputs=["y"], infer=broadcast_binary(FLOAT),
          sbp=elementwise("none"), doc="(x - target)^2, elementwise (broadcasting)")
register_kernel("mse_loss", lambda x, target: jnp.square(x - target), name="mse_loss_xla")

define_op("l1_loss", inputs=["x", "target"], outputs=["y"], infer=broadcast_binary(FLOAT),
          sbp=elementwise("none"), doc="|x - target|, elementwise (broadcasting)")
register_kernel("l1_loss", lambda x, target: jnp.abs(x - target), name="l1_loss_xla")


def _bce_infer(x: Any, target: Any, weight: Any, pos_weight: Any) -> Any:
    check_dtype(x, FLOAT, "input")
    shapes = [tuple(x.shape)]
    for name, t in (("target", target), ("weight", weight), ("pos_weight", pos_weight)):
        if t is None:
            continue
        if np.dtype(t.dtype) != np.dtype(x.dtype):
            raise TypeError(f"{name} must have the input's dtype {np.dtype(x.dtype).name}, got "
                            f"{np.dtype(t.dtype).name}")
        shapes.append(tuple(t.shape))
    return desc(broadcast_shapes(*shapes), x.dtype)


def _softplus_neg(x: Any) -> Any:
    """log(1 + exp(-x)), stable."""
    return jnp.log1p(jnp.exp(-jnp.abs(x))) + jnp.maximum(-x, 0)


def _bce(x: Any, target: Any, weight: Any, pos_weight: Any) -> Any:
    sp = _softplus_neg(x)
    if pos_weight is None:
        out = (1 - target) * x + sp
    else:
        out = (1 - target) * x + (1 + (pos_weight - 1) * target) * sp
    return out if weight is None else out * weight


define_op("binary_cross_entropy_with_logits",
          inputs=["x", "target", Input("weight", optional=True),
                  Input("pos_weight", optional=True)],
          outputs=["y"], infer=_bce_infer, sbp=elementwise("none"),
          doc="-w [pos_weight t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))], elementwise")
register_kernel("binary_cross_entropy_with_logits", _bce, name="bce_with_logits_xla")


# -- nll_loss ----------------------------------------------------------------------------------

def _nll_infer(x: Any, target: Any, weight: Any, ignore_index: int) -> Any:
    check_dtype(x, FLOAT, "input")
    check_dtype(target, INT, "target")
    xs, ts = tuple(x.shape), tuple(target.shape)
    if len(xs) == 0:
        raise ValueError("input must be at least 1-d (C,) or (N, C, *), got a 0-d input")
    want = () if len(xs) == 1 else xs[:1] + xs[2:]
    if ts != want:
        raise ValueError(f"target of shape {ts} does not match input of shape {xs} (expected "
                         f"{want})")
    c = xs[0] if len(xs) == 1 else xs[1]
    if weight is not None:
        if np.dtype(weight.dtype) != np.dtype(x.dtype):
            raise TypeError(f"weight must have the input's dtype {np.dtype(x.dtype).name}, got "
                            f"{np.dtype(weight.dtype).name}")
        if tuple(weight.shape) != (c,):
            raise ValueError(f"weight must have shape ({c},) (one per class), got "
                             f"{tuple(weight.shape)}")
    return desc(ts, x.dtype), desc(ts, x.dtype)


def _nll_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Split any non-class axis of input with the matching target axis."""
    nd = len(in_shapes[0])
    rest = (B,) * (len(in_shapes) - 2)
    sigs = []
    for i in range(nd):
        if i == 1 or nd == 1:
            continue
        j = 0 if i == 0 else i - 1
        sigs.append(Signature((S(i), S(j)) + rest, (S(j),) * n_out))
    return sigs


def _nll(x: Any, target: Any, weight: Any, ignore_index: int) -> Any:
    axis = 0 if x.ndim == 1 else 1
    valid = target != ignore_index
    t = jnp.where(valid, target, 0)
    xt = jnp.take_along_axis(x, jnp.expand_dims(t, axis), axis=axis, mode="fill",
                             fill_value=0).squeeze(axis)
    wt = jnp.ones_like(xt) if weight is None else jnp.take(weight, t, mode="fill", fill_value=0)
    wt = jnp.where(valid, wt, jnp.zeros((), x.dtype))
    return -wt * xt, wt


define_op("nll_loss", inputs=["x", "target", Input("weight", optional=True)],
          outputs=["loss", "target_weight"], attrs=[Attr("ignore_index", "int64", -100)],
          infer=_nll_infer, sbp=_nll_sbp,
          doc="-weight[t] * x[t] per element (class axis 1, or 0 for a 1-d input) and "
              "weight[t]; 0 where t == ignore_index")
register_kernel("nll_loss", _nll, name="nll_loss_xla")


# -- sparse_softmax_cross_entropy ----------------------------------------------------
# The plain cross_entropy (2-d logits, class-index labels, no weight, no smoothing) as one op:
# loss = logsumexp(logits) - logits[label] per row (0 where label == ignore_index), plus the
# row's logsumexp (float32 for float16/bfloat16 logits) saved for the backward, which needs
# no softmax kept in memory. On GPU a Pallas kernel streams the vocabulary in blocks with an
# online logsumexp (jflow/kernels/pallas/cross_entropy.py).

def _lse_dtype(dt: Any) -> Any:
    return np.dtype(np.float32) if np.dtype(dt) in (np.dtype(np.float16),
                                                    np.dtype(jnp.bfloat16)) else np.dtype(dt)


def _sce_infer(logits: Any, labels: Any, ignore_index: int) -> Any:
    check_dtype(logits, FLOAT, "logits")
    check_dtype(labels, INT, "labels")
    ls, ts = tuple(logits.shape), tuple(labels.shape)
    if len(ls) != 2:
        raise ValueError(f"logits must be 2-d (N, V), got shape {ls}")
    if ts != ls[:1]:
        raise ValueError(f"labels of shape {ts} do not match logits of shape {ls} (expected "
                         f"{ls[:1]})")
    return desc(ts, logits.dtype), desc(ts, _lse_dtype(logits.dtype))


def _rows_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Split the rows (batch) of every input and output."""
    return [Signature((S(0),) * len(in_shapes), (S(0),) * n_out)]


def sce_forward(logits: Any, labels: Any, ignore_index: int) -> Any:
    """(loss, lse) of the plain cross entropy (the xla kernel; also used as a reference)."""
    x = logits.astype(_lse_dtype(logits.dtype))
    m = jnp.max(x, axis=1, keepdims=True)
    lse = (jnp.log(jnp.sum(jnp.exp(x - m), axis=1)) + m[:, 0])
    valid = labels != ignore_index
    t = jnp.where(valid, labels, 0)
    picked = jnp.take_along_axis(x, t[:, None].astype(np.int32), axis=1, mode="fill",
                                 fill_value=0)[:, 0]
    loss = jnp.where(valid, lse - picked, jnp.zeros((), x.dtype))
    return loss.astype(logits.dtype), lse


define_op("sparse_softmax_cross_entropy", inputs=["logits", "labels"], outputs=["loss", "lse"],
          attrs=[Attr("ignore_index", "int64", -100)], infer=_sce_infer, sbp=_rows_sbp,
          doc="per row: logsumexp(logits) - logits[label] (0 where label == ignore_index), "
              "and logsumexp(logits)")
register_kernel("sparse_softmax_cross_entropy", sce_forward,
                name="sparse_softmax_cross_entropy_xla")


def _sceg_infer(logits: Any, labels: Any, lse: Any, dloss: Any, dlse: Any,
                ignore_index: int) -> Any:
    _sce_infer(logits, labels, ignore_index)
    n = tuple(logits.shape[:1])
    for name, t, dt in (("lse", lse, _lse_dtype(logits.dtype)), ("dloss", dloss, logits.dtype),
                        ("dlse", dlse, _lse_dtype(logits.dtype))):
        if tuple(t.shape) != n or np.dtype(t.dtype) != np.dtype(dt):
            raise ValueError(f"{name} must have shape {n} and dtype {np.dtype(dt).name}, got "
                             f"{tuple(t.shape)} {np.dtype(t.dtype).name}")
    return desc(logits.shape, logits.dtype)


def sce_backward(logits: Any, labels: Any, lse: Any, dloss: Any, dlse: Any,
                 ignore_index: int) -> Any:
    """d logits = softmax * (dloss * valid + dlse) - onehot(label) * dloss * valid."""
    ct = _lse_dtype(logits.dtype)
    x = logits.astype(ct)
    valid = labels != ignore_index
    dl = jnp.where(valid, dloss.astype(ct), jnp.zeros((), ct))
    p = jnp.exp(x - lse.astype(ct)[:, None])
    hit = jnp.arange(x.shape[1])[None, :] == labels[:, None]
    g = p * (dl + dlse.astype(ct))[:, None] - jnp.where(hit, dl[:, None], jnp.zeros((), ct))
    return g.astype(logits.dtype)


define_op("sparse_softmax_cross_entropy_grad",
          inputs=["logits", "labels", "lse", "dloss", "dlse"], outputs=["dlogits"],
          attrs=[Attr("ignore_index", "int64", -100)], infer=_sceg_infer, sbp=_rows_sbp,
          doc="backward of sparse_softmax_cross_entropy: softmax * (dloss * valid + dlse) - "
              "onehot(label) * dloss * valid")
register_kernel("sparse_softmax_cross_entropy_grad", sce_backward,
                name="sparse_softmax_cross_entropy_grad_xla")


# -- ctc_loss ----------------------------------------------------------------------------------
# The connectionist temporal classification loss of Graves et al. (2006), per sample: the
# negative log of the summed probability of every alignment of log_probs (T, N, C) with the
# target (padded rows of targets (N, S)) over the first input_lengths[n] steps. The forward
# variables alpha over the extended target (blank, l1, blank, l2, ..., blank; 2 S + 1 states)
# are computed in log space with lax.scan over time; a sample with no valid alignment has loss
# +inf. The gradient is one ctc_loss_grad op (NoGrad) whose kernel is JAX's vjp of this scan:
# the true derivative of each sample's loss in log_probs, which the rule scales by dloss
# (linear, so jvp / vjp agree); second derivatives are not supported (the rule refuses them).

def _ctc_infer(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
               blank: int) -> Any:
    check_dtype(log_probs, FLOAT, "log_probs")
    check_dtype(targets, INT, "targets")
    check_dtype(input_lengths, INT, "input_lengths")
    check_dtype(target_lengths, INT, "target_lengths")
    ls, ts = tuple(log_probs.shape), tuple(targets.shape)
    if len(ls) != 3:
        raise ValueError(f"log_probs must be 3-d (T, N, C), got shape {ls}")
    if len(ts) != 2 or ts[0] != ls[1]:
        raise ValueError(f"targets must be 2-d (N, S) with N = {ls[1]}, got shape {ts}")
    for name, t in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        if tuple(t.shape) != (ls[1],):
            raise ValueError(f"{name} must have shape ({ls[1]},), got {tuple(t.shape)}")
    if not 0 <= blank < ls[2]:
        raise ValueError(f"blank {blank} must be in [0, {ls[2]}) (the number of classes)")
    return desc(ls[1:2], log_probs.dtype)


def _ctc_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Split the batch: axis 1 of log_probs, axis 0 of the targets, lengths and losses."""
    return [Signature((S(1),) + (S(0),) * (len(in_shapes) - 1), (S(0),) * n_out)]


def _ctcg_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Split the batch: axis 1 of log_probs and of the gradient, axis 0 of the rest."""
    return [Signature((S(1),) + (S(0),) * (len(in_shapes) - 1), (S(1),) * n_out)]


def _lse3(a: Any, b: Any, c: Any) -> Any:
    """log(exp(a) + exp(b) + exp(c)), -inf when all are -inf, with finite (zero) gradients
    there (no inf - inf)."""
    m = jnp.maximum(jnp.maximum(a, b), c)
    ms = jnp.where(jnp.isfinite(m), m, jnp.zeros((), m.dtype))
    s = jnp.exp(a - ms) + jnp.exp(b - ms) + jnp.exp(c - ms)
    pos = s > 0
    return jnp.where(pos, jnp.log(jnp.where(pos, s, jnp.ones((), s.dtype))) + ms,
                     jnp.full((), -jnp.inf, s.dtype))


def ctc_forward(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
                blank: int) -> Any:
    """Per-sample CTC negative log-likelihood (the xla kernel; differentiated by the grad op)."""
    lp = _up(log_probs)
    t_max, n, c = lp.shape
    s_max = targets.shape[1]
    k = 2 * s_max + 1
    tg = jnp.clip(targets.astype(np.int32), 0, c - 1)
    ext = jnp.full((n, k), blank, np.int32).at[:, 1::2].set(tg)          # (N, K)
    # a skip s-2 -> s is allowed onto a label that differs from the label two states back
    prev2 = jnp.concatenate([jnp.full((n, 2), blank, np.int32), ext[:, :-2]], axis=1)
    skip = (ext != blank) & (ext != prev2)
    em = jnp.take_along_axis(lp, jnp.broadcast_to(ext[None], (t_max, n, k)), axis=2)
    neg = jnp.full((), -jnp.inf, lp.dtype)
    init = jnp.full((n, k), -jnp.inf, lp.dtype).at[:, 0].set(0.0)
    il = input_lengths.astype(np.int32)

    def step(alpha: Any, xs: Any) -> Any:
        e, t = xs
        a1 = jnp.concatenate([jnp.full((n, 1), -jnp.inf, lp.dtype), alpha[:, :-1]], axis=1)
        a2 = jnp.concatenate([jnp.full((n, 2), -jnp.inf, lp.dtype), alpha[:, :-2]], axis=1)
        new = _lse3(alpha, a1, jnp.where(skip, a2, neg)) + e
        return jnp.where((t < il)[:, None], new, alpha), None

    alpha, _ = lax.scan(step, init, (em, jnp.arange(t_max, dtype=np.int32)))
    tl = target_lengths.astype(np.int32)
    last = jnp.take_along_axis(alpha, (2 * tl)[:, None], axis=1)[:, 0]
    before = jnp.take_along_axis(alpha, jnp.maximum(2 * tl - 1, 0)[:, None], axis=1)[:, 0]
    before = jnp.where(tl > 0, before, neg)
    ll = _lse3(last, before, jnp.full_like(last, -jnp.inf))
    return (-ll).astype(log_probs.dtype)


define_op("ctc_loss", inputs=["log_probs", "targets", "input_lengths", "target_lengths"],
          outputs=["loss"], attrs=[Attr("blank", "int64", 0)], infer=_ctc_infer, sbp=_ctc_sbp,
          doc="per-sample CTC loss: -log of the summed probability of all alignments of the "
              "padded targets (N, S) with log_probs (T, N, C)")
register_kernel("ctc_loss", ctc_forward, name="ctc_loss_xla")


def _ctcg_infer(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
                blank: int) -> Any:
    _ctc_infer(log_probs, targets, input_lengths, target_lengths, blank)
    return desc(log_probs.shape, log_probs.dtype)


def _ctc_grad(log_probs: Any, targets: Any, input_lengths: Any, target_lengths: Any,
              blank: int) -> Any:
    loss, vjp = jax.vjp(lambda lp: ctc_forward(lp, targets, input_lengths, target_lengths,
                                               blank), log_probs)
    return vjp(jnp.ones_like(loss))[0]


define_op("ctc_loss_grad", inputs=["log_probs", "targets", "input_lengths", "target_lengths"],
          outputs=["dlog_probs"], attrs=[Attr("blank", "int64", 0)], infer=_ctcg_infer,
          sbp=_ctcg_sbp, traits=("NoSideEffect", "NoGrad"),
          doc="the derivative of each sample's ctc_loss in its log_probs[:, n, :] (JAX's vjp "
              "of the forward scan); the backward rule scales it by dloss")
register_kernel("ctc_loss_grad", _ctc_grad, name="ctc_loss_grad_xla")
