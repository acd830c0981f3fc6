"""Functors of the join / split ops (``jflow/ops/join.py``): cat / concat, stack, split,
chunk and unbind — dtype promotion for cat / stack, PyTorch's legacy corner cases and sizes
computed from split_size / chunks, then the op.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...ops import get
from ...tensor import Tensor
from ...views import alias
from ..promotion import cast, result_dtype
from ..registry import functor
from ._shape_util import wrap_dim

_squeeze = get("squeeze").apply
_cat = get("cat").apply
_stack = get("stack").apply
_split = get("split").apply


# -- cat / stack -----------------------------------------------------------------------------

def _promoted(tensors: Sequence[Tensor]) -> list[Tensor]:
    d0 = tensors[0]._value.dtype
    if all(t._value.dtype == d0 for t in tensors):
        return list(tensors)
    rt = result_dtype(*tensors)
    return [cast(t, rt) for t in tensors]


@functor("Cat")
def cat(tensors: Sequence[Tensor], dim: int) -> Tensor:
    if not tensors:
        raise ValueError("cat(): expected a non-empty list of Tensors")
    ts = _promoted(tensors)
    # PyTorch's legacy rule: 1-d empty tensors are skipped when other tensors have data dims
    keep = [t for t in ts if t._value.shape != (0,)]
    if keep and len(keep) < len(ts):
        ts = keep
    for k, x in enumerate(ts):
        if x._value.ndim == 0:
            raise ValueError(f"cat(): zero-dimensional tensor (at position {k}) cannot be "
                             f"concatenated")
    return _cat(ts, dim=wrap_dim("cat", dim, ts[0]._value.ndim))


@functor("Stack")
def stack(tensors: Sequence[Tensor], dim: int) -> Tensor:
    if not tensors:
        raise ValueError("stack(): expected a non-empty list of Tensors")
    ts = _promoted(tensors)
    s0 = ts[0]._value.shape
    for k, x in enumerate(ts[1:], 1):
        if x._value.shape != s0:
            raise ValueError(f"stack(): stack expects each tensor to be equal size, but got "
                             f"{list(s0)} at entry 0 and {list(x._value.shape)} at entry {k}")
    return _stack(ts, dim=wrap_dim("stack", dim, len(s0), extra=1))


# -- split / chunk / unbind / narrow / slice ----------------------------------------------------

def _split_dim(fname: str, input: Tensor, dim: int) -> tuple[int, int]:
    nd = input._value.ndim
    if nd == 0:
        raise ValueError(f"{fname}(): a 0-dim tensor cannot be split")
    a = wrap_dim(fname, dim, nd)
    return a, input._value.shape[a]


@functor("Split")
def split(input: Tensor, split_size: int, dim: int) -> tuple[Tensor, ...]:
    a, n = _split_dim("split", input, dim)
    if split_size < 0:
        raise ValueError(f"split(): split_size must be non-negative, got {split_size}")
    if split_size == 0:
        if n:
            raise ValueError(f"split(): split_size can only be 0 if dimension size is 0, but "
                             f"got dimension size of {n}")
        sizes: tuple[int, ...] = (0,)
    else:
        sizes = (split_size,) * (n // split_size) + ((n % split_size,) if n % split_size else ())
        sizes = sizes or (0,)
    return _pieces("split", input, a, sizes)


@functor("SplitWithSizes")
def split_with_sizes(input: Tensor, split_sizes: tuple[int, ...], dim: int) -> tuple[Tensor, ...]:
    a, n = _split_dim("split", input, dim)
    if any(s < 0 for s in split_sizes):
        raise ValueError(f"split(): split_sizes must be non-negative, got {list(split_sizes)}")
    if sum(split_sizes) != n or not split_sizes:
        raise ValueError(f"split(): split_sizes {list(split_sizes)} must sum exactly to {n} "
                         f"(the input tensor's size at dimension {a})")
    return _pieces("split", input, a, split_sizes)


@functor("Chunk")
def chunk(input: Tensor, chunks: int, dim: int) -> tuple[Tensor, ...]:
    if chunks <= 0:
        raise ValueError(f"chunk(): chunks must be greater than 0, got {chunks}")
    a, n = _split_dim("chunk", input, dim)
    if n == 0:
        return _pieces("chunk", input, a, (0,) * chunks)
    size = math.ceil(n / chunks)
    sizes = (size,) * (n // size) + ((n % size,) if n % size else ())
    return _pieces("chunk", input, a, sizes)


@functor("Unbind")
def unbind(input: Tensor, dim: int) -> tuple[Tensor, ...]:
    a, n = _split_dim("unbind", input, dim)
    if n == 0:
        return ()
    return tuple(alias(_squeeze(p, axes=(a,)), p, "squeeze", ((a,),))
                 for p in _pieces("unbind", input, a, (1,) * n))


def _pieces(fname: str, input: Tensor, dim: int, sizes: tuple[int, ...]
            ) -> tuple[Tensor, ...]:
    """split's outputs, each a view of ``input`` (a narrow of it)."""
    outs = _split(input, dim=dim, sizes=sizes)
    start = 0
    for out, size in zip(outs, sizes):
        alias(out, input, "narrow", (dim, start, size), multi=fname)
        start += size
    return outs
