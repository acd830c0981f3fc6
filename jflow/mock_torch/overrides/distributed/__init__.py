"""``torch.distributed``: jflow.distributed (one process group: all processes), plus the
collectives libraries import from it, built on jflow's: ``all_gather_into_tensor``
(``all_gather`` then concatenation), ``get_process_group_ranks``; ``all_to_all_single`` is
the identity copy with one process and raises with several. Submodules add PyTorch's
DTensor / FSDP / DCP paths (see each)."""

from __future__ import annotations

from typing import Any

__all__ = ["all_gather_into_tensor", "get_process_group_ranks", "all_to_all_single"]


def all_gather_into_tensor(output_tensor: Any, input_tensor: Any, group: Any = None,
                           async_op: bool = False) -> Any:
    """Every process's ``input_tensor``, concatenated along dim 0 into ``output_tensor``."""
    import jflow  # noqa: PLC0415
    n = jflow.distributed.get_world_size(group)
    parts = [jflow.empty_like(input_tensor) for _ in range(n)]
    jflow.distributed.all_gather(parts, input_tensor, group=group)
    with jflow.no_grad():
        output_tensor.copy_(jflow.cat(parts, 0).reshape(output_tensor.shape))
    return None


def get_process_group_ranks(group: Any) -> list[int]:
    """The global ranks in ``group`` (jflow's only group holds every process)."""
    import jflow  # noqa: PLC0415
    return list(range(jflow.distributed.get_world_size(group)))


def all_to_all_single(output: Any, input: Any, output_split_sizes: Any = None,  # noqa: A002
                      input_split_sizes: Any = None, group: Any = None,
                      async_op: bool = False) -> Any:
    """With one process, a copy of ``input`` into ``output``; with several, raises."""
    import jflow  # noqa: PLC0415
    if jflow.distributed.get_world_size(group) != 1:
        raise NotImplementedError("torch.distributed.all_to_all_single: not in jflow across "
                                  "processes (use global tensors with SBP: docs/sbp.md)")
    with jflow.no_grad():
        output.copy_(input)
    return None
