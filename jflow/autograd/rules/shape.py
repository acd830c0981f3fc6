"""Backward rules of the shape ops (``jflow/ops/shape.py``)."""

from __future__ import annotations

from ..rule import register_backward
from ._util import O, scalar_like, sum_to


@register_backward("reshape")
def _reshape(ctx, dy):
    return O.reshape(dy, shape=ctx.input_shapes[0])


@register_backward("expand")
def _expand(ctx, dy):
    return sum_to(dy, ctx.input_shapes[0])


# -- pure reshapes ---------------------------------------------------------------------------

def _reshape_back(ctx, dy):
    """flatten / squeeze / unsqueeze keep the row-major order: reshape the gradient back."""
    return O.reshape(dy, shape=ctx.input_shapes[0])


for _name in ("flatten", "squeeze", "unsqueeze"):
    register_backward(_name)(_reshape_back)


@register_backward("transpose")
def _transpose(ctx, dy):
    nd = len(ctx.input_shapes[0])
    perm = [p % nd for p in ctx.perm] if nd else []
    inv = [0] * nd
    for j, p in enumerate(perm):
        inv[p] = j
    return O.transpose(dy, perm=tuple(inv))


# -- cat / stack / split / narrow / slice -----------------------------------------------------

@register_backward("cat")
def _cat(ctx, dy):
    shapes = ctx.input_shapes
    a = ctx.dim % len(shapes[0])
    out, start = [], 0
    for i, s in enumerate(shapes):
        n = s[a]
        out.append(O.narrow(dy, dim=a, start=start, length=n) if ctx.needs_input_grad[i]
                   else None)
        start += n
    return out


@register_backward("stack")
def _stack(ctx, dy):
    shapes = ctx.input_shapes
    a = ctx.dim % (len(shapes[0]) + 1)
    out = []
    for i, s in enumerate(shapes):
        out.append(O.reshape(O.narrow(dy, dim=a, start=i, length=1), shape=s)
                   if ctx.needs_input_grad[i] else None)
    return out


@register_backward("split")
def _split(ctx, *dys):
    a = ctx.dim % len(ctx.input_shapes[0])
    return O.cat(list(dys), dim=a)


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
    return O.setitem(_zeros(dy, shape), dy, [], spec=",".join(items), accumulate=False)


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


# -- getitem / setitem -------------------------------------------------------------------------

def _zeros(like, shape):
    """Zeros of ``like``'s dtype and the given shape."""
    return O.full(shape=tuple(shape), value=0.0, dtype=like._value.dtype)


@register_backward("getitem", save=["indices"])
def _getitem(ctx, dy):
    (indices,) = ctx.saved_tensors
    gx = None
    if ctx.needs_input_grad[0]:
        gx = O.setitem(_zeros(dy, ctx.input_shapes[0]), dy, list(indices), spec=ctx.spec,
                       accumulate=True)
    return [gx] + [None] * len(indices)


def _value_grad(g, value_shape):
    """A gradient of the indexed region's shape reduced to the (broadcast) value's shape:
    the value's leading size-1 dims are dropped, the rest broadcasts (as the kernel's _fit)."""
    value_shape = tuple(value_shape)
    target = tuple(g._value.shape)
    stripped = value_shape
    while len(stripped) > len(target) and stripped[0] == 1:
        stripped = stripped[1:]
    g = sum_to(g, stripped)
    return O.reshape(g, shape=value_shape) if stripped != value_shape else g


@register_backward("setitem", save=["indices"])
def _setitem(ctx, dy):
    (indices,) = ctx.saved_tensors
    indices = list(indices)
    mask = ctx.spec == "m"
    gx = gv = None
    if ctx.needs_input_grad[0]:
        if ctx.accumulate:
            gx = dy
        else:  # the overwritten region receives no gradient
            gx = O.setitem(dy, scalar_like(0.0, dy), indices, spec=ctx.spec, accumulate=False)
    if ctx.needs_input_grad[1]:
        if mask:
            m = indices[0]
            k = len(ctx.input_shapes[2])
            rest = tuple(ctx.input_shapes[0][k:])
            if rest:
                m = O.reshape(m, shape=tuple(ctx.input_shapes[2]) + (1,) * len(rest))
            g = O.where(m, dy, scalar_like(0.0, dy))
            if k:
                g = O.reduce_sum(g, axis=tuple(range(k)), keepdim=False)
        else:
            g = O.getitem(dy, indices, spec=ctx.spec)
        gv = _value_grad(g, ctx.input_shapes[1])
    return [gx, gv] + [None] * len(indices)
