"""``torch.distributed.tensor.placement_types``: the placement classes."""

from jflow.distributed.tensor import Partial, Placement, Replicate, Shard

__all__ = ["Partial", "Placement", "Replicate", "Shard", "_StridedShard"]


class _StridedShard(Shard):
    """A shard with a split factor: a description only (libraries name it at import); jflow
    has no strided split, so placing a tensor with one raises ``NotImplementedError``."""

    def __init__(self, dim: int = 0, *, split_factor: int = 1) -> None:
        super().__init__(dim)
        self.split_factor = split_factor

    def _key(self) -> tuple:
        return (self.dim, self.split_factor)
