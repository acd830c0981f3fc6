"""Checker samples for jflow/ops/pool.py (avg_pool, max_pool and adaptive_max_pool in 1, 2
and 3 spatial dims, and their gradient ops).

The references are PyTorch's loops in float64 NumPy, written for any number of spatial
dims: avg_pool as an averaging matrix (its transpose is the gradient), max_pool and
adaptive_max_pool by scanning each window in row-major order (first maximum on ties).
"""

from __future__ import annotations

import itertools

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


def _avg_pool_mat(sp, kernel_size, stride, padding, count_include_pad, ceil_mode=False,
                  divisor_override=0):
    """The (out cells, in cells) averaging matrix of avg_pool over spatial shape ``sp``,
    built by PyTorch's loop (the window clipped to input + padding gives the
    count_include_pad divisor)."""
    nd = len(sp)
    outs = [_pool_size(sp[i], kernel_size[i], stride[i], padding[i], ceil_mode=ceil_mode)
            for i in range(nd)]
    m = np.zeros((int(np.prod(outs)), int(np.prod(sp))))
    for o_flat, o in enumerate(itertools.product(*map(range, outs))):
        lo = [o[i] * stride[i] - padding[i] for i in range(nd)]
        hi = [min(lo[i] + kernel_size[i], sp[i] + padding[i]) for i in range(nd)]
        pool_size = int(np.prod([h - a for a, h in zip(lo, hi)]))
        lo = [max(a, 0) for a in lo]
        hi = [min(h, s) for h, s in zip(hi, sp)]
        if divisor_override:
            cnt = divisor_override
        else:
            cnt = pool_size if count_include_pad else int(np.prod([h - a for a, h in
                                                                    zip(lo, hi)]))
        for cell in itertools.product(*(range(a, h) for a, h in zip(lo, hi))):
            m[o_flat, np.ravel_multi_index(cell, sp)] += 1.0 / cnt
    return m, tuple(outs)


def _avg_pool_ref(x, kernel_size, stride, padding, count_include_pad=True, ceil_mode=False,
                  divisor_override=0):
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    m, outs = _avg_pool_mat(x.shape[2:], kernel_size, stride, padding, count_include_pad,
                            ceil_mode, divisor_override)
    y = np.einsum("ok,nck->nco", m, x.reshape(x.shape[0], x.shape[1], -1))
    return y.reshape(x.shape[:2] + outs).astype(dt)


def _avg_pool_grad_ref(dy, input_size, kernel_size, stride, padding, count_include_pad=True,
                       ceil_mode=False, divisor_override=0):
    dt = np.asarray(dy).dtype
    dy = np.asarray(dy, np.float64)
    m, _ = _avg_pool_mat(tuple(input_size), kernel_size, stride, padding, count_include_pad,
                         ceil_mode, divisor_override)
    dx = np.einsum("ok,nco->nck", m, dy.reshape(dy.shape[0], dy.shape[1], -1))
    return dx.reshape(dy.shape[:2] + tuple(input_size)).astype(dt)


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
    Sample([_f(2, 2, 2, 2)], {**_P1, "input_size": [5, 5]}, name="2x2, stride 2"),
    Sample([_f(1, 3, 3, 5, dtype=np.float64)], {**_P2, "input_size": [5, 4]}, name="padding"),
    Sample([_f(1, 2, 3, 5)], {**_P3, "input_size": [5, 4]}, name="count_include_pad"),
    Sample([_f(1, 2, 3, 2)], {**_P5, "input_size": [6, 3]}, name="ceil_mode"),
    Sample([_f(1, 2, 3, 2)], {**_P6, "input_size": [6, 3]}, name="divisor_override"),
], _avg_pool_grad_ref, errors=[
    ErrorSample([_f(2, 2, 3, 3)], {**_P1, "input_size": [5, 5]}, ValueError, "does not match"),
])

_Q1 = {"kernel_size": [3], "stride": [2], "padding": [1], "count_include_pad": True}
_Q2 = {"kernel_size": [2], "stride": [3], "padding": [1], "count_include_pad": False,
       "ceil_mode": True}

register_samples("avg_pool1d", [
    Sample([_f(2, 2, 7)], dict(_Q1), name="padding"),
    Sample([_f(1, 2, 8, dtype=np.float64)], dict(_Q2), name="ceil_mode, count_include_pad off"),
    Sample([_f(1, 2, 8)], {**_Q2, "divisor_override": 3}, name="divisor_override"),
], _avg_pool_ref, errors=[
    ErrorSample([_f(2, 2, 5, 5)], dict(_Q1), ValueError, "3-d"),
    ErrorSample([_f(1, 1, 5)], {**_Q1, "kernel_size": [0]}, ValueError, "kernel_size"),
])

register_samples("avg_pool1d_grad", [
    Sample([_f(2, 2, 4)], {**_Q1, "input_size": [7]}, name="padding"),
    Sample([_f(1, 2, 3, dtype=np.float64)], {**_Q2, "input_size": [8]}, name="ceil_mode"),
], _avg_pool_grad_ref, errors=[
    ErrorSample([_f(2, 2, 3)], {**_Q1, "input_size": [7]}, ValueError, "does not match"),
])

_R1 = {"kernel_size": [2, 2, 2], "stride": [2, 2, 2], "padding": [0, 0, 0],
       "count_include_pad": True}
_R2 = {"kernel_size": [3, 2, 2], "stride": [2, 1, 2], "padding": [1, 0, 1],
       "count_include_pad": False, "ceil_mode": True}

register_samples("avg_pool3d", [
    Sample([_f(2, 2, 4, 4, 4)], dict(_R1), name="2x2x2, stride 2"),
    Sample([_f(1, 2, 4, 3, 5, dtype=np.float64)], dict(_R2),
           name="padding, ceil_mode, count_include_pad off"),
    Sample([_f(1, 2, 4, 3, 5)], {**_R2, "count_include_pad": True},
           name="ceil_mode, count_include_pad on"),
    Sample([_f(1, 2, 4, 3, 5)], {**_R2, "divisor_override": 5}, name="divisor_override"),
], _avg_pool_ref, errors=[
    ErrorSample([_f(2, 4, 4, 4)], dict(_R1), ValueError, "5-d"),
    ErrorSample([_f(1, 1, 4, 4, 4)], {**_R1, "stride": [2, 2]}, ValueError, "stride"),
])

register_samples("avg_pool3d_grad", [
    Sample([_f(2, 2, 2, 2, 2)], {**_R1, "input_size": [4, 4, 4]}, name="2x2x2, stride 2"),
    Sample([_f(1, 2, 3, 2, 3, dtype=np.float64)], {**_R2, "input_size": [4, 3, 5]},
           name="ceil_mode"),
], _avg_pool_grad_ref, errors=[
    ErrorSample([_f(2, 2, 3, 3, 3)], {**_R1, "input_size": [4, 4, 4]}, ValueError,
                "does not match"),
])


def _scan_max(x, windows):
    """Max and flat index over each window (a list of in-input cells, row-major) of the
    spatial dims of every (n, c) plane of ``x`` (float64); -inf and the first cell when
    nothing beats -inf, as PyTorch's scan."""
    n, c = x.shape[:2]
    sp = x.shape[2:]
    outs = windows.shape
    y = np.zeros((n, c) + outs)
    idx = np.zeros((n, c) + outs, np.int64)
    for a in range(n):
        for b in range(c):
            for o in itertools.product(*map(range, outs)):
                cells = windows[o]
                best, bi = -np.inf, np.ravel_multi_index(cells[0], sp)
                for cell in cells:
                    if x[(a, b) + cell] > best:
                        best, bi = x[(a, b) + cell], np.ravel_multi_index(cell, sp)
                y[(a, b) + o], idx[(a, b) + o] = best, bi
    return y, idx


def _max_pool_ref(x, kernel_size, stride, padding, dilation, ceil_mode=False):
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    sp = x.shape[2:]
    nd = len(sp)
    outs = [_pool_size(sp[i], kernel_size[i], stride[i], padding[i], dilation[i], ceil_mode)
            for i in range(nd)]
    windows = np.empty(outs, object)
    for o in itertools.product(*map(range, outs)):
        windows[o] = [cell for cell in itertools.product(
            *([o[i] * stride[i] - padding[i] + u * dilation[i] for u in range(kernel_size[i])]
              for i in range(nd)))
            if all(0 <= cell[i] < sp[i] for i in range(nd))]
    y, idx = _scan_max(x, windows)
    return y.astype(dt), idx


def _adaptive_max_pool_ref(x, output_size):
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    sp = x.shape[2:]
    windows = np.empty(tuple(output_size), object)
    for o in itertools.product(*map(range, output_size)):
        ranges = [range((o[i] * sp[i]) // output_size[i],
                        -((-(o[i] + 1) * sp[i]) // output_size[i])) for i in range(len(sp))]
        windows[o] = list(itertools.product(*ranges))
    y, idx = _scan_max(x, windows)
    return y.astype(dt), idx


def _max_pool_grad_ref(dy, indices, input_size):
    dt = np.asarray(dy).dtype
    dy = np.asarray(dy, np.float64)
    n, c = dy.shape[:2]
    out = np.zeros((n, c, int(np.prod(input_size))))
    for a in range(n):
        for b in range(c):
            np.add.at(out[a, b], np.asarray(indices)[a, b].ravel(), dy[a, b].ravel())
    return out.reshape((n, c) + tuple(input_size)).astype(dt)


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

_N1 = {"kernel_size": [3], "stride": [2], "padding": [1], "dilation": [1]}
_N2 = {"kernel_size": [2], "stride": [3], "padding": [1], "dilation": [2], "ceil_mode": True}

register_samples("max_pool1d", [
    Sample([_f(2, 2, 7)], dict(_N1), name="padding"),
    Sample([_f(1, 2, 8, dtype=np.float64)], dict(_N2), name="dilation, ceil_mode"),
], _max_pool_ref, errors=[
    ErrorSample([_f(2, 7)], dict(_N1), ValueError, "3-d"),
    ErrorSample([_f(1, 1, 7)], {**_N1, "dilation": [0]}, ValueError, "dilation"),
])

_T1 = {"kernel_size": [2, 2, 2], "stride": [2, 2, 2], "padding": [0, 0, 0],
       "dilation": [1, 1, 1]}
_T2 = {"kernel_size": [3, 2, 2], "stride": [2, 1, 2], "padding": [1, 0, 1],
       "dilation": [1, 2, 1], "ceil_mode": True}

register_samples("max_pool3d", [
    Sample([_f(2, 2, 4, 4, 4)], dict(_T1), name="2x2x2, stride 2"),
    Sample([_f(1, 2, 4, 3, 5, dtype=np.float64)], dict(_T2), name="padding, dilation, ceil_mode"),
], _max_pool_ref, errors=[
    ErrorSample([_f(1, 4, 4, 4)], dict(_T1), ValueError, "5-d"),
    ErrorSample([_f(1, 1, 4, 4, 4)], {**_T1, "padding": [0, 2, 0]}, ValueError,
                "half the kernel"),
])

register_samples("adaptive_max_pool1d", [
    Sample([_f(2, 2, 7)], {"output_size": [3]}, name="overlapping windows"),
    Sample([_f(1, 2, 3, dtype=np.float64)], {"output_size": [5]}, name="output larger"),
], _adaptive_max_pool_ref, errors=[
    ErrorSample([_f(2, 7)], {"output_size": [3]}, ValueError, "3-d"),
    ErrorSample([_f(1, 2, 7)], {"output_size": [0]}, ValueError, "output_size"),
])

register_samples("adaptive_max_pool2d", [
    Sample([_f(2, 2, 5, 7)], {"output_size": [2, 3]}, name="uneven windows"),
    Sample([_f(1, 2, 4, 4, dtype=np.float64)], {"output_size": [2, 2]}, name="even windows"),
], _adaptive_max_pool_ref, errors=[
    ErrorSample([_f(2, 5, 7)], {"output_size": [2, 3]}, ValueError, "4-d"),
])

register_samples("adaptive_max_pool3d", [
    Sample([_f(2, 2, 3, 4, 5)], {"output_size": [2, 3, 2]}, name="uneven windows"),
], _adaptive_max_pool_ref, errors=[
    ErrorSample([_f(2, 3, 4, 5)], {"output_size": [2, 3, 2]}, ValueError, "5-d"),
])

_I1 = _max_pool_ref(_f(2, 2, 5, 5), **_M1)[1]
_I2 = _max_pool_ref(_f(1, 2, 5, 4), **_M2)[1]
_J1 = _max_pool_ref(_f(2, 2, 7), **_N1)[1]
_K1 = _max_pool_ref(_f(2, 2, 4, 3, 5), **_T2)[1]

register_samples("max_pool2d_grad", [
    Sample([_f(2, 2, 2, 2), _I1], {"input_size": [5, 5]}, name="disjoint windows"),
    Sample([_f(*_I2.shape, dtype=np.float64), _I2], {"input_size": [5, 4]},
           name="overlapping windows (indices repeat)"),
], _max_pool_grad_ref, errors=[
    ErrorSample([_f(2, 2, 2, 2), _I2], {"input_size": [5, 5]}, ValueError,
                "indices of its shape"),
])

register_samples("max_pool1d_grad", [
    Sample([_f(*_J1.shape, dtype=np.float64), _J1], {"input_size": [7]},
           name="overlapping windows"),
], _max_pool_grad_ref, errors=[
    ErrorSample([_f(2, 2, 4), _J1], {"input_size": [7, 1]}, ValueError, "1 ints input_size"),
])

register_samples("max_pool3d_grad", [
    Sample([_f(*_K1.shape, dtype=np.float64), _K1], {"input_size": [4, 3, 5]},
           name="overlapping windows"),
], _max_pool_grad_ref, errors=[
    ErrorSample([_f(1, 2, 2, 2), _K1], {"input_size": [4, 3, 5]}, ValueError, "5-d grad"),
])
