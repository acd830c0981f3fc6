"""Whole-backward compilation for the eager tape: a recorded graph runs as ONE cached
``jax.jit`` instead of one call per node.

A training loop records the same graph every step. The engine computes a structural key of
the graph (per node, in topological order: op, attrs, which inputs need grad, avals, and where
its gradients go); the whole backward — every node's rule and every gradient accumulation — is
traced into one function of (saved values, root gradients) returning the leaves' gradients,
compiled the first time the key is seen and reused after. It is compiled the *first* time too
(not only once a graph repeats) because XLA fuses a whole graph differently from rule-by-rule
executables, and the two round differently: a training run must not depend on whether the
cache was warm. Graphs that cannot be compiled (hooks, retained grads, ``Function`` nodes,
tracers) always take the per-node path.

A graph whose saved values are large (:data:`CHUNK_BYTES`) runs its backward as a chain of
executables instead, one per span of nodes (:class:`Chunked`, spans by :func:`chunk_spans`):
one program keeps every value it is given live until it ends, with all its temporaries, where a
chain lets each span's saved values go once that span has run. Lazy mode records the whole
plan as one call (``_Plan.run``) whatever its size: its segment is compiled with the forward.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.core import Tracer

from .._jax_setup import EAGER_ROUNDING
from ..lazy_values import LazyRef
from ..tensor import _wrap
from .grad_mode import no_grad
from .graph import LEAF, Node, version_error
from .rule import is_differentiable_dtype, run_rule, structure_saved

__all__ = ["traced_rule", "GraphCache", "Chunked", "chunk_spans", "CHUNK_BYTES"]


def traced_rule(op: Any, params: dict[str, Any], needs: tuple[bool, ...],
                in_avals: Sequence[Any], out_avals: Sequence[Any], saved_vals: Sequence[Any],
                grads: Sequence[Any]) -> list[Any]:
    """Run op's rule on raw values (arrays or tracers): ``grads`` holds an array or None per
    output (None for a floating output means zeros). Returns an array or None per input."""
    rule = op.grad_rule
    layout = params.get("_layout")
    attrs = {k: v for k, v in params.items() if k not in ("_layout", "_vmap")}
    slots = rule.saved_slots(layout, len(out_avals))
    saved = structure_saved(slots, [_wrap(v) for v in saved_vals])
    gts = []
    for g, aval in zip(grads, out_avals):
        if g is not None:
            gts.append(_wrap(g))
        elif is_differentiable_dtype(aval.dtype):
            gts.append(_wrap(jnp.zeros(aval.shape, aval.dtype)))
        else:
            gts.append(None)
    with no_grad():
        res = run_rule(rule, attrs, layout, saved, needs, in_avals, out_avals, gts)
    return [None if g is None else g._value for g in res]


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    with no_grad():
        return (_wrap(a) + _wrap(b))._value


#: about how many bytes of saved values one executable of an eager whole-graph backward takes
#: (:func:`chunk_spans`). One program keeps every value it is given live to its end, beside
#: its own temporaries; a chain of programs, one per span of nodes, lets each span's saved
#: values go as soon as the span has run, and XLA compiles and allocates each span alone.
#: Measured on benchmarks/real_models.py's ResNet (59 MiB saved, 71 nodes): one program has
#: 38 MiB of temporaries, its 3 spans 12-16 MiB each (``memory_analysis``); the live heap in
#: the backward fell from 109-128 to 68-87 MiB, and the first 3 steps' peak RSS growth from
#: 148-163 to 137-140 MiB cold, 142-149 to 135-137 warm (three fresh processes each), at the
#: same step time. 4 MiB (8 spans) was no better: more executables, each with its own code.
#: The GPT, LSTM and GRU (20-21 MiB saved) stay one program, as below two CHUNK_BYTES.
CHUNK_BYTES = 16 << 20
#: the fewest nodes of a span: within one, XLA fuses across rules and runs independent ones
#: side by side, which is what the whole-graph program buys
CHUNK_NODES = 8


def chunk_spans(sizes: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """Split nodes (in backward order) whose saved values take ``sizes`` bytes into spans of
    about equal saved bytes, one per :data:`CHUNK_BYTES` (whole, at least
    :data:`CHUNK_NODES` nodes each); one span — the whole graph — when that makes fewer
    than two."""
    n, total = len(sizes), sum(sizes)
    k = min(total // CHUNK_BYTES, n // CHUNK_NODES)
    if k < 2:
        return ((0, n),)
    spans, lo, acc = [], 0, 0
    for i, size in enumerate(sizes):
        acc += size
        if len(spans) < k - 1 and acc * k >= total * (len(spans) + 1) and \
                i + 1 - lo >= CHUNK_NODES and n - (i + 1) >= CHUNK_NODES:
            spans.append((lo, i + 1))
            lo = i + 1
    spans.append((lo, n))
    return tuple(spans)


def _nbytes(value: Any) -> int:
    aval = getattr(value, "aval", value)
    shape, dtype = getattr(aval, "shape", None), getattr(aval, "dtype", None)
    if shape is None or dtype is None:
        return 0
    return math.prod(shape) * dtype.itemsize


class _Plan:
    """What the traced backward needs to know about one graph (all static)."""

    def __init__(self, nodes: list[Node], index: dict[Node, int], leaf_slot: dict[int, int],
                 roots: tuple[tuple[int, int], ...], targets: tuple[tuple[int, int], ...],
                 needed: tuple[bool, ...]) -> None:
        self.ops = [n.op for n in nodes]
        self.params = [n.params for n in nodes]  # also keeps id(params) in keys valid
        self.needs = [n.needs for n in nodes]
        self.in_avals = [n.in_avals for n in nodes]
        self.out_avals = [n.out_avals for n in nodes]
        self.n_saved = [len(n.saved or ()) for n in nodes]
        # each node's dynamic attr values follow its saved values in ``saved_flat``
        self.n_dyn = [len(n.dyn) for n in nodes]
        self.edges = [tuple(None if e is None else
                            (("leaf", leaf_slot[id(e[0])]) if e[1] == LEAF else
                             (index[e[0]], e[1])) for e in n.next_edges) for n in nodes]
        self.n_leaves = len(leaf_slot)
        self.roots = roots
        self.targets = targets
        self.needed = needed
        #: the forward's multiply-adds, as its ops estimate them (OpDef.flops; lazy mode runs
        #: the pending forward before recording the backward when worth it: split_forward)
        self.fwd_flops = sum(n.op.flops(n.in_avals, n.out_avals) for n in nodes
                             if n.op.flops is not None)
        #: where each node's values start in ``saved_flat`` (and where the last one's end)
        self.saved_at = [0]
        for k, d in zip(self.n_saved, self.n_dyn):
            self.saved_at.append(self.saved_at[-1] + k + d)
        #: the spans of nodes that run as one executable each (:func:`chunk_spans`)
        self.chunks = chunk_spans([sum(_nbytes(v[0]) for v in n.saved or ()) for n in nodes])

    def run(self, saved_flat: Sequence[Any], root_grads: Sequence[Any]
            ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """The whole backward, traced: (the leaves' gradients by slot, the captured
        targets' gradients)."""
        incoming: dict[tuple[int, int], list[Any]] = {}
        for slot, g in zip(self.roots, root_grads):
            incoming.setdefault(slot, []).append(g)
        leaves, captured, _ = self.run_span(0, len(self.ops), saved_flat, incoming)
        return (tuple(leaves.get(k) for k in range(self.n_leaves)),
                tuple(captured.get(t) for t in self.targets))

    def run_span(self, lo: int, hi: int, saved_flat: Sequence[Any],
                 incoming: dict[tuple[int, int], list[Any]]
                 ) -> tuple[dict[int, Any], dict[tuple[int, int], Any],
                            dict[tuple[int, int], Any]]:
        """Nodes ``lo`` to ``hi`` (exclusive) of the backward, traced: ``saved_flat`` holds
        their saved (and dynamic) values; ``incoming`` the gradients their outputs received
        from the roots and from earlier nodes, several per output where several sent one.
        Returns the leaves' gradients (by slot), the captured targets' and the gradients sent
        to nodes after ``hi`` (by (node, output)), only those that are not None."""
        buffers: list[list[Any] | None] = [None] * (hi - lo)
        for (i, nr), gs in incoming.items():
            buf = buffers[i - lo] or [None] * len(self.out_avals[i])
            for g in gs:
                buf[nr] = _add(buf[nr], g)
            buffers[i - lo] = buf
        leaves: dict[int, Any] = {}
        captured: dict[tuple[int, int], Any] = {}
        out: dict[tuple[int, int], Any] = {}
        pos = 0
        for i in range(lo, hi):
            op = self.ops[i]
            saved = saved_flat[pos:pos + self.n_saved[i]]
            pos += self.n_saved[i]
            params = self.params[i]
            if self.n_dyn[i]:
                params = op.with_dynamic(params, saved_flat[pos:pos + self.n_dyn[i]])
                pos += self.n_dyn[i]
            grads = buffers[i - lo]
            buffers[i - lo] = None
            if grads is None:
                continue
            for k, g in enumerate(grads):
                if g is not None and (i, k) in self.targets:
                    captured[(i, k)] = g
            if not self.needed[i]:
                continue
            res = traced_rule(op, params, self.needs[i], self.in_avals[i],
                              self.out_avals[i], saved, grads)
            for e, g in zip(self.edges[i], res):
                if e is None or g is None:
                    continue
                if e[0] == "leaf":
                    leaves[e[1]] = _add(leaves.get(e[1]), g)
                elif e[0] >= hi:
                    out[e] = _add(out.get(e), g)
                else:
                    j, nr = e
                    buf = buffers[j - lo] or [None] * len(self.out_avals[j])
                    buf[nr] = _add(buf[nr], g)
                    buffers[j - lo] = buf
        return leaves, captured, out


class Chunked:
    """A plan's backward as one executable per span of nodes (``plan.chunks``), called one
    after another: each span's results that later nodes take wait in ``pending``, and each
    span's saved values are let go once its call is dispatched (the running call holds them
    until it ends), so their memory comes back while later spans run."""

    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        self.spans = [(lo, hi, jax.jit(functools.partial(plan.run_span, lo, hi),
                                        compiler_options=EAGER_ROUNDING))
                      for lo, hi in plan.chunks]

    def __call__(self, saved: list[Any], root_grads: Sequence[Any],
                 release: list[Node] | None = None
                 ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """(The leaves' gradients by slot, the captured targets'), as ``plan.run`` returns
        them. ``saved`` is emptied span by span; ``release``: the graph's nodes (the
        scan's order), whose saved values are dropped span by span too (no retain_graph)."""
        plan = self.plan
        pending: dict[tuple[int, int], list[Any]] = {}
        for slot, g in zip(plan.roots, root_grads):
            pending.setdefault(slot, []).append(g)
        leaves: dict[int, Any] = {}
        captured: dict[tuple[int, int], Any] = {}
        for lo, hi, f in self.spans:
            incoming = {s: pending.pop(s) for s in [s for s in pending if s[0] < hi]}
            a, b = plan.saved_at[lo], plan.saved_at[hi]
            part = saved[a:b]
            saved[a:b] = [None] * (b - a)
            span_leaves, span_captured, out = f(part, incoming)
            del part
            if release is not None:  # (after the call: a span that fails keeps its values)
                for n in release[lo:hi]:
                    n.saved = None
            for k, g in span_leaves.items():
                leaves[k] = _add(leaves.get(k), g)
            captured.update(span_captured)
            for slot, g in out.items():
                pending.setdefault(slot, []).append(g)
        return (tuple(leaves.get(k) for k in range(plan.n_leaves)),
                tuple(captured.get(t) for t in plan.targets))


class GraphCache:
    """Structural keys of recorded graphs -> their compiled backward (bounded, oldest out)."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self.compiled: dict[Any, tuple[Any, _Plan]] = {}

    def clear(self) -> None:
        self.compiled.clear()

    @staticmethod
    def scan(order: list[Node], roots: Sequence[tuple[Node, int, Any]],
             targets: Sequence[tuple[Node, int]], needed: Any, leaf_hooks: dict[int, Any]
             ) -> tuple[Any, dict[Node, int], dict[int, int], list[Any], list[Any]] | None:
        """One pass over the graph: its structural key, node indices, leaf slots and leaves,
        and the saved values (version-checked) — or None when the graph cannot be compiled
        (hooks, retained grads, Function nodes, tracers, freed or rule-less nodes)."""
        index = {n: i for i, n in enumerate(order)}
        leaf_slot: dict[int, int] = {}
        leaves: list[Any] = []
        parts: list[Any] = []
        part = parts.append
        saved: list[Any] = []
        keep = saved.append
        for n in order:
            if n.__class__ is not Node or n.hooks or n.retained:
                return None
            values = n.saved
            if values is None or n.op.grad_rule is None:
                return None
            for value, ref, version, nr in values:
                if ref is not None:
                    t = ref if nr == LEAF else ref()
                    if t is not None and t._version != version:
                        raise version_error(n, value, nr, t._version, version)
                if value.__class__ is not LazyRef and isinstance(value, Tracer):
                    return None
                keep(value)
            if n.dyn:
                if any(isinstance(v, Tracer) for v in n.dyn):
                    return None
                saved.extend(n.dyn)  # runtime values: the key holds the static params only
            es = []
            edge = es.append
            for e in n.next_edges:
                if e is None:
                    edge(None)
                elif e[1] == LEAF:
                    t = e[0]
                    s = leaf_slot.get(id(t))
                    if s is None:
                        if id(t) in leaf_hooks:
                            return None
                        s = leaf_slot[id(t)] = len(leaves)
                        leaves.append(t)
                    edge(-1 - s)
                else:
                    edge((index[e[0]], e[1]))
            part((n.op, id(n.params), n.needs, n.in_avals, n.out_avals, tuple(es),
                  needed is None or n in needed))
        rk = tuple((index[t], nr, g._meta.aval) for t, nr, g in roots)
        tk = tuple((index[t], nr) for t, nr in targets if t in index)
        return (tuple(parts), rk, tk), index, leaf_slot, leaves, saved

    def lookup(self, key: Any) -> tuple[Any, _Plan] | None:
        """The compiled backward for ``key``, or None when it must be built."""
        return self.compiled.get(key)

    def build(self, key: Any, order: list[Node], index: dict[Node, int],
              leaf_slot: dict[int, int], needed: Any) -> tuple[Any, _Plan]:
        parts, rk, tk = key
        plan = _Plan(order, index, leaf_slot, tuple((i, nr) for i, nr, _ in rk), tk,
                     tuple(p[-1] for p in parts))
        f = jax.jit(plan.run, compiler_options=EAGER_ROUNDING) if len(plan.chunks) == 1 \
            else Chunked(plan)
        if len(self.compiled) >= self.size:
            del self.compiled[next(iter(self.compiled))]
        self.compiled[key] = (f, plan)
        return f, plan
