"""An op's ONE backward rule (OneFlow's ``OpExprGradFunction``: Init / Capture / Apply).

A rule is registered per op with :func:`register_backward`::

    @register_backward("tanh", save=["y"])          # capture: which inputs/outputs to keep
    def tanh_backward(ctx, dy):                     # apply: output grads -> input grads
        (y,) = ctx.saved_tensors
        return dy * (1 - y * y)

*Capture* is declarative: ``save`` names the op's inputs and/or outputs the rule needs, so an
op can expose extra outputs (statistics, indices) to its rule instead of recomputing them.
*Apply* is ordinary jflow code on Tensors. The same rule is run by three callers — the eager
tape (:mod:`jflow.autograd.engine`), JAX's transformations (:mod:`jflow.autograd.jax_rules`)
and the tape while tracing — through :func:`run_rule`, so they cannot disagree.

``apply(ctx, *grads)`` gets one gradient per flat output (``None`` for an integer/bool output;
a floating output that received no gradient gets zeros) and returns one gradient per flat input
(a bare Tensor when the op has a single flat input; ``None`` where there is none). Only
``ctx.needs_input_grad[i]`` entries are used: a rule may skip the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..ops.registry import get as _get_op
from ..tensor import Tensor

__all__ = ["BackwardRule", "BackwardContext", "register_backward", "get_rule",
           "register_tangent", "get_tangent",
           "GradientNotFoundError", "is_differentiable_dtype"]


class GradientNotFoundError(RuntimeError):
    """A gradient flowed into an op that has no backward rule and is not marked NoGrad."""


def is_differentiable_dtype(dtype: Any) -> bool:
    """Floating dtypes carry gradients; integers and bools never do."""
    d = np.dtype(dtype)
    return d.kind in "fc" or d.name == "bfloat16"


@dataclass(frozen=True)
class BackwardRule:
    """A registered rule: the op, the apply function and what it saves (``("in"|"out", i)``
    per saved name, ``i`` the declared input/output index)."""

    op: Any
    apply: Callable[..., Any]
    save: tuple[tuple[str, int], ...]
    save_for: tuple[tuple[int, ...] | None, ...] = ()
    _slots: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def flat_save(self) -> tuple[tuple[bool, int, tuple[int, ...] | None], ...]:
        """``(is_output, flat index, needed_for)`` per saved tensor, for an op without
        optional/variadic inputs or outputs (the fast recording path of one-output ops);
        ``needed_for``: the inputs whose gradient reads it (None: any)."""
        return self._flat_save

    def __post_init__(self) -> None:
        fors = self.save_for or (None,) * len(self.save)
        flat = tuple((kind == "out", i, f) for (kind, i), f in zip(self.save, fors))
        object.__setattr__(self, "_flat_save", flat)
        # what a one-input op's recording saves, decided here rather than per call
        # (graph.record1): "out" its output, "in" its input (version-checked: the input's own
        # gradient reads it), None anything else (the general loop)
        one = None
        if len(flat) == 1 and flat[0][1] == 0:
            is_out, _, needed_for = flat[0]
            if is_out:
                one = "out"
            elif needed_for is None or 0 in needed_for:
                one = "in"
        object.__setattr__(self, "_save1", one)
        # a two-input op's savers, per needs (graph._saver2 makes them on first use)
        object.__setattr__(self, "_savers2", {})

    def saved_slots(self, layout: Any, n_flat_out: int) -> list[tuple[str, int, int, bool]]:
        """``(kind, flat_start, count, is_list)`` for each saved name, given the call's input
        layout (``None`` = one array per declared input) and number of flat outputs."""
        key = (layout, n_flat_out)
        hit = self._slots.get(key)
        if hit is None:
            hit = self._saved_slots(layout, n_flat_out)
            if len(self._slots) > 256:
                self._slots.clear()
            self._slots[key] = hit
        return hit

    def _saved_slots(self, layout: Any, n_flat_out: int) -> list[tuple[str, int, int, bool]]:
        op = self.op
        slots = []
        for kind, i in self.save:
            if kind == "in":
                if layout is None:
                    slots.append(("in", i, 1, False))
                else:
                    start = sum(layout[:i])
                    spec = op.inputs[i]
                    slots.append(("in", start, layout[i], spec.variadic))
            else:
                outs = op.outputs
                var = next((k for k, o in enumerate(outs) if o.variadic), None)
                if var is None or i < var:
                    slots.append(("out", i, 1, False))
                else:
                    n_var = n_flat_out - (len(outs) - 1)
                    if i == var:
                        slots.append(("out", i, n_var, True))
                    else:
                        slots.append(("out", i + n_var - 1, 1, False))
        return slots


class BackwardContext:
    """What a rule's apply sees: saved tensors, attrs (also as ``ctx.<attr>``), which inputs
    need a gradient, and the (per-example) shapes and dtypes of inputs and outputs."""

    __slots__ = ("op", "attrs", "saved_tensors", "needs_input_grad", "input_shapes",
                 "input_dtypes", "output_shapes", "output_dtypes", "layout")

    def __init__(self, op: Any, attrs: dict[str, Any], saved: tuple[Any, ...],
                 needs: tuple[bool, ...], in_avals: Sequence[Any], out_avals: Sequence[Any],
                 layout: Any) -> None:
        self.op = op
        self.attrs = attrs
        self.saved_tensors = saved
        self.needs_input_grad = needs
        self.input_shapes = tuple(tuple(a.shape) for a in in_avals)
        self.input_dtypes = tuple(np.dtype(a.dtype) for a in in_avals)
        self.output_shapes = tuple(tuple(a.shape) for a in out_avals)
        self.output_dtypes = tuple(np.dtype(a.dtype) for a in out_avals)
        self.layout = layout

    def __getattr__(self, name: str) -> Any:
        try:
            return self.attrs[name]
        except KeyError:
            raise AttributeError(f"backward of op '{self.op.name}': ctx has no field or attr "
                                 f"'{name}'; attrs are {sorted(self.attrs)}") from None


def register_backward(op_name: str, *, save: Iterable[str] = (),
                      save_for: dict[str, Iterable[str]] | None = None
                      ) -> Callable[[Callable], Callable]:
    """Decorator registering ``fn(ctx, *out_grads) -> in_grads`` as op ``op_name``'s backward.

    ``save`` names inputs and/or outputs of the op to keep for the rule (in that order in
    ``ctx.saved_tensors``; a variadic one is kept as a list). ``save_for`` maps a saved input
    to the inputs whose gradient needs it (``mul``: x only for y's gradient): when none of
    those requires grad, the value is kept but not version-checked, so an in-place change
    of it does not fail backward (as PyTorch, which does not save it then).
    """
    op = _get_op(op_name)
    if isinstance(save, str):
        raise TypeError(f"register_backward('{op_name}'): save= must be a list of names, got "
                        f"the string {save!r}")
    save = list(save)
    in_names = [i.name for i in op.inputs]
    out_names = [o.name for o in op.outputs]
    spec = []
    for name in save:
        if name in in_names:
            spec.append(("in", in_names.index(name)))
        elif name in out_names:
            spec.append(("out", out_names.index(name)))
        else:
            raise ValueError(f"register_backward('{op_name}'): cannot save '{name}': the op's "
                             f"inputs are {in_names} and outputs {out_names}")

    def deco(fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(f"register_backward('{op_name}'): the rule must be a function "
                            f"(ctx, *grads) -> grads")
        if op.has_trait("NoGrad"):
            raise ValueError(f"register_backward('{op_name}'): the op is marked NoGrad")
        if op.grad_rule is not None:
            raise ValueError(f"register_backward('{op_name}'): the op already has a backward "
                             f"rule ({op.grad_rule.apply.__qualname__})")
        fors = tuple(None if (save_for or {}).get(n) is None
                     else tuple(in_names.index(j) for j in save_for[n]) for n in save)
        op.grad_rule = BackwardRule(op, fn, tuple(spec), fors if save_for else ())
        return fn

    return deco


#: op name -> its tangent (forward-mode) rule, for the few ops that have one
_TANGENTS: dict[str, Callable[..., Any]] = {}


def register_tangent(op_name: str) -> Callable[[Callable], Callable]:
    """Decorator registering ``fn(ctx, *in_tangents) -> out_tangents`` as op ``op_name``'s
    forward-mode rule, beside its backward rule (which must exist: ``ctx`` is the backward
    rule's, with its saved tensors). One tangent per flat input (zeros where the input has
    none), one Tensor or None per output.

    Without one, forward mode (``jax.jvp``, ``jacfwd``) transposes the backward rule, which
    runs every op inside it under JAX's forward mode. An op whose gradient is one scan
    backwards in time (``lstm_layer``) gives its tangents with a scan of their own instead:
    transposed, its gradient op would run step by step (its own rule)."""
    op = _get_op(op_name)

    def deco(fn: Callable) -> Callable:
        if op.grad_rule is None:
            raise ValueError(f"register_tangent('{op_name}'): register the backward rule "
                             f"first (the tangent rule reads what it saves)")
        if op.name in _TANGENTS:  # (as register_backward: one rule per op)
            raise ValueError(f"register_tangent('{op_name}'): the op already has a tangent "
                             f"rule ({_TANGENTS[op.name].__qualname__})")
        _TANGENTS[op.name] = fn
        return fn
    return deco


def get_tangent(op: Any) -> Callable[..., Any] | None:
    """The op's tangent rule, or None (forward mode transposes the backward rule)."""
    return _TANGENTS.get(op.name)


def get_rule(op: Any) -> BackwardRule:
    """The op's rule, or :class:`GradientNotFoundError` (the message OneFlow gives)."""
    rule = op.grad_rule
    if rule is None:
        raise GradientNotFoundError(f"the gradient function for op {op.name} is not found "
                                    f"(register one with jflow.autograd.register_backward"
                                    f"('{op.name}'), or mark the op NoGrad)")
    return rule


def gather_saved(slots: Sequence[tuple[str, int, int, bool]], ins: Sequence[Any],
                 outs: Sequence[Any]) -> list[Any]:
    """The flat list of saved things (from flat inputs / outputs) for a rule's slots."""
    flat: list[Any] = []
    for kind, start, count, _ in slots:
        src = ins if kind == "in" else outs
        flat.extend(src[start:start + count])
    return flat


def structure_saved(slots: Sequence[tuple[str, int, int, bool]], flat: Sequence[Any]
                    ) -> tuple[Any, ...]:
    """Flat saved values -> one entry per saved name (a list for a variadic one)."""
    out, k = [], 0
    for _, _, count, is_list in slots:
        if is_list:
            out.append(list(flat[k:k + count]))
        else:
            out.append(flat[k] if count else None)  # an absent optional input: None
        k += count
    return tuple(out)


def run_rule(rule: BackwardRule, attrs: dict[str, Any], layout: Any, saved: tuple[Any, ...],
             needs: tuple[bool, ...], in_avals: Sequence[Any], out_avals: Sequence[Any],
             grads: Sequence[Any]) -> list[Any]:
    """Call the rule's apply and check what it returns: one Tensor or None per flat input,
    with the input's shape and dtype. ``grads`` holds Tensors (or None) per flat output."""
    op = rule.op
    ctx = BackwardContext(op, attrs, saved, needs, in_avals, out_avals, layout)
    res = rule.apply(ctx, *grads)
    n = len(in_avals)
    if not isinstance(res, (list, tuple)):
        res = [res]
    if len(res) != n:
        raise ValueError(f"backward of op '{op.name}' returned {len(res)} gradients, the call "
                         f"has {n} inputs")
    out: list[Any] = []
    for i, (g, aval, need) in enumerate(zip(res, in_avals, needs)):
        if g is None or not need:
            out.append(None)
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"backward of op '{op.name}' returned a {type(g).__name__} for "
                            f"input {i}; expected a jflow Tensor or None")
        gv = g._value
        if tuple(gv.shape) != tuple(aval.shape) or np.dtype(gv.dtype) != np.dtype(aval.dtype):
            raise ValueError(f"backward of op '{op.name}' returned a gradient of shape "
                             f"{tuple(gv.shape)} and dtype {np.dtype(gv.dtype)} for input {i}, "
                             f"which has shape {tuple(aval.shape)} and dtype "
                             f"{np.dtype(aval.dtype)}")
        out.append(g)
    return out
