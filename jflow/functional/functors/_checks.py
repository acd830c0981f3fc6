"""Helpers shared by functor families: PyTorch's dtype names in error messages, the floating
check, and the host value of a tensor whose answer's size depends on its data.

``reduce``, ``search``, ``histogram``, ``unique`` and ``math`` (isclose) word their errors as
PyTorch does (``Long``, ``Float`` ...); the data-dependent functors (``bincount``, ``unique``)
read the data on the host first, which works eagerly only.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ... import dtypes as _dt
from ...tensor import Tensor

#: PyTorch's scalar-type names, used in its dtype error messages.
_TORCH_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                "float64": "Double"}


def torch_name(np_dtype: Any) -> str:
    """PyTorch's name of a NumPy dtype in its messages (``int64`` -> ``Long``)."""
    name = np.dtype(np_dtype).name
    return _TORCH_NAMES.get(name, name)


def is_float(np_dtype: Any) -> bool:
    """Whether a NumPy dtype is one of jflow's floating dtypes (bfloat16 included)."""
    return _dt.from_numpy_dtype(np.dtype(np_dtype)).is_floating_point


def concrete(t: Tensor, fname: str, why: str) -> np.ndarray:
    """A tensor's host value, for an answer whose size (or validity) depends on the data."""
    if isinstance(t._meta, jax.core.Tracer):
        raise RuntimeError(f"{fname}(): {why}, so it runs eagerly only; it cannot run under "
                           f"tracing (jax.jit / flow.jit / vmap)")
    return np.asarray(t._value)
