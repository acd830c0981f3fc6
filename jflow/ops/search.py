"""Search ops: ``searchsorted``, the binary search of values in a sorted sequence (its last axis;
leading axes batch), behind ``torch.searchsorted`` and ``torch.bucketize``.

The op is dtype-strict (sequence and values of one dtype: the functor promotes first) and has
no gradient (its output is indices). Its kernel follows PyTorch's search step for step, so the
nan behaviour is PyTorch's.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from ..kernels.registry import register_kernel
from .infer import NUMBER, check_dtype, desc
from .primitive import define_op
from .registry import Attr

_INT64 = np.dtype(np.int64)


def _search_infer(seq: Any, values: Any, *, right: bool, out_int32: bool) -> Any:
    check_dtype(seq, NUMBER, "sorted_sequence")
    check_dtype(values, NUMBER, "values")
    if seq.dtype != values.dtype:
        raise TypeError(f"searchsorted: sorted_sequence ({seq.dtype}) and values "
                        f"({values.dtype}) must have one dtype (promote first)")
    if len(seq.shape) == 0:
        raise ValueError("searchsorted: sorted_sequence must have at least one dimension")
    if len(seq.shape) > 1 and tuple(seq.shape[:-1]) != tuple(values.shape[:-1]):
        raise ValueError(f"searchsorted: the leading dimensions of sorted_sequence "
                         f"{tuple(seq.shape)} and values {tuple(values.shape)} must match")
    return desc(values.shape, np.dtype(np.int32) if out_int32 else _INT64)


def _searchsorted(seq: Any, values: Any, right: bool, out_int32: bool) -> Any:
    """PyTorch's binary search step for step: left moves past seq[mid] when
    ``!(seq[mid] >= v)``, right when ``!(seq[mid] > v)``. The negated comparisons are its
    nan behaviour (a nan value lands at the end; nan in the sequence acts as it does there)."""
    n = seq.shape[-1]
    lo = jnp.zeros(values.shape, jnp.int32)
    hi = jnp.full(values.shape, n, jnp.int32)
    for _ in range(max(n, 1).bit_length()):  # ceil(log2(n + 1)) halvings
        mid = (lo + hi) // 2
        m = jnp.minimum(mid, n - 1) if n else mid
        if seq.ndim == 1:
            at = jnp.take(seq, m) if n else jnp.zeros(values.shape, seq.dtype)
        else:
            at = jnp.take_along_axis(seq, m, axis=-1)
        go = ~(at > values) if right else ~(at >= values)
        active = lo < hi
        lo = jnp.where(active & go, mid + 1, lo)
        hi = jnp.where(active & ~go, mid, hi)
    return lo.astype(jnp.int32 if out_int32 else jnp.int64)


define_op("searchsorted", inputs=["sorted_sequence", "values"], outputs=["out"],
          attrs=[Attr("right", "bool", False), Attr("out_int32", "bool", False)],
          infer=_search_infer, traits=("NoSideEffect", "NoGrad"),
          doc="insertion indices of values into sorted_sequence (its last axis; leading axes "
              "batch), torch.searchsorted's search including its nan behaviour")
register_kernel("searchsorted", _searchsorted, name="searchsorted_xla")
