"""Checker samples for jflow/ops/loss.py (per-element losses; the functors reduce).

References are float64 NumPy: the textbook formulas, element by element.
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(17)


def _f(*shape, dtype=np.float32, scale=1.0):
    return (_rng.standard_normal(shape) * scale).astype(dtype)


def _u(*shape, dtype=np.float32):
    return _rng.uniform(0.0, 1.0, shape).astype(dtype)


def _d(a):
    return None if a is None else np.asarray(a).astype(np.float64)


def _mse_ref(x, target):
    return ((_d(x) - _d(target)) ** 2).astype(np.asarray(x).dtype)


def _l1_ref(x, target):
    return np.abs(_d(x) - _d(target)).astype(np.asarray(x).dtype)


def _elementwise_samples():
    return [
        Sample([_f(2, 4), _f(2, 4)]),
        Sample([_f(2, 4, dtype=np.float64), _f(4, dtype=np.float64)], name="broadcast target"),
        Sample([np.float32(1.5), np.float32(-0.5)], name="0-d"),
        Sample([_f(4, 4, dtype=np.float16), _f(4, 4, dtype=np.float16)]),
        Sample([_f(0, 3), _f(0, 3)], name="empty"),
    ]


_ERR = [ErrorSample([_f(2, 3), _f(2, 4)], {}, ValueError, "broadcast"),
        ErrorSample([np.ones(3, np.int64), np.ones(3, np.int64)], {}, TypeError, "floating"),
        ErrorSample([_f(3), _f(3, dtype=np.float64)], {}, TypeError, "same dtype")]

register_samples("mse_loss", _elementwise_samples(), _mse_ref, errors=_ERR)
register_samples("l1_loss", _elementwise_samples(), _l1_ref, errors=_ERR)


def _bce_ref(x, target, weight=None, pos_weight=None):
    x64, t = _d(x), _d(target)
    log_sig = -np.logaddexp(0.0, -x64)          # log sigmoid(x)
    log_1m = -np.logaddexp(0.0, x64)            # log (1 - sigmoid(x))
    pw = 1.0 if pos_weight is None else _d(pos_weight)
    out = -(pw * t * log_sig + (1 - t) * log_1m)
    if weight is not None:
        out = out * _d(weight)
    return out.astype(np.asarray(x).dtype)


register_samples("binary_cross_entropy_with_logits", [
    Sample([_f(2, 4, scale=3.0), _u(2, 4), None, None]),
    Sample([_f(2, 4, dtype=np.float64), _u(2, 4, dtype=np.float64), _u(2, 1, dtype=np.float64),
            _u(4, dtype=np.float64) + 0.5], name="weight and pos_weight"),
    Sample([_f(4, 2), _u(4, 2), None, _u(2) + 0.5], name="pos_weight only"),
    Sample([_f(4, 2), _u(4, 2), _u(2), None], name="weight only"),
    Sample([np.array([60.0, -60.0, 0.0], np.float32), np.array([0.0, 1.0, 0.5], np.float32),
            None, None], name="large logits (stable)"),
    Sample([_f(4, 4, dtype=np.float16), _u(4, 4, dtype=np.float16), None, None]),
], _bce_ref, errors=[
    ErrorSample([_f(2, 3), _u(2, 3, dtype=np.float64), None, None], {}, TypeError, "dtype"),
    ErrorSample([_f(2, 3), _u(2, 4), None, None], {}, ValueError, "broadcast"),
])


def _nll_ref(x, target, weight=None, ignore_index=-100):
    x64 = _d(x)
    t = np.asarray(target)
    c_axis = 0 if x64.ndim == 1 else 1
    xm = np.moveaxis(x64, c_axis, -1)          # target.shape + (C,)
    loss = np.zeros(t.shape)
    wt = np.zeros(t.shape)
    for pos in np.ndindex(*t.shape):
        k = int(t[pos])
        if k == ignore_index:
            continue
        w = 1.0 if weight is None else float(np.asarray(weight)[k])
        wt[pos] = w
        loss[pos] = -w * xm[pos][k]
    dt = np.asarray(x).dtype
    return loss.astype(dt), wt.astype(dt)


register_samples("nll_loss", [
    Sample([_f(4, 3), np.array([0, 2, 1, 2], np.int64), None], {}),
    Sample([_f(5, 4, dtype=np.float64), np.array([3, -100, 0, 1, 3], np.int64),
            _u(4, dtype=np.float64) + 0.5], {}, name="weight, ignored target"),
    Sample([_f(2, 3, 2, 2), np.array([[[0, 1], [2, 1]], [[1, 1], [0, 2]]], np.int64), _u(3)],
           {"ignore_index": 1}, name="spatial (N, C, H, W), ignore_index in range"),
    Sample([_f(4), np.array(2, np.int64), None], {}, name="1-d input, 0-d target"),
    Sample([_f(3, 5), np.array([4, 0, 1], np.int32), _u(5)], {}, name="int32 target"),
    Sample([_f(4, 6, dtype=np.float16), np.array([5, 0, 1, 3], np.int64), None], {}),
], _nll_ref, errors=[
    ErrorSample([_f(4, 3), np.array([0, 1, 2]), None], {}, ValueError, "does not match"),
    ErrorSample([_f(4, 3), np.array([0.0, 1, 2, 1]), None], {}, TypeError, "integer"),
    ErrorSample([_f(4, 3), np.array([0, 1, 2, 1]), _u(4)], {}, ValueError, "one per class"),
    ErrorSample([np.float32(1.0), np.array(0), None], {}, ValueError, "at least 1-d"),
])


# -- sparse_softmax_cross_entropy ----------------------------------------------------

def _lse_ref(x64):
    m = x64.max(axis=1, keepdims=True)
    return np.log(np.exp(x64 - m).sum(axis=1)) + m[:, 0]


def _low(dt):
    return np.dtype(dt) in (np.dtype(np.float16),) or np.dtype(dt).name == "bfloat16"


def _sce_ref(logits, labels, ignore_index=-100):
    x64 = _d(logits)
    t = np.asarray(labels)
    lse = _lse_ref(x64)
    loss = np.zeros(t.shape)
    for i, k in enumerate(t):
        if int(k) != ignore_index:
            loss[i] = lse[i] - x64[i, int(k)]
    dt = np.asarray(logits).dtype
    return loss.astype(dt), lse.astype(np.float32 if _low(dt) else dt)


register_samples("sparse_softmax_cross_entropy", [
    Sample([_f(4, 5), np.array([0, 4, 2, 1], np.int64)], {}),
    Sample([_f(3, 6, dtype=np.float64), np.array([5, -100, 0], np.int64)], {},
           name="ignored row"),
    Sample([_f(3, 4), np.array([1, 3, 3], np.int32)], {"ignore_index": 3},
           name="int32 labels, ignore_index in range"),
    Sample([_f(4, 8, dtype=np.float16), np.array([7, 0, 1, 3], np.int64)], {}),
], _sce_ref, errors=[
    ErrorSample([_f(4, 3), np.array([0, 1, 2])], {}, ValueError, "do not match"),
    ErrorSample([_f(4), np.array(0)], {}, ValueError, "2-d"),
    ErrorSample([_f(2, 3), np.array([0.0, 1.0])], {}, TypeError, "integer"),
])


def _sceg_ref(logits, labels, lse, dloss, dlse, ignore_index=-100):
    x64 = _d(logits)
    t = np.asarray(labels)
    valid = (t != ignore_index).astype(np.float64)
    dl = _d(dloss) * valid
    p = np.exp(x64 - _d(lse)[:, None])
    g = p * (dl + _d(dlse))[:, None]
    for i, k in enumerate(t):
        if 0 <= int(k) < x64.shape[1]:
            g[i, int(k)] -= dl[i]
    return g.astype(np.asarray(logits).dtype)


def _sceg_sample(n, v, labels, dtype=np.float32, **kw):
    x = _f(n, v, dtype=dtype)
    lse_dt = np.float32 if _low(dtype) else dtype
    lse = (_lse_ref(_d(x)) + _rng.uniform(-0.1, 0.1, n)).astype(lse_dt)
    return Sample([x, np.array(labels, np.int64), lse, _f(n, dtype=dtype), _f(n, dtype=lse_dt)],
                  **kw)


register_samples("sparse_softmax_cross_entropy_grad", [
    _sceg_sample(3, 4, [0, 3, 1]),
    _sceg_sample(3, 5, [4, -100, 2], dtype=np.float64, name="ignored row"),
    _sceg_sample(2, 8, [7, 0], dtype=np.float16),
], _sceg_ref, errors=[
    ErrorSample([_f(2, 3), np.array([0, 1]), _f(3), _f(2), _f(2)], {}, ValueError,
                "lse must have shape"),
])


# -- ctc_loss / ctc_loss_grad ---------------------------------------------------------------------
# Reference: the CTC forward recursion over the extended label sequence in probability space,
# loop by loop in float64 (the kernel works in log space with lax.scan); the grad op's
# reference is central differences of that recursion.

def _ctc_ref_one(p, target, t_len):
    ext = [0]
    for lab in target:
        ext += [int(lab), 0]
    k = len(ext)
    a = np.zeros(k)
    if t_len == 0:
        return 0.0 if len(target) == 0 else np.inf
    a[0] = p[0, ext[0]]
    if k > 1:
        a[1] = p[0, ext[1]]
    for t in range(1, t_len):
        b = np.zeros(k)
        for s in range(k):
            tot = a[s] + (a[s - 1] if s >= 1 else 0.0)
            if s >= 2 and ext[s] != 0 and ext[s] != ext[s - 2]:
                tot += a[s - 2]
            b[s] = tot * p[t, ext[s]]
        a = b
    prob = a[k - 1] + (a[k - 2] if k > 1 else 0.0)
    return -np.log(prob) if prob > 0 else np.inf


def _ctc_ref_blank(log_probs, targets, input_lengths, target_lengths, blank):
    """The reference with blank moved to class 0 (a permutation of the classes)."""
    lp = _d(log_probs)
    c = lp.shape[2]
    perm = [blank] + [i for i in range(c) if i != blank]
    inv = {old: new for new, old in enumerate(perm)}
    p = np.exp(lp[:, :, perm])
    out = [_ctc_ref_one(p[:, i], [inv[int(v)] for v in targets[i][:int(target_lengths[i])]],
                        int(input_lengths[i])) for i in range(lp.shape[1])]
    return np.array(out).astype(np.asarray(log_probs).dtype)


def _ctc_ref(log_probs, targets, input_lengths, target_lengths, blank=0):
    return _ctc_ref_blank(log_probs, targets, input_lengths, target_lengths, blank)


def _ctcg_ref(log_probs, targets, input_lengths, target_lengths, blank=0):
    lp = _d(log_probs)
    g = np.zeros_like(lp)
    h = 1e-6
    for idx in np.ndindex(lp.shape):
        up, dn = lp.copy(), lp.copy()
        up[idx] += h
        dn[idx] -= h
        diff = (_ctc_ref_blank(up, targets, input_lengths, target_lengths, blank)
                - _ctc_ref_blank(dn, targets, input_lengths, target_lengths, blank))
        g[idx] = np.sum(np.where(np.isfinite(diff), diff, 0.0)) / (2 * h)
    return g.astype(np.asarray(log_probs).dtype)


def _log_probs(t, n, c, dtype=np.float64, blank_boost=0.0):
    x = _rng.standard_normal((t, n, c))
    x[:, :, 0] += blank_boost
    x = x - np.log(np.exp(x).sum(axis=2, keepdims=True))
    return x.astype(dtype)


_I = np.int64
register_samples("ctc_loss", [
    Sample([_log_probs(5, 3, 4), np.array([[1, 2], [3, 3], [2, 0]], _I),
            np.array([5, 4, 5], _I), np.array([2, 2, 1], _I)], {},
           name="repeated label, shorter input"),
    Sample([_log_probs(6, 2, 5, np.float32, blank_boost=3.0), np.array([[4, 1, 2], [1, 0, 0]], _I),
            np.array([6, 6], np.int32), np.array([3, 0], np.int32)], {}, rtol=1e-4, atol=1e-4,
           name="blank-heavy, empty target, int32 lengths"),
    Sample([_log_probs(4, 2, 3), np.array([[0, 1], [1, 0]], _I), np.array([4, 3], _I),
            np.array([2, 1], _I)], {"blank": 2}, name="blank = last class"),
    # no alignment of a 3-label target in 2 steps: loss +inf (finite differences meaningless)
    Sample([_log_probs(3, 2, 3), np.array([[1, 2, 1], [1, 1, 1]], _I), np.array([3, 2], _I),
            np.array([2, 3], _I)], {}, grad=False, name="infeasible -> inf"),
], _ctc_ref, errors=[
    ErrorSample([_log_probs(4, 2, 3), np.array([[1], [2]], _I), np.array([4], _I),
                 np.array([1, 1], _I)], {}, ValueError, "input_lengths must have shape"),
    ErrorSample([_log_probs(4, 2, 3), np.array([[1], [2]], _I), np.array([4, 4], _I),
                 np.array([1, 1], _I)], {"blank": 3}, ValueError, "blank 3 must be in"),
    ErrorSample([_log_probs(4, 2, 3)[0], np.array([[1], [2]], _I), np.array([4, 4], _I),
                 np.array([1, 1], _I)], {}, ValueError, "log_probs must be 3-d"),
    ErrorSample([_log_probs(4, 2, 3), np.array([[1.0], [2.0]]), np.array([4, 4], _I),
                 np.array([1, 1], _I)], {}, TypeError, "integer"),
])

register_samples("ctc_loss_grad", [
    Sample([_log_probs(4, 2, 3), np.array([[1, 2], [2, 2]], _I), np.array([4, 4], _I),
            np.array([2, 2], _I)], {}, rtol=1e-5, atol=1e-6),
    Sample([_log_probs(5, 2, 4, blank_boost=2.0), np.array([[3, 2], [2, 0]], _I),
            np.array([5, 3], _I), np.array([2, 1], _I)], {"blank": 1},
           rtol=1e-5, atol=1e-6, name="blank-heavy, blank 1"),
], _ctcg_ref, errors=[
    ErrorSample([_log_probs(4, 2, 3), np.array([[1], [2], [1]], _I), np.array([4, 4], _I),
                 np.array([1, 1], _I)], {}, ValueError, "targets must be 2-d"),
])
