"""``torch.distributed._functional_collectives``: PyTorch's traceable collectives over
DTensor / process-group tensors; jflow's collectives are its global tensors' SBP conversions
(docs/sbp.md), so these raise when called."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["wait_tensor", "all_reduce", "all_gather_tensor", "reduce_scatter_tensor",
           "AsyncCollectiveTensor", "all_to_all_single", "all_to_all_single_autograd",
           "all_gather_tensor_autograd", "reduce_scatter_tensor_autograd"]


def _refuse(name: str) -> NoReturn:
    raise NotImplementedError(f"torch.distributed._functional_collectives.{name}: not in "
                              f"jflow (use global tensors with SBP: docs/sbp.md)")


def wait_tensor(tensor: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("wait_tensor")


def all_reduce(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("all_reduce")


def all_gather_tensor(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("all_gather_tensor")


def reduce_scatter_tensor(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("reduce_scatter_tensor")


class AsyncCollectiveTensor:
    """No jflow tensor is one; constructing one raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _refuse("AsyncCollectiveTensor")


def all_to_all_single(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("all_to_all_single")


def all_to_all_single_autograd(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("all_to_all_single_autograd")


def all_gather_tensor_autograd(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("all_gather_tensor_autograd")


def reduce_scatter_tensor_autograd(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("reduce_scatter_tensor_autograd")
