"""Checker samples for jflow/ops/index.py (gather, scatter, index_select, masked_fill, one_hot,
sort, topk).

References are element-by-element Python loops (and Python's own stable ``sorted``), so they
share no code path with the kernels. Samples with out-of-range indices pin down what the ops
do where no error can be raised (under jit): gather / index_select read the fill value, scatter
drops the entry, one_hot gives a zero row.
"""

from __future__ import annotations

import math

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(2)


def _f(*shape, dtype=np.float32):
    return _rng.uniform(-2.0, 2.0, shape).astype(dtype)


def _i(*shape, lo=-5, hi=6, dtype=np.int64):
    return _rng.integers(lo, hi, shape).astype(dtype)


def _fill(dtype: np.dtype):
    """JAX's fill value for an out-of-range gather (see jflow/ops/index.py)."""
    d = np.dtype(dtype)
    if d.kind == "f":
        return np.nan
    if d.kind == "b":
        return True
    return np.iinfo(d).min if d.kind == "i" else np.iinfo(d).max


# -- dim_gather --------------------------------------------------------------------------------

def _gather_ref(x, index, dim):
    x, index = np.asarray(x), np.asarray(index)
    if x.ndim == 0:
        return _gather_ref(x.reshape(1), index.reshape(1), 0).reshape(())
    d = dim % x.ndim
    out = np.empty(index.shape, x.dtype)
    for pos in np.ndindex(*index.shape):
        j = int(index[pos])
        src = list(pos)
        src[d] = j
        out[pos] = x[tuple(src)] if 0 <= j < x.shape[d] else _fill(x.dtype)
    return out


_X = _f(3, 4)
register_samples("dim_gather", [
    Sample([_X, _i(3, 2, lo=0, hi=4)], {"dim": 1}),
    Sample([_X, _i(5, 4, lo=0, hi=3)], {"dim": 0}, name="index longer than input on dim"),
    Sample([_X, _i(2, 2, lo=0, hi=4, dtype=np.int32)], {"dim": -1},
           name="index smaller on the other dim, int32 index, negative dim"),
    Sample([_i(2, 3, 4), _i(2, 3, 2, lo=0, hi=3)], {"dim": 1}),
    Sample([_X > 0, _i(3, 4, lo=0, hi=3)], {"dim": 0}, name="bool input"),
    Sample([np.float64(3.5), np.int64(0)], {"dim": 0}, name="0-d"),
    Sample([_X, np.zeros((3, 0), np.int64)], {"dim": 1}, name="empty index"),
    # NaN in the output: finite differences are NaN, so no gradient check here
    Sample([_X, np.array([[4, 0], [-1, 3], [2, 9]])], {"dim": 1},
           name="out of range -> fill value (NaN)", grad=False),
    Sample([_f(2, 3, 2, dtype=np.float64), np.array([[[0, 1], [2, 2]], [[1, 1], [0, 2]]])],
           {"dim": 1}, name="3-D, repeated indices (gradient accumulates)"),
    Sample([_i(3, 4, dtype=np.int32), np.array([[-2], [1], [7]])], {"dim": 1},
           name="out of range -> fill value (int min)"),
], _gather_ref, errors=[
    ErrorSample([_X, _f(3, 2)], {"dim": 1}, TypeError, "integer"),
    ErrorSample([_X, _i(3, 2, 1, lo=0, hi=3)], {"dim": 1}, ValueError, "number of dimensions"),
    ErrorSample([_X, _i(4, 2, lo=0, hi=3)], {"dim": 1}, ValueError, "no larger"),
    ErrorSample([_X, _i(3, 2, lo=0, hi=3)], {"dim": 2}, ValueError, "out of range"),
])


# -- dim_scatter -------------------------------------------------------------------------------

def _scatter_ref(x, index, src, dim, reduce="none"):
    x, index, src = np.asarray(x), np.asarray(index), np.asarray(src)
    if x.ndim == 0:
        s = src if src.ndim == 0 else src.reshape(1)
        return _scatter_ref(x.reshape(1), index.reshape(1), s, 0, reduce).reshape(())
    d = dim % x.ndim
    out = x.copy()
    for pos in np.ndindex(*index.shape):
        j = int(index[pos])
        if not 0 <= j < x.shape[d]:
            continue
        tgt = list(pos)
        tgt[d] = j
        tgt = tuple(tgt)
        v = src if src.ndim == 0 else src[pos]
        if reduce == "add":
            out[tgt] = (out[tgt] or v) if x.dtype == np.bool_ else out[tgt] + v
        elif reduce == "multiply":
            out[tgt] = (out[tgt] and v) if x.dtype == np.bool_ else out[tgt] * v
        elif reduce == "max":
            out[tgt] = v if v > out[tgt] else out[tgt]
        elif reduce == "min":
            out[tgt] = v if v < out[tgt] else out[tgt]
        else:
            out[tgt] = v
    return out


def _perm_rows(n_rows, n_cols, size):
    """An index (n_rows, n_cols) whose columns hold distinct values in [0, size)."""
    return np.stack([_rng.permutation(size)[:n_rows] for _ in range(n_cols)], axis=1)


_DUP = np.array([[0, 1, 2, 0, 1], [2, 1, 0, 0, 1], [0, 0, 0, 2, 1]])  # repeats in columns
register_samples("dim_scatter", [
    Sample([_f(3, 5), _perm_rows(2, 5, 3), _f(2, 5)], {"dim": 0}),
    Sample([_f(3, 5), _perm_rows(2, 3, 5).T.copy(), _f(3, 4)], {"dim": 1},
           name="src larger than index"),
    Sample([_f(3, 5), _perm_rows(2, 3, 5).T.copy(), np.float32(7.0)], {"dim": -1},
           name="0-d src (a scalar value)"),
    Sample([_f(3, 5), _DUP, _f(3, 5)], {"dim": 0, "reduce": "add"}),
    Sample([_f(3, 5), _DUP, _f(3, 5)], {"dim": 0, "reduce": "multiply"}),
    Sample([_i(3, 5), _DUP.astype(np.int32), _i(3, 5)], {"dim": 0, "reduce": "add"}),
    Sample([_f(3, 5) > 1, _DUP, _f(3, 5) > 0], {"dim": 0, "reduce": "add"},
           name="bool add is or"),
    Sample([_f(3, 5) > -1, _DUP, _f(3, 5) > 0], {"dim": 0, "reduce": "multiply"},
           name="bool multiply is and"),
    Sample([np.float32(1.0), np.int64(0), np.float32(5.0)], {"dim": 0}, name="0-d"),
    Sample([_f(3, 5), np.array([[3, -1, 0, 7, 1]]), _f(1, 5)], {"dim": 0},
           name="out of range entries are dropped"),
    Sample([_f(3, 5), _DUP[:2, :4], _f(3, 5)], {"dim": 0, "reduce": "add"},
           name="add, src larger than index"),
    Sample([_f(3, 5), np.array([[3, -1, 0, 0, 1]]), np.float32(1.5)],
           {"dim": 0, "reduce": "add"}, name="add, 0-d src, repeats and out of range"),
    Sample([_f(3, 5), _DUP, np.float32(-0.5)], {"dim": 0},
           name="0-d src written at repeated positions"),
    Sample([_f(2, 4), np.array([[0, 1, 1, 3, 2], [3, 1, 3, 9, 2]]), _f(2, 6)],
           {"dim": 1, "reduce": "multiply"}, name="multiply along dim 1, out of range"),
    Sample([np.array([[1.5, 2.0, -2.0, 0.5], [0.0, 1.0, 3.0, -1.0]], np.float32),
            np.array([[0, 0, 1, 0], [1, 0, 1, 1], [0, 0, 1, 0]]),
            np.array([[0.0, 0.0, 2.0, 0.5], [1.5, -1.0, 0.0, 0.0], [2.0, 0.0, 0.5, 3.0]],
                     np.float32)],
           {"dim": 0, "reduce": "multiply"},
           name="multiply with zeros: none, one and two zero factors per target"),
    Sample([_f(3, 5), _DUP, np.float32(1.25)], {"dim": 0, "reduce": "multiply"},
           name="multiply, 0-d src, repeats"),
    # an even dim 1, so the SBP check runs (S(1), S(1), B) -> S(1) (a 0-d src stays B)
    Sample([_f(3, 4), _DUP[:2, :4], np.float32(1.5)], {"dim": 0, "reduce": "add"},
           name="add, 0-d src, even dim 1"),
    Sample([_f(3, 5, dtype=np.float64), _DUP, _f(3, 5, dtype=np.float64)],
           {"dim": 0, "reduce": "max"}, name="max, repeats"),
    Sample([_f(3, 5, dtype=np.float64), _DUP, _f(3, 5, dtype=np.float64)],
           {"dim": 0, "reduce": "min"}, name="min, repeats"),
    Sample([_i(2, 4), np.array([[0, 1, 1, 3, 2], [3, 1, 3, 9, 2]]), _i(2, 6)],
           {"dim": 1, "reduce": "max"}, name="max along dim 1, ints, out of range"),
    Sample([_f(3, 4) > 0, _DUP[:2, :4], _f(2, 4) > 0], {"dim": 0, "reduce": "min"},
           name="bool min is and"),
    Sample([np.array([[1.0, 2.0], [3.0, 0.5]]), np.array([[0, 1], [0, 1]]),
            np.array([[3.0, 2.0], [3.0, -1.0]])], {"dim": 0, "reduce": "max"},
           name="max with ties (input and src entries share the gradient)", grad=False),
    Sample([_f(3, 5, dtype=np.float64), _DUP, np.float64(0.25)], {"dim": 0, "reduce": "min"},
           name="min, 0-d src"),
], _scatter_ref, errors=[
    ErrorSample([_f(3, 5), _DUP, _f(3, 5, dtype=np.float64)], {"dim": 0}, TypeError, "dtype"),
    ErrorSample([_f(3, 5), _DUP, _f(3, 5)], {"dim": 0, "reduce": "mean"}, ValueError, "reduce"),
    ErrorSample([_f(3, 5), _DUP, _f(2, 5)], {"dim": 0}, ValueError, "no larger than src"),
    ErrorSample([_f(3, 5), _DUP, _f(15)], {"dim": 0}, ValueError, "0-d"),
    ErrorSample([_f(3, 5), _DUP.astype(np.float32), _f(3, 5)], {"dim": 0}, TypeError,
                "integer"),
])


# -- index_select ------------------------------------------------------------------------------

def _index_select_ref(x, index, dim):
    x, index = np.asarray(x), np.asarray(index).reshape(-1)
    if x.ndim == 0:
        return _index_select_ref(x.reshape(1), index, 0).reshape(())
    d = dim % x.ndim
    shape = list(x.shape)
    shape[d] = index.shape[0]
    out = np.empty(shape, x.dtype)
    for pos in np.ndindex(*shape):
        j = int(index[pos[d]])
        src = list(pos)
        src[d] = j
        out[pos] = x[tuple(src)] if 0 <= j < x.shape[d] else _fill(x.dtype)
    return out


register_samples("index_select", [
    Sample([_X, np.array([2, 0, 2])], {"dim": 0}),
    Sample([_X, np.array([3], np.int32)], {"dim": -1}),
    Sample([_i(2, 3, 4), np.int64(1)], {"dim": 1}, name="0-d index keeps the dim"),
    Sample([np.float32(2.5), np.array([0])], {"dim": 0}, name="0-d input"),
    Sample([_X, np.zeros((0,), np.int64)], {"dim": 1}, name="empty index"),
    # NaN in the output: finite differences are NaN, so no gradient check here
    Sample([_X, np.array([5, -1, 1])], {"dim": 1}, name="out of range -> fill value",
           grad=False),
    Sample([_f(2, 3, 2), np.array([2, 0, 2, 2], np.int32)], {"dim": 1},
           name="3-D, repeated indices (gradient accumulates)"),
    Sample([_f(2, 3, 4), np.int64(3)], {"dim": -1}, name="0-d index, float"),
], _index_select_ref, errors=[
    ErrorSample([_X, np.zeros((2, 2), np.int64)], {"dim": 0}, ValueError, "0-d or 1-D"),
    ErrorSample([_X, np.zeros((2,), np.float32)], {"dim": 0}, TypeError, "integer"),
    ErrorSample([_X, np.zeros((2,), np.int64)], {"dim": -3}, ValueError, "out of range"),
])



# -- index_add ---------------------------------------------------------------------------------

def _index_add_ref(x, index, src, dim):
    x, src, idx = np.array(x), np.asarray(src), np.asarray(index)
    d = dim % x.ndim
    ok = (idx >= 0) & (idx < x.shape[d])           # else dropped (negative ones too)
    xm, sm = np.moveaxis(x, d, 0), np.moveaxis(src, d, 0)
    np.add.at(xm, idx[ok], sm[ok])
    return x


register_samples("index_add", [
    Sample([_f(4, 3), np.array([2, 0, 2]), _f(4, 3)], {"dim": 1},
           name="repeated indices add up"),
    Sample([_f(3, 2, 4, dtype=np.float64), np.array([1, 0], np.int32),
            _f(3, 2, 2, dtype=np.float64)], {"dim": -1}),
    Sample([_f(5, 2), np.array([4, -1, 5, 0]), _f(4, 2)], {"dim": 0},
           name="out of range (negative too) adds nothing"),
    Sample([_i(4, 3), np.array([3, 3]), _i(2, 3)], {"dim": 0}, name="integers"),
    Sample([_f(4, 3), np.zeros((0,), np.int64), _f(4, 0)], {"dim": 1}, name="empty index"),
], _index_add_ref, errors=[
    ErrorSample([_f(4, 3), np.zeros((2, 1), np.int64), _f(4, 2)], {"dim": 1}, ValueError,
                "1-D"),
    ErrorSample([_f(4, 3), np.array([0, 1]), _f(4, 3)], {"dim": 1}, ValueError,
                "len\\(index\\)"),
    ErrorSample([_f(4, 3), np.array([0.0]), _f(4, 1)], {"dim": 1}, TypeError, "integer"),
    ErrorSample([_f(4, 3), np.array([0]), _f(4, 1, dtype=np.float64)], {"dim": 1}, TypeError,
                "dtype"),
])


# -- masked_fill -------------------------------------------------------------------------------

def _masked_fill_ref(x, mask, value):
    shape = np.broadcast_shapes(np.shape(x), np.shape(mask))
    out = np.broadcast_to(x, shape).copy()
    out[np.broadcast_to(mask, shape)] = value
    return out


register_samples("masked_fill", [
    Sample([_X, _f(3, 4) > 0, np.float32(-1.5)]),
    # an infinite fill value makes the finite-difference loss inf - inf: no gradient check
    Sample([_X, _f(4) > 0, np.float32(np.inf)], name="mask broadcast to input", grad=False),
    Sample([_X, _f(4) > 0, np.float32(-3.0)], name="mask broadcast to input, finite value"),
    Sample([_f(3, 1), _f(2, 3, 4) > 0, np.float32(0.5)],
           name="input broadcast on a size-1 and a leading dim"),
    Sample([_X, _f(2, 3, 4) > 0, np.float32(0.0)], name="mask enlarges the result"),
    Sample([_i(3, 4), _f(3, 1) > 0, np.int64(9)]),
    Sample([_X > 0, _f(3, 4) > 0, np.bool_(True)]),
    Sample([np.float64(1.0), np.bool_(True), np.float64(2.0)], name="0-d"),
], _masked_fill_ref, errors=[
    ErrorSample([_X, _f(3, 4), np.float32(0)], {}, TypeError, "bool"),
    ErrorSample([_X, _f(3, 4) > 0, _f(1)], {}, ValueError, "0-d"),
    ErrorSample([_X, _f(3, 4) > 0, np.float64(0)], {}, TypeError, "dtype"),
    ErrorSample([_X, _f(2, 4) > 0, np.float32(0)], {}, ValueError, "broadcast"),
])


# -- one_hot -----------------------------------------------------------------------------------

def _one_hot_ref(indices, num_classes, dtype=np.int64):
    indices = np.asarray(indices)
    out = np.zeros(indices.shape + (num_classes,), dtype)
    for pos in np.ndindex(*indices.shape):
        c = int(indices[pos])
        if 0 <= c < num_classes:
            out[pos + (c,)] = 1
    return out


register_samples("one_hot", [
    Sample([np.array([0, 3, 1, 3, 2])], {"num_classes": 4}),
    Sample([_i(2, 4, lo=0, hi=5, dtype=np.int32)], {"num_classes": 5, "dtype": np.float32}),
    Sample([np.int64(2)], {"num_classes": 3}, name="0-d"),
    Sample([np.zeros((0,), np.int64)], {"num_classes": 3}, name="empty"),
    Sample([np.zeros((2,), np.int64)], {"num_classes": 0}, name="no classes"),
    Sample([np.array([-1, 4, 1])], {"num_classes": 4}, name="out of range -> zero row"),
], _one_hot_ref, errors=[
    ErrorSample([_f(3)], {"num_classes": 3}, TypeError, "integer"),
    ErrorSample([np.array([1])], {"num_classes": -1}, ValueError, "num_classes"),
])


# -- sort / topk -------------------------------------------------------------------------------

def _key(v):
    """Python ordering key: NaN is the largest value; -0.0 == 0.0."""
    v = v.item() if isinstance(v, np.generic) else v
    return (1, 0.0) if isinstance(v, float) and math.isnan(v) else (0, v)


def _sort_lists(x, dim, descending):
    """(values, indices) by Python's stable ``sorted`` (stable for reverse=True as well)."""
    x = np.asarray(x)
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    d = dim % x.ndim
    xm = np.moveaxis(x, d, -1)
    vals, idxs = np.empty_like(xm), np.empty(xm.shape, np.int64)
    for pos in np.ndindex(*xm.shape[:-1]):
        row = xm[pos]
        order = sorted(range(row.shape[0]), key=lambda i: _key(row[i]), reverse=descending)
        idxs[pos] = order
        vals[pos] = row[order]
    return np.moveaxis(vals, -1, d), np.moveaxis(idxs, -1, d)


def _sort_ref(x, dim=-1, descending=False):
    return _sort_lists(x, dim, descending)


_TIES = _i(4, 7, lo=0, hi=3).astype(np.float32)
_NANS = np.array([[1.0, np.nan, -0.0, 0.0, -1.0, np.nan, 0.0, -0.0]], np.float32)
register_samples("sort", [
    Sample([_f(2, 5)]),
    Sample([_f(3, 5)], {"dim": 0, "descending": True}),
    # an even dim 1, so the SBP check runs (S(1)) -> (S(1), S(1)) for a sort along dim 0
    Sample([_f(3, 4)], {"dim": 0}, name="along dim 0, even dim 1"),
    # ties are kinks of sort (finite differences average the tied slots): no gradient check
    Sample([_TIES], {"descending": True}, name="ties keep their order (descending)",
           grad=False),
    Sample([_TIES], {"dim": 0}, name="ties keep their order (ascending)", grad=False),
    Sample([_i(2, 3, 6)], {"dim": 1}),
    # NaN inputs (and ties of 0.0 / -0.0): no gradient check
    Sample([_NANS], {"descending": True}, name="NaN first, -0.0 == 0.0, descending",
           grad=False),
    Sample([_NANS], name="NaN last, ascending", grad=False),
    Sample([_f(2, 3, 4, dtype=np.float64)], {"dim": 1, "descending": True}, name="3-D"),
    Sample([_f(6) > 0], name="bool"),
    Sample([np.float32(3.0)], name="0-d"),
    Sample([_f(3, 0)], name="empty sort axis"),
], _sort_ref, errors=[
    ErrorSample([_f(3, 5)], {"dim": 2}, ValueError, "out of range"),
])


def _topk_ref(x, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    v, i = _sort_lists(x, dim, largest)
    if np.ndim(x) == 0:
        return v, i
    d = dim % np.ndim(x)
    sl = tuple(slice(0, k) if a == d else slice(None) for a in range(np.ndim(x)))
    return v[sl], i[sl]


register_samples("topk", [
    Sample([_f(2, 6)], {"k": 3}),
    Sample([_f(3, 6)], {"k": 2, "largest": False}),
    Sample([_f(5, 4)], {"k": 5, "dim": 0}, name="k = size"),
    Sample([_f(3, 6)], {"k": 0}, name="k = 0"),
    Sample([_i(3, 6)], {"k": 4, "sorted": False}),
    # ties are kinks (finite differences average the tied slots) and NaN inputs make the
    # loss NaN: no gradient check on these three
    Sample([_TIES], {"k": 3}, name="ties by position", grad=False),
    Sample([_NANS], {"k": 3}, name="NaN is the largest", grad=False),
    Sample([_NANS], {"k": 3, "largest": False}, name="NaN is never the smallest", grad=False),
    Sample([_f(4, 2, 6)], {"k": 2, "dim": 0, "largest": False}, name="3-D, dim 0"),
    Sample([np.float64(3.0)], {"k": 1}, name="0-d"),
], _topk_ref, errors=[
    ErrorSample([_f(3, 6)], {"k": 7}, ValueError, "out of range"),
    ErrorSample([_f(3, 6)], {"k": -1}, ValueError, "k must be >= 0"),
    ErrorSample([_f(3, 6) > 0], {"k": 1}, TypeError, "numeric"),
    ErrorSample([np.float64(3.0)], {"k": 2}, ValueError, "0-d"),
])
