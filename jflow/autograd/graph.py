"""The eager tape: one :class:`Node` per recorded op call (PyTorch's ``grad_fn``).

``record`` is called by an op's generated ``apply`` only when some input requires grad, so the
no-grad hot path pays one attribute test per input. A node keeps what its rule saved (values
plus the version each saved tensor had), edges to the nodes / leaves of its inputs, and the
avals the rule's ``ctx`` reports. Saved *outputs* are held through weak references (their
values are kept, the tensor objects are not), so a node never keeps its own outputs alive and
the graph has no reference cycles: dropping the loss frees the whole graph by refcounting.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from .grad_mode import _state
from .rule import is_differentiable_dtype

__all__ = ["Node", "record", "LEAF"]

#: ``output_nr`` of an edge that points at a leaf tensor (accumulate into its ``.grad``).
LEAF = -1


class Node:
    """A recorded op call. ``next_edges[i]`` is ``(node, output_nr)`` or ``(leaf, LEAF)``
    for each flat input that needs a gradient, else ``None``."""

    __slots__ = ("op", "params", "saved", "next_edges", "needs", "in_avals", "out_avals",
                 "hooks", "retained", "freed", "__weakref__")

    def __init__(self, op: Any, params: dict[str, Any], needs: tuple[bool, ...],
                 next_edges: tuple[Any, ...], in_avals: tuple[Any, ...],
                 out_avals: tuple[Any, ...]) -> None:
        self.op = op
        self.params = params
        self.needs = needs
        self.next_edges = next_edges
        self.in_avals = in_avals
        self.out_avals = out_avals
        self.saved: list[tuple[Any, Any, int, int]] | None = []
        self.hooks: dict[int, list[Callable]] | None = None
        self.retained: dict[int, Any] | None = None
        self.freed = False

    def name(self) -> str:
        return f"{self.op.name}_backward"

    def __repr__(self) -> str:
        return f"<{self.name()}>"

    def release(self) -> None:
        """Drop saved values (after a backward without ``retain_graph``)."""
        if self.saved:
            self.saved = None
            self.freed = True

    @property
    def next_functions(self) -> tuple[tuple[Any, int], ...]:
        """PyTorch-style view of the edges: ``(node or leaf tensor or None, output_nr)``."""
        return tuple(e if e is not None else (None, 0) for e in self.next_edges)


def _aval(v: Any) -> Any:
    return v.aval


def record(op: Any, params: dict[str, Any], ins: Any, out: Any) -> Any:
    """Attach a node to the outputs of an op call whose inputs (some) require grad."""
    if not getattr(_state, "enabled", True) or op.has_trait("NoGrad"):
        return out
    needs = tuple(t.requires_grad for t in ins)
    if not any(needs):
        return out
    outs = out if isinstance(out, tuple) else (out,)
    edges = tuple(((t.grad_fn, t._output_nr) if t.grad_fn is not None else (t, LEAF))
                  if n else None for t, n in zip(ins, needs))
    node = Node(op, params, needs, edges, tuple(_aval(t._value) for t in ins),
                tuple(_aval(t._value) for t in outs))
    rule = op.grad_rule
    if rule is not None:
        slots = rule.saved_slots(params.get("_layout"), len(outs))
        saved = node.saved
        for kind, start, count, _ in slots:
            if kind == "in":
                for t in ins[start:start + count]:
                    saved.append((t._value, t, t._version, LEAF))
            else:
                for k in range(start, start + count):
                    t = outs[k]
                    saved.append((t._value, weakref.ref(t), 0, k))
    for k, t in enumerate(outs):
        if is_differentiable_dtype(t._value.dtype):
            t.requires_grad = True
            t.grad_fn = node
            t._output_nr = k
    return out
