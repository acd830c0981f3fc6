"""Pooling ops: avg_pool2d / max_pool2d and their gradient ops — definition, xla
kernel and SBP signatures side by side.

Windows are over (H, W) of NCHW inputs with PyTorch's attrs (``kernel_size``, ``stride``,
symmetric ``padding``, ``ceil_mode``; avg: ``count_include_pad``, ``divisor_override``;
max: ``dilation``). Each op and its gradient op are a linear pair, so each one's backward
rule is the other.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, P, S, Signature
from .infer import FLOAT, check_dtype, desc
from .primitive import define_op
from .registry import Attr

# -- avg_pool2d and its transpose ----------------------------------------------------------------
# attrs: kernel_size (2), stride (2), padding (2: symmetric, as PyTorch), count_include_pad,
# ceil_mode and divisor_override (0: none). Both ops are linear; each one's backward is the
# other.

def _pool_out(xs: Any, kernel_size: Any, stride: Any, padding: Any,
              ceil_mode: bool = False) -> tuple[int, ...]:
    """Output shape of a 2-d pooling (``kernel_size`` already dilated). ``ceil_mode`` rounds
    the window count up, as PyTorch, but drops a last window that would start past the input
    and its left padding."""
    xs = tuple(xs)
    if len(xs) != 4:
        raise ValueError(f"expected a 4-d input (N, C, H, W), got shape {xs}")
    if len(kernel_size) != 2 or any(k <= 0 for k in kernel_size):
        raise ValueError(f"kernel_size must be 2 positive ints, got {list(kernel_size)}")
    if len(stride) != 2 or any(s <= 0 for s in stride):
        raise ValueError(f"stride must be 2 positive ints, got {list(stride)}")
    if len(padding) != 2 or any(p < 0 or 2 * p > k for p, k in zip(padding, kernel_size)):
        raise ValueError(f"padding must be 2 non-negative ints of at most half the kernel "
                         f"size, got {list(padding)}")
    out = []
    for i in range(2):
        size = xs[2 + i] + 2 * padding[i]
        n = size - kernel_size[i] + (stride[i] - 1 if ceil_mode else 0)
        o = n // stride[i] + 1
        if ceil_mode and o > 0 and (o - 1) * stride[i] >= xs[2 + i] + padding[i]:
            o -= 1
        if o <= 0:
            raise ValueError(f"kernel size {kernel_size[i]} is larger than the padded input "
                             f"size {size}")
        out.append(o)
    return xs[:2] + tuple(out)


def _ceil_extra(xs: Any, out_hw: Any, kernel_size: Any, stride: Any, padding: Any) -> list[int]:
    """Per spatial dim, how far the last window reaches past the padded input (ceil_mode)."""
    return [max(0, (out_hw[i] - 1) * stride[i] + kernel_size[i] - xs[2 + i] - 2 * padding[i])
            for i in range(2)]


def _avg_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, count_include_pad: bool,
              ceil_mode: bool, divisor_override: int) -> Any:
    """Window sums over the input padded by ``padding`` (plus, in ceil_mode, what the last
    window needs), divided as PyTorch: by ``divisor_override`` if non-zero, else by the
    window's cells inside input + padding (count_include_pad) or inside the input."""
    out = _pool_out(x.shape, kernel_size, stride, padding, ceil_mode)
    extra = _ceil_extra(x.shape, out[2:], kernel_size, stride, padding)
    win = (1, 1) + tuple(kernel_size)
    strides = (1, 1) + tuple(stride)
    pads = ((0, 0), (0, 0)) + tuple((p, p + e) for p, e in zip(padding, extra))
    xf = x.astype(np.float32) if x.dtype in (np.dtype(np.float16), np.dtype(jnp.bfloat16)) else x
    s = lax.reduce_window(xf, np.array(0, xf.dtype), lax.add, win, strides, pads)
    if divisor_override:
        cnt = jnp.asarray(divisor_override, xf.dtype)
    elif count_include_pad:
        if not any(extra):
            cnt = jnp.asarray(kernel_size[0] * kernel_size[1], xf.dtype)
        else:  # cells past input + padding do not count
            ones = jnp.ones((1, 1) + tuple(h + 2 * p for h, p in zip(x.shape[2:], padding)),
                            xf.dtype)
            cnt = lax.reduce_window(ones, np.array(0, xf.dtype), lax.add, win, strides,
                                    ((0, 0), (0, 0)) + tuple((0, e) for e in extra))
    else:
        ones = jnp.ones((1, 1) + tuple(x.shape[2:]), xf.dtype)
        cnt = lax.reduce_window(ones, np.array(0, xf.dtype), lax.add, win, strides, pads)
    return (s / cnt).astype(x.dtype)


def _pool_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Batch or channel split; linear (partial sums stay partial)."""
    return [Signature((S(0),), (S(0),)), Signature((S(1),), (S(1),)), Signature((P,), (P,))]


def _avg_pool_infer(x: Any, kernel_size: Any, stride: Any, padding: Any,
                    count_include_pad: bool, ceil_mode: bool, divisor_override: int) -> Any:
    check_dtype(x, FLOAT, "input")
    return desc(_pool_out(x.shape, kernel_size, stride, padding, ceil_mode), x.dtype)


_POOL_ATTRS = [Attr("kernel_size", "int64_list"), Attr("stride", "int64_list"),
               Attr("padding", "int64_list"), Attr("count_include_pad", "bool", True),
               Attr("ceil_mode", "bool", False), Attr("divisor_override", "int64", 0)]

define_op("avg_pool2d", inputs=["x"], outputs=["y"], attrs=_POOL_ATTRS, infer=_avg_pool_infer,
          sbp=_pool_sbp, doc="2-d average pooling over (H, W) windows, NCHW")
register_kernel("avg_pool2d", _avg_pool, name="avg_pool2d_xla")


def _avg_pool_grad_infer(dy: Any, input_hw: Any, kernel_size: Any, stride: Any, padding: Any,
                         count_include_pad: bool, ceil_mode: bool, divisor_override: int) -> Any:
    check_dtype(dy, FLOAT, "grad")
    if len(dy.shape) != 4 or len(input_hw) != 2:
        raise ValueError(f"expected a 4-d grad and 2 ints input_hw, got shape "
                         f"{tuple(dy.shape)} and {list(input_hw)}")
    xs = tuple(dy.shape[:2]) + tuple(input_hw)
    if _pool_out(xs, kernel_size, stride, padding, ceil_mode) != tuple(dy.shape):
        raise ValueError(f"grad shape {tuple(dy.shape)} does not match avg_pool2d of an input "
                         f"of shape {xs}")
    return desc(xs, dy.dtype)


def _avg_pool_grad(dy: Any, input_hw: Any, kernel_size: Any, stride: Any, padding: Any,
                   count_include_pad: bool, ceil_mode: bool, divisor_override: int) -> Any:
    x0 = jnp.zeros(tuple(dy.shape[:2]) + tuple(input_hw), dy.dtype)
    _, vjp = jax.vjp(lambda x: _avg_pool(x, kernel_size, stride, padding, count_include_pad,
                                         ceil_mode, divisor_override), x0)
    return vjp(dy)[0]


define_op("avg_pool2d_grad", inputs=["dy"], outputs=["dx"],
          attrs=[Attr("input_hw", "int64_list")] + _POOL_ATTRS, infer=_avg_pool_grad_infer,
          sbp=_pool_sbp, doc="the gradient of avg_pool2d with respect to its input")
register_kernel("avg_pool2d_grad", _avg_pool_grad, name="avg_pool2d_grad_xla")


# -- max_pool2d and its gradient -----------------------------------------------------------------
# max_pool2d returns (y, indices): indices (int64) are flat positions h * W + w in the unpadded
# input of each selected maximum (the first one on ties, as PyTorch). Padding is -inf.
# max_pool2d_grad(dy, indices) adds dy into those positions; its backward gathers with
# dim_gather. ceil_mode as PyTorch (windows past the end see -inf there).

def _max_pool_infer(x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                    ceil_mode: bool) -> Any:
    check_dtype(x, FLOAT, "input")
    if len(dilation) != 2 or any(d <= 0 for d in dilation):
        raise ValueError(f"dilation must be 2 positive ints, got {list(dilation)}")
    eff = [d * (k - 1) + 1 for d, k in zip(dilation, kernel_size)]
    if len(padding) != 2 or any(p < 0 or 2 * p > k for p, k in zip(padding, kernel_size)):
        raise ValueError(f"padding must be 2 non-negative ints of at most half the kernel "
                         f"size, got {list(padding)}")
    out = _pool_out(x.shape, eff, stride, padding, ceil_mode)
    return desc(out, x.dtype), desc(out, np.int64)


def _max_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: bool) -> Any:
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel_size, stride, padding, dilation
    eff = [d * (k - 1) + 1 for d, k in zip(dilation, kernel_size)]
    oh, ow = _pool_out(x.shape, eff, stride, padding, ceil_mode)[2:]
    rows = (np.arange(oh)[:, None] * sh + np.arange(kh)[None, :] * dh) - ph   # (oh, kh)
    cols = (np.arange(ow)[:, None] * sw + np.arange(kw)[None, :] * dw) - pw   # (ow, kw)
    r = np.broadcast_to(rows[:, None, :, None], (oh, ow, kh, kw)).reshape(oh, ow, -1)
    q = np.broadcast_to(cols[None, :, None, :], (oh, ow, kh, kw)).reshape(oh, ow, -1)
    valid = (r >= 0) & (r < h) & (q >= 0) & (q < w)
    flat = np.where(valid, r * w + q, 0)                                      # (oh, ow, K)
    win = jnp.take(x.reshape(n, c, h * w), jnp.asarray(flat), axis=2)         # (n,c,oh,ow,K)
    win = jnp.where(jnp.asarray(valid), win, jnp.asarray(-jnp.inf, x.dtype))
    k = jnp.argmax(win, axis=-1)
    y = jnp.take_along_axis(win, k[..., None], axis=-1)[..., 0]
    idx = jnp.take_along_axis(jnp.broadcast_to(jnp.asarray(flat), win.shape), k[..., None],
                              axis=-1)[..., 0]
    return y, idx.astype(np.int64)


define_op("max_pool2d", inputs=["x"], outputs=["y", "indices"],
          attrs=[Attr("kernel_size", "int64_list"), Attr("stride", "int64_list"),
                 Attr("padding", "int64_list"), Attr("dilation", "int64_list"),
                 Attr("ceil_mode", "bool", False)],
          infer=_max_pool_infer,
          sbp=lambda in_shapes, n_out=1, **_: [Signature((S(0),), (S(0), S(0))),
                                               Signature((S(1),), (S(1), S(1)))],
          doc="2-d max pooling over (H, W) windows, NCHW; also the flat argmax indices")
register_kernel("max_pool2d", _max_pool, name="max_pool2d_xla")


def _max_pool_grad_infer(dy: Any, indices: Any, input_hw: Any) -> Any:
    check_dtype(dy, FLOAT, "grad")
    if len(dy.shape) != 4 or tuple(indices.shape) != tuple(dy.shape) or len(input_hw) != 2:
        raise ValueError(f"expected a 4-d grad, indices of its shape and 2 ints input_hw, got "
                         f"shapes {tuple(dy.shape)}, {tuple(indices.shape)} and "
                         f"{list(input_hw)}")
    return desc(tuple(dy.shape[:2]) + tuple(input_hw), dy.dtype)


def _max_pool_grad(dy: Any, indices: Any, input_hw: Any) -> Any:
    n, c = dy.shape[:2]
    hw = input_hw[0] * input_hw[1]
    out = jnp.zeros((n, c, hw), dy.dtype)
    ni = jnp.arange(n)[:, None, None]
    ci = jnp.arange(c)[None, :, None]
    out = out.at[ni, ci, indices.reshape(n, c, -1)].add(dy.reshape(n, c, -1))
    return out.reshape((n, c) + tuple(input_hw))


define_op("max_pool2d_grad", inputs=["dy", "indices"], outputs=["dx"],
          attrs=[Attr("input_hw", "int64_list")], infer=_max_pool_grad_infer,
          sbp=lambda in_shapes, n_out=1, **_: [Signature((S(0), S(0)), (S(0),)),
                                               Signature((S(1), S(1)), (S(1),)),
                                               Signature((P, B), (P,))],
          doc="the gradient of max_pool2d: dy added into the input positions of the maxima")
register_kernel("max_pool2d_grad", _max_pool_grad, name="max_pool2d_grad_xla")
