"""The op checker: for each registered op and each of its samples, every check compares two
independently computed things (a check of code against itself could never fail):

* inference vs kernel: the primitive's abstract eval (``jax.eval_shape`` of the bind, i.e. the
  op's inference) == the shapes and dtypes of the kernel the registry picks, called directly
  outside the primitive (xla and pallas kernels abstractly, python kernels on the NumPy
  inputs; ffi kernels write into buffers the inference sized, so they are not checked here);
* ``jax.jit`` (the primitive staged into a trace) == the sample's independent NumPy
  reference (values, and the dtype kind), or, for ops whose values cannot be predicted
  (random draws), the sample's ``verify`` holds, on every sample;
* eager (dispatch's cached executable, a separate path from the trace) == the same reference
  (or ``verify``) on the samples :func:`_pick_eager` picks: those checked under
  ``jax.vmap``, those passing a dynamic attr, and one per kernel the registry picks (for a
  differentiable op preferably one the gradient check runs eagerly as it is, whose
  executable then serves both). On the others an eager call would lower the same kernel
  with the same attrs through the same lowering rule as the traced call, for an executable
  per sample;
* ``jax.vmap`` (the primitive's batching rule) over a batch of two == a Python loop of eager
  calls, with all inputs batched and with only the first batched, on one sample per kernel
  (:func:`_pick_staged`): every op has one generic batching rule (the kernel lowered under
  ``jax.vmap``, ``ops/primitive.py``), so another sample on the same kernel costs compile
  time and checks nothing new; ``Sample(vmap=True)`` adds a sample, ``vmap=False`` keeps
  one out of vmap. The inference runs on every sample;
* each error sample raises the declared error type, with a message that matches and names
  the op;
* for differentiable ops, the gradient check of :mod:`jflow.testing.grad_check` (the tape
  vs finite differences in float64 on every sample it applies to, at least one of which
  must really be checked; ``jax.grad`` vs finite differences and ``jax.jvp`` vs ``jax.vjp``
  on one sample per kind of inputs and outputs, real or complex: :func:`check_op_grad`).

Compile count (most of the checker's time is XLA compiling): the jit and vmap checks of an
op are staged into one trace, one executable (each sample's outputs compared on their own),
and inputs reach the device by ``jax.device_put`` (``jnp.asarray`` compiles a copy per
shape), so the forward checks of an op cost one compile per distinct eager call plus one;
should the trace refuse a sample beyond those the jit check needs, every sample runs
eagerly instead, as before. A ``verify`` that calls the op again (random draws: the same
key and counter give the same numbers; :func:`jflow.testing.samples.rerun`) reruns the
executable whose outputs it checks: the eager one on the samples that run eagerly, the
staged trace on the others (an eager executable per sample otherwise), so it compiles
nothing. ``check_op(..., sbp=True)`` hands its outputs to the SBP check as the single-device
results, so those cost nothing more.

``check_op`` raises :class:`CheckFailure` (or :class:`GradCheckFailure`) on the first
disagreement and otherwise returns a :class:`CheckReport` that prints what it checked, so a
pass is never silent about what it did not look at. ``check_op(..., sbp=True)`` adds the SBP
check of :mod:`jflow.testing.sbp_check`.

``tests/test_checker_catches.py`` shows each check failing on a deliberately wrong op.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from ..kernels import select_kernel
from ..ops import get as get_op
from ..tensor import _wrap
from . import grad_check as _grad_check
from . import samples as _samples
from .grad_check import _flat_inputs, check_grads, grad_applicable
from .samples import OpSamples, Sample, get_samples
from .sbp_check import sbp_coverage

__all__ = ["check_op", "check_op_grad", "check_sample", "CheckFailure", "CheckReport"]


class CheckFailure(AssertionError):
    """An op disagrees with its reference, its kernel, under jit or vmap, or on errors."""


_TOL = {"float64": (1e-9, 1e-12), "float32": (2e-5, 2e-6), "float16": (2e-3, 2e-3),
        "bfloat16": (2e-2, 2e-2), "complex128": (1e-9, 1e-12), "complex64": (2e-5, 2e-6)}


def _tol(dtype: np.dtype, s: Sample) -> tuple[float, float]:
    rtol, atol = _TOL.get(np.dtype(dtype).name, (0.0, 0.0))
    return (s.rtol if s.rtol is not None else rtol), (s.atol if s.atol is not None else atol)


def _tree_map(f: Any, x: Any) -> Any:
    if isinstance(x, list):
        return [f(e) for e in x]
    return None if x is None else f(x)


def _device(a: Any) -> jax.Array:
    """A NumPy input on the default device without compiling anything (``jnp.asarray``
    stages a copy: one executable per shape and dtype)."""
    return jax.device_put(np.asarray(a))


def _to_tensors(inputs: Any) -> list[Any]:
    return [_tree_map(lambda a: _wrap(_device(a)), x) for x in inputs]


def _outs(res: Any) -> list[Any]:
    return list(res) if isinstance(res, (tuple, list)) else [res]


def _kind(d: np.dtype) -> str:
    d = np.dtype(d)
    return "f" if d.name == "bfloat16" else {"u": "i"}.get(d.kind, d.kind)


def _assert_close(what: str, got: np.ndarray, want: Any, s: Sample, check_kind: bool) -> None:
    want = np.asarray(want)
    if got.shape != want.shape:
        raise CheckFailure(f"{what}: shape {got.shape} != expected {want.shape}")
    if check_kind and _kind(got.dtype) != _kind(want.dtype):
        raise CheckFailure(f"{what}: dtype {got.dtype} is not of the expected kind "
                           f"({want.dtype})")
    rtol, atol = _tol(got.dtype, s)
    wide = {"f": np.float64, "c": np.complex128}.get(_kind(got.dtype))
    g = got if wide is None else got.astype(wide)
    w = want.astype(g.dtype)
    if not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
        bad = ~np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        raise CheckFailure(f"{what}: values differ at {int(bad.sum())} of {bad.size} "
                           f"positions; got {g[bad][:5]}, expected {w[bad][:5]}")


def _batched_second(s: Sample) -> list[Any]:
    if s.batch is not None:
        return list(s.batch)

    def perturb(a: Any) -> Any:
        a = np.asarray(a)
        return (a * 0.5).astype(a.dtype) if _kind(a.dtype) == "f" else a
    return [_tree_map(perturb, x) for x in s.inputs]


def _platform() -> str:
    """The kernel registry's name for the default backend (JAX says "gpu" for CUDA)."""
    backend = jax.default_backend()
    return "cuda" if backend == "gpu" else backend


def _kernel_outputs(op: Any, flat: list[np.ndarray], params: dict[str, Any]
                    ) -> tuple[Any, list[tuple[tuple[int, ...], np.dtype]] | None]:
    """The registry's kernel for these inputs and the shapes and dtypes of what it returns,
    called directly (not through the primitive, so the op's inference is not consulted);
    None for backends whose outputs are allocated from the inference (ffi)."""
    attrs, layout, _ = op.split_params(params)
    in_avals = [jax.core.ShapedArray(a.shape, a.dtype) for a in flat]
    kernel = select_kernel(op, _platform(), in_avals, op.infer_descs(in_avals, layout, attrs),
                           layout)
    if kernel.backend == "python":
        res = kernel.fn(*op.unflatten(list(flat), layout), **attrs)
        return kernel, [(np.shape(r), np.asarray(r).dtype) for r in _outs(res)]
    if kernel.backend not in ("xla", "pallas"):
        return kernel, None
    extra = {"interpret": "cpu" in kernel.platforms} if kernel.backend == "pallas" else {}
    res = jax.eval_shape(lambda *xs: kernel.fn(*op.unflatten(list(xs), layout), **extra,
                                               **attrs), *in_avals)
    return kernel, [(tuple(r.shape), np.dtype(r.dtype)) for r in _outs(res)]


def _check_inference(op: Any, s: Sample, label: str) -> tuple[bool, Any]:
    """The primitive's abstract eval (what ``jax.jit`` sees) == the kernel's real outputs;
    returns whether they were compared (not when the kernel's outputs are sized by the
    inference itself, ffi) and the kernel the registry picked."""
    flat = [np.asarray(a) for a in _flat_inputs(s)]
    params = dict(op.normalize_attrs(dict(s.attrs)))
    if op.structured:
        params["_layout"] = op.layout_of(list(s.inputs))
    abstract = jax.eval_shape(lambda *xs: op.primitive.bind(*xs, **params),
                              *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in flat])
    picked, kernel = _kernel_outputs(op, flat, params)
    if kernel is None:
        return False, picked
    if len(abstract) != len(kernel):
        raise CheckFailure(f"{label}: abstract eval gives {len(abstract)} outputs, the kernel "
                           f"{len(kernel)}")
    for i, (a, (shape, dtype)) in enumerate(zip(abstract, kernel)):
        if tuple(a.shape) != tuple(shape) or np.dtype(a.dtype) != dtype:
            raise CheckFailure(f"{label}: output {i}: abstract eval says {a.dtype}{list(a.shape)}"
                               f", the kernel gives {dtype}{list(shape)}")
    return True, picked


def _reference_check(entry: OpSamples, s: Sample, label: str
                     ) -> Callable[..., None]:
    """A function checking one run's outputs against the sample's reference (computed once)
    or its ``verify``; ``what`` names the run in failure messages. ``rerun`` (inputs ->
    outputs), where given, is how a ``verify`` that calls the op again
    (:func:`jflow.testing.samples.rerun`) reruns the path whose outputs it checks; else
    eagerly."""
    if entry.reference is None:
        assert entry.verify is not None

        def verify(what: str, outs: list[np.ndarray],
                   rerun: Callable[[Any], list[np.ndarray]] | None = None) -> None:
            if rerun is not None:
                _samples._RERUN.append((entry.op, dict(s.attrs), _samples._signature(s.inputs),
                                        rerun))
            try:
                entry.verify(outs, *s.inputs, **s.attrs)
            except AssertionError as e:
                raise CheckFailure(f"{label}: {what} fails the sample's verify: {e}") from e
            finally:
                if rerun is not None:
                    _samples._RERUN.pop()
        return verify
    ref = entry.reference(*s.inputs, **s.attrs)
    refs = _outs(ref)

    def compare(what: str, outs: list[np.ndarray], rerun: Any = None) -> None:
        if len(refs) != len(outs):
            raise CheckFailure(f"{label}: reference gives {len(refs)} outputs, {what} "
                               f"{len(outs)}")
        for i, (o, r) in enumerate(zip(outs, refs)):
            _assert_close(f"{label}: output {i} {what} vs NumPy reference", o, r, s, True)
    return compare


def _runner(op: Any, s: Sample) -> Callable[..., list[Any]]:
    """The op on raw arrays (for ``jax.jit`` / ``jax.vmap``: inside them it binds the
    primitive on tracers)."""
    def run(*vals: Any) -> list[Any]:
        ts = [_tree_map(_wrap, v) for v in vals]
        return [t._value for t in _outs(op.apply(*ts, **s.attrs))]
    return run


def _eager(op: Any, inputs: list[Any], attrs: dict[str, Any]) -> list[np.ndarray]:
    return [np.asarray(t._value) for t in _outs(op(*_to_tensors(inputs), **attrs))]


def _stack(*xs: Any) -> Any:
    if isinstance(xs[0], list):
        return [np.stack(e) for e in zip(*xs)]
    return None if xs[0] is None else np.stack(xs)


@dataclass
class _Run:
    """One sample's forward checks: its eager outputs (already checked against the
    reference), the kernel the registry picked, and which vmap checks it carries."""

    s: Sample
    label: str
    check: Callable[..., None]
    eager: list[np.ndarray] | None
    kernel: Any
    inferred: bool
    jit: bool = False
    vmap_all: bool = False
    vmap_first: bool = False
    eager_run: bool = False
    #: the outputs under ``jax.jit`` (once the staged trace ran)
    jitted: list[np.ndarray] | None = None
    #: the gradient check runs this very call eagerly (:func:`_shares_grad_executable`)
    shares_grad: bool = False


def _first_only_applies(s: Sample) -> bool:
    """vmap with only the first input batched needs a first input (an array, not a list)
    and another input to share."""
    return (s.inputs[0] is not None and not isinstance(s.inputs[0], list)
            and len([x for x in s.inputs if x is not None]) >= 2)


def _shares_grad_executable(op_name: str, s: Sample) -> bool:
    """Whether the gradient check calls the op eagerly on exactly this sample's inputs: a
    sample it applies to whose floating inputs are float64 / complex128 already (it widens
    the others). The eager executable compiled for the forward check's call is then the one
    the finite differences and the tape run (the dispatch cache, or the persistent
    compilation cache in another process), so picking such a sample for the eager and vmap
    checks spares the gradient check a compile."""
    return grad_applicable(op_name, s) and all(
        np.asarray(a).dtype in (np.float64, np.complex128)
        for a in _flat_inputs(s) if np.asarray(a).dtype.kind in "fc")


def _preferred(runs: list[_Run]) -> list[_Run]:
    """``runs`` with the samples whose eager executable the gradient check shares first (in
    their order), then the rest: the per-kernel picks take the first that qualifies."""
    return ([r for r in runs if r.shares_grad] + [r for r in runs if not r.shares_grad])


def _pick_staged(runs: list[_Run], every: bool = False) -> None:
    """Mark the samples that run the ``jax.jit`` and ``jax.vmap`` checks. Eager and
    ``jax.jit`` lower the same kernel (one lowering rule picks it) and differ only in the
    dispatch path, and the batching rule is one generic rule (the kernel lowered under
    ``jax.vmap``), so a second sample on the same kernel adds a compile, not a check: per
    kernel one sample that can be batched runs vmap, likewise one that can batch only its
    first input (the first such sample whose eager executable the gradient check shares,
    :func:`_shares_grad_executable`, else the first such sample), and ``jax.jit`` runs on
    those and, for a kernel none of them uses, on its first sample. ``Sample(vmap=True)``
    (or ``every``) adds a sample to both, ``vmap=False`` keeps a sample out of vmap.
    (:func:`_check_forward` then runs ``jax.jit`` on every sample; this choice of jit
    samples is its fallback's.)"""
    seen_all: set[int] = set()
    seen_first: set[int] = set()
    for r in _preferred(runs):
        force = every or r.s.vmap is True
        if r.s.vmap is not False and _flat_inputs(r.s):
            if force or id(r.kernel) not in seen_all:
                r.vmap_all = True
                seen_all.add(id(r.kernel))
            if _first_only_applies(r.s) and (force or id(r.kernel) not in seen_first):
                r.vmap_first = True
                seen_first.add(id(r.kernel))
        r.jit = force or r.vmap_all or r.vmap_first
    jitted = {id(r.kernel) for r in runs if r.jit}
    for r in runs:
        if id(r.kernel) not in jitted:
            r.jit = True
            jitted.add(id(r.kernel))


def _staged(op: Any, runs: list[_Run]
            ) -> tuple[list[dict[str, list[np.ndarray]]], Any, list[dict[str, Any]]]:
    """One ``jax.jit`` over the samples ``runs`` (one executable for the op): each sample's
    outputs through the traced path ("jit"), and where picked under ``jax.vmap`` with every
    input batched ("all") and with only the first ("first"), over the sample's inputs and
    :func:`_batched_second`'s; and the jitted function and its arguments
    (:func:`_staged_rerun`)."""
    args = []
    for r in runs:
        a: dict[str, Any] = {"vals": [_tree_map(_device, x) for x in r.s.inputs]}
        if r.vmap_all or r.vmap_first:
            batched = [_stack(*xs) for xs in zip(r.s.inputs, _batched_second(r.s))]
            if r.vmap_all:
                a["all"] = [_tree_map(_device, b) for b in batched]
            if r.vmap_first:
                a["first"] = _device(batched[0])
        args.append(a)

    def trace(args: list[dict[str, Any]]) -> list[dict[str, list[Any]]]:
        res = []
        for r, a in zip(runs, args):
            run = _runner(op, r.s)
            out = {"jit": run(*a["vals"])}
            if "all" in a:
                out["all"] = jax.vmap(run)(*a["all"])
            if "first" in a:
                axes = [0] + [None] * (len(a["vals"]) - 1)
                out["first"] = jax.vmap(run, in_axes=axes)(a["first"], *a["vals"][1:])
            res.append(out)
        return res

    jitted = jax.jit(trace)
    got = jitted(args)
    return [{k: [np.asarray(o) for o in v] for k, v in g.items()} for g in got], jitted, args


def _staged_rerun(jitted: Any, args: list[dict[str, Any]], i: int
                  ) -> Callable[[Any], list[np.ndarray]]:
    """Sample ``i``'s outputs under ``jax.jit`` on other inputs of its shapes and dtypes, by
    the op's staged executable (the others' arguments unchanged: no new compile)."""
    def rerun(inputs: Any) -> list[np.ndarray]:
        new = list(args)
        new[i] = {**args[i], "vals": [_tree_map(_device, x) for x in inputs]}
        return [np.asarray(o) for o in jitted(new)[i]["jit"]]
    return rerun


def _compare_vmap(op: Any, r: _Run, got: dict[str, list[np.ndarray]]) -> None:
    """The vmapped outputs == a loop of eager calls (row 0: the sample's own inputs, whose
    eager outputs are ``r.eager``; row 1: :func:`_batched_second`'s)."""
    s = r.s
    second = _batched_second(s)
    if r.vmap_all:
        loop = [r.eager, _eager(op, second, s.attrs)]
        for i, g in enumerate(got["all"]):
            for b in range(2):
                _assert_close(f"{r.label}: output {i} under jax.vmap (row {b}) vs a loop",
                              g[b], loop[b][i], s, False)
    if r.vmap_first:
        axes = [0] + [None] * (len(s.inputs) - 1)
        loop2 = [r.eager, _eager(op, [second[0], *s.inputs[1:]], s.attrs)]
        for i, g in enumerate(got["first"]):
            for b in range(2):
                _assert_close(f"{r.label}: output {i} under jax.vmap(in_axes={axes}) (row {b})",
                              g[b], loop2[b][i], s, False)


def check_sample(op_name: str, s: Sample, entry: OpSamples | None = None) -> None:
    """Run every check on one sample, jit and vmap included (raises
    :class:`CheckFailure`)."""
    _check_forward(op_name, [s], entry or get_samples(op_name), None, every=True)


def _gives_dynamic_attr(op: Any, s: Sample) -> bool:
    """Whether the sample passes a dynamic attr (a float by default): eager dispatch runs
    its second distinct value as an operand of the executable, a path of its own."""
    return any(n in s.attrs and s.attrs[n] is not None for n in op.dynamic_attrs)


def _pick_eager(op: Any, runs: list[_Run], every: bool = False) -> None:
    """Which samples also run eagerly, besides ``jax.jit``: those checked under ``jax.vmap``
    (a loop of eager calls is the reference there), those passing a dynamic attr (eager
    dispatch's operand path), and for a kernel none of these uses one sample (eager
    dispatch's cached executable vs the reference): the first whose eager executable the
    gradient check shares (:func:`_shares_grad_executable`), else its first; every sample
    with ``every``. For the others an eager call lowers the same kernel with the same attrs
    through the same lowering rule as the traced call already compared with the reference,
    and would cost an executable per sample."""
    for r in runs:
        r.eager_run = every or r.vmap_all or r.vmap_first or _gives_dynamic_attr(op, r.s)
    seen = {id(r.kernel) for r in runs if r.eager_run}
    for r in _preferred(runs):
        if id(r.kernel) not in seen:
            r.eager_run = True
            seen.add(id(r.kernel))


def _check_forward(op_name: str, samples: list[Sample], entry: OpSamples,
                   report: CheckReport | None, every: bool = False
                   ) -> dict[int, list[np.ndarray]]:
    """The forward checks of ``samples``: per sample inference vs kernel; one staged trace
    for ``jax.jit`` vs the reference on every sample and ``jax.vmap`` vs a loop
    (:func:`_pick_staged` says on which samples); eager vs the reference on the samples
    :func:`_pick_eager` picks. Should the staged trace fail on a sample beyond those the
    jit check needs (one per kernel), the checks run as :func:`_check_forward_eager`
    does. Records into ``report`` (when given) what ran. Returns each sample's outputs
    (``id(sample)`` -> arrays, eager or else under ``jax.jit``), checked against the
    reference: the single-device results the SBP check compares with."""
    op = get_op(op_name)
    runs = []
    for s in samples:
        label = f"op '{op_name}' sample {s.name or s.attrs}"
        inferred, kernel = _check_inference(op, s, label)
        runs.append(_Run(s, label, _reference_check(entry, s, label), None, kernel,
                         inferred, shares_grad=_shares_grad_executable(op_name, s)))
    _pick_staged(runs, every)
    _pick_eager(op, runs, every)
    for r in runs:
        if r.eager_run:
            r.eager = _eager(op, list(r.s.inputs), r.s.attrs)
            r.check("eager", r.eager)
    picked = {id(r) for r in runs if r.jit}
    for r in runs:
        r.jit = True
    try:
        got_all, jitted, args = _staged(op, runs)
    except Exception:  # a sample the traced path refuses: eager on every sample instead
        for r in runs:
            r.jit = id(r) in picked
            if r.eager is None:
                r.eager_run = True
                r.eager = _eager(op, list(r.s.inputs), r.s.attrs)
                r.check("eager", r.eager)
        staged = [r for r in runs if r.jit]
        got_all, jitted, args = _staged(op, staged)
    else:
        staged = runs
    for i, (r, got) in enumerate(zip(staged, got_all)):
        r.jitted = got["jit"]
        # a verify that calls the op again (random draws: same key and counter, same
        # numbers) reruns the staged executable on a sample with no eager executable of its
        # own (eager and jax.jit lower the same kernel: one sample per kernel runs eagerly),
        # and eagerly where it has one: the jitted draws vs eager ones
        r.check("under jax.jit", got["jit"],
                None if r.eager_run else _staged_rerun(jitted, args, i))
        _compare_vmap(op, r, got)
    outs = {id(r.s): (r.eager if r.eager is not None else r.jitted) for r in runs}
    if report is None:
        return outs
    for r in runs:
        report.samples += 1
        report.eager += r.eager_run
        report.inference += r.inferred
        report.jit += r.jit
        report.vmap += r.vmap_all
        report.vmap_first_only += r.vmap_first
        for a in _flat_inputs(r.s):
            report._add(report.input_dtypes, np.asarray(a).dtype.name)
        for o in (r.eager if r.eager is not None else r.jitted or []):
            rtol, atol = _tol(o.dtype, r.s)
            report._add(report.tolerances, f"{o.dtype.name} rtol={rtol:g} atol={atol:g}")
    return outs


def check_op_grad(op_name: str) -> tuple[int, int]:
    """The gradient check on every applicable sample of ``op_name``; returns (samples
    checked, samples skipped because no output is float64). A differentiable op (not NoGrad)
    must have a backward rule and at least one sample whose gradient is really checked. An
    op whose samples declare ``grad_error`` (no derivative, as PyTorch) is checked by that
    call instead: its backward must raise the declared error (counted as one checked)."""
    checked, skipped, _ = _op_grad(op_name)
    return checked, skipped


def _op_grad(op_name: str) -> tuple[int, int, int]:
    """:func:`check_op_grad`, with the number of samples ``jax.grad`` / ``jax.jvp`` ran on."""
    op = get_op(op_name)
    if op.has_trait("NoGrad"):
        return 0, 0, 0
    if op.grad_rule is None:
        raise CheckFailure(f"op '{op_name}' is neither NoGrad nor has a backward rule")
    grad_error = get_samples(op_name).grad_error
    if grad_error is not None:   # no derivative, as PyTorch: its backward must raise
        _grad_check.check_grad_error(op_name, grad_error)
        return 1, 0, 0
    applicable = [s for s in get_samples(op_name).samples if grad_applicable(op_name, s)]
    done = check_grads(op_name, applicable)
    checked = sum(d is not None for d in done)
    skipped = len(done) - checked
    if not checked:
        raise CheckFailure(f"op '{op_name}' has a backward rule but no sample whose gradient "
                           f"is checked (floating inputs, and a float64 output for float64 "
                           f"inputs); {skipped} sample(s) skipped")
    return checked, skipped, sum(d == "all" for d in done)


def _check_errors(op_name: str, entry: OpSamples) -> None:
    """Each error sample raises its declared type, with a message matching and naming the op."""
    op = get_op(op_name)
    for es in entry.errors:
        try:
            op(*_to_tensors(es.inputs), **es.attrs)
        except es.exc as e:
            if not re.search(es.match, str(e)):
                raise CheckFailure(f"op '{op_name}': error message {str(e)!r} does not match "
                                   f"{es.match!r}") from e
            if op_name not in str(e):
                raise CheckFailure(f"op '{op_name}': error message {str(e)!r} does not name "
                                   f"the op") from e
        else:
            raise CheckFailure(f"op '{op_name}': expected {es.exc.__name__} for inputs "
                               f"{[np.shape(x) for x in es.inputs]} attrs {es.attrs}")


@dataclass
class CheckReport:
    """What :func:`check_op` checked for one op, returned when every check passed.

    ``print(report)`` lists each check with the number of samples it ran on: values (eager
    and ``jax.jit``) against the NumPy reference (or the samples' ``verify``) with the
    tolerances used per output dtype; abstract eval against the kernel's outputs; ``jax.vmap``
    against a loop; the error samples; gradients against finite differences; the SBP
    signatures. A check that did not run says why, so a pass never overstates what was
    verified.
    """

    op: str
    #: "the NumPy reference" or "the samples' verify" (ops with random outputs)
    reference: str = "the NumPy reference"
    #: samples run through the forward checks (values vs the reference)
    samples: int = 0
    #: samples whose values were compared under jax.jit (every sample, but for an op whose
    #: traced path refuses some sample: then one per kernel, those checked under jax.vmap
    #: and those with ``Sample(vmap=True)``, and every sample eagerly)
    jit: int = 0
    #: samples also run eagerly vs the reference: one per kernel, those checked under
    #: jax.vmap, those passing a dynamic attr (:func:`_pick_eager`)
    eager: int = 0
    #: samples whose abstract eval was compared with the kernel's outputs (not ffi kernels)
    inference: int = 0
    #: samples checked under jax.vmap (all inputs batched) and with only the first batched:
    #: one per kernel picked, plus those with ``Sample(vmap=True)``
    vmap: int = 0
    vmap_first_only: int = 0
    #: error samples that raised their declared error naming the op
    errors: int = 0
    #: dtypes of the samples' inputs, in first-seen order
    input_dtypes: list[str] = field(default_factory=list)
    #: "<output dtype> rtol=.. atol=.." for each tolerance the value comparisons used
    tolerances: list[str] = field(default_factory=list)
    #: the gradient check: None when not requested (grad=False), else (checked, skipped)
    grad: tuple[int, int] | None = None
    #: samples jax.grad and jax.jvp ran on (one per kind of inputs and outputs)
    grad_jax: int = 0
    #: why there is no gradient check beyond "not requested" (e.g. a NoGrad op)
    grad_note: str = ""
    #: an op without a derivative (samples' ``grad_error``): the error its backward raised
    grad_error: str = ""
    #: the SBP check: None when not requested, else the signatures run and those never run
    sbp_exercised: list[str] | None = None
    sbp_missing: str = ""

    @staticmethod
    def _add(seq: list[str], item: str) -> None:
        if item not in seq:
            seq.append(item)

    def __str__(self) -> str:
        n = self.samples
        lines = [f"check_op('{self.op}'): passed",
                 f"  samples: {n} (input dtypes: {', '.join(self.input_dtypes) or 'none'}), "
                 f"error samples: {self.errors}",
                 f"  values: vs {self.reference} on {n} sample(s): jax.jit on {self.jit}, "
                 f"eager on {self.eager} (one per kernel, vmapped ones, dynamic attrs: "
                 f"eager and jax.jit lower the same kernel); "
                 f"tolerances: {'; '.join(self.tolerances) or 'none'}",
                 f"  inference: abstract eval vs the kernel's output shapes/dtypes on "
                 f"{self.inference} of {n} sample(s)"
                 + ("" if self.inference == n else
                    " (ffi kernels write into buffers the inference sized: not compared)"),
                 f"  vmap: jax.vmap vs a loop of eager calls on {self.vmap} of {n} sample(s) "
                 f"(first input only batched on {self.vmap_first_only}; one per kernel: the "
                 f"batching rule is generic)",
                 f"  errors: {self.errors} error sample(s) raised the declared error naming "
                 f"the op"]
        if self.grad_error:
            lines.append(f"  gradients: none, as in PyTorch: a backward through the op "
                         f"raised the declared {self.grad_error}")
        elif self.grad is None:
            lines.append(f"  gradients: not checked ({self.grad_note or 'grad=False'})")
        else:
            checked, skipped = self.grad
            lines.append(f"  gradients: tape vs central finite differences "
                         f"(step {_grad_check._EPS:g}, rtol={_grad_check._RTOL:g}, "
                         f"atol={_grad_check._ATOL * 10:g} x max(1, |gradient|)) in float64 "
                         f"on {checked} sample(s), jax.grad vs the same and jax.jvp vs "
                         f"jax.vjp on {self.grad_jax} of them (one per kind of inputs: JAX's "
                         f"transpose runs the same rule); {skipped} skipped (no float64 "
                         f"output); {n - checked - skipped} not applicable (no floating input, "
                         f"or grad=False)")
        if self.sbp_exercised is None:
            lines.append("  SBP: not checked (check_op(..., sbp=True) runs each declared "
                         "signature on global tensors)")
        else:
            lines.append(f"  SBP: {len(self.sbp_exercised)} declared signature(s) run on "
                         f"global tensors vs the single-device result"
                         + (f": {', '.join(self.sbp_exercised)}" if self.sbp_exercised else "")
                         + ("; never run:\n    " + self.sbp_missing.replace("\n", "\n    ")
                            if self.sbp_missing else ""))
        return "\n".join(lines)


def check_op(op_name: str, grad: bool = True, sbp: bool = False) -> CheckReport:
    """Check every sample and error sample registered for ``op_name`` (and, with ``grad``,
    its backward rule; with ``sbp``, every SBP signature it declares, on 2 to 4 CPU
    devices). Raises on the first disagreement; returns a :class:`CheckReport` saying what
    was checked."""
    entry = get_samples(op_name)
    report = CheckReport(op_name)
    if entry.reference is None:
        report.reference = "the samples' verify"
    outs = _check_forward(op_name, list(entry.samples), entry, report)
    _check_errors(op_name, entry)
    report.errors = len(entry.errors)
    if grad:
        if get_op(op_name).has_trait("NoGrad"):
            report.grad_note = "a NoGrad op"
        elif entry.grad_error is not None:
            _op_grad(op_name)
            report.grad_error = (f"{entry.grad_error.exc.__name__} matching "
                                 f"{entry.grad_error.match!r}")
        else:
            checked, skipped, report.grad_jax = _op_grad(op_name)
            report.grad = (checked, skipped)
    if sbp:
        n_dev = len(jax.devices("cpu"))
        if n_dev < 2:
            raise RuntimeError(f"check_op('{op_name}', sbp=True): the SBP check needs 2 or "
                               f"more CPU devices, this process has {n_dev}; set "
                               f"XLA_FLAGS=--xla_force_host_platform_device_count=4 (or "
                               f"jax.config.update('jax_num_cpu_devices', 4)) before JAX "
                               f"starts")
        # ops checked by ``verify`` (random draws, decompositions unique only up to signs):
        # their outputs are still a deterministic function of the inputs on one backend, so
        # the forward check's serve as the single-device result where they came from the
        # CPU backend the SBP check runs on (one executable less); on another backend the
        # SBP check computes its own on CPU
        own = entry.reference is None and _platform() != "cpu"
        cov = sbp_coverage(op_name, None if own else
                           {k: v for k, v in outs.items() if v is not None})
        report.sbp_exercised = sorted(cov.exercised)
        report.sbp_missing = cov.explain_missing()
    return report
