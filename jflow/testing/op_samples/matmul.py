"""Checker samples for jflow/ops/matmul.py.

References are computed independently in float64 (integers: exact int64) with an explicit
sum over the contracted index, not with ``np.matmul`` broadcasting, so a kernel that got
the batch broadcasting or a transpose wrong cannot agree with them by accident.
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(1)


def _f(*shape, dtype=np.float32):
    return _rng.uniform(-2.0, 2.0, shape).astype(dtype)


def _i(*shape, dtype=np.int64):
    return _rng.integers(-4, 5, shape).astype(dtype)


_F32_TOL = {"atol": 1e-5, "rtol": 1e-5}


def _wide(x):
    x = np.asarray(x)
    return x.astype(np.float64) if x.dtype.kind == "f" or x.dtype.name == "bfloat16" \
        else x.astype(np.int64)


def _tr(x, t):
    return np.swapaxes(x, -1, -2) if t else x


def _ref_product(a, b):
    """(..., m, k) x (..., k, n) with broadcast batch dims, by an explicit loop over the
    broadcast batch index and an explicit sum over k."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    out = np.zeros(batch + (m, n), dtype=np.result_type(a, b))
    ab = np.broadcast_to(a, batch + a.shape[-2:])
    bb = np.broadcast_to(b, batch + b.shape[-2:])
    for idx in np.ndindex(*batch):
        for kk in range(k):
            out[idx] += ab[idx][:, kk:kk + 1] * bb[idx][kk:kk + 1, :]
    return out


def _mm_ref(a, b, transpose_a=False, transpose_b=False, alpha=1.0):
    out = _ref_product(_tr(_wide(a), transpose_a), _tr(_wide(b), transpose_b))
    return out * alpha if alpha != 1.0 else out


_DTYPE_ERR = ErrorSample([_f(3, 4), _f(4, 5, dtype=np.float64)], {}, TypeError, "same dtype")
_BOOL_ERR = ErrorSample([_f(3, 4) > 0, _f(4, 5) > 0], {}, TypeError, "numeric")

register_samples("matmul", [
    Sample([_f(3, 4), _f(4, 5)], **_F32_TOL),
    Sample([_f(3, 4, dtype=np.float64), _f(4, 2, dtype=np.float64)]),
    Sample([_i(3, 4), _i(4, 5)]),
    Sample([_i(2, 3, dtype=np.int32), _i(3, 2, dtype=np.int32)]),
    Sample([_f(4, 3), _f(4, 5)], {"transpose_a": True}, **_F32_TOL),
    Sample([_f(3, 4), _f(5, 4)], {"transpose_b": True}, **_F32_TOL),
    # an even n (b's dim 0 here), so the SBP check runs (B, S(0)) -> S(1)
    Sample([_f(3, 4), _f(2, 4)], {"transpose_b": True}, name="transposed b, even n",
           **_F32_TOL),
    Sample([_f(4, 3), _f(5, 4)], {"transpose_a": True, "transpose_b": True, "alpha": 2.5},
           **_F32_TOL),
    Sample([_f(3, 16, dtype=np.float16), _f(16, 2, dtype=np.float16)], rtol=2e-3, atol=1e-2),
    Sample([_f(3, 0), _f(0, 2)], name="empty inner dim -> zeros"),
    Sample([_f(0, 4), _f(4, 2)], name="no rows"),
], _mm_ref, errors=[
    ErrorSample([_f(2, 3, 4), _f(4, 5)], {}, ValueError, "2-D"),
    ErrorSample([_f(3, 4), _f(5, 2)], {}, ValueError, "cannot be multiplied"),
    ErrorSample([_f(3, 4), _f(5, 4)], {"transpose_a": True}, ValueError, "cannot be multiplied"),
    ErrorSample([_i(3, 4), _i(4, 5)], {"alpha": 2.0}, TypeError, "alpha"),
    _DTYPE_ERR, _BOOL_ERR,
])

register_samples("batch_matmul", [
    Sample([_f(2, 3, 4), _f(2, 4, 5)], **_F32_TOL),
    Sample([_f(2, 1, 3, 4), _f(5, 4, 2)], name="broadcast batch dims", **_F32_TOL),
    Sample([_f(3, 4), _f(2, 4, 5)], name="2-D a, 3-D b", **_F32_TOL),
    Sample([_f(2, 3, 4), _f(4, 5)], name="3-D a, 2-D b", **_F32_TOL),
    Sample([_i(2, 3, 4), _i(1, 4, 2)]),
    Sample([_f(2, 4, 3, dtype=np.float64), _f(2, 5, 4, dtype=np.float64)],
           {"transpose_a": True, "transpose_b": True, "alpha": -0.5}),
    Sample([_f(0, 3, 4), _f(0, 4, 5)], name="empty batch"),
    Sample([_f(4, 3), _f(2, 1, 5, 4)], {"transpose_a": True, "transpose_b": True, "alpha": 1.5},
           name="2-D a broadcast over 2 batch dims, transposes", **_F32_TOL),
    Sample([_f(1, 3, 2, 4), _f(2, 1, 3, 4)], {"transpose_b": True},
           name="size-1 batch dims broadcast on both sides", **_F32_TOL),
    # even sizes where the samples above have odd ones, so the SBP check runs b's splits:
    # (B, S(0)) -> S(1) (b's only batch dim), (B, S(1)) -> S(1) (b's 2nd of two batch dims,
    # a broadcast), (B, S(1)) -> S(2) (n of a 2-D b)
    Sample([_f(2, 1, 3, 4), _f(2, 4, 2)], name="broadcast batch dims, even b batch",
           **_F32_TOL),
    Sample([_f(3, 4), _f(2, 2, 4, 2)], name="2-D a, 4-D b", **_F32_TOL),
    Sample([_f(2, 3, 4), _f(4, 2)], name="3-D a, 2-D b, even n", **_F32_TOL),
], _mm_ref, errors=[
    ErrorSample([_f(3, 4), _f(4, 5)], {}, ValueError, "3-D"),
    ErrorSample([_f(2, 3, 4), _f(3, 4, 5)], {}, ValueError, "broadcast"),
    ErrorSample([_f(2, 3, 4), _f(2, 3, 5)], {}, ValueError, "cannot be multiplied"),
    ErrorSample([_f(2, 3, 4), _f(2, 4, 5, dtype=np.float64)], {}, TypeError, "same dtype"),
])


def _mv_ref(a, b, transpose_a=False):
    return _ref_product(_tr(_wide(a), transpose_a), _wide(b)[:, None])[..., 0]


register_samples("matrix_vector_product", [
    Sample([_f(3, 4), _f(4)], **_F32_TOL),
    Sample([_f(2, 3, 4), _f(4)], name="batched matrix", **_F32_TOL),
    Sample([_f(4, 3), _f(4)], {"transpose_a": True}, **_F32_TOL),
    Sample([_f(2, 4, 3), _f(4)], {"transpose_a": True}, name="batched, transposed",
           **_F32_TOL),
    Sample([_i(3, 4), _i(4)]),
    Sample([_f(3, 0), _f(0)], name="empty inner dim"),
], _mv_ref, errors=[
    ErrorSample([_f(3, 4), _f(4, 1)], {}, ValueError, "1-D"),
    ErrorSample([_f(3, 4), _f(3)], {}, ValueError, "cannot be multiplied"),
    ErrorSample([_f(3, 4), _f(4, dtype=np.float64)], {}, TypeError, "same dtype"),
])


def _vm_ref(a, b, transpose_b=False):
    return _ref_product(_wide(a)[None, :], _tr(_wide(b), transpose_b))[..., 0, :]


register_samples("vector_matrix_product", [
    Sample([_f(4), _f(4, 5)], **_F32_TOL),
    Sample([_f(4), _f(2, 4, 5)], name="batched matrix", **_F32_TOL),
    # an even n, so the SBP check runs (B, S(2)) -> S(1)
    Sample([_f(4), _f(2, 4, 2)], name="batched matrix, even n", **_F32_TOL),
    Sample([_f(4), _f(5, 4)], {"transpose_b": True}, **_F32_TOL),
    Sample([_f(4), _f(2, 3, 4)], {"transpose_b": True}, name="batched, transposed",
           **_F32_TOL),
    Sample([_f(0), _f(0, 3)], name="empty inner dim"),
    Sample([_i(4), _i(4, 2)]),
], _vm_ref, errors=[
    ErrorSample([_f(1, 4), _f(4, 5)], {}, ValueError, "1-D"),
    ErrorSample([_f(3), _f(4, 5)], {}, ValueError, "cannot be multiplied"),
])


def _dot_ref(a, b):
    a, b = _wide(a), _wide(b)
    return np.asarray(sum((a[i] * b[i] for i in range(a.shape[0])), a.dtype.type(0)))


register_samples("dot", [
    Sample([_f(7), _f(7)], **_F32_TOL),
    Sample([_f(5, dtype=np.float64), _f(5, dtype=np.float64)]),
    Sample([_i(6), _i(6)]),
    Sample([_f(0), _f(0)], name="empty -> 0"),
], _dot_ref, errors=[
    ErrorSample([_f(3), _f(4)], {}, ValueError, "same number of elements"),
    ErrorSample([_f(3, 1), _f(3)], {}, ValueError, "1-D"),
    ErrorSample([_f(3), _f(3, dtype=np.float64)], {}, TypeError, "same dtype"),
])


def _outer_ref(a, b):
    out = np.empty((a.shape[0], b.shape[0]), dtype=a.dtype)
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            out[i, j] = (a[i] and b[j]) if a.dtype == np.bool_ else a[i] * b[j]
    return out


register_samples("outer", [
    Sample([_f(2), _f(4)]),
    Sample([_i(3), _i(2)]),
    Sample([_f(3) > 0, _f(4) > 0], name="bool: logical and"),
    Sample([_f(0), _f(3)], name="empty"),
], _outer_ref, errors=[
    ErrorSample([_f(3, 1), _f(3)], {}, ValueError, "1-D"),
    ErrorSample([_f(3), _i(3)], {}, TypeError, "same dtype"),
])


def _grouped_ref(mat_a, mat_b, offs=None):
    """torch.nn.functional.grouped_mm by a loop over the groups: group g spans
    ``[end[g-1], end[g])`` of the ragged axis, ``end`` = offs clipped to the axis and made
    non-decreasing; positions in no group are zeros."""
    a, b = _wide(mat_a), _wide(mat_b)
    if offs is None:
        return np.stack([_ref_product(a[g], b[g]) for g in range(a.shape[0])]) \
            if a.shape[0] else np.zeros((0, a.shape[1], b.shape[2]), a.dtype)
    ragged = a.shape[0] if a.ndim == 2 and b.ndim == 3 else \
        b.shape[1] if a.ndim == 3 else a.shape[1]
    ends, start, bounds = 0, 0, []
    for o in np.asarray(offs).tolist():
        ends = max(ends, min(max(o, 0), ragged))
        bounds.append((start, ends))
        start = ends
    if a.ndim == 2 and b.ndim == 3:
        out = np.zeros((a.shape[0], b.shape[2]), a.dtype)
        for g, (lo, hi) in enumerate(bounds):
            out[lo:hi] = _ref_product(a[lo:hi], b[g])
    elif a.ndim == 3:
        out = np.zeros((a.shape[1], b.shape[1]), a.dtype)
        for g, (lo, hi) in enumerate(bounds):
            out[:, lo:hi] = _ref_product(a[g], b[:, lo:hi])
    else:
        out = np.zeros((len(bounds), a.shape[0], b.shape[1]), a.dtype)
        for g, (lo, hi) in enumerate(bounds):
            out[g] = _ref_product(a[:, lo:hi], b[lo:hi])
    return out


def _offs(*ends):
    return np.array(ends, dtype=np.int32)


# Even sizes on the split axes (N of a 3-D mat_b, K, M) so the SBP check runs every signature.
register_samples("grouped_mm", [
    Sample([_f(7, 4), _f(3, 4, 2), _offs(2, 2, 5)], name="2-D 3-D, an empty group, rows past "
           "the last end", **_F32_TOL),
    Sample([_f(6, 3, dtype=np.float64), _f(2, 3, 5, dtype=np.float64), _offs(4, 6)],
           name="2-D 3-D, float64 (gradients)"),
    Sample([_f(5, 4), _f(3, 4, 2), _offs(3, 1, 9)], name="2-D 3-D, a decreasing end and one "
           "past the rows", **_F32_TOL),
    Sample([_f(3, 2, 4), _f(4, 7), _offs(2, 2, 5)], name="3-D 2-D, columns past the last end",
           **_F32_TOL),
    Sample([_f(2, 3, 2, dtype=np.float64), _f(2, 5, dtype=np.float64), _offs(1, 5)],
           name="3-D 2-D, float64 (gradients)"),
    Sample([_f(2, 7), _f(7, 4), _offs(2, 2, 5)], name="2-D 2-D, S past the last end",
           **_F32_TOL),
    Sample([_f(3, 4, dtype=np.float64), _f(4, 2, dtype=np.float64), _offs(1, 4)],
           name="2-D 2-D, float64 (gradients)"),
    Sample([_f(2, 3, 4), _f(2, 4, 2), None], name="3-D 3-D", **_F32_TOL),
    Sample([_f(3, 2, 3, dtype=np.float64), _f(3, 3, 2, dtype=np.float64), None],
           name="3-D 3-D, float64 (gradients)"),
    Sample([_f(6, 16, dtype=np.float16), _f(2, 16, 2, dtype=np.float16), _offs(2, 6)],
           name="float16", rtol=2e-3, atol=1e-2),
    Sample([_f(4, 3), _f(0, 3, 2), _offs()], name="no groups -> zeros"),
], _grouped_ref, errors=[
    ErrorSample([_f(7, 4), _f(3, 4, 2), None], {}, ValueError, "offs is required"),
    ErrorSample([_f(2, 3, 4), _f(2, 4, 2), _offs(1, 2)], {}, ValueError, "offs must be None"),
    ErrorSample([_f(7, 4), _f(3, 4, 2), _offs(2, 5)], {}, ValueError, "one entry per group"),
    ErrorSample([_f(7, 4), _f(3, 4, 2), np.array([2, 2, 5], np.int64)], {}, TypeError,
                "1-D int32"),
    ErrorSample([_f(7, 4), _f(3, 5, 2), _offs(2, 2, 5)], {}, ValueError, "contraction"),
    ErrorSample([_f(2, 7), _f(6, 4), _offs(2, 5)], {}, ValueError, "same size"),
    ErrorSample([_f(2, 3, 4), _f(3, 4, 2), None], {}, ValueError, "number of groups"),
    ErrorSample([_f(7), _f(3, 7, 2), _offs(2, 2, 5)], {}, ValueError, "2-D or 3-D"),
    ErrorSample([_f(7, 4), _f(3, 4, 2, dtype=np.float64), _offs(2, 2, 5)], {}, TypeError,
                "same dtype"),
    ErrorSample([_i(7, 4), _i(3, 4, 2), _offs(2, 2, 5)], {}, TypeError, "floating"),
])
