"""``torch.distributed.tensor.parallel``: ``parallelize_module`` with ``ColwiseParallel`` /
``RowwiseParallel`` on jflow's global tensors, re-exported from
:mod:`jflow.distributed.tensor_parallel` (its docstring says what differs with one process
driving every device). Other styles raise ``NotImplementedError`` naming them."""

from __future__ import annotations

from typing import Any

from jflow.distributed.tensor import unsupported
from jflow.distributed.tensor_parallel import (
    ColwiseParallel,
    ParallelStyle,
    RowwiseParallel,
    parallelize_module,
)

__all__ = ["ParallelStyle", "ColwiseParallel", "RowwiseParallel", "parallelize_module",
           "SequenceParallel", "PrepareModuleInput", "PrepareModuleOutput", "loss_parallel"]


class _Unmapped(ParallelStyle):
    """A PyTorch style jflow does not map: it can be named (plans are built at import) but
    not constructed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise unsupported(f"parallel.{type(self).__name__}")


class SequenceParallel(_Unmapped):
    """Not mapped (raises when built)."""


class PrepareModuleInput(_Unmapped):
    """Not mapped (raises when built)."""


class PrepareModuleOutput(_Unmapped):
    """Not mapped (raises when built)."""


def loss_parallel(*args: Any, **kwargs: Any) -> Any:
    """Not mapped (raises): jflow's cross_entropy runs on sharded logits by SBP itself."""
    raise unsupported("parallel.loss_parallel", "cross_entropy on sharded logits needs no "
                      "context: SBP inference handles it")
