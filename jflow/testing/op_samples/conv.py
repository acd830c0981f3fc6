"""Checker samples for jflow/ops/conv.py (conv2d/3d and their gradient ops, conv_transpose2d/3d,
im2col / col2im).

The reference convolution is a direct float64 NumPy loop over output positions (einsum per
window and group); the gradient references are the same loop run as a scatter (the adjoint).
"""

from __future__ import annotations

import itertools

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
_DW = {"stride": [2, 1], "padding": [1, 2, 0, 1], "dilation": [1, 2], "groups": 2}
_PW = {"stride": [2, 1], "padding": [0, 1, 1, 0], "dilation": [1, 1], "groups": 1}

#: the depthwise samples whose weight gradient runs as a loop over its taps (a 4x3 kernel:
#: ops/conv.py WEIGHT_GRAD_LOOP_TAPS), drawn from a stream of their own
_loop_rng = np.random.default_rng(41)


def _l(*shape):
    return _loop_rng.standard_normal(shape)

register_samples("conv2d", [
    Sample([_f(2, 2, 5, 5), _f(3, 2, 3, 3)], dict(_A), name="plain"),
    Sample([_f(2, 2, 5, 5, dtype=np.float64), _f(2, 2, 2, 3, dtype=np.float64)], dict(_B),
           name="stride, asymmetric padding, dilation"),
    Sample([_f(1, 4, 4, 5), _f(4, 2, 2, 2)], dict(_G), name="groups=2"),
    Sample([_f(2, 2, 4, 4, dtype=np.float16), _f(2, 2, 3, 3, dtype=np.float16)], dict(_A),
           grad=False, name="float16 (no finite differences)"),
    # the CPU kernel's two forms (ops/conv.py): depthwise as shifted slices (2 output
    # channels per input channel), 1x1 as a matrix product
    Sample([_f(1, 2, 5, 6, dtype=np.float64), _f(4, 1, 3, 2, dtype=np.float64)], dict(_DW),
           name="depthwise, multiplier 2"),
    Sample([_l(1, 2, 7, 8), _l(4, 1, 4, 3)], dict(_DW),
           name="depthwise 4x3, multiplier 2 (its weight gradient a loop over the taps)"),
    Sample([_f(2, 3, 5, 4, dtype=np.float64), _f(2, 3, 1, 1, dtype=np.float64)], dict(_PW),
           name="1x1, stride, padding"),
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
    Sample([_f(1, 4, 3, 5, dtype=np.float64), _f(4, 1, 3, 2, dtype=np.float64)],
           {**_DW, "input_hw": [5, 6]}, name="depthwise, multiplier 2"),
    Sample([_f(2, 2, 3, 5, dtype=np.float64), _f(2, 3, 1, 1, dtype=np.float64)],
           {**_PW, "input_hw": [5, 4]}, name="1x1, stride, padding"),
], _input_grad_ref, errors=[
    ErrorSample([_f(2, 3, 2, 2), _f(3, 2, 3, 3)], {**_A, "input_hw": [5, 5]},
                ValueError, "does not match"),
])

register_samples("conv2d_weight_grad", [
    Sample([_f(2, 2, 5, 5), _f(2, 3, 3, 3)], {**_A, "kernel_size": [3, 3]}, name="plain"),
    Sample([_f(2, 2, 5, 5, dtype=np.float64), _f(2, 2, 3, 3, dtype=np.float64)],
           {**_B, "kernel_size": [2, 3]}, name="stride, padding, dilation"),
    Sample([_f(1, 4, 4, 5), _f(1, 4, 4, 3)], {**_G, "kernel_size": [2, 2]}, name="groups"),
    Sample([_f(1, 2, 5, 6, dtype=np.float64), _f(1, 4, 3, 5, dtype=np.float64)],
           {**_DW, "kernel_size": [3, 2]}, name="depthwise, multiplier 2"),
    Sample([_l(1, 2, 7, 8), _l(1, 4, 4, 5)], {**_DW, "kernel_size": [4, 3]},
           name="depthwise 4x3, multiplier 2 (a loop over the taps)"),
    Sample([_f(2, 3, 5, 4, dtype=np.float64), _f(2, 2, 3, 5, dtype=np.float64)],
           {**_PW, "kernel_size": [1, 1]}, name="1x1, stride, padding"),
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


# -- 3-d: conv3d, its two gradient ops and conv_transpose3d (a rank-generic loop reference) ---

def _positions(out_sp, ws, stride, dilation):
    """For each output position: (its index, the padded-input index arrays per spatial dim)."""
    for pos in itertools.product(*(range(o) for o in out_sp)):
        yield pos, [p * s + d * np.arange(k) for p, s, d, k in zip(pos, stride, dilation, ws[2:])]


def _convnd_plan(xs, ws, stride, padding, dilation):
    nd = len(xs) - 2
    padded = [xs[2 + i] + padding[2 * i] + padding[2 * i + 1] for i in range(nd)]
    out = [(padded[i] - dilation[i] * (ws[2 + i] - 1) - 1) // stride[i] + 1 for i in range(nd)]
    inner = tuple(slice(padding[2 * i], padding[2 * i] + xs[2 + i]) for i in range(nd))
    return padded, out, (slice(None), slice(None)) + inner


def _convnd_adjoints(xs, ws, x, w, dy, stride, padding, dilation, groups):
    """(y, dx, dw) of an N-d grouped convolution by a direct loop over output positions:
    y[n, o, pos] = sum over the window; dx and dw scatter dy back (the adjoints)."""
    padded, out, inner = _convnd_plan(xs, ws, stride, padding, dilation)
    n, c = xs[:2]
    o, cg = ws[:2]
    og = o // groups
    sp = "defghijk"[:len(out)]  # einsum letters of the spatial dims
    xp = np.zeros((n, c, *padded))
    if x is not None:
        xp[inner] = x
    y = np.zeros((n, o, *out))
    dxp = np.zeros((n, c, *padded))
    dw = np.zeros(ws)
    for pos, idx in _positions(out, ws, stride, dilation):
        for g in range(groups):
            ci, oi = range(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
            sel = np.ix_(range(n), ci, *idx)
            if x is not None and w is not None:
                y[(slice(None), oi) + pos] = np.einsum(f"nc{sp},oc{sp}->no", xp[sel], w[oi])
            if dy is not None:
                d = dy[(slice(None), oi) + pos]
                if w is not None:
                    dxp[sel] += np.einsum(f"no,oc{sp}->nc{sp}", d, w[oi])
                if x is not None:
                    dw[oi] += np.einsum(f"no,nc{sp}->oc{sp}", d, xp[sel])
    return y, dxp[inner], dw


def _conv3d_ref(x, w, stride, padding, dilation, groups=1):
    dt = np.asarray(x).dtype
    y, _, _ = _convnd_adjoints(np.shape(x), np.shape(w), np.asarray(x, np.float64),
                               np.asarray(w, np.float64), None, stride, padding, dilation,
                               groups)
    return y.astype(dt)


def _input_grad3d_ref(dy, w, input_size, stride, padding, dilation, groups=1):
    dt = np.asarray(dy).dtype
    xs = (np.shape(dy)[0], np.shape(w)[1] * groups) + tuple(input_size)
    _, dx, _ = _convnd_adjoints(xs, np.shape(w), None, np.asarray(w, np.float64),
                                np.asarray(dy, np.float64), stride, padding, dilation, groups)
    return dx.astype(dt)


def _weight_grad3d_ref(x, dy, kernel_size, stride, padding, dilation, groups=1):
    dt = np.asarray(x).dtype
    ws = (np.shape(dy)[1], np.shape(x)[1] // groups) + tuple(kernel_size)
    _, _, dw = _convnd_adjoints(np.shape(x), ws, np.asarray(x, np.float64), None,
                                np.asarray(dy, np.float64), stride, padding, dilation, groups)
    return dw.astype(dt)


_A3 = {"stride": [1, 1, 1], "padding": [0] * 6, "dilation": [1, 1, 1], "groups": 1}
_B3 = {"stride": [2, 1, 1], "padding": [1, 0, 0, 1, 1, 1], "dilation": [1, 2, 1], "groups": 1}
_G3 = {"stride": [1, 1, 2], "padding": [0, 1, 1, 0, 1, 1], "dilation": [1, 1, 1], "groups": 2}

register_samples("conv3d", [
    Sample([_f(2, 2, 3, 4, 3), _f(2, 2, 2, 2, 2)], dict(_A3), name="plain"),
    Sample([_f(1, 2, 4, 4, 3, dtype=np.float64), _f(2, 2, 2, 2, 2, dtype=np.float64)],
           dict(_B3), name="stride, asymmetric padding, dilation"),
    Sample([_f(2, 4, 3, 3, 4), _f(4, 2, 2, 2, 2)], dict(_G3), name="groups=2"),
], _conv3d_ref, errors=[
    ErrorSample([_f(1, 3, 3, 3, 3), _f(2, 2, 2, 2, 2)], dict(_A3), ValueError, "channels"),
    ErrorSample([_f(1, 2, 3, 3), _f(2, 2, 2, 2, 2)], dict(_A3), ValueError, "5-d"),
    ErrorSample([_f(1, 2, 3, 3, 3), _f(2, 2, 2, 2, 2)], {**_A3, "stride": [1, 1]}, ValueError,
                "stride must be 3"),
    ErrorSample([_f(1, 4, 3, 3, 3), _f(3, 2, 2, 2, 2)], dict(_G3), ValueError, "divisible"),
])

register_samples("conv3d_input_grad", [
    Sample([_f(2, 2, 2, 3, 2), _f(2, 2, 2, 2, 2)], {**_A3, "input_size": [3, 4, 3]},
           name="plain"),
    Sample([_f(1, 2, 2, 3, 4, dtype=np.float64), _f(2, 2, 2, 2, 2, dtype=np.float64)],
           {**_B3, "input_size": [4, 4, 3]}, name="stride, padding, dilation"),
    Sample([_f(2, 4, 3, 3, 3), _f(4, 2, 2, 2, 2)], {**_G3, "input_size": [3, 3, 4]},
           name="groups"),
], _input_grad3d_ref, errors=[
    ErrorSample([_f(2, 2, 1, 1, 1), _f(2, 2, 2, 2, 2)], {**_A3, "input_size": [3, 4, 3]},
                ValueError, "does not match"),
])

register_samples("conv3d_weight_grad", [
    Sample([_f(2, 2, 3, 4, 3), _f(2, 2, 2, 3, 2)], {**_A3, "kernel_size": [2, 2, 2]},
           name="plain"),
    Sample([_f(1, 2, 4, 4, 3, dtype=np.float64), _f(1, 2, 2, 3, 4, dtype=np.float64)],
           {**_B3, "kernel_size": [2, 2, 2]}, name="stride, padding, dilation"),
    Sample([_f(2, 4, 3, 3, 4), _f(2, 4, 3, 3, 3)], {**_G3, "kernel_size": [2, 2, 2]},
           name="groups"),
], _weight_grad3d_ref, errors=[
    ErrorSample([_f(2, 2, 3, 4, 3), _f(2, 2, 1, 1, 1)], {**_A3, "kernel_size": [2, 2, 2]},
                ValueError, "does not match"),
])


def _conv_transpose3d_ref(x, w, stride, padding, output_padding, dilation, groups=1):
    """Direct scatter: input voxel p of channel ci adds x * w[ci, co, k] at output
    p s - pad + k d of channel co of ci's group."""
    dt = np.asarray(x).dtype
    x, w = np.asarray(x, np.float64), np.asarray(w, np.float64)
    n, cin = x.shape[:2]
    cog, ks = w.shape[1], w.shape[2:]
    out = [(x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (ks[i] - 1)
           + output_padding[i] + 1 for i in range(3)]
    y = np.zeros((n, cog * groups, *out))
    cig = cin // groups
    for ci in range(cin):
        g = ci // cig
        for p in itertools.product(*(range(s) for s in x.shape[2:])):
            for k in itertools.product(*(range(s) for s in ks)):
                q = tuple(p[i] * stride[i] - padding[i] + k[i] * dilation[i] for i in range(3))
                if all(0 <= q[i] < out[i] for i in range(3)):
                    y[(slice(None), slice(g * cog, (g + 1) * cog)) + q] += \
                        x[(slice(None), ci) + p][:, None] * w[(ci, slice(None)) + k][None, :]
    return y.astype(dt)


_T13 = {"stride": [1, 1, 1], "padding": [0, 0, 0], "output_padding": [0, 0, 0],
        "dilation": [1, 1, 1], "groups": 1}
_T23 = {"stride": [2, 1, 2], "padding": [1, 0, 0], "output_padding": [1, 0, 1],
        "dilation": [1, 1, 1], "groups": 1}
_T33 = {"stride": [1, 2, 1], "padding": [0, 1, 0], "output_padding": [1, 0, 0],
        "dilation": [2, 1, 1], "groups": 2}

register_samples("conv_transpose3d", [
    Sample([_f(2, 2, 2, 3, 2), _f(2, 2, 2, 2, 2)], dict(_T13), name="plain"),
    Sample([_f(1, 2, 2, 3, 2, dtype=np.float64), _f(2, 2, 2, 2, 2, dtype=np.float64)],
           dict(_T23), name="stride, padding, output_padding"),
    # output_padding 1 > padding 0 with stride 1 (allowed by dilation 2): a zero plane at the end
    Sample([_f(2, 4, 2, 2, 2), _f(4, 1, 2, 2, 2)], dict(_T33), name="groups, dilation"),
], _conv_transpose3d_ref, errors=[
    ErrorSample([_f(1, 3, 2, 2, 2), _f(2, 2, 2, 2, 2)], dict(_T13), ValueError, "channels"),
    ErrorSample([_f(1, 2, 2, 2, 2), _f(2, 2, 2, 2, 2)], {**_T13, "output_padding": [0, 1, 0]},
                ValueError, "output_padding must be smaller"),
    ErrorSample([_f(1, 2, 2, 2), _f(2, 2, 2, 2, 2)], dict(_T13), ValueError, "5-d"),
])


# -- im2col / col2im (F.unfold / F.fold) ---------------------------------------------------------

def _block_index(size, kernel_size, dilation, padding, stride):
    """The blocks (row-major) and, for each, the padded-input rows/cols it reads."""
    out = [(size[i] + 2 * padding[i] - dilation[i] * (kernel_size[i] - 1) - 1) // stride[i] + 1
           for i in range(2)]
    for bi in range(out[0]):
        for bj in range(out[1]):
            yield (bi * out[1] + bj, bi * stride[0] + dilation[0] * np.arange(kernel_size[0]),
                   bj * stride[1] + dilation[1] * np.arange(kernel_size[1]))


def _im2col_ref(x, kernel_size, dilation, padding, stride):
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding[0],) * 2, (padding[1],) * 2))
    blocks = list(_block_index((h, w), kernel_size, dilation, padding, stride))
    y = np.zeros((n, c * kernel_size[0] * kernel_size[1], len(blocks)))
    for b, rows, cols in blocks:
        y[:, :, b] = xp[:, :, rows][:, :, :, cols].reshape(n, -1)
    return y.astype(dt)


def _col2im_ref(x, output_size, kernel_size, dilation, padding, stride):
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    n, ck, _ = x.shape
    c = ck // (kernel_size[0] * kernel_size[1])
    h, w = output_size
    yp = np.zeros((n, c, h + 2 * padding[0], w + 2 * padding[1]))
    for b, rows, cols in _block_index((h, w), kernel_size, dilation, padding, stride):
        yp[np.ix_(range(n), range(c), rows, cols)] += x[:, :, b].reshape(n, c, *kernel_size)
    return yp[:, :, padding[0]:padding[0] + h, padding[1]:padding[1] + w].astype(dt)


_U1 = {"kernel_size": [2, 2], "dilation": [1, 1], "padding": [0, 0], "stride": [1, 1]}
_U2 = {"kernel_size": [2, 3], "dilation": [2, 1], "padding": [1, 2], "stride": [1, 2]}
_U3 = {"kernel_size": [3, 2], "dilation": [1, 1], "padding": [1, 0], "stride": [2, 2]}

register_samples("im2col", [
    Sample([_f(2, 2, 4, 4)], dict(_U1), name="plain"),
    Sample([_f(2, 2, 5, 4, dtype=np.float64)], dict(_U2), name="dilation, padding, stride"),
    Sample([_f(1, 4, 5, 5)], dict(_U3), name="stride 2 (blocks do not overlap in W)"),
], _im2col_ref, errors=[
    ErrorSample([_f(2, 4, 4)], dict(_U1), ValueError, "4-d"),
    ErrorSample([_f(1, 2, 2, 2)], {**_U1, "kernel_size": [3, 3]}, ValueError, "larger than"),
    ErrorSample([_f(1, 2, 4, 4)], {**_U1, "stride": [0, 1]}, ValueError, "stride"),
])

register_samples("col2im", [
    Sample([_f(2, 8, 9)], {**_U1, "output_size": [4, 4]}, name="plain (overlaps add)"),
    Sample([_f(2, 12, 15, dtype=np.float64)], {**_U2, "output_size": [5, 4]},
           name="dilation, padding, stride"),
    Sample([_f(1, 24, 6)], {**_U3, "output_size": [5, 5]}, name="stride 2"),
], _col2im_ref, errors=[
    ErrorSample([_f(2, 7, 9)], {**_U1, "output_size": [4, 4]}, ValueError, "divisible"),
    ErrorSample([_f(2, 8, 8)], {**_U1, "output_size": [4, 4]}, ValueError,
                "number of sliding blocks"),
    ErrorSample([_f(8, 9)], {**_U1, "output_size": [4, 4]}, ValueError, "3-d"),
])
