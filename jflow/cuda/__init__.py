"""``flow.cuda``: the parts of ``torch.cuda`` that ported code calls, over JAX's GPU backend.

``is_available()`` is True exactly when JAX has a GPU backend (``jax.devices("gpu")`` does not
raise); ``device_count()`` counts its devices. jflow has one random generator for every
device, so ``manual_seed`` / ``manual_seed_all`` seed ``flow.default_generator`` (as
``flow.manual_seed``). Memory management calls (``empty_cache``, ``memory_allocated`` ...)
are accepted: XLA manages device memory itself.
"""

from __future__ import annotations

from typing import Any

import jax

from ..random import default_generator
from . import amp

__all__ = ["is_available", "device_count", "manual_seed", "manual_seed_all", "seed",
           "seed_all", "initial_seed", "synchronize", "current_device", "set_device",
           "get_device_name", "get_device_capability", "get_device_properties",
           "is_bf16_supported", "empty_cache", "memory_allocated", "max_memory_allocated",
           "reset_peak_memory_stats", "amp", "default_generators"]


def _gpus() -> list[jax.Device]:
    try:
        return list(jax.devices("gpu"))
    except RuntimeError:
        return []


def is_available() -> bool:
    """True when JAX has a GPU backend (CUDA or ROCm)."""
    return bool(_gpus())


def device_count() -> int:
    """The number of GPUs JAX sees in this process (0 without a GPU backend)."""
    return len(_gpus())


def _gpu(device: Any = None) -> jax.Device:
    gpus = _gpus()
    if not gpus:
        raise RuntimeError("flow.cuda: no GPU is available (JAX has no GPU backend); check "
                           "flow.cuda.is_available() first")
    if device is None:
        return gpus[0]
    if isinstance(device, jax.Device):
        return device
    index = getattr(device, "index", device)
    if isinstance(device, str):
        index = int(device.partition(":")[2] or 0)
    index = 0 if index is None else int(index)
    if not 0 <= index < len(gpus):
        raise RuntimeError(f"flow.cuda: invalid device ordinal {index}; {len(gpus)} GPU(s) "
                           f"available")
    return gpus[index]


def __getattr__(name: str) -> Any:
    # ``default_generators``: PyTorch's tuple of one generator per CUDA device (empty without
    # one: HF Reformer checks ``len(torch.cuda.default_generators) > 0`` before seeding from
    # it). jflow's one generator serves every device, so each GPU's entry is
    # ``flow.default_generator``. Computed on read: asking JAX for its GPUs at import would
    # start its backends.
    if name == "default_generators":
        return tuple(default_generator for _ in _gpus())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def manual_seed(seed: int) -> None:
    """Seed jflow's default generator (one generator serves every device)."""
    default_generator.manual_seed(seed)


def manual_seed_all(seed: int) -> None:
    """Seed jflow's default generator, as :func:`manual_seed`."""
    default_generator.manual_seed(seed)


def seed() -> None:
    """Seed the default generator non-deterministically."""
    default_generator.seed()


def seed_all() -> None:
    """Seed the default generator non-deterministically, as :func:`seed`."""
    default_generator.seed()


def initial_seed() -> int:
    """The default generator's seed."""
    return default_generator.initial_seed()


def synchronize(device: Any = None) -> None:
    """Wait for pending effects (``jax.effects_barrier()``). JAX dispatches asynchronously;
    a tensor's own pending computation is waited for when its value is read (``.numpy()``,
    ``.item()``), which is what timing code should do on its result."""
    jax.effects_barrier()


def current_device() -> int:
    """The index of the current GPU: 0 (jflow places tensors on JAX's default device)."""
    _gpu()
    return 0


def set_device(device: Any) -> None:
    """Accepted for device 0 only (jflow places tensors on JAX's default device; use
    ``CUDA_VISIBLE_DEVICES`` or ``flow.device("cuda:N")`` to choose another)."""
    d = _gpu(device)
    if d is not _gpus()[0]:
        raise RuntimeError("flow.cuda.set_device: jflow uses JAX's default device; select the "
                           "GPU with CUDA_VISIBLE_DEVICES or place tensors with "
                           "flow.device('cuda:N')")


def get_device_name(device: Any = None) -> str:
    """The GPU's name, as JAX reports it (``device_kind``, e.g. "NVIDIA H100 80GB HBM3")."""
    return str(_gpu(device).device_kind)


def get_device_capability(device: Any = None) -> tuple[int, int]:
    """The GPU's compute capability ``(major, minor)`` when JAX reports one, else ``(0, 0)``."""
    cc = getattr(_gpu(device), "compute_capability", None)
    if isinstance(cc, str) and "." in cc:
        major, minor = cc.split(".")[:2]
        return int(major), int(minor)
    return 0, 0


class _DeviceProperties:
    """What ``get_device_properties`` reports: ``name``, ``major``, ``minor``,
    ``total_memory`` (bytes; 0 when JAX does not say), ``multi_processor_count``."""

    def __init__(self, d: jax.Device) -> None:
        self.name = str(d.device_kind)
        self.major, self.minor = get_device_capability(d)
        stats = _memory_stats(d)
        self.total_memory = int(stats.get("bytes_limit", 0))
        self.multi_processor_count = int(getattr(d, "core_count", 0) or 0)

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name={self.name!r}, major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // 2**20}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device: Any = None) -> _DeviceProperties:
    return _DeviceProperties(_gpu(device))


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """True when a GPU is available (XLA runs bfloat16 on every GPU it supports)."""
    return is_available()


def _memory_stats(d: jax.Device) -> dict[str, Any]:
    try:
        return dict(d.memory_stats() or {})
    except Exception:  # noqa: BLE001  (a backend without memory statistics)
        return {}


def empty_cache() -> None:
    """A no-op: XLA's allocator manages device memory."""


def memory_allocated(device: Any = None) -> int:
    """Bytes in use on the GPU, from JAX's memory statistics (0 when unavailable)."""
    return int(_memory_stats(_gpu(device)).get("bytes_in_use", 0))


def max_memory_allocated(device: Any = None) -> int:
    """Peak bytes in use on the GPU, from JAX's memory statistics (0 when unavailable)."""
    return int(_memory_stats(_gpu(device)).get("peak_bytes_in_use", 0))


def reset_peak_memory_stats(device: Any = None) -> None:
    """A no-op: JAX's peak statistic cannot be reset."""
