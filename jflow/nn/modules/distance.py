"""``PairwiseDistance`` and ``CosineSimilarity`` (PyTorch's ``torch.nn.modules.distance``)
over the ``flow._C`` functions of the same names (functional/functors/loss.py)."""

from __future__ import annotations

from jflow.functional import api_default  # absolute: ruff resolves it for B008

from ... import _C
from ...tensor import Tensor
from .module import Module

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class PairwiseDistance(Module):
    """The ``p``-norm distance ``‖x1 - x2 + eps‖_p`` between rows (PyTorch's module)."""

    def __init__(self, p: float = api_default("pairwise_distance", "p"),
                 eps: float = api_default("pairwise_distance", "eps"),
                 keepdim: bool = api_default("pairwise_distance", "keepdim")) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """``‖x1 - x2 + eps‖_p`` over the last dim: ``(N, D), (N, D) -> (N,)`` (or ``(N, 1)``)."""
        return _C.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Cosine similarity of two inputs along ``dim`` (PyTorch's module)."""

    def __init__(self, dim: int = api_default("cosine_similarity", "dim"),
                 eps: float = api_default("cosine_similarity", "eps")) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """``x1·x2 / max(‖x1‖ ‖x2‖, eps)`` along ``dim``, which is reduced away."""
        return _C.cosine_similarity(x1, x2, self.dim, self.eps)
