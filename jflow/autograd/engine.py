"""The backward engine: walks the tape in topological order and runs each node's rule.

Three ways to run the rules, same rules:

* **whole graph** (every graph the scan can compile): the entire backward is one cached
  ``jax.jit`` (:mod:`jflow.autograd.compiled_graph`), the same executable on the first and
  every later step, so results do not depend on cache warmth;
* **per node** (graphs with hooks, retained grads or ``Function`` nodes): each rule is traced
  once per (op, attrs, needs, avals) into a ``jax.jit`` — a rule of five jflow ops costs one
  cached call;
* **direct** (``create_graph=True``, or values that are tracers): the rule runs op by op on
  Tensors; with ``create_graph`` the tape records it, which gives higher-order gradients, and
  inside ``jax.jit`` it stages the backward into the compiled program (``flow.jit``, ``nn.Graph``).
"""

from __future__ import annotations

import math
import operator
import weakref
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.core import Tracer

from .. import _malloc_trim
from ..kernels.registry import reraise_host_error as _reraise_host_error
from ..meta import MetaValue, is_meta_value, meta_value
from ..ops.registry import get as _get_op
from ..sharding.sbp import broadcast
from ..tensor import Tensor, mark_constant
from ..tensor import _wrap as _wrap_value
from .compiled_graph import Chunked, GraphCache, traced_rule
from .grad_mode import set_grad_enabled
from .graph import LEAF, Node
from .rule import get_rule, is_differentiable_dtype, run_rule, structure_saved
from .saved import saved_tensors, wrap_saved

__all__ = ["run_backward", "backward", "grad", "register_leaf_hook", "set_recording_hook",
           "set_leaf_gradients_hook", "set_node_check", "set_whole_graph", "CACHE_SIZE"]

#: Compiled rules kept per op (distinct attrs / needs / shapes); the oldest are dropped.
CACHE_SIZE = 256

_compiled: dict[Any, dict[Any, Any]] = {}
#: Hooks of leaf tensors, by id (Tensor's ``==`` is elementwise, so no WeakKeyDictionary); an
#: entry goes away with its tensor.
_leaf_hooks: dict[int, list[Any]] = {}


#: The one way an executor that *records* calls instead of running them — lazy mode
#: (jflow.lazy_mode.backward) — takes part in a backward; None until one is installed
#: (:func:`set_recording_hook`). An object with three functions:
#:
#: - ``backward(tensor, retain, leaf_hooks) -> bool``: ``tensor.backward()`` with no
#:   ``gradient`` / ``inputs`` / ``create_graph``; True when the hook ran it (lazy mode: a
#:   graph seen before, by template), False for the general path (:func:`run_backward`);
#: - ``prepare(order) -> recorder or None``: before the graph ``order`` (newest node first)
#:   runs. Makes the values its nodes saved while pending arrays where this run needs them,
#:   and returns the recorder when this thread records: then the compiled backward is one
#:   more recorded call, ``recorder.add_backward(plan, saved, root_tensors)``, whose results
#:   are already tensors. None: everything runs now, as with no hook;
#: - ``resolve(order)``: the saved values of ``order`` as arrays (a recording thread's
#:   backward rule by rule: its rules' ops record, on arrays).
_HOOK: Any = None


#: called as ``fn(leaves)`` before a whole-graph backward (run now, not recorded) gives the
#: tensors ``leaves`` gradients in ``.grad``: lazy_mode.optimizer_step compiles a new
#: optimizer's first step meanwhile (:func:`set_leaf_gradients_hook`)
_LEAF_GRADS: list[Any] = [None]


def set_leaf_gradients_hook(fn: Any) -> Any:
    """Install ``fn`` (see :data:`_LEAF_GRADS`; None removes it); returns the previous one."""
    old, _LEAF_GRADS[0] = _LEAF_GRADS[0], fn
    return old


#: called as ``fn(node, input_grads)`` after each node's rule (or Function) ran, while set:
#: anomaly mode's NaN check (autograd/anomaly_mode.py). While set, a backward runs node by
#: node (no whole-graph executable: its nodes' results are never seen one by one)
_NODE_CHECK: list[Any] = [None]


def set_node_check(fn: Any) -> Any:
    """Install ``fn`` (see :data:`_NODE_CHECK`; None removes it); returns the previous one."""
    old, _NODE_CHECK[0] = _NODE_CHECK[0], fn
    return old


#: whether an eager backward runs as one whole-graph executable (``flow.config
#: .set_whole_graph_backward``; a graph with large saved values as a chain of them:
#: compiled_graph.Chunked). False: rule by rule, each rule a cached executable, as a
#: graph with hooks does. The whole graph is the faster (one call, XLA fuses across rules);
#: rule by rule holds fewer compiled programs (docs/autograd.md, "Memory or speed").
_WHOLE_GRAPH: list[bool] = [True]


def set_whole_graph(flag: bool) -> bool:
    """Set :data:`_WHOLE_GRAPH`; returns the old setting."""
    if not isinstance(flag, bool):
        raise TypeError(f"flow.config.set_whole_graph_backward: flag must be a bool, got "
                        f"{type(flag).__name__}")
    old, _WHOLE_GRAPH[0] = _WHOLE_GRAPH[0], flag
    return old


def set_recording_hook(hook: Any) -> Any:
    """Install ``hook`` (see :data:`_HOOK`; None removes it); returns the previous one."""
    global _HOOK
    old, _HOOK = _HOOK, hook
    return old


def register_leaf_hook(t: Tensor, hook: Any) -> list[Any]:
    key = id(t)
    hooks = _leaf_hooks.get(key)
    if hooks is None:
        hooks = _leaf_hooks[key] = []
        weakref.finalize(t, _leaf_hooks.pop, key, None)
    hooks.append(hook)
    return hooks


def _build_compiled(node: Node, mask: tuple[bool, ...]) -> Any:
    op, params, needs = node.op, node.params, node.needs
    in_avals, out_avals = node.in_avals, node.out_avals
    n_saved = len(node.saved or ())
    n_grads = sum(mask)

    def backward_rule(*args: Any) -> tuple[Any, ...]:
        given = iter(args[n_saved:n_saved + n_grads])
        grads = [next(given) if m else None for m in mask]
        # dynamic attr values come last: the executable serves every value
        p = op.with_dynamic(params, args[n_saved + n_grads:])
        return tuple(traced_rule(op, p, needs, in_avals, out_avals, args[:n_saved], grads))

    backward_rule.__name__ = f"{op.name}_backward"
    return jax.jit(backward_rule)


def _run_compiled(node: Node, grads: list[Any]) -> list[Any]:
    mask = tuple(g is not None for g in grads)
    try:
        key = (tuple(node.params.items()), node.needs, mask, node.in_avals, node.out_avals)
        cache = _compiled.setdefault(node.op.name, {})
        f = cache.get(key)
    except TypeError:  # unhashable attr values: trace each time (correct, slower)
        key, cache, f = None, None, None
    if f is None:
        f = _build_compiled(node, mask)
        if cache is not None:
            if len(cache) >= CACHE_SIZE:
                del cache[next(iter(cache))]
            cache[key] = f
    vals = saved_tensors(node, False)
    try:
        res = f(*vals, *(g._value for g in grads if g is not None), *node.dyn)
    except jax.errors.JaxRuntimeError:
        _reraise_host_error()
    return [None if r is None else _wrap_value(r) for r in res]


def _run_direct(node: Node, grads: list[Any], create_graph: bool) -> list[Any]:
    op, params = node.op, op_params(node)
    rule = op.grad_rule
    layout = params.get("_layout")
    attrs = {k: v for k, v in params.items() if k not in ("_layout", "_vmap")}
    slots = rule.saved_slots(layout, len(node.out_avals))
    saved_flat = saved_tensors(node, create_graph)
    if not create_graph:
        saved_flat = [wrap_saved(v) for v in saved_flat]
    saved = structure_saved(slots, saved_flat)
    like = next((g for g in grads if g is not None), None)
    full = []
    for g, aval in zip(grads, node.out_avals):
        if g is None and is_differentiable_dtype(aval.dtype):
            if like is not None and is_meta_value(like._meta):  # meta gradients: meta zeros
                full.append(_wrap_value(meta_value(aval.shape, aval.dtype)))
                continue
            g = _wrap_value(jnp.zeros(aval.shape, aval.dtype))
            if like is not None and like._global is not None:  # zeros on the same placement
                g = g.to_global(like._global[0], _broadcast_sbp(like._global[0]))
        full.append(g)
    with set_grad_enabled(create_graph):
        return run_rule(rule, attrs, layout, saved, node.needs, node.in_avals, node.out_avals,
                        full)


def op_params(node: Node) -> dict[str, Any]:
    """The node's params with its dynamic attr values filled in (as the rule reads them)."""
    return node.op.with_dynamic(node.params, node.dyn) if node.dyn else node.params


def _broadcast_sbp(plc: Any) -> tuple[Any, ...]:
    return (broadcast,) * len(plc.hierarchy)


def _execute(node: Node, grads: list[Any], create_graph: bool) -> list[Any]:
    if type(node) is not Node:  # a Function's node runs the user's backward
        return node.run(grads, create_graph)  # type: ignore[attr-defined]
    get_rule(node.op)
    if create_graph or any(g._global is not None or isinstance(g._value, _ABSTRACT)
                           for g in grads if g is not None) or \
            any(isinstance(s[0], _ABSTRACT) for s in (node.saved or ())) or \
            any(isinstance(v, Tracer) for v in node.dyn):
        return _run_direct(node, grads, create_graph)
    return _run_compiled(node, grads)


#: values a rule cannot be compiled for: tracers (staged op by op) and meta values (no data:
#: each rule's ops give meta results, jflow.meta)
_ABSTRACT = (Tracer, MetaValue)

#: Structural keys of recorded graphs -> their whole-backward executables.
graph_cache = GraphCache()


def _run_graph_compiled(order: list[Node], node_roots: list[tuple[Node, int, Any]],
                        node_targets: dict[tuple[Node, int], int], needed: Any,
                        deliver_leaf: Any, results: list[Any], retain_graph: bool,
                        recorder: Any) -> bool:
    """Run the whole backward as one cached executable (compiled on the graph's first
    sighting) — or record its call (``recorder``: see :data:`_HOOK`); False when the graph
    cannot be (hooks, Functions, tracers, global values)."""
    for _, _, g in node_roots:
        if g._global is not None or isinstance(g._value, _ABSTRACT):
            return False  # global graphs run rule by rule through the sharded executor
    made = GraphCache.scan(order, node_roots, list(node_targets) if node_targets else (),
                           needed, _leaf_hooks)
    if made is None:
        return False
    key, index, leaf_slot, leaves, saved = made
    hit = graph_cache.lookup(key)
    if hit is None:
        hit = graph_cache.build(key, order, index, leaf_slot, needed)
        if recorder is None:  # (its compile comes at the call below)
            _malloc_trim.before_large_compile(len(order))
    f, plan = hit
    if recorder is None and needed is None and _LEAF_GRADS[0] is not None:
        _LEAF_GRADS[0](leaves)  # (.grad is written: not autograd.grad's capture)
    if recorder is not None:
        leaf_grads, captured = recorder.add_backward(plan, saved, [g for _, _, g in node_roots])
    else:
        try:
            roots = [g._value for _, _, g in node_roots]
            if f.__class__ is Chunked:  # (its spans' saved values go as each span runs)
                leaf_grads, captured = f(saved, roots, None if retain_graph else order)
            else:
                leaf_grads, captured = f(saved, roots)
        except jax.errors.JaxRuntimeError:
            _reraise_host_error()  # a python kernel in a rule failed: its own error
    if not retain_graph:
        for n in order:
            n.saved = None  # (Node.release, inlined: this is the hot path)
    wrap = _wrap_value if recorder is None else _same  # (recorded: tensors already)
    for leaf, g in zip(leaves, leaf_grads):
        if g is not None:
            deliver_leaf(leaf, wrap(g))
    if not node_targets:
        return True
    for (t, nr), g in zip(list(node_targets), captured_for(plan, index, node_targets, captured)):
        if g is not None:
            k = node_targets[(t, nr)]
            results[k] = _accumulate(results[k], wrap(g))
    return True


def captured_for(plan: Any, index: dict[Node, int], node_targets: dict[tuple[Node, int], int],
                 captured: Sequence[Any]) -> list[Any]:
    """The compiled plan's captured gradients, in ``node_targets`` order."""
    by_pos = dict(zip(plan.targets, captured))
    return [by_pos.get((index[t], nr)) if t in index else None for t, nr in node_targets]


def _same(x: Any) -> Any:
    return x


def _accumulate(a: Any, b: Any) -> Any:
    return b if a is None else a + b


def _topological(roots: Sequence[Node]) -> list[Node]:
    """Nodes reachable from ``roots``, each after every node that sends it a gradient: the
    reverse of recording order (a node is recorded after the nodes of its inputs, so every
    consumer of a node's outputs has a larger ``seq``). ``roots`` may repeat a node."""
    seen = set(roots)
    stack = list(seen)
    add, push, pop = seen.add, stack.append, stack.pop
    while stack:
        for e in pop().next_edges:
            if e is not None and e[1] >= 0:
                m = e[0]
                if m not in seen:
                    add(m)
                    push(m)
    return sorted(seen, key=_SEQ_OF, reverse=True)


_SEQ_OF = operator.attrgetter("seq")


def _root_edge(t: Tensor, i: int) -> tuple[Any, int]:
    if t.grad_fn is not None:
        return t.grad_fn, t._output_nr
    if t.requires_grad:
        return t, LEAF
    raise RuntimeError(f"element {i} of tensors does not require grad and does not have a "
                       f"grad_fn")


_ONES: dict[Any, Tensor] = {}


def _ones(aval: Any) -> Tensor:
    """The implicit gradient of a one-element output (cached: it is the same every step)."""
    t = _ONES.get(aval)
    if t is None:
        with jax.ensure_compile_time_eval():
            t = mark_constant(_wrap_value(jnp.ones(aval.shape, aval.dtype)))
        if len(_ONES) > 64:
            _ONES.clear()
        _ONES[aval] = t
    return t


def _user_conj(g: Any) -> Any:
    """Complex gradients cross the user boundary conjugated: rules compute JAX's convention
    (``dL/dRe - i dL/dIm``, the plain transpose), the user sees and passes PyTorch's
    (``dL/dRe + i dL/dIm``): ``.grad``, ``backward(gradient)``, ``autograd.grad`` in and
    out, hooks and retained grads. A real gradient passes unchanged."""
    if g is None or g._meta.dtype.kind != "c":
        return g
    return _get_op("conj").apply(g)


def _run_hooks(hooks: Any, g: Any) -> Any:
    """Hooks see (and return) the user's convention; the engine goes on in its own."""
    g = _user_conj(g)
    for hook in hooks:
        r = hook(g)
        if r is not None:
            g = r
    return _user_conj(g)


def _root_grad(t: Tensor, g: Any, i: int, create_graph: bool) -> Tensor:
    if g is None:
        shape = t._meta.shape
        if shape and math.prod(shape) != 1:  # (``.size`` of an aval costs more)
            raise RuntimeError(f"grad can be implicitly created only for scalar outputs (output "
                               f"{i} has shape {list(t._meta.shape)}); pass a gradient")
        if is_meta_value(t._meta):  # a meta output's gradient is meta too (jflow.meta)
            return _wrap_value(meta_value(t._meta.shape, t._meta.dtype))
        if t._global is not None:
            plc = t._global[0]
            return _ones(jax.core.ShapedArray(t._meta.shape, t._meta.dtype)).to_global(
                plc, _broadcast_sbp(plc))
        return _ones(t._meta.aval)
    if not isinstance(g, Tensor):
        raise TypeError(f"gradient {i} must be a jflow Tensor or None, got {type(g).__name__}")
    if tuple(g._meta.shape) != tuple(t._meta.shape):
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                           f"{list(g._meta.shape)} and output[{i}] has a shape of "
                           f"{list(t._meta.shape)}")
    if g._meta.dtype != t._meta.dtype:
        g = _get_op("cast").apply(g, dtype=t._meta.dtype)
    g = _user_conj(g)
    return g if create_graph else g.detach()


def run_backward(tensors: Sequence[Tensor], grad_tensors: Sequence[Any], retain_graph: bool,
                 create_graph: bool, inputs: Sequence[Tensor] | None = None,
                 allow_unused: bool = False) -> tuple[Any, ...] | None:
    """Backpropagate from ``tensors``. Without ``inputs``: accumulate into leaves' ``.grad``
    (``Tensor.backward``). With ``inputs``: return their gradients (``autograd.grad``)."""
    roots: list[tuple[Any, int, Tensor]] = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not isinstance(t, Tensor):
            raise TypeError(f"autograd: output {i} must be a jflow Tensor, got "
                            f"{type(t).__name__}")
        target, nr = _root_edge(t, i)
        roots.append((target, nr, _root_grad(t, g, i, create_graph)))

    capture = inputs is not None
    leaf_targets: dict[int, int] = {}
    node_targets: dict[tuple[Node, int], int] = {}
    if capture:
        for k, x in enumerate(inputs):  # type: ignore[arg-type]
            if not isinstance(x, Tensor):
                raise TypeError(f"autograd.grad: input {k} must be a jflow Tensor, got "
                                f"{type(x).__name__}")
            if not x.requires_grad:
                raise RuntimeError(f"autograd.grad: input {k} does not require grad")
            if x.grad_fn is None:
                leaf_targets[id(x)] = k
            else:
                node_targets[(x.grad_fn, x._output_nr)] = k
    results: list[Any] = [None] * (len(inputs) if capture else 0)

    hooked: dict[int, list[Any]] = {}  # leaves with hooks: [leaf, gradient so far]

    def deliver_leaf(leaf: Tensor, g: Any) -> None:
        if capture:
            k = leaf_targets.get(id(leaf))
            if k is not None:
                results[k] = _accumulate(results[k], g)
            return
        if id(leaf) in _leaf_hooks:  # hooks run once, on the leaf's whole gradient
            entry = hooked.setdefault(id(leaf), [leaf, None])
            with set_grad_enabled(create_graph):
                entry[1] = _accumulate(entry[1], g)
            return
        g = _user_conj(g)
        if leaf._grad is None:  # (no op runs: no grad-mode switch needed)
            leaf._grad = g
            return
        with set_grad_enabled(create_graph):
            leaf._grad = leaf._grad + g

    def flush_hooked() -> None:
        for leaf, g in hooked.values():
            g = _user_conj(g)
            after = []  # post-accumulate hooks (Tensor.register_post_accumulate_grad_hook)
            for hook in _leaf_hooks.get(id(leaf), ()):
                if getattr(hook, "after_accumulation", False):
                    after.append(hook)
                    continue
                r = hook(g)
                if r is not None:
                    g = r
            with set_grad_enabled(create_graph):
                leaf._grad = g if leaf._grad is None else leaf._grad + g
            for hook in after:
                hook(leaf)

    buffers: dict[Node, list[Any]] = {}
    root_nodes = []
    node_roots = []
    for target, nr, g in roots:  # (an op runs only to sum two gradients of one output)
        if nr == LEAF:
            deliver_leaf(target, g)
            continue
        node_roots.append((target, nr, g))
        buf = buffers.setdefault(target, [None] * len(target.out_avals))
        if buf[nr] is None:
            buf[nr] = g
        else:
            with set_grad_enabled(create_graph):
                buf[nr] = buf[nr] + g
        root_nodes.append(target)

    order = _topological(root_nodes)
    hook = _HOOK
    recorder = hook.prepare(order) if hook is not None else None
    needed: set[Node] | None = None
    if capture:
        needed = set()
        for n in reversed(order):
            for e in n.next_edges:
                if e is None:
                    continue
                if (e[1] == LEAF and id(e[0]) in leaf_targets) or \
                        (e[1] != LEAF and (e in node_targets or e[0] in needed)):
                    needed.add(n)
                    break

    check = _NODE_CHECK[0]
    if not create_graph and order and check is None and \
            (_WHOLE_GRAPH[0] or recorder is not None) and \
            _run_graph_compiled(order, node_roots, node_targets, needed, deliver_leaf,
                                results, retain_graph, recorder):
        flush_hooked()
        return _finish(results, capture, create_graph, allow_unused)
    if recorder is not None:  # rule by rule: the rules' ops record, on arrays
        hook.resolve(order)

    for node in order:
        grads = buffers.pop(node, None)
        if grads is None:
            continue
        for k in range(len(grads)):
            g = grads[k]
            if g is None:
                continue
            if node.hooks and k in node.hooks:
                g = grads[k] = _run_hooks(node.hooks[k], g)
            if capture:
                ti = node_targets.get((node, k))
                if ti is not None:
                    results[ti] = _accumulate(results[ti], g)
            elif node.retained and k in node.retained:
                t = node.retained[k]()
                if t is not None:
                    with set_grad_enabled(create_graph):
                        gu = _user_conj(g)
                        t._grad = gu if t._grad is None else t._grad + gu
        if needed is not None and node not in needed:
            continue
        in_grads = _execute(node, grads, create_graph)
        if check is not None:
            check(node, in_grads)
        if not retain_graph:
            node.release()
        with set_grad_enabled(create_graph):
            for e, g in zip(node.next_edges, in_grads):
                if e is None or g is None:
                    continue
                target, nr = e
                if nr == LEAF:
                    deliver_leaf(target, g)
                else:
                    buf = buffers.setdefault(target, [None] * len(target.out_avals))
                    buf[nr] = _accumulate(buf[nr], g)

    flush_hooked()
    return _finish(results, capture, create_graph, allow_unused)


def _finish(results: list[Any], capture: bool, create_graph: bool, allow_unused: bool
            ) -> tuple[Any, ...] | None:
    if not capture:
        return None
    for k, r in enumerate(results):
        if r is None and not allow_unused:
            raise RuntimeError(f"autograd.grad: input {k} appears to not have been used in the "
                               f"graph; set allow_unused=True if this is the desired behavior")
        r = _user_conj(r)
        results[k] = r.detach() if r is not None and not create_graph else r
    return tuple(results)


def _as_list(x: Any, what: str) -> list[Any]:
    if isinstance(x, Tensor) or x is None:
        return [x]
    if isinstance(x, (list, tuple)):
        return list(x)
    raise TypeError(f"autograd: {what} must be a Tensor or a sequence of Tensors, got "
                    f"{type(x).__name__}")


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False) -> None:
    """``flow.autograd.backward``: accumulate gradients of ``tensors`` into the leaves."""
    ts = _as_list(tensors, "tensors")
    if LOSS_SCALE[0] is not None:  # (an nn.Graph scaling its loss: see LOSS_SCALE)
        ts = [LOSS_SCALE[0](t) for t in ts]
    gs = _as_list(grad_tensors, "grad_tensors") if grad_tensors is not None else [None] * len(ts)
    if len(gs) != len(ts):
        raise ValueError(f"autograd.backward: got {len(gs)} grad_tensors for {len(ts)} tensors")
    run_backward(ts, gs, create_graph if retain_graph is None else retain_graph, create_graph)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, allow_unused: bool = False) -> tuple[Any, ...]:
    """``flow.autograd.grad``: gradients of ``outputs`` w.r.t. ``inputs`` (``.grad`` untouched)."""
    outs = _as_list(outputs, "outputs")
    ins = _as_list(inputs, "inputs")
    gs = _as_list(grad_outputs, "grad_outputs") if grad_outputs is not None \
        else [None] * len(outs)
    if len(gs) != len(outs):
        raise ValueError(f"autograd.grad: got {len(gs)} grad_outputs for {len(outs)} outputs")
    res = run_backward(outs, gs, create_graph if retain_graph is None else retain_graph,
                       create_graph, inputs=ins, allow_unused=allow_unused)
    return res  # type: ignore[return-value]


# -- Tensor methods owned by the autograd layer (Tensor itself is the bottom layer) ----------

#: ``[fn or None]``: while an ``nn.Graph`` that scales its loss traces (gradient accumulation,
#: a grad scaler: compiler/graph.py), ``fn(tensor)`` is the tensor ``Tensor.backward()``
#: differentiates instead (the loss times the scale; other threads get the tensor back)
LOSS_SCALE: list[Any] = [None]


def _tensor_backward(self: Tensor, gradient: Tensor | None = None,
                     retain_graph: bool | None = None, create_graph: bool = False,
                     inputs: Any = None) -> None:
    """Accumulate d(self)/d(leaf) into every leaf's ``.grad`` (``gradient`` is required
    unless this tensor has one element). ``inputs`` restricts which leaves get it."""
    if LOSS_SCALE[0] is not None:
        self = LOSS_SCALE[0](self)
    retain = create_graph if retain_graph is None else retain_graph
    if inputs is None:
        if gradient is None and not create_graph and _HOOK is not None and \
                _HOOK.backward(self, retain, _leaf_hooks):
            return  # (recorded: lazy mode's template, jflow.lazy_mode.backward)
        run_backward([self], [gradient], retain, create_graph)
        return
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    grads = run_backward([self], [gradient], retain, create_graph, inputs=ins,
                         allow_unused=True)
    with set_grad_enabled(create_graph):
        for x, g in zip(ins, grads or ()):
            if g is not None:
                x._grad = g if x._grad is None else x._grad + g


class _HookHandle:
    """What ``register_hook`` returns: ``handle.remove()`` unregisters the hook."""

    __slots__ = ("_hooks", "_hook")

    def __init__(self, hooks: list, hook: Any) -> None:
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def _tensor_register_hook(self: Tensor, hook: Any) -> _HookHandle:
    """``hook(grad) -> grad or None`` runs when this tensor's gradient is computed; a
    returned tensor replaces the gradient. Returns a handle with ``.remove()``."""
    if not self._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                           "gradient")
    if not callable(hook):
        raise TypeError(f"register_hook: hook must be callable, got {type(hook).__name__}")
    if self.grad_fn is None:
        hooks = register_leaf_hook(self, hook)
    else:
        node = self.grad_fn
        if node.hooks is None:
            node.hooks = {}
        hooks = node.hooks.setdefault(self._output_nr, [])
        hooks.append(hook)
    return _HookHandle(hooks, hook)


_tensor_backward.__name__ = _tensor_backward.__qualname__ = "backward"
_tensor_register_hook.__name__ = _tensor_register_hook.__qualname__ = "register_hook"
Tensor.backward = _tensor_backward  # type: ignore[method-assign]
Tensor.register_hook = _tensor_register_hook  # type: ignore[attr-defined]
