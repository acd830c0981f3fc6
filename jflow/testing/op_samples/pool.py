"""Checker samples for jflow/ops/pool.py (avg_pool2d, max_pool2d and their gradient ops).

The references are PyTorch's loops in float64 NumPy: avg_pool2d as an averaging matrix
(its transpose is the gradient), max_pool2d by scanning each window (first maximum on ties).
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(29)


def _f(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


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
