"""Functors of the histogram ops (``jflow/ops/histogram.py``): ``histc`` and ``bincount``.

PyTorch's checks and result dtypes live here (floating ``histc`` inputs, a finite range;
``bincount``'s non-negative 1-d integer input and its weights' dtype); ``bincount``'s output
length is the data's maximum, read on the host first: eager only.
"""

from __future__ import annotations

import builtins
import math

import jax
import numpy as np

from ...ops import get
from ...tensor import Tensor
from ..promotion import cast
from ..registry import functor
from ._checks import concrete as _concrete
from ._checks import is_float as _is_float
from ._checks import torch_name as _torch_name


@functor("Histc")
def histc(input: Tensor, bins: int, min: float, max: float) -> Tensor:  # noqa: A002
    """flow.histc: a histogram of the elements in ``bins`` equal bins over [min, max] (the
    data's range when min == max); floating inputs; no gradient (as PyTorch)."""
    if not _is_float(input._meta.dtype):
        raise RuntimeError(f"histc(): expected a floating point input, got "
                           f"{_torch_name(input._meta.dtype)}")
    if bins <= 0:
        raise RuntimeError(f"histc(): bins must be > 0, got {bins}")
    if min > max:
        raise RuntimeError(f"histc(): max must be larger than min, got min={min}, max={max}")
    if not (math.isfinite(min) and math.isfinite(max)):
        raise RuntimeError(f"histc(): range of [{min}, {max}] is not finite")
    if min == max and input._meta.size and not isinstance(input._meta, jax.core.Tracer):
        v = np.asarray(input._value)
        lo, hi = v.min(), v.max()
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise RuntimeError(f"histc(): range of [{lo}, {hi}] is not finite (the data's "
                               f"range, as min == max)")
    return get("histc").apply(input, bins=bins, min=float(min), max=float(max))


@functor("Bincount")
def bincount(input: Tensor, weights: Tensor | None, minlength: int) -> Tensor:
    """flow.bincount: occurrences of each value 0..max(input) (at least ``minlength``), or the
    summed ``weights``: int64 counts, float32 for float32 weights, else float64 (PyTorch).

    Eager only: the output's length is the data's maximum, a size no trace can know."""
    if input._meta.ndim != 1 or input._meta.dtype.kind not in "iu":
        raise RuntimeError(f"bincount(): input must be a 1-d non-negative integral tensor, got "
                           f"{_torch_name(input._meta.dtype)} of shape "
                           f"{tuple(input._meta.shape)}")
    if minlength < 0:
        raise RuntimeError(f"bincount(): minlength should be >= 0, got {minlength}")
    v = _concrete(input, "bincount", "its output length depends on the input's values")
    if v.size and v.min() < 0:
        raise RuntimeError("bincount(): input must be non-negative, got a minimum of "
                           f"{v.min()}")
    length = builtins.max(int(v.max()) + 1 if v.size else 0, minlength)
    if weights is not None:
        if weights._meta.ndim != 1 or weights._meta.shape[0] != v.shape[0]:
            raise RuntimeError(f"bincount(): weights should be 1-d and have the same length as "
                               f"input ({v.shape[0]}), got shape "
                               f"{tuple(weights._meta.shape)}")
        if weights._meta.dtype != np.float32:
            weights = cast(weights, np.dtype(np.float64))
    return get("bincount").apply(input, weights, length=length)
