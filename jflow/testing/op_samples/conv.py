"""Checker samples for jflow/ops/conv.py (conv2d and its two gradient ops).

The reference convolution is a direct float64 NumPy loop over output positions (einsum per
window and group); the gradient references are the same loop run as a scatter (the adjoint).
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(23)


def _f(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _windows(xs, ws, stride, padding, dilation):
    """(padded input shape, output H, W, and for each output position the row/col indices)."""
    hp = xs[2] + padding[0] + padding[1]
    wp = xs[3] + padding[2] + padding[3]
    kh, kw = ws[2], ws[3]
    oh = (hp - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wp - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    return hp, wp, oh, ow


def _conv2d_ref(x, w, stride, padding, dilation, groups=1):
    dt = np.asarray(x).dtype
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, c = x.shape[:2]
    o, cg, kh, kw = w.shape
    hp, wp, oh, ow = _windows(x.shape, w.shape, stride, padding, dilation)
    xp = np.zeros((n, c, hp, wp))
    xp[:, :, padding[0]:padding[0] + x.shape[2], padding[2]:padding[2] + x.shape[3]] = x
    og = o // groups
    y = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = i * stride[0] + dilation[0] * np.arange(kh)
            cols = j * stride[1] + dilation[1] * np.arange(kw)
            win = xp[:, :, rows][:, :, :, cols]            # (n, c, kh, kw)
            for g in range(groups):
                y[:, g * og:(g + 1) * og, i, j] = np.einsum(
                    "nchw,ochw->no", win[:, g * cg:(g + 1) * cg], w[g * og:(g + 1) * og])
    return y.astype(dt)


def _adjoints(x_shape, w_shape, x, w, dy, stride, padding, dilation, groups):
    """(dx, dw) of <dy, conv2d(x, w)> by the scatter form of the loop above."""
    n, c = x_shape[:2]
    o, cg, kh, kw = w_shape
    hp, wp, oh, ow = _windows(x_shape, w_shape, stride, padding, dilation)
    og = o // groups
    dxp = np.zeros((n, c, hp, wp))
    dw = np.zeros(w_shape)
    xp = None
    if x is not None:
        xp = np.zeros((n, c, hp, wp))
        xp[:, :, padding[0]:padding[0] + x_shape[2], padding[2]:padding[2] + x_shape[3]] = x
    for i in range(oh):
        for j in range(ow):
            rows = i * stride[0] + dilation[0] * np.arange(kh)
            cols = j * stride[1] + dilation[1] * np.arange(kw)
            for g in range(groups):
                d = dy[:, g * og:(g + 1) * og, i, j]         # (n, og)
                if w is not None:
                    contrib = np.einsum("no,ochw->nchw", d, w[g * og:(g + 1) * og])
                    dxp[np.ix_(range(n), range(g * cg, (g + 1) * cg), rows, cols)] += contrib
                if xp is not None:
                    win = xp[np.ix_(range(n), range(g * cg, (g + 1) * cg), rows, cols)]
                    dw[g * og:(g + 1) * og] += np.einsum("no,nchw->ochw", d, win)
    dx = dxp[:, :, padding[0]:padding[0] + x_shape[2], padding[2]:padding[2] + x_shape[3]]
    return dx, dw


def _input_grad_ref(dy, w, input_hw, stride, padding, dilation, groups=1):
    dt = np.asarray(dy).dtype
    xs = (np.shape(dy)[0], np.shape(w)[1] * groups) + tuple(input_hw)
    dx, _ = _adjoints(xs, np.shape(w), None, np.asarray(w, np.float64),
                      np.asarray(dy, np.float64), stride, padding, dilation, groups)
    return dx.astype(dt)


def _weight_grad_ref(x, dy, kernel_size, stride, padding, dilation, groups=1):
    dt = np.asarray(x).dtype
    ws = (np.shape(dy)[1], np.shape(x)[1] // groups) + tuple(kernel_size)
    _, dw = _adjoints(np.shape(x), ws, np.asarray(x, np.float64), None,
                      np.asarray(dy, np.float64), stride, padding, dilation, groups)
    return dw.astype(dt)


_A = {"stride": [1, 1], "padding": [0, 0, 0, 0], "dilation": [1, 1], "groups": 1}
_B = {"stride": [2, 1], "padding": [1, 1, 0, 2], "dilation": [1, 2], "groups": 1}
_G = {"stride": [1, 2], "padding": [1, 0, 1, 1], "dilation": [1, 1], "groups": 2}

register_samples("conv2d", [
    Sample([_f(2, 2, 5, 5), _f(3, 2, 3, 3)], dict(_A), name="plain"),
    Sample([_f(2, 2, 5, 5, dtype=np.float64), _f(2, 2, 2, 3, dtype=np.float64)], dict(_B),
           name="stride, asymmetric padding, dilation"),
    Sample([_f(1, 4, 4, 5), _f(4, 2, 2, 2)], dict(_G), name="groups=2"),
    Sample([_f(2, 2, 4, 4, dtype=np.float16), _f(2, 2, 3, 3, dtype=np.float16)], dict(_A),
           grad=False, name="float16 (no finite differences)"),
], _conv2d_ref, errors=[
    ErrorSample([_f(2, 3, 5, 5), _f(3, 2, 3, 3)], dict(_A), ValueError, "channels"),
    ErrorSample([_f(2, 2, 5), _f(3, 2, 3, 3)], dict(_A), ValueError, "4-d"),
    ErrorSample([_f(1, 2, 2, 2), _f(3, 2, 3, 3)], dict(_A), ValueError, "larger than"),
    ErrorSample([_f(2, 2, 5, 5), _f(3, 2, 3, 3, dtype=np.float64)], dict(_A), TypeError, "dtype"),
    ErrorSample([_f(2, 2, 5, 5), _f(3, 2, 3, 3)], {**_A, "stride": [0, 1]}, ValueError,
                "stride"),
    ErrorSample([_f(1, 4, 4, 5), _f(3, 2, 2, 2)], dict(_G), ValueError, "divisible"),
])

register_samples("conv2d_input_grad", [
    Sample([_f(2, 3, 3, 3), _f(3, 2, 3, 3)], {**_A, "input_hw": [5, 5]}, name="plain"),
    Sample([_f(2, 2, 3, 3, dtype=np.float64), _f(2, 2, 2, 3, dtype=np.float64)],
           {**_B, "input_hw": [5, 5]}, name="stride, padding, dilation"),
    Sample([_f(1, 4, 4, 3), _f(4, 2, 2, 2)], {**_G, "input_hw": [4, 5]}, name="groups"),
], _input_grad_ref, errors=[
    ErrorSample([_f(2, 3, 2, 2), _f(3, 2, 3, 3)], {**_A, "input_hw": [5, 5]},
                ValueError, "does not match"),
])

register_samples("conv2d_weight_grad", [
    Sample([_f(2, 2, 5, 5), _f(2, 3, 3, 3)], {**_A, "kernel_size": [3, 3]}, name="plain"),
    Sample([_f(2, 2, 5, 5, dtype=np.float64), _f(2, 2, 3, 3, dtype=np.float64)],
           {**_B, "kernel_size": [2, 3]}, name="stride, padding, dilation"),
    Sample([_f(1, 4, 4, 5), _f(1, 4, 4, 3)], {**_G, "kernel_size": [2, 2]}, name="groups"),
], _weight_grad_ref, errors=[
    ErrorSample([_f(2, 2, 5, 5), _f(2, 3, 2, 2)], {**_A, "kernel_size": [3, 3]},
                ValueError, "does not match"),
])


def _conv_transpose_ref(x, w, stride, padding, output_padding, dilation, groups=1):
    """Direct scatter: input pixel (i, j) of channel ci adds x * w[ci, co] at output
    (i s - p + kh d, j s - p + kw d) of channel co of ci's group."""
    dt = np.asarray(x).dtype
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, cin, h, wd = x.shape
    _, cog, kh, kw = w.shape
    oh = (h - 1) * stride[0] - 2 * padding[0] + dilation[0] * (kh - 1) + output_padding[0] + 1
    ow = (wd - 1) * stride[1] - 2 * padding[1] + dilation[1] * (kw - 1) + output_padding[1] + 1
    y = np.zeros((n, cog * groups, oh, ow))
    cig = cin // groups
    for ci in range(cin):
        g = ci // cig
        for i in range(h):
            for j in range(wd):
                for a in range(kh):
                    for b in range(kw):
                        r = i * stride[0] - padding[0] + a * dilation[0]
                        c = j * stride[1] - padding[1] + b * dilation[1]
                        if 0 <= r < oh and 0 <= c < ow:
                            y[:, g * cog:(g + 1) * cog, r, c] += \
                                x[:, ci, i, j][:, None] * w[ci, :, a, b][None, :]
    return y.astype(dt)


_T1 = {"stride": [1, 1], "padding": [0, 0], "output_padding": [0, 0], "dilation": [1, 1],
       "groups": 1}
_T2 = {"stride": [2, 3], "padding": [1, 0], "output_padding": [1, 2], "dilation": [1, 1],
       "groups": 1}
_T3 = {"stride": [1, 2], "padding": [0, 1], "output_padding": [1, 0], "dilation": [2, 1],
       "groups": 2}

register_samples("conv_transpose2d", [
    Sample([_f(2, 2, 3, 3), _f(2, 3, 2, 2)], dict(_T1), name="plain"),
    Sample([_f(1, 2, 3, 2, dtype=np.float64), _f(2, 2, 3, 2, dtype=np.float64)], dict(_T2),
           name="stride, padding, output_padding"),
    # output_padding 1 > padding 0 with stride 1 (allowed by dilation 2): a zero row at the end
    Sample([_f(1, 4, 2, 3), _f(4, 1, 2, 2)], dict(_T3), name="groups, dilation"),
    Sample([_f(1, 2, 3, 3, dtype=np.float16), _f(2, 2, 2, 2, dtype=np.float16)], dict(_T1),
           grad=False, name="float16 (no finite differences)"),
], _conv_transpose_ref, errors=[
    ErrorSample([_f(1, 3, 3, 3), _f(2, 3, 2, 2)], dict(_T1), ValueError, "channels"),
    ErrorSample([_f(1, 2, 3, 3), _f(2, 3, 2, 2)], {**_T1, "output_padding": [1, 0]},
                ValueError, "output_padding must be smaller"),
    ErrorSample([_f(1, 2, 3, 3), _f(2, 3, 2, 2, dtype=np.float64)], dict(_T1), TypeError,
                "dtype"),
    ErrorSample([_f(1, 4, 3, 3), _f(4, 1, 2, 2)], {**_T1, "groups": 3}, ValueError,
                "divisible"),
    ErrorSample([_f(2, 3, 3), _f(2, 3, 2, 2)], dict(_T1), ValueError, "4-d"),
])


def _pool_size(n, k, s, p, d=1, ceil_mode=False):
    """PyTorch's pooling_output_shape: ceil_mode rounds up, but the last window must start
    inside the input or its left padding."""
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    o = num // s + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def _avg_pool_mat(xs, kernel_size, stride, padding, count_include_pad, ceil_mode=False,
                  divisor_override=0):
    """The (out H*W, in H*W) averaging matrix of avg_pool2d, built by PyTorch's loop (the
    window clipped to input + padding gives the count_include_pad divisor)."""
    h, w = xs[2], xs[3]
    oh = _pool_size(h, kernel_size[0], stride[0], padding[0], ceil_mode=ceil_mode)
    ow = _pool_size(w, kernel_size[1], stride[1], padding[1], ceil_mode=ceil_mode)
    m = np.zeros((oh * ow, h * w))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * stride[0] - padding[0], j * stride[1] - padding[1]
            r1 = min(r0 + kernel_size[0], h + padding[0])
            c1 = min(c0 + kernel_size[1], w + padding[1])
            pool_size = (r1 - r0) * (c1 - c0)
            r0, c0, r1, c1 = max(r0, 0), max(c0, 0), min(r1, h), min(c1, w)
            if divisor_override:
                cnt = divisor_override
            else:
                cnt = pool_size if count_include_pad else (r1 - r0) * (c1 - c0)
            for r in range(r0, r1):
                for c in range(c0, c1):
                    m[i * ow + j, r * w + c] += 1.0 / cnt
    return m, oh, ow


def _avg_pool_ref(x, kernel_size, stride, padding, count_include_pad=True, ceil_mode=False,
                  divisor_override=0):
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    m, oh, ow = _avg_pool_mat(x.shape, kernel_size, stride, padding, count_include_pad,
                              ceil_mode, divisor_override)
    y = np.einsum("ok,nck->nco", m, x.reshape(x.shape[0], x.shape[1], -1))
    return y.reshape(x.shape[:2] + (oh, ow)).astype(dt)


def _avg_pool_grad_ref(dy, input_hw, kernel_size, stride, padding, count_include_pad=True,
                       ceil_mode=False, divisor_override=0):
    dt = np.asarray(dy).dtype
    dy = np.asarray(dy, np.float64)
    xs = dy.shape[:2] + tuple(input_hw)
    m, _, _ = _avg_pool_mat(xs, kernel_size, stride, padding, count_include_pad, ceil_mode,
                            divisor_override)
    dx = np.einsum("ok,nco->nck", m, dy.reshape(dy.shape[0], dy.shape[1], -1))
    return dx.reshape(xs).astype(dt)


_P1 = {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0], "count_include_pad": True}
_P2 = {"kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 1], "count_include_pad": False}
_P3 = {**_P2, "count_include_pad": True}
# ceil_mode on a (6, 3) input: H gets 3 windows (the last one past the end), W 2 (a third
# would start in the right padding and is dropped); the divisor counts only cells inside
# input + padding
_P4 = {"kernel_size": [3, 2], "stride": [2, 2], "padding": [0, 1], "count_include_pad": True,
       "ceil_mode": True}
_P5 = {**_P4, "count_include_pad": False}
_P6 = {**_P4, "divisor_override": 3}

register_samples("avg_pool2d", [
    Sample([_f(2, 2, 5, 5)], dict(_P1), name="2x2, stride 2"),
    Sample([_f(1, 3, 5, 4, dtype=np.float64)], dict(_P2), name="padding, count_include_pad off"),
    Sample([_f(1, 2, 5, 4)], dict(_P3), name="padding, count_include_pad on"),
    Sample([_f(1, 2, 4, 4, dtype=np.float16)], dict(_P1), grad=False, name="float16"),
    Sample([_f(1, 2, 6, 3)], dict(_P4), name="ceil_mode, count_include_pad on"),
    Sample([_f(1, 2, 6, 3, dtype=np.float64)], dict(_P5), name="ceil_mode, count_include_pad off"),
    Sample([_f(1, 2, 6, 3)], dict(_P6), name="ceil_mode, divisor_override"),
], _avg_pool_ref, errors=[
    ErrorSample([_f(2, 5, 5)], dict(_P1), ValueError, "4-d"),
    ErrorSample([_f(1, 1, 5, 5)], {**_P1, "padding": [2, 0]}, ValueError, "half the kernel"),
    ErrorSample([np.ones((1, 1, 4, 4), np.int64)], dict(_P1), TypeError, "floating"),
])

register_samples("avg_pool2d_grad", [
    Sample([_f(2, 2, 2, 2)], {**_P1, "input_hw": [5, 5]}, name="2x2, stride 2"),
    Sample([_f(1, 3, 3, 5, dtype=np.float64)], {**_P2, "input_hw": [5, 4]}, name="padding"),
    Sample([_f(1, 2, 3, 5)], {**_P3, "input_hw": [5, 4]}, name="count_include_pad"),
    Sample([_f(1, 2, 3, 2)], {**_P5, "input_hw": [6, 3]}, name="ceil_mode"),
    Sample([_f(1, 2, 3, 2)], {**_P6, "input_hw": [6, 3]}, name="divisor_override"),
], _avg_pool_grad_ref, errors=[
    ErrorSample([_f(2, 2, 3, 3)], {**_P1, "input_hw": [5, 5]}, ValueError, "does not match"),
])


def _max_pool_ref(x, kernel_size, stride, padding, dilation, ceil_mode=False):
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    n, c, h, w = x.shape
    oh = _pool_size(h, kernel_size[0], stride[0], padding[0], dilation[0], ceil_mode)
    ow = _pool_size(w, kernel_size[1], stride[1], padding[1], dilation[1], ceil_mode)
    y = np.zeros((n, c, oh, ow))
    idx = np.zeros((n, c, oh, ow), np.int64)
    for a in range(n):
        for b in range(c):
            for i in range(oh):
                for j in range(ow):
                    best, bi = -np.inf, 0
                    for u in range(kernel_size[0]):
                        for v in range(kernel_size[1]):
                            r = i * stride[0] - padding[0] + u * dilation[0]
                            q = j * stride[1] - padding[1] + v * dilation[1]
                            if 0 <= r < h and 0 <= q < w and x[a, b, r, q] > best:
                                best, bi = x[a, b, r, q], r * w + q
                    y[a, b, i, j], idx[a, b, i, j] = best, bi
    return y.astype(dt), idx


def _max_pool_grad_ref(dy, indices, input_hw):
    dt = np.asarray(dy).dtype
    dy = np.asarray(dy, np.float64)
    n, c = dy.shape[:2]
    out = np.zeros((n, c, input_hw[0] * input_hw[1]))
    for a in range(n):
        for b in range(c):
            np.add.at(out[a, b], np.asarray(indices)[a, b].ravel(), dy[a, b].ravel())
    return out.reshape((n, c) + tuple(input_hw)).astype(dt)


_M1 = {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0], "dilation": [1, 1]}
_M2 = {"kernel_size": [3, 2], "stride": [1, 2], "padding": [1, 1], "dilation": [1, 1]}
_M3 = {"kernel_size": [2, 2], "stride": [1, 1], "padding": [0, 1], "dilation": [2, 1]}

register_samples("max_pool2d", [
    Sample([_f(2, 2, 5, 5)], dict(_M1), name="2x2, stride 2"),
    Sample([_f(1, 2, 5, 4, dtype=np.float64)], dict(_M2), name="overlapping, padding"),
    Sample([_f(1, 2, 5, 4)], dict(_M3), name="dilation"),
    Sample([_f(1, 2, 6, 4)], {**_M2, "stride": [2, 3], "ceil_mode": True},
           name="ceil_mode (partial last windows)"),
], _max_pool_ref, errors=[
    ErrorSample([_f(2, 5, 5)], dict(_M1), ValueError, "4-d"),
    ErrorSample([_f(1, 1, 5, 5)], {**_M1, "padding": [2, 0]}, ValueError, "half the kernel"),
])

_I1 = _max_pool_ref(_f(2, 2, 5, 5), **_M1)[1]
_I2 = _max_pool_ref(_f(1, 2, 5, 4), **_M2)[1]

register_samples("max_pool2d_grad", [
    Sample([_f(2, 2, 2, 2), _I1], {"input_hw": [5, 5]}, name="disjoint windows"),
    Sample([_f(*_I2.shape, dtype=np.float64), _I2], {"input_hw": [5, 4]},
           name="overlapping windows (indices repeat)"),
], _max_pool_grad_ref, errors=[
    ErrorSample([_f(2, 2, 2, 2), _I2], {"input_hw": [5, 5]}, ValueError, "indices of its shape"),
])


def _batch_norm_ref(x, weight=None, bias=None, eps=1e-5):
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    c = x.shape[1]
    rows = np.moveaxis(x, 1, 0).reshape(c, -1)
    mean = rows.mean(axis=1)
    r = 1.0 / np.sqrt(((rows - mean[:, None]) ** 2).mean(axis=1) + eps)
    ps = (1, c) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(ps)) * r.reshape(ps)
    if weight is not None:
        y = y * np.asarray(weight, np.float64).reshape(ps)
    if bias is not None:
        y = y + np.asarray(bias, np.float64).reshape(ps)
    return y.astype(dt), mean.astype(dt), r.astype(dt)


register_samples("batch_norm", [
    Sample([_f(3, 2, 2, 2), _f(2), _f(2)], {}, name="4-d"),
    Sample([_f(4, 3, dtype=np.float64), None, None], {"eps": 1e-3}, name="2-d, no affine"),
    Sample([_f(2, 3, 4), _f(3), None], {}, name="3-d, weight only"),
    Sample([_f(4, 2, 3, dtype=np.float16), _f(2, dtype=np.float16), _f(2, dtype=np.float16)],
           {}, grad=False, name="float16"),
], _batch_norm_ref, errors=[
    ErrorSample([_f(4), None, None], {}, ValueError, "at least 2 dims"),
    ErrorSample([_f(2, 3, 4), _f(4), None], {}, ValueError, "weight must have"),
    ErrorSample([_f(2, 3, 4), _f(3, dtype=np.float64), None], {}, TypeError, "dtype"),
])


# -- upsample2d / upsample2d_grad (jflow/ops/upsample.py) ----------------------------------------

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
