"""Functors of the loss ops (``jflow/ops/loss.py``): PyTorch's argument rules, then the op,
then the reduction (``"none"``, ``"mean"``, ``"sum"``) with the reduction ops.

``cross_entropy`` of (N, C) logits with class indices, no weight and no label smoothing is one
``sparse_softmax_cross_entropy`` op (Pallas on GPU: no softmax in memory). Otherwise it is
``log_softmax`` over the class axis + ``nll_loss`` (class-index targets)
or a weighted sum with the log-probabilities (class-probability targets: a floating target of
the input's shape), with PyTorch's label smoothing: for class indices,
``(1 - ls) * nll + ls / C * smooth`` where ``smooth = -sum_c weight[c] log p_c`` (0 where the
target is ignored) and "mean" divides both by the sum of the targets' weights.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ...lazy_mode.checks import host_value
from ...ops import get
from ...tensor import Tensor, _wrap
from ...views.bounds import bounds_within
from ..promotion import cast, scalar_tensor
from ..registry import api as _api
from ..registry import functor
from .index import checked_min_max, host_min_max, values_source

_mse, _l1 = get("mse_loss").apply, get("l1_loss").apply
_bce = get("binary_cross_entropy_with_logits").apply
_nll = get("nll_loss").apply
_sce = get("sparse_softmax_cross_entropy").apply
_sum, _mean = get("reduce_sum").apply, get("reduce_mean").apply
_log_softmax = get("log_softmax").apply
_mul, _add, _div, _neg = get("mul").apply, get("add").apply, get("div").apply, get("neg").apply
_reshape, _ne, _cast = get("reshape").apply, get("ne").apply, get("cast").apply

_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(fname: str, reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{fname}(): {reduction!r} is not a valid value for reduction "
                         f"(expected one of {list(_REDUCTIONS)})")


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return _sum(loss, axis=(), keepdim=False)
    return _mean(loss, axis=(), keepdim=False)


def _float_like(fname: str, input: Tensor, *others: Any) -> list[Any]:
    """Others cast to the (floating) input's dtype; None stays None."""
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    dt = input._meta.dtype
    return [None if t is None else (t if t._meta.dtype == dt else cast(t, dt)) for t in others]


def _pointwise(fname: str, op: Any, input: Tensor, target: Tensor, reduction: str) -> Tensor:
    _check_reduction(fname, reduction)
    (target,) = _float_like(fname, input, target)
    return _reduce(op(input, target), reduction)


@functor("MseLoss")
def mse_loss(input: Tensor, target: Tensor, reduction: str) -> Tensor:
    """(input - target)^2, reduced (input and target broadcast)."""
    return _pointwise("mse_loss", _mse, input, target, reduction)


@functor("L1Loss")
def l1_loss(input: Tensor, target: Tensor, reduction: str) -> Tensor:
    """|input - target|, reduced (input and target broadcast)."""
    return _pointwise("l1_loss", _l1, input, target, reduction)


@functor("BinaryCrossEntropyWithLogits")
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Any, reduction: str,
                                     pos_weight: Any) -> Tensor:
    """-w [pos_weight t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))], reduced; pos_weight
    broadcasts along the last (class) axis."""
    fname = "binary_cross_entropy_with_logits"
    _check_reduction(fname, reduction)
    if tuple(target._meta.shape) != tuple(input._meta.shape):
        raise ValueError(f"{fname}(): target size {list(target._meta.shape)} must be the same "
                         f"as input size {list(input._meta.shape)}")
    target, weight, pos_weight = _float_like(fname, input, target, weight, pos_weight)
    return _reduce(_bce(input, target, weight, pos_weight), reduction)


def _check_targets(fname: str, target: Tensor, c: int, ignore_index: int) -> bool:
    """Check class-index targets (raises on a bad one); True when the targets' values are
    known now and none is ``ignore_index``: a "mean" then divides by the number of targets,
    known without running anything (one ``reduce_mean``, not ``ne`` / ``cast`` /
    ``reduce_sum`` / ``div`` programs counting them, on the device, every step)."""
    if target._meta.dtype.kind not in "iu":
        raise TypeError(f"{fname}(): expected an integer (class index) target, got "
                        f"{target.dtype}")
    def check(lo: int, hi: int) -> None:
        if lo >= 0 and hi < c:
            return
        src = values_source(target)  # (a reshaped target: its base's values, nothing runs)
        t = host_value(src)  # (lazy mode: a batch's host copy, nothing runs)
        if t is None:
            with jax.ensure_compile_time_eval():
                t = np.asarray(src._value)
        bad = t[((t < 0) | (t >= c)) & (t != ignore_index)]
        if bad.size:
            raise IndexError(f"{fname}(): target {int(bad[0])} is out of bounds (classes: {c})")
    w = bounds_within(target)  # (known without reading: padded labels, jflow/views/bounds.py)
    if w is not None and 0 <= w[0] and w[1] < c and \
            (w[2] is None or w[2] == ignore_index or 0 <= w[2] < c):
        return w[2] != ignore_index and not w[0] <= ignore_index <= w[1]
    mm = checked_min_max(target, check)
    return mm is not None and not mm[0] <= ignore_index <= mm[1]


def _classes(input: Tensor) -> int:
    s = input._meta.shape
    if len(s) == 0:
        raise ValueError("expected an input of at least 1 dim (C,) or (N, C, *), got 0-d")
    return int(s[0] if len(s) == 1 else s[1])


def _nll_reduced(loss: Tensor, wt: Tensor | None, reduction: str, counted: bool = False
                 ) -> Tensor:
    """``loss`` reduced; "mean" divides by the targets' summed weights ``wt`` -- their count
    when ``counted`` (no weight, no target ignored: see :func:`_check_targets`)."""
    if reduction == "none":
        return loss
    if counted and reduction == "mean":
        return _mean(loss, axis=(), keepdim=False)
    total = _sum(loss, axis=(), keepdim=False)
    if reduction == "sum":
        return total
    return _div(total, _sum(wt, axis=(), keepdim=False))


@functor("NllLoss", checks=True)
def nll_loss(input: Tensor, target: Tensor, weight: Any, ignore_index: int,
             reduction: str) -> Tensor:
    """-weight[t] input[t] per element (class axis 1, or 0 for a 1-d input); "mean" divides
    by the sum of the non-ignored targets' weights (nan if every target is ignored)."""
    _check_reduction("nll_loss", reduction)
    c = _classes(input)
    none_ignored = _check_targets("nll_loss", target, c, ignore_index)
    (weight,) = _float_like("nll_loss", input, weight)
    loss, wt = _nll(input, target, weight, ignore_index=ignore_index)
    return _nll_reduced(loss, wt, reduction, counted=none_ignored and weight is None)


def _plain_cross_entropy(input: Tensor, target: Tensor, c: int, ignore_index: int,
                         reduction: str) -> Tensor:
    """(N, C) logits and class indices, no weight, no smoothing: one
    sparse_softmax_cross_entropy op (a Pallas kernel that never materialises the softmax on
    GPU); "mean" divides by the number of non-ignored targets (nan if none, as PyTorch)."""
    none_ignored = _check_targets("cross_entropy", target, c, ignore_index)
    loss, _ = _sce(input, target, ignore_index=ignore_index)
    wt = None  # (the non-ignored targets as weights: only a "mean" that must count them)
    if reduction == "mean" and not none_ignored:
        wt = _cast(_ne(target, scalar_tensor(ignore_index, target._meta.dtype)),
                   dtype=input._meta.dtype)
    return _nll_reduced(loss, wt, reduction, counted=none_ignored)


@functor("CrossEntropy", checks=True)
def cross_entropy(input: Tensor, target: Tensor, weight: Any, ignore_index: int, reduction: str,
                  label_smoothing: float) -> Tensor:
    """log_softmax over the class axis + nll_loss (class indices), or -sum_c weight[c] t_c
    log p_c (class probabilities); PyTorch's label smoothing and reductions."""
    fname = "cross_entropy"
    _check_reduction(fname, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"{fname}(): label_smoothing must be between 0.0 and 1.0, got "
                         f"{label_smoothing}")
    c = _classes(input)
    (weight,) = _float_like(fname, input, weight)
    nd = input._meta.ndim
    if (nd == 2 and weight is None and label_smoothing == 0.0
            and not target.is_floating_point()):
        return _plain_cross_entropy(input, target, c, ignore_index, reduction)
    axis = 0 if nd == 1 else 1
    logp = _log_softmax(input, dim=axis)
    dt = input._meta.dtype
    wview = None if weight is None else _reshape(
        weight, shape=(c,) + (1,) * (nd - 1 - axis))
    if target.is_floating_point():  # class probabilities
        if tuple(target._meta.shape) != tuple(input._meta.shape):
            raise ValueError(f"{fname}(): a probability target must have the input's shape "
                             f"{list(input._meta.shape)}, got {list(target._meta.shape)}")
        (t,) = _float_like(fname, input, target)
        if label_smoothing > 0:
            t = _add(_mul(t, scalar_tensor(1.0 - label_smoothing, dt)),
                     scalar_tensor(label_smoothing / c, dt))
        prod = _mul(logp, t) if wview is None else _mul(_mul(logp, t), wview)
        loss = _neg(_sum(prod, axis=(axis,), keepdim=False))
        if reduction == "mean":
            n = input._meta.size // c if c else 0
            return _div(_sum(loss, axis=(), keepdim=False), scalar_tensor(float(n), dt))
        return _reduce(loss, reduction)
    none_ignored = _check_targets(fname, target, c, ignore_index)
    loss, wt = _nll(logp, target, weight, ignore_index=ignore_index)
    if label_smoothing == 0.0:
        return _nll_reduced(loss, wt, reduction, counted=none_ignored and weight is None)
    wl = logp if wview is None else _mul(logp, wview)
    smooth = _neg(_sum(wl, axis=(axis,), keepdim=False))
    valid = _ne(target, scalar_tensor(ignore_index, target._meta.dtype))
    smooth = _mul(smooth, _cast(valid, dtype=dt))
    a, b = scalar_tensor(1.0 - label_smoothing, dt), scalar_tensor(label_smoothing / c, dt)
    if reduction == "none":
        return _add(_mul(loss, a), _mul(smooth, b))
    both = _add(_mul(_sum(loss, axis=(), keepdim=False), a),
                _mul(_sum(smooth, axis=(), keepdim=False), b))
    if reduction == "sum":
        return both
    return _div(both, _sum(wt, axis=(), keepdim=False))


# -- losses written with existing ops -------------------------------------------------------------
# Each is a short composition of jflow ops (the tape and jax.grad differentiate through them),
# reduced by ``_reduce``. Denominators and logs that a where() discards are made safe first:
# where() gives the discarded branch a zero cotangent, and 0 * inf would still be NaN.


def _prep(fname: str, reduction: str, input: Tensor, *others: Any,
          reductions: tuple[str, ...] = _REDUCTIONS) -> list[Any]:
    if reduction not in reductions:
        raise ValueError(f"{fname}(): {reduction!r} is not a valid value for reduction "
                         f"(expected one of {list(reductions)})")
    return _float_like(fname, input, *others)


def _same_shape(fname: str, a: Tensor, b: Tensor, an: str = "input", bn: str = "target"
                ) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{fname}(): {bn} size {list(b.shape)} must be the same as {an} size "
                         f"{list(a.shape)}")


def _relu(t: Tensor) -> Tensor:
    return _api().relu(t)


def _softplus(t: Tensor) -> Tensor:
    return _api().softplus(t, 1.0, 20.0)


@functor("SmoothL1Loss")
def smooth_l1_loss(input: Tensor, target: Tensor, reduction: str, beta: float) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = input - target); beta = 0 is
    l1_loss, as PyTorch."""
    fname = "smooth_l1_loss"
    (target,) = _prep(fname, reduction, input, target)
    if beta < 0:
        raise ValueError(f"{fname}(): beta must be non-negative, got {beta}")
    if beta == 0:
        return _reduce(_l1(input, target), reduction)
    d = input - target
    ad = d.abs()
    return _reduce(_api().where(ad < beta, d * d * (0.5 / beta), ad - 0.5 * beta), reduction)


@functor("HuberLoss")
def huber_loss(input: Tensor, target: Tensor, reduction: str, delta: float) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)."""
    fname = "huber_loss"
    (target,) = _prep(fname, reduction, input, target)
    if not delta > 0:
        raise ValueError(f"{fname}(): delta must be positive, got {delta}")
    d = input - target
    ad = d.abs()
    return _reduce(_api().where(ad < delta, d * d * 0.5, (ad - 0.5 * delta) * delta), reduction)


@functor("KlDiv")
def kl_div(input: Tensor, target: Tensor, reduction: str, log_target: bool) -> Tensor:
    """Pointwise t (log t - input) (0 where t == 0), or exp(t) (t - input) with
    ``log_target``; "batchmean" divides the sum by the batch size (input.size(0))."""
    fname = "kl_div"
    (target,) = _prep(fname, reduction, input, target,
                      reductions=("none", "batchmean", "sum", "mean"))
    if log_target:
        loss = target.exp() * (target - input)
    else:
        safe = _api().where(target == 0, 1.0, target)   # log(1) = 0 where t == 0: no NaN grad
        loss = target * (safe.log() - input)
    if reduction == "batchmean":
        n = int(input.shape[0]) if input.ndim else 1
        return loss.sum() / n
    return _reduce(loss, reduction)


@functor("SoftMarginLoss")
def soft_margin_loss(input: Tensor, target: Tensor, reduction: str) -> Tensor:
    """log(1 + exp(-y x)) (a softplus: finite where PyTorch's log1p(exp) overflows)."""
    (target,) = _prep("soft_margin_loss", reduction, input, target)
    return _reduce(_softplus(-(target * input)), reduction)


@functor("MarginRankingLoss")
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float,
                        reduction: str) -> Tensor:
    """max(0, -y (x1 - x2) + margin)."""
    input2, target = _prep("margin_ranking_loss", reduction, input1, input2, target)
    return _reduce(_relu(-target * (input1 - input2) + margin), reduction)


@functor("HingeEmbeddingLoss")
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float, reduction: str
                         ) -> Tensor:
    """x where y == 1, max(0, margin - x) where y == -1 (PyTorch's sum of both masks)."""
    (target,) = _prep("hinge_embedding_loss", reduction, input, target)
    where = _api().where
    loss = (where(target != 1, _relu(margin - input), 0.0)
            + where(target != -1, input, 0.0))
    return _reduce(loss, reduction)


def _cos_sim_eps(a: Tensor, b: Tensor, eps: float) -> Tensor:
    """PyTorch's cosine_embedding_loss: dot / sqrt((|a|^2 + eps) (|b|^2 + eps)), last dim."""
    dot = (a * b).sum(-1)
    return dot / ((((a * a).sum(-1) + eps) * ((b * b).sum(-1) + eps)).sqrt())


@functor("CosineEmbeddingLoss")
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float,
                          reduction: str) -> Tensor:
    """1 - cos(x1, x2) where y == 1, max(0, cos - margin) where y == -1 (1-d or 2-d inputs,
    cosine over the last dim)."""
    fname = "cosine_embedding_loss"
    input2, target = _prep(fname, reduction, input1, input2, target)
    _same_shape(fname, input1, input2, "input1", "input2")
    if input1.ndim not in (1, 2) or target.ndim != input1.ndim - 1:
        raise ValueError(f"{fname}(): expected 1-d or 2-d inputs and a target with one "
                         f"dimension less, got input1 {list(input1.shape)}, target "
                         f"{list(target.shape)}")
    cos = _cos_sim_eps(input1, input2, 1e-12)
    where = _api().where
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, _relu(cos - margin), 0.0)
    return _reduce(loss, reduction)


@functor("PoissonNllLoss")
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: str) -> Tensor:
    """exp(x) - t x (``log_input``) or x - t log(x + eps); ``full`` adds Stirling's term
    t log t - t + 0.5 log(2 pi t) where t > 1."""
    (target,) = _prep("poisson_nll_loss", reduction, input, target)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        big = target > 1
        safe = _api().where(big, target, 2.0)
        stirling = safe * safe.log() - safe + 0.5 * (safe * (2 * np.pi)).log()
        loss = loss + _api().where(big, stirling, 0.0)
    return _reduce(loss, reduction)


@functor("GaussianNllLoss")
def gaussian_nll_loss(input: Tensor, target: Tensor, var: Any, full: bool, eps: float,
                      reduction: str) -> Tensor:
    """0.5 (log var + (x - t)^2 / var) (+ 0.5 log 2 pi with ``full``); var is clamped to eps
    for the value only (the gradient passes as if unclamped, as PyTorch's no_grad clamp)."""
    fname = "gaussian_nll_loss"
    if not isinstance(var, Tensor):
        var = _api().full(tuple(input.shape), float(var), dtype=input.dtype, device=input.device)
    target, var = _prep(fname, reduction, input, target, var)
    xs, vs = tuple(input.shape), tuple(var.shape)
    if vs != xs:
        if xs[:-1] == vs:
            var = var.unsqueeze(-1)
        elif not (xs[:-1] == vs[:-1] and vs[-1:] == (1,)):
            raise ValueError(f"{fname}(): var of shape {list(vs)} must be input's shape "
                             f"{list(xs)}, or that shape with the last dim 1 or left out")
    if eps < 0:
        raise ValueError(f"{fname}(): eps must be non-negative, got {eps}")
    with jax.ensure_compile_time_eval():
        v = var._value
        if not isinstance(v, jax.core.Tracer) and bool(np.any(np.asarray(v) < 0)):
            raise ValueError(f"{fname}(): var has negative entry/entries")
    var = var + (_api().clamp(var, eps, None) - var).detach()
    loss = 0.5 * (var.log() + (input - target).square() / var)
    if full:
        loss = loss + 0.5 * float(np.log(2 * np.pi))
    return _reduce(loss, reduction)


@functor("MultiMarginLoss", checks=True)
def multi_margin_loss(input: Tensor, target: Tensor, p: int, margin: float, weight: Any,
                      reduction: str) -> Tensor:
    """sum over i != y of weight[y] max(0, margin - x[y] + x[i])^p, divided by the number of
    classes; input (N, C) or (C,), target class indices."""
    fname = "multi_margin_loss"
    (weight,) = _prep(fname, reduction, input, weight)
    if p not in (1, 2):
        raise ValueError(f"{fname}(): only p == 1 and p == 2 are supported, got {p}")
    if input.ndim > 2:
        raise ValueError(f"{fname}(): expected a 0-d, 1-d (C,) or 2-d (N, C) input, got shape "
                         f"{list(input.shape)}")
    x = input if input.ndim == 2 else input.reshape((1, -1))  # 0-d: one class (as PyTorch)
    c = int(x.shape[1])
    t = target.reshape((-1,))
    if int(t.shape[0]) != int(x.shape[0]):
        raise ValueError(f"{fname}(): target of shape {list(target.shape)} does not match input "
                         f"of shape {list(input.shape)}")
    _check_targets(fname, t, c, -100)
    xy = _api().gather(x, 1, t.unsqueeze(1))
    z = _relu(x - xy + margin)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * _api().gather(weight, 0, t).unsqueeze(1)
    other = _api().one_hot(t, c) == 0
    loss = _api().where(other, z, 0.0).sum(1) / c
    return _reduce(loss if input.ndim == 2 else loss.reshape(()), reduction)


@functor("TripletMarginLoss")
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float,
                        p: float, eps: float, swap: bool, reduction: str) -> Tensor:
    """max(0, d(a, p) - d(a, n) + margin) with d = pairwise_distance (``swap``: d(a, n) is
    the smaller of d(a, n) and d(p, n))."""
    fname = "triplet_margin_loss"
    positive, negative = _prep(fname, reduction, anchor, positive, negative)
    if not (anchor.ndim == positive.ndim == negative.ndim) or anchor.ndim not in (1, 2):
        raise ValueError(f"{fname}(): anchor, positive and negative must all be 1-d or all "
                         f"2-d, got {anchor.ndim}-d, {positive.ndim}-d, {negative.ndim}-d")
    if margin <= 0:
        raise ValueError(f"{fname}(): margin must be greater than 0, got {margin}")
    d_ap = pairwise_distance(anchor, positive, p, eps, False)
    d_an = pairwise_distance(anchor, negative, p, eps, False)
    if swap:
        d_an = _api().minimum(d_an, pairwise_distance(positive, negative, p, eps, False))
    return _reduce(_relu(d_ap - d_an + margin), reduction)


@functor("MultilabelSoftMarginLoss")
def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Any, reduction: str
                                ) -> Tensor:
    """-mean over classes of w [t log sigmoid(x) + (1 - t) log sigmoid(-x)] (class axis -1)."""
    fname = "multilabel_soft_margin_loss"
    target, weight = _prep(fname, reduction, input, target, weight)
    _same_shape(fname, input, target)
    loss = target * _softplus(-input) + (1 - target) * _softplus(input)
    if weight is not None:
        loss = loss * weight
    c = int(input.shape[-1]) if input.ndim else 1
    return _reduce(loss.sum(-1) / c if input.ndim else loss, reduction)


# -- distances (PyTorch's nn.functional.pairwise_distance / cosine_similarity) -------------------

@functor("PairwiseDistance")
def pairwise_distance(x1: Tensor, x2: Tensor, p: float, eps: float, keepdim: bool) -> Tensor:
    """||x1 - x2 + eps||_p over the last dim (inputs broadcast)."""
    (x2,) = _float_like("pairwise_distance", x1, x2)
    d = x1 - x2 + eps
    nd = max(x1.ndim, x2.ndim)
    if nd == 0:
        return d.abs()
    return _api().norm(d, p, -1, keepdim)


@functor("Pdist")
def pdist(input: Tensor, p: float) -> Tensor:
    """torch.pdist: the ``p``-norm distances between the rows of an (N, M) input, for every
    pair i < j in row-major order (N (N - 1) / 2 values): a gather of the pairs' rows and
    ``vector_norm`` of their difference."""
    fname = "pdist"
    if input._meta.ndim != 2:
        raise ValueError(f"{fname}(): pdist only supports 2D tensors, got: "
                         f"{input._meta.ndim}D")
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): pdist only supports floating-point dtypes, got "
                        f"{input.dtype}")
    if p < 0:
        raise ValueError(f"{fname}(): pdist only supports non-negative p values, got {p}")
    n = int(input._meta.shape[0])
    i, j = np.triu_indices(n, 1)
    f = _api()
    if i.size == 0:
        return f.sum(f.narrow(input, 0, 0, 0), [1], False)  # (0,), still on the tape
    ii, jj = (_wrap(jax.numpy.asarray(v, np.int64)) for v in (i, j))
    d = f.index_select(input, 0, ii) - f.index_select(input, 0, jj)
    return f.norm(d, float(p), 1, False)


@functor("MultilabelMarginLoss")
def multilabel_margin_loss(input: Tensor, target: Tensor, reduction: str) -> Tensor:
    """sum over target classes j (the prefix of ``target`` before its first -1)
    and non-target classes i of max(0, 1 - (x[j] - x[i])), divided by the number of classes;
    input 0-d, (C,) or (N, C), target int64 of the same shape."""
    fname = "multilabel_margin_loss"
    _prep(fname, reduction, input)
    nd = input._meta.ndim
    if nd > 2:
        raise ValueError(f"{fname}(): expected a 0-d, 1-d (C,) or 2-d (N, C) input, got shape "
                         f"{list(input.shape)}")
    if tuple(target._meta.shape) != tuple(input._meta.shape):
        raise ValueError(f"{fname}(): inconsistent target size: {list(target.shape)} for input "
                         f"of size: {list(input.shape)}")
    if target._meta.dtype != np.dtype(np.int64):
        raise TypeError(f"{fname}(): expected an int64 target, got {target.dtype}")
    f = _api()
    x = input.reshape((1, -1)) if nd < 2 else input
    t = target.reshape((1, -1)) if nd < 2 else target
    c = int(x.shape[1])

    def check(lo: int, hi: int) -> None:   # every value, as PyTorch (not only the prefix)
        if lo < -1 or hi >= c:
            raise RuntimeError(f"{fname}(): argument #2 'target' is out of range (expected "
                               f"values in [-1, {c}), got {lo if lo < -1 else hi})")
    checked_min_max(t, check)
    valid = f.cumprod(cast(t >= 0, np.dtype(np.int64)), 1) == 1   # before the first -1
    tc = f.where(valid, t, 0)
    is_target = f.any(f.logical_and(f.one_hot(tc, c) == 1, valid.unsqueeze(2)), 1)  # (N, C)
    xy = f.gather(x, 1, tc)                                                       # (N, C)
    z = _relu(1.0 - xy.unsqueeze(2) + x.unsqueeze(1))                       # (N, j, i)
    keep = f.logical_and(valid.unsqueeze(2), f.logical_not(is_target).unsqueeze(1))
    loss = f.where(keep, z, 0.0).sum((1, 2)) / c
    if nd < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


@functor("CosineSimilarity")
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int, eps: float) -> Tensor:
    """sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along ``dim`` (inputs broadcast)."""
    (x2,) = _float_like("cosine_similarity", x1, x2)
    norm, clamp = _api().norm, _api().clamp
    n1, n2 = norm(x1, 2, dim, True), norm(x2, 2, dim, True)
    # PyTorch clamps the norms in place under no_grad: the value is clamped, the gradient
    # flows as if it were not
    n1 = n1 + (clamp(n1, eps, None) - n1).detach()
    n2 = n2 + (clamp(n2, eps, None) - n2).detach()
    return ((x1 / n1) * (x2 / n2)).sum(dim)


# -- ctc_loss --------------------------------------------------------------------------------------

_ctc = get("ctc_loss").apply


def _lengths(fname: str, name: str, v: Any, n: int) -> Tensor:
    """input_lengths / target_lengths as an int64 tensor of shape (n,) (from a tensor, an int
    or a sequence of ints)."""
    if not isinstance(v, Tensor):
        v = _wrap(jax.numpy.asarray([int(i) for i in (v if isinstance(v, (list, tuple))
                                                      else [v])], np.int64))
    if v.is_floating_point() or v._meta.dtype == np.bool_:
        raise TypeError(f"{fname}(): {name} must be integers, got {v.dtype}")
    if v._meta.ndim == 0:
        v = _reshape(v, shape=(1,))
    if tuple(v._meta.shape) != (n,):
        raise ValueError(f"{fname}(): {name} must have one entry per batch element ({n}), got "
                         f"shape {list(v._meta.shape)}")
    return v


@functor("CtcLoss")
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int, reduction: str, zero_infinity: bool) -> Tensor:
    """torch.nn.functional.ctc_loss: log_probs (T, N, C) (or unbatched (T, C)), targets padded
    (N, S) or concatenated 1-d (sum(target_lengths),), per-sample lengths; "mean" divides
    each loss by its target length (at least 1), then averages; ``zero_infinity`` replaces
    infinite losses (no valid alignment) and their gradients by zero."""
    fname = "ctc_loss"
    _check_reduction(fname, reduction)
    F = _api()
    if not log_probs.is_floating_point():
        raise TypeError(f"{fname}(): expected floating point log_probs, got {log_probs.dtype}")
    if targets.is_floating_point() or targets._meta.dtype == np.bool_:
        raise TypeError(f"{fname}(): targets must be integers (class indices), got "
                        f"{targets.dtype}")
    nd = log_probs._meta.ndim
    unbatched = nd == 2
    if nd not in (2, 3):
        raise ValueError(f"{fname}(): log_probs must be (T, N, C) or unbatched (T, C), got "
                         f"shape {list(log_probs._meta.shape)}")
    if unbatched:
        log_probs = F.unsqueeze(log_probs, 1)
        if targets._meta.ndim != 1:
            raise ValueError(f"{fname}(): unbatched log_probs (T, C) take 1-d targets (S,), "
                             f"got shape {list(targets._meta.shape)}")
        targets = F.unsqueeze(targets, 0)
    t_len, n, c = (int(s) for s in log_probs._meta.shape)
    if not 0 <= blank < c:
        raise ValueError(f"{fname}(): blank must be in [0, {c}) (the number of classes), got "
                         f"{blank}")
    il = _lengths(fname, "input_lengths", input_lengths, n)
    tl = _lengths(fname, "target_lengths", target_lengths, n)
    mm = host_min_max(il)
    if mm is not None and (mm[0] < 0 or mm[1] > t_len):
        raise ValueError(f"{fname}(): input_lengths must be in [0, {t_len}] (the length T of "
                         f"log_probs), got {mm[0] if mm[0] < 0 else mm[1]}")
    tmm = host_min_max(tl)
    if tmm is not None and tmm[0] < 0:
        raise ValueError(f"{fname}(): target_lengths must be non-negative, got {tmm[0]}")
    if targets._meta.ndim == 1:        # concatenated targets -> padded rows
        total = int(targets._meta.shape[0])
        s_max = total if tmm is None else tmm[1]
        if tmm is not None and int(F.sum(tl)) != total:
            raise ValueError(f"{fname}(): concatenated 1-d targets must have sum(target_lengths)"
                             f" = {int(F.sum(tl))} entries, got {total}")
        if s_max == 0 or total == 0:
            targets = F.full((n, 0), 0, dtype=targets.dtype)
        else:
            start = F.cumsum(tl, 0) - tl
            pos = F.unsqueeze(start, 1) + F.unsqueeze(F.arange(s_max, dtype=start.dtype), 0)
            pos = F.clamp(pos, 0, total - 1)
            targets = F.reshape(F.index_select(targets, 0, F.reshape(pos, (-1,))), (n, s_max))
    elif targets._meta.ndim == 2:
        if int(targets._meta.shape[0]) != n:
            raise ValueError(f"{fname}(): padded targets must be (N, S) with N = {n}, got shape "
                             f"{list(targets._meta.shape)}")
        if tmm is not None and tmm[1] > int(targets._meta.shape[1]):
            raise ValueError(f"{fname}(): target_lengths must not exceed the padded targets' "
                             f"length {int(targets._meta.shape[1])}, got {tmm[1]}")
    else:
        raise ValueError(f"{fname}(): targets must be padded (N, S) or concatenated 1-d, got "
                         f"shape {list(targets._meta.shape)}")
    loss = _ctc(log_probs, targets, il, tl, blank=int(blank))
    if zero_infinity:
        loss = F.where(F.isinf(loss), scalar_tensor(0.0, loss._meta.dtype), loss)
    if reduction == "mean":
        div = F.clamp(tl, min=1).to(loss.dtype)
        return _mean(_div(loss, div), axis=(), keepdim=False)
    if reduction == "sum":
        return _sum(loss, axis=(), keepdim=False)
    return F.squeeze(loss, 0) if unbatched else loss
