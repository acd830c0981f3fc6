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


def _avg_pool_mat(xs, kernel_size, stride, padding, count_include_pad):
    """The (out H*W, in H*W) averaging matrix of avg_pool2d, built by loops."""
    h, w = xs[2], xs[3]
    oh = (h + 2 * padding[0] - kernel_size[0]) // stride[0] + 1
    ow = (w + 2 * padding[1] - kernel_size[1]) // stride[1] + 1
    m = np.zeros((oh * ow, h * w))
    for i in range(oh):
        for j in range(ow):
            cells = [(r, c)
                     for r in range(i * stride[0] - padding[0],
                                    i * stride[0] - padding[0] + kernel_size[0])
                     for c in range(j * stride[1] - padding[1],
                                    j * stride[1] - padding[1] + kernel_size[1])]
            inside = [(r, c) for r, c in cells if 0 <= r < h and 0 <= c < w]
            cnt = len(cells) if count_include_pad else len(inside)
            for r, c in inside:
                m[i * ow + j, r * w + c] += 1.0 / cnt
    return m, oh, ow


def _avg_pool_ref(x, kernel_size, stride, padding, count_include_pad=True):
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    m, oh, ow = _avg_pool_mat(x.shape, kernel_size, stride, padding, count_include_pad)
    y = np.einsum("ok,nck->nco", m, x.reshape(x.shape[0], x.shape[1], -1))
    return y.reshape(x.shape[:2] + (oh, ow)).astype(dt)


def _avg_pool_grad_ref(dy, input_hw, kernel_size, stride, padding, count_include_pad=True):
    dt = np.asarray(dy).dtype
    dy = np.asarray(dy, np.float64)
    xs = dy.shape[:2] + tuple(input_hw)
    m, _, _ = _avg_pool_mat(xs, kernel_size, stride, padding, count_include_pad)
    dx = np.einsum("ok,nco->nck", m, dy.reshape(dy.shape[0], dy.shape[1], -1))
    return dx.reshape(xs).astype(dt)


_P1 = {"kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0], "count_include_pad": True}
_P2 = {"kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 1], "count_include_pad": False}
_P3 = {**_P2, "count_include_pad": True}

register_samples("avg_pool2d", [
    Sample([_f(2, 2, 5, 5)], dict(_P1), name="2x2, stride 2"),
    Sample([_f(1, 3, 5, 4, dtype=np.float64)], dict(_P2), name="padding, count_include_pad off"),
    Sample([_f(1, 2, 5, 4)], dict(_P3), name="padding, count_include_pad on"),
    Sample([_f(1, 2, 4, 4, dtype=np.float16)], dict(_P1), grad=False, name="float16"),
], _avg_pool_ref, errors=[
    ErrorSample([_f(2, 5, 5)], dict(_P1), ValueError, "4-d"),
    ErrorSample([_f(1, 1, 5, 5)], {**_P1, "padding": [2, 0]}, ValueError, "half the kernel"),
    ErrorSample([np.ones((1, 1, 4, 4), np.int64)], dict(_P1), TypeError, "floating"),
])

register_samples("avg_pool2d_grad", [
    Sample([_f(2, 2, 2, 2)], {**_P1, "input_hw": [5, 5]}, name="2x2, stride 2"),
    Sample([_f(1, 3, 3, 5, dtype=np.float64)], {**_P2, "input_hw": [5, 4]}, name="padding"),
    Sample([_f(1, 2, 3, 5)], {**_P3, "input_hw": [5, 4]}, name="count_include_pad"),
], _avg_pool_grad_ref, errors=[
    ErrorSample([_f(2, 2, 3, 3)], {**_P1, "input_hw": [5, 5]}, ValueError, "does not match"),
])


def _max_pool_ref(x, kernel_size, stride, padding, dilation):
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    n, c, h, w = x.shape
    oh = (h + 2 * padding[0] - dilation[0] * (kernel_size[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * padding[1] - dilation[1] * (kernel_size[1] - 1) - 1) // stride[1] + 1
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
