"""``torch.distributed.tensor.experimental``: ``implicit_replication`` (local tensors used
with DTensors are taken as replicated; exact in jflow, where one process holds every device
and a local tensor is one value). The rest of the module is not mapped."""

from __future__ import annotations

from typing import Any, NoReturn

from jflow.distributed.tensor import implicit_replication, unsupported

__all__ = ["implicit_replication", "local_map", "register_sharding"]


def local_map(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises: jflow runs ops on shards itself (SBP signatures)."""
    raise unsupported("experimental.local_map")


def register_sharding(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises: an op's shardings are its SBP signatures (``define_op(sbp=...)``)."""
    raise unsupported("experimental.register_sharding", "declare SBP signatures with "
                      "define_op(sbp=...)")
