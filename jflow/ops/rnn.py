"""The recurrences of nn.LSTM, nn.GRU and nn.RNN as one op per layer and direction:
``lstm_layer``, ``gru_layer``, ``rnn_layer``, each with its gradient and tangent ops.

Why one op: written with per-step jflow ops, a 35-step 2-layer LSTM is ~560 eager op calls a
step, and a compiled step unrolls every time step into XLA's program (the real-model LSTM's
whole step took 15-20 s to compile on CPU, 650+ MiB). Here the recurrence is one
``lax.scan`` (the compile no longer grows with the sequence length) and its gradient a second
scan, backwards in time, written by hand from the saved states and gate activations.

``lstm_layer(gi, h0, c0, w_hh, b_hh, reverse)``: ``gi`` is the input projection of every step
(``x W_ih^T + b_ih``, time-major ``(T, N, 4H)``, one matmul outside), gates in PyTorch's order
i, f, g, o. Outputs ``y (T, N, H)``, the final ``h_n``, ``c_n`` ``(N, H)``, and what the
gradient reads: every step's cell state ``c (T, N, H)`` and activated gates
``gates (T, N, 4H)``. ``reverse`` runs from the last step to the first (a bidirectional
layer's backward direction); outputs stay in time order.

``gru_layer(gi, h0, w_hh, b_hh, reverse)``: ``gi`` ``(T, N, 3H)``, gates in PyTorch's order
r, z, n, with ``b_hn`` inside the reset product (``n = tanh(i_n + r * (h W_hn^T + b_hn))``,
``h' = (1 - z) * n + z * h``). Outputs ``y (T, N, H)``, ``h_n (N, H)``, and what the gradient
reads: every step's activated gates ``gates (T, N, 3H)`` and the hidden projection's n part
``ghn = h W_hn^T + b_hn`` ``(T, N, H)``.

``rnn_layer(gi, h0, w_hh, b_hh, reverse, nonlinearity)``: ``gi`` ``(T, N, H)``,
``h' = act(gi + h W_hh^T + b_hh)`` with act ``"tanh"`` or ``"relu"``. Outputs ``y (T, N, H)``
and ``h_n (N, H)``: the gradient reads only ``y`` (tanh' = 1 - y², relu' = [y > 0], 0 at 0
as PyTorch's).

Forward mode (``jax.jvp``, ``jacfwd``) has an op of its own per recurrence, ``*_layer_jvp``
(JAX's jvp of the scan), registered as the layer op's tangent rule: transposing the backward
rule would differentiate ``*_layer_grad`` in its output gradients, step by step. Second
derivatives (``create_graph=True``, ``jax.hessian``) go through the same computations written
step by step with jflow ops (jflow/autograd/rules/rnn.py): slow, but exact to any order.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, P, S, Signature
from .infer import FLOAT, check_dtype, desc
from .precision import float32_products
from .primitive import define_op
from .registry import Attr

_OP = "lstm_layer"


def _check_layer(op: str, gates: int, gi: Any, states: tuple[tuple[str, Any], ...], w_hh: Any,
                 b_hh: Any) -> tuple[int, ...]:
    """(T, N, H) of a recurrence of ``gates`` gates from its operands (``states``: the
    initial states' (name, value)), or a ValueError naming the op and the argument."""
    check_dtype(gi, FLOAT, "gi")
    if len(gi.shape) != 3 or gi.shape[2] % gates:
        raise ValueError(f"{op}: gi must be (T, N, {f'{gates}*' if gates > 1 else ''}H), got "
                         f"shape {tuple(gi.shape)}")
    t, n, hg = gi.shape
    h = hg // gates
    _check_like(op, gi, (*[(s, x, (n, h)) for s, x in states], ("w_hh", w_hh, (hg, h)),
                         ("b_hh", b_hh, (hg,))),
                f" (gi is {jnp.dtype(gi.dtype).name}{list(gi.shape)})")
    return t, n, h


def _check_like(op: str, gi: Any, named: tuple[tuple[str, Any, tuple[int, ...]], ...],
                note: str = "") -> None:
    """Each (name, value, shape) has that shape and gi's dtype, or a ValueError naming it."""
    for name, x, shape in named:
        if tuple(x.shape) != shape or x.dtype != gi.dtype:
            raise ValueError(f"{op}: {name} must be {jnp.dtype(gi.dtype).name}{list(shape)}"
                             f"{note}, got {jnp.dtype(x.dtype).name}{list(x.shape)}")


def _check_tangents(op: str, pairs: tuple[tuple[str, Any, Any], ...]) -> None:
    """Each (name, tangent, primal): the tangent has its primal's shape and dtype."""
    for name, x, p in pairs:
        if tuple(x.shape) != tuple(p.shape) or x.dtype != p.dtype:
            raise ValueError(f"{op}: {name} must be {jnp.dtype(p.dtype).name}{list(p.shape)} "
                             f"(its primal's), got {jnp.dtype(x.dtype).name}{list(x.shape)}")


def _check(gi: Any, h0: Any, c0: Any, w_hh: Any, b_hh: Any, op: str = _OP) -> tuple[int, ...]:
    """(T, N, H) from the operands, or a ValueError naming the op and the argument."""
    return _check_layer(op, 4, gi, (("h0", h0), ("c0", c0)), w_hh, b_hh)


def _define_jvp(layer: str, primal: Any, check: Any, infer: Any, sbp: Any, inputs: list[str],
                outputs: list[str], attrs: list[Attr], attr_check: Any = None) -> None:
    """Define ``<layer>_jvp``: the layer op's outputs' tangents along its inputs' tangents
    ``t_*`` (forward mode: JAX's jvp of the ``primal`` scan), registered as the layer's
    tangent rule (jflow/autograd/rules/rnn.py). Inference checks the primals (``check``) and
    that each tangent has its primal's shape and dtype; the SBP is the layer's, the tangents
    split as their primals."""
    op, k = f"{layer}_jvp", len(inputs)

    def jvp_infer(*args: Any, **kw: Any) -> Any:
        check(*args[:k], op=op)
        _check_tangents(op, tuple((f"t_{n}", t, x)
                                  for n, t, x in zip(inputs, args[k:], args[:k])))
        return infer(*args[:k], **kw)

    def jvp(*args: Any, **kw: Any) -> Any:
        return jax.jvp(lambda *p: primal(*p, **kw), tuple(args[:k]), tuple(args[k:]))[1]

    def jvp_sbp(in_shapes: Any, n_out: int = len(outputs), **kw: Any) -> list[Signature]:
        return [Signature(s.inputs * 2, s.outputs) for s in sbp(in_shapes[:k], **kw)]

    define_op(op, inputs=inputs + [f"t_{n}" for n in inputs],
              outputs=[f"t_{n}" for n in outputs], attrs=attrs, infer=jvp_infer,
              check=attr_check, sbp=jvp_sbp,
              doc=f"{layer}'s outputs' tangents along the inputs' tangents t_* (forward mode: "
                  f"jax.jvp of its scan, jacfwd through the module)")
    register_kernel(op, jvp, name=f"{op}_xla")


def _infer(gi: Any, h0: Any, c0: Any, w_hh: Any, b_hh: Any, reverse: bool) -> Any:
    t, n, h = _check(gi, h0, c0, w_hh, b_hh)
    d = gi.dtype
    return (desc((t, n, h), d), desc((n, h), d), desc((n, h), d), desc((t, n, h), d),
            desc((t, n, 4 * h), d))


def _lstm(gi: Any, h0: Any, c0: Any, w_hh: Any, b_hh: Any, reverse: bool) -> Any:
    h = h0.shape[-1]
    wt = w_hh.T

    def step(carry: Any, g: Any) -> Any:
        hp, cp = carry
        a = g + jnp.matmul(hp, wt, precision=float32_products()) + b_hh
        i, f = jax.nn.sigmoid(a[:, :h]), jax.nn.sigmoid(a[:, h:2 * h])
        gg, o = jnp.tanh(a[:, 2 * h:3 * h]), jax.nn.sigmoid(a[:, 3 * h:])
        c = f * cp + i * gg
        hn = o * jnp.tanh(c)
        return (hn, c), (hn, c, jnp.concatenate([i, f, gg, o], -1))

    (h_n, c_n), (y, c, gates) = lax.scan(step, (h0, c0), gi, reverse=reverse)
    return y, h_n, c_n, c, gates


def _sbp(in_shapes: Any, n_out: int = 5, **_: Any) -> list[Signature]:
    """Split the batch: axis 1 of the time-major tensors, axis 0 of the states; the weights
    broadcast."""
    return [Signature((S(1), S(0), S(0), B, B), (S(1), S(0), S(0), S(1), S(1)))]


define_op(_OP, inputs=["gi", "h0", "c0", "w_hh", "b_hh"],
          outputs=["y", "h_n", "c_n", "c", "gates"], attrs=[Attr("reverse", "bool", False)],
          infer=_infer, sbp=_sbp,
          doc="an LSTM layer's recurrence over time-major input projections gi (gates i, f, g, "
              "o): every step's hidden state, the final hidden and cell states, and every "
              "step's cell state and activated gates (what the gradient reads)")
register_kernel(_OP, _lstm, name="lstm_layer_xla")


# -- the gradient ----------------------------------------------------------------------------

def _grad_infer(gi: Any, h0: Any, c0: Any, w_hh: Any, b_hh: Any, y: Any, c: Any, gates: Any,
                dy: Any, dh_n: Any, dc_n: Any, dc: Any, dgates: Any, reverse: bool) -> Any:
    op = "lstm_layer_grad"
    t, n, h = _check(gi, h0, c0, w_hh, b_hh, op)
    _check_like(op, gi, (("y", y, (t, n, h)), ("c", c, (t, n, h)),
                         ("gates", gates, (t, n, 4 * h)), ("dy", dy, (t, n, h)),
                         ("dh_n", dh_n, (n, h)), ("dc_n", dc_n, (n, h)),
                         ("dc", dc, (t, n, h)), ("dgates", dgates, (t, n, 4 * h))))
    d = gi.dtype
    return (desc(gi.shape, d), desc((n, h), d), desc((n, h), d), desc(w_hh.shape, d),
            desc(b_hh.shape, d))


def _lstm_grad(gi: Any, h0: Any, c0: Any, w_hh: Any, b_hh: Any, y: Any, c: Any, gates: Any,
               dy: Any, dh_n: Any, dc_n: Any, dc: Any, dgates: Any, reverse: bool) -> Any:
    """Backpropagation through time. In processing order (time flipped for ``reverse``), step
    t read h[t-1], c[t-1] (h0, c0 first); its gate pre-activations' gradient ``da`` gives the
    input projections' gradient, the previous states' (carried backwards) and, summed over
    steps in one matmul, the weights'."""
    h = h0.shape[-1]
    if gi.shape[0] == 0:  # no step: the final states are the initial ones
        return (jnp.zeros_like(gi), dh_n, dc_n, jnp.zeros_like(w_hh), jnp.zeros_like(b_hh))
    flip = (lambda v: v[::-1]) if reverse else (lambda v: v)
    y, c, gates, dy, dc, dgates = map(flip, (y, c, gates, dy, dc, dgates))
    h_prev = jnp.concatenate([h0[None], y[:-1]], 0)
    c_prev = jnp.concatenate([c0[None], c[:-1]], 0)

    def step(carry: Any, xs: Any) -> Any:
        dh_next, dc_next = carry
        dy_t, dc_t, dg_t, c_t, cp_t, g_t = xs
        i, f, gg, o = g_t[:, :h], g_t[:, h:2 * h], g_t[:, 2 * h:3 * h], g_t[:, 3 * h:]
        dh = dy_t + dh_next
        tc = jnp.tanh(c_t)
        dcell = dc_next + dc_t + dh * o * (1 - tc * tc)
        di = dcell * gg + dg_t[:, :h]
        df = dcell * cp_t + dg_t[:, h:2 * h]
        dgg = dcell * i + dg_t[:, 2 * h:3 * h]
        do = dh * tc + dg_t[:, 3 * h:]
        da = jnp.concatenate([di * i * (1 - i), df * f * (1 - f), dgg * (1 - gg * gg),
                              do * o * (1 - o)], -1)
        return (jnp.matmul(da, w_hh, precision=float32_products()), dcell * f), da

    (dh0, dc0), da = lax.scan(step, (dh_n, dc_n), (dy, dc, dgates, c, c_prev, gates),
                              reverse=True)
    dw = jnp.einsum("tng,tnh->gh", da, h_prev, precision=float32_products())
    db = jnp.sum(da, axis=(0, 1))
    return flip(da), dh0, dc0, dw, db


def _grad_sbp(in_shapes: Any, n_out: int = 5, **_: Any) -> list[Signature]:
    """As the forward: the batch split; the weights' gradients are partial sums over it."""
    t3, st = S(1), S(0)
    return [Signature((t3, st, st, B, B, t3, t3, t3, t3, st, st, t3, t3),
                      (t3, st, st, P, P))]


define_op("lstm_layer_grad",
          inputs=["gi", "h0", "c0", "w_hh", "b_hh", "y", "c", "gates", "dy", "dh_n", "dc_n",
                  "dc", "dgates"],
          outputs=["dgi", "dh0", "dc0", "dw_hh", "db_hh"], attrs=[Attr("reverse", "bool", False)],
          infer=_grad_infer, sbp=_grad_sbp,
          doc="the gradient of lstm_layer (all five outputs) with respect to gi, h0, c0, w_hh "
              "and b_hh: backpropagation through time from the saved cell states and gates")
register_kernel("lstm_layer_grad", _lstm_grad, name="lstm_layer_grad_xla")


# -- forward mode ----------------------------------------------------------------------------

_define_jvp(_OP, _lstm, _check, _infer, _sbp, ["gi", "h0", "c0", "w_hh", "b_hh"],
            ["y", "h_n", "c_n", "c", "gates"], [Attr("reverse", "bool", False)])


# -- GRU ---------------------------------------------------------------------------------------

_GRU = "gru_layer"


def _gru_check(gi: Any, h0: Any, w_hh: Any, b_hh: Any, op: str = _GRU) -> tuple[int, ...]:
    """(T, N, H) from the operands, or a ValueError naming the op and the argument."""
    return _check_layer(op, 3, gi, (("h0", h0),), w_hh, b_hh)


def _gru_infer(gi: Any, h0: Any, w_hh: Any, b_hh: Any, reverse: bool) -> Any:
    t, n, h = _gru_check(gi, h0, w_hh, b_hh)
    d = gi.dtype
    return desc((t, n, h), d), desc((n, h), d), desc((t, n, 3 * h), d), desc((t, n, h), d)


def _gru(gi: Any, h0: Any, w_hh: Any, b_hh: Any, reverse: bool) -> Any:
    h = h0.shape[-1]
    wt = w_hh.T

    def step(hp: Any, g: Any) -> Any:
        gh = jnp.matmul(hp, wt, precision=float32_products()) + b_hh
        r = jax.nn.sigmoid(g[:, :h] + gh[:, :h])
        z = jax.nn.sigmoid(g[:, h:2 * h] + gh[:, h:2 * h])
        ghn = gh[:, 2 * h:]
        n = jnp.tanh(g[:, 2 * h:] + r * ghn)
        hn = n + z * (hp - n)          # = (1 - z) * n + z * h, as PyTorch computes it
        return hn, (hn, jnp.concatenate([r, z, n], -1), ghn)

    h_n, (y, gates, ghn) = lax.scan(step, h0, gi, reverse=reverse)
    return y, h_n, gates, ghn


def _gru_sbp(in_shapes: Any, n_out: int = 4, **_: Any) -> list[Signature]:
    """Split the batch: axis 1 of the time-major tensors, axis 0 of the state; the weights
    broadcast."""
    return [Signature((S(1), S(0), B, B), (S(1), S(0), S(1), S(1)))]


define_op(_GRU, inputs=["gi", "h0", "w_hh", "b_hh"], outputs=["y", "h_n", "gates", "ghn"],
          attrs=[Attr("reverse", "bool", False)], infer=_gru_infer, sbp=_gru_sbp,
          doc="a GRU layer's recurrence over time-major input projections gi (gates r, z, n; "
              "b_hn inside the reset product): every step's hidden state, the final hidden "
              "state, and every step's activated gates and hidden projection's n part "
              "h W_hn^T + b_hn (what the gradient reads)")
register_kernel(_GRU, _gru, name="gru_layer_xla")


def _gru_grad_infer(gi: Any, h0: Any, w_hh: Any, b_hh: Any, y: Any, gates: Any, ghn: Any,
                    dy: Any, dh_n: Any, dgates: Any, dghn: Any, reverse: bool) -> Any:
    op = "gru_layer_grad"
    t, n, h = _gru_check(gi, h0, w_hh, b_hh, op)
    _check_like(op, gi, (("y", y, (t, n, h)), ("gates", gates, (t, n, 3 * h)),
                         ("ghn", ghn, (t, n, h)), ("dy", dy, (t, n, h)), ("dh_n", dh_n, (n, h)),
                         ("dgates", dgates, (t, n, 3 * h)), ("dghn", dghn, (t, n, h))))
    d = gi.dtype
    return desc(gi.shape, d), desc((n, h), d), desc(w_hh.shape, d), desc(b_hh.shape, d)


def _gru_grad(gi: Any, h0: Any, w_hh: Any, b_hh: Any, y: Any, gates: Any, ghn: Any, dy: Any,
              dh_n: Any, dgates: Any, dghn: Any, reverse: bool) -> Any:
    """Backpropagation through time. In processing order (time flipped for ``reverse``), step
    t read h[t-1] (h0 first); the gradient of its gate pre-activations gives the input
    projections' (``dgi``) and, with the n part taken before the reset product, the hidden
    projection's (``dgh``): that gives the previous state's (carried backwards) and, summed
    over steps in one matmul, the weights'."""
    h = h0.shape[-1]
    if gi.shape[0] == 0:  # no step: the final state is the initial one
        return jnp.zeros_like(gi), dh_n, jnp.zeros_like(w_hh), jnp.zeros_like(b_hh)
    flip = (lambda v: v[::-1]) if reverse else (lambda v: v)
    y, gates, ghn, dy, dgates, dghn = map(flip, (y, gates, ghn, dy, dgates, dghn))
    h_prev = jnp.concatenate([h0[None], y[:-1]], 0)

    def step(dh_next: Any, xs: Any) -> Any:
        dy_t, dg_t, dghn_t, g_t, ghn_t, hp_t = xs
        r, z, n = g_t[:, :h], g_t[:, h:2 * h], g_t[:, 2 * h:]
        dh = dy_t + dh_next
        dan = (dh * (1 - z) + dg_t[:, 2 * h:]) * (1 - n * n)
        dar = (dan * ghn_t + dg_t[:, :h]) * r * (1 - r)
        daz = (dh * (hp_t - n) + dg_t[:, h:2 * h]) * z * (1 - z)
        dgh = jnp.concatenate([dar, daz, dan * r + dghn_t], -1)
        dgi = jnp.concatenate([dar, daz, dan], -1)
        return dh * z + jnp.matmul(dgh, w_hh, precision=float32_products()), (dgi, dgh)

    dh0, (dgi, dgh) = lax.scan(step, dh_n, (dy, dgates, dghn, gates, ghn, h_prev),
                               reverse=True)
    dw = jnp.einsum("tng,tnh->gh", dgh, h_prev, precision=float32_products())
    db = jnp.sum(dgh, axis=(0, 1))
    return flip(dgi), dh0, dw, db


def _gru_grad_sbp(in_shapes: Any, n_out: int = 4, **_: Any) -> list[Signature]:
    """As the forward: the batch split; the weights' gradients are partial sums over it."""
    t3, st = S(1), S(0)
    return [Signature((t3, st, B, B, t3, t3, t3, t3, st, t3, t3), (t3, st, P, P))]


define_op("gru_layer_grad",
          inputs=["gi", "h0", "w_hh", "b_hh", "y", "gates", "ghn", "dy", "dh_n", "dgates",
                  "dghn"],
          outputs=["dgi", "dh0", "dw_hh", "db_hh"], attrs=[Attr("reverse", "bool", False)],
          infer=_gru_grad_infer, sbp=_gru_grad_sbp,
          doc="the gradient of gru_layer (all four outputs) with respect to gi, h0, w_hh and "
              "b_hh: backpropagation through time from the saved gates and hidden projections")
register_kernel("gru_layer_grad", _gru_grad, name="gru_layer_grad_xla")


_define_jvp(_GRU, _gru, _gru_check, _gru_infer, _gru_sbp, ["gi", "h0", "w_hh", "b_hh"],
            ["y", "h_n", "gates", "ghn"], [Attr("reverse", "bool", False)])


# -- Elman RNN (tanh / relu) -------------------------------------------------------------------

_RNN = "rnn_layer"


def _rnn_check(gi: Any, h0: Any, w_hh: Any, b_hh: Any, op: str = _RNN) -> tuple[int, ...]:
    """(T, N, H) from the operands, or a ValueError naming the op and the argument."""
    return _check_layer(op, 1, gi, (("h0", h0),), w_hh, b_hh)


def _nonlinearity_check(op: str) -> Any:
    def check(reverse: bool, nonlinearity: str) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"{op}: nonlinearity must be 'tanh' or 'relu', got "
                             f"{nonlinearity!r}")
    return check


def _rnn_infer(gi: Any, h0: Any, w_hh: Any, b_hh: Any, reverse: bool, nonlinearity: str) -> Any:
    t, n, h = _rnn_check(gi, h0, w_hh, b_hh)
    return desc((t, n, h), gi.dtype), desc((n, h), gi.dtype)


def _rnn(gi: Any, h0: Any, w_hh: Any, b_hh: Any, reverse: bool, nonlinearity: str) -> Any:
    # jax.nn.relu: its derivative at 0 is 0 (PyTorch's), which the tangent op inherits
    act = jax.nn.relu if nonlinearity == "relu" else jnp.tanh
    wt = w_hh.T

    def step(hp: Any, g: Any) -> Any:
        hn = act(g + (jnp.matmul(hp, wt, precision=float32_products()) + b_hh))
        return hn, hn

    h_n, y = lax.scan(step, h0, gi, reverse=reverse)
    return y, h_n


def _rnn_sbp(in_shapes: Any, n_out: int = 2, **_: Any) -> list[Signature]:
    """Split the batch: axis 1 of the time-major tensors, axis 0 of the state; the weights
    broadcast."""
    return [Signature((S(1), S(0), B, B), (S(1), S(0)))]


_NONLINEARITY = Attr("nonlinearity", "string", "tanh")

define_op(_RNN, inputs=["gi", "h0", "w_hh", "b_hh"], outputs=["y", "h_n"],
          attrs=[Attr("reverse", "bool", False), _NONLINEARITY], infer=_rnn_infer,
          check=_nonlinearity_check(_RNN), sbp=_rnn_sbp,
          doc="an Elman RNN layer's recurrence over time-major input projections gi, "
              "h' = act(gi + h W_hh^T + b_hh) with act tanh or relu: every step's hidden "
              "state (all the gradient reads) and the final one")
register_kernel(_RNN, _rnn, name="rnn_layer_xla")


def _rnn_grad_infer(gi: Any, h0: Any, w_hh: Any, b_hh: Any, y: Any, dy: Any, dh_n: Any,
                    reverse: bool, nonlinearity: str) -> Any:
    op = "rnn_layer_grad"
    t, n, h = _rnn_check(gi, h0, w_hh, b_hh, op)
    _check_like(op, gi, (("y", y, (t, n, h)), ("dy", dy, (t, n, h)), ("dh_n", dh_n, (n, h))))
    d = gi.dtype
    return desc(gi.shape, d), desc((n, h), d), desc(w_hh.shape, d), desc(b_hh.shape, d)


def _rnn_grad(gi: Any, h0: Any, w_hh: Any, b_hh: Any, y: Any, dy: Any, dh_n: Any,
              reverse: bool, nonlinearity: str) -> Any:
    """Backpropagation through time. In processing order (time flipped for ``reverse``), step
    t read h[t-1] (h0 first); its pre-activation's gradient ``da`` (the activation's
    derivative read from the step's output) is the input projection's, gives the previous
    state's (carried backwards) and, summed over steps in one matmul, the weights'."""
    if gi.shape[0] == 0:  # no step: the final state is the initial one
        return jnp.zeros_like(gi), dh_n, jnp.zeros_like(w_hh), jnp.zeros_like(b_hh)
    flip = (lambda v: v[::-1]) if reverse else (lambda v: v)
    y, dy = flip(y), flip(dy)
    h_prev = jnp.concatenate([h0[None], y[:-1]], 0)
    relu = nonlinearity == "relu"

    def step(dh_next: Any, xs: Any) -> Any:
        dy_t, y_t = xs
        g = dy_t + dh_next
        # relu' = [y > 0] (0 at 0, PyTorch's), tanh' = 1 - y²
        da = jnp.where(y_t > 0, g, jnp.zeros((), g.dtype)) if relu else g * (1 - y_t * y_t)
        return jnp.matmul(da, w_hh, precision=float32_products()), da

    dh0, da = lax.scan(step, dh_n, (dy, y), reverse=True)
    dw = jnp.einsum("tng,tnh->gh", da, h_prev, precision=float32_products())
    db = jnp.sum(da, axis=(0, 1))
    return flip(da), dh0, dw, db


def _rnn_grad_sbp(in_shapes: Any, n_out: int = 4, **_: Any) -> list[Signature]:
    """As the forward: the batch split; the weights' gradients are partial sums over it."""
    t3, st = S(1), S(0)
    return [Signature((t3, st, B, B, t3, t3, st), (t3, st, P, P))]


define_op("rnn_layer_grad", inputs=["gi", "h0", "w_hh", "b_hh", "y", "dy", "dh_n"],
          outputs=["dgi", "dh0", "dw_hh", "db_hh"],
          attrs=[Attr("reverse", "bool", False), _NONLINEARITY], infer=_rnn_grad_infer,
          check=_nonlinearity_check("rnn_layer_grad"), sbp=_rnn_grad_sbp,
          doc="the gradient of rnn_layer (both outputs) with respect to gi, h0, w_hh and "
              "b_hh: backpropagation through time from the saved hidden states")
register_kernel("rnn_layer_grad", _rnn_grad, name="rnn_layer_grad_xla")


_define_jvp(_RNN, _rnn, _rnn_check, _rnn_infer, _rnn_sbp, ["gi", "h0", "w_hh", "b_hh"],
            ["y", "h_n"], [Attr("reverse", "bool", False), _NONLINEARITY],
            attr_check=_nonlinearity_check("rnn_layer_jvp"))
