"""``torch._dynamo.utils``: the helpers programs import from it."""

from __future__ import annotations

from typing import Any

from .._compiling import is_compiling

__all__ = ["is_compile_supported", "is_compiling"]


def is_compile_supported(device_type: Any) -> bool:
    """Whether ``flow.compile`` runs on that device type: XLA compiles for every device JAX
    has (cpu, cuda, tpu)."""
    return str(device_type) in ("cpu", "cuda", "tpu")
