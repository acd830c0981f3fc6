"""``torch.autograd.graph``: PyTorch's saved-tensor hooks API (jflow's own
``jflow.autograd.graph`` is its tape, whose ``Node`` this module also exposes).

jflow's tape keeps saved values as JAX arrays without pack / unpack hooks:
``saved_tensors_hooks`` with user hooks raises (silently skipping hooks that may change the
values would change results); ``save_on_cpu`` is PyTorch's memory trade-off for device
tensors and computes the same gradients, so it runs — it moves nothing (documented in
docs/porting.md); ``disable_saved_tensors_hooks`` holds trivially."""

from __future__ import annotations

from typing import Any

from jflow.autograd.graph import Node

__mock_fallback__ = False
__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "Node",
           "register_multi_grad_hook", "increment_version"]


class saved_tensors_hooks:  # noqa: N801  (PyTorch's name)
    """Pack / unpack hooks for saved tensors: raises on entering (jflow's tape has no
    hooks)."""

    def __init__(self, pack_hook: Any, unpack_hook: Any) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> saved_tensors_hooks:
        raise NotImplementedError(
            "torch.autograd.graph.saved_tensors_hooks: jflow's autograd tape has no pack / "
            "unpack hooks for saved tensors (running without them could change results)")

    def __exit__(self, *exc: Any) -> None:
        return None


class save_on_cpu:  # noqa: N801
    """Offload saved tensors to host memory: the same gradients; jflow keeps saved values
    where they are (on a CPU run they are in host memory already)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        self.pin_memory, self.device_type = pin_memory, device_type

    def __enter__(self) -> save_on_cpu:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


class disable_saved_tensors_hooks:  # noqa: N801
    """A block in which saved-tensor hooks are refused: there are none in jflow."""

    def __init__(self, error_message: str = "") -> None:
        self.error_message = error_message

    def __enter__(self) -> disable_saved_tensors_hooks:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def register_multi_grad_hook(tensors: Any, fn: Any, *, mode: str = "all") -> Any:
    """Raises: jflow has per-tensor hooks (``Tensor.register_hook``) only."""
    raise NotImplementedError("torch.autograd.graph.register_multi_grad_hook: use "
                              "Tensor.register_hook on each tensor in jflow")


def increment_version(tensor: Any) -> None:
    """Bump a tensor's version counter (as an in-place write does)."""
    if hasattr(tensor, "_bump_version"):
        tensor._bump_version()
