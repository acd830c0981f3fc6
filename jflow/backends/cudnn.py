"""``flow.backends.cudnn``: ``torch.backends.cudnn``'s switches, accepted as documented no-ops.

``benchmark``, ``deterministic``, ``enabled`` and ``allow_tf32`` can be read and set (ported
code does ``flow.backends.cudnn.benchmark = True``), and change nothing: XLA chooses and
autotunes convolution algorithms itself (``XLA_FLAGS=--xla_gpu_autotune_level=...``,
``--xla_gpu_deterministic_ops=true`` for determinism), and the float32 precision of
convolutions follows :func:`jflow.set_float32_matmul_precision`.
"""

from __future__ import annotations

import contextlib

from .. import cuda as _cuda
from ._switches import overridden

__all__ = ["benchmark", "deterministic", "enabled", "allow_tf32", "benchmark_limit",
           "is_available", "version", "flags"]

benchmark: bool = False
deterministic: bool = False
enabled: bool = True
allow_tf32: bool = True
benchmark_limit: int = 10


def is_available() -> bool:
    """Whether a GPU backend is present (cuDNN itself is XLA's business)."""
    return _cuda.is_available()


def version() -> int | None:
    """``None``: jflow does not call cuDNN directly."""
    return None


def flags(enabled: bool = False, benchmark: bool = False, deterministic: bool = False,
          allow_tf32: bool = True) -> contextlib.AbstractContextManager[None]:
    """Set the switches inside a block (``torch.backends.cudnn.flags``); no-ops as above."""
    return overridden(globals(), enabled=enabled, benchmark=benchmark,
                      deterministic=deterministic, allow_tf32=allow_tf32)
