"""``torch.distributed.tensor.placement_types``: the placement classes (raise when built)."""

from . import Partial, Placement, Replicate, Shard

__all__ = ["Partial", "Placement", "Replicate", "Shard", "_StridedShard"]


class _StridedShard(Shard):
    """A shard with a split factor (a description, as :class:`Shard`)."""

    def __init__(self, dim: int = 0, *, split_factor: int = 1) -> None:
        super().__init__(dim)
        self.split_factor = split_factor
