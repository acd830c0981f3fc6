"""Dropout layers under PyTorch's module path ``torch.nn.modules.dropout``.

``Dropout`` itself is defined in ``normalization.py`` (jflow's first home for it) and
re-exported here, so ``from jflow.nn.modules.dropout import Dropout`` (what ported code
writes) and ``flow.nn.Dropout`` are the same class. ``Dropout1d/2d/3d`` zero whole channels:
one Bernoulli draw per (sample, channel), from jflow's default generator (the same
distribution as PyTorch, not the same random stream). ``AlphaDropout`` and
``FeatureAlphaDropout`` are PyTorch's dropout for SELU networks.
"""

from __future__ import annotations

from ... import _C
from ...tensor import Tensor
from .module import Module
from .normalization import Dropout

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    """Channel-wise dropout over inputs (N, C, *spatial) or unbatched (C, *spatial) with
    ``_nd`` spatial dims (``F.dropout1d/2d/3d``); the identity in eval mode."""

    _nd = 1

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = float(p), bool(inplace)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` with whole channels zeroed (prob. ``p``), the rest scaled by 1/(1-p)."""
        fn = (_C.dropout1d, _C.dropout2d, _C.dropout3d)[self._nd - 1]
        return fn(input, self.p, self.training, self.inplace)

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


class AlphaDropout(_DropoutNd):
    """Alpha dropout for self-normalising (SELU) networks (``torch.nn.AlphaDropout``): in
    training, elements are set to SELU's saturation value with probability ``p`` and an
    affine map keeps zero mean and unit variance; the identity in eval mode."""

    def forward(self, input: Tensor) -> Tensor:
        """``input`` alpha-dropped in training mode."""
        return _C.alpha_dropout(input, self.p, self.training, self.inplace)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels of (N, C, *) (``torch.nn.FeatureAlphaDropout``)."""

    def forward(self, input: Tensor) -> Tensor:
        """``input`` with whole channels alpha-dropped in training mode."""
        return _C.feature_alpha_dropout(input, self.p, self.training, self.inplace)
