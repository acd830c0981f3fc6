"""Functors of the rearranging ops (``jflow/ops/rearrange.py``): flip, roll, repeat / tile,
tril and triu — PyTorch's argument rules, then the op.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from ... import dtypes as _dt
from ...ops import get
from ...tensor import Tensor, _wrap
from ..registry import api, functor
from ._shape_util import wrap_dim
from .factory import on_device

_flip = get("flip").apply
_roll = get("roll").apply
_repeat = get("repeat").apply
_tril = get("tril").apply
_triu = get("triu").apply
_index_select = get("index_select").apply


# -- flip / roll / repeat / tile / tril / triu ---------------------------------------------------

@functor("Flip")
def flip(input: Tensor, dims: tuple[int, ...]) -> Tensor:
    nd = input._meta.ndim
    axes = tuple(wrap_dim("flip", d, nd) for d in dims)
    for k, a in enumerate(axes):
        if a in axes[:k]:
            raise ValueError(f"flip(): dim {a} appears multiple times in the list of dims "
                             f"{list(dims)}")
    return _flip(input, axes=tuple(sorted(axes)) if nd else ())


@functor("Roll")
def roll(input: Tensor, shifts: tuple[int, ...], dims: tuple[int, ...] | None) -> Tensor:
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
    nd = input._meta.ndim
    return _roll(input, shifts=shifts, axes=tuple(wrap_dim("roll", d, nd) for d in dims))


def _check_repeats(fname: str, input: Tensor, repeats: Sequence[int]) -> None:
    nd = input._meta.ndim
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
    nd = input._meta.ndim
    reps = (1,) * (nd - len(dims)) + tuple(dims)
    _check_repeats("tile", input, reps)
    return _repeat(input, repeats=reps)


def _tri(fname: str, op: Any):
    def fn(input: Tensor, diagonal: int) -> Tensor:
        if input._meta.ndim < 2:
            raise ValueError(f"{fname}(): input tensor must have at least 2 dimensions, got "
                             f"{input._meta.ndim}")
        return op(input, diagonal=diagonal)
    fn.__name__ = fname
    return fn


functor("Tril")(_tri("tril", _tril))
functor("Triu")(_tri("triu", _triu))


# -- fliplr / flipud / rot90, diff, repeat_interleave, tril/triu_indices, combinations
#
# Compositions of flip / transpose / narrow / sub / cat / index_select, so their gradient,
# vmap and SBP are those ops'. Index tensors built from sizes are made on the host (NumPy).

def _host_index(arr: np.ndarray, like: Tensor | None) -> Tensor:
    """A host int64 array as a tensor (on ``like``'s device when given)."""
    a = np.ascontiguousarray(arr.astype(np.int64))
    if like is None or isinstance(like._meta, Tracer):
        return _wrap(jax.device_put(a))
    return _wrap(jax.device_put(a, next(iter(like._value.devices()))))


@functor("Fliplr")
def fliplr(input: Tensor) -> Tensor:
    """torch.fliplr: flip dim 1 (the input must be at least 2-d)."""
    if input._meta.ndim < 2:
        raise ValueError("fliplr(): Input must be >= 2-d.")
    return _flip(input, axes=(1,))


@functor("Flipud")
def flipud(input: Tensor) -> Tensor:
    """torch.flipud: flip dim 0 (the input must be at least 1-d)."""
    if input._meta.ndim < 1:
        raise ValueError("flipud(): Input must be >= 1-d.")
    return _flip(input, axes=(0,))


@functor("Rot90")
def rot90(input: Tensor, k: int, dims: tuple[int, ...]) -> Tensor:
    """torch.rot90: rotate by 90 degrees ``k`` times in the plane ``dims``, from the first
    towards the second axis: a flip and / or a transpose."""
    nd = input._meta.ndim
    if len(dims) != 2:
        raise ValueError(f"rot90(): expected total rotation dims == 2, but got dims = "
                         f"{len(dims)}")
    if nd < 2:
        raise ValueError(f"rot90(): expected total dims >= 2, but got total dims = {nd}")
    a, b = (wrap_dim("rot90", d, nd) for d in dims)
    if a == b:
        raise ValueError(f"rot90(): expected rotation dims to be different, but got dim0 = "
                         f"{dims[0]} and dim1 = {dims[1]}")
    k %= 4
    if k == 0:
        return api().clone(input)
    if k == 2:
        return _flip(input, axes=tuple(sorted((a, b))))
    if k == 1:
        return api().transpose(_flip(input, axes=(b,)), a, b)
    return _flip(api().transpose(input, a, b), axes=(b,))


@functor("Diff")
def diff(input: Tensor, n: int, dim: int, prepend: Tensor | None,
         append: Tensor | None) -> Tensor:
    """torch.diff: the n-th forward difference along dim, after concatenating ``prepend`` /
    ``append``; bool inputs give ``!=`` (logical xor), as in PyTorch."""
    F = api()
    nd = input._meta.ndim
    if nd == 0:
        raise ValueError("diff(): diff expects input to be at least one-dimensional")
    if n < 0:
        raise ValueError(f"diff(): order must be non-negative but got {n}")
    d = wrap_dim("diff", dim, nd)
    parts = [t for t in (prepend, input, append) if t is not None]
    for t in parts:
        if t._meta.ndim != nd:
            raise ValueError(f"diff(): expected prepend and append to have {nd} dimension(s) "
                             f"(as input), got a {t._meta.ndim}-d tensor")
    x = F.cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        m = int(x._meta.shape[d])
        if m == 0:
            break
        hi, lo = F.narrow(x, d, 1, m - 1), F.narrow(x, d, 0, m - 1)
        x = F.logical_xor(hi, lo) if x._meta.dtype == np.bool_ else F.sub(hi, lo)
    return x


@functor("RepeatInterleave")
def repeat_interleave(input: Tensor, repeats: Any, dim: Any, output_size: Any) -> Tensor:
    """torch.repeat_interleave: each entry (along ``dim``; of the flattened input when dim is
    None) repeated ``repeats`` times — an int or a 1-D tensor with one count per entry. An
    ``index_select`` with a host-built index (tensor counts are read eagerly: the output size
    depends on them). ``output_size``, when given, must equal the total."""
    F = api()
    if dim is None:
        input, d = F.reshape(input, (-1,)), 0
    else:
        d = wrap_dim("repeat_interleave", dim, input._meta.ndim)
    n = int(input._meta.shape[d]) if input._meta.ndim else 1
    if isinstance(repeats, Tensor):
        if repeats._meta.dtype.kind not in "iu":
            raise TypeError(f"repeat_interleave(): repeats must be an integer tensor, got "
                            f"{repeats.dtype}")
        if repeats._meta.ndim > 1:
            raise ValueError("repeat_interleave(): repeats must be 0-dim or 1-dim tensor")
        if isinstance(repeats._meta, Tracer):
            if output_size is None:
                raise TypeError("repeat_interleave(): the output size depends on the values "
                                "of a tensor 'repeats', which are unknown while tracing "
                                "(jax.jit / vmap / grad); pass output_size (or an int)")
            return _traced_repeat(input, repeats, d, n, output_size)
        reps = np.asarray(jax.device_get(repeats._value)).reshape(-1)
        if reps.size == 1:
            reps = np.full((n,), int(reps[0]))
        elif reps.size != n:
            raise ValueError(f"repeat_interleave(): repeats must have the same size as input "
                             f"along dim, but got repeats.size(0) = {reps.size} and "
                             f"input.size({d}) = {n}")
    else:
        reps = np.full((n,), int(repeats))
    if (reps < 0).any():
        raise ValueError("repeat_interleave(): repeats can not be negative")
    total = int(reps.sum())
    if output_size is not None and output_size != total:
        raise ValueError(f"repeat_interleave(): output_size ({output_size}) does not match the "
                         f"sum of repeats ({total})")
    index = _host_index(np.repeat(np.arange(n), reps), input)
    if input._meta.ndim == 0:
        input = F.reshape(input, (1,))
    return _index_select(input, index, dim=d)


@functor("RepeatInterleaveIndex")
def repeat_interleave_index(repeats: Tensor, output_size: Any) -> Tensor:
    """torch.repeat_interleave(repeats): ``i`` repeated ``repeats[i]`` times (an index)."""
    if repeats._meta.ndim != 1 or repeats._meta.dtype.kind not in "iu":
        raise ValueError("repeat_interleave(): repeats must be a 1-d integer tensor")
    return repeat_interleave(api().arange(int(repeats._meta.shape[0]), device=None), repeats,
                             0, output_size)


def _traced_repeat(input: Tensor, repeats: Tensor, d: int, n: int, output_size: int) -> Tensor:
    """repeat_interleave with traced counts and a given ``output_size``: output position j
    reads entry ``#{i : cumsum(repeats)[i] <= j}`` (an ``(output_size, n)`` comparison, no
    host sync). Counts that do not sum to output_size are not detected here, as in PyTorch."""
    F = api()
    if int(repeats._meta.size) == 1 and n != 1:
        repeats = F.expand(F.reshape(repeats, (1,)), (n,))
    elif int(repeats._meta.size) != n:
        raise ValueError(f"repeat_interleave(): repeats must have the same size as input along "
                         f"dim, but got repeats.size(0) = {int(repeats._meta.size)} and "
                         f"input.size({d}) = {n}")
    ends = F.reshape(F.cumsum(F.reshape(repeats, (n,)), 0), (1, n))
    pos = F.reshape(F.arange(output_size), (output_size, 1))
    index = F.sum(F.le(ends, pos), 1)
    if input._meta.ndim == 0:
        input = F.reshape(input, (1,))
    return _index_select(input, index, dim=d)


def _tri_indices(fname: str, row: int, col: int, offset: int, dtype: Any, device: Any,
                 lower: bool) -> Tensor:
    if row < 0 or col < 0:
        raise ValueError(f"{fname}(): row and col must be non-negative, got {row} and {col}")
    r, c = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    d = _dt.int64 if dtype is None else dtype
    if d.category != 1:
        raise TypeError(f"{fname}(): dtype must be an integer dtype, got {d}")
    out = _wrap(jax.device_put(np.stack([r, c]).astype(d.np).reshape(2, -1)))
    return on_device(out, device)


@functor("TrilIndices")
def tril_indices(row: int, col: int, offset: int, dtype: Any, device: Any) -> Tensor:
    """torch.tril_indices: ``(2, N)`` row / column coordinates of the lower triangle."""
    return _tri_indices("tril_indices", row, col, offset, dtype, device, True)


@functor("TriuIndices")
def triu_indices(row: int, col: int, offset: int, dtype: Any, device: Any) -> Tensor:
    """torch.triu_indices: ``(2, N)`` row / column coordinates of the upper triangle."""
    return _tri_indices("triu_indices", row, col, offset, dtype, device, False)


@functor("Combinations")
def combinations(input: Tensor, r: int, with_replacement: bool) -> Tensor:
    """torch.combinations: the length-``r`` combinations of a 1-D tensor's entries as rows
    (itertools order), gathered with host-built indices (differentiable in the input)."""
    if input._meta.ndim != 1:
        raise ValueError(f"combinations(): Expect a 1D vector, but got shape "
                         f"{list(input._meta.shape)}")
    if r < 0:
        raise ValueError(f"combinations(): Expect a non-negative number, but got {r}")
    if r == 0:
        return api().full((0,), 0.0, dtype=input.dtype)
    n = int(input._meta.shape[0])
    make = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(make(range(n), r)), np.int64).reshape(-1, r)
    flat = _index_select(input, _host_index(idx.reshape(-1), input), dim=0)
    return api().reshape(flat, idx.shape)
