"""``flow.backends.cuda``: ``torch.backends.cuda``'s switches.

``matmul.allow_tf32`` is real: setting it sets the float32 matmul precision (True:
``"high"``, False: ``"highest"``; see :mod:`.precision`), and reading it says whether the
precision allows TF32 (or lower). The reduced-precision-reduction flags and the scaled dot
product attention backend switches are accepted and change nothing (XLA chooses).
"""

from __future__ import annotations

import contextlib

from .. import cuda as _cuda
from ._switches import overridden
from .precision import get_float32_matmul_precision, set_float32_matmul_precision

__all__ = ["matmul", "is_built", "enable_flash_sdp", "enable_mem_efficient_sdp",
           "enable_math_sdp", "enable_cudnn_sdp", "flash_sdp_enabled",
           "mem_efficient_sdp_enabled", "math_sdp_enabled", "cudnn_sdp_enabled", "sdp_kernel"]


class _MatmulFlags:
    """``flow.backends.cuda.matmul``: ``allow_tf32`` (mapped), and PyTorch's
    ``allow_fp16_reduced_precision_reduction`` / ``allow_bf16_reduced_precision_reduction``
    (accepted, no effect)."""

    def __init__(self) -> None:
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        return get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        set_float32_matmul_precision("high" if value else "highest")

    def __repr__(self) -> str:
        return f"<flow.backends.cuda.matmul allow_tf32={self.allow_tf32}>"


matmul = _MatmulFlags()

_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    """Whether a GPU backend is present (jflow has no separate CUDA build)."""
    return _cuda.is_available()


def enable_flash_sdp(enabled: bool) -> None:
    """Accepted; no effect (XLA chooses the attention kernel)."""
    _sdp["flash"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool) -> None:
    """Accepted; no effect."""
    _sdp["mem_efficient"] = bool(enabled)


def enable_math_sdp(enabled: bool) -> None:
    """Accepted; no effect."""
    _sdp["math"] = bool(enabled)


def enable_cudnn_sdp(enabled: bool) -> None:
    """Accepted; no effect."""
    _sdp["cudnn"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True
               ) -> contextlib.AbstractContextManager[None]:
    """``torch.backends.cuda.sdp_kernel``: sets the (no-op) switches inside a block."""
    return overridden(_sdp, flash=enable_flash, math=enable_math,
                      mem_efficient=enable_mem_efficient, cudnn=enable_cudnn)
