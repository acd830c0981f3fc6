"""``torch.distributed.fsdp``: PyTorch's fully-sharded data parallelism is not in jflow
(jflow shards with global tensors and SBP: docs/sbp.md). The policy objects libraries build at
import (``MixedPrecisionPolicy``, ``CPUOffloadPolicy``, ``OffloadPolicy``) are plain
descriptions; wrapping a model (``fully_shard``, ``FullyShardedDataParallel``) raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

__all__ = ["fully_shard", "FullyShardedDataParallel", "FSDPModule", "MixedPrecisionPolicy",
           "OffloadPolicy", "CPUOffloadPolicy", "ShardingStrategy"]


def _refuse(name: str) -> NoReturn:
    raise NotImplementedError(f"torch.distributed.fsdp.{name}: jflow has no FSDP; shard "
                              f"parameters with global tensors and SBP (docs/sbp.md)")


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """FSDP2's mixed-precision settings (a description)."""

    param_dtype: Any = None
    reduce_dtype: Any = None
    output_dtype: Any = None
    cast_forward_inputs: bool = True


@dataclass
class OffloadPolicy:
    """FSDP2's offload settings (a description)."""


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """FSDP2's CPU offload (a description)."""

    pin_memory: bool = True


class ShardingStrategy:
    """FSDP1's strategies (names only)."""

    FULL_SHARD = 1
    SHARD_GRAD_OP = 2
    NO_SHARD = 3
    HYBRID_SHARD = 4


class FSDPModule:
    """What ``fully_shard`` turns a module into: no jflow module is one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _refuse("FSDPModule")


class FullyShardedDataParallel:
    """Raises when constructed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _refuse("FullyShardedDataParallel")


def fully_shard(module: Any, *args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("fully_shard")
