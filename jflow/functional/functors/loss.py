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

from ...ops import get
from ...tensor import Tensor
from ..promotion import cast, scalar_tensor
from ..registry import functor
from .index import host_min_max

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
    dt = input._value.dtype
    return [None if t is None else (t if t._value.dtype == dt else cast(t, dt)) for t in others]


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
    if tuple(target._value.shape) != tuple(input._value.shape):
        raise ValueError(f"{fname}(): target size {list(target._value.shape)} must be the same "
                         f"as input size {list(input._value.shape)}")
    target, weight, pos_weight = _float_like(fname, input, target, weight, pos_weight)
    return _reduce(_bce(input, target, weight, pos_weight), reduction)


def _check_targets(fname: str, target: Tensor, c: int, ignore_index: int) -> None:
    if target._value.dtype.kind not in "iu":
        raise TypeError(f"{fname}(): expected an integer (class index) target, got "
                        f"{target.dtype}")
    mm = host_min_max(target)
    if mm is None or (mm[0] >= 0 and mm[1] < c):
        return
    with jax.ensure_compile_time_eval():
        t = np.asarray(target._value)
    bad = t[((t < 0) | (t >= c)) & (t != ignore_index)]
    if bad.size:
        raise IndexError(f"{fname}(): target {int(bad[0])} is out of bounds (classes: {c})")


def _classes(input: Tensor) -> int:
    s = input._value.shape
    if len(s) == 0:
        raise ValueError("expected an input of at least 1 dim (C,) or (N, C, *), got 0-d")
    return int(s[0] if len(s) == 1 else s[1])


def _nll_reduced(loss: Tensor, wt: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    total = _sum(loss, axis=(), keepdim=False)
    if reduction == "sum":
        return total
    return _div(total, _sum(wt, axis=(), keepdim=False))


@functor("NllLoss")
def nll_loss(input: Tensor, target: Tensor, weight: Any, ignore_index: int,
             reduction: str) -> Tensor:
    """-weight[t] input[t] per element (class axis 1, or 0 for a 1-d input); "mean" divides
    by the sum of the non-ignored targets' weights (nan if every target is ignored)."""
    _check_reduction("nll_loss", reduction)
    c = _classes(input)
    _check_targets("nll_loss", target, c, ignore_index)
    (weight,) = _float_like("nll_loss", input, weight)
    loss, wt = _nll(input, target, weight, ignore_index=ignore_index)
    return _nll_reduced(loss, wt, reduction)


def _plain_cross_entropy(input: Tensor, target: Tensor, c: int, ignore_index: int,
                         reduction: str) -> Tensor:
    """(N, C) logits and class indices, no weight, no smoothing: one
    sparse_softmax_cross_entropy op (a Pallas kernel that never materialises the softmax on
    GPU); "mean" divides by the number of non-ignored targets (nan if none, as PyTorch)."""
    _check_targets("cross_entropy", target, c, ignore_index)
    loss, _ = _sce(input, target, ignore_index=ignore_index)
    if reduction == "none":
        return loss
    total = _sum(loss, axis=(), keepdim=False)
    if reduction == "sum":
        return total
    dt = input._value.dtype
    valid = _cast(_ne(target, scalar_tensor(ignore_index, target._value.dtype)), dtype=dt)
    return _div(total, _sum(valid, axis=(), keepdim=False))


@functor("CrossEntropy")
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
    nd = input._value.ndim
    if (nd == 2 and weight is None and label_smoothing == 0.0
            and not target.is_floating_point()):
        return _plain_cross_entropy(input, target, c, ignore_index, reduction)
    axis = 0 if nd == 1 else 1
    logp = _log_softmax(input, dim=axis)
    dt = input._value.dtype
    wview = None if weight is None else _reshape(
        weight, shape=(c,) + (1,) * (nd - 1 - axis))
    if target.is_floating_point():  # class probabilities
        if tuple(target._value.shape) != tuple(input._value.shape):
            raise ValueError(f"{fname}(): a probability target must have the input's shape "
                             f"{list(input._value.shape)}, got {list(target._value.shape)}")
        (t,) = _float_like(fname, input, target)
        if label_smoothing > 0:
            t = _add(_mul(t, scalar_tensor(1.0 - label_smoothing, dt)),
                     scalar_tensor(label_smoothing / c, dt))
        prod = _mul(logp, t) if wview is None else _mul(_mul(logp, t), wview)
        loss = _neg(_sum(prod, axis=(axis,), keepdim=False))
        if reduction == "mean":
            n = input._value.size // c if c else 0
            return _div(_sum(loss, axis=(), keepdim=False), scalar_tensor(float(n), dt))
        return _reduce(loss, reduction)
    _check_targets(fname, target, c, ignore_index)
    loss, wt = _nll(logp, target, weight, ignore_index=ignore_index)
    if label_smoothing == 0.0:
        return _nll_reduced(loss, wt, reduction)
    wl = logp if wview is None else _mul(logp, wview)
    smooth = _neg(_sum(wl, axis=(axis,), keepdim=False))
    valid = _ne(target, scalar_tensor(ignore_index, target._value.dtype))
    smooth = _mul(smooth, _cast(valid, dtype=dt))
    a, b = scalar_tensor(1.0 - label_smoothing, dt), scalar_tensor(label_smoothing / c, dt)
    if reduction == "none":
        return _add(_mul(loss, a), _mul(smooth, b))
    both = _add(_mul(_sum(loss, axis=(), keepdim=False), a),
                _mul(_sum(smooth, axis=(), keepdim=False), b))
    if reduction == "sum":
        return both
    return _div(both, _sum(wt, axis=(), keepdim=False))
