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
"""

from __future__ import annotations

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

__all__ = ["traced_rule", "GraphCache"]


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

    def run(self, saved_flat: Sequence[Any], root_grads: Sequence[Any]
            ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        buffers: list[list[Any] | None] = [None] * len(self.ops)
        for (i, nr), g in zip(self.roots, root_grads):
            buf = buffers[i] or [None] * len(self.out_avals[i])
            buf[nr] = _add(buf[nr], g)
            buffers[i] = buf
        leaves: list[Any] = [None] * self.n_leaves
        captured: dict[tuple[int, int], Any] = {}
        pos = 0
        for i, op in enumerate(self.ops):
            saved = saved_flat[pos:pos + self.n_saved[i]]
            pos += self.n_saved[i]
            params = self.params[i]
            if self.n_dyn[i]:
                params = op.with_dynamic(params, saved_flat[pos:pos + self.n_dyn[i]])
                pos += self.n_dyn[i]
            grads = buffers[i]
            buffers[i] = None
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
                    leaves[e[1]] = _add(leaves[e[1]], g)
                else:
                    j, nr = e
                    buf = buffers[j] or [None] * len(self.out_avals[j])
                    buf[nr] = _add(buf[nr], g)
                    buffers[j] = buf
        return tuple(leaves), tuple(captured.get(t) for t in self.targets)


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
        f = jax.jit(plan.run, compiler_options=EAGER_ROUNDING)
        if len(self.compiled) >= self.size:
            del self.compiled[next(iter(self.compiled))]
        self.compiled[key] = (f, plan)
        return f, plan
