"""``torch.autograd.gradcheck`` / ``gradgradcheck``: finite differences against the tape.

PyTorch's slow mode, with its signatures, defaults, checks and messages: for every input
that requires grad, the numerical Jacobian by central differences (``eps``, one element at
a time, in the input's dtype) against the analytical one from ``autograd.grad`` with one-hot
output gradients (each row computed twice: they must agree within ``nondet_tol``), compared
by ``allclose(analytical, numerical, rtol, atol)``; then the backward with zero output
gradients must give zeros. A mismatch raises :class:`GradcheckError` (a ``RuntimeError``)
with PyTorch's message, or returns False with ``raise_exception=False``.
``gradgradcheck`` checks the gradient of ``autograd.grad(..., create_graph=True)`` the same
way (PyTorch's construction; random ``grad_outputs`` in [-1, 1) from NumPy's global
generator when none are given).

Where jflow's differs: ``fast_mode=True`` runs the full comparison too (PyTorch's fast mode
checks one random projection of the same Jacobians: the full check is stricter, and passes
where it passes); a perturbed input is passed as a new tensor (PyTorch writes the
perturbation into the input's ``.data``: a function that reads the input through a closure
instead of its argument sees the perturbation there only); ``check_undefined_grad`` is
accepted and has nothing to check (the engine gives an unused output a zero gradient
itself); forward-mode and batched checks (``check_forward_ad``, ``check_batched_grad``,
``check_batched_forward_grad``, ``check_fwd_over_rev``) and complex inputs or outputs raise
``NotImplementedError``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np

from ..tensor import Tensor, _wrap
from .engine import grad as _grad
from .grad_mode import no_grad

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Raised by :func:`gradcheck` and :func:`gradgradcheck` on a failed check."""


def _as_tuple(x: Any) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable_outputs(x: Any) -> tuple:
    return tuple(o for o in _as_tuple(x) if o.requires_grad)


def _np(t: Tensor) -> np.ndarray:
    with no_grad():
        return np.asarray(t.detach()._value)


def _is_complex(t: Any) -> bool:
    return isinstance(t, Tensor) and t._meta.dtype.kind == "c"


def _check_inputs(inputs: tuple) -> None:
    any_grad = False
    for idx, inp in enumerate(inputs):
        if isinstance(inp, Tensor) and inp.requires_grad:
            if str(inp._meta.dtype) not in ("float64", "complex128"):
                warnings.warn(f"Input #{idx} requires gradient and is not a double precision "
                              f"floating point or complex. This check will likely fail if all "
                              f"the inputs are not of double precision floating point or "
                              f"complex. ", stacklevel=3)
            if _is_complex(inp):
                raise NotImplementedError("jflow's gradcheck: complex inputs are not supported "
                                          "(PyTorch checks their Wirtinger derivatives)")
            any_grad = True
    if not any_grad:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of them have requires_grad=True.")


def _numerical(func: Callable[..., Any], inputs: tuple, eps: float
               ) -> list[list[np.ndarray]]:
    """``jac[j][i]``: d output i / d input j (the j-th input requiring grad), shape
    ``(numel(input), numel(output))``, by central differences."""
    out: list[list[np.ndarray]] = []
    for x in inputs:
        if not (isinstance(x, Tensor) and x.requires_grad):
            continue
        base = _np(x)
        same = [k for k, y in enumerate(inputs) if y is x]  # one tensor passed twice
        cols: list[list[np.ndarray]] = []
        flat = base.reshape(-1)
        for e in range(flat.size):
            res = []
            for sign in (-1.0, 1.0):
                pert = flat.copy()
                pert[e] = (flat[e] + sign * eps).astype(base.dtype)
                t = _wrap(jnp.asarray(pert.reshape(base.shape)))
                if x.requires_grad:
                    t.requires_grad_(True)
                args = list(inputs)
                for k in same:
                    args[k] = t
                res.append([_np(o).astype(np.float64).reshape(-1)
                            for o in _as_tuple(func(*args)) if isinstance(o, Tensor)])
            cols.append([(b - a) / (2 * eps) for a, b in zip(*res)])
        n_out = len(cols[0]) if cols else 0
        out.append([np.stack([c[i] for c in cols]) if cols else np.zeros((0, 0))
                    for i in range(n_out)])
    return out


def _vjps(output: Tensor, diff_inputs: list[Tensor], g: np.ndarray) -> list[np.ndarray]:
    gt = _wrap(jnp.asarray(g.reshape(output._meta.shape)))
    res = _grad([output], diff_inputs, [gt], retain_graph=True, allow_unused=True)
    return [np.zeros(x._meta.shape, np.float64).reshape(-1) if r is None
            else _np(r).astype(np.float64).reshape(-1) for r, x in zip(res, diff_inputs)]


def _analytical(output: Tensor, diff_inputs: list[Tensor], nondet_tol: float,
                check_grad_dtypes: bool) -> list[np.ndarray]:
    """``jac[j]``: d output / d input j, ``(numel(input), numel(output))``, row by row of the
    output from one-hot gradients (twice: reentrancy)."""
    n = int(np.prod(output._meta.shape, dtype=np.int64))
    dtype = output._meta.dtype
    cols1, cols2 = [], []
    for r in range(n):
        g = np.zeros(n, dtype)
        g[r] = 1
        cols1.append(_vjps(output, diff_inputs, g))
        cols2.append(_vjps(output, diff_inputs, g))
    if check_grad_dtypes:
        gt = _wrap(jnp.ones(output._meta.shape, dtype))
        res = _grad([output], diff_inputs, [gt], retain_graph=True, allow_unused=True)
        for r, x in zip(res, diff_inputs):
            if r is not None and r._meta.dtype != x._meta.dtype:
                raise GradcheckError("Gradient has dtype mismatch")
    jac1 = [np.stack([c[j] for c in cols1], axis=1) if n else
            np.zeros((int(np.prod(x._meta.shape)), 0)) for j, x in enumerate(diff_inputs)]
    jac2 = [np.stack([c[j] for c in cols2], axis=1) if n else
            np.zeros((int(np.prod(x._meta.shape)), 0)) for j, x in enumerate(diff_inputs)]
    for a, b in zip(jac1, jac2):
        if a.size and np.abs(a - b).max() > nondet_tol:
            raise GradcheckError(
                f"Backward is not reentrant, i.e., running backward with same input and "
                f"grad_output multiple times gives different values, although analytical "
                f"gradient matches numerical gradient.The tolerance for nondeterminism was "
                f"{nondet_tol}.")
    return jac1


def _show(a: np.ndarray) -> Tensor:
    return _wrap(jnp.asarray(a))


def _gradcheck(func: Callable[..., Any], inputs: Any, eps: float, atol: float, rtol: float,
               nondet_tol: float, check_grad_dtypes: bool) -> bool:
    tupled = _as_tuple(inputs)
    _check_inputs(tupled)
    func_out = func(*tupled)
    outs = _as_tuple(func_out)
    if any(_is_complex(o) for o in outs):
        raise NotImplementedError("jflow's gradcheck: complex outputs are not supported "
                                  "(PyTorch checks their real and imaginary parts)")
    outputs = _differentiable_outputs(func_out)
    numerical = _numerical(func, tupled, eps)
    if not outputs:
        for per_input in numerical:
            for jac in per_input:
                if np.count_nonzero(jac):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return True
    # (numerical[j][i] -> per differentiable output i: [input j])
    keep = [i for i, o in enumerate(o for o in outs if isinstance(o, Tensor))
            if o.requires_grad]
    diff_inputs = [x for x in tupled if isinstance(x, Tensor) and x.requires_grad]
    for i, o in zip(range(len(outputs)), outputs):
        analytical = _analytical(o, diff_inputs, nondet_tol, check_grad_dtypes)
        for j, a in enumerate(analytical):
            n = numerical[j][keep[i]]
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(f"Jacobian mismatch for output {i:d} with respect to "
                                     f"input {j:d},\nnumerical:{_show(n)}\n"
                                     f"analytical:{_show(a)}\n")
    _backward_mul_by_grad_output(outputs, diff_inputs)
    return True


def _backward_mul_by_grad_output(outputs: tuple, diff_inputs: list[Tensor]) -> None:
    zeros = [_wrap(jnp.zeros(o._meta.shape, o._meta.dtype)) for o in outputs]
    grads = _grad(list(outputs), diff_inputs, zeros, retain_graph=True, allow_unused=True)
    for gi, x in zip(grads, diff_inputs):
        if gi is None:
            continue
        if tuple(gi._meta.shape) != tuple(x._meta.shape):
            raise GradcheckError("grad is incorrect size")
        if np.count_nonzero(_np(gi)):
            raise GradcheckError("backward not multiplied by grad_output")


def gradcheck(func: Callable[..., Any], inputs: Any, *, eps: float = 1e-6, atol: float = 1e-5,
              rtol: float = 1e-3, raise_exception: bool = True, nondet_tol: float = 0.0,
              check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
              check_batched_grad: bool = False, check_batched_forward_grad: bool = False,
              check_forward_ad: bool = False, check_backward_ad: bool = True,
              fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Check the gradients of ``func`` at ``inputs`` (a tensor or a tuple; those that require
    grad are checked, in float64 ideally) against finite differences; see the module
    docstring. True, or :class:`GradcheckError` (False with ``raise_exception=False``)."""
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError("Expected at least one of check_forward_ad or check_backward_ad "
                             "to be True")
    if check_batched_grad and not check_backward_ad:
        raise AssertionError("Setting check_batched_grad=True requires check_backward_ad to "
                             "be True")
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError("Setting check_batched_forward_grad=True requires "
                             "check_forward_ad to be True")
    for flag, name in ((check_forward_ad, "check_forward_ad"),
                       (check_batched_grad, "check_batched_grad"),
                       (check_batched_forward_grad, "check_batched_forward_grad")):
        if flag:
            raise NotImplementedError(f"jflow's gradcheck: {name}=True is not supported (it "
                                      f"checks reverse mode on the tape only)")
    try:
        return _gradcheck(func, inputs, eps, atol, rtol, nondet_tol, check_grad_dtypes)
    except GradcheckError:
        if raise_exception:
            raise
        return False


def gradgradcheck(func: Callable[..., Any], inputs: Any, grad_outputs: Any = None, *,
                  eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
                  gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True,
                  check_grad_dtypes: bool = False, check_batched_grad: bool = False,
                  check_fwd_over_rev: bool = False, check_rev_over_rev: bool = True,
                  fast_mode: bool = False, masked: bool = False) -> bool:
    """Check second derivatives: :func:`gradcheck` of the gradients that
    ``autograd.grad(func(*inputs), inputs, grad_outputs, create_graph=True)`` gives, with
    respect to the inputs and the ``grad_outputs`` (random in [-1, 1) if not given)."""
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or "
                             "check_rev_over_rev to be True")
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_undefined_grad=True requires check_rev_over_rev "
                             "to be True")
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError("Setting check_batched_grad=True requires check_rev_over_rev to "
                             "be True")
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*tupled_inputs))
        tupled_grad_outputs = []
        for x in outputs:
            dt = x._meta.dtype if x._meta.dtype.kind in "fc" else np.float64
            g = _wrap(jnp.asarray(np.random.uniform(-1, 1, x._meta.shape).astype(dt)))
            tupled_grad_outputs.append(g.requires_grad_(True))
        tupled_grad_outputs = tuple(tupled_grad_outputs)
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    diff_input_idx = {i for i, x in enumerate(tupled_inputs)
                      if isinstance(x, Tensor) and x.requires_grad}
    diff_grad_output_idx = {i for i, x in enumerate(tupled_grad_outputs) if x.requires_grad}

    def new_func(*args: Any) -> tuple:
        input_args = tuple(x.requires_grad_() if i in diff_input_idx else x
                           for i, x in enumerate(args[:-num_outputs]))
        outputs = _differentiable_outputs(func(*input_args))
        gouts = tuple(x.requires_grad_() if i in diff_grad_output_idx else x
                      for i, x in enumerate(args[-num_outputs:]))
        diff_input_args = [x for i, x in enumerate(input_args) if i in diff_input_idx]
        grad_inputs = _grad(list(outputs), diff_input_args, list(gouts), create_graph=True,
                            allow_unused=True)
        return tuple(g for g in grad_inputs if g is not None)

    return gradcheck(new_func, tupled_inputs + tupled_grad_outputs, eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes,
                     check_batched_grad=check_batched_grad, fast_mode=fast_mode,
                     check_forward_ad=check_fwd_over_rev,
                     check_backward_ad=check_rev_over_rev, masked=masked)
