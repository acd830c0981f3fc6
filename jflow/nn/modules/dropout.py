"""Dropout layers under PyTorch's module path ``torch.nn.modules.dropout``.

``Dropout`` itself is defined in ``normalization.py`` (jflow's first home for it) and
re-exported here, so ``from jflow.nn.modules.dropout import Dropout`` (what ported code
writes) and ``flow.nn.Dropout`` are the same class. ``Dropout1d/2d/3d`` zero whole channels:
one Bernoulli draw per (sample, channel), from jflow's default generator (the same
distribution as PyTorch, not the same random stream).
"""

from __future__ import annotations

import warnings
from typing import Any

from ...creation import rand
from ...tensor import Tensor
from .module import Module
from .normalization import Dropout

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d"]


class _DropoutNd(Module):
    """Channel-wise dropout over inputs (N, C, *spatial) or unbatched (C, *spatial) with
    ``_nd`` spatial dims; the identity in eval mode."""

    _nd = 1

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = float(p), bool(inplace)

    def forward(self, input: Tensor) -> Tensor:
        nd, name = self._nd, type(self).__name__
        if input.ndim not in (nd + 1, nd + 2):
            raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D input, but received a "
                               f"{input.ndim}D input. Note that {name} exists to provide "
                               f"channel-wise dropout on inputs with {nd} spatial dimension"
                               f"{'s' if nd > 1 else ''}, a channel dimension, and an optional "
                               f"batch dimension (i.e. {nd + 1}D or {nd + 2}D inputs).")
        if not self.training or self.p == 0.0:
            return input
        if not input.is_floating_point():
            raise TypeError(f"{name}: expected a floating point input, got {input.dtype}")
        shape = tuple(input.shape[:-nd]) + (1,) * nd
        if nd == 2 and input.ndim == 3:     # PyTorch's legacy reading of 3-D input
            warnings.warn("Dropout2d: received a 3D input; as PyTorch, it is treated as "
                          "(N, C, L) and channel-wise 1D dropout is applied", stacklevel=2)
            shape = tuple(input.shape[:2]) + (1,)
        if self.p == 1.0:                   # every channel dropped; avoids 0 / 0 below
            scale: Any = rand(*shape, dtype=input.dtype, device=input.device) * 0.0
        else:
            keep = rand(*shape, dtype=input.dtype, device=input.device) >= self.p
            scale = keep.to(input.dtype) / (1.0 - self.p)
        return input.mul_(scale) if self.inplace else input * scale

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of (N, C, L) or (C, L) with probability ``p``, scaling the rest
    by 1 / (1 - p) (``torch.nn.Dropout1d``)."""

    _nd = 1


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of (N, C, H, W) (``torch.nn.Dropout2d``). A 3-D input is read
    as (N, C, L) with a warning, as PyTorch does (its legacy behaviour), not as (C, H, W)."""

    _nd = 2


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) (``torch.nn.Dropout3d``)."""

    _nd = 3
