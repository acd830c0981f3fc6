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
