"""Interpolation ops behind ``flow.nn.functional.interpolate``: ``upsample2d`` and
its transpose ``upsample2d_grad`` — definition, xla kernel and SBP signatures.

``upsample2d(x)`` resizes the (H, W) dims of an NCHW input to ``output_size`` with ``mode``
'nearest', 'nearest-exact' or 'bilinear' (``align_corners``). ``scales`` (2 doubles, 0 = none)
are the user's scale factors: as in PyTorch they, not the size ratio, give the source
coordinates when set. The op is separable and linear: along each axis every output row is
``l0 * x[i0] + l1 * x[i1]`` with constant indices and weights computed at trace time by
PyTorch's formulas (in the compute dtype: float32 for float32 and narrower, float64 for
float64), so results match PyTorch's CPU kernels to rounding. ``upsample2d_grad(dy)`` is the
transpose (a scatter-add); each op's backward is the other, so derivatives of any order work.
1-d interpolation (3-d input) runs this op on a unit height dimension (functor).
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

MODES = ("nearest", "nearest-exact", "bilinear")


def _compute_dtype(dtype: Any) -> Any:
    return np.float64 if np.dtype(dtype) == np.float64 else np.float32


def axis_plan(n_in: int, n_out: int, mode: str, align_corners: bool, scale: float,
              dtype: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(i0, i1, l0, l1) along one axis: output j is ``l0[j] x[i0[j]] + l1[j] x[i1[j]]``.

    PyTorch's formulas (aten/src/ATen/native/UpSample.h): nearest uses a float32 source
    scale (``1 / scale`` when a scale factor is given, else ``n_in / n_out``) with the
    legacy shortcuts for equal and doubled sizes; bilinear the source index
    ``scale * (j + 0.5) - 0.5`` clamped at 0 (``scale * j`` with align_corners) in the
    compute dtype."""
    j = np.arange(n_out)
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
        idx = np.minimum(idx, n_in - 1)
        one = np.ones(n_out, np.float64)
        return idx, idx, one, np.zeros(n_out, np.float64)
    f = _compute_dtype(dtype)
    if n_out == n_in and not align_corners:
        return j, j, np.ones(n_out, np.float64), np.zeros(n_out, np.float64)
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
    return i0, i1, l0.astype(np.float64), l1.astype(np.float64)


def _check(x_shape: Any, out_hw: Any, mode: str, scales: Any) -> None:
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


def _resize(x: Any, output_size: Any, mode: str, scales: Any, align_corners: bool) -> Any:
    xf = x.astype(np.float32) if x.dtype in (np.dtype(np.float16), np.dtype(jnp.bfloat16)) else x
    y = xf
    for ax in (3, 2):  # W first, as PyTorch's kernel nests H outside W
        i0, i1, l0, l1 = axis_plan(x.shape[ax], output_size[ax - 2], mode, align_corners,
                                   scales[ax - 2], xf.dtype)
        bshape = [1, 1, 1, 1]
        bshape[ax] = -1
        a = jnp.take(y, jnp.asarray(i0), axis=ax)
        if mode == "bilinear" and np.any(l1 != 0):
            a = a * jnp.asarray(l0, xf.dtype).reshape(bshape) + \
                jnp.take(y, jnp.asarray(i1), axis=ax) * jnp.asarray(l1, xf.dtype).reshape(bshape)
        y = a
    return y.astype(x.dtype)


def _upsample_infer(x: Any, output_size: Any, mode: str, scales: Any,
                    align_corners: bool) -> Any:
    check_dtype(x, FLOAT, "input")
    _check(x.shape, output_size, mode, scales)
    return desc(tuple(x.shape[:2]) + tuple(output_size), x.dtype)


def _sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Batch or channel split; linear (partial sums stay partial)."""
    return [Signature((S(0),), (S(0),)), Signature((S(1),), (S(1),)), Signature((P,), (P,))]


_ATTRS = [Attr("mode", "string", "nearest"), Attr("scales", "float_list", (0.0, 0.0)),
          Attr("align_corners", "bool", False)]

define_op("upsample2d", inputs=["x"], outputs=["y"],
          attrs=[Attr("output_size", "int64_list")] + _ATTRS, infer=_upsample_infer, sbp=_sbp,
          doc="resize (H, W) of an NCHW input: nearest, nearest-exact or bilinear")
register_kernel("upsample2d", _resize, name="upsample2d_xla")


def _grad_infer(dy: Any, input_hw: Any, mode: str, scales: Any, align_corners: bool) -> Any:
    check_dtype(dy, FLOAT, "grad")
    if len(dy.shape) != 4 or len(input_hw) != 2:
        raise ValueError(f"expected a 4-d grad and 2 ints input_hw, got shape "
                         f"{tuple(dy.shape)} and {list(input_hw)}")
    xs = tuple(dy.shape[:2]) + tuple(input_hw)
    _check(xs, tuple(dy.shape[2:]), mode, scales)
    return desc(xs, dy.dtype)


def _resize_grad(dy: Any, input_hw: Any, mode: str, scales: Any, align_corners: bool) -> Any:
    x0 = jnp.zeros(tuple(dy.shape[:2]) + tuple(input_hw), dy.dtype)
    _, vjp = jax.vjp(lambda x: _resize(x, tuple(dy.shape[2:]), mode, scales, align_corners),
                     x0)
    return vjp(dy)[0]


define_op("upsample2d_grad", inputs=["dy"], outputs=["dx"],
          attrs=[Attr("input_hw", "int64_list")] + _ATTRS, infer=_grad_infer, sbp=_sbp,
          doc="the gradient (transpose) of upsample2d with respect to its input")
register_kernel("upsample2d_grad", _resize_grad, name="upsample2d_grad_xla")
