"""Checker samples for jflow/ops/upsample.py (upsample2d and its gradient op).

The references evaluate PyTorch's source-index formulas per output index in the float type
of its CPU kernels, then sum the weighted sources (the gradient is the same sum scattered).
The bicubic, area and antialias samples are float64, with a per-index float64 reference
written from the definitions (Keys' cubic kernel, adaptive average pooling windows, PIL's
normalised filters widened by the scale).
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(31)


def _f(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _keys(x, a):
    x = abs(x)
    if x < 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    if x < 2:
        return a * x ** 3 - 5 * a * x * x + 8 * a * x - 4 * a
    return 0.0


def _src_1d_more(j, n_in, n_out, mode, align_corners, scale, antialias):
    """[(source index, weight)] for bicubic, area and antialiased modes, in float64."""
    if mode == "area":
        a, b = int(np.floor(j * n_in / n_out)), int(np.ceil((j + 1) * n_in / n_out))
        return [(i, 1.0 / (b - a)) for i in range(a, b)]
    if align_corners:
        ratio = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        ratio = 1.0 / scale if scale > 0 else n_in / n_out
    if antialias and n_in == n_out:
        return [(j, 1.0)]
    if antialias:
        width = 1.0 if mode == "bilinear" else 2.0
        stretch = max(ratio, 1.0)
        center = ratio * (j + 0.5)
        first = max(int(center - width * stretch + 0.5), 0)
        last = min(int(center + width * stretch + 0.5), n_in)
        ws = []
        for i in range(first, last):
            d = (i + 0.5 - center) / stretch
            ws.append(max(0.0, 1 - abs(d)) if mode == "bilinear" else _keys(d, -0.5))
        tot = sum(ws)
        return [(first + k, w / tot) for k, w in enumerate(ws)]
    real = ratio * j if align_corners else ratio * (j + 0.5) - 0.5
    i0 = int(np.floor(real))
    return [(min(max(i0 + k, 0), n_in - 1), _keys(real - (i0 + k), -0.75))
            for k in (-1, 0, 1, 2)]


def _src_1d(j, n_in, n_out, mode, align_corners, scale, ft, antialias=False):
    """[(source index, weight)] of output index j along one axis, PyTorch's formulas
    (aten/src/ATen/native/UpSample.h) evaluated in the float type ``ft`` as its CPU kernels
    do (float32 for nearest; the input's float type for linear)."""
    if mode in ("bicubic", "area") or antialias:
        return _src_1d_more(j, n_in, n_out, mode, align_corners, scale, antialias)
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


def _upsample_pairs(in_hw, out_hw, mode, scales, align_corners, dtype, antialias=False):
    ft = np.float64 if np.dtype(dtype) == np.float64 else np.float32
    rows = [_src_1d(i, in_hw[0], out_hw[0], mode, align_corners, scales[0], ft, antialias)
            for i in range(out_hw[0])]
    cols = [_src_1d(j, in_hw[1], out_hw[1], mode, align_corners, scales[1], ft, antialias)
            for j in range(out_hw[1])]
    return rows, cols


def _upsample_ref(x, output_size, mode="nearest", scales=(0.0, 0.0), align_corners=False,
                  antialias=False):
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    rows, cols = _upsample_pairs(x.shape[2:], output_size, mode, scales, align_corners, dt,
                                 antialias)
    y = np.zeros(x.shape[:2] + tuple(output_size))
    for i, rs in enumerate(rows):
        for j, cs in enumerate(cols):
            for r, a in rs:
                for c, b in cs:
                    y[:, :, i, j] += a * b * x[:, :, r, c]
    return y.astype(dt)


def _upsample_grad_ref(dy, input_hw, mode="nearest", scales=(0.0, 0.0), align_corners=False,
                       antialias=False):
    dt = np.asarray(dy).dtype
    dy = np.asarray(dy, np.float64)
    rows, cols = _upsample_pairs(input_hw, dy.shape[2:], mode, scales, align_corners, dt,
                                 antialias)
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
_U6 = {"output_size": [5, 2], "mode": "bicubic", "align_corners": False}
_U7 = {"output_size": [4, 6], "mode": "bicubic", "align_corners": True}
_U8 = {"output_size": [2, 3], "mode": "area"}
_U9 = {"output_size": [2, 5], "mode": "bilinear", "antialias": True}
_U10 = {"output_size": [2, 3], "mode": "bicubic", "antialias": True, "align_corners": True}
_U11 = {"output_size": [5, 2], "mode": "bilinear", "antialias": True, "scales": [1.1, 0.5]}

register_samples("upsample2d", [
    Sample([_f(2, 2, 3, 3)], dict(_U1), name="nearest (H x5/3, W doubled)"),
    Sample([_f(1, 2, 3, 4, dtype=np.float64)], dict(_U2), name="bilinear, down in W"),
    Sample([_f(1, 2, 3, 3)], dict(_U3), name="bilinear, align_corners"),
    Sample([_f(1, 2, 3, 3)], dict(_U4), name="bilinear, scale factors"),
    Sample([_f(1, 2, 3, 3)], dict(_U5), name="nearest-exact, scale factors"),
    Sample([_f(1, 2, 3, 3, dtype=np.float16)], dict(_U3), grad=False, name="float16"),
    Sample([_f(1, 2, 3, 4, dtype=np.float64)], dict(_U6), name="bicubic"),
    Sample([_f(1, 2, 3, 3, dtype=np.float64)], dict(_U7), name="bicubic, align_corners"),
    Sample([_f(1, 2, 5, 7, dtype=np.float64)], dict(_U8), name="area"),
    Sample([_f(1, 2, 5, 4, dtype=np.float64)], dict(_U9), name="bilinear, antialias"),
    Sample([_f(1, 2, 7, 8, dtype=np.float64)], dict(_U10), name="bicubic, antialias"),
    Sample([_f(1, 2, 5, 4, dtype=np.float64)], dict(_U11),
           name="antialias, scale factor keeping a size (copied)"),
], _upsample_ref, errors=[
    ErrorSample([_f(2, 3, 3)], dict(_U1), ValueError, "4-d"),
    ErrorSample([_f(1, 1, 3, 3)], {**_U1, "mode": "trilinear"}, ValueError, "mode must be"),
    ErrorSample([_f(1, 1, 3, 3)], {**_U8, "antialias": True}, ValueError, "antialias"),
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
    Sample([_f(1, 2, 5, 2, dtype=np.float64)], _g(_U6, [3, 4]), name="bicubic"),
    Sample([_f(1, 2, 2, 3, dtype=np.float64)], _g(_U8, [5, 7]), name="area"),
    Sample([_f(1, 2, 2, 3, dtype=np.float64)], _g(_U10, [7, 8]), name="bicubic, antialias"),
], _upsample_grad_ref, errors=[
    ErrorSample([_f(1, 2, 5, 6)], _g(_U1, [3]), ValueError, "input_hw"),
])
