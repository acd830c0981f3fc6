"""View ops: reshape, flatten, squeeze, unsqueeze, transpose (permute) and expand — the
same elements in another shape or order, or broadcast — definition, xla kernel and SBP
signatures side by side.

Their SBP signatures map a preserved axis to its new position, and each is linear (``P ->
P``). :func:`reshape_shape` / :func:`expand_shape` also give the functors PyTorch's
``-1`` handling.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, S, Signature
from ._shape_util import PP, dims_str, prod
from .infer import desc, normalize_axis
from .primitive import define_op
from .registry import Attr

__all__ = ["reshape_shape", "expand_shape", "flatten_shape", "reshape_signatures"]


# -- reshape / flatten ------------------------------------------------------------------------

def reshape_shape(in_shape: Sequence[int], shape: Sequence[int]) -> tuple[int, ...]:
    """The target shape with a ``-1`` resolved; ValueError when it cannot hold the input."""
    n = prod(in_shape)
    shape = [int(s) for s in shape]
    bad = [s for s in shape if s < -1]
    if bad:
        raise ValueError(f"invalid shape dimension {bad[0]} in shape {shape}")
    infer = [i for i, s in enumerate(shape) if s == -1]
    if len(infer) > 1:
        raise ValueError(f"only one dimension can be inferred (-1), got shape {shape}")
    if infer:
        rest = prod(s for s in shape if s != -1)
        if rest == 0:
            raise ValueError(f"cannot reshape a tensor of 0 elements into shape {shape} because "
                             f"the unspecified dimension size -1 can be any value and is "
                             f"ambiguous")
        if n % rest:
            raise ValueError(f"shape {shape} is invalid for input of size {n}")
        shape[infer[0]] = n // rest
    if prod(shape) != n:
        raise ValueError(f"shape {shape} is invalid for input of size {n} "
                         f"(input shape {dims_str(in_shape)})")
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
    sigs.append(PP)
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
    return tuple(in_shape[:s]) + (prod(in_shape[s:e + 1]),) + tuple(in_shape[e + 1:])


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
                             f"{dims_str(shape)}); only size-1 axes can be squeezed")
    return tuple(out) if nd else ()


def _squeeze_infer(x, axes):
    ax = _squeeze_axes(x.shape, axes)
    return desc([d for i, d in enumerate(x.shape) if i not in ax], x.dtype)


def _squeeze_sbp(in_shapes, n_out=1, axes=()):
    ax = _squeeze_axes(in_shapes[0], axes)
    kept = [i for i in range(len(in_shapes[0])) if i not in ax]
    return [Signature((S(i),), (S(j),)) for j, i in enumerate(kept)] + [PP]


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
    return [Signature((S(i),), (S(i if i < a else i + 1),)) for i in range(nd)] + [PP]


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
    return [Signature((S(p[j]),), (S(j),)) for j in range(len(p))] + [PP]


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
                             f"{[int(v) for v in shape]}. Tensor sizes: {dims_str(in_shape)}")
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
    return sigs + [PP]


define_op("expand", inputs=["x"], outputs=["y"], attrs=[Attr("shape", "shape")],
          infer=lambda x, shape: desc(expand_shape(x.shape, shape), x.dtype), sbp=_expand_sbp,
          doc="Broadcast to `shape` (torch.expand / broadcast_to; -1 keeps a size).")
register_kernel("expand", lambda x, shape: jnp.broadcast_to(x, expand_shape(x.shape, shape)),
                name="expand_xla")


# -- bitcast (Tensor.view(dtype)) ----------------------------------------------------------------

def _bits_dtype(dt: np.dtype, what: str) -> np.dtype:
    dt = np.dtype(dt)
    if dt.kind == "c":
        raise TypeError(f"bitcast: {what} dtype {dt.name}: jflow does not reinterpret complex "
                        f"elements (use view_as_real / view_as_complex)")
    return dt


def bitcast_shape(in_shape: Sequence[int], src: np.dtype, dst: np.dtype) -> tuple[int, ...]:
    """PyTorch's ``view(dtype)`` shape: the same shape for equal element sizes, else the last
    dim scaled by the size ratio (it must be non-0-d, and divide evenly when growing)."""
    a, b = _bits_dtype(src, "input").itemsize, _bits_dtype(dst, "target").itemsize
    shape = tuple(int(s) for s in in_shape)
    if a == b:
        return shape
    if not shape:
        raise RuntimeError(f"bitcast: a 0-d tensor cannot be viewed as {np.dtype(dst).name} "
                           f"from {np.dtype(src).name} (different element sizes)")
    if a > b:
        return shape[:-1] + (shape[-1] * (a // b),)
    k = b // a
    if shape[-1] % k:
        raise RuntimeError(f"bitcast: the last dim ({shape[-1]}) must be a multiple of {k} to "
                           f"view {np.dtype(src).name} as {np.dtype(dst).name}")
    return shape[:-1] + (shape[-1] // k,)


def _bitcast_infer(x, dtype):
    return desc(bitcast_shape(x.shape, x.dtype, dtype), dtype)


def _bitcast(x, dtype):
    src, dst = np.dtype(x.dtype), np.dtype(dtype)
    if src == np.bool_:  # (XLA has no bool bit cast: a bool's byte is 0 or 1)
        x, src = x.astype(np.uint8), np.dtype(np.uint8)
    to_bool = dst == np.bool_
    if to_bool:
        dst = np.dtype(np.uint8)
    a, b = src.itemsize, dst.itemsize
    if a < b:  # group the last dim's elements, one new element per group
        x = jnp.reshape(x, x.shape[:-1] + (x.shape[-1] // (b // a), b // a))
    y = lax.bitcast_convert_type(x, dst)
    if a > b:  # the new trailing dim of parts joins the last dim
        y = jnp.reshape(y, y.shape[:-2] + (y.shape[-2] * y.shape[-1],))
    return y != 0 if to_bool else y


define_op("bitcast", inputs=["x"], outputs=["y"], attrs=[Attr("dtype", "dtype")],
          infer=_bitcast_infer, traits=("NoSideEffect", "NoGrad"),
          doc="The same bytes read as elements of `dtype` (PyTorch's view(dtype)): the last dim "
              "scales by the element size ratio; not differentiable.")
register_kernel("bitcast", _bitcast, name="bitcast_xla")
