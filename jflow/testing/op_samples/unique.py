"""Checker samples for jflow/ops/unique.py (``unique``, sorted and consecutive; an independent
plain-loop reference)."""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(1)


def _i(*shape, lo=-5, hi=6, dtype=np.int64):
    return _rng.integers(lo, hi, shape).astype(dtype)


_B = _rng.random((3, 4)) > 0.5


def _ref_unique(x, size, consecutive=False):
    """A plain loop: runs of equal neighbours of the (stably sorted) flattened x."""
    x = np.asarray(x)
    flat = x.reshape(-1)
    order = np.arange(flat.size) if consecutive else np.argsort(flat, kind="stable")
    values, counts, inverse = [], [], np.zeros(flat.size, np.int64)
    for pos in order:
        v = flat[pos]
        if not values or not values[-1] == v:  # nan == nan is False: a new value
            values.append(v)
            counts.append(0)
        counts[-1] += 1
        inverse[pos] = len(values) - 1
    return (np.array(values, x.dtype).reshape(-1), inverse.reshape(x.shape),
            np.array(counts, np.int64).reshape(-1))


_UX = _i(3, 5, lo=0, hi=4)
_UNAN = np.array([2.0, np.nan, 1.0, np.nan, 2.0, 2.0], np.float32)


def _u(x, consecutive=False):
    """A sample whose size attr is the data's number of distinct values (or runs)."""
    return Sample([x], {"size": len(_ref_unique(x, 0, consecutive)[0]),
                        "consecutive": consecutive})


register_samples(
    "unique",
    [_u(_UX), _u(_UX, True), _u(_UNAN), _u(_UNAN, True), _u(_B), _u(_B, True),
     _u(np.array(1.5, np.float32)), _u(np.zeros((0,), np.float32))],
    _ref_unique,
    errors=[ErrorSample([_UX], {}, TypeError, "missing.*size")])
