"""Backward rules of the rearranging ops (``jflow/ops/rearrange.py``)."""

from __future__ import annotations

from ..rule import register_backward
from ._util import O

# -- flip / roll / repeat / tril / triu -------------------------------------------------------

@register_backward("flip")
def _flip(ctx, dy):
    return O.flip(dy, axes=ctx.axes)


@register_backward("roll")
def _roll(ctx, dy):
    return O.roll(dy, shifts=tuple(-s for s in ctx.shifts), axes=ctx.axes)


@register_backward("repeat")
def _repeat(ctx, dy):
    shape = tuple(ctx.input_shapes[0])
    reps = tuple(ctx.repeats)
    off = len(reps) - len(shape)
    split_shape = list(reps[:off])
    axes = list(range(off))
    for d, r in zip(shape, reps[off:]):
        axes.append(len(split_shape))
        split_shape += [r, d]
    if not axes:
        return dy
    g = O.reshape(dy, shape=tuple(split_shape))
    return O.reduce_sum(g, axis=tuple(axes), keepdim=False)


@register_backward("tril")
def _tril(ctx, dy):
    return O.tril(dy, diagonal=ctx.diagonal)


@register_backward("triu")
def _triu(ctx, dy):
    return O.triu(dy, diagonal=ctx.diagonal)
