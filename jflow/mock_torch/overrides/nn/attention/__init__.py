"""``torch.nn.attention``: choosing a ``scaled_dot_product_attention`` backend. jflow has one
implementation (XLA's); ``sdpa_kernel`` accepts any backend list containing one PyTorch
computes the same results with (math, flash, efficient, cudnn: all compute exact softmax
attention) and records it — the results are the same, only the kernel would differ."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """PyTorch's attention backends."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_ACTIVE: list[tuple[SDPBackend, ...]] = []


@contextmanager
def sdpa_kernel(backends: Any, set_priority: bool = False) -> Iterator[None]:
    """Run the block with these attention backends allowed: jflow's single implementation
    computes what each of them computes, so the block runs unchanged; an empty list raises
    (PyTorch would find no kernel to run)."""
    chosen = (backends,) if isinstance(backends, SDPBackend) else tuple(backends)
    if not chosen or all(b is SDPBackend.ERROR for b in chosen):
        raise RuntimeError("sdpa_kernel: no attention backend allowed")
    _ACTIVE.append(chosen)
    try:
        yield
    finally:
        _ACTIVE.pop()
