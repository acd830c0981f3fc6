"""Interpolation ops behind ``flow.nn.functional.interpolate``: ``upsample2d`` and
its transpose ``upsample2d_grad`` — definition, xla kernel and SBP signatures.

``upsample2d(x)`` resizes the (H, W) dims of an NCHW input to ``output_size`` with ``mode``
'nearest', 'nearest-exact', 'bilinear', 'bicubic' (``align_corners``) or 'area' (adaptive
average pooling), and ``antialias`` (bilinear / bicubic: PIL's widened filters when
downsampling). ``scales`` (2 doubles, 0 = none) are the user's scale factors: as in PyTorch
they, not the size ratio, give the source coordinates when set (not for 'area'). The op is
separable and linear: along each axis every output row is ``sum_k w[k] * x[i[k]]`` with
constant indices and weights computed at trace time by PyTorch's documented formulas
(``axis_taps``; in the compute dtype: float32 for float32 and narrower, float64 for float64),
so results match PyTorch's CPU kernels to rounding. ``upsample2d_grad(dy)`` is the transpose
(a scatter-add); each op's backward is the other, so derivatives of any order work. 1-d
interpolation (3-d input) runs this op on a unit height dimension (functor).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels.registry import register_kernel
from ..sharding.sbp import P, S, Signature
from .infer import FLOAT, check_dtype, desc
from .primitive import define_op
from .registry import Attr

MODES = ("nearest", "nearest-exact", "bilinear", "bicubic", "area")

#: PyTorch's cubic convolution coefficient (Keys' ``A``) for plain bicubic interpolation; the
#: antialiased bicubic filter uses PIL's ``-0.5``.
CUBIC_A = -0.75
CUBIC_A_AA = -0.5


def _compute_dtype(dtype: Any) -> Any:
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def _cubic(t: np.ndarray, a: float, f: Any) -> np.ndarray:
    """Keys' cubic convolution kernel at distances ``t`` (any sign), in the float type ``f``."""
    a = f(a)
    x = np.abs(t).astype(f)
    near = ((a + f(2)) * x - (a + f(3))) * x * x + f(1)
    far = ((a * x - f(5) * a) * x + f(8) * a) * x - f(4) * a
    return np.where(x < f(1), near, np.where(x < f(2), far, f(0))).astype(f)


def _source_scale(n_in: int, n_out: int, align_corners: bool, scale: float, f: Any) -> Any:
    """PyTorch's documented ratio between input and output coordinates along one axis."""
    if align_corners:
        return f(n_in - 1) / f(n_out - 1) if n_out > 1 else f(0)
    return f(1.0 / scale) if scale > 0 else f(n_in) / f(n_out)


def _pad_taps(rows: list[tuple[list[int], list[float]]]) -> tuple[np.ndarray, np.ndarray]:
    """Ragged per-output (indices, weights) -> (n_out, K) arrays padded with weight 0."""
    k = max(len(i) for i, _ in rows)
    idx = np.zeros((len(rows), k), np.int64)
    w = np.zeros((len(rows), k), np.float64)
    for j, (i, v) in enumerate(rows):
        idx[j, :len(i)] = i
        w[j, :len(v)] = v
    return idx, w


def axis_taps(n_in: int, n_out: int, mode: str, align_corners: bool, scale: float,
              antialias: bool, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """(idx, w), both (n_out, K), along one axis: output j is ``sum_k w[j, k] x[idx[j, k]]``.

    nearest / nearest-exact: PyTorch's float32 source scale (``1 / scale`` when a scale
    factor is given, else ``n_in / n_out``) with the legacy shortcuts for equal and doubled
    sizes. bilinear: source index ``s (j + 0.5) - 0.5`` clamped at 0 (``s j`` with
    align_corners) in the compute dtype. bicubic: the same index unclamped, four taps
    ``floor - 1 .. floor + 2`` clamped to the input, Keys' weights with ``A = -0.75``. area:
    adaptive average pooling's windows ``[floor(j n_in / n_out), ceil((j + 1) n_in / n_out))``.
    antialias (bilinear / bicubic): the filter (triangle, or cubic with ``A = -0.5``) centred
    at ``s (j + 0.5)`` and widened by ``s`` when downsampling, normalised to sum 1; an axis
    whose size does not change is copied (even with a scale factor), as PyTorch."""
    j = np.arange(n_out)
    one = np.ones((n_out, 1), np.float64)
    if mode in ("nearest", "nearest-exact"):
        f = np.float32
        s = f(1.0 / scale) if scale > 0 else f(n_in) / f(n_out)
        if mode == "nearest":
            if n_out == n_in:
                idx = j
            elif n_out == 2 * n_in:
                idx = j >> 1
            else:
                idx = np.floor(j.astype(f) * s).astype(np.int64)
        else:
            idx = np.floor(((j + 0.5) * np.float64(s)).astype(f)).astype(np.int64)
        return np.minimum(idx, n_in - 1)[:, None], one
    f = _compute_dtype(dtype)
    if mode == "area":
        rows = []
        for i in range(n_out):
            a, b = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
            rows.append((list(range(a, b)), [float(f(1) / f(b - a))] * (b - a)))
        return _pad_taps(rows)
    if antialias and n_out == n_in:
        return j[:, None], one  # PyTorch's antialiased kernels leave an unresized axis as is
    if antialias:
        s = _source_scale(n_in, n_out, align_corners, scale, f)
        size = 2 if mode == "bilinear" else 4
        support = f(size * 0.5) * s if s >= 1 else f(size * 0.5)
        inv = f(1) / s if s >= 1 else f(1)
        rows = []
        for i in range(n_out):
            center = f(float(s) * (i + 0.5))
            lo = max(int(float(center) - float(support) + 0.5), 0)
            hi = min(int(float(center) + float(support) + 0.5), n_in)
            t = f((np.arange(lo, hi) - float(center) + 0.5) * float(inv))
            if mode == "bilinear":
                w = np.maximum(f(1) - np.abs(t), f(0)).astype(f)
            else:
                w = _cubic(t, CUBIC_A_AA, f)
            tot = w.sum(dtype=f)
            w = (w / tot).astype(f) if tot != 0 else w
            rows.append((list(range(lo, hi)), [float(v) for v in w]))
        return _pad_taps(rows)
    if mode == "bicubic":
        s = _source_scale(n_in, n_out, align_corners, scale, f)
        src = s * j.astype(f) if align_corners else s * (j.astype(f) + f(0.5)) - f(0.5)
        i0 = np.floor(src).astype(np.int64)
        t = (src - i0.astype(f)).astype(f)
        taps = np.arange(-1, 3)
        w = _cubic(t[:, None] - taps[None, :].astype(f), CUBIC_A, f)
        return np.clip(i0[:, None] + taps[None, :], 0, n_in - 1), w.astype(np.float64)
    if n_out == n_in and not align_corners:
        return j[:, None], one
    if align_corners:
        s = f(n_in - 1) / f(n_out - 1) if n_out > 1 else f(0)
        src = s * j.astype(f)
    else:
        s = f(1.0 / scale) if scale > 0 else f(n_in) / f(n_out)
        src = np.maximum(s * (j.astype(f) + f(0.5)) - f(0.5), f(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    l1 = np.clip(src - i0.astype(f), f(0), f(1))
    i1 = i0 + (i0 < n_in - 1)
    l0 = f(1) - l1
    return np.stack([i0, i1], 1), np.stack([l0, l1], 1).astype(np.float64)


def _check(x_shape: Any, out_hw: Any, mode: str, scales: Any, antialias: bool = False) -> None:
    if len(x_shape) != 4:
        raise ValueError(f"expected a 4-d input (N, C, H, W), got shape {tuple(x_shape)}")
    if len(out_hw) != 2 or any(o <= 0 for o in out_hw):
        raise ValueError(f"output_size must be 2 positive ints, got {list(out_hw)}")
    if any(s <= 0 for s in x_shape[2:]):
        raise ValueError(f"input sizes must be positive, got shape {tuple(x_shape)}")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
    if len(scales) != 2 or any(s < 0 for s in scales):
        raise ValueError(f"scales must be 2 non-negative floats (0: none), got {list(scales)}")
    if antialias and mode not in ("bilinear", "bicubic"):
        raise ValueError(f"antialias is only defined for modes 'bilinear' and 'bicubic', got "
                         f"{mode!r}")


def _resize(x: Any, output_size: Any, mode: str, scales: Any, align_corners: bool,
            antialias: bool = False) -> Any:
    xf = x.astype(np.float32) if x.dtype in (np.dtype(np.float16), np.dtype(jnp.bfloat16)) else x
    y = xf
    for ax in (3, 2):  # W first, as PyTorch's kernel nests H outside W
        idx, w = axis_taps(x.shape[ax], output_size[ax - 2], mode, align_corners,
                           scales[ax - 2], antialias, xf.dtype)
        keep = np.any(w != 0, axis=0)
        keep[0] = True
        idx, w = idx[:, keep], w[:, keep]
        bshape = [1, 1, 1, 1]
        bshape[ax] = -1
        if w.shape[1] == 1 and np.all(w == 1):
            y = jnp.take(y, jnp.asarray(idx[:, 0]), axis=ax)
            continue
        acc = None
        for k in range(w.shape[1]):
            term = jnp.take(y, jnp.asarray(idx[:, k]), axis=ax) * \
                jnp.asarray(w[:, k], xf.dtype).reshape(bshape)
            acc = term if acc is None else acc + term
        y = acc
    return y.astype(x.dtype)


def _upsample_infer(x: Any, output_size: Any, mode: str, scales: Any,
                    align_corners: bool, antialias: bool) -> Any:
    check_dtype(x, FLOAT, "input")
    _check(x.shape, output_size, mode, scales, antialias)
    return desc(tuple(x.shape[:2]) + tuple(output_size), x.dtype)


def _sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Batch or channel split; linear (partial sums stay partial)."""
    return [Signature((S(0),), (S(0),)), Signature((S(1),), (S(1),)), Signature((P,), (P,))]


_ATTRS = [Attr("mode", "string", "nearest"), Attr("scales", "float_list", (0.0, 0.0)),
          Attr("align_corners", "bool", False), Attr("antialias", "bool", False)]

define_op("upsample2d", inputs=["x"], outputs=["y"],
          attrs=[Attr("output_size", "int64_list")] + _ATTRS, infer=_upsample_infer, sbp=_sbp,
          doc="resize (H, W) of an NCHW input: nearest, nearest-exact, bilinear, bicubic or "
              "area (antialias: bilinear / bicubic)")
register_kernel("upsample2d", _resize, name="upsample2d_xla")


def _grad_infer(dy: Any, input_hw: Any, mode: str, scales: Any, align_corners: bool,
                antialias: bool) -> Any:
    check_dtype(dy, FLOAT, "grad")
    if len(dy.shape) != 4 or len(input_hw) != 2:
        raise ValueError(f"expected a 4-d grad and 2 ints input_hw, got shape "
                         f"{tuple(dy.shape)} and {list(input_hw)}")
    xs = tuple(dy.shape[:2]) + tuple(input_hw)
    _check(xs, tuple(dy.shape[2:]), mode, scales, antialias)
    return desc(xs, dy.dtype)


def _resize_grad(dy: Any, input_hw: Any, mode: str, scales: Any, align_corners: bool,
                 antialias: bool) -> Any:
    x0 = jnp.zeros(tuple(dy.shape[:2]) + tuple(input_hw), dy.dtype)
    _, vjp = jax.vjp(lambda x: _resize(x, tuple(dy.shape[2:]), mode, scales, align_corners,
                                       antialias), x0)
    return vjp(dy)[0]


define_op("upsample2d_grad", inputs=["dy"], outputs=["dx"],
          attrs=[Attr("input_hw", "int64_list")] + _ATTRS, infer=_grad_infer, sbp=_sbp,
          doc="the gradient (transpose) of upsample2d with respect to its input")
register_kernel("upsample2d_grad", _resize_grad, name="upsample2d_grad_xla")
