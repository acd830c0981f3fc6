"""Checker samples for jflow/ops/nn.py (softmax, log_softmax and their grad ops, linear,
embedding, dropout).

References are computed row by row in Python floats with ``math.fsum`` (exact summation) and
the max-shift identity, in float64 whatever the input dtype.
"""

from __future__ import annotations

import math

import jax
import ml_dtypes
import numpy as np

from ..samples import ErrorSample, Sample, register_samples, rerun

_rng = np.random.default_rng(3)


def _f(*shape, scale=2.0, dtype=np.float32):
    return (_rng.uniform(-1.0, 1.0, shape) * scale).astype(dtype)


def _rows(x, dim, fn):
    """Apply ``fn(list_of_floats) -> list_of_floats`` to every 1-d slice along ``dim``."""
    x = np.asarray(x).astype(np.float64)
    if x.ndim == 0:
        return np.asarray(fn([float(x)])[0])
    d = dim % x.ndim
    xm = np.moveaxis(x, d, -1)
    out = np.empty_like(xm)
    for pos in np.ndindex(*xm.shape[:-1]):
        if xm.shape[-1]:
            out[pos] = fn([float(v) for v in xm[pos]])
    return np.moveaxis(out, -1, d)


def _softmax_row(row):
    m = max(row)
    if m == -math.inf:
        return [math.nan] * len(row)
    e = [math.exp(v - m) for v in row]
    s = math.fsum(e)
    return [v / s for v in e]


def _log_softmax_row(row):
    m = max(row)
    if m == -math.inf:
        return [math.nan] * len(row)
    lse = m + math.log(math.fsum(math.exp(v - m) for v in row))
    return [v - lse for v in row]


_NEG_INF_ROW = np.array([[0.5, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]], np.float32)
_BIG = np.array([[1000.0, 999.0, -1000.0], [88.0, 89.0, 90.0]], np.float32)
_SOME_NEG_INF = np.array([[0.5, -np.inf, 1.0], [-np.inf, 2.0, -0.5]], np.float64)


def _samples(log: bool = False):
    extra = [] if log else [
        # softmax is 0 at -inf with zero gradient: checkable (log_softmax is -inf there, and
        # the loss with it, so its finite differences are nan)
        Sample([_SOME_NEG_INF], {"dim": 1}, name="-inf entries, no all -inf row")]
    return extra + [
        Sample([_f(2, 5)], {"dim": -1}),
        Sample([_f(3, 5)], {"dim": 0}),
        Sample([_f(2, 3, 4, dtype=np.float64)], {"dim": 1}),
        Sample([_f(4, 6, dtype=np.float16)], {"dim": -1}),
        Sample([_f(4, 6).astype(ml_dtypes.bfloat16)], {"dim": 0}),
        Sample([_BIG], {"dim": 1}, name="large values (no overflow)"),
        Sample([_f(3, 7, scale=30.0)], {"dim": 1}),
        # the outputs hold nan (and -inf for log_softmax): finite differences are nan
        Sample([_NEG_INF_ROW], {"dim": 1}, name="-inf entries; an all -inf row is NaN",
               grad=False),
        Sample([np.float32(1.5)], {"dim": 0}, name="0-d"),
        Sample([_f(2, 0)], {"dim": 1}, name="empty softmax axis"),
        Sample([_f(0, 3)], {"dim": 1}, name="no rows"),
    ]


def _errors():
    return [
        ErrorSample([np.arange(6).reshape(2, 3)], {"dim": 1}, TypeError, "floating"),
        ErrorSample([_f(2, 3)], {"dim": 2}, ValueError, "out of range"),
    ]


register_samples("softmax", _samples(), lambda x, dim=-1: _rows(x, dim, _softmax_row),
                 errors=_errors())
register_samples("log_softmax", _samples(log=True),
                 lambda x, dim=-1: _rows(x, dim, _log_softmax_row), errors=_errors())


# -- softmax_grad / log_softmax_grad ------------------------------------------------------------
# float64 NumPy formulas from the output y; an own generator, so the other samples keep their
# data.

_rng_grad = np.random.default_rng(71)


def _n(*shape, dtype=np.float32):
    return _rng_grad.standard_normal(shape).astype(dtype)


def _d(a):
    return np.asarray(a).astype(np.float64)


def _axis(y, dim):
    return dim % y.ndim


def _sg_ref(y, dy, dim=-1):
    y64, g = _d(y), _d(dy)
    if y64.ndim == 0:
        return (y64 * (g - g * y64)).astype(np.asarray(y).dtype)
    d = _axis(y64, dim)
    return (y64 * (g - (g * y64).sum(axis=d, keepdims=True))).astype(np.asarray(y).dtype)


def _lsg_ref(y, dy, dim=-1):
    y64, g = _d(y), _d(dy)
    if y64.ndim == 0:
        return (g - np.exp(y64) * g).astype(np.asarray(y).dtype)
    d = _axis(y64, dim)
    return (g - np.exp(y64) * g.sum(axis=d, keepdims=True)).astype(np.asarray(y).dtype)


def _probs(*shape, dim=-1, dtype=np.float32):
    e = np.exp(_rng_grad.standard_normal(shape))
    return (e / e.sum(axis=dim, keepdims=True)).astype(dtype)


def _logprobs(*shape, dim=-1, dtype=np.float32):
    x = _rng_grad.standard_normal(shape)
    return (x - np.log(np.exp(x).sum(axis=dim, keepdims=True))).astype(dtype)


_SG_ERR = [ErrorSample([_n(3, 4), _n(3, 5)], {}, ValueError, "dy must have"),
           ErrorSample([np.ones((2, 2), np.int64), np.ones((2, 2), np.int64)], {}, TypeError,
                       "floating")]

register_samples("softmax_grad", [
    Sample([_probs(2, 4), _n(2, 4)], {"dim": -1}),
    Sample([_probs(2, 3, 2, dim=1, dtype=np.float64), _n(2, 3, 2, dtype=np.float64)], {"dim": 1},
           name="middle axis"),
    Sample([_probs(4, 8, dtype=np.float16), _n(4, 8, dtype=np.float16)], {"dim": -1}),
], _sg_ref, errors=_SG_ERR)

register_samples("log_softmax_grad", [
    Sample([_logprobs(2, 4), _n(2, 4)], {"dim": -1}),
    Sample([_logprobs(2, 4, 2, dim=0, dtype=np.float64), _n(2, 4, 2, dtype=np.float64)],
           {"dim": 0}, name="first axis"),
    Sample([_logprobs(4, 8, dtype=np.float16), _n(4, 8, dtype=np.float16)], {"dim": -1}),
], _lsg_ref, errors=_SG_ERR)


# -- linear, embedding, dropout -------------------------------------------------------------------

def _linear_ref(x, weight, bias=None):
    y = np.asarray(x, np.float64) @ np.asarray(weight, np.float64).T
    if bias is not None:
        y = y + np.asarray(bias, np.float64)
    return y.astype(np.asarray(x).dtype)


register_samples("linear", [
    Sample([_f(4, 3), _f(5, 3), _f(5)]),
    Sample([_f(2, 3, 4, dtype=np.float64), _f(2, 4, dtype=np.float64), None], name="3-d, no bias"),
    Sample([_f(3), _f(2, 3), _f(2)], name="1-d input"),
    Sample([_f(4, 2), _f(6, 2), None], name="no bias (split contraction)"),
    Sample([_f(4, 8, dtype=np.float16), _f(4, 8, dtype=np.float16), _f(4, dtype=np.float16)]),
], _linear_ref, errors=[
    ErrorSample([_f(4, 3), _f(5, 4), None], {}, ValueError, "cannot be multiplied"),
    ErrorSample([_f(4, 3), _f(5, 3), _f(4)], {}, ValueError, "bias must have shape"),
    ErrorSample([_f(4, 3), _f(5, 3, dtype=np.float64), None], {}, TypeError, "dtype"),
    ErrorSample([_f(4, 3), _f(3), None], {}, ValueError, "2-d"),
])


def _embedding_ref(weight, indices, padding_idx=None):
    return np.asarray(weight)[np.asarray(indices)]


_EMB_W = _f(6, 3)
register_samples("embedding", [
    Sample([_EMB_W, np.array([[0, 2, 5], [2, 2, 1]], np.int64)], {}, name="repeated rows"),
    # padding_idx: the forward reads the padding row but its gradient is 0 by definition (as
    # in PyTorch), so finite differences disagree there on purpose; the rule is checked on
    # the other samples, the zeroed row in tests/test_nn_functional_ops.py
    Sample([_EMB_W, np.array([1, 0, 1, 4], np.int32)], {"padding_idx": 1}, name="padding_idx",
           grad=False),
    Sample([_EMB_W, np.array([3, 5, 0], np.int64)], {"padding_idx": -1},
           name="negative padding_idx", grad=False),
    Sample([_f(5, 4, dtype=np.float64), np.array(3, np.int64)], {}, name="0-d indices"),
    Sample([_f(4, 2, dtype=np.float16), np.array([[1], [3]], np.int64)], {}),
], _embedding_ref, errors=[
    ErrorSample([_EMB_W, np.array([0.0, 1.0])], {}, TypeError, "integer"),
    ErrorSample([_f(6), np.array([0, 1])], {}, ValueError, "2-d"),
    ErrorSample([_EMB_W, np.array([0, 1])], {"padding_idx": 6}, ValueError, "padding_idx"),
])


def _embedding_grad_ref(dy, indices, num_embeddings, padding_idx=None):
    dy, idx = np.asarray(dy), np.asarray(indices).reshape(-1)
    dw = np.zeros((num_embeddings, dy.shape[-1]), np.float64)
    ok = (idx >= -num_embeddings) & (idx < num_embeddings)   # else the forward read 0
    np.add.at(dw, idx[ok] % num_embeddings, dy.reshape(-1, dy.shape[-1]).astype(np.float64)[ok])
    if padding_idx is not None:
        dw[padding_idx % num_embeddings] = 0
    return dw.astype(dy.dtype)


register_samples("embedding_grad", [
    Sample([_f(2, 3, 4), np.array([[0, 2, 5], [2, 2, 1]], np.int64)], {"num_embeddings": 6},
           name="repeated rows"),
    Sample([_f(4, 3, dtype=np.float64), np.array([1, 0, 1, 4], np.int32)],
           {"num_embeddings": 6, "padding_idx": 1}, name="padding_idx"),
    Sample([_f(4, 2), np.array([3, -1, 7, -6], np.int64)], {"num_embeddings": 5,
                                                            "padding_idx": -2},
           name="negative rows count from the end, out of range ones add nothing"),
    Sample([_f(2, dtype=np.float64), np.array(3, np.int64)], {"num_embeddings": 4},
           name="0-d indices"),
    Sample([_f(2, 1, 2, dtype=np.float16), np.array([[1], [3]], np.int64)],
           {"num_embeddings": 4}),
], _embedding_grad_ref, errors=[
    ErrorSample([_f(3, 2), np.array([0.0, 1.0, 2.0])], {"num_embeddings": 4}, TypeError,
                "integer"),
    ErrorSample([_f(3, 2), np.array([0, 1])], {"num_embeddings": 4}, ValueError,
                "indices.shape"),
    ErrorSample([_f(2, 2), np.array([0, 1])], {"num_embeddings": 4, "padding_idx": 4},
                ValueError, "padding_idx"),
])


def _key(seed):
    return np.asarray(jax.random.PRNGKey(seed), dtype=np.uint32)


def _verify_dropout(outs, x, key, counter, p=0.5):
    y, mask = outs
    x = np.asarray(x)
    assert y.shape == x.shape and y.dtype == x.dtype, f"dropout: y is {y.dtype}{y.shape}"
    assert mask.shape == x.shape and mask.dtype == np.bool_, f"dropout: mask {mask.dtype}"
    scale = 0.0 if p >= 1.0 else 1.0 / (1.0 - p)
    want = np.where(mask, x.astype(np.float64) * scale, 0.0)
    tol = 1e-2 if x.dtype.itemsize < 4 else 1e-6
    assert np.allclose(y.astype(np.float64), want, rtol=tol, atol=tol), "dropout: y != x*mask/(1-p)"
    if p == 0.0:
        assert mask.all(), "dropout: p=0 dropped elements"
    if p == 1.0:
        assert not mask.any(), "dropout: p=1 kept elements"
    if x.size >= 1000:
        se = np.sqrt(p * (1 - p) / x.size)
        assert abs(mask.mean() - (1 - p)) < 6 * se + 1e-9, f"dropout: kept {mask.mean()}"
    # (rerun: under the checker by the path whose outputs are verified, its executable)
    again = rerun("dropout", [x, key, counter], {"p": p})
    assert np.array_equal(again[1], mask), "dropout: not deterministic"
    if x.size >= 16 and 0 < p < 1:
        other = rerun("dropout", [x, key, counter + 1], {"p": p})
        assert not np.array_equal(other[1], mask), "dropout: another counter gave the same mask"


_C0 = np.array(0, np.int64)
register_samples("dropout", [
    Sample([_f(4, 5), _key(0), _C0], {"p": 0.5}, batch=[_f(4, 5), _key(1), _C0 + 1]),
    Sample([_f(3, 4, dtype=np.float64), _key(3), np.array(5, np.int64)], {"p": 0.2}),
    Sample([_f(100, 40), _key(4), _C0], {"p": 0.3}, vmap=False, grad=False,
           name="statistics (large: no finite differences)"),
    Sample([_f(2, 3), _key(5), _C0], {"p": 0.0}, vmap=False),
    Sample([_f(2, 3), _key(5), _C0], {"p": 1.0}, vmap=False),
    Sample([_f(4, 8, dtype=np.float16), _key(6), _C0], {"p": 0.5}, vmap=False),
], verify=_verify_dropout, errors=[
    ErrorSample([_f(2, 3), _key(0), _C0], {"p": 1.5}, ValueError, "between 0 and 1"),
    ErrorSample([_f(2, 3), _key(0).astype(np.int32), _C0], {"p": 0.5}, TypeError, "uint32"),
    ErrorSample([np.ones(3, np.int64), _key(0), _C0], {"p": 0.5}, TypeError, "floating"),
])
