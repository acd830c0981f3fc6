"""Checker samples for jflow/ops/upsample.py (upsample2d and its gradient op).

The references evaluate PyTorch's source-index formulas per output index in the float type
of its CPU kernels, then sum the weighted sources (the gradient is the same sum scattered).
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(31)


def _f(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _src_1d(j, n_in, n_out, mode, align_corners, scale, ft):
    """[(source index, weight)] of output index j along one axis, PyTorch's formulas
    (aten/src/ATen/native/UpSample.h) evaluated in the float type ``ft`` as its CPU kernels
    do (float32 for nearest; the input's float type for linear)."""
    f32 = np.float32
    if mode in ("nearest", "nearest-exact"):
        scale_f = f32(1.0 / scale) if scale > 0 else f32(n_in) / f32(n_out)
        if mode == "nearest":
            if n_out == n_in:
                i = j
            elif n_out == 2 * n_in:
                i = j // 2
            else:
                i = int(np.floor(f32(j) * scale_f))
        else:
            i = int(np.floor(f32((j + 0.5) * float(scale_f))))
        return [(min(i, n_in - 1), 1.0)]
    if n_out == n_in and not align_corners:
        return [(j, 1.0)]
    if align_corners:
        ratio = ft(n_in - 1) / ft(n_out - 1) if n_out > 1 else ft(0)
        real = ratio * ft(j)
    else:
        ratio = ft(1.0 / scale) if scale > 0 else ft(n_in) / ft(n_out)
        real = max(ratio * (ft(j) + ft(0.5)) - ft(0.5), ft(0))
    i0 = min(int(np.floor(real)), n_in - 1)
    lam1 = min(max(real - ft(i0), ft(0)), ft(1))
    i1 = i0 + (1 if i0 < n_in - 1 else 0)
    return [(i0, float(ft(1) - lam1)), (i1, float(lam1))]


def _upsample_pairs(in_hw, out_hw, mode, scales, align_corners, dtype):
    ft = np.float64 if np.dtype(dtype) == np.float64 else np.float32
    rows = [_src_1d(i, in_hw[0], out_hw[0], mode, align_corners, scales[0], ft)
            for i in range(out_hw[0])]
    cols = [_src_1d(j, in_hw[1], out_hw[1], mode, align_corners, scales[1], ft)
            for j in range(out_hw[1])]
    return rows, cols


def _upsample_ref(x, output_size, mode="nearest", scales=(0.0, 0.0), align_corners=False):
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    rows, cols = _upsample_pairs(x.shape[2:], output_size, mode, scales, align_corners, dt)
    y = np.zeros(x.shape[:2] + tuple(output_size))
    for i, rs in enumerate(rows):
        for j, cs in enumerate(cols):
            for r, a in rs:
                for c, b in cs:
                    y[:, :, i, j] += a * b * x[:, :, r, c]
    return y.astype(dt)


def _upsample_grad_ref(dy, input_hw, mode="nearest", scales=(0.0, 0.0), align_corners=False):
    dt = np.asarray(dy).dtype
    dy = np.asarray(dy, np.float64)
    rows, cols = _upsample_pairs(input_hw, dy.shape[2:], mode, scales, align_corners, dt)
    dx = np.zeros(dy.shape[:2] + tuple(input_hw))
    for i, rs in enumerate(rows):
        for j, cs in enumerate(cols):
            for r, a in rs:
                for c, b in cs:
                    dx[:, :, r, c] += a * b * dy[:, :, i, j]
    return dx.astype(dt)


_U1 = {"output_size": [5, 6], "mode": "nearest"}
_U2 = {"output_size": [5, 3], "mode": "bilinear", "align_corners": False}
_U3 = {"output_size": [5, 6], "mode": "bilinear", "align_corners": True}
_U4 = {"output_size": [4, 7], "mode": "bilinear", "scales": [1.5, 2.5]}
_U5 = {"output_size": [4, 7], "mode": "nearest-exact", "scales": [1.5, 2.5]}

register_samples("upsample2d", [
    Sample([_f(2, 2, 3, 3)], dict(_U1), name="nearest (H x5/3, W doubled)"),
    Sample([_f(1, 2, 3, 4, dtype=np.float64)], dict(_U2), name="bilinear, down in W"),
    Sample([_f(1, 2, 3, 3)], dict(_U3), name="bilinear, align_corners"),
    Sample([_f(1, 2, 3, 3)], dict(_U4), name="bilinear, scale factors"),
    Sample([_f(1, 2, 3, 3)], dict(_U5), name="nearest-exact, scale factors"),
    Sample([_f(1, 2, 3, 3, dtype=np.float16)], dict(_U3), grad=False, name="float16"),
], _upsample_ref, errors=[
    ErrorSample([_f(2, 3, 3)], dict(_U1), ValueError, "4-d"),
    ErrorSample([_f(1, 1, 3, 3)], {**_U1, "mode": "bicubic"}, ValueError, "mode must be"),
    ErrorSample([_f(1, 1, 3, 3)], {**_U1, "output_size": [0, 3]}, ValueError, "positive"),
    ErrorSample([np.ones((1, 1, 3, 3), np.int64)], dict(_U1), TypeError, "floating"),
])


def _g(attrs, input_hw):
    """upsample2d attrs -> upsample2d_grad attrs (the output size is dy's)."""
    return {**{k: v for k, v in attrs.items() if k != "output_size"}, "input_hw": input_hw}


register_samples("upsample2d_grad", [
    Sample([_f(2, 2, 5, 6)], _g(_U1, [3, 3]), name="nearest"),
    Sample([_f(1, 2, 5, 3, dtype=np.float64)], _g(_U2, [3, 4]), name="bilinear"),
    Sample([_f(1, 2, 5, 6)], _g(_U3, [3, 3]), name="bilinear, align_corners"),
    Sample([_f(1, 2, 4, 7)], _g(_U4, [3, 3]), name="bilinear, scale factors"),
], _upsample_grad_ref, errors=[
    ErrorSample([_f(1, 2, 5, 6)], _g(_U1, [3]), ValueError, "input_hw"),
])
