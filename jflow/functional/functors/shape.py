"""Functors of the shape ops: PyTorch argument handling (negative dims, -1 sizes, int-or-list
arguments, legacy corner cases), dtype promotion for cat/stack, then the op.

Argument errors are raised here, naming the function as PyTorch does: ``IndexError`` for a
dim out of range, ``ValueError`` for sizes that do not fit, ``TypeError`` for wrong types
(the generated parser). Ops canonicalise nothing twice: the functor passes normalised attrs,
so equal calls share one cached executable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...ops import get
from ...ops.shape import expand_shape, reshape_shape
from ...tensor import Tensor
from ..promotion import cast, result_dtype
from ..registry import functor

_reshape = get("reshape").apply
_flatten = get("flatten").apply
_squeeze = get("squeeze").apply
_unsqueeze = get("unsqueeze").apply
_transpose = get("transpose").apply
_expand = get("expand").apply
_cat = get("cat").apply
_stack = get("stack").apply
_split = get("split").apply
_narrow = get("narrow").apply
_slice = get("slice").apply
_flip = get("flip").apply
_roll = get("roll").apply
_repeat = get("repeat").apply
_tril = get("tril").apply
_triu = get("triu").apply
_pad = get("pad").apply
_clone = get("clone").apply


def _dim(fname: str, dim: int, ndim: int, extra: int = 0) -> int:
    """``dim`` normalised for a tensor of ``ndim`` dims (``extra`` = 1 where one past the end
    is valid, as for unsqueeze / stack); IndexError as PyTorch's "Dimension out of range"."""
    n = max(ndim + extra, 1)
    if not -n <= dim < n:
        raise IndexError(f"{fname}(): dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim % n


def _fail(fname: str, e: ValueError) -> ValueError:
    return ValueError(f"{fname}(): {e}")


# -- reshape family ----------------------------------------------------------------------------

def _reshape_to(fname: str, input: Tensor, shape: Sequence[int]) -> Tensor:
    try:
        s = reshape_shape(input._value.shape, shape)
    except ValueError as e:
        raise _fail(fname, e) from None
    return _reshape(input, shape=s)


@functor("Reshape")
def reshape(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    return _reshape_to("reshape", input, shape)


@functor("View")
def view(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    """As reshape: JAX arrays are immutable, so a view is a reshaped value (writing into a view
    does not write into its base)."""
    return _reshape_to("view", input, shape)


@functor("Flatten")
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    nd = input._value.ndim
    s = _dim("flatten", start_dim, nd)
    e = _dim("flatten", end_dim, nd)
    if nd and s > e:
        raise ValueError(f"flatten(): start_dim ({start_dim}) cannot come after end_dim "
                         f"({end_dim})")
    return _flatten(input, start_dim=s, end_dim=e)


@functor("Unflatten")
def unflatten(input: Tensor, dim: int, sizes: tuple[int, ...]) -> Tensor:
    shape = tuple(input._value.shape)
    a = _dim("unflatten", dim, len(shape))
    if not sizes:
        raise ValueError("unflatten(): sizes must be non-empty")
    try:
        inner = reshape_shape((shape[a],) if shape else (1,), sizes)
    except ValueError as e:
        raise ValueError(f"unflatten(): provided sizes {list(sizes)} don't multiply up to the "
                         f"size of dim {dim} ({shape[a] if shape else 1}) in the input "
                         f"tensor ({e})") from None
    return _reshape(input, shape=shape[:a] + inner + shape[a + 1:])


@functor("Squeeze")
def squeeze(input: Tensor, dim: tuple[int, ...] | None = None) -> Tensor:
    shape = input._value.shape
    nd = len(shape)
    if dim is None:
        axes = tuple(i for i, s in enumerate(shape) if s == 1)
    else:
        norm = {_dim("squeeze", d, nd) for d in dim}
        axes = tuple(sorted(a for a in norm if nd and shape[a] == 1))
    return _squeeze(input, axes=axes)


@functor("Unsqueeze")
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    return _unsqueeze(input, dim=_dim("unsqueeze", dim, input._value.ndim, extra=1))


# -- permutations ----------------------------------------------------------------------------

@functor("Transpose")
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    nd = input._value.ndim
    a, b = _dim("transpose", dim0, nd), _dim("transpose", dim1, nd)
    perm = list(range(nd))
    if nd:
        perm[a], perm[b] = perm[b], perm[a]
    return _transpose(input, perm=tuple(perm))


@functor("Permute")
def permute(input: Tensor, dims: tuple[int, ...]) -> Tensor:
    nd = input._value.ndim
    if len(dims) != nd:
        raise ValueError(f"permute(): number of dims don't match: the input has {nd} dims but "
                         f"dims has {len(dims)} entries ({list(dims)})")
    perm = tuple(_dim("permute", d, nd) for d in dims)
    if len(set(perm)) != nd:
        raise ValueError(f"permute(): repeated dim in {list(dims)}")
    return _transpose(input, perm=perm)


@functor("Movedim")
def movedim(input: Tensor, source: tuple[int, ...], destination: tuple[int, ...]) -> Tensor:
    nd = input._value.ndim
    if len(source) != len(destination):
        raise ValueError(f"movedim(): invalid source or destination dims: source "
                         f"({list(source)} dims) should contain the same number of dims as "
                         f"destination ({list(destination)} dims)")
    src = [_dim("movedim", d, nd) for d in source]
    dst = [_dim("movedim", d, nd) for d in destination]
    if len(set(src)) != len(src):
        raise ValueError(f"movedim(): repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise ValueError(f"movedim(): repeated dim in `destination` ({list(destination)})")
    perm: list[int | None] = [None] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(i for i in range(nd) if i not in src)
    final = tuple(p if p is not None else next(rest) for p in perm)
    return _transpose(input, perm=final)


@functor("T")
def t(input: Tensor) -> Tensor:
    nd = input._value.ndim
    if nd > 2:
        raise ValueError(f"t() expects a tensor with <= 2 dimensions, but input is {nd}D")
    return _transpose(input, perm=(1, 0) if nd == 2 else tuple(range(nd)))


# -- expand ----------------------------------------------------------------------------------

def _expand_to(fname: str, input: Tensor, size: Sequence[int]) -> Tensor:
    try:
        s = expand_shape(input._value.shape, size)
    except ValueError as e:
        raise _fail(fname, e) from None
    return _expand(input, shape=s)


@functor("Expand")
def expand(input: Tensor, size: tuple[int, ...]) -> Tensor:
    return _expand_to("expand", input, size)


@functor("BroadcastTo")
def broadcast_to(input: Tensor, size: tuple[int, ...]) -> Tensor:
    return _expand_to("broadcast_to", input, size)


# -- cat / stack -----------------------------------------------------------------------------

def _promoted(tensors: Sequence[Tensor]) -> list[Tensor]:
    d0 = tensors[0]._value.dtype
    if all(t._value.dtype == d0 for t in tensors):
        return list(tensors)
    rt = result_dtype(*tensors)
    return [cast(t, rt) for t in tensors]


@functor("Cat")
def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
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
    return _cat(ts, dim=_dim("cat", dim, ts[0]._value.ndim))


@functor("Stack")
def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    if not tensors:
        raise ValueError("stack(): expected a non-empty list of Tensors")
    ts = _promoted(tensors)
    s0 = ts[0]._value.shape
    for k, x in enumerate(ts[1:], 1):
        if x._value.shape != s0:
            raise ValueError(f"stack(): stack expects each tensor to be equal size, but got "
                             f"{list(s0)} at entry 0 and {list(x._value.shape)} at entry {k}")
    return _stack(ts, dim=_dim("stack", dim, len(s0), extra=1))


# -- split / chunk / unbind / narrow / slice ----------------------------------------------------

def _split_dim(fname: str, input: Tensor, dim: int) -> tuple[int, int]:
    nd = input._value.ndim
    if nd == 0:
        raise ValueError(f"{fname}(): a 0-dim tensor cannot be split")
    a = _dim(fname, dim, nd)
    return a, input._value.shape[a]


@functor("Split")
def split(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
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
    return _split(input, dim=a, sizes=sizes)


@functor("SplitWithSizes")
def split_with_sizes(input: Tensor, split_sizes: tuple[int, ...], dim: int = 0
                     ) -> tuple[Tensor, ...]:
    a, n = _split_dim("split", input, dim)
    if any(s < 0 for s in split_sizes):
        raise ValueError(f"split(): split_sizes must be non-negative, got {list(split_sizes)}")
    if sum(split_sizes) != n or not split_sizes:
        raise ValueError(f"split(): split_sizes {list(split_sizes)} must sum exactly to {n} "
                         f"(the input tensor's size at dimension {a})")
    return _split(input, dim=a, sizes=split_sizes)


@functor("Chunk")
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    if chunks <= 0:
        raise ValueError(f"chunk(): chunks must be greater than 0, got {chunks}")
    a, n = _split_dim("chunk", input, dim)
    if n == 0:
        return _split(input, dim=a, sizes=(0,) * chunks)
    size = math.ceil(n / chunks)
    sizes = (size,) * (n // size) + ((n % size,) if n % size else ())
    return _split(input, dim=a, sizes=sizes)


@functor("Unbind")
def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    a, n = _split_dim("unbind", input, dim)
    if n == 0:
        return ()
    return tuple(_squeeze(p, axes=(a,)) for p in _split(input, dim=a, sizes=(1,) * n))


@functor("Narrow")
def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    nd = input._value.ndim
    if nd == 0:
        raise ValueError("narrow(): cannot be applied to a 0-dim tensor")
    a = _dim("narrow", dim, nd)
    size = input._value.shape[a]
    if not -size <= start <= size:
        raise IndexError(f"narrow(): start out of range (expected to be in range of "
                         f"[{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0:
        raise ValueError(f"narrow(): length must be non-negative, got {length}")
    if start + length > size:
        raise ValueError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size "
                         f"({size})")
    return _narrow(input, dim=a, start=start, length=length)


@functor("Slice")
def slice_(input: Tensor, start: tuple[int, ...], stop: tuple[int, ...], step: tuple[int, ...]
           ) -> Tensor:
    nd = input._value.ndim
    if not len(start) == len(stop) == len(step) == nd:
        raise ValueError(f"slice(): start, stop and step must each have one entry per dim of "
                         f"the input ({nd}), got {len(start)}, {len(stop)} and {len(step)}")
    if any(s <= 0 for s in step):
        raise ValueError(f"slice(): step must be greater than zero, got {list(step)}")
    return _slice(input, start=start, stop=stop, step=step)


# -- flip / roll / repeat / tile / tril / triu ---------------------------------------------------

@functor("Flip")
def flip(input: Tensor, dims: tuple[int, ...]) -> Tensor:
    nd = input._value.ndim
    axes = tuple(_dim("flip", d, nd) for d in dims)
    for k, a in enumerate(axes):
        if a in axes[:k]:
            raise ValueError(f"flip(): dim {a} appears multiple times in the list of dims "
                             f"{list(dims)}")
    return _flip(input, axes=tuple(sorted(axes)) if nd else ())


@functor("Roll")
def roll(input: Tensor, shifts: tuple[int, ...], dims: tuple[int, ...] | None = None) -> Tensor:
    if not shifts:
        raise ValueError("roll(): shifts must not be empty")
    if dims is None or len(dims) == 0:
        if len(shifts) != 1:
            raise ValueError(f"roll(): shifts ({list(shifts)}) must have one entry when dims is "
                             f"not given")
        return _roll(input, shifts=shifts, axes=())
    if len(shifts) != len(dims):
        raise ValueError(f"roll(): shifts and dimensions must align. shifts: {len(shifts)}, "
                         f"dims: {len(dims)}")
    nd = input._value.ndim
    return _roll(input, shifts=shifts, axes=tuple(_dim("roll", d, nd) for d in dims))


def _check_repeats(fname: str, input: Tensor, repeats: Sequence[int]) -> None:
    nd = input._value.ndim
    if len(repeats) < nd:
        raise ValueError(f"{fname}(): number of dimensions of repeat dims ({len(repeats)}) can "
                         f"not be smaller than number of dimensions of tensor ({nd})")
    if any(r < 0 for r in repeats):
        raise ValueError(f"{fname}(): trying to create tensor with negative dimension: "
                         f"repeats {list(repeats)}")


@functor("Repeat")
def repeat(input: Tensor, repeats: tuple[int, ...]) -> Tensor:
    _check_repeats("repeat", input, repeats)
    return _repeat(input, repeats=repeats)


@functor("Tile")
def tile(input: Tensor, dims: tuple[int, ...]) -> Tensor:
    nd = input._value.ndim
    reps = (1,) * (nd - len(dims)) + tuple(dims)
    _check_repeats("tile", input, reps)
    return _repeat(input, repeats=reps)


def _tri(fname: str, op: Any):
    def fn(input: Tensor, diagonal: int = 0) -> Tensor:
        if input._value.ndim < 2:
            raise ValueError(f"{fname}(): input tensor must have at least 2 dimensions, got "
                             f"{input._value.ndim}")
        return op(input, diagonal=diagonal)
    fn.__name__ = fname
    return fn


functor("Tril")(_tri("tril", _tril))
functor("Triu")(_tri("triu", _triu))


# -- pad / clone ---------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


@functor("Pad")
def pad(input: Tensor, pad: tuple[int, ...], mode: str = "constant", value: Any = None) -> Tensor:
    if mode not in _PAD_MODES:
        raise ValueError(f"pad(): mode must be one of {list(_PAD_MODES)}, got {mode!r}")
    if len(pad) % 2:
        raise ValueError(f"pad(): padding length must be divisible by 2, got {len(pad)}")
    nd = input._value.ndim
    if len(pad) // 2 > nd:
        raise ValueError(f"pad(): padding length ({len(pad)}) is too large for a {nd}-d input "
                         f"(at most {2 * nd})")
    if mode != "constant" and value is not None and value != 0:
        raise ValueError(f"pad(): padding mode {mode!r} doesn't take in value argument")
    v = 0.0 if value is None else float(value)
    return _pad(input, pad=pad, mode=mode, value=v)


@functor("Clone")
def clone(input: Tensor) -> Tensor:
    return _clone(input)
