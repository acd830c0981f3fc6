"""Lazy mode in the backward: the engine's one hook, and ``loss.backward()`` by template.

The engine (:mod:`jflow.autograd.engine`) knows nothing of lazy mode. It calls the hook
installed with ``engine.set_recording_hook`` (:data:`HOOK`, installed when a thread first
turns lazy mode on) at two points: ``Tensor.backward()`` (:func:`backward`: a graph seen
before runs by template, below) and before a graph runs (:func:`prepare`: values the tape
saved while pending become arrays where the run needs them, and a recording thread gets its
segment, which records the compiled backward as one more call). An eager backward pays
nothing for lazy mode unless its graph has a node recorded while some thread was lazy
(:func:`prepare` compares the graph's oldest node with the end of the last lazy window).

**Templates.**
A training loop records the same graph every step. The general path
(:func:`jflow.autograd.engine.run_backward`) finds the graph's topological order, builds its
structural key (op, attrs, needs, avals and edges of every node), looks the compiled plan up
and records its call: about 2 µs of Python per node, every step, for an answer that is the
same as last step's. Here the answer is kept as a :class:`_Template` — the plan's node order
with, per node, what it must be (op, attrs, needs, avals, where each edge goes) — and a step
only *checks* that the new graph is that one: the nodes are found by following the edges in
the plan's order and compared by identity and equality (no key is built or hashed), the saved
values are version-checked, and the plan's call is recorded with its inputs wired directly.
Any difference (another structure, a hook, a retained gradient, a freed or traced node, a
leaf reached twice, a modified saved tensor) takes the general path, which then raises
what it raises or leaves a new template; the result is the general path's bit for bit: the
same compiled plan runs.

Only the plain call takes this path: ``loss.backward()`` on a one-element loss recorded in
this thread's pending segment, no ``gradient`` / ``inputs`` / ``create_graph``.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import jax
from jax.core import Tracer

from .. import _codegen
from ..autograd import graph as _graph
from ..autograd.compiled_graph import GraphCache
from ..autograd.engine import _ones, _topological, graph_cache  # (the engine's: see _build)
from ..autograd.grad_mode import set_grad_enabled
from ..autograd.graph import LEAF, Node
from ..lazy_values import ACTIVE, LOCAL, LazyRef, new_lazy
from . import segment as _segment
from .segment import _flat_call

__all__ = ["HOOK", "backward", "prepare", "resolve_saved", "lazy_backward", "TEMPLATES",
           "ENABLED", "stats"]

#: templates kept per root (op attrs, input avals); roots kept (the oldest dropped beyond)
PER_ROOT, ROOTS = 4, 256
#: ``[bool]``: whether lazy backwards use templates (off: every one takes the general path)
ENABLED = [True]
_STATS = {"matched": 0, "built": 0, "declined": 0}


def stats() -> dict[str, int]:
    """Counters: backwards run by a template, templates built, plain lazy backwards left to
    the general path (another structure that cannot be a template, a hook, an error...)."""
    return dict(_STATS)


class _Template:
    """One compiled backward plan and the graph it was built for, as checks."""

    __slots__ = ("specs", "n_leaves", "fwd_flops", "call", "grad_slots", "root_nr",
                 "root_aval", "match")

    def __init__(self, order: list[Node], index: dict[Node, int], leaf_slot: dict[int, int],
                 plan: Any, saved: list[Any], root_nr: int, root_aval: Any) -> None:
        specs = []
        for n in order:
            # (per edge with a gradient: its position, then the plan index of the node it
            # leads to, or -1 - the slot of the leaf, and the output number)
            edges = tuple((p, -1 - leaf_slot[id(e[0])], LEAF) if e[1] == LEAF else
                          (p, index[e[0]], e[1])
                          for p, e in enumerate(n.next_edges) if e is not None)
            specs.append((n.op, n.params, n.needs, n.in_avals, n.out_avals, edges,
                          len(n.dyn)))
        self.specs = tuple(specs)
        self.n_leaves = len(leaf_slot)
        #: ``match(root)``: the nodes (plan order), leaves (slot order) and saved values (the
        #: plan's flat order) of the graph under ``root`` when it is this template's graph,
        #: else None (generated for this template: :func:`_matcher`)
        n_saved = tuple(len(n.saved or ()) for n in order)
        self.match = _matcher(self.specs, n_saved, self.n_leaves) if _codegen.enabled() else \
            functools.partial(_match_plain, self.specs, n_saved, self.n_leaves)
        self.fwd_flops = plan.fwd_flops
        self.root_nr, self.root_aval = root_nr, root_aval
        avals = [v.aval if v.__class__ is LazyRef else jax.typeof(v) for v in saved]
        avals.append(root_aval)
        # (the plan's call as one flat jitted function of the saved values and the root
        # gradient: what Segment.add_lists records, built once here)
        flat_f, out_def, out_avals = _flat_call(plan.run, len(saved), tuple(avals))
        self.call = (flat_f, out_avals)
        # which flat output is which leaf's gradient (a leaf whose rule gives none has none)
        leaf_grads, _ = jax.tree_util.tree_unflatten(out_def, list(range(len(out_avals))))
        self.grad_slots = tuple((s, k) for s, k in enumerate(leaf_grads) if k is not None)



def _matcher(specs: tuple, n_saved: tuple[int, ...], n_leaves: int) -> Any:
    """The check of a template as straight-line code (no loop over the template, no tuple
    unpacking; about half the time of a loop): ``specs`` per node in plan order,
    ``n_saved`` the number of values each node saves, ``n_leaves`` the leaf slots. Per node:
    the same op and attrs (identity), needs and avals (equality), no hook or retained
    gradient, recorded in the plan's order (decreasing ``seq``, as the general path sorts:
    which also means no node was reached as two), its saved values at their saved versions
    and not traced; per edge: the output number, and the node or leaf it leads to — the first
    edge to reach one names it, every later one must reach the same object."""
    ns: dict[str, Any] = {"Node": Node, "LazyRef": LazyRef, "Tracer": Tracer, "LEAF": LEAF,
                          "_isinstance": isinstance, "_len": len, "_id": id, "_any": any}
    lines = ["def match(n0):", "    saved = []", "    keep = saved.append"]
    named = {0}
    leaves: set[int] = set()
    for k, (op, params, needs, in_avals, out_avals, edges, n_dyn) in enumerate(specs):
        if k not in named:  # (never reached by an edge: this template cannot match)
            lines.append("    return None")
            break
        n = f"n{k}"
        ns.update({f"OP{k}": op, f"P{k}": params, f"NEEDS{k}": needs, f"IA{k}": in_avals,
                   f"OA{k}": out_avals})
        lines += [
            f"    if {n}.__class__ is not Node or {n}.op is not OP{k} or {n}.params is not P{k} "
            f"or {n}.hooks or {n}.retained or {n}.needs != NEEDS{k} or {n}.in_avals != IA{k} "
            f"or {n}.out_avals != OA{k}" + (f" or {n}.seq >= n{k - 1}.seq:" if k else ":"),
            "        return None",
            f"    s = {n}.saved",
            f"    if s is None or _len(s) != {n_saved[k]}:  # (freed: the general path raises)",
            "        return None"]
        for i in range(n_saved[k]):
            lines += [
                f"    v, r, ver, nr = s[{i}]",
                "    if r is not None:",
                "        t = r if nr == LEAF else r()",
                "        if t is not None and t._version != ver:",
                "            return None  # (the general path raises the version error)",
                "    if v.__class__ is not LazyRef and _isinstance(v, Tracer):",
                "        return None",
                "    keep(v)"]
        if n_dyn:
            lines += [
                f"    d = {n}.dyn",
                f"    if _len(d) != {n_dyn} or _any(_isinstance(v, Tracer) for v in d):",
                "        return None",
                "    saved += d"]
        if edges:
            lines.append(f"    ne = {n}.next_edges")
        for p, j, nr in edges:
            lines += [f"    e = ne[{p}]", f"    if e[1] != {nr}:", "        return None"]
            if j < 0:
                slot = -1 - j
                if slot in leaves:
                    lines += [f"    if e[0] is not l{slot}:", "        return None"]
                else:
                    leaves.add(slot)
                    lines.append(f"    l{slot} = e[0]")
            elif j in named:
                lines += [f"    if e[0] is not n{j}:", "        return None"]
            else:
                named.add(j)
                lines.append(f"    n{j} = e[0]")
    else:
        if len(leaves) != n_leaves:  # (a leaf slot no edge reaches: cannot match)
            lines.append("    return None")
        else:
            ls = ", ".join(f"l{i}" for i in range(n_leaves))
            if n_leaves > 1:  # (a leaf reached as two: another graph)
                lines += [f"    if _len({{{', '.join(f'_id(l{i})' for i in range(n_leaves))}}})"
                          f" != {n_leaves}:", "        return None"]
            lines.append(f"    return [{', '.join(f'n{k}' for k in range(len(specs)))}], "
                         f"[{ls}], saved")
    src = "\n".join(lines) + "\n"
    root = getattr(specs[0][0], "name", "?") if specs else "?"
    return _codegen.define("lazy_backward", f"{root}#{next(_MATCHERS)}", src, ns)["match"]


_MATCHERS = itertools.count()


def _match_plain(specs: tuple, n_saved: tuple[int, ...], n_leaves: int, n0: Any) -> Any:
    """:func:`_matcher`'s plain twin (jflow._codegen): the same checks in the same order, as a
    loop over the template's specs."""
    nodes = {0: n0}  # plan index -> the node an edge reached first
    leaves: dict[int, Any] = {}  # leaf slot -> the leaf an edge reached first
    saved: list[Any] = []
    prev = None
    for k, (op, params, needs, in_avals, out_avals, edges, n_dyn) in enumerate(specs):
        n = nodes.get(k)
        if n is None:  # (never reached by an edge: this template cannot match)
            return None
        if n.__class__ is not Node or n.op is not op or n.params is not params or n.hooks \
                or n.retained or n.needs != needs or n.in_avals != in_avals \
                or n.out_avals != out_avals or (prev is not None and n.seq >= prev.seq):
            return None
        s = n.saved
        if s is None or len(s) != n_saved[k]:  # (freed: the general path raises)
            return None
        for v, r, ver, nr in s:
            if r is not None:
                t = r if nr == LEAF else r()
                if t is not None and t._version != ver:
                    return None  # (the general path raises the version error)
            if v.__class__ is not LazyRef and isinstance(v, Tracer):
                return None
            saved.append(v)
        if n_dyn:
            d = n.dyn
            if len(d) != n_dyn or any(isinstance(v, Tracer) for v in d):
                return None
            saved += d
        ne = n.next_edges
        for p, j, nr in edges:
            e = ne[p]
            if e[1] != nr:
                return None
            if j < 0:
                if -1 - j in leaves:
                    if e[0] is not leaves[-1 - j]:
                        return None
                else:
                    leaves[-1 - j] = e[0]
            elif j in nodes:
                if e[0] is not nodes[j]:
                    return None
            else:
                nodes[j] = e[0]
        prev = n
    if len(leaves) != n_leaves:  # (a leaf slot no edge reaches: cannot match)
        return None
    if n_leaves > 1 and len({id(x) for x in leaves.values()}) != n_leaves:
        return None  # (a leaf reached as two: another graph)
    return [nodes[k] for k in range(len(specs))], [leaves[i] for i in range(n_leaves)], saved


#: (root params id, root input avals) -> templates, most recently used first
TEMPLATES: dict[Any, list[_Template]] = {}
# (a switch of jflow._codegen's mode drops the templates: they are rebuilt in the new mode)
_codegen.on_switch(lambda _flag: TEMPLATES.clear())


def _remember(key: Any, tpl: _Template) -> None:
    found = TEMPLATES.get(key)
    if found is None:
        while len(TEMPLATES) >= ROOTS:  # (a lowered bound holds at the next insert)
            del TEMPLATES[next(iter(TEMPLATES))]
        found = TEMPLATES[key] = []
    found.insert(0, tpl)
    del found[PER_ROOT:]


def _build(root: Node, nr: int, aval: Any, leaf_hooks: dict) -> _Template | None:
    """A new template for the graph under ``root`` (the general path's scan and plan), or
    None when that graph is not one the compiled backward takes."""
    order = _topological([root])
    made = GraphCache.scan(order, [(root, nr, _ones(aval))], (), None, leaf_hooks)
    if made is None:
        return None
    key, index, leaf_slot, leaves, saved = made
    if any(t._meta.dtype.kind == "c" for t in leaves):  # (complex leaves: conjugated by the
        return None                                       # general path's delivery)
    _, plan = graph_cache.lookup(key) or graph_cache.build(key, order, index, leaf_slot, None)
    return _Template(order, index, leaf_slot, plan, saved, nr, aval)


def lazy_backward(loss: Any, seg: Any, retain: bool, leaf_hooks: dict) -> bool:
    """Run ``loss.backward()`` (implicit gradient, no ``inputs`` / ``create_graph``) by a
    template when ``loss``'s graph matches one: True when done, False to take the general
    path (which also covers every error)."""
    root = loss.grad_fn
    if root.__class__ is not Node or loss._global is not None or loss._aliases or \
            not ENABLED[0]:
        return False
    m = loss._meta
    if m.__class__ is not LazyRef or m.segment is not seg or m.array is not None:
        return False
    aval, nr = m.aval, loss._output_nr
    key = (id(root.params), root.in_avals)
    found = None
    for tpl in TEMPLATES.get(key, ()):
        if tpl.root_nr == nr and tpl.root_aval == aval:
            found = tpl.match(root)
            if found is not None:
                break
    else:
        if aval.size != 1:
            return False  # (the general path's error: no implicit gradient)
        tpl = _build(root, nr, aval, leaf_hooks)
        found = None if tpl is None else tpl.match(root)
        if found is None:
            _STATS["declined"] += 1
            return False
        _remember(key, tpl)
        _STATS["built"] += 1
    nodes, leaves, saved = found
    for leaf in leaves:
        if id(leaf) in leaf_hooks:
            _STATS["declined"] += 1
            return False
    _STATS["matched"] += 1
    if _segment.split_forward(tpl.fwd_flops):  # (a heavy forward starts now: see split_forward)
        seg.flush()
    saved.append(_ones(aval)._meta)
    refs = seg.add_wired(tpl.call[0], saved, tpl.call[1])
    if not retain:
        for n in nodes:
            n.saved = None
    for s, k in tpl.grad_slots:
        g = new_lazy(refs[k])
        leaf = leaves[s]
        if leaf._grad is None:
            leaf._grad = g
        else:
            with set_grad_enabled(False):
                leaf._grad = leaf._grad + g
    return True



# -- the engine's hook ---------------------------------------------------------------------

#: ``[seq]``: the tape's sequence number when the last lazy window closed (no thread lazy
#: since): a node recorded after it saved no pending value (jflow.autograd.graph.Node.seq)
WINDOW_END = [-1]


def close_window() -> None:
    """The last thread left lazy mode: nodes recorded from now on hold no pending value."""
    WINDOW_END[0] = _graph.seq_now()


def resolve_saved(nodes: Any) -> None:
    """Give the tape's nodes arrays for the values they saved while pending (a backward
    needs them: the segments computing them run now)."""
    for n in nodes:
        saved = getattr(n, "saved", None)
        if saved and any(s[0].__class__ is LazyRef for s in saved):
            n.saved = [(v.get() if v.__class__ is LazyRef else v, *rest)
                       for v, *rest in saved]


def prepare(order: list) -> Any:
    """Before the graph ``order`` (newest node first) runs: this thread's segment when it
    records (the engine records the compiled backward into it: ``Segment.add_backward``),
    else None, after giving the nodes arrays for what they saved while pending — only when
    a node may have (recorded while some thread was lazy)."""
    seg = LOCAL.active
    if seg is not None:
        return seg
    if order and (ACTIVE[0] or order[-1].seq <= WINDOW_END[0]):
        resolve_saved(order)
    return None


def backward(loss: Any, retain: bool, leaf_hooks: dict) -> bool:
    """``loss.backward()`` (implicit gradient, no ``inputs`` / ``create_graph``) on a
    recording thread by a template (:func:`lazy_backward`); False to take the engine's
    general path."""
    seg = LOCAL.active
    return seg is not None and loss.grad_fn is not None and \
        lazy_backward(loss, seg, retain, leaf_hooks)


class _Hook:
    """What the engine calls (see ``engine.set_recording_hook``)."""

    backward = staticmethod(backward)
    prepare = staticmethod(prepare)
    resolve = staticmethod(resolve_saved)


#: the hook lazy mode installs in the engine (jflow.lazy_mode.set_lazy)
HOOK = _Hook()
