"""``ChannelShuffle`` (PyTorch's ``torch.nn.modules.channelshuffle``): ``F.channel_shuffle``
as a layer."""

from __future__ import annotations

from ...tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Splits the C channels of ``(N, C, *)`` into ``groups`` groups and interleaves them."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        """``(N, C, *)`` with its channels interleaved across ``groups``; same shape."""
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
