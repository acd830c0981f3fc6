"""Functor of ``interpolate`` (``jflow/ops/upsample.py``): PyTorch's size / scale_factor /
mode rules for 3-d and 4-d inputs, then the upsample2d op.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops import get
from ...tensor import Tensor
from ..registry import functor

_upsample2d = get("upsample2d").apply
_reshape = get("reshape").apply


_INTERP_MODES = {1: ("nearest", "nearest-exact", "linear"),
                 2: ("nearest", "nearest-exact", "bilinear")}


@functor("Interpolate")
def interpolate(input: Tensor, size: Any, scale_factor: Any, mode: str, align_corners: Any,
                recompute_scale_factor: Any, antialias: bool) -> Tensor:
    """torch.nn.functional.interpolate for 3-d (N, C, L: 'nearest', 'nearest-exact',
    'linear') and 4-d (N, C, H, W: 'nearest', 'nearest-exact', 'bilinear') inputs. Exactly one
    of ``size`` / ``scale_factor``; the output size is ``floor(in * scale_factor)``, and the
    scale factor (unless ``recompute_scale_factor``) gives the source coordinates, as
    PyTorch."""
    fname = "interpolate"
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    shape = tuple(input._value.shape)
    nd = len(shape) - 2
    if nd not in _INTERP_MODES:
        raise NotImplementedError(f"{fname}(): jflow supports 3-d and 4-d inputs, got shape "
                                  f"{list(shape)}")
    if mode not in _INTERP_MODES[nd]:
        known = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear",
                 "area")
        if mode in known:
            raise NotImplementedError(f"{fname}(): mode {mode!r} is not supported for a "
                                      f"{nd + 2}-d input; supported: {list(_INTERP_MODES[nd])}")
        raise ValueError(f"{fname}(): mode must be one of {list(known)}, got {mode!r}")
    if antialias:
        raise NotImplementedError(f"{fname}(): antialias=True is not supported by jflow")
    if mode.startswith("nearest"):
        if align_corners is not None:
            raise ValueError(f"{fname}(): align_corners option can only be set with the "
                             f"interpolating modes: linear | bilinear | bicubic | trilinear")
        align_corners = False
    align_corners = bool(align_corners)
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{fname}(): exactly one of size or scale_factor should be defined, "
                         f"got size={size} and scale_factor={scale_factor}")
    in_sizes = shape[2:]
    if size is not None:
        out = (int(size),) * nd if isinstance(size, int) else tuple(int(v) for v in size)
        if len(out) != nd:
            raise ValueError(f"{fname}(): size must be an int or {nd} ints for a "
                             f"{nd + 2}-d input, got {list(out)}")
        scales = (0.0,) * nd
    else:
        sf = (float(scale_factor),) * nd if isinstance(scale_factor, (int, float)) else \
            tuple(float(v) for v in scale_factor)
        if len(sf) != nd:
            raise ValueError(f"{fname}(): scale_factor must be a float or {nd} floats for a "
                             f"{nd + 2}-d input, got {list(sf)}")
        if any(not v > 0 for v in sf):
            raise ValueError(f"{fname}(): scale_factor must be positive, got {list(sf)}")
        out = tuple(int(np.floor(float(n) * v)) for n, v in zip(in_sizes, sf))
        scales = (0.0,) * nd if recompute_scale_factor else sf
    if any(o <= 0 for o in out):
        raise ValueError(f"{fname}(): input and output sizes should be greater than 0, but "
                         f"got input {list(in_sizes)} and output {list(out)}")
    x = input
    if nd == 1:  # a unit height dimension
        x = _reshape(x, shape=shape[:2] + (1,) + shape[2:])
        out, scales = (1,) + out, (0.0,) + scales
    y = _upsample2d(x, output_size=out, mode="bilinear" if mode == "linear" else mode,
                    scales=scales, align_corners=align_corners)
    if nd == 1:
        y = _reshape(y, shape=shape[:2] + out[1:])
    return y
