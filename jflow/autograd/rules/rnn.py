"""Backward and tangent rules of the recurrence ops (``jflow/ops/rnn.py``): ``lstm_layer``,
``gru_layer`` and ``rnn_layer``.

Each layer op's gradient is one ``*_layer_grad`` op (backpropagation through time by hand over
the saved states and gates) and its tangent one ``*_layer_jvp`` op: each a single scan. Those
ops are differentiable too, so that second derivatives work in every mode: their rules
recompute the same quantities step by step with jflow ops (``_lstm_bptt`` / ``_gru_bptt`` /
``_rnn_bptt``, ``_lstm_tangents`` / ``_gru_tangents`` / ``_rnn_tangents``) and differentiate
that on the tape (``_vjp``). A second derivative on the tape (``create_graph=True``) takes the
``*_bptt`` form directly from the layer op's rule. The step-by-step forms are slow (one op per
gate and step) and run only for higher orders.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ..engine import grad
from ..grad_mode import enable_grad, is_grad_enabled
from ..rule import register_backward, register_tangent
from ._util import O, keep_where, scalar_like, zeros_like

_INPUTS = ["gi", "h0", "c0", "w_hh", "b_hh"]
_GRU_INPUTS = ["gi", "h0", "w_hh", "b_hh"]
_RNN_INPUTS = _GRU_INPUTS


def _at(x: Any, t: int) -> Any:
    """``x[t]`` of a time-major tensor."""
    return O.squeeze(O.narrow(x, dim=0, start=t, length=1), axes=[0])


def _gates(x: Any, h: int, k: int = 4) -> list[Any]:
    return list(O.split(x, dim=x._meta.ndim - 1, sizes=[h] * k))


def _one_minus(x: Any) -> Any:
    return O.sub(scalar_like(1.0, x), x)


def _order(steps: int, reverse: bool) -> list[int]:
    return list(range(steps - 1, -1, -1)) if reverse else list(range(steps))


# -- LSTM --------------------------------------------------------------------------------------

def _lstm_bptt(gi, h0, c0, w_hh, b_hh, y, c, gates, dy, dh_n, dc_n, dc, dgates, reverse):
    """``lstm_layer_grad``'s outputs, step by step with jflow ops (differentiable)."""
    steps, h = gi._meta.shape[0], h0._meta.shape[-1]
    if steps == 0:
        return [zeros_like(gi), dh_n, dc_n, zeros_like(w_hh), zeros_like(b_hh)]
    order = _order(steps, reverse)
    dh_next, dc_next = dh_n, dc_n
    das: list[Any] = [None] * steps
    dw = None
    for k in range(steps - 1, -1, -1):
        t = order[k]
        hp = h0 if k == 0 else _at(y, order[k - 1])
        cp = c0 if k == 0 else _at(c, order[k - 1])
        i, f, g, o = _gates(_at(gates, t), h)
        ui, uf, ug, uo = _gates(_at(dgates, t), h)
        dh = O.add(_at(dy, t), dh_next)
        tc = O.tanh(_at(c, t))
        dcell = O.add(O.add(dc_next, _at(dc, t)), O.mul(O.mul(dh, o), _one_minus(O.mul(tc, tc))))
        da = O.cat([O.mul(O.add(O.mul(dcell, g), ui), O.mul(i, _one_minus(i))),
                    O.mul(O.add(O.mul(dcell, cp), uf), O.mul(f, _one_minus(f))),
                    O.mul(O.add(O.mul(dcell, i), ug), _one_minus(O.mul(g, g))),
                    O.mul(O.add(O.mul(dh, tc), uo), O.mul(o, _one_minus(o)))], dim=1)
        das[t] = da
        dwt = O.matmul(da, hp, transpose_a=True)
        dw = dwt if dw is None else O.add(dw, dwt)
        dh_next, dc_next = O.matmul(da, w_hh), O.mul(dcell, f)
    dgi = O.stack(das, dim=0)
    return [dgi, dh_next, dc_next, dw, O.reduce_sum(dgi, axis=(0, 1), keepdim=False)]


def _lstm_tangents(gi, h0, c0, w_hh, b_hh, t_gi, t_h0, t_c0, t_w, t_b, reverse):
    """``lstm_layer_jvp``'s outputs, step by step with jflow ops (differentiable)."""
    steps, h = gi._meta.shape[0], h0._meta.shape[-1]
    hp, cp, thp, tcp = h0, c0, t_h0, t_c0
    ty: list[Any] = [None] * steps
    tcs: list[Any] = [None] * steps
    tgs: list[Any] = [None] * steps
    for t in _order(steps, reverse):
        a = O.add(O.add(_at(gi, t), O.matmul(hp, w_hh, transpose_b=True)), b_hh)
        ta = O.add(O.add(O.add(_at(t_gi, t), O.matmul(thp, w_hh, transpose_b=True)),
                         O.matmul(hp, t_w, transpose_b=True)), t_b)
        ai, af, ag, ao = _gates(a, h)
        si, sf, sg, so = _gates(ta, h)
        i, f, g, o = O.sigmoid(ai), O.sigmoid(af), O.tanh(ag), O.sigmoid(ao)
        ti = O.mul(O.mul(i, _one_minus(i)), si)
        tf = O.mul(O.mul(f, _one_minus(f)), sf)
        tg = O.mul(_one_minus(O.mul(g, g)), sg)
        to = O.mul(O.mul(o, _one_minus(o)), so)
        cn = O.add(O.mul(f, cp), O.mul(i, g))
        tcn = O.add(O.add(O.mul(tf, cp), O.mul(f, tcp)), O.add(O.mul(ti, g), O.mul(i, tg)))
        tch = O.tanh(cn)
        thn = O.add(O.mul(to, tch), O.mul(O.mul(o, _one_minus(O.mul(tch, tch))), tcn))
        ty[t], tcs[t], tgs[t] = thn, tcn, O.cat([ti, tf, tg, to], dim=1)
        hp, cp, thp, tcp = O.mul(o, tch), cn, thn, tcn
    if steps == 0:
        return [zeros_like(O.narrow(gi, dim=2, start=0, length=h)), t_h0, t_c0,
                zeros_like(O.narrow(gi, dim=2, start=0, length=h)), zeros_like(gi)]
    return [O.stack(ty, dim=0), thp, tcp, O.stack(tcs, dim=0), O.stack(tgs, dim=0)]


# -- GRU ---------------------------------------------------------------------------------------

def _gru_bptt(gi, h0, w_hh, b_hh, y, gates, ghn, dy, dh_n, dgates, dghn, reverse):
    """``gru_layer_grad``'s outputs, step by step with jflow ops (differentiable)."""
    steps, h = gi._meta.shape[0], h0._meta.shape[-1]
    if steps == 0:
        return [zeros_like(gi), dh_n, zeros_like(w_hh), zeros_like(b_hh)]
    order = _order(steps, reverse)
    dh_next = dh_n
    dgis: list[Any] = [None] * steps
    dghs: list[Any] = [None] * steps
    dw = None
    for k in range(steps - 1, -1, -1):
        t = order[k]
        hp = h0 if k == 0 else _at(y, order[k - 1])
        r, z, n = _gates(_at(gates, t), h, 3)
        ur, uz, un = _gates(_at(dgates, t), h, 3)
        dh = O.add(_at(dy, t), dh_next)
        dan = O.mul(O.add(O.mul(dh, _one_minus(z)), un), _one_minus(O.mul(n, n)))
        dar = O.mul(O.add(O.mul(dan, _at(ghn, t)), ur), O.mul(r, _one_minus(r)))
        daz = O.mul(O.add(O.mul(dh, O.sub(hp, n)), uz), O.mul(z, _one_minus(z)))
        dgh = O.cat([dar, daz, O.add(O.mul(dan, r), _at(dghn, t))], dim=1)
        dgis[t], dghs[t] = O.cat([dar, daz, dan], dim=1), dgh
        dwt = O.matmul(dgh, hp, transpose_a=True)
        dw = dwt if dw is None else O.add(dw, dwt)
        dh_next = O.add(O.mul(dh, z), O.matmul(dgh, w_hh))
    db = O.reduce_sum(O.stack(dghs, dim=0), axis=(0, 1), keepdim=False)
    return [O.stack(dgis, dim=0), dh_next, dw, db]


def _gru_tangents(gi, h0, w_hh, b_hh, t_gi, t_h0, t_w, t_b, reverse):
    """``gru_layer_jvp``'s outputs, step by step with jflow ops (differentiable)."""
    steps, h = gi._meta.shape[0], h0._meta.shape[-1]
    hp, thp = h0, t_h0
    ty: list[Any] = [None] * steps
    tgs: list[Any] = [None] * steps
    tns: list[Any] = [None] * steps
    for t in _order(steps, reverse):
        gh = O.add(O.matmul(hp, w_hh, transpose_b=True), b_hh)
        tgh = O.add(O.add(O.matmul(thp, w_hh, transpose_b=True),
                          O.matmul(hp, t_w, transpose_b=True)), t_b)
        ir, iz, in_ = _gates(_at(gi, t), h, 3)
        sr, sz, sn = _gates(_at(t_gi, t), h, 3)
        hr, hz, hn = _gates(gh, h, 3)
        tr_, tz_, thn = _gates(tgh, h, 3)
        r, z = O.sigmoid(O.add(ir, hr)), O.sigmoid(O.add(iz, hz))
        tr = O.mul(O.mul(r, _one_minus(r)), O.add(sr, tr_))
        tz = O.mul(O.mul(z, _one_minus(z)), O.add(sz, tz_))
        n = O.tanh(O.add(in_, O.mul(r, hn)))
        tn = O.mul(_one_minus(O.mul(n, n)), O.add(sn, O.add(O.mul(tr, hn), O.mul(r, thn))))
        # h' = n + z (h - n)
        th = O.add(O.add(tn, O.mul(tz, O.sub(hp, n))), O.mul(z, O.sub(thp, tn)))
        ty[t], tgs[t], tns[t] = th, O.cat([tr, tz, tn], dim=1), thn
        hp, thp = O.add(n, O.mul(z, O.sub(hp, n))), th
    if steps == 0:
        none = zeros_like(O.narrow(gi, dim=2, start=0, length=h))
        return [none, t_h0, zeros_like(gi), none]
    return [O.stack(ty, dim=0), thp, O.stack(tgs, dim=0), O.stack(tns, dim=0)]


# -- Elman RNN ---------------------------------------------------------------------------------

def _through_act(g: Any, y: Any, nonlinearity: str) -> Any:
    """``g`` times the activation's derivative, read from its output ``y``: relu' = [y > 0]
    (0 at 0, PyTorch's; piecewise constant, so no gradient flows through it), tanh' =
    1 - y²."""
    if nonlinearity == "relu":
        return keep_where(O.gt(y, scalar_like(0.0, y)), g)
    return O.mul(g, _one_minus(O.mul(y, y)))


def _rnn_bptt(gi, h0, w_hh, b_hh, y, dy, dh_n, reverse, nonlinearity):
    """``rnn_layer_grad``'s outputs, step by step with jflow ops (differentiable)."""
    steps = gi._meta.shape[0]
    if steps == 0:
        return [zeros_like(gi), dh_n, zeros_like(w_hh), zeros_like(b_hh)]
    order = _order(steps, reverse)
    dh_next = dh_n
    das: list[Any] = [None] * steps
    dw = None
    for k in range(steps - 1, -1, -1):
        t = order[k]
        hp = h0 if k == 0 else _at(y, order[k - 1])
        da = _through_act(O.add(_at(dy, t), dh_next), _at(y, t), nonlinearity)
        das[t] = da
        dwt = O.matmul(da, hp, transpose_a=True)
        dw = dwt if dw is None else O.add(dw, dwt)
        dh_next = O.matmul(da, w_hh)
    dgi = O.stack(das, dim=0)
    return [dgi, dh_next, dw, O.reduce_sum(dgi, axis=(0, 1), keepdim=False)]


def _rnn_tangents(gi, h0, w_hh, b_hh, t_gi, t_h0, t_w, t_b, reverse, nonlinearity):
    """``rnn_layer_jvp``'s outputs, step by step with jflow ops (differentiable)."""
    steps = gi._meta.shape[0]
    hp, thp = h0, t_h0
    ty: list[Any] = [None] * steps
    for t in _order(steps, reverse):
        a = O.add(_at(gi, t), O.add(O.matmul(hp, w_hh, transpose_b=True), b_hh))
        ta = O.add(O.add(O.add(_at(t_gi, t), O.matmul(thp, w_hh, transpose_b=True)),
                         O.matmul(hp, t_w, transpose_b=True)), t_b)
        hp = O.relu(a) if nonlinearity == "relu" else O.tanh(a)
        thp = ty[t] = _through_act(ta, hp, nonlinearity)
    if steps == 0:
        return [zeros_like(gi), t_h0]
    return [O.stack(ty, dim=0), thp]


# -- the rules ---------------------------------------------------------------------------------

def _vjp(fn, ctx, cots):
    """Gradients of ``sum <cot, fn(saved)>`` in the op's inputs, on the tape of ``fn``'s
    jflow ops; differentiable again when the caller records (``create_graph``)."""
    record = is_grad_enabled()
    needs = ctx.needs_input_grad
    with enable_grad():
        xs = [x if record and x.requires_grad else x.detach().requires_grad_()
              for x in ctx.saved_tensors]
        outs = fn(*xs, reverse=ctx.reverse)
    pairs = [(o, g) for o, g in zip(outs, cots) if g is not None]
    wanted = [x for x, n in zip(xs, needs) if n]
    got = iter(grad([o for o, _ in pairs], wanted, [g for _, g in pairs],
                    create_graph=record, allow_unused=True))
    res = [next(got) if n else None for n in needs]
    return [zeros_like(x) if n and r is None else r for x, r, n in zip(xs, res, needs)]


@register_backward("lstm_layer", save=_INPUTS + ["y", "c", "gates"])
def _lstm_layer(ctx, dy, dh_n, dc_n, dc, dgates):
    saved = ctx.saved_tensors
    if is_grad_enabled():  # a second derivative will be taken: the recorded form
        grads = _lstm_bptt(*saved, dy, dh_n, dc_n, dc, dgates, reverse=ctx.reverse)
    else:
        grads = O.lstm_layer_grad(*saved, dy, dh_n, dc_n, dc, dgates, reverse=ctx.reverse)
    return [g if need else None for g, need in zip(grads, ctx.needs_input_grad)]


@register_tangent("lstm_layer")
def _lstm_layer_tangent(ctx, t_gi, t_h0, t_c0, t_w_hh, t_b_hh):
    gi, h0, c0, w_hh, b_hh = ctx.saved_tensors[:5]
    return list(O.lstm_layer_jvp(gi, h0, c0, w_hh, b_hh, t_gi, t_h0, t_c0, t_w_hh, t_b_hh,
                                 reverse=ctx.reverse))


@register_backward("lstm_layer_grad", save=_INPUTS + ["y", "c", "gates", "dy", "dh_n", "dc_n",
                                                      "dc", "dgates"])
def _lstm_layer_grad(ctx, *cots):
    return _vjp(_lstm_bptt, ctx, cots)


@register_backward("lstm_layer_jvp", save=_INPUTS + ["t_gi", "t_h0", "t_c0", "t_w_hh", "t_b_hh"])
def _lstm_layer_jvp(ctx, *cots):
    return _vjp(_lstm_tangents, ctx, cots)


@register_backward("gru_layer", save=_GRU_INPUTS + ["y", "gates", "ghn"])
def _gru_layer(ctx, dy, dh_n, dgates, dghn):
    saved = ctx.saved_tensors
    if is_grad_enabled():  # a second derivative will be taken: the recorded form
        grads = _gru_bptt(*saved, dy, dh_n, dgates, dghn, reverse=ctx.reverse)
    else:
        grads = O.gru_layer_grad(*saved, dy, dh_n, dgates, dghn, reverse=ctx.reverse)
    return [g if need else None for g, need in zip(grads, ctx.needs_input_grad)]


@register_tangent("gru_layer")
def _gru_layer_tangent(ctx, t_gi, t_h0, t_w_hh, t_b_hh):
    gi, h0, w_hh, b_hh = ctx.saved_tensors[:4]
    return list(O.gru_layer_jvp(gi, h0, w_hh, b_hh, t_gi, t_h0, t_w_hh, t_b_hh,
                                reverse=ctx.reverse))


@register_backward("gru_layer_grad", save=_GRU_INPUTS + ["y", "gates", "ghn", "dy", "dh_n",
                                                         "dgates", "dghn"])
def _gru_layer_grad(ctx, *cots):
    return _vjp(_gru_bptt, ctx, cots)


@register_backward("gru_layer_jvp", save=_GRU_INPUTS + ["t_gi", "t_h0", "t_w_hh", "t_b_hh"])
def _gru_layer_jvp(ctx, *cots):
    return _vjp(_gru_tangents, ctx, cots)


@register_backward("rnn_layer", save=_RNN_INPUTS + ["y"])
def _rnn_layer(ctx, dy, dh_n):
    saved = ctx.saved_tensors
    if is_grad_enabled():  # a second derivative will be taken: the recorded form
        grads = _rnn_bptt(*saved, dy, dh_n, reverse=ctx.reverse,
                          nonlinearity=ctx.nonlinearity)
    else:
        grads = O.rnn_layer_grad(*saved, dy, dh_n, reverse=ctx.reverse,
                                 nonlinearity=ctx.nonlinearity)
    return [g if need else None for g, need in zip(grads, ctx.needs_input_grad)]


@register_tangent("rnn_layer")
def _rnn_layer_tangent(ctx, t_gi, t_h0, t_w_hh, t_b_hh):
    gi, h0, w_hh, b_hh = ctx.saved_tensors[:4]
    return list(O.rnn_layer_jvp(gi, h0, w_hh, b_hh, t_gi, t_h0, t_w_hh, t_b_hh,
                                reverse=ctx.reverse, nonlinearity=ctx.nonlinearity))


@register_backward("rnn_layer_grad", save=_RNN_INPUTS + ["y", "dy", "dh_n"])
def _rnn_layer_grad(ctx, *cots):
    return _vjp(partial(_rnn_bptt, nonlinearity=ctx.nonlinearity), ctx, cots)


@register_backward("rnn_layer_jvp", save=_RNN_INPUTS + ["t_gi", "t_h0", "t_w_hh", "t_b_hh"])
def _rnn_layer_jvp(ctx, *cots):
    return _vjp(partial(_rnn_tangents, nonlinearity=ctx.nonlinearity), ctx, cots)
