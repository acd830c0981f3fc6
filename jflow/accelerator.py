"""``flow.accelerator``: ``torch.accelerator``, over JAX's default backend.

The current accelerator is JAX's default backend when it is not the CPU: ``flow.device("cuda")``
for a GPU (CUDA or ROCm), ``flow.device("tpu")`` for a TPU; ``None`` on a CPU-only machine
(``current_accelerator(check_available=False)`` then also gives ``None``).
"""

from __future__ import annotations

import jax

from .device import device as _device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "synchronize"]

_FLOW_TYPE = {"gpu": "cuda", "cuda": "cuda", "rocm": "cuda", "tpu": "tpu"}


def _platform() -> str | None:
    p = jax.default_backend()
    return p if p in _FLOW_TYPE else None


def is_available() -> bool:
    """True when JAX's default backend is an accelerator (GPU or TPU)."""
    return _platform() is not None


def current_accelerator(check_available: bool = False) -> _device | None:
    """The accelerator's device type as a ``flow.device`` (``cuda`` or ``tpu``), or None."""
    p = _platform()
    return _device(_FLOW_TYPE[p]) if p is not None else None


def device_count() -> int:
    """The number of accelerator devices in this process (0 without one)."""
    p = _platform()
    return len(jax.local_devices(backend=p)) if p is not None else 0


def current_device_index() -> int:
    """0: jflow places tensors on the default device of JAX's default backend."""
    return 0


def synchronize(device: object = None) -> None:
    """Wait for pending effects (``jax.effects_barrier()``); see ``flow.cuda.synchronize``."""
    jax.effects_barrier()
