"""``torch.distributed.tensor``: PyTorch's DTensor API on jflow's global tensors, re-exported
from :mod:`jflow.distributed.tensor` (the mapping and its choices are documented there and in
docs/sbp.md, section "DTensor users"). ``isinstance(x, DTensor)`` holds for a global tensor;
``distribute_tensor`` / ``DTensor.from_local`` / ``redistribute`` / ``full_tensor`` /
``to_local`` are ``to_global`` / ``to_local`` with placements mapped to SBP. What is not
mapped raises ``NotImplementedError`` naming the function."""

from __future__ import annotations

from typing import Any, NoReturn

from jflow.distributed.tensor import (
    DeviceMesh,
    DTensor,
    Partial,
    Placement,
    Replicate,
    Shard,
    distribute_tensor,
    init_device_mesh,
    unsupported,
)

__all__ = ["DTensor", "DeviceMesh", "Placement", "Shard", "Replicate", "Partial",
           "distribute_tensor", "distribute_module", "init_device_mesh"]


def _refuse(name: str) -> NoReturn:
    raise unsupported(name)


def distribute_module(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises: place parameters with ``distribute_tensor`` or ``parallelize_module``
    (``torch.distributed.tensor.parallel``)."""
    raise unsupported("distribute_module", "place parameters with distribute_tensor or "
                      "torch.distributed.tensor.parallel.parallelize_module")
