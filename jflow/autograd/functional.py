"""``flow.autograd.functional``: PyTorch's higher-level autograd functions on the tape —
``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``vhp``, ``hvp``.

As PyTorch's (non-vectorized) forms, each runs ``func`` on detached copies of the inputs
that require grad and differentiates the recorded graph with :func:`flow.autograd.grad`:
``jacobian`` one vector-Jacobian product per output element, ``jvp`` / ``hvp`` by the
double-backward trick, ``hessian`` as the Jacobian of the gradient. ``create_graph=True``
keeps the results differentiable; ``strict=True`` raises where an output does not depend on
an input (else that block is zeros). Inputs and outputs are a Tensor or a tuple of Tensors,
and results come back in the same structure (a Jacobian: outputs outside, inputs inside).
(``flow.func``'s ``jacrev`` / ``jvp`` ... are the functional-transform forms.)
``vectorize=True`` and ``strategy="forward-mode"`` compute the same values the same way
here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..tensor import Tensor
from .engine import grad
from .grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(x: Any, what: str, fname: str) -> tuple[bool, tuple[Tensor, ...]]:
    """``(was a tuple, the tensors)``, PyTorch's TypeError for anything else."""
    is_tuple = isinstance(x, tuple)
    items = x if is_tuple else (x,)
    if not all(isinstance(t, Tensor) for t in items):
        bad = type(x) if not is_tuple else type(next(t for t in items if not isinstance(t, Tensor)))
        raise TypeError(f"The {what} given to {fname} must be either a Tensor or a tuple of "
                        f"Tensors but the given {what} has type {bad}.")
    return is_tuple, tuple(items)


def _grad_inputs(inputs: tuple[Tensor, ...], create_graph: bool) -> tuple[Tensor, ...]:
    """Fresh leaves that require grad (keeping the graph to the caller's inputs when
    ``create_graph``, as PyTorch's ``_grad_preprocess``)."""
    if create_graph:
        return tuple(t.view_as(t) if t.requires_grad else t.detach().requires_grad_(True)
                     for t in inputs)
    return tuple(t.detach().requires_grad_(True) for t in inputs)


def _call(func: Callable[..., Any], inputs: tuple[Tensor, ...], fname: str
          ) -> tuple[bool, tuple[Tensor, ...]]:
    out = func(*inputs)
    return _as_tuple(out, "outputs of the user-provided function", fname)


def _check_v(v: Any, like: tuple[Tensor, ...], fname: str, what: str) -> tuple[Tensor, ...]:
    _, vs = _as_tuple(v, "v", fname)
    if len(vs) != len(like):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got "
                           f"{len(vs)}.")
    for a, b in zip(vs, like):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"v has invalid size: should be {b.shape} but got {a.shape}.")
    return vs


def _input_v(v: Any, xs: tuple[Tensor, ...], fname: str) -> tuple[Tensor, ...]:
    """The vector of a product with the inputs' side (jvp, hvp, vhp): ``v`` checked against
    the inputs, or ones when ``v`` is None and the input is one single-element tensor."""
    if v is not None:
        return _check_v(v, xs, fname, "inputs")
    if len(xs) != 1 or xs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    return (xs[0].detach().new_ones(tuple(xs[0].shape)),)


def _grads(outputs: tuple[Tensor, ...], inputs: tuple[Tensor, ...], vs: tuple[Tensor, ...],
           create_graph: bool, strict: bool, fname: str) -> tuple[Tensor, ...]:
    """``sum_i v_i . d outputs_i / d inputs``, zeros where nothing flows (strict: raises)."""
    diff = [(o, v) for o, v in zip(outputs, vs) if o.requires_grad]
    if strict and len(diff) < len(outputs):
        i = next(k for k, o in enumerate(outputs) if not o.requires_grad)
        raise RuntimeError(f"Output {i} of the user-provided function does not require "
                           f"gradients. The outputs must be computed in a differentiable "
                           f"manner from the input when running in strict mode.")
    got: tuple[Any, ...] = (None,) * len(inputs)
    if diff:
        got = grad([o for o, _ in diff], list(inputs), [v for _, v in diff],
                   create_graph=create_graph, retain_graph=True, allow_unused=True)
    out = []
    for i, (g, x) in enumerate(zip(got, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode.")
            g = x.detach().new_zeros(tuple(x.shape))
        out.append(g)
    return tuple(out)


def _shape(is_tuple: bool, items: tuple[Any, ...]) -> Any:
    return items if is_tuple else items[0]


def _detach(ts: tuple[Tensor, ...], create_graph: bool) -> tuple[Tensor, ...]:
    return ts if create_graph else tuple(t.detach() for t in ts)


def vjp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), v^T J)``: the vector-Jacobian product, shaped as ``inputs``. ``v``
    may be left out when ``func`` returns one single-element tensor."""
    in_tuple, xs = _as_tuple(inputs, "inputs", "vjp")
    with enable_grad():
        xs = _grad_inputs(xs, create_graph)
        out_tuple, outs = _call(func, xs, "vjp")
        if v is None:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided "
                                   "function returns a single Tensor with a single element.")
            vs = (outs[0].new_ones(tuple(outs[0].shape)),)
        else:
            vs = _check_v(v, outs, "vjp", "outputs")
        g = _grads(outs, xs, vs, create_graph, strict, "vjp")
    return _shape(out_tuple, _detach(outs, create_graph)), _shape(in_tuple, g)


def jvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), J v)``: the Jacobian-vector product, shaped as the outputs (by the
    double-backward trick). ``v`` may be left out when the input is one single-element
    tensor."""
    in_tuple, xs = _as_tuple(inputs, "inputs", "jvp")
    vs = _input_v(v, xs, "jvp")
    with enable_grad():
        xs = _grad_inputs(xs, create_graph)
        out_tuple, outs = _call(func, xs, "jvp")
        # u -> u^T J is linear in u: its gradient along v is J v
        us = tuple(o.detach().new_zeros(tuple(o.shape)).requires_grad_(True) for o in outs)
        g = _grads(outs, xs, us, True, strict, "jvp")
        jv = _grads(g, us, vs, create_graph, strict, "jvp")
    return _shape(out_tuple, _detach(outs, create_graph)), _shape(out_tuple, jv)


def jacobian(func: Callable[..., Any], inputs: Any, create_graph: bool = False,
             strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``: for output ``o`` and input ``x`` a tensor of
    shape ``o.shape + x.shape``; a tuple per tuple of inputs, outputs outside."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".'
                             ' Hint: If your function has more outputs than inputs, "forward-'
                             'mode" tends to be more performant. Otherwise, prefer to use '
                             '"reverse-mode".')  # (PyTorch's type and words)
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("torch.autograd.functional.jacobian: `strategy=\"forward-"
                                  "mode\"` is only implemented together with `vectorize=True`"
                                  ".")
    in_tuple, xs = _as_tuple(inputs, "inputs", "jacobian")
    with enable_grad():
        xs = _grad_inputs(xs, create_graph)
        out_tuple, outs = _call(func, xs, "jacobian")
        rows: list[tuple[Tensor, ...]] = []
        for o in outs:
            n = o.numel()
            per_input: list[list[Tensor]] = [[] for _ in xs]
            for k in range(n):   # one vector-Jacobian product per output element
                e = o.detach().new_zeros((n,))
                e[k] = 1
                g = _grads((o,), xs, (e.reshape(tuple(o.shape)),), create_graph, strict,
                           "jacobian")
                for lst, gi in zip(per_input, g):
                    lst.append(gi)
            blocks = []
            for x, lst in zip(xs, per_input):
                shape = tuple(o.shape) + tuple(x.shape)
                blocks.append(lst[0].new_zeros(shape) if not lst else
                              _stack(lst).reshape(shape))
            rows.append(tuple(blocks))
    if not out_tuple:
        return _shape(in_tuple, rows[0])
    return tuple(_shape(in_tuple, r) for r in rows)


def _stack(ts: list[Tensor]) -> Tensor:
    from ..functional import F  # (jflow.functional imports this package: a cycle at import)
    return F.stack(ts, 0)


def hessian(func: Callable[..., Any], inputs: Any, create_graph: bool = False,
            strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar ``func``: ``x.shape + x.shape`` for one input, a tuple of
    tuples over pairs of inputs."""
    in_tuple, xs = _as_tuple(inputs, "inputs", "hessian")

    def gradient(*args: Tensor) -> Any:
        _, outs = _call(func, args, "hessian")
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        o = outs[0].reshape(())
        g = _grads((o,), args, (o.new_ones(()),), True, strict, "hessian")
        return g if in_tuple else g[0]
    return jacobian(gradient, xs if in_tuple else xs[0], create_graph, strict, vectorize,
                    outer_jacobian_strategy)


def vhp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), v^T H)`` of a scalar ``func``."""
    return _hessian_product("vhp", func, inputs, v, create_graph, strict)


def hvp(func: Callable[..., Any], inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple[Any, Any]:
    """``(func(inputs), H v)`` of a scalar ``func`` (equal to :func:`vhp`: H is symmetric
    for the twice-differentiable functions both are defined for)."""
    return _hessian_product("hvp", func, inputs, v, create_graph, strict)


def _hessian_product(fname: str, func: Callable[..., Any], inputs: Any, v: Any,
                     create_graph: bool, strict: bool) -> tuple[Any, Any]:
    in_tuple, xs = _as_tuple(inputs, "inputs", fname)
    vs = _input_v(v, xs, fname)
    with enable_grad():
        xs = _grad_inputs(xs, create_graph)
        _, outs = _call(func, xs, fname)
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError(f"The Tensor returned by the function given to {fname} should "
                               f"contain a single element")
        o = outs[0]
        g = _grads((o,), xs, (o.new_ones(tuple(o.shape)),), True, strict, fname)
        hv = _grads(g, xs, vs, create_graph, strict, fname)
    return (o if create_graph else o.detach()), _shape(in_tuple, hv)
