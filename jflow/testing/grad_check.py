"""The checker's gradient check: for a differentiable op and one sample, in float64,

* the eager tape's gradients (``flow.autograd.grad``)  == central finite differences;
* ``jax.grad`` of the same scalar function              == central finite differences;
* ``jax.jvp`` agrees with ``jax.vjp`` (dot-product test: <J t, c> == <t, J^T c>).

The scalar function is ``L(x) = sum_k <c_k, out_k(x)>`` over the floating outputs, with fixed
random cotangents ``c_k``; integer/bool inputs are held fixed. Finite differences use the eager
op itself (one cached executable, no recompiles) and NumPy, independent of every rule.

Compile count: the finite differences reuse the eager op's executable for the sample's
shapes (compiled once by the first call, then only run: an evaluation per perturbation costs
a call, not a compile; for the checker's small samples that is cheaper than compiling a
vectorised evaluation, or a ``lax.map`` of the op, both tried: they cost more compile time
than they save); the tape records the op eagerly with the same executable, and its backward
for every sample of the op (``flow.autograd.grad`` with traced cotangents: the engine runs
the rule as for any traced values), with ``jax.grad`` and ``jax.jvp`` on one sample per
kind of inputs (:func:`check_grads`), is staged into one ``jax.jit``: one executable per op
instead of one per sample for the rule (the engine's per-rule executable) and one per
primitive JAX's eager mode would run (forward, JVP, transposed rule). Should the trace
refuse a sample (a rule that needs concrete values), the tape runs eagerly instead.

Complex inputs and outputs are pairs of reals: ``<c, z> = Re(conj(c) z)``, finite differences
step the real and the imaginary part of each element, and a complex input's expected gradient
is PyTorch's ``dL/dRe + i dL/dIm`` (the conjugate Wirtinger convention, twice ``dL/dconj(z)``):
the tape must give exactly that, and ``jax.grad`` its conjugate (JAX's convention).

A sample with no floating output, or with one that is not float64 even for float64 inputs
(a cast to float16 or int), cannot be checked at float64 precision: :func:`check_grad` returns
False for it, and the op checker counts it as skipped, not checked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import autograd
from ..ops import get as get_op
from ..tensor import Tensor, _wrap
from .samples import ErrorSample, Sample

__all__ = ["check_grad", "check_grads", "check_grad_error", "GradCheckFailure",
           "grad_applicable"]


class GradCheckFailure(AssertionError):
    """A backward rule disagrees with finite differences, or forward mode with reverse."""


_EPS = 1e-6
_RTOL, _ATOL = 1e-5, 1e-7


def _is_float(a: Any) -> bool:
    """A differentiable input or output: floating or complex."""
    return np.asarray(a).dtype.kind in "fc"


def _wide(a: np.ndarray) -> np.ndarray:
    """float64 / complex128 for a differentiable array, else unchanged."""
    kind = a.dtype.kind
    return a.astype(np.complex128) if kind == "c" else a.astype(np.float64) if kind == "f" else a


def _pair(c: Any, z: Any) -> Any:
    """The real inner product ``sum Re(conj(c) z)`` (the plain one for reals)."""
    return np.sum(np.real(np.conj(c) * np.asarray(z)))


def _random(rng: np.random.Generator, like: np.ndarray) -> np.ndarray:
    r = rng.standard_normal(like.shape)
    return r + 1j * rng.standard_normal(like.shape) if like.dtype.kind == "c" else r


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
    """Whether the gradient check is meant to run on ``s``: a differentiable op, a sample
    not opted out (``grad=False``) and some floating input to differentiate."""
    op = get_op(op_name)
    return (s.grad and not op.has_trait("NoGrad")
            and any(_is_float(a) for a in _flat_inputs(s)))


@dataclass
class _Problem:
    """One sample's gradient problem in float64: the scalar loss is
    ``sum_k <cts[k], out_k>`` over the floating outputs ``oidx``, differentiated in the
    floating inputs ``fidx`` of ``flat`` (the rest held fixed)."""

    op: Any
    s: Sample
    label: str
    flat: list[np.ndarray]
    fidx: list[int]
    oidx: list[int]
    cts: dict[int, np.ndarray]

    def call(self, vals: list[Any]) -> list[Any]:
        """The op on ``vals`` (NumPy arrays or tensors, one per flat input; NumPy arrays
        reach the device by ``jax.device_put``, which compiles nothing)."""
        ts = [v if isinstance(v, Tensor) else _wrap(jax.device_put(np.asarray(v)))
              for v in vals]
        return _outs(self.op.apply(*_rebuild(self.s, ts), **self.s.attrs))

    def with_floats(self, fv: Sequence[Any]) -> list[Any]:
        """The flat inputs with the floating ones replaced by ``fv`` (wrapped)."""
        vals: list[Any] = list(self.flat)
        for i, v in zip(self.fidx, fv):
            vals[i] = _wrap(v)
        return vals

    def loss_np(self, vals: list[Any]) -> float:
        outs = self.call(vals)
        return float(sum(_pair(self.cts[k], outs[k]._value) for k in self.oidx))

    def loss_jax(self, *fv: Any) -> Any:
        """The loss as a JAX function of the floating inputs (for ``jax.grad``)."""
        outs = self.call(self.with_floats(fv))
        return sum(jnp.sum(jnp.real(jnp.conj(self.cts[k]) * outs[k]._value))
                   for k in self.oidx)

    def outs_jax(self, *fv: Any) -> list[Any]:
        """The floating outputs as a JAX function of the floating inputs (for ``jax.jvp``)."""
        outs = self.call(self.with_floats(fv))
        return [outs[k]._value for k in self.oidx]


def _problem(op_name: str, s: Sample, rng: np.random.Generator) -> _Problem | None:
    """The sample's problem, or None when no output is float64 for float64 inputs."""
    op = get_op(op_name)
    flat = [_wide(np.asarray(a)) for a in _flat_inputs(s)]
    p = _Problem(op, s, f"op '{op_name}' sample {s.name or s.attrs}: gradient", flat,
                 [i for i, a in enumerate(flat) if _is_float(a)], [], {})
    outs0 = [np.asarray(t._value) for t in p.call(flat)]
    p.oidx = [k for k, o in enumerate(outs0) if o.dtype.kind in "fc"]
    if not p.oidx or any(outs0[k].dtype not in (np.float64, np.complex128) for k in p.oidx):
        return None  # no floating output, or one not in float64 (e.g. a cast to float16)
    p.cts = {k: _random(rng, outs0[k]) for k in p.oidx}
    return p


def _finite_differences(p: _Problem) -> dict[int, np.ndarray]:
    """Central finite differences of the loss, element by element, per floating input (for a
    complex input, ``dL/dRe + i dL/dIm``)."""
    fd = {}
    for i in p.fidx:
        base = p.flat[i]
        g = np.zeros(base.shape, base.dtype)
        for step in ((1.0, 1j) if base.dtype.kind == "c" else (1.0,)):
            for j in np.ndindex(base.shape):
                plus, minus = base.copy(), base.copy()
                plus[j] += _EPS * step
                minus[j] -= _EPS * step
                vp, vm = list(p.flat), list(p.flat)
                vp[i], vm[i] = plus, minus
                g[j] += step * (p.loss_np(vp) - p.loss_np(vm)) / (2 * _EPS)
        fd[i] = g
    return fd


def _compare(p: _Problem, what: str, got: Any, want: np.ndarray, i: int) -> None:
    got = np.zeros(want.shape, want.dtype) if got is None else np.asarray(got, want.dtype)
    if got.shape != want.shape:
        raise GradCheckFailure(f"{p.label} ({what}) for input {i} has shape {got.shape}, "
                               f"expected {want.shape}")
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    if not np.allclose(got, want, rtol=_RTOL, atol=_ATOL * scale * 10):
        bad = ~np.isclose(got, want, rtol=_RTOL, atol=_ATOL * scale * 10)
        raise GradCheckFailure(f"{p.label} ({what}) for input {i} differs from finite "
                               f"differences at {int(bad.sum())} of {bad.size} positions: "
                               f"got {got[bad][:4]}, expected {want[bad][:4]}")


def _record(p: _Problem, flat: Sequence[Any]) -> tuple[list[Tensor], list[Tensor], list[int]]:
    """The op run on ``flat`` (arrays, or tracers) with its floating inputs requiring grad:
    the input tensors, the outputs and which floating outputs the tape recorded."""
    tens = [_wrap(a) for a in flat]
    for i in p.fidx:
        tens[i].requires_grad_()
    outs = p.call(tens)
    diff = [k for k in p.oidx if outs[k].requires_grad]
    if not diff:
        raise GradCheckFailure(f"{p.label}: no floating output requires grad after the op ran "
                               f"on inputs that require grad (the tape did not record it)")
    return tens, outs, diff


def _tape_grads(p: _Problem, recorded: tuple[list[Tensor], list[Tensor], list[int]],
                cts: dict[int, Any]) -> list[Any]:
    """The tape's gradients (``flow.autograd.grad``) of the loss in the floating inputs,
    from :func:`_record`'s outputs and the cotangents ``cts`` (arrays or tracers); None for
    an input the tape leaves unused."""
    tens, outs, diff = recorded
    grads = autograd.grad([outs[k] for k in diff], [tens[i] for i in p.fidx],
                          [_wrap(cts[k]) for k in diff], allow_unused=True)
    return [None if g is None else g._value for g in grads]


def _compare_tape(p: _Problem, fd: dict[int, np.ndarray], grads: Sequence[Any]) -> None:
    """1. The eager tape's gradients (``flow.autograd.grad``) == finite differences."""
    for i, g in zip(p.fidx, grads):
        _compare(p, "eager tape", g, fd[i], i)


def _check_tape(p: _Problem, fd: dict[int, np.ndarray]) -> None:
    """The tape check run eagerly: the rule runs as the engine's own cached executable."""
    grads = _tape_grads(p, _record(p, [jax.device_put(a) for a in p.flat]),
                        {k: jax.device_put(c) for k, c in p.cts.items()})
    _compare_tape(p, fd, [None if g is None else np.asarray(g) for g in grads])


def _staged(problems: list[_Problem], jax_too: list[bool], tans: list[list[np.ndarray]]
            ) -> list[tuple[list[Any], list[np.ndarray], list[np.ndarray]]]:
    """Per problem, the tape's gradients (the op recorded eagerly, by the executable the
    finite differences ran, then ``flow.autograd.grad`` with traced cotangents: the engine
    runs the rule as it does for any traced values), and where ``jax_too``, ``jax.grad`` of
    its loss in the floating inputs and ``jax.jvp`` of its floating outputs along ``tans``:
    every problem of the op in one ``jax.jit``, one executable instead of one per sample
    for the rule (the eager engine's per-rule executable) and one per primitive JAX's eager
    mode would run (forward, JVP, transposed rule)."""
    recorded = [_record(p, [jax.device_put(a) for a in p.flat]) for p in problems]

    def trace(flats: list[list[Any]], cts: list[dict[int, Any]], tans: list[list[Any]]
              ) -> list[Any]:
        res = []
        for p, rec, flat, ct, ta, both in zip(problems, recorded, flats, cts, tans, jax_too):
            tape = _tape_grads(p, rec, ct)
            if not both:
                res.append((tape, [], []))
                continue
            fa = [flat[i] for i in p.fidx]
            g = jax.grad(p.loss_jax, argnums=tuple(range(len(p.fidx))))(*fa)
            _, jt = jax.jvp(p.outs_jax, tuple(fa), tuple(ta))
            res.append((tape, list(g), list(jt)))
        return res

    flats = [[jax.device_put(a) for a in p.flat] for p in problems]
    cts = [{k: jax.device_put(c) for k, c in p.cts.items()} for p in problems]
    got = jax.jit(trace)(flats, cts, [[jax.device_put(t) for t in ta] for ta in tans])
    return [([None if x is None else np.asarray(x) for x in tape],
             [np.asarray(x) for x in g], [np.asarray(x) for x in jt]) for tape, g, jt in got]


def _jax_derivatives(problems: list[_Problem], tans: list[list[np.ndarray]]
                     ) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
    """Per problem, ``jax.grad`` of its loss in the floating inputs and ``jax.jvp`` of its
    floating outputs along ``tans``: all problems in one ``jax.jit`` (one executable instead
    of one per primitive JAX's eager mode would run, forward, JVP and transposed rule)."""
    def trace(fargs: list[list[Any]], tans: list[list[Any]]) -> list[Any]:
        res = []
        for p, fa, ta in zip(problems, fargs, tans):
            g = jax.grad(p.loss_jax, argnums=tuple(range(len(p.fidx))))(*fa)
            _, jt = jax.jvp(p.outs_jax, tuple(fa), tuple(ta))
            res.append((list(g), list(jt)))
        return res

    fargs = [[jax.device_put(p.flat[i]) for i in p.fidx] for p in problems]
    got = jax.jit(trace)(fargs, [[jax.device_put(t) for t in ta] for ta in tans])
    return [([np.asarray(x) for x in g], [np.asarray(x) for x in jt]) for g, jt in got]


def _check_jax_grad(p: _Problem, fd: dict[int, np.ndarray], jgrads: list[np.ndarray]) -> None:
    """2. ``jax.grad`` of the same loss == finite differences."""
    for i, g in zip(p.fidx, jgrads):  # JAX's convention for complex inputs: the conjugate
        _compare(p, "jax.grad", np.conj(g), fd[i], i)


def _check_jvp(p: _Problem, jgrads: list[np.ndarray], tans: list[np.ndarray],
               jt: list[np.ndarray]) -> None:
    """3. Forward mode agrees with reverse mode: <J t, c> == <t, J^T c>."""
    lhs = float(sum(_pair(p.cts[k], u) for u, k in zip(jt, p.oidx)))
    # JAX's gradient of a complex input is the conjugate of PyTorch's: <t, g_torch> = Re(t g)
    rhs = float(sum(np.sum(np.real(t * g)) for t, g in zip(tans, jgrads)))
    if not np.isclose(lhs, rhs, rtol=1e-7, atol=1e-9 * max(1.0, abs(rhs))):
        raise GradCheckFailure(f"{p.label}: jax.jvp disagrees with jax.vjp: <J t, c> = {lhs}, "
                               f"<t, J^T c> = {rhs}")


def _jax_kind(p: _Problem) -> tuple:
    """What decides the path through JAX's rules: real or complex floating inputs and
    outputs, and which attrs are given."""
    return (tuple(p.flat[i].dtype.kind for i in p.fidx),
            tuple(p.cts[k].dtype.kind for k in p.oidx), tuple(sorted(p.s.attrs)))


def check_grads(op_name: str, samples: Sequence[Sample], every: bool = False
                ) -> list[str | None]:
    """:func:`check_grad` on several samples of one op; per sample None (no float64 output:
    nothing checked), "tape" (the tape vs finite differences) or "all" (also ``jax.grad``
    and ``jax.jvp``). The JAX checks run on the first sample of each :func:`_jax_kind`
    (every sample with ``every``), all in one executable: the tape runs the op's one rule,
    checked on every sample, and JAX's transpose runs the same rule, so what ``jax.grad``
    and ``jax.jvp`` add is the wiring (JVP, linear primitive, transpose), per op and kind,
    not per sample."""
    probs: list[tuple[_Problem, list[np.ndarray], bool, dict[int, np.ndarray]]] = []
    state: list[str | None] = []
    kinds: set[tuple] = set()
    for s in samples:
        rng = np.random.default_rng(1234)
        p = _problem(op_name, s, rng)
        if p is None:
            state.append(None)
            continue
        tans = [_random(rng, p.flat[i]) for i in p.fidx]
        both = every or _jax_kind(p) not in kinds
        kinds.add(_jax_kind(p))
        probs.append((p, tans, both, _finite_differences(p)))
        state.append("all" if both else "tape")
    if not probs:
        return state
    try:
        staged = _staged([p for p, *_ in probs], [b for _, _, b, _ in probs],
                         [t for _, t, _, _ in probs])
    except GradCheckFailure:
        raise
    except Exception:  # an op or rule that needs concrete values: run eagerly instead
        staged = None
    if staged is None:
        for p, _, _, fd in probs:
            _check_tape(p, fd)
        both = [(p, tans, fd) for p, tans, b, fd in probs if b]
        derivs = _jax_derivatives([p for p, _, _ in both], [t for _, t, _ in both])
        for (p, tans, fd), (jgrads, jt) in zip(both, derivs):
            _check_jax_grad(p, fd, jgrads)
            _check_jvp(p, jgrads, tans, jt)
        return state
    for (p, tans, b, fd), (tape, jgrads, jt) in zip(probs, staged):
        _compare_tape(p, fd, tape)
        if b:
            _check_jax_grad(p, fd, jgrads)
            _check_jvp(p, jgrads, tans, jt)
    return state


def check_grad_error(op_name: str, es: ErrorSample) -> None:
    """The gradient check of an op without a derivative (``register_samples(grad_error=)``,
    geqrf: PyTorch's outputs require grad, their backward raises): on ``es``'s inputs, the
    floating ones requiring grad, the tape records the op (a floating output requires grad)
    and ``flow.autograd.grad`` through it raises ``es.exc``, matching ``es.match`` and
    naming the op."""
    tens = [_wrap(jax.device_put(np.asarray(a))) for a in es.inputs]
    leaves = [t for a, t in zip(es.inputs, tens) if _is_float(a)]
    for t in leaves:
        t.requires_grad_()
    outs = [o for o in _outs(get_op(op_name).apply(*tens, **es.attrs)) if o.requires_grad]
    if not leaves or not outs:
        raise GradCheckFailure(f"{op_name}: grad_error declared, but no floating output "
                               f"requires grad after the op ran on inputs that require grad")
    cts = [_wrap(jax.device_put(np.ones(o._meta.shape, o._meta.dtype))) for o in outs]
    try:
        autograd.grad(outs, leaves, cts, allow_unused=True)
    except es.exc as e:
        if not re.search(es.match, str(e)) or op_name not in str(e):
            raise GradCheckFailure(f"{op_name}: the backward raised {str(e)!r}, which does "
                                   f"not match {es.match!r} or does not name the op") from e
    else:
        raise GradCheckFailure(f"{op_name}: grad_error declares that its backward raises "
                               f"{es.exc.__name__}, but it ran")


def check_grad(op_name: str, s: Sample) -> bool:
    """Run the gradient checks for one sample (raises :class:`GradCheckFailure`); returns
    False, having checked nothing, when no output is float64 (see the module docstring)."""
    return check_grads(op_name, [s], every=True)[0] is not None
