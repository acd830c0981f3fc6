"""Pooling ops over 1, 2 or 3 spatial dims: avg_pool{1,2,3}d, max_pool{1,2,3}d,
adaptive_max_pool{1,2,3}d and the gradient ops — definition, xla kernel and SBP signatures
side by side.

As OneFlow, each rank is an op of its own (``avg_pool1d`` takes ``(N, C, L)``,
``avg_pool2d`` ``(N, C, H, W)``, ``avg_pool3d`` ``(N, C, D, H, W)``), and one kernel per kind
serves every rank. Windows use PyTorch's attrs (``kernel_size``, ``stride``, symmetric
``padding``, ``ceil_mode``; avg: ``count_include_pad``, ``divisor_override``; max:
``dilation``), one entry per spatial dim. avg_pool and its gradient op are a linear pair, so
each one's backward rule is the other; max pools return flat argmax indices and their
gradient op is a scatter-add into those positions.
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

_DIMS = {1: "(N, C, L)", 2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}


def _check_ints(name: str, v: Any, nd: int, least: int) -> None:
    if len(v) != nd or any(a < least for a in v):
        what = "positive" if least == 1 else "non-negative"
        raise ValueError(f"{name} must be {nd} {what} ints, got {list(v)}")


def _check_input(xs: Any, nd: int) -> tuple[int, ...]:
    xs = tuple(xs)
    if len(xs) != nd + 2:
        raise ValueError(f"expected a {nd + 2}-d input {_DIMS[nd]}, got shape {xs}")
    return xs


def _pool_out(xs: Any, nd: int, kernel_size: Any, stride: Any, padding: Any,
              ceil_mode: bool = False, raw_kernel: Any = None) -> tuple[int, ...]:
    """Output shape of an ``nd``-d pooling (``kernel_size`` already dilated; ``raw_kernel``,
    the undilated one, bounds the padding as PyTorch). ``ceil_mode`` rounds the window count
    up, as PyTorch, but drops a last window that would start past the input and its left
    padding."""
    xs = _check_input(xs, nd)
    raw = kernel_size if raw_kernel is None else raw_kernel
    _check_ints("kernel_size", raw, nd, 1)
    _check_ints("stride", stride, nd, 1)
    if len(padding) != nd or any(p < 0 or 2 * p > k for p, k in zip(padding, raw)):
        raise ValueError(f"padding must be {nd} non-negative ints of at most half the kernel "
                         f"size, got {list(padding)}")
    out = []
    for i in range(nd):
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


def _ceil_extra(xs: Any, out_sp: Any, kernel_size: Any, stride: Any, padding: Any) -> list[int]:
    """Per spatial dim, how far the last window reaches past the padded input (ceil_mode)."""
    return [max(0, (out_sp[i] - 1) * stride[i] + kernel_size[i] - xs[2 + i] - 2 * padding[i])
            for i in range(len(out_sp))]


def _pool_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Batch or channel split; linear (partial sums stay partial)."""
    return [Signature((S(0),), (S(0),)), Signature((S(1),), (S(1),)), Signature((P,), (P,))]


def _split_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Batch or channel split of the input and both outputs (values, indices)."""
    return [Signature((S(0),), (S(0), S(0))), Signature((S(1),), (S(1), S(1)))]


def _scatter_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Batch or channel split of dy and indices; a partial dy scatters to a partial dx."""
    return [Signature((S(0), S(0)), (S(0),)), Signature((S(1), S(1)), (S(1),)),
            Signature((P, B), (P,))]


# -- avg_pool{1,2,3}d and their transposes ----------------------------------------------------
# attrs: kernel_size, stride, padding (nd ints each; padding symmetric, as PyTorch),
# count_include_pad, ceil_mode and divisor_override (0: none). Both ops are linear; each one's
# backward is the other.

def _avg_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, count_include_pad: bool,
              ceil_mode: bool, divisor_override: int) -> Any:
    """Window sums over the input padded by ``padding`` (plus, in ceil_mode, what the last
    window needs), divided as PyTorch: by ``divisor_override`` if non-zero, else by the
    window's cells inside input + padding (count_include_pad) or inside the input. Any
    number of spatial dims (after N, C)."""
    nd = x.ndim - 2
    out = _pool_out(x.shape, nd, kernel_size, stride, padding, ceil_mode)
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
            cnt = jnp.asarray(int(np.prod(kernel_size)), xf.dtype)
        else:  # cells past input + padding do not count
            ones = jnp.ones((1, 1) + tuple(h + 2 * p for h, p in zip(x.shape[2:], padding)),
                            xf.dtype)
            cnt = lax.reduce_window(ones, np.array(0, xf.dtype), lax.add, win, strides,
                                    ((0, 0), (0, 0)) + tuple((0, e) for e in extra))
    else:
        ones = jnp.ones((1, 1) + tuple(x.shape[2:]), xf.dtype)
        cnt = lax.reduce_window(ones, np.array(0, xf.dtype), lax.add, win, strides, pads)
    return (s / cnt).astype(x.dtype)


def _avg_pool_grad(dy: Any, input_size: Any, kernel_size: Any, stride: Any, padding: Any,
                   count_include_pad: bool, ceil_mode: bool, divisor_override: int) -> Any:
    x0 = jnp.zeros(tuple(dy.shape[:2]) + tuple(input_size), dy.dtype)
    _, vjp = jax.vjp(lambda x: _avg_pool(x, kernel_size, stride, padding, count_include_pad,
                                         ceil_mode, divisor_override), x0)
    return vjp(dy)[0]


def _avg_infers(nd: int, name: str) -> tuple[Any, Any]:
    def infer(x: Any, kernel_size: Any, stride: Any, padding: Any, count_include_pad: bool,
              ceil_mode: bool, divisor_override: int) -> Any:
        check_dtype(x, FLOAT, "input")
        return desc(_pool_out(x.shape, nd, kernel_size, stride, padding, ceil_mode), x.dtype)

    def grad_infer(dy: Any, input_size: Any, kernel_size: Any, stride: Any, padding: Any,
                   count_include_pad: bool, ceil_mode: bool, divisor_override: int) -> Any:
        check_dtype(dy, FLOAT, "grad")
        if len(dy.shape) != nd + 2 or len(input_size) != nd:
            raise ValueError(f"expected a {nd + 2}-d grad and {nd} ints input_size, got shape "
                             f"{tuple(dy.shape)} and {list(input_size)}")
        xs = tuple(dy.shape[:2]) + tuple(input_size)
        if _pool_out(xs, nd, kernel_size, stride, padding, ceil_mode) != tuple(dy.shape):
            raise ValueError(f"grad shape {tuple(dy.shape)} does not match {name} of an "
                             f"input of shape {xs}")
        return desc(xs, dy.dtype)

    return infer, grad_infer


_POOL_ATTRS = [Attr("kernel_size", "int64_list"), Attr("stride", "int64_list"),
               Attr("padding", "int64_list"), Attr("count_include_pad", "bool", True),
               Attr("ceil_mode", "bool", False), Attr("divisor_override", "int64", 0)]

for _nd in (1, 2, 3):
    _name = f"avg_pool{_nd}d"
    _infer, _grad_infer = _avg_infers(_nd, _name)
    define_op(_name, inputs=["x"], outputs=["y"], attrs=_POOL_ATTRS, infer=_infer,
              sbp=_pool_sbp, doc=f"{_nd}-d average pooling, {_DIMS[_nd]}")
    register_kernel(_name, _avg_pool, name=f"{_name}_xla")
    define_op(f"{_name}_grad", inputs=["dy"], outputs=["dx"],
              attrs=[Attr("input_size", "int64_list")] + _POOL_ATTRS, infer=_grad_infer,
              sbp=_pool_sbp, doc=f"the gradient of {_name} with respect to its input")
    register_kernel(f"{_name}_grad", _avg_pool_grad, name=f"{_name}_grad_xla")


# -- max_pool{1,2,3}d, adaptive_max_pool{1,2,3}d and the gradient -----------------------------
# Both return (y, indices): indices (int64) are flat positions (row-major over the spatial
# dims of the unpadded input: h * W + w in 2-d) of each selected maximum (the first one on
# ties, as PyTorch). Padding is -inf. max_pool{nd}d_grad(dy, indices) adds dy into those
# positions (the backward of both kinds); its backward gathers with dim_gather. ceil_mode as
# PyTorch (windows past the end see -inf there).

def _window_max(x: Any, pos: list[np.ndarray], valid: list[np.ndarray]) -> tuple[Any, Any]:
    """Max and flat argmax over windows given per spatial dim: ``pos[i]`` (o_i, K_i) input
    positions, ``valid[i]`` whether each lies in the window and the input. An invalid cell
    reads -inf and carries the window's first valid position, so a window of -inf values
    reports that position, as PyTorch's scan does."""
    n, c = x.shape[:2]
    sp = tuple(x.shape[2:])
    nd = len(sp)
    outs = tuple(p.shape[0] for p in pos)
    flat = np.zeros((1,) * (2 * nd), np.int64)
    ok = np.ones((1,) * (2 * nd), bool)
    for i in range(nd):
        first = np.where(valid[i].any(1), np.argmax(valid[i], 1), 0)
        p = np.where(valid[i], pos[i], pos[i][np.arange(len(first)), first][:, None])
        shape = [1] * (2 * nd)
        shape[i], shape[nd + i] = p.shape
        flat = flat + p.reshape(shape) * int(np.prod(sp[i + 1:]))
        ok = ok & valid[i].reshape(shape)
    kk = int(np.prod([p.shape[1] for p in pos]))
    full = outs + tuple(p.shape[1] for p in pos)
    flat = np.broadcast_to(flat, full).reshape(outs + (kk,))
    ok = np.broadcast_to(ok, full).reshape(outs + (kk,))
    win = jnp.take(x.reshape(n, c, -1), jnp.asarray(flat.reshape(-1)), axis=2)
    win = win.reshape((n, c) + outs + (kk,))
    win = jnp.where(jnp.asarray(ok), win, jnp.asarray(-jnp.inf, x.dtype))
    k = jnp.argmax(win, axis=-1)
    y = jnp.take_along_axis(win, k[..., None], axis=-1)[..., 0]
    idx = jnp.take_along_axis(jnp.broadcast_to(jnp.asarray(flat), win.shape), k[..., None],
                              axis=-1)[..., 0]
    return y, idx.astype(np.int64)


def _max_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: bool) -> Any:
    nd = x.ndim - 2
    eff = [d * (k - 1) + 1 for d, k in zip(dilation, kernel_size)]
    outs = _pool_out(x.shape, nd, eff, stride, padding, ceil_mode, kernel_size)[2:]
    pos, valid = [], []
    for i in range(nd):
        p = (np.arange(outs[i])[:, None] * stride[i]
             + np.arange(kernel_size[i])[None, :] * dilation[i]) - padding[i]
        pos.append(p)
        valid.append((p >= 0) & (p < x.shape[2 + i]))
    return _window_max(x, pos, valid)


def _max_infer(nd: int) -> Any:
    def infer(x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: bool) -> Any:
        check_dtype(x, FLOAT, "input")
        _check_ints("dilation", dilation, nd, 1)
        _check_ints("kernel_size", kernel_size, nd, 1)
        eff = [d * (k - 1) + 1 for d, k in zip(dilation, kernel_size)]
        out = _pool_out(x.shape, nd, eff, stride, padding, ceil_mode, kernel_size)
        return desc(out, x.dtype), desc(out, np.int64)

    return infer


def _adaptive_windows(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's adaptive windows ``[floor(i n_in / n_out), ceil((i + 1) n_in / n_out))`` as
    (positions, valid) arrays of shape (n_out, longest window)."""
    lo = (np.arange(n_out) * n_in) // n_out
    hi = -((-(np.arange(n_out) + 1) * n_in) // n_out)
    k = int((hi - lo).max())
    p = lo[:, None] + np.arange(k)[None, :]
    return p, p < hi[:, None]


def _adaptive_max_pool(x: Any, output_size: Any) -> Any:
    pos, valid = zip(*(_adaptive_windows(n, o) for n, o in zip(x.shape[2:], output_size)))
    return _window_max(x, list(pos), list(valid))


def _adaptive_max_infer(nd: int) -> Any:
    def infer(x: Any, output_size: Any) -> Any:
        check_dtype(x, FLOAT, "input")
        xs = _check_input(x.shape, nd)
        _check_ints("output_size", output_size, nd, 1)
        if any(s <= 0 for s in xs[2:]):
            raise ValueError(f"expected non-empty spatial dims, got shape {xs}")
        out = xs[:2] + tuple(output_size)
        return desc(out, x.dtype), desc(out, np.int64)

    return infer


def _max_pool_grad(dy: Any, indices: Any, input_size: Any) -> Any:
    n, c = dy.shape[:2]
    out = jnp.zeros((n, c, int(np.prod(input_size))), dy.dtype)
    ni = jnp.arange(n)[:, None, None]
    ci = jnp.arange(c)[None, :, None]
    out = out.at[ni, ci, indices.reshape(n, c, -1)].add(dy.reshape(n, c, -1))
    return out.reshape((n, c) + tuple(input_size))


def _max_grad_infer(nd: int) -> Any:
    def infer(dy: Any, indices: Any, input_size: Any) -> Any:
        check_dtype(dy, FLOAT, "grad")
        if (len(dy.shape) != nd + 2 or tuple(indices.shape) != tuple(dy.shape)
                or len(input_size) != nd):
            raise ValueError(f"expected a {nd + 2}-d grad, indices of its shape and {nd} ints "
                             f"input_size, got shapes {tuple(dy.shape)}, "
                             f"{tuple(indices.shape)} and {list(input_size)}")
        return desc(tuple(dy.shape[:2]) + tuple(input_size), dy.dtype)

    return infer


for _nd in (1, 2, 3):
    _name = f"max_pool{_nd}d"
    define_op(_name, inputs=["x"], outputs=["y", "indices"],
              attrs=[Attr("kernel_size", "int64_list"), Attr("stride", "int64_list"),
                     Attr("padding", "int64_list"), Attr("dilation", "int64_list"),
                     Attr("ceil_mode", "bool", False)],
              infer=_max_infer(_nd), sbp=_split_sbp,
              doc=f"{_nd}-d max pooling, {_DIMS[_nd]}; also the flat argmax indices")
    register_kernel(_name, _max_pool, name=f"{_name}_xla")
    define_op(f"adaptive_{_name}", inputs=["x"], outputs=["y", "indices"],
              attrs=[Attr("output_size", "int64_list")], infer=_adaptive_max_infer(_nd),
              sbp=_split_sbp,
              doc=f"{_nd}-d adaptive max pooling, {_DIMS[_nd]}; also the flat argmax indices")
    register_kernel(f"adaptive_{_name}", _adaptive_max_pool, name=f"adaptive_{_name}_xla")
    define_op(f"{_name}_grad", inputs=["dy", "indices"], outputs=["dx"],
              attrs=[Attr("input_size", "int64_list")], infer=_max_grad_infer(_nd),
              sbp=_scatter_sbp,
              doc=f"the gradient of {_name} and adaptive_{_name}: dy added into the input "
                  f"positions of the maxima")
    register_kernel(f"{_name}_grad", _max_pool_grad, name=f"{_name}_grad_xla")

del _nd, _name, _infer, _grad_infer
