"""Lazy eager: op calls *record* into a segment and run later, many ops in one dispatch.

In lazy mode (:func:`jflow.lazy_mode.lazy`) an op call appends a node — the op's cached executable
(the same one eager dispatch calls), where its inputs come from, its dynamic attr values — to
the thread's pending :class:`Segment`, and returns a :class:`LazyTensor` whose shape and dtype
are known at once (the executable's abstract evaluation, cached). Nothing runs until a value is
needed: reading a lazy tensor's ``_value`` — which every path that uses a value does
(``.numpy()``, ``.item()``, ``print``, an op outside lazy mode, a backward) — flushes the
segment. Correct by construction: no code can see a value that was not computed.

A flush runs the whole segment as one ``jax.jit`` of the recorded nodes, cached by the
segment's *structure* (executables and wiring; shapes and dtypes are ``jax.jit``'s own key), so
a training loop that records the same ops every step compiles once. A structure seen for the
first time runs node by node through the eager executables instead (no compile for code that
never repeats, e.g. varying shapes); the second sighting compiles. Every node's outputs come
back, so every lazy tensor gets its array (the memory of eager execution). A segment is flushed
at :data:`MAX_NODES` nodes, so a loop that never reads a value stays bounded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import jax
from jax.core import Tracer

from ..tensor import Tensor, _flatten, _unflatten

__all__ = ["LazyRef", "LazyTensor", "Segment", "active", "flush", "stats", "raw", "HOOK",
           "MAX_NODES", "CACHE_SIZE"]

#: ``[fn or None]``: set while some thread is in lazy mode (:mod:`jflow.lazy_mode`); an op's eager
#: dispatch calls ``fn(executable, inputs, dynamic values, single)``, which records the call
#: and returns its tensor(s), or returns NotImplemented to let it run as usual (this thread
#: not lazy, a traced or global input)
HOOK: list[Any] = [None]

#: nodes a segment records before it is flushed
MAX_NODES = 512
#: compiled segment structures kept (least recently used dropped beyond it)
CACHE_SIZE = 64

_SLOT = Tensor.__dict__["_value"]   # the raw ``_value`` slot (LazyTensor's property sits over it)
_get_slot, _set_slot = _SLOT.__get__, _SLOT.__set__


class LazyRef:
    """The value-to-be of one node output: its abstract value (``shape``, ``dtype``, ``ndim``
    read like an array's, so metadata never flushes) and, after the flush, its array."""

    __slots__ = ("aval", "shape", "dtype", "segment", "node", "index", "array")

    def __init__(self, aval: Any, segment: Segment, node: int, index: int) -> None:
        self.aval = aval
        self.shape, self.dtype = aval.shape, aval.dtype
        self.segment, self.node, self.index = segment, node, index
        self.array: Any = None  # (a _Failure when the segment failed)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    def get(self) -> Any:
        """The array (flushing the segment that computes it)."""
        if self.array is None:
            self.segment.flush()
        a = self.array
        if a.__class__ is _Failure:
            raise RuntimeError("this lazy value was never computed: running the segment that "
                               "computes it failed") from a.error
        return a


class LazyTensor(Tensor):
    """A tensor whose value a pending segment computes. Reading ``_value`` flushes the segment;
    the tensor then becomes a plain :class:`~jflow.tensor.Tensor` holding the array."""

    __slots__ = ()

    def _get_value(self) -> Any:
        v = _get_slot(self)
        if v.__class__ is LazyRef:
            v = v.get()
            _set_slot(self, v)
            self.__class__ = Tensor
        return v

    def _set_value(self, v: Any) -> None:
        _set_slot(self, v)
        if v.__class__ is not LazyRef:
            self.__class__ = Tensor

    _value = property(_get_value, _set_value)


# a lazy tensor flattened into JAX (jax.jit / vmap arguments, block_until_ready) is computed
# and comes back as a plain tensor
jax.tree_util.register_pytree_node(LazyTensor, _flatten, _unflatten)


def raw(t: Tensor) -> Any:
    """``t``'s array, or its :class:`LazyRef` while pending (no flush): for metadata and for
    moving a value between tensors."""
    return _get_slot(t) if t.__class__ is LazyTensor else t._value


def _new_lazy(ref: LazyRef) -> LazyTensor:
    t = object.__new__(LazyTensor)
    _set_slot(t, ref)
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._version = 0
    t._global = None
    return t


_STATS = {"recorded": 0, "flushes": 0, "compiles": 0, "eager_flushes": 0}


def stats() -> dict[str, int]:
    """Counters: ops recorded, segments flushed, flushes that compiled, flushes that ran
    node by node (a structure's first sighting)."""
    return dict(_STATS)


_AVALS: dict[Any, Any] = {}


def _out_avals(f: Any, avals: tuple, dv: tuple) -> Any:
    """The abstract outputs of ``f`` on ``avals`` and dynamic values like ``dv`` (computed
    once per key, by ``jax.eval_shape``)."""
    if len(_AVALS) >= 4096:
        _AVALS.clear()
    structs = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
    shapes = jax.eval_shape(f, *structs, *dv)
    out = tuple(jax.core.ShapedArray(s.shape, s.dtype, weak_type=getattr(s, "weak_type", False))
                for s in (shapes if isinstance(shapes, (tuple, list)) else (shapes,)))
    _AVALS[(f, avals, *map(type, dv)) if dv else (f, avals)] = out
    return out


class _Failure:
    """A failed segment's outputs: reading one raises the error."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class Segment:
    """The pending op calls of one thread (see the module docstring)."""

    def __init__(self) -> None:
        self.nodes: list[tuple[Any, tuple, tuple, int]] = []  # (executable, wiring, dv, n_out)
        self.inputs: list[Any] = []          # arrays read from outside the segment
        self.input_ids: dict[int, int] = {}  # id(array) -> its position in ``inputs``
        self.refs: list[tuple[LazyRef, ...]] = []  # per node, its outputs
        self.flushing = False

    def add(self, f: Any, ins: tuple, dv: tuple, single: bool) -> Any:
        """Record one call of executable ``f`` on tensors ``ins``; its tensor(s), or
        NotImplemented when an input is traced or global (the call runs as it would outside
        lazy mode)."""
        wiring, avals = [], []
        for t in ins:
            if t._global is not None:
                return NotImplemented
            v = _get_slot(t)
            if v.__class__ is LazyRef:
                a = v.array
                if a is None:
                    if v.segment is self:
                        wiring.append((v.node, v.index))
                        avals.append(v.aval)
                        continue
                    a = v.get()  # (another thread's pending value)
                elif a.__class__ is _Failure:
                    raise a.error
                v = a
            elif t._aliases:
                v = t._value  # (a view: its current value)
            if isinstance(v, Tracer):
                return NotImplemented
            k = self.input_ids.get(id(v))
            if k is None:
                k = self.input_ids[id(v)] = len(self.inputs)
                self.inputs.append(v)
            wiring.append(k)
            avals.append(v.aval)
        avals = tuple(avals)
        out_avals = _AVALS.get((f, avals, *map(type, dv)) if dv else (f, avals))
        if out_avals is None:
            out_avals = _out_avals(f, avals, dv)
        n = len(self.nodes)
        self.nodes.append((f, tuple(wiring), dv, len(out_avals)))
        if single:
            r = LazyRef(out_avals[0], self, n, 0)
            self.refs.append((r,))
            out = _new_lazy(r)
        else:
            refs = tuple(LazyRef(a, self, n, i) for i, a in enumerate(out_avals))
            self.refs.append(refs)
            out = tuple(map(_new_lazy, refs))
        if n + 1 >= MAX_NODES:
            self.flush()
        return out

    def add_tree(self, f: Any, args: Any) -> Any:
        """Record a call of jitted ``f`` on a tree of values (arrays, pending values, Python
        numbers); its result tree, with lazy tensors for its arrays (a compiled backward)."""
        leaves, treedef = jax.tree_util.tree_flatten(args)
        wiring, avals = [], []
        for v in leaves:
            if v.__class__ is LazyRef:
                a = v.array
                if a is None:
                    if v.segment is self:
                        wiring.append((v.node, v.index))
                        avals.append(v.aval)
                        continue
                    a = v.get()
                elif a.__class__ is _Failure:
                    raise a.error
                v = a
            k = self.input_ids.get(id(v))
            if k is None:
                k = self.input_ids[id(v)] = len(self.inputs)
                self.inputs.append(v)
            wiring.append(k)
            avals.append(v.aval if isinstance(v, jax.Array) else jax.typeof(v))
        avals = tuple(avals)
        key = (f, treedef, avals)
        hit = _AVALS.get(key)
        if hit is None:
            structs = jax.tree_util.tree_unflatten(treedef, [
                jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals])
            out_leaves, out_def = jax.tree_util.tree_flatten(jax.eval_shape(f, *structs))

            def flat(*xs: Any) -> list[Any]:
                return jax.tree_util.tree_leaves(f(*jax.tree_util.tree_unflatten(treedef, xs)))
            hit = _AVALS[key] = (jax.jit(flat), out_def, tuple(
                jax.core.ShapedArray(s.shape, s.dtype, weak_type=getattr(s, "weak_type", False))
                for s in out_leaves))
        flat_f, out_def, out_avals = hit
        n = len(self.nodes)
        self.nodes.append((flat_f, tuple(wiring), (), len(out_avals)))
        refs = tuple(LazyRef(a, self, n, i) for i, a in enumerate(out_avals))
        self.refs.append(refs)
        return jax.tree_util.tree_unflatten(out_def, list(map(_new_lazy, refs)))

    def key(self) -> tuple:
        """The structure: executables, wiring and how many dynamic values each takes."""
        return tuple((f, w, len(dv), n) for f, w, dv, n in self.nodes)

    def flush(self) -> None:
        """Run the pending nodes, give every lazy tensor of the segment its array, and start
        empty."""
        if not self.nodes or self.flushing:
            return
        self.flushing = True
        try:
            nodes, inputs, refs = self.nodes, self.inputs, self.refs
            key = self.key()
            dvs = [d for _, _, dv, _ in nodes for d in dv]
            f = _compiled(key)
            try:
                if f is None:
                    _STATS["eager_flushes"] += 1
                    outs = _replay(nodes, inputs, dvs)
                else:
                    outs = f(inputs, dvs)
            except BaseException as e:
                failed = _Failure(e)
                for rs in refs:
                    for r in rs:
                        r.array = failed
                raise
            _STATS["flushes"] += 1
            _STATS["recorded"] += len(nodes)
            # (a lazy tensor takes its array at its next read: see LazyTensor._value)
            for rs, vals in zip(refs, outs):
                for r, v in zip(rs, vals):
                    r.array = v
        finally:
            self.__init__()


def _replay(nodes: list, inputs: list, dvs: list) -> list[list[Any]]:
    """Every node's outputs, computed in order (eagerly, or traced under ``jax.jit``)."""
    outs: list[list[Any]] = []
    it = iter(dvs)
    for f, wiring, dv, _ in nodes:
        args = [inputs[w] if w.__class__ is int else outs[w[0]][w[1]] for w in wiring]
        r = f(*args, *[next(it) for _ in dv])
        outs.append(list(r) if isinstance(r, (tuple, list)) else [r])
    return outs


#: segment structure -> its jitted replay (LRU); structures seen once -> None
_CACHE: OrderedDict[tuple, Any] = OrderedDict()


def _compiled(key: tuple) -> Any:
    """The jitted replay of a structure, or None on its first sighting (run node by node)."""
    hit = _CACHE.get(key, _FIRST)
    if hit is _FIRST:
        hit = _CACHE[key] = None
    elif hit is None:
        nodes = [(f, w, range(nd), n) for f, w, nd, n in key]
        hit = _CACHE[key] = jax.jit(lambda inputs, dvs: _replay(nodes, inputs, dvs))
        _STATS["compiles"] += 1
    _CACHE.move_to_end(key)
    while len(_CACHE) > CACHE_SIZE:
        _CACHE.popitem(last=False)
    return hit


_FIRST = object()
_LOCAL = threading.local()


def segment() -> Segment:
    """This thread's pending segment."""
    s = getattr(_LOCAL, "segment", None)
    if s is None:
        s = _LOCAL.segment = Segment()
    return s


def active() -> Segment | None:
    """This thread's segment while it is in lazy mode, else None."""
    return getattr(_LOCAL, "active", None)


def flush() -> None:
    """Run this thread's pending ops."""
    s = getattr(_LOCAL, "segment", None)
    if s is not None:
        s.flush()


#: ``[bool]``: whether anything was ever recorded (until then a backward skips
#: :func:`resolve_saved`)
USED = [False]


def resolve_saved(nodes: Any) -> None:
    """Give the tape's nodes arrays for the values they saved while pending (a backward
    needs them: the segments computing them run now)."""
    for n in nodes:
        saved = getattr(n, "saved", None)
        if saved and any(s[0].__class__ is LazyRef for s in saved):
            n.saved = [(v.get() if v.__class__ is LazyRef else v, *rest)
                       for v, *rest in saved]
