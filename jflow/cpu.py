"""``flow.cpu``: the parts of ``torch.cpu`` that device-generic code calls
(``flow.get_device_module("cpu")`` returns this module): the CPU is always available, as one
device; ``synchronize`` waits for the work JAX has queued."""

from __future__ import annotations

from typing import Any

import jax

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "set_device",
           "device_count"]


def is_available() -> bool:
    """True: the CPU is always there."""
    return True


def is_initialized() -> bool:
    """True: the CPU needs no initialization."""
    return True


def synchronize(device: Any = None) -> None:
    """Wait for pending effects (``jax.effects_barrier()``), as ``flow.cuda.synchronize``."""
    jax.effects_barrier()


def current_device() -> str:
    """``"cpu"``, as PyTorch's."""
    return "cpu"


def set_device(device: Any) -> None:
    """Nothing to do: there is one CPU device (PyTorch's is a no-op too)."""
    return None


def device_count() -> int:
    """1, as PyTorch's."""
    return 1
