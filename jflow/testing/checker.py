"""The op checker: for each registered op and each of its samples,

* abstract eval (``jax.eval_shape`` of the primitive) == the eager output's shape and dtype;
* eager == an independent NumPy reference (values, and the dtype kind);
* ``jax.jit`` == eager;
* ``jax.vmap`` over a batch (all inputs batched, and only the first) == a Python loop;
* each error sample raises the declared jflow error;
* for differentiable ops, the gradient check of :mod:`jflow.testing.grad_check` (tape and
  ``jax.grad`` vs finite differences in float64, ``jax.jvp`` vs ``jax.vjp``).
"""

from __future__ import annotations

import re
from typing import Any

import jax
import numpy as np

from ..ops import get as get_op
from ..tensor import Tensor, _wrap
from .grad_check import check_grad, grad_applicable
from .samples import OpSamples, Sample, get_samples

__all__ = ["check_op", "check_op_grad", "check_sample", "CheckFailure"]


class CheckFailure(AssertionError):
    """An op disagrees with its reference, its inference, jit or vmap."""


_TOL = {"float64": (1e-9, 1e-12), "float32": (2e-5, 2e-6), "float16": (2e-3, 2e-3),
        "bfloat16": (2e-2, 2e-2)}


def _tol(dtype: np.dtype, s: Sample) -> tuple[float, float]:
    rtol, atol = _TOL.get(np.dtype(dtype).name, (0.0, 0.0))
    return (s.rtol if s.rtol is not None else rtol), (s.atol if s.atol is not None else atol)


def _tree_map(f: Any, x: Any) -> Any:
    if isinstance(x, list):
        return [f(e) for e in x]
    return None if x is None else f(x)


def _to_tensors(inputs: Any) -> list[Any]:
    return [_tree_map(lambda a: _wrap(jax.numpy.asarray(a)), x) for x in inputs]


def _outs(res: Any) -> list[Tensor]:
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
    g = got.astype(np.float64) if _kind(got.dtype) == "f" else got
    w = want.astype(g.dtype) if _kind(got.dtype) == "f" else want.astype(got.dtype)
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


def check_sample(op_name: str, s: Sample, entry: OpSamples | None = None) -> None:
    """Run every check on one sample (raises :class:`CheckFailure`)."""
    op = get_op(op_name)
    entry = entry or get_samples(op_name)
    label = f"op '{op_name}' sample {s.name or s.attrs}"
    tensors = _to_tensors(s.inputs)
    eager = [np.asarray(t._value) for t in _outs(op(*tensors, **s.attrs))]

    # abstract eval == real output
    flat = [a for x in s.inputs for a in (x if isinstance(x, list) else [x]) if a is not None]
    attrs = op.normalize_attrs(dict(s.attrs))
    params = dict(attrs)
    if op.structured:
        params["_layout"] = op.layout_of(list(s.inputs))
    abstract = jax.eval_shape(lambda *xs: op.primitive.bind(*xs, **params),
                              *[jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype)
                                for a in flat])
    if len(abstract) != len(eager):
        raise CheckFailure(f"{label}: abstract eval gives {len(abstract)} outputs, eager "
                           f"{len(eager)}")
    for i, (a, e) in enumerate(zip(abstract, eager)):
        if tuple(a.shape) != e.shape or np.dtype(a.dtype) != e.dtype:
            raise CheckFailure(f"{label}: output {i}: abstract eval says {a.dtype}{list(a.shape)}"
                               f", the kernel gives {e.dtype}{list(e.shape)}")

    # eager == independent reference
    if entry.reference is not None:
        ref = entry.reference(*s.inputs, **s.attrs)
        refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        if len(refs) != len(eager):
            raise CheckFailure(f"{label}: reference gives {len(refs)} outputs, op {len(eager)}")
        for i, (e, r) in enumerate(zip(eager, refs)):
            _assert_close(f"{label}: output {i} vs NumPy reference", e, r, s, True)
    else:
        assert entry.verify is not None
        entry.verify(eager, *s.inputs, **s.attrs)

    # jit == eager
    def run(*vals: Any) -> list[Any]:
        ts = [_tree_map(_wrap, v) for v in vals]
        return [t._value for t in _outs(op.apply(*ts, **s.attrs))]

    vals = [_tree_map(jax.numpy.asarray, x) for x in s.inputs]
    jitted = jax.jit(run)(*vals)
    for i, (j, e) in enumerate(zip(jitted, eager)):
        _assert_close(f"{label}: output {i} under jax.jit vs eager", np.asarray(j), e, s, False)

    # vmap == loop
    if not s.vmap or not flat:
        return
    second = _batched_second(s)
    sets = [list(s.inputs), second]
    loop = [[np.asarray(t._value) for t in _outs(op(*_to_tensors(inp), **s.attrs))]
            for inp in sets]

    def stack(*xs: Any) -> Any:
        if isinstance(xs[0], list):
            return [np.stack(e) for e in zip(*xs)]
        return None if xs[0] is None else np.stack(xs)

    batched = [stack(*xs) for xs in zip(*sets)]
    got = jax.vmap(run)(*[_tree_map(jax.numpy.asarray, b) for b in batched])
    for i, g in enumerate(got):
        for b in range(2):
            _assert_close(f"{label}: output {i} under jax.vmap (row {b}) vs a loop",
                          np.asarray(g[b]), loop[b][i], s, False)
    # only the first input batched, the rest shared
    if len([x for x in s.inputs if x is not None]) > 1 and not isinstance(s.inputs[0], list):
        axes = [0] + [None] * (len(s.inputs) - 1)
        rest = [_tree_map(jax.numpy.asarray, x) for x in s.inputs[1:]]
        got = jax.vmap(run, in_axes=axes)(jax.numpy.asarray(batched[0]), *rest)
        loop2 = [[np.asarray(t._value) for t in
                  _outs(op(*_to_tensors([sets[b][0], *s.inputs[1:]]), **s.attrs))]
                 for b in range(2)]
        for i, g in enumerate(got):
            for b in range(2):
                _assert_close(f"{label}: output {i} under jax.vmap(in_axes={axes}) (row {b})",
                              np.asarray(g[b]), loop2[b][i], s, False)


def check_op_grad(op_name: str) -> int:
    """The gradient check on every applicable sample of ``op_name``; returns how many ran.
    A differentiable op (not NoGrad) must have a backward rule and a sample to check it on."""
    op = get_op(op_name)
    if op.has_trait("NoGrad"):
        return 0
    if op.grad_rule is None:
        raise CheckFailure(f"op '{op_name}' is neither NoGrad nor has a backward rule")
    ran = 0
    for s in get_samples(op_name).samples:
        if grad_applicable(op_name, s):
            check_grad(op_name, s)
            ran += 1
    if not ran:
        raise CheckFailure(f"op '{op_name}' has a backward rule but no sample with floating "
                           f"inputs to check it on")
    return ran


def check_op(op_name: str, grad: bool = True) -> None:
    """Check every sample and error sample registered for ``op_name`` (and, with ``grad``,
    its backward rule)."""
    entry = get_samples(op_name)
    for s in entry.samples:
        check_sample(op_name, s, entry)
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
    if grad:
        check_op_grad(op_name)
