"""Functors of the unique op (``jflow/ops/unique.py``): ``unique`` and
``unique_consecutive``.

The number of distinct values sizes the outputs, so it is read from the data (NumPy) before
the op runs at that size: eager only, an error under tracing.
"""

from __future__ import annotations

import numpy as np

from ...ops import get
from ...tensor import Tensor
from ..registry import functor
from ._checks import concrete as _concrete


def _unique_of(fname: str, input: Tensor, return_inverse: bool, return_counts: bool,
               dim: int | None, consecutive: bool) -> Tensor | tuple[Tensor, ...]:
    """Eager only: the number of distinct values sizes the outputs, so it is read from the data
    first (NumPy), then the op computes values, inverse and counts at that size."""
    if dim is not None:
        raise NotImplementedError(f"{fname}(): dim={dim} is not supported; only dim=None (the "
                                  f"flattened input)")
    v = _concrete(input, fname, "its output size is the number of distinct values")
    flat = v.reshape(-1)
    if consecutive:
        size = int(flat.size and 1 + np.count_nonzero(flat[1:] != flat[:-1]))
    else:
        size = int(np.unique(flat, equal_nan=False).size) if flat.size else 0
    values, inverse, counts = get("unique").apply(input, size=size, consecutive=consecutive)
    out = (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts
                                                                  else ())
    return out if len(out) > 1 else values


@functor("Unique")
def unique(input: Tensor, sorted: bool, return_inverse: bool, return_counts: bool,  # noqa: A002
           dim: int | None) -> Tensor | tuple[Tensor, ...]:
    """flow.unique: the sorted distinct values (and, on request, each element's index into
    them and their counts); ``sorted=False`` sorts too (PyTorch's CPU kernel does as well).
    nan equals nothing. Eager only (data-dependent size): an error under tracing."""
    return _unique_of("unique", input, return_inverse, return_counts, dim, False)


@functor("UniqueConsecutive")
def unique_consecutive(input: Tensor, return_inverse: bool, return_counts: bool,
                       dim: int | None) -> Tensor | tuple[Tensor, ...]:
    """flow.unique_consecutive: one value per run of equal neighbours (flattened), with
    inverse and counts on request. Eager only, as unique."""
    return _unique_of("unique_consecutive", input, return_inverse, return_counts, dim, True)
