"""Backward rules of the upsample ops (``jflow/ops/upsample.py``): upsample2d and
upsample2d_grad are a linear pair, so each one's backward is the other."""

from __future__ import annotations

from ..rule import register_backward
from ._util import O


def _up_attrs(ctx):
    return {"mode": ctx.mode, "scales": ctx.scales, "align_corners": ctx.align_corners,
            "antialias": ctx.antialias}


@register_backward("upsample2d")
def _upsample2d(ctx, dy):
    return O.upsample2d_grad(dy, input_hw=tuple(ctx.input_shapes[0][2:]), **_up_attrs(ctx))


@register_backward("upsample2d_grad")
def _upsample2d_grad(ctx, g):
    return O.upsample2d(g, output_size=tuple(ctx.input_shapes[0][2:]), **_up_attrs(ctx))
