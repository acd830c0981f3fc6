"""Rearranging ops: flip, roll, repeat (tiling), tril and triu — elements moved, repeated or
masked in place of their axes — definition, xla kernel and SBP signatures side by side.

An axis the op leaves alone may be split; all of them are linear.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp

from ..kernels.registry import register_kernel
from ..sharding.sbp import S, Signature
from ._shape_util import PP
from .infer import desc, normalize_axis
from .primitive import define_op
from .registry import Attr

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
        return [Signature((S(i),), (S(i),)) for i in range(nd) if i not in ex] + [PP]
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
        PP]


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
