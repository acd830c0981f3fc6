"""``torch.distributed.tensor._utils``: DTensor's layout helper, for this process's first
device of the mesh (its "rank"; see :mod:`jflow.distributed.tensor`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jflow.distributed.tensor import DeviceMesh, Placement, to_nd_sbp, unsupported
from jflow.sharding.sbp import _Split


def compute_local_shape_and_global_offset(global_shape: Sequence[int], mesh: DeviceMesh,
                                          placements: Sequence[Placement], **kwargs: Any
                                          ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The local shard's shape and its offset in the global tensor, for this process's first
    device of ``mesh`` (jflow splits evenly only)."""
    fname = "torch.distributed.tensor._utils.compute_local_shape_and_global_offset"
    if kwargs:
        raise unsupported("_utils.compute_local_shape_and_global_offset",
                          f"arguments {sorted(kwargs)}")
    shape, offset = list(global_shape), [0] * len(global_shape)
    coord = mesh.get_coordinate()
    if coord is None:
        return (0,) * len(shape), (0,) * len(shape)
    for i, x in enumerate(to_nd_sbp(placements, mesh.ndim, len(shape), fname)):
        if isinstance(x, _Split):
            n = mesh.shape[i]
            if shape[x.axis] % n:
                raise ValueError(f"{fname}: dimension {x.axis} of size {shape[x.axis]} does "
                                 f"not split evenly into {n} (jflow splits evenly only)")
            shape[x.axis] //= n
            offset[x.axis] += coord[i] * shape[x.axis]
    return tuple(shape), tuple(offset)
