"""``torch.distributed._composable.fsdp``: the names of :mod:`torch.distributed.fsdp`."""

from ...fsdp import CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, OffloadPolicy, fully_shard  # noqa: F401
