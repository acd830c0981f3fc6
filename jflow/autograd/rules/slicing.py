"""Backward rules of the slicing ops (``jflow/ops/slicing.py``): a sub-block's gradient is
padded back with zeros, a padded border's folded back in."""

from __future__ import annotations

from ..rule import register_backward
from ._util import O, zeros

# -- narrow / slice ---------------------------------------------------------------------------

def _pad_dim(g, nd: int, dim: int, lo: int, hi: int):
    """Zero-pad (or crop, for negative widths) ``g`` along ``dim`` only."""
    if lo == 0 and hi == 0:
        return g
    pad = [0] * (2 * (nd - dim))
    j = nd - 1 - dim
    pad[2 * j], pad[2 * j + 1] = lo, hi
    return O.pad(g, pad=tuple(pad))


@register_backward("narrow")
def _narrow(ctx, dy):
    shape = ctx.input_shapes[0]
    nd = len(shape)
    a = ctx.dim % nd
    return _pad_dim(dy, nd, a, ctx.start, shape[a] - ctx.start - ctx.length)


@register_backward("slice")
def _slice(ctx, dy):
    shape = ctx.input_shapes[0]
    items = []
    for d, a, b, c in zip(shape, ctx.start, ctx.stop, ctx.step):
        a, b, c = slice(a, b, c).indices(int(d))
        n = len(range(a, b, c))
        items.append(f"s{a}:{a + (n - 1) * c + 1 if n else a}:{c}")
    return O.setitem(zeros(shape, dy), dy, [], spec=",".join(items), accumulate=False)


# -- pad ---------------------------------------------------------------------------------------

@register_backward("pad")
def _pad(ctx, dy):
    shape = tuple(ctx.input_shapes[0])
    nd = len(shape)
    if ctx.mode == "constant":  # the inverse crop / zero-pad (negative widths cropped)
        return O.pad(dy, pad=tuple(-p for p in ctx.pad))
    widths = [(0, 0)] * nd
    for j in range(len(ctx.pad) // 2):
        widths[nd - 1 - j] = (int(ctx.pad[2 * j]), int(ctx.pad[2 * j + 1]))
    g = dy
    # the kernel pads every dim in turn (jnp.pad), so undo the dims one at a time
    for d in range(nd):
        lo, hi = widths[d]
        if lo == 0 and hi == 0:
            continue
        s = shape[d]
        acc = O.narrow(g, dim=d, start=lo, length=s)
        if lo:
            left = O.narrow(g, dim=d, start=0, length=lo)
            if ctx.mode == "reflect":    # out j < lo reads x[lo - j]
                acc = O.add(acc, _pad_dim(O.flip(left, axes=(d,)), nd, d, 1, s - 1 - lo))
            elif ctx.mode == "replicate":  # reads x[0]
                acc = O.add(acc, _pad_dim(O.reduce_sum(left, axis=(d,), keepdim=True),
                                          nd, d, 0, s - 1))
            else:                        # circular: reads x[s - lo + j]
                acc = O.add(acc, _pad_dim(left, nd, d, s - lo, 0))
        if hi:
            right = O.narrow(g, dim=d, start=lo + s, length=hi)
            if ctx.mode == "reflect":    # out lo + s + j reads x[s - 2 - j]
                acc = O.add(acc, _pad_dim(O.flip(right, axes=(d,)), nd, d, s - 1 - hi, 1))
            elif ctx.mode == "replicate":  # reads x[s - 1]
                acc = O.add(acc, _pad_dim(O.reduce_sum(right, axis=(d,), keepdim=True),
                                          nd, d, s - 1, 0))
            else:                        # circular: reads x[j]
                acc = O.add(acc, _pad_dim(right, nd, d, 0, s - hi))
        g = acc
    return g
