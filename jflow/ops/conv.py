"""Convolution ops: conv2d and its two gradient ops, and conv_transpose2d —
definition, xla kernel and SBP signatures side by side. (Pooling is in ``pool.py``,
batch_norm in ``norm.py``.)

``conv2d(x, w)`` is ``lax.conv_general_dilated`` in NCHW / OIHW layout with attrs ``stride``
(2 ints), ``padding`` (4 ints: top, bottom, left, right), ``dilation`` (2 ints) and
``groups``; the bias is added by the functor. ``conv2d_input_grad(dy, w)`` and
``conv2d_weight_grad(x, dy)`` are the two transposes (vector-Jacobian products) of conv2d,
with the same attrs plus the spatial size of the result (``input_hw`` / ``kernel_size``; the
other dims follow from the inputs, so batch and channel splits stay consistent). The three
ops are bilinear and their backward rules are written with each other, so derivatives of any
order work.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import OPTIMIZED, register_kernel
from ..sharding.sbp import B, P, S, Signature
from . import cost
from .infer import FLOAT, check_dtype, desc
from .precision import float32_products
from .primitive import define_op
from .registry import Attr

_DN = {1: ("NCH", "OIH", "NCH"), 2: ("NCHW", "OIHW", "NCHW"), 3: ("NCDHW", "OIDHW", "NCDHW")}
_DIMS = {2: "4-d input (N, C, H, W) and a 4-d weight (O, C/groups, kH, kW)",
         3: "5-d input (N, C, D, H, W) and a 5-d weight (O, C/groups, kD, kH, kW)"}


def _conv(x: Any, w: Any, stride: Any, padding: Any, dilation: Any, groups: int) -> Any:
    nd = x.ndim - 2
    return lax.conv_general_dilated(
        x, w, window_strides=tuple(stride),
        padding=tuple((padding[2 * i], padding[2 * i + 1]) for i in range(nd)),
        rhs_dilation=tuple(dilation), dimension_numbers=_DN[nd], feature_group_count=groups,
        precision=float32_products())


def _check_attrs(stride: Any, padding: Any, dilation: Any, groups: int, nd: int = 2) -> None:
    if len(stride) != nd or any(s <= 0 for s in stride):
        raise ValueError(f"stride must be {nd} positive ints, got {list(stride)}")
    if len(dilation) != nd or any(d <= 0 for d in dilation):
        raise ValueError(f"dilation must be {nd} positive ints, got {list(dilation)}")
    if len(padding) != 2 * nd or any(p < 0 for p in padding):
        raise ValueError(f"padding must be {2 * nd} non-negative ints, got {list(padding)}")
    if groups <= 0:
        raise ValueError(f"groups must be positive, got {groups}")


def conv_out_shape(xs: Any, ws: Any, stride: Any, padding: Any, dilation: Any, groups: int,
                   nd: int) -> tuple[int, ...]:
    """The output shape of an ``nd``-d convolution (checks the shapes); ``padding`` holds
    (lo, hi) per spatial dim."""
    xs, ws = tuple(xs), tuple(ws)
    if len(xs) != nd + 2 or len(ws) != nd + 2:
        raise ValueError(f"expected a {_DIMS[nd]}, got shapes {xs} and {ws}")
    if xs[1] != ws[1] * groups:
        raise ValueError(f"input has {xs[1]} channels, but weight {ws} with groups={groups} "
                         f"expects {ws[1] * groups}")
    if ws[0] % groups:
        raise ValueError(f"out channels {ws[0]} must be divisible by groups {groups}")
    out = []
    for i in range(nd):
        eff = dilation[i] * (ws[2 + i] - 1) + 1
        size = xs[2 + i] + padding[2 * i] + padding[2 * i + 1]
        if size < eff:
            raise ValueError(f"kernel size {eff} (dilated) is larger than the padded input "
                             f"size {size}")
        out.append((size - eff) // stride[i] + 1)
    return (xs[0], ws[0]) + tuple(out)


def conv2d_out_shape(xs: Any, ws: Any, stride: Any, padding: Any, dilation: Any,
                     groups: int) -> tuple[int, ...]:
    """The output shape of conv2d (checks the shapes)."""
    return conv_out_shape(xs, ws, stride, padding, dilation, groups, 2)


def _same_dtype(a: Any, b: Any, name: str) -> None:
    check_dtype(a, FLOAT, "input")
    if np.dtype(b.dtype) != np.dtype(a.dtype):
        raise TypeError(f"{name} must have the input's dtype {np.dtype(a.dtype).name}, got "
                        f"{np.dtype(b.dtype).name}")


def _conv_sbp(in_shapes: Any, n_out: int = 1, groups: int = 1, **_: Any) -> list[Signature]:
    """Batch split; out-channel split of the weight (groups == 1); in-channel split of both
    gives a partial sum (groups == 1); linear in each argument."""
    sigs = [Signature((S(0), B), (S(0),)), Signature((P, B), (P,)), Signature((B, P), (P,))]
    if groups == 1:
        sigs += [Signature((B, S(0)), (S(1),)), Signature((S(1), S(1)), (P,))]
    return sigs


def _input_grad_sbp(in_shapes: Any, n_out: int = 1, groups: int = 1,
                    **_: Any) -> list[Signature]:
    sigs = [Signature((S(0), B), (S(0),)), Signature((P, B), (P,)), Signature((B, P), (P,))]
    if groups == 1:
        sigs += [Signature((S(1), S(0)), (P,)), Signature((B, S(1)), (S(1),))]
    return sigs


def _weight_grad_sbp(in_shapes: Any, n_out: int = 1, groups: int = 1,
                     **_: Any) -> list[Signature]:
    sigs = [Signature((S(0), S(0)), (P,)), Signature((P, B), (P,)), Signature((B, P), (P,))]
    if groups == 1:
        sigs += [Signature((B, S(1)), (S(0),)), Signature((S(1), B), (S(1),))]
    return sigs


# -- the two transposes --------------------------------------------------------------------------

def _input_shape(dy: Any, w: Any, size: Any, groups: int, nd: int, attr: str) -> tuple[int, ...]:
    if len(dy.shape) != nd + 2 or len(w.shape) != nd + 2 or len(size) != nd:
        raise ValueError(f"expected a {nd + 2}-d grad and weight and {nd} ints {attr}, got "
                         f"shapes {tuple(dy.shape)}, {tuple(w.shape)} and {list(size)}")
    return (dy.shape[0], w.shape[1] * groups) + tuple(size)


def _input_grad(dy: Any, w: Any, size: Any, stride: Any, padding: Any, dilation: Any,
                groups: int) -> Any:
    nd = dy.ndim - 2
    x0 = jnp.zeros(_input_shape(dy, w, size, groups, nd, "input size"), dy.dtype)
    _, vjp = jax.vjp(lambda x: _conv(x, w, stride, padding, dilation, groups), x0)
    return vjp(dy)[0]


def _weight_shape(x: Any, dy: Any, kernel_size: Any, groups: int, nd: int) -> tuple[int, ...]:
    if len(x.shape) != nd + 2 or len(dy.shape) != nd + 2 or len(kernel_size) != nd:
        raise ValueError(f"expected a {nd + 2}-d input and grad and {nd} ints kernel_size, "
                         f"got shapes {tuple(x.shape)}, {tuple(dy.shape)} and "
                         f"{list(kernel_size)}")
    if groups <= 0 or x.shape[1] % groups:
        raise ValueError(f"input channels {x.shape[1]} must be divisible by groups {groups}")
    return (dy.shape[1], x.shape[1] // groups) + tuple(kernel_size)


def _weight_grad(x: Any, dy: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                 groups: int) -> Any:
    w0 = jnp.zeros(_weight_shape(x, dy, kernel_size, groups, x.ndim - 2), x.dtype)
    _, vjp = jax.vjp(lambda w: _conv(x, w, stride, padding, dilation, groups), w0)
    return vjp(dy)[0]


def _define_conv(nd: int, size_attr: str) -> None:
    """conv{nd}d and its two gradient ops: the same kernels for every rank; the input grad's
    spatial size attr is ``size_attr`` (``input_hw`` for 2-d, ``input_size`` for 3-d)."""
    name = f"conv{nd}d"

    def conv_infer(x: Any, w: Any, stride: Any, padding: Any, dilation: Any,
                   groups: int) -> Any:
        _same_dtype(x, w, "weight")
        _check_attrs(stride, padding, dilation, groups, nd)
        return desc(conv_out_shape(x.shape, w.shape, stride, padding, dilation, groups, nd),
                    x.dtype)

    def input_grad_infer(dy: Any, w: Any, stride: Any, padding: Any, dilation: Any,
                         groups: int, **size: Any) -> Any:
        _same_dtype(dy, w, "weight")
        _check_attrs(stride, padding, dilation, groups, nd)
        xs = _input_shape(dy, w, size[size_attr], groups, nd, size_attr)
        if conv_out_shape(xs, w.shape, stride, padding, dilation, groups, nd) != \
                tuple(dy.shape):
            raise ValueError(f"grad shape {tuple(dy.shape)} does not match {name} of an input "
                             f"of shape {xs} with weight {tuple(w.shape)}")
        return desc(xs, dy.dtype)

    def input_grad(dy: Any, w: Any, stride: Any, padding: Any, dilation: Any, groups: int,
                   **size: Any) -> Any:
        return _input_grad(dy, w, size[size_attr], stride, padding, dilation, groups)

    def weight_grad_infer(x: Any, dy: Any, kernel_size: Any, stride: Any, padding: Any,
                          dilation: Any, groups: int) -> Any:
        _same_dtype(x, dy, "grad")
        _check_attrs(stride, padding, dilation, groups, nd)
        ws = _weight_shape(x, dy, kernel_size, groups, nd)
        if conv_out_shape(x.shape, ws, stride, padding, dilation, groups, nd) != \
                tuple(dy.shape):
            raise ValueError(f"grad shape {tuple(dy.shape)} does not match {name} of an input "
                             f"of shape {tuple(x.shape)} with a weight of shape {ws}")
        return desc(ws, x.dtype)

    conv_attrs = [Attr("stride", "int64_list"), Attr("padding", "int64_list"),
                  Attr("dilation", "int64_list"), Attr("groups", "int64", 1)]
    layout = "NCHW input, OIHW weight" if nd == 2 else "NCDHW input, OIDHW weight"
    define_op(name, inputs=["x", "weight"], outputs=["y"], attrs=conv_attrs,
              infer=conv_infer, sbp=_conv_sbp, flops=cost.convolution,
              doc=f"{nd}-d cross-correlation, {layout} (no bias)")
    register_kernel(name, _conv, name=f"{name}_xla")
    define_op(f"{name}_input_grad", inputs=["dy", "weight"], outputs=["dx"],
              attrs=[Attr(size_attr, "int64_list")] + conv_attrs,
              infer=input_grad_infer, sbp=_input_grad_sbp,
              doc=f"the gradient of {name} with respect to its input (a transposed "
                  f"convolution)")
    register_kernel(f"{name}_input_grad", input_grad, name=f"{name}_input_grad_xla")
    define_op(f"{name}_weight_grad", inputs=["x", "dy"], outputs=["dw"],
              attrs=[Attr("kernel_size", "int64_list")] + conv_attrs,
              infer=weight_grad_infer, sbp=_weight_grad_sbp,
              doc=f"the gradient of {name} with respect to its weight")
    register_kernel(f"{name}_weight_grad", _weight_grad, name=f"{name}_weight_grad_xla")


_define_conv(2, "input_hw")
_define_conv(3, "input_size")


# -- convolutions on CPU: depthwise and 1x1 forms -------------------------------------------------
# XLA's CPU convolution (its own emitter or YNNPACK alike) is slow for two kinds that real
# models are made of (MobileNet, EfficientNet, ConvNeXt: a depthwise convolution between two
# 1x1 ones), measured against PyTorch's at one thread:
# - depthwise (one input channel per group): a 7x7 one over a (16, 40, 16, 16) batch takes
#   19-31 ms against 0.45 ms, its input gradient 28 ms against 0.54. As shifted slices --
#   per kernel tap, a strided slice of the padded input times that tap's weights, the taps
#   fused by XLA into one loop -- it takes 0.45 ms, the input gradient (the same form: the
#   flipped kernel over the stride-dilated gradient) 0.58 ms, the weight gradient (JAX's
#   transpose of the slices, a reduction per tap; from WEIGHT_GRAD_LOOP_TAPS taps on a loop
#   over the taps, which compiles in a fraction of the time) 5 ms against PyTorch's 12;
# - 1x1 (groups == 1): over (16, 160, 16, 16) to 40 channels 1.7 ms against PyTorch's 0.75;
#   as a matrix product of the weight with the (strided) input and one transpose, 0.53 ms.
# These CPU kernels (priority OPTIMIZED) run conv2d / conv3d and their gradient ops in those
# two forms, and every other convolution as the default kernels do. Depthwise takes at most
# DEPTHWISE_MAX_TAPS taps (the program grows with them); float16 / bfloat16 accumulate its
# taps in float32.

#: the most kernel taps (the product of the kernel sizes) the shifted-slice form takes
DEPTHWISE_MAX_TAPS = 81


def _cpu_form(w_shape: Any, in_channels: int, groups: int) -> str | None:
    """``"pointwise"`` (1x1, groups == 1), ``"depthwise"`` (one input channel per group, at
    most DEPTHWISE_MAX_TAPS taps) or None (the default kernel) for a weight of ``w_shape``."""
    taps = int(np.prod(w_shape[2:]))
    if taps == 1 and groups == 1:
        return "pointwise"
    if w_shape[1] == 1 and groups == in_channels and taps <= DEPTHWISE_MAX_TAPS:
        return "depthwise"
    return None


def _tap_sum(xp: Any, wt: Any, out: Any, stride: Any, dilation: Any, flip: bool) -> Any:
    """Per kernel tap, the strided slice of ``xp`` (N, C, 1 or m, *padded) that tap reads
    times its weights ``wt`` (C, m, *kernel) -- the kernel flipped for ``flip`` -- summed
    over the taps: (N, C, m, *out)."""
    n, c, m = xp.shape[0], wt.shape[0], wt.shape[1]
    kernel = tuple(wt.shape[2:])
    nd = len(kernel)
    acc = None
    for tap in np.ndindex(*kernel):
        start = (0, 0, 0) + tuple(t * d for t, d in zip(tap, dilation))
        limit = (n, c, xp.shape[2]) + tuple(s + (o - 1) * st + 1
                                             for s, o, st in zip(start[3:], out, stride))
        k = tuple(kk - 1 - t for kk, t in zip(kernel, tap)) if flip else tap
        term = lax.slice(xp, start, limit, (1, 1, 1) + tuple(stride)) * \
            wt[(slice(None), slice(None)) + k].reshape((1, c, m) + (1,) * nd)
        acc = term if acc is None else acc + term
    return acc


def _depthwise(x: Any, w: Any, stride: Any, padding: Any, dilation: Any) -> Any:
    """``x`` (N, C, *spatial) correlated per channel with ``w`` (C * m, 1, *kernel): output
    channel ``g * m + j`` reads input channel ``g``, as conv with ``groups == C``."""
    nd = x.ndim - 2
    n, c = x.shape[:2]
    m = w.shape[0] // c
    acc_dtype = jnp.promote_types(x.dtype, jnp.float32)
    out = conv_out_shape(x.shape, w.shape, stride, padding, dilation, c, nd)[2:]
    xp = lax.pad(x.astype(acc_dtype), jnp.zeros((), acc_dtype),
                 [(0, 0, 0), (0, 0, 0)] + [(padding[2 * i], padding[2 * i + 1], 0)
                                           for i in range(nd)])[:, :, None]
    wt = w.astype(acc_dtype).reshape((c, m) + tuple(w.shape[2:]))
    acc = _tap_sum(xp, wt, out, stride, dilation, flip=False)
    return acc.reshape((n, c * m) + out).astype(x.dtype)


def _depthwise_input_grad(dy: Any, w: Any, size: Any, stride: Any, padding: Any,
                          dilation: Any, groups: int) -> Any:
    """The input gradient of :func:`_depthwise` for an input of spatial ``size``, itself a
    depthwise correlation: ``dy`` dilated by the stride (interior zeros), padded to the
    kernel's reach, times the flipped kernel, summed over each input channel's ``m`` output
    channels. (JAX's transpose of the slices, a sum of interior-padded pads, takes ~6x as
    long: 3.6 against 0.58 ms for a 7x7 one over (16, 40, 16, 16).)"""
    nd = dy.ndim - 2
    n, o = dy.shape[:2]
    kernel = tuple(w.shape[2:])
    c_in = groups  # (one input channel per group)
    m = o // c_in
    acc_dtype = jnp.promote_types(dy.dtype, jnp.float32)
    cfg = [(0, 0, 0)] * 3
    for i in range(nd):
        eff = dilation[i] * (kernel[i] - 1) + 1
        rest = size[i] + padding[2 * i] + padding[2 * i + 1] - eff - \
            (dy.shape[2 + i] - 1) * stride[i]  # (input rows no window reaches)
        cfg.append((eff - 1 - padding[2 * i], eff - 1 - padding[2 * i + 1] + rest,
                    stride[i] - 1))
    dyp = lax.pad(dy.astype(acc_dtype).reshape((n, c_in, m) + tuple(dy.shape[2:])),
                  jnp.zeros((), acc_dtype), cfg)
    wt = w.astype(acc_dtype).reshape((c_in, m) + kernel)
    acc = _tap_sum(dyp, wt, tuple(size), (1,) * nd, dilation, flip=True)
    return acc.sum(axis=2).astype(dy.dtype)


#: from this many kernel taps on, the depthwise weight gradient is a loop over the taps
#: (:func:`_depthwise_weight_grad`) instead of JAX's transpose of the shifted slices
WEIGHT_GRAD_LOOP_TAPS = 10


def _depthwise_weight_grad(x: Any, dy: Any, w_shape: Any, stride: Any, padding: Any,
                           dilation: Any) -> Any:
    """The weight gradient of :func:`_depthwise`: per tap, the sum over the batch and the
    output positions of the slice of the padded input that tap reads times ``dy``.

    JAX's transpose of the shifted slices is one reduction per tap, each its own kernel in
    XLA's program: a 7x7 one compiled in 1.4-2.0 s on a 2-core host (a 3x3 one in ~0.25 s), in
    every program that holds it, a whole backward among them. From
    :data:`WEIGHT_GRAD_LOOP_TAPS` taps on it runs as a loop instead, whose body -- one
    tap's slice, found by a dynamic offset, and its reduction -- XLA compiles once:
    ~0.3-0.4 s whatever the taps, at the same speed (a 7x7 one over (16, 40, 16, 16)
    9.4 against 9.9 ms; a 5x5 over (16, 240, 4, 4) 3.6 against 4.3). Below that, the slices'
    transpose is faster to compile and to run (a 3x3 with stride 2 over (16, 16, 16, 16):
    0.34 against 0.88 ms). The stride is met by splitting each padded axis into
    (position // stride, position % stride), the phases in front, so that every tap's
    slice is a contiguous block of one phase. Accumulates in float32 at least, as the
    forward. (benchmarks/results_ecosystem_models_cpu.txt, session 25: what it does to the
    first steps of library conv nets.)"""
    nd = x.ndim - 2
    n, c = x.shape[:2]
    kernel = tuple(w_shape[2:])
    taps = int(np.prod(kernel))
    if taps < WEIGHT_GRAD_LOOP_TAPS:
        _, vjp = jax.vjp(lambda w: _depthwise(x, w, stride, padding, dilation),
                         jnp.zeros(w_shape, x.dtype))
        return vjp(dy)[0]
    m = w_shape[0] // c
    acc_dtype = jnp.promote_types(x.dtype, jnp.float32)
    out = tuple(dy.shape[2:])
    cfg, q = [(0, 0, 0)] * 2, []
    for i in range(nd):  # pad, then to a whole number of strides
        size = x.shape[2 + i] + padding[2 * i] + padding[2 * i + 1]
        q.append(-(-size // stride[i]))
        cfg.append((padding[2 * i], padding[2 * i + 1] + q[i] * stride[i] - size, 0))
    xp = lax.pad(x.astype(acc_dtype), jnp.zeros((), acc_dtype), cfg)
    xp = xp.reshape((n, c) + sum(((qi, si) for qi, si in zip(q, stride)), ()))
    # phases[a_1.., n, c, u_1..] = padded[n, c, u_1 * stride_1 + a_1, ..]
    phases = xp.transpose(tuple(3 + 2 * i for i in range(nd)) + (0, 1) +
                          tuple(2 + 2 * i for i in range(nd)))
    dyr = dy.astype(acc_dtype).reshape((n, c, m) + out)
    sum_axes = (0,) + tuple(range(3, 3 + nd))

    def tap(t: Any, acc: Any) -> Any:
        offset, rest = [], t
        for kk, d in zip(reversed(kernel), reversed(dilation)):
            offset.append(rest % kk * d)
            rest = rest // kk
        offset.reverse()
        start = [o % s for o, s in zip(offset, stride)] + [0, 0] + \
            [o // s for o, s in zip(offset, stride)]
        part = lax.dynamic_slice(phases, start, (1,) * nd + (n, c) + out)
        col = (part.reshape((n, c, 1) + out) * dyr).sum(axis=sum_axes)  # (c, m)
        return lax.dynamic_update_index_in_dim(acc, col.reshape(c * m), t, 0)

    dw = lax.fori_loop(0, taps, tap, jnp.zeros((taps, c * m), acc_dtype))
    return dw.T.reshape(w_shape).astype(x.dtype)


def _pointwise_input(x: Any, stride: Any, padding: Any) -> Any:
    """The input positions a 1x1 convolution reads: padded, then every ``stride``-th."""
    nd = x.ndim - 2
    if any(padding):
        x = lax.pad(x, jnp.zeros((), x.dtype), [(0, 0, 0)] * 2 +
                    [(padding[2 * i], padding[2 * i + 1], 0) for i in range(nd)])
    if any(s != 1 for s in stride):
        x = x[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)]
    return x


def _pointwise(x: Any, w: Any, stride: Any, padding: Any) -> Any:
    """A 1x1 convolution (groups == 1) as the product of the (O, C) weight with the input's
    (N, C, positions), then (O, N, ...) -> (N, O, ...)."""
    x = _pointwise_input(x, stride, padding)
    n, c = x.shape[:2]
    o = w.shape[0]
    y = lax.dot_general(w.reshape(o, c), x.reshape(n, c, -1), (((1,), (1,)), ((), ())),
                        precision=float32_products())
    return jnp.transpose(y, (1, 0, 2)).reshape((n, o) + tuple(x.shape[2:]))


def _pointwise_input_grad(dy: Any, w: Any, size: Any, stride: Any, padding: Any) -> Any:
    nd = dy.ndim - 2
    n, o = dy.shape[:2]
    c = w.shape[1]
    g = lax.dot_general(w.reshape(o, c), dy.reshape(n, o, -1), (((0,), (1,)), ((), ())),
                        precision=float32_products())  # (C, N, positions)
    g = jnp.transpose(g, (1, 0, 2)).reshape((n, c) + tuple(dy.shape[2:]))
    # back through the stride (interior zeros, the rows past the last window) and padding
    cfg = [(0, 0, 0)] * 2
    for i in range(nd):
        padded = size[i] + padding[2 * i] + padding[2 * i + 1]
        cfg.append((-padding[2 * i], padded - (dy.shape[2 + i] - 1) * stride[i] - 1 -
                    padding[2 * i + 1], stride[i] - 1))
    return lax.pad(g, jnp.zeros((), g.dtype), cfg)


def _pointwise_weight_grad(x: Any, dy: Any, stride: Any, padding: Any) -> Any:
    x = _pointwise_input(x, stride, padding)
    n, c = x.shape[:2]
    o = dy.shape[1]
    dw = lax.dot_general(dy.reshape(n, o, -1), x.reshape(n, c, -1), (((0, 2), (0, 2)), ((), ())),
                         precision=float32_products())
    return dw.reshape((o, c) + (1,) * (x.ndim - 2))


def _register_cpu(nd: int, size_attr: str) -> None:
    name = f"conv{nd}d"

    def conv(x: Any, w: Any, stride: Any, padding: Any, dilation: Any, groups: int) -> Any:
        form = _cpu_form(w.shape, x.shape[1], groups)
        if form == "pointwise":
            return _pointwise(x, w, stride, padding)
        if form == "depthwise":
            return _depthwise(x, w, stride, padding, dilation)
        return _conv(x, w, stride, padding, dilation, groups)

    def input_grad(dy: Any, w: Any, stride: Any, padding: Any, dilation: Any, groups: int,
                   **size: Any) -> Any:
        hw = size[size_attr]
        form = _cpu_form(w.shape, w.shape[1] * groups, groups)
        if form == "pointwise":
            return _pointwise_input_grad(dy, w, hw, stride, padding)
        if form == "depthwise":
            return _depthwise_input_grad(dy, w, hw, stride, padding, dilation, groups)
        return _input_grad(dy, w, hw, stride, padding, dilation, groups)

    def weight_grad(x: Any, dy: Any, kernel_size: Any, stride: Any, padding: Any,
                    dilation: Any, groups: int) -> Any:
        ws = _weight_shape(x, dy, kernel_size, groups, nd)
        form = _cpu_form(ws, x.shape[1], groups)
        if form == "pointwise":
            return _pointwise_weight_grad(x, dy, stride, padding)
        if form == "depthwise":
            return _depthwise_weight_grad(x, dy, ws, stride, padding, dilation)
        return _weight_grad(x, dy, kernel_size, stride, padding, dilation, groups)

    for op, fn in ((name, conv), (f"{name}_input_grad", input_grad),
                   (f"{name}_weight_grad", weight_grad)):
        register_kernel(op, fn, platforms=("cpu",), priority=OPTIMIZED, name=f"{op}_cpu")


_register_cpu(2, "input_hw")
_register_cpu(3, "input_size")


# -- conv_transpose2d / conv_transpose3d -------------------------------------------------------
# conv_transpose{2,3}d(x, w) with w (Cin, Cout / groups, k...) is conv{2,3}d_input_grad(x, w): the
# weight layouts coincide (conv's out channels are the transposed conv's in channels). The
# output size (H - 1) s - 2 p + d (k - 1) + output_padding + 1 is reached by giving the
# input-grad kernel a trailing padding of p - output_padding (when output_padding <= p) and,
# when output_padding > p, by appending the rows no window reaches (zeros) after it.

_T_DIMS = {2: "4-d input (N, Cin, H, W) and a 4-d weight (Cin, Cout/groups, kH, kW)",
           3: "5-d input (N, Cin, D, H, W) and a 5-d weight (Cin, Cout/groups, kD, kH, kW)"}


def conv_transpose_plan(xs: Any, ws: Any, stride: Any, padding: Any, output_padding: Any,
                        dilation: Any, groups: int, nd: int = 2
                        ) -> tuple[tuple[int, ...], list[int], list[int], list[int]]:
    """(output shape, the convolution's padding (2 nd ints), the convolution's input size, and
    the zero rows appended after it per dim) of an ``nd``-d transposed convolution; checks
    shapes and attrs."""
    xs, ws = tuple(xs), tuple(ws)
    if len(xs) != nd + 2 or len(ws) != nd + 2:
        raise ValueError(f"expected a {_T_DIMS[nd]}, got shapes {xs} and {ws}")
    if len(padding) != nd or any(p < 0 for p in padding):
        raise ValueError(f"padding must be {nd} non-negative ints, got {list(padding)}")
    if len(output_padding) != nd or any(p < 0 for p in output_padding):
        raise ValueError(f"output_padding must be {nd} non-negative ints, got "
                         f"{list(output_padding)}")
    _check_attrs(stride, list(padding) * 2, dilation, groups, nd)
    if xs[1] != ws[0]:
        raise ValueError(f"input has {xs[1]} channels, but weight {ws} expects {ws[0]} "
                         f"(weight dim 0)")
    if ws[0] % groups:
        raise ValueError(f"in channels {ws[0]} must be divisible by groups {groups}")
    out, pads, conv_hw, extra = [], [], [], []
    for i in range(nd):
        s, p, op, d, k = stride[i], padding[i], output_padding[i], dilation[i], ws[2 + i]
        if op >= max(s, d):
            raise ValueError(f"output_padding must be smaller than either stride or dilation, "
                             f"got output_padding {list(output_padding)}, stride "
                             f"{list(stride)} and dilation {list(dilation)}")
        size = (xs[2 + i] - 1) * s - 2 * p + d * (k - 1) + op + 1
        if size <= 0:
            raise ValueError(f"output size {size} is too small (input {xs}, padding "
                             f"{list(padding)})")
        if op <= p:
            pb, e = p - op, 0
        else:
            pb, e = 0, max(0, op - p - s + 1)
        out.append(size)
        pads += [p, pb]
        conv_hw.append(size - e)
        extra.append(e)
    return (xs[0], ws[1] * groups) + tuple(out), pads, conv_hw, extra


def _conv_t_infer(nd: int) -> Any:
    def infer(x: Any, w: Any, stride: Any, padding: Any, output_padding: Any, dilation: Any,
              groups: int) -> Any:
        _same_dtype(x, w, "weight")
        ys = conv_transpose_plan(x.shape, w.shape, stride, padding, output_padding, dilation,
                                 groups, nd)[0]
        return desc(ys, x.dtype)
    return infer


def _conv_t(x: Any, w: Any, stride: Any, padding: Any, output_padding: Any, dilation: Any,
            groups: int) -> Any:
    _, pads, conv_hw, extra = conv_transpose_plan(x.shape, w.shape, stride, padding,
                                                  output_padding, dilation, groups, x.ndim - 2)
    y = _input_grad(x, w, conv_hw, stride, pads, dilation, groups)
    if any(extra):
        y = jnp.pad(y, ((0, 0), (0, 0)) + tuple((0, e) for e in extra))
    return y


for _nd in (2, 3):
    define_op(f"conv_transpose{_nd}d", inputs=["x", "weight"], outputs=["y"],
              attrs=[Attr("stride", "int64_list"), Attr("padding", "int64_list"),
                     Attr("output_padding", "int64_list"), Attr("dilation", "int64_list"),
                     Attr("groups", "int64", 1)],
              infer=_conv_t_infer(_nd), sbp=_input_grad_sbp,
              flops=cost.transposed_convolution,
              doc=f"{_nd}-d transposed convolution, {('NCHW', 'NCDHW')[_nd - 2]} input, "
                  f"(Cin, Cout/groups, {('kH, kW', 'kD, kH, kW')[_nd - 2]}) weight (no bias)")
    register_kernel(f"conv_transpose{_nd}d", _conv_t, name=f"conv_transpose{_nd}d_xla")


# -- im2col / col2im (F.unfold / F.fold) -----------------------------------------------------------
# im2col(x) with x (N, C, H, W) gathers every sliding block of the (zero padded) input into
# a column: (N, C kH kW, L), the row index c kH kW + i kW + j, L the blocks in row-major order.
# col2im is its adjoint (sum of the overlapping entries back into an (N, C, H, W) image); each
# one's backward is the other.


def _blocks(hw: Any, kernel_size: Any, dilation: Any, padding: Any,
            stride: Any) -> tuple[int, int]:
    """The number of sliding blocks along H and W (checks the attrs)."""
    for name, v, lo in (("kernel_size", kernel_size, 1), ("dilation", dilation, 1),
                        ("padding", padding, 0), ("stride", stride, 1)):
        if len(v) != 2 or any(a < lo for a in v):
            raise ValueError(f"{name} must be 2 ints >= {lo}, got {list(v)}")
    out = []
    for i in range(2):
        eff = dilation[i] * (kernel_size[i] - 1) + 1
        size = hw[i] + 2 * padding[i]
        if size < eff:
            raise ValueError(f"kernel size {eff} (dilated) is larger than the padded "
                             f"input size {size} in spatial dim {i}")
        out.append((size - eff) // stride[i] + 1)
    return out[0], out[1]


def _im2col_infer(x: Any, kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> Any:
    check_dtype(x, FLOAT, "input")
    if len(x.shape) != 4:
        raise ValueError(f"expected a 4-d input (N, C, H, W), got shape "
                         f"{tuple(x.shape)}")
    oh, ow = _blocks(x.shape[2:], kernel_size, dilation, padding, stride)
    n, c = x.shape[:2]
    return desc((n, c * kernel_size[0] * kernel_size[1], oh * ow), x.dtype)


def _im2col(x: Any, kernel_size: Any, dilation: Any, padding: Any, stride: Any) -> Any:
    n, c, h, w = x.shape
    oh, ow = _blocks((h, w), kernel_size, dilation, padding, stride)
    xp = jnp.pad(x, ((0, 0), (0, 0), (padding[0], padding[0]), (padding[1], padding[1])))
    parts = []
    for i in range(kernel_size[0]):
        for j in range(kernel_size[1]):
            r, q = i * dilation[0], j * dilation[1]
            parts.append(lax.slice(xp, (0, 0, r, q),
                                   (n, c, r + (oh - 1) * stride[0] + 1,
                                    q + (ow - 1) * stride[1] + 1),
                                   (1, 1, stride[0], stride[1])))
    return jnp.stack(parts, axis=2).reshape(n, c * len(parts), oh * ow)


def _col_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Batch or channel split (a channel's rows are contiguous), P → P (linear)."""
    return [Signature((S(0),), (S(0),)), Signature((S(1),), (S(1),)), Signature((P,), (P,))]


define_op("im2col", inputs=["x"], outputs=["y"],
          attrs=[Attr("kernel_size", "int64_list"), Attr("dilation", "int64_list"),
                 Attr("padding", "int64_list"), Attr("stride", "int64_list")],
          infer=_im2col_infer, sbp=_col_sbp,
          doc="sliding blocks of an NCHW input as columns (N, C kH kW, L) (F.unfold)")
register_kernel("im2col", _im2col, name="im2col_xla")


def _col2im_shape(x: Any, output_size: Any, kernel_size: Any, dilation: Any, padding: Any,
                  stride: Any) -> tuple[int, ...]:
    if len(x.shape) != 3:
        raise ValueError(f"expected a 3-d input (N, C kH kW, L), got shape "
                         f"{tuple(x.shape)}")
    if len(output_size) != 2 or any(s < 1 for s in output_size):
        raise ValueError(f"output_size must be 2 positive ints, got "
                         f"{list(output_size)}")
    oh, ow = _blocks(output_size, kernel_size, dilation, padding, stride)
    k = kernel_size[0] * kernel_size[1] if len(kernel_size) == 2 else 0
    if x.shape[1] % k:
        raise ValueError(f"input dim 1 ({x.shape[1]}) must be divisible by the "
                         f"product of kernel_size {list(kernel_size)} ({k})")
    if x.shape[2] != oh * ow:
        raise ValueError(f"input dim 2 ({x.shape[2]}) must be the number of sliding "
                         f"blocks {oh * ow} ({oh} x {ow}) of output_size {list(output_size)} "
                         f"with kernel_size {list(kernel_size)}, dilation {list(dilation)}, "
                         f"padding {list(padding)} and stride {list(stride)}")
    return (x.shape[0], x.shape[1] // k) + tuple(output_size)


def _col2im_infer(x: Any, output_size: Any, kernel_size: Any, dilation: Any, padding: Any,
                  stride: Any) -> Any:
    check_dtype(x, FLOAT, "input")
    return desc(_col2im_shape(x, output_size, kernel_size, dilation, padding, stride), x.dtype)


def _col2im(x: Any, output_size: Any, kernel_size: Any, dilation: Any, padding: Any,
            stride: Any) -> Any:
    y0 = jnp.zeros(_col2im_shape(x, output_size, kernel_size, dilation, padding, stride),
                   x.dtype)
    _, vjp = jax.vjp(lambda y: _im2col(y, kernel_size, dilation, padding, stride), y0)
    return vjp(x)[0]


define_op("col2im", inputs=["x"], outputs=["y"],
          attrs=[Attr("output_size", "int64_list"), Attr("kernel_size", "int64_list"),
                 Attr("dilation", "int64_list"), Attr("padding", "int64_list"),
                 Attr("stride", "int64_list")],
          infer=_col2im_infer, sbp=_col_sbp,
          doc="columns (N, C kH kW, L) summed back into an (N, C, H, W) image, the adjoint of "
              "im2col (F.fold)")
register_kernel("col2im", _col2im, name="col2im_xla")
