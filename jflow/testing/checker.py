"""The op checker: for each registered op and each of its samples, every check compares two
independently computed things (a check of code against itself could never fail):

* inference vs kernel: the primitive's abstract eval (``jax.eval_shape`` of the bind, i.e. the
  op's inference) == the shapes and dtypes of the kernel the registry picks, called directly
  outside the primitive (xla and pallas kernels abstractly, python kernels on the NumPy
  inputs; ffi kernels write into buffers the inference sized, so they are not checked here);
* eager == the sample's independent NumPy reference (values, and the dtype kind), or, for ops
  whose values cannot be predicted (random draws), the sample's ``verify`` holds;
* ``jax.jit`` (the primitive staged into a trace, a separate path from eager dispatch's cached
  executables) == the same NumPy reference (or ``verify``);
* ``jax.vmap`` (the primitive's batching rule) over a batch of two == a Python loop of eager
  calls, with all inputs batched and with only the first batched;
* each error sample raises the declared error type, with a message that matches and names
  the op;
* for differentiable ops, the gradient check of :mod:`jflow.testing.grad_check` (tape and
  ``jax.grad`` vs finite differences in float64, ``jax.jvp`` vs ``jax.vjp``) on every sample
  it applies to, at least one of which must really be checked (:func:`check_op_grad`).

``tests/test_checker_catches.py`` shows each check failing on a deliberately wrong op.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from ..kernels import select_kernel
from ..ops import get as get_op
from ..tensor import _wrap
from .grad_check import _flat_inputs, check_grad, grad_applicable
from .samples import OpSamples, Sample, get_samples

__all__ = ["check_op", "check_op_grad", "check_sample", "CheckFailure"]


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


def _to_tensors(inputs: Any) -> list[Any]:
    return [_tree_map(lambda a: _wrap(jax.numpy.asarray(a)), x) for x in inputs]


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
                    ) -> list[tuple[tuple[int, ...], np.dtype]] | None:
    """Shapes and dtypes of what the registry's kernel for these inputs returns, the kernel
    called directly (not through the primitive, so the op's inference is not consulted);
    None for backends whose outputs are allocated from the inference (ffi)."""
    attrs, layout, _ = op.split_params(params)
    in_avals = [jax.core.ShapedArray(a.shape, a.dtype) for a in flat]
    kernel = select_kernel(op, _platform(), in_avals, op.infer_descs(in_avals, layout, attrs),
                           layout)
    if kernel.backend == "python":
        res = kernel.fn(*op.unflatten(list(flat), layout), **attrs)
        return [(np.shape(r), np.asarray(r).dtype) for r in _outs(res)]
    if kernel.backend not in ("xla", "pallas"):
        return None
    extra = {"interpret": "cpu" in kernel.platforms} if kernel.backend == "pallas" else {}
    res = jax.eval_shape(lambda *xs: kernel.fn(*op.unflatten(list(xs), layout), **extra,
                                               **attrs), *in_avals)
    return [(tuple(r.shape), np.dtype(r.dtype)) for r in _outs(res)]


def _check_inference(op: Any, s: Sample, label: str) -> None:
    """The primitive's abstract eval (what ``jax.jit`` sees) == the kernel's real outputs."""
    flat = [np.asarray(a) for a in _flat_inputs(s)]
    params = dict(op.normalize_attrs(dict(s.attrs)))
    if op.structured:
        params["_layout"] = op.layout_of(list(s.inputs))
    abstract = jax.eval_shape(lambda *xs: op.primitive.bind(*xs, **params),
                              *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in flat])
    kernel = _kernel_outputs(op, flat, params)
    if kernel is None:
        return
    if len(abstract) != len(kernel):
        raise CheckFailure(f"{label}: abstract eval gives {len(abstract)} outputs, the kernel "
                           f"{len(kernel)}")
    for i, (a, (shape, dtype)) in enumerate(zip(abstract, kernel)):
        if tuple(a.shape) != tuple(shape) or np.dtype(a.dtype) != dtype:
            raise CheckFailure(f"{label}: output {i}: abstract eval says {a.dtype}{list(a.shape)}"
                               f", the kernel gives {dtype}{list(shape)}")


def _reference_check(entry: OpSamples, s: Sample, label: str
                     ) -> Callable[[str, list[np.ndarray]], None]:
    """A function checking one run's outputs against the sample's reference (computed once)
    or its ``verify``; ``what`` names the run in failure messages."""
    if entry.reference is None:
        assert entry.verify is not None

        def verify(what: str, outs: list[np.ndarray]) -> None:
            try:
                entry.verify(outs, *s.inputs, **s.attrs)
            except AssertionError as e:
                raise CheckFailure(f"{label}: {what} fails the sample's verify: {e}") from e
        return verify
    ref = entry.reference(*s.inputs, **s.attrs)
    refs = _outs(ref)

    def compare(what: str, outs: list[np.ndarray]) -> None:
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


def _check_vmap(op: Any, s: Sample, label: str) -> None:
    """``jax.vmap`` over a batch of two input sets == a loop of eager calls, with every input
    batched, then with only the first (the others shared)."""
    run = _runner(op, s)
    sets = [list(s.inputs), _batched_second(s)]
    loop = [_eager(op, inp, s.attrs) for inp in sets]
    batched = [_stack(*xs) for xs in zip(*sets)]
    got = jax.vmap(run)(*[_tree_map(jax.numpy.asarray, b) for b in batched])
    for i, g in enumerate(got):
        for b in range(2):
            _assert_close(f"{label}: output {i} under jax.vmap (row {b}) vs a loop",
                          np.asarray(g[b]), loop[b][i], s, False)
    if len([x for x in s.inputs if x is not None]) < 2 or isinstance(s.inputs[0], list):
        return
    axes = [0] + [None] * (len(s.inputs) - 1)
    rest = [_tree_map(jax.numpy.asarray, x) for x in s.inputs[1:]]
    got = jax.vmap(run, in_axes=axes)(jax.numpy.asarray(batched[0]), *rest)
    loop2 = [_eager(op, [sets[b][0], *s.inputs[1:]], s.attrs) for b in range(2)]
    for i, g in enumerate(got):
        for b in range(2):
            _assert_close(f"{label}: output {i} under jax.vmap(in_axes={axes}) (row {b})",
                          np.asarray(g[b]), loop2[b][i], s, False)


def check_sample(op_name: str, s: Sample, entry: OpSamples | None = None) -> None:
    """Run every check on one sample (raises :class:`CheckFailure`)."""
    op = get_op(op_name)
    entry = entry or get_samples(op_name)
    label = f"op '{op_name}' sample {s.name or s.attrs}"
    _check_inference(op, s, label)
    check = _reference_check(entry, s, label)
    check("eager", _eager(op, list(s.inputs), s.attrs))
    vals = [_tree_map(jax.numpy.asarray, x) for x in s.inputs]
    check("under jax.jit", [np.asarray(v) for v in jax.jit(_runner(op, s))(*vals)])
    if s.vmap and _flat_inputs(s):
        _check_vmap(op, s, label)


def check_op_grad(op_name: str) -> tuple[int, int]:
    """The gradient check on every applicable sample of ``op_name``; returns (samples
    checked, samples skipped because no output is float64). A differentiable op (not NoGrad)
    must have a backward rule and at least one sample whose gradient is really checked."""
    op = get_op(op_name)
    if op.has_trait("NoGrad"):
        return 0, 0
    if op.grad_rule is None:
        raise CheckFailure(f"op '{op_name}' is neither NoGrad nor has a backward rule")
    checked = skipped = 0
    for s in get_samples(op_name).samples:
        if grad_applicable(op_name, s):
            if check_grad(op_name, s):
                checked += 1
            else:
                skipped += 1
    if not checked:
        raise CheckFailure(f"op '{op_name}' has a backward rule but no sample whose gradient "
                           f"is checked (floating inputs, and a float64 output for float64 "
                           f"inputs); {skipped} sample(s) skipped")
    return checked, skipped


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


def check_op(op_name: str, grad: bool = True) -> None:
    """Check every sample and error sample registered for ``op_name`` (and, with ``grad``,
    its backward rule)."""
    entry = get_samples(op_name)
    for s in entry.samples:
        check_sample(op_name, s, entry)
    _check_errors(op_name, entry)
    if grad:
        check_op_grad(op_name)
