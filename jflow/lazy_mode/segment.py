"""Lazy mode's executor: op calls *record* into a segment and run later, many ops at once.

The executor beside the local (``dispatch.py``), traced and global (``sharding/execute.py``)
ones. Its boundary: code below it sees only :mod:`jflow.lazy_mode.values` — a pending value
(``LazyRef`` in a ``LazyTensor``) and ``values.LOCAL.active``, the :class:`Segment` this thread
records into, whose methods (``add``, ``add_global``, ``add_host``, ``add_lists``,
``add_check``) are the only way a call enters lazy mode. The backward engine reaches it
through one hook (:mod:`jflow.lazy_mode.backward`). The parts: this module records (wiring,
abstract evaluation, bounds) and runs a segment; :mod:`.replay` runs nodes and finds the live
outputs; :mod:`.compile_cache` decides when a structure compiles and keeps the executables;
:mod:`.failures` attributes errors to the user's line; :mod:`.checks` defers functors' value
checks.

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
never repeats, e.g. varying shapes); the second sighting compiles. Every output still
referenced comes back, so every lazy tensor gets its array (:func:`.replay.live`). A segment
is flushed at :data:`MAX_NODES` nodes or :data:`MAX_HOST_BYTES` of host data, so a loop that
never reads a value stays bounded, and by a ``backward()`` whose forward is heavy
(:data:`SPLIT_FLOPS`: the forward then computes while the backward and the optimizer step are
recorded).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from .._jax_compat import cpu_async_dispatch
from ..kernels.registry import HOST_OPS, is_trusted
from ..lazy_values import _PLAIN_OF, LOCAL, Failure, LazyRef, new_lazy, raw
from ..meta import MetaValue
from .compile_cache import LAST_RUN, NO_RUN, STATS, compiled
from .failures import CALL_SITES, annotated, call_site
from .replay import NodeFailed, computing, eager_jit, host_to_device, live, not_recording, replay

__all__ = ["Segment", "segment", "active", "flush", "stats", "split_forward", "host_data",
           "MAX_NODES", "MAX_HOST_BYTES", "SPLIT_FLOPS", "eager_jit"]

#: nodes a segment records before it is flushed
MAX_NODES = 512
#: bytes of host data (``flow.tensor(ndarray)`` copies) a segment holds before it is flushed
MAX_HOST_BYTES = 64 << 20
#: a lazy ``backward()`` whose graph's forward does at least this many multiply-adds (of
#: matrix products, convolutions, attention: the ``flops`` estimate
#: their ops declare, jflow.ops.cost) first runs the pending forward
#: on its own — asynchronously — and records the backward into a new segment, which the
#: optimizer step then joins: the Python that records the backward and the step overlaps the
#: forward's computation, where one fused run would start only after all of it (and wake
#: XLA's worker thread from sleep). Measured on 2 CPU cores (benchmarks/lazy_split.py), a
#: waited MLP SGD step split against fused: width 128 0.73x, 64 0.69x, 32 0.79x (98,304
#: multiply-adds), 16 1.02x (24,576), 8 1.06x, 1x1 1.19x; an elementwise chain 1.35–2.29x
#: (fusing its forward into its backward saves memory traffic, and no optimizer's Python
#: follows to overlap): the threshold lies between widths 16 and 32. Never with synchronous
#: CPU dispatch (:func:`split_forward`).
SPLIT_FLOPS = 32768


def stats() -> dict[str, int]:
    """Counters: ops recorded, segments flushed, flushes that compiled, flushes that ran
    node by node (a structure's first sighting)."""
    return dict(STATS)


def split_forward(flops: int) -> bool:
    """Whether a lazy ``backward()`` whose forward does ``flops`` multiply-adds runs the
    forward first (:data:`SPLIT_FLOPS`): only where a run is asynchronous — an accelerator,
    or the CPU with JAX's default asynchronous dispatch. With synchronous CPU dispatch
    (``jax_cpu_enable_async_dispatch=False``) the forward would compute on this thread
    before the backward is recorded: nothing overlaps, and a second run only costs."""
    if flops < SPLIT_FLOPS:
        return False
    if not _ASYNC:
        _ASYNC.append(jax.default_backend() != "cpu" or cpu_async_dispatch())
    return _ASYNC[0]


_ASYNC: list[bool] = []  # (whether runs are asynchronous: fixed once JAX's backend is up)

#: (executable, input avals[, dynamic value types]) -> its abstract outputs; cleared beyond
#: :data:`AVALS_SIZE` entries (``flow.config.set_cache_limit("lazy_avals", n)``)
AVALS_SIZE = 4096
_AVALS: dict[Any, Any] = {}


def _shaped(s: Any) -> Any:
    """``jax.eval_shape``'s result as the abstract value a LazyRef holds."""
    return jax.core.ShapedArray(s.shape, s.dtype, weak_type=getattr(s, "weak_type", False))


def _out_avals(f: Any, avals: tuple, dv: tuple) -> Any:
    """The abstract outputs of ``f`` on ``avals`` and dynamic values like ``dv`` (computed
    once per key, by ``jax.eval_shape``)."""
    if len(_AVALS) >= AVALS_SIZE:
        _AVALS.clear()
    structs = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
    shapes = not_recording(jax.eval_shape, f, *structs, *dv)
    if not is_trusted(getattr(f, "__name__", None)):  # (its kernel is chosen now, so what
        not_recording(f.lower, *structs, *dv)         # it rejects raises at the call)
    out = tuple(map(_shaped, shapes if isinstance(shapes, (tuple, list)) else (shapes,)))
    _AVALS[(f, avals, *map(type, dv)) if dv else (f, avals)] = out
    return out


def _flat_call(f: Any, na: int, avals: tuple) -> tuple[Any, Any, tuple]:
    """``f(a, b)`` (``a``: the first ``na`` values) as a jitted function of the values, flat,
    returning its result's leaves; the result's tree structure and abstract leaves."""
    structs = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
    out_leaves, out_def = jax.tree_util.tree_flatten(
        not_recording(jax.eval_shape, f, structs[:na], structs[na:]))

    def flat(*xs: Any) -> list[Any]:
        return jax.tree_util.tree_leaves(f(list(xs[:na]), list(xs[na:])))
    return eager_jit(flat), out_def, tuple(map(_shaped, out_leaves))


#: sharded executables traced abstractly once (:func:`add_global`; bounded)
_TRACED_GLOBAL: set[Any] = set()


class Segment:
    """The pending op calls of one thread (see the module docstring)."""

    def __init__(self) -> None:
        #: per node ``(executable, wiring, number of dynamic values, number of outputs)``: the
        #: structure, which keys the compiled run
        self.nodes: list[tuple[Any, tuple, int, int]] = []
        self.dvs: list[Any] = []             # the nodes' dynamic values, flat, in order
        self.inputs: list[Any] = []          # arrays read from outside the segment
        self.input_ids: dict[int, int] = {}  # id(array) -> its position in ``inputs``
        self.in_avals: list[Any] = []        # their avals ((shape, dtype) for host data)
        self.refs: list[tuple[LazyRef, ...]] = []  # per node, its outputs
        self.sites: list[Any] = []           # per node, the user's (file, line), or None
        #: deferred value checks: (node index, the refs of what it reads, ``check(*values)``)
        self.checks: list[tuple[int, tuple, Any]] = []
        self.host_bytes = 0                  # of the host data in ``inputs``
        #: whether a call was recorded on shapes its op was not seen with before (its eager
        #: executable would compile too: see compile_cache.COMPILE_ON_SIGHTING)
        self.new_shapes = False
        self.n_host = 0                      # nodes that are host data (add_host)
        self.flushing = False

    def add(self, f: Any, ins: tuple, dv: tuple, single: bool, glob: Any = None) -> Any:
        """Record one call of executable ``f`` on tensors ``ins``; its tensor(s), or
        NotImplemented when an input is traced or global (the call runs as it would outside
        lazy mode). ``glob``: ``(placement, output nd-SBPs)`` when ``f`` is a global op's
        sharded executable (its inputs are global tensors, its outputs are made global)."""
        wiring, avals = [], []
        n_in = len(self.inputs)
        for t in ins:
            if t._global is not None and glob is None:
                self._drop_inputs(n_in)
                return NotImplemented
            if t._aliases:  # a view: its current value, pending when its base is
                k = len(self.nodes)
                v = t._pending_or_value()
                if len(self.nodes) != k:  # (its replay from the base recorded ops: again,
                    return self.add(f, ins, dv, single, glob)  # so a drop drops ours only)
            else:
                v = t._meta
            if v.__class__ is LazyRef:
                a = v.array
                if a is None:
                    if v.segment is self:
                        wiring.append(v.wire)
                        avals.append(v.aval)
                        continue
                    a = v.get()  # (another thread's pending value)
                elif a.__class__ is Failure:
                    raise a.error
                if not t._aliases:  # (computed: the tensor becomes plain)
                    t._meta = a
                    t.__class__ = _PLAIN_OF[t.__class__]
                v = a
            elif isinstance(v, Tracer) or v.__class__ is MetaValue:  # (meta: jflow.meta)
                self._drop_inputs(n_in)
                return NotImplemented
            k = self.input_ids.get(id(v))
            if k is None:
                k = self.new_input(v)
            wiring.append(k)
            avals.append(self.in_avals[k])
        if glob is None:
            avals = tuple(avals)
            out_avals = _AVALS.get((f, avals, *map(type, dv)) if dv else (f, avals))
            if out_avals is None:
                out_avals = _out_avals(f, avals, dv)
                self.new_shapes = True
        else:
            out_avals = glob[2]  # (a sharded executable's logical results, from its plan)
        n = len(self.nodes)
        if dv:  # (before the node: a reader on another thread replays nodes with their dvs)
            self.dvs.extend(dv)
        self.nodes.append((f, tuple(wiring), len(dv), len(out_avals)))
        # (the user's line, kept for ops whose kernels can fail while running: host code)
        self.sites.append(call_site() if HOST_OPS and CALL_SITES[0] and getattr(
            f, "__name__", None) in HOST_OPS else None)
        if single:
            r = LazyRef(out_avals[0], self, n, 0)
            self.refs.append((r,))
            out = new_lazy(r)
        else:
            refs = tuple(LazyRef(a, self, n, i) for i, a in enumerate(out_avals))
            self.refs.append(refs)
            out = tuple(map(new_lazy, refs))
        if glob is not None:
            plc, nds, _ = glob
            for t, nd in zip((out,) if single else out, nds):
                t._global = (plc, nd)
        if n + 1 >= MAX_NODES:
            self.flush()
        return out

    def new_input(self, v: Any) -> int:
        """Add ``v`` (an array, host data of a tensor made by ``_wrap(ndarray)``, a Python
        number) as an input read from outside the segment; its position."""
        k = self.input_ids[id(v)] = len(self.inputs)
        self.inputs.append(v)
        try:
            self.in_avals.append(v.aval)
        except AttributeError:  # (host data, a Python number)
            self.in_avals.append(jax.typeof(v))
        return k

    def _drop_inputs(self, n: int) -> None:
        """Forget the inputs a call that is not recorded after all added (from ``n`` on)."""
        for v in self.inputs[n:]:
            del self.input_ids[id(v)]
        del self.inputs[n:]
        del self.in_avals[n:]

    def add_lists(self, f: Any, a: list, b: list, tensors: bool = True) -> Any:
        """Record a call ``f(a, b)`` of jitted ``f`` on two lists of values (arrays, pending
        values, Python numbers); its result tree, with lazy tensors for its arrays (a
        compiled backward: saved values and root gradients), or (``tensors=False``) the
        pending values of its result's leaves, flat (an optimizer step: the values its
        tensors take)."""
        avals: list[Any] = []
        wiring = self._wire((*a, *b), avals)
        avals = tuple(avals)
        key = (f, len(a), avals)
        hit = _AVALS.get(key)
        if hit is None:
            if len(_AVALS) >= AVALS_SIZE:
                _AVALS.clear()
            hit = _AVALS[key] = _flat_call(f, len(a), avals)
            self.new_shapes = True
        flat_f, out_def, out_avals = hit
        refs = self._add_flat(flat_f, wiring, out_avals)
        if not tensors:
            return refs
        return jax.tree_util.tree_unflatten(out_def, [*map(new_lazy, refs)])

    def add_backward(self, plan: Any, saved: list, roots: list) -> Any:
        """Record a compiled backward plan's call (``plan.run(saved, root gradients)``,
        jflow.autograd.compiled_graph) on ``saved`` values and the root gradient tensors
        ``roots``; its result tree with lazy tensors (the engine's hook: see
        jflow.lazy_mode.backward). A heavy forward is run first (:func:`split_forward`)."""
        if split_forward(plan.fwd_flops):  # (it computes while the backward and the step
            self.flush()                   # are recorded)
        # (the plan's function itself: traced into the segment's executable, which has the
        # compiler options — a nested jit may not)
        return self.add_lists(plan.run, saved, [raw(g) for g in roots])

    def add_wired(self, f: Any, values: list, out_avals: tuple) -> tuple[LazyRef, ...]:
        """Record a call of jitted ``f`` on ``values`` (arrays, pending values, Python
        numbers) whose result avals are known (``out_avals``: a compiled backward's, from its
        template, jflow.lazy_mode.backward); the pending values of its flat result."""
        refs = self._add_flat(f, self._wire(values, None), out_avals)
        if len(self.nodes) >= MAX_NODES:
            self.flush()
        return refs

    def _wire(self, values: Any, avals: list | None) -> tuple:
        """Where each of ``values`` comes from (a node output of this segment, or an input,
        added when new); their avals appended to ``avals`` unless it is None."""
        wiring: list[Any] = []
        wire = wiring.append
        ids, in_avals = self.input_ids, self.in_avals
        for v in values:
            if v.__class__ is LazyRef:
                x = v.array
                if x is None:
                    if v.segment is self:
                        wire(v.wire)
                        if avals is not None:
                            avals.append(v.aval)
                        continue
                    x = v.get()
                elif x.__class__ is Failure:
                    raise x.error
                v = x
            k = ids.get(id(v))
            if k is None:
                k = self.new_input(v)
            wire(k)
            if avals is not None:
                avals.append(in_avals[k])
        return tuple(wiring)

    def _add_flat(self, f: Any, wiring: tuple, out_avals: tuple) -> tuple[LazyRef, ...]:
        """Append a node calling ``f`` (flat results ``out_avals``) wired as ``wiring``."""
        n = len(self.nodes)
        self.nodes.append((f, wiring, 0, len(out_avals)))
        # (a compiled backward can hold host kernels' rules: its line, when any exist)
        self.sites.append(call_site() if HOST_OPS and CALL_SITES[0] else None)
        refs = tuple([LazyRef(x, self, n, i) for i, x in enumerate(out_avals)])
        self.refs.append(refs)
        return refs

    def add_host(self, host: np.ndarray) -> LazyRef:
        """The pending value of a new tensor's host data (a private copy): an input of the
        next run, transferred by that one call (``flow.tensor(ndarray)`` pays no transfer
        of its own)."""
        k = len(self.inputs)
        self.inputs.append(host)
        self.in_avals.append((host.shape, host.dtype))
        n = len(self.nodes)
        self.nodes.append((host_to_device, (k,), 0, 1))
        self.sites.append(None)
        r = LazyRef(jax.core.ShapedArray(host.shape, host.dtype), self, n, 0)
        self.refs.append((r,))
        self.host_bytes += host.nbytes
        self.n_host += 1
        if self.host_bytes > MAX_HOST_BYTES or n + 1 >= MAX_NODES:
            self.flush()  # (bounded: a loop making tensors it never reads)
        return r

    def add_check(self, reduce: Any, ins: tuple, check: Any) -> bool:
        """A value check of a functor, deferred: record ``reduce`` (a jitted function of the
        tensors ``ins`` giving small arrays, e.g. their min and max) and call
        ``check(*host values)`` after the segment ran; when it raises, that error is the
        segment's, attributed to the line that recorded it, and what was recorded from here
        on is never computed (as eagerly, the op and what follows never ran). False when it
        cannot be deferred (the caller checks now)."""
        n = len(self.nodes)
        outs = self.add(reduce, ins, (), False)
        if outs is NotImplemented:
            return False
        if CALL_SITES[0]:
            self.sites[n] = call_site()
        self.checks.append((n, list(self.refs[n]), check))  # (a list: its refs count as read)
        return True

    def flush(self) -> None:
        """Run the pending nodes, give every lazy value of the segment that is still referenced
        its array, and start empty."""
        if not self.nodes or self.flushing:
            return
        self.flushing = True
        try:
            computing(self._run)
        finally:
            self.__init__()

    def _run(self) -> None:
        nodes, refs = self.nodes, self.refs
        if len(nodes) - self.n_host <= 1:  # (one op and host data: nothing to fuse, and a
            f = None                        # compile would cost what the op's executable did)
        else:
            # (input shapes are in the key: a shape seen once runs op by op, compiling nothing)
            kept, last = live(refs), LAST_RUN[0]  # (one read: a tuple, replaced whole)
            # (a loop running one structure: compared with the last run's lists — mostly
            # identical objects — instead of building and hashing the key; only ``compiled``,
            # called here, evicts a key from the cache, and after another key ran ``last``
            # is that one's)
            if last[0] == nodes and last[1] == kept and last[2] == self.in_avals:
                f = last[3]
            else:
                f = compiled((tuple(nodes), kept, tuple(self.in_avals)), self.new_shapes)
                LAST_RUN[0] = (nodes, kept, self.in_avals, f) if f is not None else NO_RUN
        try:
            if f is None:
                STATS["eager_flushes"] += 1
                for rs, vals in zip(refs, replay(nodes, self.inputs, self.dvs)):
                    for r, v in zip(rs, vals):
                        r.array = v
            else:
                run, kept = f
                for (i, j), v in zip(kept, run(self.inputs, self.dvs)):
                    refs[i][j].array = v
        except NodeFailed as e:
            self._fail(e.node, e.cause, e.outs)
        except Exception as e:  # noqa: BLE001  (the compiled run failed: find the node)
            try:
                replay(nodes, self.inputs, self.dvs)
            except NodeFailed as nf:
                self._fail(nf.node, nf.cause, nf.outs)
            self._fail(0, e, [])
        STATS["flushes"] += 1
        STATS["recorded"] += len(nodes)
        for n, check_refs, check in self.checks:
            try:
                check(*jax.device_get([r.array for r in check_refs]))
            except Exception as e:  # noqa: BLE001  (the functor's own error, now)
                self._fail(n, e, None)

    def compute_elsewhere(self, ref: LazyRef) -> Any:
        """``ref``'s array, read by a thread that does not own this segment. The owner may be
        recording into it or running it at this moment, so nothing here changes it: the
        nodes up to ``ref``'s are replayed one by one on this thread (with their value
        checks), from the segment's append-only lists. (The value may differ from what the
        owner's fused run gives in the last bit, as eager and fused runs do.)"""
        nodes, inputs, dvs = self.nodes, self.inputs, self.dvs
        refs, sites, checks = self.refs, self.sites, self.checks
        # (the owner gives every value its array before it starts a new segment: with none
        # yet, the lists just read are all of ref's segment)
        if ref.array is not None:  # (the owner ran it meanwhile)
            return ref.get()
        i, j = ref.wire
        if not (i < len(refs) and refs[i][j] is ref):
            raise RuntimeError("lazy mode: a pending value of another thread was never "
                               "computed (its segment's run was interrupted)")
        node = len(nodes)  # (the failing node, when a value check fails)
        try:
            outs = computing(replay, nodes[:i + 1], inputs, dvs)
            for n, check_refs, check in list(checks):
                if n <= i:
                    node = n
                    check(*jax.device_get(outs[n][:len(check_refs)]))
        except NodeFailed as e:
            raise annotated(e.cause, e.node, nodes, sites, checks) from None
        except Exception as e:  # noqa: BLE001  (a value check's own error)
            raise annotated(e, node, nodes, sites, checks) from None
        return outs[i][j]

    def _fail(self, node: int, cause: BaseException, outs: list[list[Any]] | None) -> None:
        """Node ``node`` failed with ``cause``: the nodes before it keep their values (from
        ``outs`` when given), it and every later node's values raise; raise ``cause``, with
        the op's recording line in a note."""
        cause = annotated(cause, node, self.nodes, self.sites, self.checks)
        if outs is not None:
            for rs, vals in zip(self.refs, outs):
                for r, v in zip(rs, vals):
                    r.array = v
        failed = Failure(cause)
        for rs in self.refs[node:]:
            for r in rs:
                r.array = failed
        raise cause.with_traceback(None) from None

    def add_global(self, fn: Any, ins: list, dyn: tuple, single: bool, plc: Any, nds: tuple,
                   out_avals: Any, trace: Any) -> Any:
        """Record a global op's sharded executable (jflow.sharding.execute, on a thread whose
        ``values.LOCAL.active`` is this segment): the segment then runs as one ``jax.jit``
        over the ops' sharded programs. NotImplemented while it is running, or when the
        placement spans processes (there each executable is waited for, to keep collectives
        in step: see Placement.wait_if_shared).
        ``trace()``: trace ``fn`` abstractly on its inputs' shardings — run on an executable's
        first recording, so what its trace rejects (a bad SBP signature of a user op) raises at
        the call, as eagerly, not when the segment runs."""
        if self.flushing or len(
                {d.process_index for d in plc.mesh.devices.flat}) > 1:
            return NotImplemented
        if fn not in _TRACED_GLOBAL:
            not_recording(trace)
            if len(_TRACED_GLOBAL) >= 4096:
                _TRACED_GLOBAL.clear()
            _TRACED_GLOBAL.add(fn)
        return self.add(fn, tuple(ins), tuple(dyn), single,
                        (plc, nds, tuple(jax.core.ShapedArray(a.shape, a.dtype)
                                         for a in out_avals)))



    def pending_device(self, ref: LazyRef) -> Any:
        """The JAX device a pending value of this thread's segment will be computed on, or None
        when that needs the run: a node's result lands where its inputs are -- the device of a
        committed array it is computed from (jit places the call there), else the default
        device, when every uncommitted array and host input it reads is there."""
        default = jax.config.jax_default_device
        if default is None:
            default = jax.devices()[0]
        elif not isinstance(default, jax.Device):  # (a platform name: left to the run)
            return None
        nodes, inputs = self.nodes, self.inputs
        stack, seen, found = [ref.wire[0]], set(), False
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            for w in nodes[n][1]:
                if w.__class__ is tuple:
                    stack.append(w[0])
                    continue
                a = inputs[w]
                if isinstance(a, jax.Array):
                    devs = a.devices()
                    if len(devs) != 1:
                        return None
                    if a.committed:
                        return next(iter(devs))
                    if default not in devs:
                        return None
                    found = True
                elif isinstance(a, np.ndarray):  # host data: put on the default device
                    found = True
        return default if found else None


def segment() -> Segment:
    """This thread's pending segment."""
    s = LOCAL.segment
    if s is None:
        s = LOCAL.segment = Segment()
    return s


def active() -> Segment | None:
    """This thread's segment while it is in lazy mode, else None."""
    return LOCAL.active


def flush() -> None:
    """Run this thread's pending ops."""
    s = LOCAL.segment
    if s is not None:
        s.flush()


def host_data(host: np.ndarray) -> LazyRef | None:
    """``tensor.HOST_DATA``'s hook: a pending value for a new tensor's host data when this
    thread is lazy, else None."""
    seg = LOCAL.active
    if seg is None or seg.flushing:
        return None
    return seg.add_host(host)
