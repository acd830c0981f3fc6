"""Functors of the search op (``jflow/ops/search.py``): ``searchsorted`` and ``bucketize``.

PyTorch's argument rules live here: ``side`` / ``right`` agreement, ``sorter`` (a gather
first), a scalar value (1-D boundaries only), the leading-dims check, and dtype promotion
(PyTorch compares in the two inputs' result type); the op then searches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops import get
from ...tensor import Tensor
from ..promotion import promote, scalar_result_dtype, scalar_tensor
from ..registry import api, functor
from ._checks import torch_name as _torch_name

_INT64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)


def _search(fname: str, seq: Tensor, values: Tensor | Any, out_int32: bool, right: bool,
            side: str | None, sorter: Tensor | None) -> Tensor:
    """Shared by searchsorted and bucketize: side/right agreement, sorter, dtype promotion
    (PyTorch compares in the two inputs' result type), then the op."""
    if side is not None:
        if side not in ("left", "right"):
            raise ValueError(f"{fname}(): side must be 'left' or 'right', got {side!r}")
        if right and side == "left":
            raise RuntimeError(f"{fname}(): side and right can't be set to opposites, got side "
                               f"of left while right was True")
        right = side == "right"
    if seq._meta.ndim == 0:
        raise RuntimeError(f"{fname}(): boundaries tensor should have positive dimension, but "
                           f"got 0 dimension")
    if sorter is not None:
        if sorter._meta.dtype != _INT64 or tuple(sorter._meta.shape) != tuple(
                seq._meta.shape):
            raise RuntimeError(f"{fname}(): sorter must be an int64 tensor of the "
                               f"sorted_sequence's shape {tuple(seq._meta.shape)}, got "
                               f"{_torch_name(sorter._meta.dtype)} of shape "
                               f"{tuple(sorter._meta.shape)}")
        seq = api().gather(seq, -1, sorter)
    if not isinstance(values, Tensor):
        if seq._meta.ndim != 1:
            raise RuntimeError(f"{fname}(): input value can be a scalar only when the "
                               f"boundaries tensor dimension is 1, but got "
                               f"{seq._meta.ndim} dimensions")
        values = scalar_tensor(values, scalar_result_dtype(seq, values))
    for name, t in (("sorted_sequence", seq), ("input", values)):
        if t._meta.dtype == _BOOL:
            raise RuntimeError(f"{fname}(): {name} must be numeric, got Bool")
    if seq._meta.ndim > 1 and tuple(seq._meta.shape[:-1]) != tuple(values._meta.shape[:-1]):
        raise RuntimeError(f"{fname}(): boundaries tensor should be 1 dimension or the first "
                           f"N-1 dimensions of boundaries tensor and input value tensor must "
                           f"match, but we got boundaries tensor {tuple(seq._meta.shape)} and "
                           f"input value tensor {tuple(values._meta.shape)}")
    seq, values = promote(seq, values)
    return get("searchsorted").apply(seq, values, right=right, out_int32=out_int32)


@functor("SearchSorted")
def searchsorted(sorted_sequence: Tensor, input: Tensor | Any, out_int32: bool, right: bool,
                 side: str | None, sorter: Tensor | None) -> Tensor:
    """flow.searchsorted: the index at which each value would be inserted into the sorted
    last axis (leading axes batch); ``right``/``side="right"`` past equal entries; ``sorter``
    sorts an unsorted sequence first. int64 indices (int32 with ``out_int32``); no gradient."""
    return _search("searchsorted", sorted_sequence, input, out_int32, right, side, sorter)


@functor("Bucketize")
def bucketize(input: Tensor | Any, boundaries: Tensor, out_int32: bool, right: bool) -> Tensor:
    """flow.bucketize: searchsorted of input into 1-D boundaries (the same ``right``)."""
    if boundaries._meta.ndim != 1:
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries._meta.ndim})")
    return _search("bucketize", boundaries, input, out_int32, right, None, None)
