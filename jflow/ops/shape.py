"""Shape ops: reshape, flatten, squeeze, unsqueeze, transpose, expand, cat, stack, split,
narrow, slice, flip, roll, repeat, tril/triu, pad, clone, and the indexing ops ``getitem`` /
``setitem`` — definition, xla kernel and SBP signatures side by side.

Shape ops are dtype-agnostic and exact (no rounding), and most are linear, so besides the
split signatures that map a preserved axis to its new position they offer ``P -> P``.

Indexing ops take their static index as a string attr (``spec``) and the index tensors as a
variadic input, so ``x[i, 1:3, idx]`` is one primitive: it caches per spec, traces under
``jax.jit``, batches under ``jax.vmap`` and gets SBP / autograd like any op. The spec grammar
is in :func:`parse_index_spec`; :func:`index_plan` turns a spec plus shapes into the
PyTorch semantics (ints, slices, None, Ellipsis, 0-d index tensors applied first as views,
then the n-d index tensors with NumPy's advanced-indexing rules on that view).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, P, S, Signature, elementwise
from .infer import BOOL, INT, broadcast_shapes, check_dtype, desc, normalize_axis
from .registry import Attr, Input, Output, define_op

__all__ = ["reshape_shape", "expand_shape", "flatten_shape", "parse_index_spec", "index_plan",
           "IndexPlan", "reshape_signatures"]

_PP = Signature((P,), (P,))


def _prod(xs: Sequence[int]) -> int:
    return math.prod(int(x) for x in xs)


def _dims(shape: Sequence[int]) -> str:
    return str([int(s) for s in shape])


# -- reshape / flatten ------------------------------------------------------------------------

def reshape_shape(in_shape: Sequence[int], shape: Sequence[int]) -> tuple[int, ...]:
    """The target shape with a ``-1`` resolved; ValueError when it cannot hold the input."""
    n = _prod(in_shape)
    shape = [int(s) for s in shape]
    bad = [s for s in shape if s < -1]
    if bad:
        raise ValueError(f"invalid shape dimension {bad[0]} in shape {shape}")
    infer = [i for i, s in enumerate(shape) if s == -1]
    if len(infer) > 1:
        raise ValueError(f"only one dimension can be inferred (-1), got shape {shape}")
    if infer:
        rest = _prod(s for s in shape if s != -1)
        if rest == 0:
            raise ValueError(f"cannot reshape a tensor of 0 elements into shape {shape} because "
                             f"the unspecified dimension size -1 can be any value and is "
                             f"ambiguous")
        if n % rest:
            raise ValueError(f"shape {shape} is invalid for input of size {n}")
        shape[infer[0]] = n // rest
    if _prod(shape) != n:
        raise ValueError(f"shape {shape} is invalid for input of size {n} "
                         f"(input shape {_dims(in_shape)})")
    return tuple(shape)


def reshape_signatures(src: Sequence[int], dst: Sequence[int]) -> list[Signature]:
    """S(i) -> S(j) where input axis i and output axis j start the same block of elements
    (equal products of the dims before them, both sizes > 1), so each rank's contiguous
    chunk reshapes locally; plus P -> P (reshape is linear)."""
    sigs = []
    pin = np.cumprod([1] + list(src))[:-1] if src else []
    pout = np.cumprod([1] + list(dst))[:-1] if dst else []
    for i, si in enumerate(src):
        if si <= 1:
            continue
        for j, sj in enumerate(dst):
            if sj > 1 and pin[i] == pout[j]:
                sigs.append(Signature((S(i),), (S(j),)))
                break
    sigs.append(_PP)
    return sigs


def _reshape_infer(x, shape):
    return desc(reshape_shape(x.shape, shape), x.dtype)


define_op("reshape", inputs=["x"], outputs=["y"], attrs=[Attr("shape", "shape")],
          infer=_reshape_infer,
          sbp=lambda in_shapes, n_out=1, shape=(): reshape_signatures(
              in_shapes[0], reshape_shape(in_shapes[0], shape)),
          doc="Reshape to `shape` (one -1 is inferred); row-major element order is kept.")
register_kernel("reshape", lambda x, shape: jnp.reshape(x, reshape_shape(x.shape, shape)),
                name="reshape_xla")


def flatten_shape(in_shape: Sequence[int], start_dim: int, end_dim: int) -> tuple[int, ...]:
    """Shape after merging dims start_dim..end_dim (a 0-d input flattens to shape (1,))."""
    nd = len(in_shape)
    if nd == 0:
        normalize_axis(start_dim, 0, "start_dim")
        normalize_axis(end_dim, 0, "end_dim")
        return (1,)
    s = normalize_axis(start_dim, nd, "start_dim")
    e = normalize_axis(end_dim, nd, "end_dim")
    if s > e:
        raise ValueError(f"flatten() has invalid args: start_dim ({start_dim}) cannot come "
                         f"after end_dim ({end_dim})")
    return tuple(in_shape[:s]) + (_prod(in_shape[s:e + 1]),) + tuple(in_shape[e + 1:])


define_op("flatten", inputs=["x"], outputs=["y"],
          attrs=[Attr("start_dim", "int32", 0), Attr("end_dim", "int32", -1)],
          infer=lambda x, start_dim, end_dim: desc(flatten_shape(x.shape, start_dim, end_dim),
                                                   x.dtype),
          sbp=lambda in_shapes, n_out=1, start_dim=0, end_dim=-1: reshape_signatures(
              in_shapes[0], flatten_shape(in_shapes[0], start_dim, end_dim)))
register_kernel("flatten", lambda x, start_dim, end_dim: jnp.reshape(
    x, flatten_shape(x.shape, start_dim, end_dim)), name="flatten_xla")


# -- squeeze / unsqueeze ---------------------------------------------------------------------

def _squeeze_axes(shape: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    nd = len(shape)
    out = sorted({normalize_axis(a, nd) for a in axes})
    if len(out) != len(axes):
        raise ValueError(f"axes {list(axes)} repeat an axis")
    for a in out:
        if nd and shape[a] != 1:
            raise ValueError(f"cannot squeeze axis {a} of size {shape[a]} (shape "
                             f"{_dims(shape)}); only size-1 axes can be squeezed")
    return tuple(out) if nd else ()


def _squeeze_infer(x, axes):
    ax = _squeeze_axes(x.shape, axes)
    return desc([d for i, d in enumerate(x.shape) if i not in ax], x.dtype)


def _squeeze_sbp(in_shapes, n_out=1, axes=()):
    ax = _squeeze_axes(in_shapes[0], axes)
    kept = [i for i in range(len(in_shapes[0])) if i not in ax]
    return [Signature((S(i),), (S(j),)) for j, i in enumerate(kept)] + [_PP]


define_op("squeeze", inputs=["x"], outputs=["y"], attrs=[Attr("axes", "int32_list")],
          infer=_squeeze_infer, sbp=_squeeze_sbp,
          doc="Remove the listed size-1 axes (the functor picks them, as torch.squeeze).")
register_kernel("squeeze", lambda x, axes: lax.squeeze(x, _squeeze_axes(x.shape, axes)),
                name="squeeze_xla")


def _unsqueeze_axis(ndim: int, dim: int) -> int:
    return normalize_axis(dim, ndim + 1)


def _unsqueeze_sbp(in_shapes, n_out=1, dim=0):
    nd = len(in_shapes[0])
    a = _unsqueeze_axis(nd, dim)
    return [Signature((S(i),), (S(i if i < a else i + 1),)) for i in range(nd)] + [_PP]


def _unsqueeze_infer(x, dim):
    a = _unsqueeze_axis(len(x.shape), dim)
    return desc(tuple(x.shape[:a]) + (1,) + tuple(x.shape[a:]), x.dtype)


define_op("unsqueeze", inputs=["x"], outputs=["y"], attrs=[Attr("dim", "int32")],
          infer=_unsqueeze_infer, sbp=_unsqueeze_sbp)
register_kernel("unsqueeze", lambda x, dim: jnp.expand_dims(x, _unsqueeze_axis(x.ndim, dim)),
                name="unsqueeze_xla")


# -- transpose (permute) ----------------------------------------------------------------------

def _perm(ndim: int, perm: Sequence[int]) -> tuple[int, ...]:
    if len(perm) != ndim:
        raise ValueError(f"perm {list(perm)} has {len(perm)} entries, the input has {ndim} dims")
    p = tuple(normalize_axis(a, ndim, "perm entry") for a in perm)
    if len(set(p)) != len(p):
        raise ValueError(f"perm {list(perm)} repeats a dim")
    return p


def _transpose_sbp(in_shapes, n_out=1, perm=()):
    p = _perm(len(in_shapes[0]), perm)
    return [Signature((S(p[j]),), (S(j),)) for j in range(len(p))] + [_PP]


define_op("transpose", inputs=["x"], outputs=["y"], attrs=[Attr("perm", "int32_list")],
          infer=lambda x, perm: desc([x.shape[a] for a in _perm(len(x.shape), perm)], x.dtype),
          sbp=_transpose_sbp, doc="Output axis j is input axis perm[j] (torch.permute).")
register_kernel("transpose", lambda x, perm: jnp.transpose(x, _perm(x.ndim, perm)),
                name="transpose_xla")


# -- expand ----------------------------------------------------------------------------------

def expand_shape(in_shape: Sequence[int], shape: Sequence[int]) -> tuple[int, ...]:
    """torch.expand: -1 keeps a size, size-1 dims broadcast, new dims go in front."""
    nd, n = len(in_shape), len(shape)
    if n < nd:
        raise ValueError(f"the number of sizes provided ({n}) must be greater or equal to the "
                         f"number of dimensions in the tensor ({nd})")
    off = n - nd
    out = []
    for j, s in enumerate(shape):
        s = int(s)
        if j < off:
            if s < 0:
                raise ValueError(f"the expanded size of the tensor ({s}) isn't allowed in a "
                                 f"leading, non-existing dimension {j}")
            out.append(s)
            continue
        d = int(in_shape[j - off])
        if s == -1:
            out.append(d)
        elif s < 0:
            raise ValueError(f"invalid size {s} at dimension {j} of {list(shape)}")
        elif d != s and d != 1:
            raise ValueError(f"the expanded size of the tensor ({s}) must match the existing "
                             f"size ({d}) at non-singleton dimension {j}. Target sizes: "
                             f"{[int(v) for v in shape]}. Tensor sizes: {_dims(in_shape)}")
        else:
            out.append(s)
    return tuple(out)


def _expand_sbp(in_shapes, n_out=1, shape=()):
    src = in_shapes[0]
    dst = expand_shape(src, shape)
    off = len(dst) - len(src)
    sigs = []
    for j, d in enumerate(dst):
        i = j - off
        if i >= 0 and src[i] == d and d > 1:
            sigs.append(Signature((S(i),), (S(j),)))
        elif d > 1:  # a broadcast dim: every rank expands to its own slice of the output
            sigs.append(Signature((B,), (S(j),)))
    return sigs + [_PP]


define_op("expand", inputs=["x"], outputs=["y"], attrs=[Attr("shape", "shape")],
          infer=lambda x, shape: desc(expand_shape(x.shape, shape), x.dtype), sbp=_expand_sbp,
          doc="Broadcast to `shape` (torch.expand / broadcast_to; -1 keeps a size).")
register_kernel("expand", lambda x, shape: jnp.broadcast_to(x, expand_shape(x.shape, shape)),
                name="expand_xla")


# -- cat / stack / split / narrow / slice ------------------------------------------------------

def _same_dtype(xs: Sequence[Any], what: str = "inputs") -> None:
    d0 = np.dtype(xs[0].dtype)
    for k, x in enumerate(xs[1:], 1):
        if np.dtype(x.dtype) != d0:
            raise TypeError(f"all {what} must have the same dtype (promotion happens in the "
                            f"functional layer), got {d0.name} and {np.dtype(x.dtype).name} "
                            f"(tensor {k})")


def _cat_infer(xs, dim):
    _same_dtype(xs)
    nd = len(xs[0].shape)
    if nd == 0:
        raise ValueError("zero-dimensional tensor (at position 0) cannot be concatenated")
    a = normalize_axis(dim, nd)
    out = list(xs[0].shape)
    for k, x in enumerate(xs[1:], 1):
        if len(x.shape) != nd:
            raise ValueError(f"tensors must have the same number of dimensions: got {nd} and "
                             f"{len(x.shape)} (tensor {k})")
        for i in range(nd):
            if i != a and x.shape[i] != out[i]:
                raise ValueError(f"sizes of tensors must match except in dimension {a}: "
                                 f"expected size {out[i]} but got size {x.shape[i]} for "
                                 f"tensor {k} in dimension {i}")
        out[a] += x.shape[a]
    return desc(out, xs[0].dtype)


def _cat_sbp(in_shapes, n_out=1, dim=0):
    nd = len(in_shapes[0])
    a = normalize_axis(dim, nd)
    k = len(in_shapes)
    return [Signature((S(i),) * k, (S(i),)) for i in range(nd) if i != a] + [
        Signature((P,) * k, (P,))]


define_op("cat", inputs=[Input("xs", variadic=True, min=1)], outputs=["y"],
          attrs=[Attr("dim", "int64", 0)], infer=_cat_infer, sbp=_cat_sbp)
register_kernel("cat", lambda xs, dim: jnp.concatenate(xs, axis=normalize_axis(dim, xs[0].ndim)),
                name="cat_xla")


def _stack_infer(xs, dim):
    _same_dtype(xs)
    s0 = tuple(xs[0].shape)
    for k, x in enumerate(xs[1:], 1):
        if tuple(x.shape) != s0:
            raise ValueError(f"stack expects each tensor to be equal size, but got {list(s0)} "
                             f"at entry 0 and {_dims(x.shape)} at entry {k}")
    a = normalize_axis(dim, len(s0) + 1)
    return desc(s0[:a] + (len(xs),) + s0[a:], xs[0].dtype)


def _stack_sbp(in_shapes, n_out=1, dim=0):
    nd = len(in_shapes[0])
    a = normalize_axis(dim, nd + 1)
    k = len(in_shapes)
    return [Signature((S(i),) * k, (S(i if i < a else i + 1),)) for i in range(nd)] + [
        Signature((P,) * k, (P,))]


define_op("stack", inputs=[Input("xs", variadic=True, min=1)], outputs=["y"],
          attrs=[Attr("dim", "int64", 0)], infer=_stack_infer, sbp=_stack_sbp)
register_kernel("stack", lambda xs, dim: jnp.stack(xs, axis=normalize_axis(dim, xs[0].ndim + 1)),
                name="stack_xla")


def _split_check(dim, sizes):
    if not sizes:
        raise ValueError("sizes must name at least one piece")
    if any(s < 0 for s in sizes):
        raise ValueError(f"sizes must be non-negative, got {list(sizes)}")


def _split_infer(x, dim, sizes):
    nd = len(x.shape)
    if nd == 0:
        raise ValueError("a 0-d tensor cannot be split")
    a = normalize_axis(dim, nd)
    if sum(sizes) != x.shape[a]:
        raise ValueError(f"split sizes {list(sizes)} must sum exactly to {x.shape[a]} (the "
                         f"input's size at dimension {a}), they sum to {sum(sizes)}")
    return [desc(tuple(x.shape[:a]) + (s,) + tuple(x.shape[a + 1:]), x.dtype) for s in sizes]


def _split_kernel(x, dim, sizes):
    a = normalize_axis(dim, x.ndim)
    outs, start = [], 0
    for s in sizes:
        outs.append(lax.slice_in_dim(x, start, start + s, axis=a))
        start += s
    return tuple(outs)


def _split_sbp(in_shapes, n_out=1, dim=0, sizes=()):
    nd = len(in_shapes[0])
    a = normalize_axis(dim, nd)
    return [Signature((S(i),), (S(i),) * n_out) for i in range(nd) if i != a] + [
        Signature((P,), (P,) * n_out)]


define_op("split", inputs=["x"], outputs=[Output("outs", variadic=True)],
          attrs=[Attr("dim", "int64"), Attr("sizes", "int64_list")], check=_split_check,
          infer=_split_infer, sbp=_split_sbp,
          doc="Consecutive pieces of the given sizes along `dim` (torch.split_with_sizes).")
register_kernel("split", _split_kernel, name="split_xla")


def _narrow_check(dim, start, length):
    if start < 0:
        raise ValueError(f"start must be non-negative (the functor wraps negative starts), "
                         f"got {start}")
    if length < 0:
        raise ValueError(f"length must be non-negative, got {length}")


def _narrow_infer(x, dim, start, length):
    nd = len(x.shape)
    if nd == 0:
        raise ValueError("narrow() cannot be applied to a 0-dim tensor")
    a = normalize_axis(dim, nd)
    if start + length > x.shape[a]:
        raise ValueError(f"start ({start}) + length ({length}) exceeds dimension size "
                         f"({x.shape[a]})")
    return desc(tuple(x.shape[:a]) + (length,) + tuple(x.shape[a + 1:]), x.dtype)


def _narrow_sbp(in_shapes, n_out=1, dim=0, **_):
    nd = len(in_shapes[0])
    a = normalize_axis(dim, nd)
    return [Signature((S(i),), (S(i),)) for i in range(nd) if i != a] + [_PP]


define_op("narrow", inputs=["x"], outputs=["y"],
          attrs=[Attr("dim", "int64"), Attr("start", "int64"), Attr("length", "int64")],
          check=_narrow_check, infer=_narrow_infer, sbp=_narrow_sbp)
register_kernel("narrow", lambda x, dim, start, length: lax.slice_in_dim(
    x, start, start + length, axis=normalize_axis(dim, x.ndim)), name="narrow_xla")


def _slice_ranges(shape: Sequence[int], start: Sequence[int], stop: Sequence[int],
                  step: Sequence[int]) -> list[tuple[int, int, int]]:
    """Per dim (start, length, step) with Python slice semantics (negatives wrap, clamping)."""
    nd = len(shape)
    if not len(start) == len(stop) == len(step) == nd:
        raise ValueError(f"start, stop and step must each have one entry per dim ({nd}), got "
                         f"{len(start)}, {len(stop)} and {len(step)}")
    out = []
    for d, a, b, c in zip(shape, start, stop, step):
        a, b, c = slice(a, b, c).indices(int(d))
        out.append((a, len(range(a, b, c)), c))
    return out


def _slice_check(start, stop, step):
    if any(s <= 0 for s in step):
        raise ValueError(f"slice steps must be positive, got {list(step)}")


def _slice_infer(x, start, stop, step):
    return desc([n for _, n, _ in _slice_ranges(x.shape, start, stop, step)], x.dtype)


def _slice_kernel(x, start, stop, step):
    r = _slice_ranges(x.shape, start, stop, step)
    return lax.slice(x, [a for a, _, _ in r], [a + (n - 1) * c + 1 if n else a for a, n, c in r],
                     [c for _, _, c in r])


def _slice_sbp(in_shapes, n_out=1, start=(), stop=(), step=()):
    shape = in_shapes[0]
    r = _slice_ranges(shape, start, stop, step)
    return [Signature((S(i),), (S(i),)) for i, (a, n, c) in enumerate(r)
            if a == 0 and n == shape[i] and c == 1] + [_PP]


define_op("slice", inputs=["x"], outputs=["y"],
          attrs=[Attr("start", "int64_list"), Attr("stop", "int64_list"),
                 Attr("step", "int64_list")],
          check=_slice_check, infer=_slice_infer, sbp=_slice_sbp,
          doc="x[start0:stop0:step0, start1:stop1:step1, ...] with Python slice semantics.")
register_kernel("slice", _slice_kernel, name="slice_xla")


# -- flip / roll / repeat / tril / triu -------------------------------------------------------

def _unique_axes(axes: Sequence[int], ndim: int, what: str = "dim") -> tuple[int, ...]:
    out = tuple(normalize_axis(a, ndim, what) for a in axes)
    for k, a in enumerate(out):
        if a in out[:k]:
            raise ValueError(f"{what} {a} appears multiple times in the list of dims "
                             f"{list(axes)}")
    return out


def _keep_axes_sbp(excluded_fn):
    def sbp(in_shapes, n_out=1, **attrs):
        nd = len(in_shapes[0])
        ex = set(excluded_fn(nd, **attrs))
        return [Signature((S(i),), (S(i),)) for i in range(nd) if i not in ex] + [_PP]
    return sbp


# (attrs cannot be named "dims": JAX passes the batch dims to batching rules under that name)
def _flip_infer(x, axes):
    _unique_axes(axes, len(x.shape))
    return desc(x.shape, x.dtype)


define_op("flip", inputs=["x"], outputs=["y"], attrs=[Attr("axes", "int32_list")],
          infer=_flip_infer,
          sbp=_keep_axes_sbp(lambda nd, axes: _unique_axes(axes, nd)))
register_kernel("flip", lambda x, axes: jnp.flip(x, _unique_axes(axes, x.ndim)) if axes else x,
                name="flip_xla")


def _roll_axes(ndim: int, shifts: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    if not shifts:
        raise ValueError("shifts must not be empty")
    if not axes:
        if len(shifts) != 1:
            raise ValueError(f"shifts {list(shifts)} must have one entry when axes is empty "
                             f"(the flattened tensor is rolled)")
        return ()
    if len(shifts) != len(axes):
        raise ValueError(f"shifts and axes must have the same length, got {len(shifts)} and "
                         f"{len(axes)}")
    return tuple(normalize_axis(a, ndim) for a in axes)


def _roll_kernel(x, shifts, axes):
    ax = _roll_axes(x.ndim, shifts, axes)
    if not ax:
        return jnp.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return jnp.roll(x, shifts, ax)


def _roll_infer(x, shifts, axes):
    _roll_axes(len(x.shape), shifts, axes)
    return desc(x.shape, x.dtype)


define_op("roll", inputs=["x"], outputs=["y"],
          attrs=[Attr("shifts", "int64_list"), Attr("axes", "int32_list", ())],
          infer=_roll_infer,
          sbp=_keep_axes_sbp(lambda nd, shifts, axes: _roll_axes(nd, shifts, axes)
                             if axes else range(nd)),
          doc="Roll along `axes` by `shifts`; with no axes the flattened tensor is rolled.")
register_kernel("roll", _roll_kernel, name="roll_xla")


def _repeat_shape(in_shape: Sequence[int], repeats: Sequence[int]) -> tuple[int, ...]:
    nd = len(in_shape)
    if len(repeats) < nd:
        raise ValueError(f"number of dimensions of repeat dims ({len(repeats)}) can not be "
                         f"smaller than number of dimensions of tensor ({nd})")
    if any(r < 0 for r in repeats):
        raise ValueError(f"repeats must be non-negative, got {list(repeats)}")
    off = len(repeats) - nd
    return tuple(repeats[:off]) + tuple(d * r for d, r in zip(in_shape, repeats[off:]))


def _repeat_sbp(in_shapes, n_out=1, repeats=()):
    nd = len(in_shapes[0])
    off = len(repeats) - nd
    return [Signature((S(i),), (S(i + off),)) for i in range(nd) if repeats[i + off] == 1] + [
        _PP]


define_op("repeat", inputs=["x"], outputs=["y"], attrs=[Attr("repeats", "shape")],
          infer=lambda x, repeats: desc(_repeat_shape(x.shape, repeats), x.dtype),
          sbp=_repeat_sbp, doc="torch.Tensor.repeat: tile the tensor `repeats` times per dim.")
register_kernel("repeat", lambda x, repeats: jnp.tile(x, repeats), name="repeat_xla")


def _tri_infer(x, diagonal):
    if len(x.shape) < 2:
        raise ValueError(f"input tensor must have at least 2 dimensions, got {len(x.shape)}")
    return desc(x.shape, x.dtype)


for _name, _fn in [("tril", jnp.tril), ("triu", jnp.triu)]:
    define_op(_name, inputs=["x"], outputs=["y"], attrs=[Attr("diagonal", "int64", 0)],
              infer=_tri_infer, sbp=_keep_axes_sbp(lambda nd, diagonal: (nd - 2, nd - 1)))
    register_kernel(_name, (lambda f: lambda x, diagonal: f(x, diagonal))(_fn),
                    name=f"{_name}_xla")


# -- pad -------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_check(pad, mode, value):
    if len(pad) % 2:
        raise ValueError(f"padding length must be divisible by 2, got {len(pad)} ({list(pad)})")
    if mode not in _PAD_MODES:
        raise ValueError(f"mode must be one of {list(_PAD_MODES)}, got {mode!r}")
    if mode != "constant" and value != 0.0:
        raise ValueError(f"a padding value is only meaningful in 'constant' mode, got mode "
                         f"{mode!r} with value {value}")


def _pad_widths(shape: Sequence[int], pad: Sequence[int], mode: str) -> list[tuple[int, int]]:
    """Per dim (before, after) from torch's order (last dim first), validated per mode."""
    nd = len(shape)
    k = len(pad) // 2
    if k > nd:
        raise ValueError(f"padding length {len(pad)} is too large for a {nd}-d input "
                         f"(at most {2 * nd})")
    w = [(0, 0)] * nd
    for j in range(k):
        w[nd - 1 - j] = (int(pad[2 * j]), int(pad[2 * j + 1]))
    for d, ((lo, hi), size) in enumerate(zip(w, shape)):
        if (lo, hi) == (0, 0):
            continue
        if mode == "constant":
            if size + lo + hi < 0:
                raise ValueError(f"the input size {size}, plus negative padding {lo} and {hi} "
                                 f"resulted in a negative output size at dimension {d}")
            continue
        if lo < 0 or hi < 0:
            raise ValueError(f"negative padding ({lo}, {hi}) at dimension {d} is only allowed "
                             f"in 'constant' mode")
        if mode == "reflect" and (lo >= size or hi >= size):
            raise ValueError(f"padding size should be less than the corresponding input "
                             f"dimension, but got padding ({lo}, {hi}) at dimension {d} of "
                             f"input {_dims(shape)}")
        if mode == "circular" and (lo > size or hi > size):
            raise ValueError(f"padding ({lo}, {hi}) at dimension {d} must not exceed the input "
                             f"size {size} in 'circular' mode")
        if mode == "replicate" and size == 0:
            raise ValueError(f"cannot replicate-pad the empty dimension {d}")
    return w


def _pad_infer(x, pad, mode, value):
    w = _pad_widths(x.shape, pad, mode)
    return desc([s + lo + hi for s, (lo, hi) in zip(x.shape, w)], x.dtype)


def _pad_kernel(x, pad, mode, value):
    w = _pad_widths(x.shape, pad, mode)
    if mode == "constant":
        v = jnp.asarray(value).astype(x.dtype)
        return lax.pad(x, v, [(lo, hi, 0) for lo, hi in w])
    return jnp.pad(x, w, mode={"reflect": "reflect", "replicate": "edge",
                               "circular": "wrap"}[mode])


def _pad_sbp(in_shapes, n_out=1, pad=(), mode="constant", value=0.0):
    w = _pad_widths(in_shapes[0], pad, mode)
    sigs = [Signature((S(i),), (S(i),)) for i, p in enumerate(w) if p == (0, 0)]
    if mode == "constant" and value == 0.0:  # padding with zeros is linear
        sigs.append(_PP)
    return sigs


define_op("pad", inputs=["x"], outputs=["y"],
          attrs=[Attr("pad", "int64_list"), Attr("mode", "string", "constant"),
                 Attr("value", "double", 0.0)],
          check=_pad_check, infer=_pad_infer, sbp=_pad_sbp,
          doc="torch.nn.functional.pad: `pad` lists (before, after) pairs, last dim first; "
              "negative constant padding crops.")
register_kernel("pad", _pad_kernel, name="pad_xla")


# -- clone -----------------------------------------------------------------------------------

define_op("clone", inputs=["x"], outputs=["y"], infer=lambda x: desc(x.shape, x.dtype),
          sbp=elementwise("linear"), doc="A copy of x (a new tensor; JAX arrays are immutable).")
register_kernel("clone", jnp.copy, name="clone_xla")


# -- indexing: getitem / setitem ----------------------------------------------------------------
#
# spec: comma-separated items, applied left to right like a Python index tuple:
#   i<k>          an int (negative counts from the end)
#   s<a>:<b>:<c>  a slice; empty parts mean None; step > 0
#   n             None (new axis of size 1)
#   e             Ellipsis
#   t             the next index tensor (integer dtype; 0-d acts as an int)
#   b1 / b0       a Python bool: True adds an axis of size 1, False one of size 0 (as torch:
#                 when n-d index tensors are present they become index arrays [0] / [])
#   m             (setitem only, sole item) the next index tensor is a bool mask over the
#                 leading dims; the value must broadcast to the remaining dims


@functools.lru_cache(maxsize=4096)
def parse_index_spec(spec: str) -> tuple[tuple[Any, ...], ...]:
    """Parse a spec string into items ('i', k) | ('s', a, b, c) | ('n',) | ('e',) | ('t',) |
    ('b', bool) | ('m',); ValueError on a malformed spec."""
    if spec == "":
        return ()
    items: list[tuple[Any, ...]] = []
    for tok in spec.split(","):
        try:
            if tok in ("n", "e", "t", "m"):
                items.append((tok,))
            elif tok in ("b0", "b1"):
                items.append(("b", tok == "b1"))
            elif tok[:1] == "i":
                items.append(("i", int(tok[1:])))
            elif tok[:1] == "s":
                parts = tok[1:].split(":")
                if len(parts) != 3:
                    raise ValueError
                a, b, c = (None if p == "" else int(p) for p in parts)
                if c is not None and c <= 0:
                    raise ValueError(f"index spec {spec!r}: slice step must be greater than "
                                     f"zero, got {c}")
                items.append(("s", a, b, 1 if c is None else c))
            else:
                raise ValueError
        except ValueError as e:
            if str(e):
                raise
            raise ValueError(f"malformed index spec item {tok!r} in {spec!r}") from None
    if sum(1 for it in items if it[0] == "e") > 1:
        raise ValueError(f"index spec {spec!r}: an index can only have a single ellipsis")
    if any(it[0] == "m" for it in items) and len(items) != 1:
        raise ValueError(f"index spec {spec!r}: a mask item 'm' must be the only item")
    return tuple(items)


def _check_spec(spec: str) -> None:
    parse_index_spec(spec)


@dataclass(frozen=True)
class IndexPlan:
    """How one index applies to one input shape (PyTorch semantics).

    ``view`` is the first pass (one entry per item after Ellipsis expansion):
    ('int', k) | ('slice', start, stop, step) | ('new',) | ('dyn', t) (a 0-d index tensor) |
    ('keep',) (a full slice over a dim that an n-d index tensor indexes in pass two).
    ``view_shape`` is the shape after it, ``empty_axes`` are view axes narrowed to size 0
    (``False`` without index tensors). ``adv`` lists (view axis, source) for the second pass,
    source ``('t', k)`` (index tensor k) or ``('b', bool)``; ``out_shape`` is the result
    shape. ``passthrough`` maps input axes taken whole to their output axis (for SBP);
    ``adv_out`` is the output axis where the broadcast index dims start.
    """

    view: tuple[tuple[Any, ...], ...]
    view_shape: tuple[int, ...]
    empty_axes: tuple[int, ...]
    adv: tuple[tuple[int, tuple[Any, ...]], ...]
    adv_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    passthrough: tuple[tuple[int, int], ...]
    adv_out: int


def _dims_used(items: Sequence[tuple[Any, ...]], idx_ndims: Sequence[int]) -> int:
    n, k = 0, 0
    for it in items:
        if it[0] in ("i", "s"):
            n += 1
        elif it[0] == "t":
            n += 1
            k += 1
        elif it[0] == "m":
            n += idx_ndims[k]
            k += 1
    return n


@functools.lru_cache(maxsize=4096)
def index_plan(spec: str, shape: tuple[int, ...], idx_shapes: tuple[tuple[int, ...], ...]
               ) -> IndexPlan:
    """The :class:`IndexPlan` of ``spec`` on an input of ``shape`` with index tensors of
    ``idx_shapes``; IndexError for an out-of-range int or too many indices, ValueError for a
    bad spec or index tensors that do not broadcast."""
    items = parse_index_spec(spec)
    n_t = sum(1 for it in items if it[0] in ("t", "m"))
    if n_t != len(idx_shapes):
        raise ValueError(f"index spec {spec!r} uses {n_t} index tensors, {len(idx_shapes)} "
                         f"were given")
    if any(it[0] == "m" for it in items):
        raise ValueError(f"index spec {spec!r}: mask items are only supported by setitem")
    nd = len(shape)
    used = _dims_used(items, [len(s) for s in idx_shapes])
    if used > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    has_adv = any(len(idx_shapes[k]) > 0 for k in range(len(idx_shapes)))
    view: list[tuple[Any, ...]] = []
    view_shape: list[int] = []
    view_src: list[int | None] = []  # input axis a view axis comes from, if taken whole
    empty: list[int] = []
    adv: list[tuple[int, tuple[Any, ...]]] = []
    adv_shapes: list[tuple[int, ...]] = []
    d, t = 0, 0

    def full(axis: int) -> None:
        view.append(("slice", 0, shape[axis], 1))
        view_shape.append(shape[axis])
        view_src.append(axis)

    for it in items:
        kind = it[0]
        if kind == "e":
            for _ in range(nd - used):
                full(d)
                d += 1
        elif kind == "n":
            view.append(("new",))
            view_shape.append(1)
            view_src.append(None)
        elif kind == "b":
            view.append(("new",))
            view_shape.append(1)
            view_src.append(None)
            if has_adv:
                adv.append((len(view_shape) - 1, ("b", it[1])))
                adv_shapes.append((1 if it[1] else 0,))
            elif not it[1]:
                empty.append(len(view_shape) - 1)
        elif kind == "i":
            size = shape[d]
            k = it[1]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {size}")
            view.append(("int", k % size))
            d += 1
        elif kind == "s":
            a, b, c = slice(it[1], it[2], it[3]).indices(shape[d])
            n = len(range(a, b, c))
            view.append(("slice", a, a + (n - 1) * c + 1 if n else a, c))
            view_shape.append(n)
            view_src.append(d if (a, n, c) == (0, shape[d], 1) else None)
            d += 1
        elif kind == "t":
            ts = idx_shapes[t]
            if len(ts) == 0:
                view.append(("dyn", t))
            else:
                view.append(("keep",))
                view_shape.append(shape[d])
                view_src.append(None)
                adv.append((len(view_shape) - 1, ("t", t)))
                adv_shapes.append(tuple(ts))
            t += 1
            d += 1
    while d < nd:  # trailing dims are taken whole
        full(d)
        d += 1
    out_shape = list(view_shape)
    for a in empty:
        out_shape[a] = 0
    passthrough: list[tuple[int, int]] = []
    adv_out = 0
    adv_shape: tuple[int, ...] = ()
    if adv:
        try:
            adv_shape = broadcast_shapes(*adv_shapes)
        except ValueError:
            raise ValueError("shape mismatch: indexing tensors could not be broadcast together "
                             "with shapes " + ", ".join(_dims(s) for s in adv_shapes)) from None
        axes = [a for a, _ in adv]
        adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
        adv_out = axes[0] if adjacent else 0
        rest = [i for i in range(len(view_shape)) if i not in axes]
        before = [i for i in rest if i < adv_out] if adjacent else []
        after = [i for i in rest if i not in before]
        out_shape = ([view_shape[i] for i in before] + list(adv_shape)
                     + [view_shape[i] for i in after])
        order = before + [None] * len(adv_shape) + after
    else:
        order = list(range(len(view_shape)))
    for j, v in enumerate(order):
        if v is not None and view_src[v] is not None and v not in empty:
            passthrough.append((view_src[v], j))
    return IndexPlan(tuple(view), tuple(view_shape), tuple(empty), tuple(adv), adv_shape,
                     tuple(out_shape), tuple(passthrough), adv_out)


def _check_index_dtypes(indices: Sequence[Any]) -> None:
    for k, a in enumerate(indices):
        check_dtype(a, INT, f"index tensor {k}")


def _plan_of(op: str, spec: str, x: Any, indices: Sequence[Any]) -> IndexPlan:
    try:
        return index_plan(spec, tuple(x.shape), tuple(tuple(a.shape) for a in indices))
    except IndexError as e:  # the registry prefixes TypeError / ValueError only
        raise IndexError(f"op '{op}': {e}") from None


def _getitem_infer(x, indices, spec):
    plan = _plan_of("getitem", spec, x, indices)
    _check_index_dtypes(indices)
    return desc(plan.out_shape, x.dtype)


def _view_index(plan: IndexPlan, indices: Sequence[Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for v in plan.view:
        k = v[0]
        if k == "int":
            out.append(v[1])
        elif k == "slice":
            out.append(slice(v[1], v[2], v[3]))
        elif k == "new":
            out.append(None)
        elif k == "dyn":
            out.append(indices[v[1]])
        else:
            out.append(slice(None))
    return tuple(out)


def _trivial_view(plan: IndexPlan, shape: Sequence[int]) -> bool:
    """True when the first pass takes every dim whole (only n-d index tensors do work)."""
    return len(plan.view) == len(shape) and all(
        v[0] == "keep" or (v[0] == "slice" and v[1] == 0 and v[3] == 1 and v[2] == d)
        for v, d in zip(plan.view, shape))


def _adv_index(plan: IndexPlan, indices: Sequence[Any], ndim: int) -> tuple[Any, ...]:
    idx: list[Any] = [slice(None)] * ndim
    for axis, src in plan.adv:
        if src[0] == "t":
            idx[axis] = indices[src[1]]
        else:
            idx[axis] = jnp.zeros((1 if src[1] else 0,), jnp.int32)
    return tuple(idx)


def _getitem_kernel(x, indices, spec):
    plan = index_plan(spec, tuple(x.shape), tuple(tuple(a.shape) for a in indices))
    y = x if _trivial_view(plan, x.shape) else x[_view_index(plan, indices)]
    for a in plan.empty_axes:
        y = lax.slice_in_dim(y, 0, 0, axis=a)
    if plan.adv:
        y = y[_adv_index(plan, indices, y.ndim)]
    return y


def _getitem_sbp(in_shapes, n_out=1, spec=""):
    x, idx = tuple(in_shapes[0]), tuple(tuple(s) for s in in_shapes[1:])
    plan = index_plan(spec, x, idx)
    nb = (B,) * len(idx)
    sigs = [Signature((S(i),) + nb, (S(j),)) for i, j in plan.passthrough]
    t_shapes = [idx[src[1]] for _, src in plan.adv if src[0] == "t"]
    if t_shapes and all(s == plan.adv_shape for s in t_shapes) and len(t_shapes) == len(plan.adv):
        # all index tensors split alike: each rank gathers its own slice of the result
        for k in range(len(plan.adv_shape)):
            if plan.adv_shape[k] > 1:
                ins = tuple(S(k) if len(s) > 0 else B for s in idx)
                sigs.append(Signature((B,) + ins, (S(plan.adv_out + k),)))
    sigs.append(Signature((P,) + nb, (P,)))
    return sigs


define_op("getitem", inputs=["x", Input("indices", variadic=True, min=0)], outputs=["y"],
          attrs=[Attr("spec", "string")], check=_check_spec, infer=_getitem_infer,
          sbp=_getitem_sbp,
          doc="x[index] with PyTorch semantics; the static part of the index is the `spec` "
              "string, index tensors are inputs (see jflow.ops.shape for the grammar).")
register_kernel("getitem", _getitem_kernel, name="getitem_xla")


def _strip_leading_ones(shape: Sequence[int], ndim: int) -> tuple[int, ...]:
    shape = tuple(shape)
    while len(shape) > ndim and shape[0] == 1:
        shape = shape[1:]
    return shape


def _value_fits(value_shape: Sequence[int], target: Sequence[int]) -> bool:
    v = _strip_leading_ones(value_shape, len(target))
    if len(v) > len(target):
        return False
    return all(a == b or a == 1 for a, b in zip(v, tuple(target)[len(target) - len(v):]))


def _mask_target(x_shape: Sequence[int], mask_shape: Sequence[int]) -> tuple[int, ...]:
    k = len(mask_shape)
    if k > len(x_shape):
        raise IndexError(f"too many indices for tensor of dimension {len(x_shape)}")
    for j in range(k):
        if mask_shape[j] != x_shape[j]:
            raise IndexError(f"the shape of the mask {_dims(mask_shape)} at index {j} does not "
                             f"match the shape of the indexed tensor {_dims(x_shape)} at "
                             f"index {j}")
    return tuple(x_shape[k:])


def _setitem_infer(x, value, indices, spec, accumulate):
    if np.dtype(value.dtype) != np.dtype(x.dtype):
        raise TypeError(f"value must have the tensor's dtype {np.dtype(x.dtype).name} (the "
                        f"functional layer casts), got {np.dtype(value.dtype).name}")
    items = parse_index_spec(spec)
    if items == (("m",),):
        check_dtype(indices[0], BOOL, "mask")
        try:
            target = _mask_target(x.shape, indices[0].shape)
        except IndexError as e:
            raise IndexError(f"op 'setitem': {e}") from None
        what = "the dims after the mask"
    else:
        _check_index_dtypes(indices)
        target = _plan_of("setitem", spec, x, indices).out_shape
        what = "indexing result"
    if not _value_fits(value.shape, target):
        raise ValueError(f"shape mismatch: value tensor of shape {_dims(value.shape)} cannot "
                         f"be broadcast to {what} of shape {_dims(target)}")
    return desc(x.shape, x.dtype)


def _fit(value, target: Sequence[int]):
    v = value.reshape(_strip_leading_ones(value.shape, len(target)))
    return jnp.broadcast_to(v, tuple(target))


def _setitem_kernel(x, value, indices, spec, accumulate):
    items = parse_index_spec(spec)
    if items == (("m",),):
        mask = indices[0]
        rest = x.shape[mask.ndim:]
        v = _fit(value, rest)
        return jnp.where(mask.reshape(mask.shape + (1,) * len(rest)), x + v if accumulate else v,
                         x)
    plan = index_plan(spec, tuple(x.shape), tuple(tuple(a.shape) for a in indices))
    if 0 in plan.out_shape:
        return x
    v = _fit(value, plan.out_shape)

    def write(ref, val):  # duplicates: set keeps one of the values, add sums them all
        return ref.add(val) if accumulate else ref.set(val)

    if not plan.adv:
        return write(x.at[_view_index(plan, indices)], v)
    if _trivial_view(plan, x.shape):
        return write(x.at[_adv_index(plan, indices, x.ndim)], v)
    view_idx = _view_index(plan, indices)
    sub = x[view_idx]
    sub = write(sub.at[_adv_index(plan, indices, sub.ndim)], v)
    return x.at[view_idx].set(sub)


def _setitem_sbp(in_shapes, n_out=1, spec="", accumulate=False):
    x, v, idx = tuple(in_shapes[0]), tuple(in_shapes[1]), [tuple(s) for s in in_shapes[2:]]
    nb = (B,) * len(idx)
    sigs = []
    if parse_index_spec(spec) == (("m",),):
        target = tuple(x[len(idx[0]):])
        passthrough = [(len(idx[0]) + j, j) for j in range(len(target))]
        nb = (B,)  # the mask is read whole
    else:
        plan = index_plan(spec, x, tuple(idx))
        target, passthrough = plan.out_shape, plan.passthrough
    vs = _strip_leading_ones(v, len(target))
    lead = len(v) - len(vs)
    for i, j in passthrough:
        a = j - (len(target) - len(vs))
        vsbp = S(a + lead) if a >= 0 and vs[a] != 1 else B
        if x[i] > 1:
            sigs.append(Signature((S(i), vsbp) + nb, (S(i),)))
    sigs.append(Signature((P, P) + nb, (P,)))  # set / add are linear in (x, v) together
    return sigs


define_op("setitem", inputs=["x", "value", Input("indices", variadic=True, min=0)],
          outputs=["y"], attrs=[Attr("spec", "string"), Attr("accumulate", "bool", False)],
          check=lambda spec, accumulate: _check_spec(spec),
          infer=_setitem_infer, sbp=_setitem_sbp,
          doc="A copy of x with x[index] = value, or x[index] += value with accumulate=True "
              "(repeated indices add up: torch's index_put_(accumulate=True), the backward of "
              "getitem). The value broadcasts to the indexed shape; its leading size-1 dims "
              "are dropped as in torch.")
register_kernel("setitem", _setitem_kernel, name="setitem_xla")

