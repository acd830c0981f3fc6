"""Checker samples for jflow/ops/search.py (``searchsorted``; independent NumPy references)."""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(1)


def _f(*shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return _rng.uniform(lo, hi, shape).astype(dtype)


def _i(*shape, lo=-5, hi=6, dtype=np.int64):
    return _rng.integers(lo, hi, shape).astype(dtype)


def _ref_searchsorted(seq, values, right=False, out_int32=False):
    """np.searchsorted per row (nan-free inputs: there NumPy's order is PyTorch's)."""
    seq, values = np.asarray(seq), np.asarray(values)
    side = "right" if right else "left"
    if seq.ndim == 1:
        out = np.searchsorted(seq, values, side=side)
    else:
        s2, v2 = seq.reshape(-1, seq.shape[-1]), values.reshape(-1, values.shape[-1])
        out = np.stack([np.searchsorted(a, b, side=side) for a, b in zip(s2, v2)]
                       ).reshape(values.shape)
    return out.astype(np.int32 if out_int32 else np.int64)


_SEQ = np.array([-1.5, 0.0, 0.0, 0.5, 2.0, 2.0, 3.0], np.float32)
_VALS = np.array([[-2.0, 0.0, 0.25], [2.0, 3.0, 9.0]], np.float32)
_SEQ2 = np.sort(_f(2, 3, 5), axis=-1)
_VALS2 = _f(2, 3, 4)
register_samples(
    "searchsorted",
    [Sample([_SEQ, _VALS]), Sample([_SEQ, _VALS], {"right": True}),
     Sample([_SEQ, _VALS], {"out_int32": True}), Sample([_SEQ2, _VALS2]),
     Sample([_SEQ2, _VALS2], {"right": True}),
     Sample([np.sort(_i(9)), _i(2, 5)], {"right": True}),
     Sample([_SEQ.astype(np.float64), np.array(0.0)]), Sample([_SEQ[:1], _VALS]),
     Sample([np.zeros((0,), np.float32), _VALS])],
    _ref_searchsorted,
    errors=[ErrorSample([np.array(1.0, np.float32), _VALS], {}, ValueError,
                        "at least one dimension"),
            ErrorSample([_SEQ2, _VALS], {}, ValueError, "leading dimensions"),
            ErrorSample([_SEQ, _VALS.astype(np.float64)], {}, TypeError, "one dtype")])
