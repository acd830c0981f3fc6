"""Loss modules over ``flow._C``: ``MSELoss``, ``L1Loss``, ``NLLLoss``, ``CrossEntropyLoss``,
``BCEWithLogitsLoss``. Their defaults are those of the ``flow._C`` loss functions (api.yaml).
``BCELoss`` calls ``nn.functional.binary_cross_entropy`` (written with jflow ops). The issue-14
losses (``SmoothL1Loss`` ... ``MultiLabelSoftMarginLoss``) follow at the end."""

from __future__ import annotations

import math
import warnings
from typing import Any

from jflow.functional import api_default  # absolute: ruff resolves it for B008

from ... import _C
from ...tensor import Tensor
from .. import functional as F
from .linear import Linear
from .module import Module

__all__ = ["MSELoss", "L1Loss", "NLLLoss", "CrossEntropyLoss", "BCEWithLogitsLoss",
           "BCELoss"]
__all__ += ["SmoothL1Loss", "HuberLoss", "KLDivLoss", "SoftMarginLoss", "MarginRankingLoss",
            "HingeEmbeddingLoss", "CosineEmbeddingLoss", "PoissonNLLLoss", "GaussianNLLLoss",
            "MultiMarginLoss", "TripletMarginLoss", "MultiLabelSoftMarginLoss"]
__all__ += ["CTCLoss"]

_REDUCTIONS = ("none", "mean", "sum")


class _Loss(Module):
    def __init__(self, reduction: str) -> None:
        super().__init__()
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{reduction} is not a valid value for reduction "
                             f"(expected one of {_REDUCTIONS})")
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None, reduction: str) -> None:
        super().__init__(reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error ``(input - target)²``, reduced by ``reduction``."""

    def __init__(self, reduction: str = api_default("mse_loss", "reduction")) -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``(input - target)²`` elementwise (same shapes), reduced by ``reduction``."""
        return _C.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error ``|input - target|``, reduced by ``reduction``."""

    def __init__(self, reduction: str = api_default("l1_loss", "reduction")) -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``|input - target|`` elementwise (same shapes), reduced by ``reduction``."""
        return _C.l1_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities over class dim 1, per-class ``weight``."""

    def __init__(self, weight: Tensor | None = api_default("nll_loss", "weight"),
                 ignore_index: int = api_default("nll_loss", "ignore_index"),
                 reduction: str = api_default("nll_loss", "reduction")) -> None:
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``-input[n, target[n]]`` (weighted) for ``(N, C, *)`` input and ``(N, *)`` indices."""
        return _C.nll_loss(input, target, self.weight, ignore_index=self.ignore_index,
                           reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """``log_softmax`` + NLL over class dim 1, with ``ignore_index`` and ``label_smoothing``
    (targets are class indices)."""

    def __init__(self, weight: Tensor | None = api_default("cross_entropy", "weight"),
                 ignore_index: int = api_default("cross_entropy", "ignore_index"),
                 reduction: str = api_default("cross_entropy", "reduction"),
                 label_smoothing: float = api_default("cross_entropy", "label_smoothing")
                 ) -> None:
        super().__init__(weight, reduction)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Cross entropy of logits ``(N, C, *)`` against indices ``(N, *)`` or probabilities."""
        return _C.cross_entropy(input, target, self.weight, ignore_index=self.ignore_index,
                                reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """``-w [t log(x) + (1 - t) log(1 - x)]`` of probabilities ``x`` (logs clamped to >= -100,
    as PyTorch); see :func:`jflow.nn.functional.binary_cross_entropy`."""

    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 reduce: Any = None, reduction: str = "mean") -> None:
        if size_average is not None or reduce is not None:
            raise TypeError("BCELoss: size_average and reduce are deprecated in PyTorch and not "
                            "supported by jflow; use reduction")
        super().__init__(weight, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Binary cross entropy of probabilities ``input`` against ``target`` (same shape)."""
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


_BCE = "binary_cross_entropy_with_logits"


class BCEWithLogitsLoss(_WeightedLoss):
    """``BCELoss`` of ``sigmoid(input)``, computed stably from logits (``pos_weight`` too)."""

    def __init__(self, weight: Tensor | None = api_default(_BCE, "weight"),
                 reduction: str = api_default(_BCE, "reduction"),
                 pos_weight: Tensor | None = api_default(_BCE, "pos_weight")) -> None:
        super().__init__(weight, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Binary cross entropy of logits ``input`` against ``target`` (same shape)."""
        return _C.binary_cross_entropy_with_logits(input, target, self.weight,
                                                   reduction=self.reduction,
                                                   pos_weight=self.pos_weight)


# -- the remaining torch.nn losses (functions in functional/functors/loss.py) ------------------
# Arguments as PyTorch's modules, without the deprecated size_average / reduce.

class SmoothL1Loss(_Loss):
    """Squared error below ``beta``, absolute error (less ``beta / 2``) above it."""

    def __init__(self, reduction: str = api_default("smooth_l1_loss", "reduction"),
                 beta: float = api_default("smooth_l1_loss", "beta")) -> None:
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Smooth L1 of ``input - target`` elementwise (same shapes), reduced by ``reduction``."""
        return _C.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error below ``delta``, ``delta``-scaled absolute error above it."""

    def __init__(self, reduction: str = api_default("huber_loss", "reduction"),
                 delta: float = api_default("huber_loss", "delta")) -> None:
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Huber loss of ``input - target`` elementwise (same shapes), reduced by ``reduction``."""
        return _C.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(Module):
    """``reduction`` also takes ``"batchmean"`` (the sum over the batch size: the KL
    divergence's value; ``"mean"`` averages over every element, as PyTorch)."""

    def __init__(self, reduction: str = api_default("kl_div", "reduction"),
                 log_target: bool = api_default("kl_div", "log_target")) -> None:
        super().__init__()
        if reduction not in _REDUCTIONS + ("batchmean",):
            raise ValueError(f"{reduction} is not a valid value for reduction")
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``target * (log(target) - input)``, ``input`` log-probabilities, reduced."""
        return _C.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SoftMarginLoss(_Loss):
    """``log(1 + exp(-target * input))`` for targets in {1, -1}."""

    def __init__(self, reduction: str = api_default("soft_margin_loss", "reduction")) -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``log(1 + exp(-target * input))`` elementwise, reduced by ``reduction``."""
        return _C.soft_margin_loss(input, target, reduction=self.reduction)


class _MarginLoss(_Loss):
    def __init__(self, margin: float, reduction: str) -> None:
        super().__init__(reduction)
        self.margin = margin


class MarginRankingLoss(_MarginLoss):
    """``max(0, -target * (input1 - input2) + margin)`` for targets in {1, -1}."""

    def __init__(self, margin: float = api_default("margin_ranking_loss", "margin"),
                 reduction: str = api_default("margin_ranking_loss", "reduction")) -> None:
        super().__init__(margin, reduction)

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """``max(0, -target * (input1 - input2) + margin)``, reduced."""
        return _C.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                      reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1``."""

    def __init__(self, margin: float = api_default("hinge_embedding_loss", "margin"),
                 reduction: str = api_default("hinge_embedding_loss", "reduction")) -> None:
        super().__init__(margin, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The hinge embedding loss of ``input`` against targets in {1, -1}, reduced."""
        return _C.hinge_embedding_loss(input, target, margin=self.margin,
                                       reduction=self.reduction)


class CosineEmbeddingLoss(_MarginLoss):
    """``1 - cos(x1, x2)`` for target 1, ``max(0, cos(x1, x2) - margin)`` for -1."""

    def __init__(self, margin: float = api_default("cosine_embedding_loss", "margin"),
                 reduction: str = api_default("cosine_embedding_loss", "reduction")) -> None:
        super().__init__(margin, reduction)

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        """Per-row loss of ``(N, D)`` inputs vs ``(N,)`` targets in {1, -1}, reduced."""
        return _C.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                        reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Negative log-likelihood of ``target`` under a Poisson of rate ``input``."""

    def __init__(self, log_input: bool = api_default("poisson_nll_loss", "log_input"),
                 full: bool = api_default("poisson_nll_loss", "full"),
                 eps: float = api_default("poisson_nll_loss", "eps"),
                 reduction: str = api_default("poisson_nll_loss", "reduction")) -> None:
        super().__init__(reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        """``exp(log_input) - target * log_input`` (or the rate form), reduced by ``reduction``."""
        return _C.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                   eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Negative log-likelihood of ``target`` under N(``input``, ``var``)."""

    def __init__(self, *, full: bool = api_default("gaussian_nll_loss", "full"),
                 eps: float = api_default("gaussian_nll_loss", "eps"),
                 reduction: str = api_default("gaussian_nll_loss", "reduction")) -> None:
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var: Any) -> Tensor:
        """``(log(var) + (input - target)² / var) / 2`` (var >= ``eps``), reduced."""
        return _C.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                    reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss of scores ``(N, C)`` against class indices ``(N,)``."""

    def __init__(self, p: int = api_default("multi_margin_loss", "p"),
                 margin: float = api_default("multi_margin_loss", "margin"),
                 weight: Tensor | None = api_default("multi_margin_loss", "weight"),
                 reduction: str = api_default("multi_margin_loss", "reduction")) -> None:
        super().__init__(weight, reduction)
        if p not in (1, 2):
            raise ValueError(f"MultiMarginLoss: only p == 1 and p == 2 are supported, got {p}")
        self.p, self.margin = p, margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``sum_i max(0, margin - x[y] + x[i])^p / C`` per sample, reduced by ``reduction``."""
        return _C.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                    weight=self.weight, reduction=self.reduction)


class TripletMarginLoss(_MarginLoss):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the ``p``-norm distance."""

    def __init__(self, margin: float = api_default("triplet_margin_loss", "margin"),
                 p: float = api_default("triplet_margin_loss", "p"),
                 eps: float = api_default("triplet_margin_loss", "eps"),
                 swap: bool = api_default("triplet_margin_loss", "swap"),
                 reduction: str = api_default("triplet_margin_loss", "reduction")) -> None:
        super().__init__(margin, reduction)
        self.p, self.eps, self.swap = p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """The triplet loss of ``(N, D)`` anchor / positive / negative, reduced."""
        return _C.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                      eps=self.eps, swap=self.swap, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-class binary cross entropy of logits ``(N, C)``, averaged over C."""

    def __init__(self, weight: Tensor | None = api_default("multilabel_soft_margin_loss", "weight"),
                 reduction: str = api_default("multilabel_soft_margin_loss", "reduction")) -> None:
        super().__init__(weight, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """Mean over C of the logistic loss of ``(N, C)`` logits vs 0/1 targets."""
        return _C.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                              reduction=self.reduction)


class CTCLoss(_Loss):
    """The connectionist temporal classification loss (``F.ctc_loss``): log_probs (T, N, C),
    targets padded (N, S) or concatenated, input and target lengths; "mean" divides each
    sample's loss by its target length, then averages over the batch."""

    def __init__(self, blank: int = api_default("ctc_loss", "blank"),
                 reduction: str = api_default("ctc_loss", "reduction"),
                 zero_infinity: bool = api_default("ctc_loss", "zero_infinity")) -> None:
        super().__init__(reduction)
        self.blank, self.zero_infinity = int(blank), bool(zero_infinity)

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths: Any,
                target_lengths: Any) -> Tensor:
        """The CTC loss of ``log_probs`` against ``targets``, reduced."""
        return _C.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                           self.reduction, self.zero_infinity)


# -- multilabel margin and triplet-with-distance losses -------------------------------------------

class MultiLabelMarginLoss(_Loss):
    """Multi-class multi-label hinge loss: scores ``(N, C)`` against target class lists
    (int64, ended by the first -1)."""

    def __init__(self, size_average: Any = None, reduce: Any = None,
                 reduction: str = api_default("multilabel_margin_loss", "reduction")) -> None:
        if size_average is not None or reduce is not None:
            raise TypeError("MultiLabelMarginLoss: size_average and reduce are deprecated in "
                            "PyTorch and not supported by jflow; use reduction")
        super().__init__(reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """``sum_{j, i} max(0, 1 - (x[y_j] - x[i])) / C`` per sample, reduced."""
        return _C.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """``max(0, margin + d(a, p) - d(a, n))`` with a user distance ``distance_function``
    (default ``pairwise_distance``)."""

    def __init__(self, *, distance_function: Any = None, margin: float = 1.0,
                 swap: bool = False, reduction: str = "mean") -> None:
        super().__init__(reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = distance_function
        self.margin, self.swap = margin, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        """The triplet loss with this module's distance, reduced."""
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


__all__ += ["MultiLabelMarginLoss", "TripletMarginWithDistanceLoss"]


def _legacy_reduction(size_average: Any, reduce: Any) -> str:
    """PyTorch's ``_Reduction.legacy_get_string`` (with its warning)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if (size_average and reduce) else ("sum" if reduce else "none")
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", UserWarning, stacklevel=3)
    return ret


_NLLLOSS2D_DEPRECATED = ("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a "
                         "drop-in replacement and see "
                         "https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more "
                         "details.")


class NLLLoss2d(NLLLoss):
    """PyTorch's deprecated name of :class:`NLLLoss` for (N, C, H, W) inputs (``NLLLoss``
    takes any (N, C, *)); takes the legacy ``size_average`` / ``reduce`` as PyTorch does, and
    warns as PyTorch's (``FutureWarning``) when made or subclassed."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        warnings.warn(_NLLLOSS2D_DEPRECATED, FutureWarning, stacklevel=2)
        super().__init_subclass__(**kwargs)

    def __init__(self, weight: Tensor | None = None, size_average: Any = None,
                 ignore_index: int = -100, reduce: Any = None, reduction: str = "mean") -> None:
        if type(self) is NLLLoss2d:
            warnings.warn(_NLLLOSS2D_DEPRECATED, FutureWarning, stacklevel=2)
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        super().__init__(weight, ignore_index, reduction)


__all__ += ["NLLLoss2d"]


# -- PyTorch 2.13's linear + cross entropy --------------------------------------------------------

class LinearCrossEntropyLoss(_WeightedLoss):
    """Cross entropy of ``input`` projected to logits by an owned ``Linear`` (PyTorch 2.13's
    ``torch.nn.LinearCrossEntropyLoss``): ``F.linear_cross_entropy(input, W, target, ...)``
    with ``W = self.linear.weight`` seen as ``(num_classes, *out_features, in_features)``.

    ``self.linear`` is a ``Linear(in_features, num_classes * prod(out_features), bias)``, so
    the parameters are PyTorch's (``linear.weight`` 2-d, ``linear.bias`` flat) and so are the
    state-dict keys (``weight`` for a class ``weight`` buffer, ``linear.weight``,
    ``linear.bias``): a PyTorch checkpoint loads. ``out_features=(d_1, ..., d_K)`` gives the
    K-dimensional loss (targets ``(N, d_1, ..., d_K)``). ``ignore_index=None`` is -100 for
    class-index targets. ``options`` (PyTorch's chunking of the batch) is accepted and passed
    on; jflow computes the same values unchunked (see :func:`jflow.nn.functional.
    linear_cross_entropy`)."""

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple[int, ...] = (),
                 bias: bool = False, device: Any = None, dtype: Any = None,
                 reduction: str = "mean", weight: Tensor | None = None,
                 ignore_index: int | None = None, label_smoothing: float = 0.0,
                 options: Any = None) -> None:
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got "
                               f"{tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got "
                               f"{label_smoothing}")
        if isinstance(out_features, int) or not all(
                isinstance(d, int) and not isinstance(d, bool) for d in out_features):
            raise TypeError(f"LinearCrossEntropyLoss: argument 'out_features' must be a tuple "
                            f"of ints, got {out_features!r}")
        super().__init__(weight, reduction)
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        # (Linear holds a 2-d weight; forward views it as (C, *out_features, in_features))
        self.linear = Linear(in_features, math.prod(self.out_features, start=num_classes),
                             bias=bias, device=device, dtype=dtype)
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        """The loss of ``input`` ``(in_features,)`` or ``(N, in_features)`` against class
        indices or class probabilities ``target``."""
        linear_weight = self.linear.weight.reshape(
            (self.num_classes, *self.out_features, self.linear.in_features))
        linear_bias = (self.linear.bias.reshape((self.num_classes, *self.out_features))
                       if self.linear.bias is not None else None)
        return F.linear_cross_entropy(input, linear_weight, target, linear_bias=linear_bias,
                                      weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")


__all__ += ["LinearCrossEntropyLoss"]
