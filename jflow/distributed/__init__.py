"""``flow.distributed``: PyTorch's ``torch.distributed`` process-group API on ``flow.env``.

``import jflow.distributed as dist`` then, unchanged from PyTorch::

    dist.init_process_group("gloo")          # torchrun's MASTER_ADDR/PORT, WORLD_SIZE, RANK
    dist.all_reduce(t, op=dist.ReduceOp.SUM)  # in place, over processes

A *rank* here is a process, as in PyTorch (not a device: ``flow.placement`` ranks devices).
With one process no ``jax.distributed`` is started and every collective is the identity; with
several, ``init_process_group`` joins them through :func:`jflow.env.init_distributed` and the
collectives run on JAX's multi-process utilities (see :mod:`.c10d`). Data parallel training
over global tensors is :class:`jflow.nn.parallel.DistributedDataParallel`.
"""

from . import tensor  # noqa: F401  (DTensor's API on global tensors; attaches its Tensor attributes)
from .c10d import (
    Backend,
    GroupMember,
    ProcessGroup,
    ReduceOp,
    Work,
    all_gather,
    all_reduce,
    barrier,
    broadcast,
    destroy_process_group,
    get_backend,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    new_group,
    reduce,
)

__all__ = ["Backend", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather",
           "all_reduce", "barrier", "broadcast", "destroy_process_group", "get_backend",
           "get_rank", "get_world_size", "group", "init_process_group", "is_available",
           "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "new_group", "reduce"]
