"""Loss modules over ``flow._C``: ``MSELoss``, ``L1Loss``, ``NLLLoss``, ``CrossEntropyLoss``,
``BCEWithLogitsLoss``. Their defaults are those of the ``flow._C`` loss functions (api.yaml).
``BCELoss`` calls ``nn.functional.binary_cross_entropy`` (written with jflow ops)."""

from __future__ import annotations

from typing import Any

from ... import _C
from ...functional import api_default
from ...tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["MSELoss", "L1Loss", "NLLLoss", "CrossEntropyLoss", "BCEWithLogitsLoss",
           "BCELoss"]

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
    def __init__(self, reduction: str = api_default("mse_loss", "reduction")) -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return _C.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def __init__(self, reduction: str = api_default("l1_loss", "reduction")) -> None:
        super().__init__(reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return _C.l1_loss(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    def __init__(self, weight: Tensor | None = api_default("nll_loss", "weight"),
                 ignore_index: int = api_default("nll_loss", "ignore_index"),
                 reduction: str = api_default("nll_loss", "reduction")) -> None:
        super().__init__(weight, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
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
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


_BCE = "binary_cross_entropy_with_logits"


class BCEWithLogitsLoss(_WeightedLoss):
    def __init__(self, weight: Tensor | None = api_default(_BCE, "weight"),
                 reduction: str = api_default(_BCE, "reduction"),
                 pos_weight: Tensor | None = api_default(_BCE, "pos_weight")) -> None:
        super().__init__(weight, reduction)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return _C.binary_cross_entropy_with_logits(input, target, self.weight,
                                                   reduction=self.reduction,
                                                   pos_weight=self.pos_weight)
