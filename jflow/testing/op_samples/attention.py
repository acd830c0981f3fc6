"""Checker samples for jflow/ops/attention.py (scaled_dot_product_attention and its gradient op).

The reference loops over the leading (batch, head) positions and the query rows in float64
NumPy: the row's scores, its allowed keys (bool mask, causal ``j <= i``, ``-inf`` of a float
mask), a plain softmax over the allowed keys and ``log(sum(exp))``. A row with no allowed key
gives ``out = 0`` and ``lse = +inf`` (jflow's documented convention). The gradient op's
reference applies the chain rule row by row from the same loop.
"""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(31)


def _f(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _stat(dt):
    return np.float64 if np.dtype(dt) == np.float64 else np.float32


def _rows(q, k, mask, is_causal, scale):
    """Yield (lead index, row i, scores over keys (float64), allowed keys (bool))."""
    q = np.asarray(q, np.float64)
    k = np.asarray(k, np.float64)
    n_l, n_s = q.shape[-2], k.shape[-2]
    lead = q.shape[:-2]
    m = None if mask is None else np.broadcast_to(np.asarray(mask), lead + (n_l, n_s))
    for idx in itertools.product(*[range(d) for d in lead]):
        for i in range(n_l):
            s = np.array([scale * float(np.dot(q[idx][i], k[idx][j])) for j in range(n_s)])
            ok = np.ones(n_s, bool)
            if m is not None:
                row = m[idx][i]
                if row.dtype == np.bool_:
                    ok &= row
                else:
                    s = s + row.astype(np.float64)
            if is_causal:
                ok &= np.arange(n_s) <= i
            ok &= s != -np.inf
            yield idx, i, s, ok


def _sdpa_ref(query, key, value, attn_mask=None, is_causal=False, scale=1.0):
    dt = np.asarray(query).dtype
    v = np.asarray(value, np.float64)
    out = np.zeros(query.shape[:-1] + (v.shape[-1],))
    lse = np.full(query.shape[:-1], np.inf)
    for idx, i, s, ok in _rows(query, key, attn_mask, is_causal, scale):
        if not ok.any():
            continue
        e = np.where(ok, np.exp(s - s[ok].max()), 0.0)
        out[idx][i] = e @ v[idx] / e.sum()
        lse[idx][i] = s[ok].max() + np.log(e.sum())
    return out.astype(dt), lse.astype(_stat(dt))


def _sdpa_grad_ref(query, key, value, out, lse, dout, dlse, attn_mask=None, is_causal=False,
                   scale=1.0):
    dt = np.asarray(query).dtype
    q, k, v = (np.asarray(a, np.float64) for a in (query, key, value))
    o, g, lse, dlse = (np.asarray(a, np.float64) for a in (out, dout, lse, dlse))
    dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
    for idx, i, s, ok in _rows(query, key, attn_mask, is_causal, scale):
        p = np.where(ok, np.exp(s - lse[idx][i]), 0.0)
        dp = v[idx] @ g[idx][i]
        ds = p * (dp - (g[idx][i] @ o[idx][i] - dlse[idx][i]))
        dq[idx][i] = scale * ds @ k[idx]
        dk[idx] += scale * np.outer(ds, q[idx][i])
        dv[idx] += np.outer(p, g[idx][i])
    return dq.astype(dt), dk.astype(dt), dv.astype(dt)


_q, _k, _v = _f(1, 2, 3, 4), _f(1, 2, 4, 4), _f(1, 2, 4, 2)
_q64, _k64, _v64 = _f(2, 3, 2, dtype=np.float64), _f(2, 4, 2, dtype=np.float64), \
    _f(2, 4, 3, dtype=np.float64)
_bool_mask = np.array([[True, False, True, True], [False, True, False, False],
                       [True, True, True, False]])
_hole_mask = np.array([[True, True, False, True], [False, False, False, False],
                       [True, False, True, True]])          # row 1: no key at all
_float_mask = _f(1, 3, 4, dtype=np.float64)
_float_mask[0, 0, 2] = -np.inf

register_samples("scaled_dot_product_attention", [
    Sample([_q, _k, _v, None], {"scale": 0.5}, name="4-d, L != S, no mask"),
    Sample([_q64, _k64, _v64, None], {"is_causal": True, "scale": 0.7},
           name="3-d, causal, L < S"),
    Sample([_q, _k, _v, _bool_mask], {"scale": 0.5}, name="bool mask (L, S)"),
    Sample([_q64, _k64, _v64, _float_mask], {"scale": 1.0},
           name="float mask (1, L, S) with a -inf"),
    Sample([_q, _k, _v, _bool_mask[None, None]], {"is_causal": True, "scale": 0.5},
           name="causal and bool mask"),
    # grad=False: the fully masked row has lse = +inf on purpose, which makes finite
    # differences of the loss meaningless (its gradients, all zero, are tested in
    # tests/test_attention.py through the functor, which returns only out)
    Sample([_q, _k, _v, _hole_mask], {"scale": 0.5}, name="fully masked row", grad=False),
    Sample([_f(3, 2, dtype=np.float64), _f(5, 2, dtype=np.float64),
            _f(5, 2, dtype=np.float64), None], {"scale": 0.5}, name="2-d"),
    Sample([_f(2, 3, 8, dtype=np.float16), _f(2, 4, 8, dtype=np.float16),
            _f(2, 4, 8, dtype=np.float16), None], {"is_causal": True, "scale": 0.35},
           name="float16"),
    Sample([_f(2, 3, 8).astype(ml_dtypes.bfloat16), _f(2, 4, 8).astype(ml_dtypes.bfloat16),
            _f(2, 4, 8).astype(ml_dtypes.bfloat16), None], {"scale": 0.35}, name="bfloat16"),
], _sdpa_ref, errors=[
    ErrorSample([_q, _k.astype(np.float64), _v, None], {"scale": 1.0}, TypeError,
                "key must have the query's dtype"),
    ErrorSample([_q, _f(1, 2, 4, 3), _v, None], {"scale": 1.0}, ValueError,
                "key's last dim"),
    ErrorSample([_q, _k, _f(1, 2, 5, 2), None], {"scale": 1.0}, ValueError, "as many rows"),
    ErrorSample([_q, _f(2, 2, 4, 4), _f(2, 2, 4, 2), None], {"scale": 1.0}, ValueError,
                "same leading"),
    ErrorSample([_f(4), _f(4), _f(4), None], {"scale": 1.0}, ValueError, "rank >= 2"),
    ErrorSample([_q, _k, _v, np.ones((3, 3), bool)], {"scale": 1.0}, ValueError,
                "cannot be broadcast"),
    ErrorSample([_q, _k, _v, np.ones((3, 4), np.int64)], {"scale": 1.0}, TypeError,
                "bool or of the query's dtype"),
    ErrorSample([_q, _k, _v, np.ones((3, 4), np.float64)], {"scale": 1.0}, TypeError,
                "float attn_mask must have"),
    ErrorSample([np.ones((3, 4), np.int64)] * 3 + [None], {"scale": 1.0}, TypeError,
                "floating"),
])


def _grad_inputs(q, k, v, mask, is_causal, scale):
    out, lse = _sdpa_ref(q, k, v, mask, is_causal, scale)
    return [q, k, v, out, lse, _f(*out.shape, dtype=out.dtype),
            _f(*lse.shape, dtype=lse.dtype), mask]


register_samples("scaled_dot_product_attention_grad", [
    Sample(_grad_inputs(_q, _k, _v, None, False, 0.5), {"scale": 0.5}, name="no mask"),
    Sample(_grad_inputs(_q64, _k64, _v64, None, True, 0.7), {"is_causal": True, "scale": 0.7},
           name="causal"),
    Sample(_grad_inputs(_q, _k, _v, _bool_mask, False, 0.5), {"scale": 0.5},
           name="bool mask"),
    Sample(_grad_inputs(_q64, _k64, _v64, _float_mask, False, 1.0), {"scale": 1.0},
           name="float mask"),
    Sample(_grad_inputs(_f(3, 2, dtype=np.float64), _f(5, 2, dtype=np.float64),
                        _f(5, 2, dtype=np.float64), None, True, 0.5),
           {"is_causal": True, "scale": 0.5}, name="2-d, causal"),
], _sdpa_grad_ref, errors=[
    ErrorSample(_grad_inputs(_q, _k, _v, None, False, 0.5)[:4]
                + [_f(1, 2, 3, dtype=np.float64), _f(1, 2, 3, 2), _f(1, 2, 3), None],
                {"scale": 0.5}, ValueError, "lse must be float32"),
])
