"""Histogram ops: counts into bins. ``histc`` (equal bins over a float range, as
``torch.histc``) and ``bincount`` (one bin per non-negative integer value, as
``torch.bincount``).

Both have no gradient (counts) and data-dependent parts fixed by the caller: ``histc``'s range
is a static attr, ``bincount``'s length is read from the data by its functor (eager only).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from ..kernels.registry import register_kernel
from .infer import FLOAT, INT, NUMBER, check_dtype, desc
from .primitive import define_op
from .registry import Attr, Input

_INT64 = np.dtype(np.int64)


def _histc_infer(x: Any, *, bins: int, min: float, max: float) -> Any:  # noqa: A002
    check_dtype(x, FLOAT, "input")
    return desc((bins,), x.dtype)


def _histc_check(bins: int, min: float, max: float) -> None:  # noqa: A002
    if bins <= 0:
        raise ValueError(f"histc: bins must be > 0, got {bins}")
    if min > max:
        raise ValueError(f"histc: max must be larger than min, got min={min}, max={max}")


def _torch_linspace(lo: Any, hi: Any, steps: int) -> Any:
    """torch.linspace's formula (from both ends, meeting in the middle), so the bin edges, and
    with them which bin a value on an edge falls in, are PyTorch's to the last bit."""
    i = jnp.arange(steps, dtype=lo.dtype)
    step = (hi - lo) / (steps - 1)
    half = steps // 2
    return jnp.where(i < half, lo + step * i, hi - step * (steps - 1 - i))


def _histc(x: Any, bins: int, min: float, max: float) -> Any:  # noqa: A002
    """PyTorch's histc: [min, max] (the data's range when equal, widened by 1 each way when
    that is a point) cut into ``bins`` equal bins; a value on an inner edge counts in the
    upper bin, ``max`` in the last; values outside and nan are not counted."""
    xf = x.reshape(-1)
    lo, hi = jnp.asarray(min, x.dtype), jnp.asarray(max, x.dtype)
    if xf.size:
        auto = lo == hi
        lo = jnp.where(auto, jnp.min(xf), lo)
        hi = jnp.where(auto, jnp.max(xf), hi)
    point = lo == hi
    lo, hi = jnp.where(point, lo - 1, lo), jnp.where(point, hi + 1, hi)
    edges = _torch_linspace(lo, hi, bins + 1)
    pos = jnp.searchsorted(edges, xf, side="right") - 1
    pos = jnp.where(xf == hi, bins - 1, pos)
    keep = (xf >= lo) & (xf <= hi)
    return jnp.zeros((bins,), x.dtype).at[jnp.clip(pos, 0, bins - 1)].add(keep.astype(x.dtype))


define_op("histc", inputs=["x"], outputs=["hist"],
          # the range is static: it is read for the bin edges before any data is, and a
          # histogram's range seldom changes between calls
          attrs=[Attr("bins", "int64", 100), Attr("min", "double", 0.0, static=True),
                 Attr("max", "double", 0.0, static=True)],
          check=_histc_check, infer=_histc_infer, traits=("NoSideEffect", "NoGrad"),
          doc="histogram of x (flattened) in bins equal bins over [min, max] (the data's range "
              "when min == max), as torch.histc")
register_kernel("histc", _histc, name="histc_xla")


def _bincount_infer(x: Any, weights: Any, *, length: int) -> Any:
    check_dtype(x, INT, "input")
    if len(x.shape) != 1:
        raise ValueError(f"bincount: input must be 1-d, got shape {tuple(x.shape)}")
    if weights is None:
        return desc((length,), _INT64)
    check_dtype(weights, NUMBER, "weights")
    if tuple(weights.shape) != tuple(x.shape):
        raise ValueError(f"bincount: weights must be 1-d of the input's length "
                         f"{x.shape[0]}, got shape {tuple(weights.shape)}")
    return desc((length,), weights.dtype)


def _bincount(x: Any, weights: Any, length: int) -> Any:
    """Counts (or summed weights) of each value in [0, length); the length is an attr, fixed
    by the caller from the data (jflow's bincount functor: eager only)."""
    w = jnp.ones(x.shape, jnp.int64) if weights is None else weights
    return jnp.zeros((length,), w.dtype).at[x].add(w, mode="drop")


define_op("bincount", inputs=["x", Input("weights", optional=True)], outputs=["counts"],
          attrs=[Attr("length", "int64")], infer=_bincount_infer,
          traits=("NoSideEffect", "NoGrad"),
          doc="number of occurrences (or the summed weights) of each value 0..length-1 of a "
              "1-d non-negative integer input; values >= length are dropped")
register_kernel("bincount", _bincount, name="bincount_xla")
