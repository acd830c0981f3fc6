"""``torch.*``'s deprecated per-device autocast functions (``is_autocast_cpu_enabled``,
``get_autocast_gpu_dtype``, the IPU and XLA forms ...): each warns as PyTorch does
(``DeprecationWarning``, naming the device-type form) and reads or writes the same state as
``get_autocast_dtype(device_type)`` / ``set_autocast_enabled(device_type, enabled)``
(:mod:`.autocast_mode`); "gpu" is CUDA, as in PyTorch."""

from __future__ import annotations

import warnings
from typing import Any

from .. import dtypes as _dt
from .autocast_mode import (
    _bool,
    get_autocast_dtype,
    is_autocast_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)

__all__ = ["is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype",
           "set_autocast_cpu_dtype", "get_autocast_gpu_dtype", "set_autocast_gpu_dtype",
           "is_autocast_ipu_enabled", "set_autocast_ipu_enabled", "get_autocast_ipu_dtype",
           "set_autocast_ipu_dtype", "is_autocast_xla_enabled", "set_autocast_xla_enabled",
           "get_autocast_xla_dtype", "set_autocast_xla_dtype"]


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated ``is_autocast_enabled("cpu")``."""
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated ``set_autocast_enabled("cpu", enabled)``."""
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", _bool("set_autocast_cpu_enabled", "enabled", 1, enabled))


def get_autocast_cpu_dtype() -> _dt.dtype:
    """Deprecated ``get_autocast_dtype("cpu")``."""
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype: Any) -> None:
    """Deprecated ``set_autocast_dtype("cpu", dtype)``."""
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype() -> _dt.dtype:
    """Deprecated ``get_autocast_dtype("cuda")``."""
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype: Any) -> None:
    """Deprecated ``set_autocast_dtype("cuda", dtype)``."""
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def is_autocast_ipu_enabled() -> bool:
    """Deprecated ``is_autocast_enabled("ipu")``."""
    _deprecated("is_autocast_ipu_enabled()", "is_autocast_enabled('ipu')")
    return is_autocast_enabled("ipu")


def set_autocast_ipu_enabled(enabled: bool) -> None:
    """Deprecated ``set_autocast_enabled("ipu", enabled)``."""
    _deprecated("set_autocast_ipu_enabled(enabled)", "set_autocast_enabled('ipu', enabled)")
    set_autocast_enabled("ipu", _bool("set_autocast_ipu_enabled", "enabled", 1, enabled))


def get_autocast_ipu_dtype() -> _dt.dtype:
    """Deprecated ``get_autocast_dtype("ipu")``."""
    _deprecated("get_autocast_ipu_dtype()", "get_autocast_dtype('ipu')")
    return get_autocast_dtype("ipu")


def set_autocast_ipu_dtype(dtype: Any) -> None:
    """Deprecated ``set_autocast_dtype("ipu", dtype)``."""
    _deprecated("set_autocast_ipu_dtype(dtype)", "set_autocast_dtype('ipu', dtype)")
    set_autocast_dtype("ipu", dtype)


def is_autocast_xla_enabled() -> bool:
    """Deprecated ``is_autocast_enabled("xla")``."""
    _deprecated("is_autocast_xla_enabled()", "is_autocast_enabled('xla')")
    return is_autocast_enabled("xla")


def set_autocast_xla_enabled(enabled: bool) -> None:
    """Deprecated ``set_autocast_enabled("xla", enabled)``."""
    _deprecated("set_autocast_xla_enabled(enabled)", "set_autocast_enabled('xla', enabled)")
    set_autocast_enabled("xla", _bool("set_autocast_xla_enabled", "enabled", 1, enabled))


def get_autocast_xla_dtype() -> _dt.dtype:
    """Deprecated ``get_autocast_dtype("xla")``."""
    _deprecated("get_autocast_xla_dtype()", "get_autocast_dtype('xla')")
    return get_autocast_dtype("xla")


def set_autocast_xla_dtype(dtype: Any) -> None:
    """Deprecated ``set_autocast_dtype("xla", dtype)``."""
    _deprecated("set_autocast_xla_dtype(dtype)", "set_autocast_dtype('xla', dtype)")
    set_autocast_dtype("xla", dtype)
