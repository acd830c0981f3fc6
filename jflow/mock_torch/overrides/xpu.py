"""``torch.xpu``: Intel GPUs, answered as a PyTorch build without XPU support answers (jflow
runs on JAX's backends; none is an XPU). Libraries probe ``hasattr(torch, "xpu") and
torch.xpu.is_available()``: this keeps that probe False in lazy mode, where a placeholder
``torch.xpu`` would pass ``hasattr`` and then raise at ``is_available()``."""

from __future__ import annotations

from typing import NoReturn

__all__ = ["is_available", "device_count", "is_initialized", "current_device",
           "synchronize", "empty_cache", "manual_seed", "manual_seed_all",
           "is_current_stream_capturing"]


def is_available() -> bool:
    """False: no XPU device (as PyTorch built without XPU)."""
    return False


def device_count() -> int:
    """0: no XPU device."""
    return 0


def is_initialized() -> bool:
    """False: there is no XPU runtime to initialise."""
    return False


def _no_xpu(what: str) -> NoReturn:
    raise AssertionError(f"torch.xpu.{what}: Torch not compiled with XPU enabled (jflow has "
                         f"no XPU backend)")


def current_device() -> int:
    """Raises as PyTorch without XPU does."""
    _no_xpu("current_device")


def synchronize(device: object = None) -> None:
    """Raises as PyTorch without XPU does."""
    _no_xpu("synchronize")


def empty_cache() -> None:
    """Nothing is cached on an XPU (there is none): does nothing, as in PyTorch when the XPU
    runtime was never initialised."""


def manual_seed(seed: int) -> None:
    """Seeds nothing (no XPU generator), as PyTorch's lazy XPU seeding without a device."""


def manual_seed_all(seed: int) -> None:
    """Seeds nothing (no XPU generator), as PyTorch's lazy XPU seeding without a device."""


def is_current_stream_capturing() -> bool:
    """False: no XPU stream exists, so none is capturing."""
    return False
