"""Interop helpers: zero-copy hand-over between jflow tensors and ``jax.Array``."""

from __future__ import annotations

from typing import Any

import jax

from ..dtypes import from_numpy_dtype
from ..tensor import Tensor, _wrap
from . import data, dlpack
from .dlpack import from_dlpack, from_torch, to_torch

__all__ = ["from_jax", "to_jax", "from_torch", "to_torch", "from_dlpack", "cpp_extension",
           "data", "dlpack"]


def __getattr__(name: str) -> Any:
    if name == "cpp_extension":  # loaded on first use: it is only needed to build C++ ops
        import importlib
        return importlib.import_module(".cpp_extension", __name__)
    raise AttributeError(f"module 'jflow.utils' has no attribute {name!r}")


def from_jax(array: Any) -> Tensor:
    """Wrap a ``jax.Array`` (or tracer) as a Tensor without copying."""
    if not isinstance(array, jax.Array):
        raise TypeError(f"from_jax: expected a jax.Array, got {type(array).__name__}")
    from_numpy_dtype(array.dtype)  # a clear error for dtypes jflow does not have
    return _wrap(array)


def to_jax(tensor: Tensor) -> jax.Array:
    """The tensor's ``jax.Array`` itself (no copy)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_jax: expected a jflow Tensor, got {type(tensor).__name__}")
    return tensor._value
