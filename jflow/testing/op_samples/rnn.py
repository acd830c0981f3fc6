"""Checker samples for jflow/ops/rnn.py: ``lstm_layer`` and its gradient.

References are float64 NumPy: the LSTM recurrence step by step (PyTorch's equations, gates
i, f, g, o), and for the gradient op central finite differences of that recurrence (the
sum of each output times its cotangent), not the backward formulas the kernel uses.
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(29)


def _f(*shape, dtype=np.float32, scale=1.0):
    return (_rng.standard_normal(shape) * scale).astype(dtype)


def _sig(x):
    return 1 / (1 + np.exp(-x))


def _lstm64(gi, h0, c0, w_hh, b_hh, reverse=False):
    gi, h, c, w, b = (np.asarray(a, np.float64) for a in (gi, h0, c0, w_hh, b_hh))
    t_len, hid = gi.shape[0], h.shape[-1]
    y, cs, gates = (np.zeros((t_len,) + h.shape), np.zeros((t_len,) + h.shape),
                    np.zeros(gi.shape))
    for t in (range(t_len - 1, -1, -1) if reverse else range(t_len)):
        a = gi[t] + h @ w.T + b
        i, f = _sig(a[:, :hid]), _sig(a[:, hid:2 * hid])
        g, o = np.tanh(a[:, 2 * hid:3 * hid]), _sig(a[:, 3 * hid:])
        c = f * c + i * g
        h = o * np.tanh(c)
        y[t], cs[t], gates[t] = h, c, np.concatenate([i, f, g, o], -1)
    return y, h, c, cs, gates


def _lstm_ref(gi, h0, c0, w_hh, b_hh, reverse=False):
    dt = np.asarray(gi).dtype
    return tuple(o.astype(dt) for o in _lstm64(gi, h0, c0, w_hh, b_hh, reverse))


def _lstm_grad_ref(gi, h0, c0, w_hh, b_hh, y, c, gates, dy, dh_n, dc_n, dc, dgates,
                   reverse=False):
    """d/d(gi, h0, c0, w_hh, b_hh) of sum(output * cotangent) over the five outputs, by
    central differences in float64 (the saved y, c, gates are recomputed, as they are
    functions of the inputs)."""
    dt = np.asarray(gi).dtype
    primals = [np.asarray(a, np.float64).copy() for a in (gi, h0, c0, w_hh, b_hh)]
    cots = [np.asarray(a, np.float64) for a in (dy, dh_n, dc_n, dc, dgates)]

    def loss():
        return sum(float((o * g).sum()) for o, g in zip(_lstm64(*primals, reverse), cots))
    grads, eps = [], 1e-6
    for p in primals:
        g = np.zeros_like(p)
        for k in np.ndindex(p.shape):
            old = p[k]
            p[k] = old + eps
            up = loss()
            p[k] = old - eps
            down = loss()
            p[k] = old
            g[k] = (up - down) / (2 * eps)
        grads.append(g.astype(dt))
    return tuple(grads)


def _sample(t, n, h, dtype=np.float32, reverse=False, **kw):
    return Sample([_f(t, n, 4 * h, dtype=dtype), _f(n, h, dtype=dtype), _f(n, h, dtype=dtype),
                   _f(4 * h, h, dtype=dtype, scale=0.5), _f(4 * h, dtype=dtype)],
                  {"reverse": reverse}, **kw)


register_samples("lstm_layer", [
    _sample(3, 2, 3),
    _sample(4, 2, 2, dtype=np.float64, reverse=True, name="reverse"),
    _sample(2, 4, 3, dtype=np.float16, rtol=2e-2, atol=2e-2),
], _lstm_ref, errors=[
    ErrorSample([_f(3, 2, 10), _f(2, 3), _f(2, 3), _f(12, 3), _f(12)], {}, ValueError,
                "gi must be"),
    ErrorSample([_f(3, 2, 12), _f(2, 3), _f(2, 4), _f(12, 3), _f(12)], {}, ValueError,
                "c0 must be"),
])


def _grad_sample(t, n, h, dtype=np.float32, reverse=False, **kw):
    ins = [_f(t, n, 4 * h, dtype=dtype), _f(n, h, dtype=dtype), _f(n, h, dtype=dtype),
           _f(4 * h, h, dtype=dtype, scale=0.5), _f(4 * h, dtype=dtype)]
    y, _, _, c, gates = _lstm_ref(*ins, reverse)
    cots = [_f(t, n, h, dtype=dtype), _f(n, h, dtype=dtype), _f(n, h, dtype=dtype),
            _f(t, n, h, dtype=dtype), _f(t, n, 4 * h, dtype=dtype)]
    return Sample(ins + [y, c, gates] + cots, {"reverse": reverse}, **kw)


register_samples("lstm_layer_grad", [
    _grad_sample(3, 2, 3, rtol=1e-4, atol=1e-5),
    _grad_sample(3, 2, 2, dtype=np.float64, reverse=True, rtol=1e-6, atol=1e-7,
                 name="reverse"),
], _lstm_grad_ref, errors=[
    ErrorSample([_f(3, 2, 12), _f(2, 3), _f(2, 3), _f(12, 3), _f(12), _f(3, 2, 3), _f(3, 2, 3),
                 _f(3, 2, 12), _f(3, 2, 4), _f(2, 3), _f(2, 3), _f(3, 2, 3), _f(3, 2, 12)], {},
                ValueError, "dy must be"),
])


def _lstm_jvp_ref(gi, h0, c0, w_hh, b_hh, t_gi, t_h0, t_c0, t_w, t_b, reverse=False):
    """The outputs' directional derivative along the tangents, by central differences of
    the float64 recurrence."""
    dt = np.asarray(gi).dtype
    p = [np.asarray(a, np.float64) for a in (gi, h0, c0, w_hh, b_hh)]
    t = [np.asarray(a, np.float64) for a in (t_gi, t_h0, t_c0, t_w, t_b)]
    eps = 1e-6
    up = _lstm64(*[a + eps * b for a, b in zip(p, t)], reverse)
    down = _lstm64(*[a - eps * b for a, b in zip(p, t)], reverse)
    return tuple(((u - d) / (2 * eps)).astype(dt) for u, d in zip(up, down))


def _jvp_sample(t, n, h, dtype=np.float32, reverse=False, **kw):
    ins = [_f(t, n, 4 * h, dtype=dtype), _f(n, h, dtype=dtype), _f(n, h, dtype=dtype),
           _f(4 * h, h, dtype=dtype, scale=0.5), _f(4 * h, dtype=dtype)]
    return Sample(ins + [_f(*np.shape(a), dtype=dtype) for a in ins], {"reverse": reverse},
                  **kw)


register_samples("lstm_layer_jvp", [
    _jvp_sample(3, 2, 3, rtol=1e-4, atol=1e-5),
    _jvp_sample(3, 2, 2, dtype=np.float64, reverse=True, rtol=1e-6, atol=1e-7, name="reverse"),
], _lstm_jvp_ref, errors=[
    ErrorSample([_f(3, 2, 12), _f(2, 3), _f(2, 3), _f(12, 3), _f(12), _f(3, 2, 12), _f(2, 3),
                 _f(2, 3), _f(12, 4), _f(12)], {}, ValueError, "t_w_hh must be"),
])
