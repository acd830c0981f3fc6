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
from ..registry import api, functor
from ._shape_util import wrap_dim

_squeeze = get("squeeze").apply
_cat = get("cat").apply
_stack = get("stack").apply
_split = get("split").apply


# -- cat / stack -----------------------------------------------------------------------------

def _promoted(tensors: Sequence[Tensor]) -> list[Tensor]:
    d0 = tensors[0]._meta.dtype
    if all(t._meta.dtype == d0 for t in tensors):
        return list(tensors)
    rt = result_dtype(*tensors)
    return [cast(t, rt) for t in tensors]


@functor("Cat")
def cat(tensors: Sequence[Tensor], dim: int) -> Tensor:
    if not tensors:
        raise ValueError("cat(): expected a non-empty list of Tensors")
    ts = _promoted(tensors)
    # PyTorch's legacy rule: 1-d empty tensors are skipped when other tensors have data dims
    keep = [t for t in ts if t._meta.shape != (0,)]
    if keep and len(keep) < len(ts):
        ts = keep
    for k, x in enumerate(ts):
        if x._meta.ndim == 0:
            raise ValueError(f"cat(): zero-dimensional tensor (at position {k}) cannot be "
                             f"concatenated")
    return _cat(ts, dim=wrap_dim("cat", dim, ts[0]._meta.ndim))


@functor("Stack")
def stack(tensors: Sequence[Tensor], dim: int) -> Tensor:
    if not tensors:
        raise ValueError("stack(): expected a non-empty list of Tensors")
    ts = _promoted(tensors)
    s0 = ts[0]._meta.shape
    for k, x in enumerate(ts[1:], 1):
        if x._meta.shape != s0:
            raise ValueError(f"stack(): stack expects each tensor to be equal size, but got "
                             f"{list(s0)} at entry 0 and {list(x._meta.shape)} at entry {k}")
    return _stack(ts, dim=wrap_dim("stack", dim, len(s0), extra=1))


# -- split / chunk / unbind / narrow / slice ----------------------------------------------------

def _split_dim(fname: str, input: Tensor, dim: int) -> tuple[int, int]:
    nd = input._meta.ndim
    if nd == 0:
        raise ValueError(f"{fname}(): a 0-dim tensor cannot be split")
    a = wrap_dim(fname, dim, nd)
    return a, input._meta.shape[a]


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


# -- hstack / vstack / dstack / column_stack, block_diag, meshgrid, cartesian_prod --------------
#
# Compositions of reshape / expand / cat / stack / pad, so their gradient, vmap and SBP are
# those ops'.

def _tensor_list(fname: str, tensors: Sequence[Tensor]) -> list[Tensor]:
    if not tensors:
        raise ValueError(f"{fname}(): expects a non-empty TensorList")
    return list(tensors)


def _atleast(t: Tensor, n: int) -> Tensor:
    """torch.atleast_{n}d's shape for n in 1..3 (1-d ``(k,)`` -> ``(1, k)`` / ``(1, k, 1)``,
    2-d ``(m, k)`` -> ``(m, k, 1)``)."""
    s = tuple(t._meta.shape)
    if len(s) >= n:
        return t
    new = {0: {1: (1,), 2: (1, 1), 3: (1, 1, 1)},
           1: {2: (1,) + s, 3: (1,) + s + (1,)},
           2: {3: s + (1,)}}[len(s)][n]
    return api().reshape(t, new)


@functor("Hstack")
def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """torch.hstack: concatenation along dim 1 (dim 0 for 1-d tensors)."""
    ts = [_atleast(t, 1) for t in _tensor_list("hstack", tensors)]
    return cat(ts, 0 if ts[0]._meta.ndim == 1 else 1)


@functor("Vstack")
def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """torch.vstack / row_stack: concatenation along dim 0 after atleast_2d."""
    return cat([_atleast(t, 2) for t in _tensor_list("vstack", tensors)], 0)


@functor("Dstack")
def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """torch.dstack: concatenation along dim 2 after atleast_3d."""
    return cat([_atleast(t, 3) for t in _tensor_list("dstack", tensors)], 2)


@functor("ColumnStack")
def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """torch.column_stack: 0-d / 1-d tensors become columns ``(k, 1)``, then hstack."""
    ts = [api().reshape(t, (int(t._meta.size), 1)) if t._meta.ndim <= 1 else t
          for t in _tensor_list("column_stack", tensors)]
    return cat(ts, 1)


@functor("BlockDiag")
def block_diag(tensors: Sequence[Tensor]) -> Tensor:
    """torch.block_diag: the (promoted) inputs, as 2-d blocks (0-d -> ``(1, 1)``, 1-d ``(k,)``
    -> ``(1, k)``), on the diagonal of a zero matrix: each block zero-padded to the total
    width, then the rows concatenated. An empty list gives a ``(0, 0)`` tensor of the default
    dtype, as PyTorch."""
    if not tensors:
        return api().full((0, 0), 0.0)
    blocks = []
    for k, t in enumerate(_promoted(tensors)):
        if t._meta.ndim > 2:
            raise ValueError(f"block_diag(): Input tensors must have 2 or fewer dimensions. "
                             f"Input {k} has {t._meta.ndim} dimensions")
        blocks.append(_atleast(t, 2))
    width = sum(int(b._meta.shape[1]) for b in blocks)
    rows, left = [], 0
    for b in blocks:
        w = int(b._meta.shape[1])
        rows.append(api().pad(b, (left, width - left - w, 0, 0)) if w != width else b)
        left += w
    return cat(rows, 0)


def _grid_inputs(fname: str, tensors: Sequence[Tensor]) -> list[Tensor]:
    ts = _tensor_list(fname, tensors)
    for k, t in enumerate(ts):
        if t._meta.ndim > 1:
            raise ValueError(f"{fname}(): Expected 0D or 1D tensor in the tensor list but got "
                             f"a {t._meta.ndim}-d tensor at position {k}")
        if t._meta.dtype != ts[0]._meta.dtype:
            raise TypeError(f"{fname}(): expects all tensors to have the same dtype, got "
                            f"{ts[0].dtype} and {t.dtype} (position {k})")
    return ts


@functor("Meshgrid")
def meshgrid(tensors: Sequence[Tensor], indexing: str) -> tuple[Tensor, ...]:
    """torch.meshgrid: ``indexing='ij'`` gives outputs of shape ``(n0, n1, ...)``; ``'xy'``
    (NumPy / MATLAB) swaps the first two axes. Each output is its input reshaped and expanded
    (a broadcast view, as in PyTorch)."""
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid(): indexing must be one of 'xy' or 'ij', got {indexing!r}")
    ts = _grid_inputs("meshgrid", tensors)
    sizes = [int(t._meta.size) for t in ts]
    axes = list(range(len(ts)))
    if indexing == "xy" and len(ts) >= 2:
        axes[0], axes[1] = 1, 0
    full = [0] * len(ts)
    for a, n in zip(axes, sizes):
        full[a] = n
    outs = []
    for a, t, n in zip(axes, ts, sizes):
        shape = tuple(n if i == a else 1 for i in range(len(ts)))
        outs.append(api().expand(api().reshape(t, shape), tuple(full)))
    return tuple(outs)


@functor("CartesianProd")
def cartesian_prod(tensors: Sequence[Tensor]) -> Tensor:
    """torch.cartesian_prod: ``(prod(n), len(tensors))`` rows in itertools.product order; a
    single input is returned as is (1-d)."""
    ts = _grid_inputs("cartesian_prod", tensors)
    if len(ts) == 1:
        return api().reshape(ts[0], (-1,))
    grids = meshgrid(ts, "ij")
    return stack([api().reshape(g, (-1,)) for g in grids], 1)


@functor("NarrowCopy")
def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """torch.narrow_copy: ``narrow`` as a new tensor (no view: writes do not reach input)."""
    return api().clone(api().narrow(input, dim, start, length))


# -- splitting (tensor_split & co.) --------------------------------------------------------------

@functor("TensorSplit")
def tensor_split(input: Tensor, sections: int, dim: int) -> tuple[Tensor, ...]:
    """torch.tensor_split into ``sections`` pieces: the first ``n % sections`` one element
    longer (views)."""
    a, n = _split_dim("tensor_split", input, dim)
    if sections <= 0:
        raise ValueError(f"tensor_split(): number of sections must be larger than 0, got "
                         f"{sections}")
    q, r = divmod(n, sections)
    sizes = tuple(q + 1 if k < r else q for k in range(sections))
    return _pieces("tensor_split", input, a, sizes)


@functor("TensorSplitIndices")
def tensor_split_indices(input: Tensor, indices: Sequence[int], dim: int
                         ) -> tuple[Tensor, ...]:
    """torch.tensor_split at ``indices``: piece ``k`` is ``input[indices[k-1]:indices[k]]``
    along ``dim`` (Python slice bounds: clamped, empty where they decrease), one more piece
    than indices (views)."""
    a, n = _split_dim("tensor_split", input, dim)
    bounds = [0] + [min(max(i + n if i < 0 else i, 0), n) for i in indices] + [n]
    return tuple(api().narrow(input, a, s, max(e - s, 0)) for s, e in zip(bounds, bounds[1:]))


def _np_split(fname: str, input: Tensor, sections_or_indices: object, dim: int,
              min_nd: int) -> tuple[Tensor, ...]:
    nd = input._meta.ndim
    if nd < min_nd:
        raise ValueError(f"{fname}(): argument 'input' must have at least {min_nd} "
                         f"dimension(s), but got a {nd}-d tensor")
    if isinstance(sections_or_indices, int):
        n = input._meta.shape[dim]
        if sections_or_indices <= 0 or n % sections_or_indices:
            raise ValueError(f"{fname}(): argument 'sections' ({sections_or_indices}) must "
                             f"divide the size of dim {dim} ({n}) evenly")
        return tensor_split(input, sections_or_indices, dim)
    return tensor_split_indices(input, tuple(sections_or_indices), dim)


@functor("Hsplit")
def hsplit(input: Tensor, sections_or_indices: object) -> tuple[Tensor, ...]:
    """torch.hsplit: ``tensor_split`` along dim 1 (dim 0 for a 1-D input); an int must divide
    the size evenly."""
    return _np_split("hsplit", input, sections_or_indices,
                     1 if input._meta.ndim > 1 else 0, 1)


@functor("Vsplit")
def vsplit(input: Tensor, sections_or_indices: object) -> tuple[Tensor, ...]:
    """torch.vsplit: ``tensor_split`` along dim 0 of an input with at least 2 dims."""
    return _np_split("vsplit", input, sections_or_indices, 0, 2)


@functor("Dsplit")
def dsplit(input: Tensor, sections_or_indices: object) -> tuple[Tensor, ...]:
    """torch.dsplit: ``tensor_split`` along dim 2 of an input with at least 3 dims."""
    return _np_split("dsplit", input, sections_or_indices, 2, 3)
