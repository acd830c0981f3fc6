"""The checker's gradient check (DESIGN §9): for a differentiable op and one sample, in float64,

* the eager tape's gradients (``flow.autograd.grad``)  == central finite differences;
* ``jax.grad`` of the same scalar function              == central finite differences;
* ``jax.jvp`` agrees with ``jax.vjp`` (dot-product test: <J t, c> == <t, J^T c>).

The scalar function is ``L(x) = sum_k <c_k, out_k(x)>`` over the floating outputs, with fixed
random cotangents ``c_k``; integer/bool inputs are held fixed. Finite differences use the eager
op itself (one cached executable, no recompiles) and NumPy, independent of every rule.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..ops import get as get_op
from ..tensor import Tensor, _wrap
from .samples import Sample

__all__ = ["check_grad", "GradCheckFailure", "grad_applicable"]


class GradCheckFailure(AssertionError):
    """A backward rule disagrees with finite differences, or forward mode with reverse."""


_EPS = 1e-6
_RTOL, _ATOL = 1e-5, 1e-7


def _is_float(a: Any) -> bool:
    return np.asarray(a).dtype.kind == "f"


def _flat_inputs(s: Sample) -> list[Any]:
    flat = []
    for x in s.inputs:
        if isinstance(x, list):
            flat.extend(x)
        elif x is not None:
            flat.append(x)
    return flat


def _rebuild(s: Sample, flat: list[Any]) -> list[Any]:
    out, it = [], iter(flat)
    for x in s.inputs:
        if isinstance(x, list):
            out.append([next(it) for _ in x])
        elif x is None:
            out.append(None)
        else:
            out.append(next(it))
    return out


def _outs(res: Any) -> list[Any]:
    return list(res) if isinstance(res, (tuple, list)) else [res]


def grad_applicable(op_name: str, s: Sample) -> bool:
    op = get_op(op_name)
    return (s.grad and not op.has_trait("NoGrad")
            and any(_is_float(a) for a in _flat_inputs(s)))


def check_grad(op_name: str, s: Sample) -> None:
    """Run the gradient checks for one sample (raises :class:`GradCheckFailure`)."""
    from .. import autograd

    op = get_op(op_name)
    label = f"op '{op_name}' sample {s.name or s.attrs}: gradient"
    flat = [np.asarray(a).astype(np.float64) if _is_float(a) else np.asarray(a)
            for a in _flat_inputs(s)]
    fidx = [i for i, a in enumerate(flat) if _is_float(a)]

    def call(vals: list[Any]) -> list[Any]:
        ts = [v if isinstance(v, Tensor) else _wrap(jnp.asarray(v)) for v in vals]
        return _outs(op.apply(*_rebuild(s, ts), **s.attrs))

    outs0 = [np.asarray(t._value) for t in call(flat)]
    oidx = [k for k, o in enumerate(outs0) if o.dtype.kind == "f"]
    if not oidx or any(outs0[k].dtype != np.float64 for k in oidx):
        return  # no floating output, or one not in float64 (e.g. a cast to float16)
    rng = np.random.default_rng(1234)
    cts = {k: rng.standard_normal(outs0[k].shape) for k in oidx}

    def loss_np(vals: list[Any]) -> float:
        outs = call(vals)
        return float(sum(np.sum(np.asarray(outs[k]._value) * cts[k]) for k in oidx))

    # central finite differences, element by element
    fd = {}
    for i in fidx:
        base = flat[i]
        g = np.zeros(base.shape)
        for j in np.ndindex(base.shape):
            plus, minus = base.copy(), base.copy()
            plus[j] += _EPS
            minus[j] -= _EPS
            vp = list(flat)
            vp[i] = plus
            vm = list(flat)
            vm[i] = minus
            g[j] = (loss_np(vp) - loss_np(vm)) / (2 * _EPS)
        fd[i] = g

    def compare(what: str, got: Any, i: int) -> None:
        want = fd[i]
        got = np.zeros(want.shape) if got is None else np.asarray(got, dtype=np.float64)
        if got.shape != want.shape:
            raise GradCheckFailure(f"{label} ({what}) for input {i} has shape {got.shape}, "
                                   f"expected {want.shape}")
        scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
        if not np.allclose(got, want, rtol=_RTOL, atol=_ATOL * scale * 10):
            bad = ~np.isclose(got, want, rtol=_RTOL, atol=_ATOL * scale * 10)
            raise GradCheckFailure(f"{label} ({what}) for input {i} differs from finite "
                                   f"differences at {int(bad.sum())} of {bad.size} positions: "
                                   f"got {got[bad][:4]}, expected {want[bad][:4]}")

    # 1. the eager tape
    tens = [_wrap(jnp.asarray(a)) for a in flat]
    for i in fidx:
        tens[i].requires_grad_()
    outs = call(tens)
    diff_outs = [outs[k] for k in oidx if outs[k].requires_grad]
    if not diff_outs:
        raise GradCheckFailure(f"{label}: no floating output requires grad after the op ran on "
                               f"inputs that require grad (the tape did not record it)")
    grads = autograd.grad(diff_outs, [tens[i] for i in fidx],
                          [_wrap(jnp.asarray(cts[k])) for k in oidx if outs[k].requires_grad],
                          allow_unused=True)
    for i, g in zip(fidx, grads):
        compare("eager tape", None if g is None else g._value, i)

    # 2. jax.grad of the same loss
    def loss_jax(*fv: Any) -> Any:
        vals = list(flat)
        for i, v in zip(fidx, fv):
            vals[i] = _wrap(v)
        outs = call(vals)
        return sum(jnp.sum(outs[k]._value * cts[k]) for k in oidx)

    fargs = [jnp.asarray(flat[i]) for i in fidx]
    jgrads = jax.grad(loss_jax, argnums=tuple(range(len(fidx))))(*fargs)
    for i, g in zip(fidx, jgrads):
        compare("jax.grad", g, i)

    # 3. forward mode agrees with reverse mode: <J t, c> == <t, J^T c>
    def outs_jax(*fv: Any) -> list[Any]:
        vals = list(flat)
        for i, v in zip(fidx, fv):
            vals[i] = _wrap(v)
        outs = call(vals)
        return [outs[k]._value for k in oidx]

    tans = [jnp.asarray(rng.standard_normal(flat[i].shape)) for i in fidx]
    _, jt = jax.jvp(outs_jax, tuple(fargs), tuple(tans))
    lhs = float(sum(np.sum(np.asarray(u) * cts[k]) for u, k in zip(jt, oidx)))
    rhs = float(sum(np.sum(np.asarray(t) * np.asarray(g)) for t, g in zip(tans, jgrads)))
    if not np.isclose(lhs, rhs, rtol=1e-7, atol=1e-9 * max(1.0, abs(rhs))):
        raise GradCheckFailure(f"{label}: jax.jvp disagrees with jax.vjp: <J t, c> = {lhs}, "
                               f"<t, J^T c> = {rhs}")
