"""Checker samples for jflow/ops/rnn.py: ``lstm_layer``, ``gru_layer``, ``rnn_layer`` and
their gradient and tangent ops.

References are float64 NumPy: each recurrence step by step (PyTorch's equations: LSTM gates
i, f, g, o; GRU gates r, z, n with b_hn inside the reset product; RNN tanh or relu), and for
the gradient and tangent ops central finite differences of that recurrence (for the gradient
the sum of each output times its cotangent), not the backward formulas the kernels use.
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(29)


def _f(*shape, dtype=np.float32, scale=1.0):
    return (_rng.standard_normal(shape) * scale).astype(dtype)


def _sig(x):
    return 1 / (1 + np.exp(-x))


# -- shared: finite differences of a float64 recurrence ----------------------------------------

def _fd_grad(fn, ins, cots, reverse, **kw):
    """d/d(each of ``ins``) of sum(output * cotangent) over ``fn``'s outputs, by central
    differences in float64 (the saved outputs a gradient op reads are recomputed, as they are
    functions of the inputs)."""
    dt = np.asarray(ins[0]).dtype
    primals = [np.asarray(a, np.float64).copy() for a in ins]
    cots = [np.asarray(a, np.float64) for a in cots]

    def loss():
        return sum(float((o * g).sum()) for o, g in zip(fn(*primals, reverse, **kw), cots))
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


def _fd_jvp(fn, ins, tans, reverse, **kw):
    """The outputs' directional derivative along the tangents, by central differences of the
    float64 recurrence ``fn``."""
    dt = np.asarray(ins[0]).dtype
    p = [np.asarray(a, np.float64) for a in ins]
    t = [np.asarray(a, np.float64) for a in tans]
    eps = 1e-6
    up = fn(*[a + eps * b for a, b in zip(p, t)], reverse, **kw)
    down = fn(*[a - eps * b for a, b in zip(p, t)], reverse, **kw)
    return tuple(((u - d) / (2 * eps)).astype(dt) for u, d in zip(up, down))


# -- LSTM --------------------------------------------------------------------------------------

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
    """d/d(gi, h0, c0, w_hh, b_hh) of sum(output * cotangent) over the five outputs."""
    return _fd_grad(_lstm64, (gi, h0, c0, w_hh, b_hh), (dy, dh_n, dc_n, dc, dgates), reverse)


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
    return _fd_jvp(_lstm64, (gi, h0, c0, w_hh, b_hh), (t_gi, t_h0, t_c0, t_w, t_b), reverse)


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


# -- GRU ---------------------------------------------------------------------------------------

def _gru64(gi, h0, w_hh, b_hh, reverse=False):
    gi, h, w, b = (np.asarray(a, np.float64) for a in (gi, h0, w_hh, b_hh))
    t_len, hid = gi.shape[0], h.shape[-1]
    y, gates, ghn = (np.zeros((t_len,) + h.shape), np.zeros(gi.shape),
                     np.zeros((t_len,) + h.shape))
    for t in (range(t_len - 1, -1, -1) if reverse else range(t_len)):
        gh = h @ w.T + b
        r = _sig(gi[t, :, :hid] + gh[:, :hid])
        z = _sig(gi[t, :, hid:2 * hid] + gh[:, hid:2 * hid])
        n = np.tanh(gi[t, :, 2 * hid:] + r * gh[:, 2 * hid:])
        h = (1 - z) * n + z * h
        y[t], gates[t], ghn[t] = h, np.concatenate([r, z, n], -1), gh[:, 2 * hid:]
    return y, h, gates, ghn


def _gru_ref(gi, h0, w_hh, b_hh, reverse=False):
    dt = np.asarray(gi).dtype
    return tuple(o.astype(dt) for o in _gru64(gi, h0, w_hh, b_hh, reverse))


def _gru_ins(t, n, h, dtype):
    return [_f(t, n, 3 * h, dtype=dtype), _f(n, h, dtype=dtype),
            _f(3 * h, h, dtype=dtype, scale=0.5), _f(3 * h, dtype=dtype)]


def _gru_sample(t, n, h, dtype=np.float32, reverse=False, **kw):
    return Sample(_gru_ins(t, n, h, dtype), {"reverse": reverse}, **kw)


register_samples("gru_layer", [
    _gru_sample(3, 2, 3),
    _gru_sample(4, 2, 2, dtype=np.float64, reverse=True, name="reverse"),
    _gru_sample(2, 4, 3, dtype=np.float16, rtol=2e-2, atol=2e-2),
], _gru_ref, errors=[
    ErrorSample([_f(3, 2, 10), _f(2, 3), _f(9, 3), _f(9)], {}, ValueError, "gi must be"),
    ErrorSample([_f(3, 2, 9), _f(2, 4), _f(9, 3), _f(9)], {}, ValueError, "h0 must be"),
    ErrorSample([_f(3, 2, 9), _f(2, 3), _f(9, 3), _f(12)], {}, ValueError, "b_hh must be"),
])


def _gru_grad_ref(gi, h0, w_hh, b_hh, y, gates, ghn, dy, dh_n, dgates, dghn, reverse=False):
    """d/d(gi, h0, w_hh, b_hh) of sum(output * cotangent) over the four outputs."""
    return _fd_grad(_gru64, (gi, h0, w_hh, b_hh), (dy, dh_n, dgates, dghn), reverse)


def _gru_grad_sample(t, n, h, dtype=np.float32, reverse=False, **kw):
    ins = _gru_ins(t, n, h, dtype)
    y, _, gates, ghn = _gru_ref(*ins, reverse)
    cots = [_f(t, n, h, dtype=dtype), _f(n, h, dtype=dtype), _f(t, n, 3 * h, dtype=dtype),
            _f(t, n, h, dtype=dtype)]
    return Sample(ins + [y, gates, ghn] + cots, {"reverse": reverse}, **kw)


register_samples("gru_layer_grad", [
    _gru_grad_sample(3, 2, 3, rtol=1e-4, atol=1e-5),
    _gru_grad_sample(3, 2, 2, dtype=np.float64, reverse=True, rtol=1e-6, atol=1e-7,
                     name="reverse"),
], _gru_grad_ref, errors=[
    ErrorSample([_f(3, 2, 9), _f(2, 3), _f(9, 3), _f(9), _f(3, 2, 3), _f(3, 2, 9), _f(3, 2, 3),
                 _f(3, 2, 4), _f(2, 3), _f(3, 2, 9), _f(3, 2, 3)], {}, ValueError,
                "dy must be"),
])


def _gru_jvp_ref(gi, h0, w_hh, b_hh, t_gi, t_h0, t_w, t_b, reverse=False):
    return _fd_jvp(_gru64, (gi, h0, w_hh, b_hh), (t_gi, t_h0, t_w, t_b), reverse)


def _gru_jvp_sample(t, n, h, dtype=np.float32, reverse=False, **kw):
    ins = _gru_ins(t, n, h, dtype)
    return Sample(ins + [_f(*np.shape(a), dtype=dtype) for a in ins], {"reverse": reverse},
                  **kw)


register_samples("gru_layer_jvp", [
    _gru_jvp_sample(3, 2, 3, rtol=1e-4, atol=1e-5),
    _gru_jvp_sample(3, 2, 2, dtype=np.float64, reverse=True, rtol=1e-6, atol=1e-7,
                    name="reverse"),
], _gru_jvp_ref, errors=[
    ErrorSample([_f(3, 2, 9), _f(2, 3), _f(9, 3), _f(9), _f(3, 2, 9), _f(2, 3), _f(9, 4),
                 _f(9)], {}, ValueError, "t_w_hh must be"),
])


# -- Elman RNN (tanh / relu) -------------------------------------------------------------------

def _rnn64(gi, h0, w_hh, b_hh, reverse=False, nonlinearity="tanh"):
    gi, h, w, b = (np.asarray(a, np.float64) for a in (gi, h0, w_hh, b_hh))
    act = (lambda a: np.maximum(a, 0.0)) if nonlinearity == "relu" else np.tanh
    y = np.zeros(gi.shape)
    for t in (range(gi.shape[0] - 1, -1, -1) if reverse else range(gi.shape[0])):
        h = act(gi[t] + h @ w.T + b)
        y[t] = h
    return y, h


def _rnn_ref(gi, h0, w_hh, b_hh, reverse=False, nonlinearity="tanh"):
    dt = np.asarray(gi).dtype
    return tuple(o.astype(dt) for o in _rnn64(gi, h0, w_hh, b_hh, reverse, nonlinearity))


def _rnn_ins(t, n, h, dtype):
    return [_f(t, n, h, dtype=dtype), _f(n, h, dtype=dtype), _f(h, h, dtype=dtype, scale=0.5),
            _f(h, dtype=dtype)]


def _rnn_sample(t, n, h, dtype=np.float32, reverse=False, nonlinearity="tanh", **kw):
    return Sample(_rnn_ins(t, n, h, dtype), {"reverse": reverse, "nonlinearity": nonlinearity},
                  **kw)


register_samples("rnn_layer", [
    _rnn_sample(3, 2, 3),
    _rnn_sample(4, 2, 2, dtype=np.float64, reverse=True, nonlinearity="relu",
                name="reverse relu"),
    _rnn_sample(2, 4, 3, dtype=np.float16, rtol=2e-2, atol=2e-2),
], _rnn_ref, errors=[
    ErrorSample([_f(3, 2, 3), _f(2, 4), _f(3, 3), _f(3)], {}, ValueError, "h0 must be"),
    ErrorSample([_f(3, 2, 3), _f(2, 3), _f(3, 2), _f(3)], {}, ValueError, "w_hh must be"),
    ErrorSample([_f(3, 2, 3), _f(2, 3), _f(3, 3), _f(3)], {"nonlinearity": "sigmoid"},
                ValueError, "nonlinearity must be"),
])


def _rnn_grad_ref(gi, h0, w_hh, b_hh, y, dy, dh_n, reverse=False, nonlinearity="tanh"):
    """d/d(gi, h0, w_hh, b_hh) of sum(output * cotangent) over both outputs."""
    return _fd_grad(_rnn64, (gi, h0, w_hh, b_hh), (dy, dh_n), reverse,
                    nonlinearity=nonlinearity)


def _rnn_grad_sample(t, n, h, dtype=np.float32, reverse=False, nonlinearity="tanh", **kw):
    ins = _rnn_ins(t, n, h, dtype)
    y, _ = _rnn_ref(*ins, reverse, nonlinearity)
    cots = [_f(t, n, h, dtype=dtype), _f(n, h, dtype=dtype)]
    return Sample(ins + [y] + cots, {"reverse": reverse, "nonlinearity": nonlinearity}, **kw)


register_samples("rnn_layer_grad", [
    _rnn_grad_sample(3, 2, 3, rtol=1e-4, atol=1e-5),
    # grad=False: relu's saved outputs are 0 at the dead units, where the derivative read
    # from them jumps (finite differences in y are meaningless there)
    _rnn_grad_sample(3, 2, 2, dtype=np.float64, reverse=True, nonlinearity="relu", rtol=1e-6,
                     atol=1e-7, grad=False, name="reverse relu"),
    _rnn_grad_sample(3, 2, 2, dtype=np.float64, reverse=True, rtol=1e-6, atol=1e-7,
                     name="reverse"),
], _rnn_grad_ref, errors=[
    ErrorSample([_f(3, 2, 3), _f(2, 3), _f(3, 3), _f(3), _f(3, 2, 3), _f(3, 2, 4), _f(2, 3)],
                {}, ValueError, "dy must be"),
])


def _rnn_jvp_ref(gi, h0, w_hh, b_hh, t_gi, t_h0, t_w, t_b, reverse=False,
                 nonlinearity="tanh"):
    return _fd_jvp(_rnn64, (gi, h0, w_hh, b_hh), (t_gi, t_h0, t_w, t_b), reverse,
                   nonlinearity=nonlinearity)


def _rnn_jvp_sample(t, n, h, dtype=np.float32, reverse=False, nonlinearity="tanh", **kw):
    ins = _rnn_ins(t, n, h, dtype)
    return Sample(ins + [_f(*np.shape(a), dtype=dtype) for a in ins],
                  {"reverse": reverse, "nonlinearity": nonlinearity}, **kw)


register_samples("rnn_layer_jvp", [
    _rnn_jvp_sample(3, 2, 3, rtol=1e-4, atol=1e-5),
    _rnn_jvp_sample(3, 2, 2, dtype=np.float64, reverse=True, nonlinearity="relu", rtol=1e-6,
                    atol=1e-7, name="reverse relu"),
], _rnn_jvp_ref, errors=[
    ErrorSample([_f(3, 2, 3), _f(2, 3), _f(3, 3), _f(3), _f(3, 2, 3), _f(2, 4), _f(3, 3),
                 _f(3)], {}, ValueError, "t_h0 must be"),
])
