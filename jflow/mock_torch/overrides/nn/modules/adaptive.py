"""``torch.nn.modules.adaptive``: ``AdaptiveLogSoftmaxWithLoss`` is not in jflow."""

from typing import Any

__all__ = ["AdaptiveLogSoftmaxWithLoss"]


class AdaptiveLogSoftmaxWithLoss:
    """Not in jflow: constructing one raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("torch.nn.AdaptiveLogSoftmaxWithLoss is not in jflow")
