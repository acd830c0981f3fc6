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
never repeats, e.g. varying shapes); the second sighting compiles. Every output still
referenced comes back, so every lazy tensor gets its array (:func:`_live`). A segment is flushed
at :data:`MAX_NODES` nodes or :data:`MAX_HOST_BYTES` of host data, so a loop that never reads
a value stays bounded, and by a ``backward()`` whose forward is heavy (:data:`SPLIT_FLOPS`:
the forward then computes while the backward and the optimizer step are recorded).
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import warnings
from collections import OrderedDict, deque
from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from .._jax_compat import cpu_async_dispatch, drop_traceback_note, trace_state_clean_fn
from .._jax_setup import EAGER_ROUNDING
from ..device import device as _device
from ..meta import MetaValue
from ..recompile import RecompileWarning
from ..tensor import Tensor, _flatten, _unflatten

__all__ = ["LazyRef", "LazyTensor", "Segment", "active", "flush", "stats", "raw", "HOOK",
           "MAX_NODES", "MAX_HOST_BYTES", "CACHE_SIZE", "SPLIT_FLOPS", "defer_check",
           "discard_checks_on_error", "split_forward"]

#: ``[True or None]``: set while some thread is in lazy mode (:mod:`jflow.lazy_mode`). An op's
#: generated eager dispatch reads it first (one list read: all that lazy mode costs eager
#: code), then this thread's ``_LOCAL.active`` segment, whose :meth:`Segment.add` records
#: the call and returns its tensor(s), or NotImplemented to let it run as usual (a traced or
#: global input)
HOOK: list[Any] = [None]

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
#: compiled segment structures kept (least recently used dropped beyond it)
CACHE_SIZE = 64
#: when a segment key compiles. ``"adaptive"`` (the default): on its first sighting when it
#: recorded ops on shapes they were not seen with (run node by node, each of those ops'
#: executables would compile anyway: one compile of the whole segment is cheaper), else on
#: its second (a new arrangement of known ops runs node by node on warm executables: code
#: whose structure never repeats compiles nothing). 1 / 2: always on the first / second.
#: benchmarks/lazy_policy.py measures the three.
COMPILE_ON_SIGHTING: Any = "adaptive"

# (``t._meta`` is the raw ``_value`` slot — LazyTensor's ``_value`` property sits over it:
# how this module reads and writes a pending tensor's value without computing it)


class LazyRef:
    """The value-to-be of one node output: its abstract value (``shape``, ``dtype``, ``ndim``
    read like an array's, so metadata never flushes) and, after the flush, its array."""

    __slots__ = ("aval", "shape", "dtype", "segment", "wire", "array")

    def __init__(self, aval: Any, segment: Segment, node: int, index: int) -> None:
        self.aval = aval
        self.shape, self.dtype = aval.shape, aval.dtype
        self.segment = segment
        self.wire = (node, index)  # (which node's output: how a reader is wired)
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
        """The array: this thread's segment is flushed; another thread's is left alone (its
        owner may be recording into it or running it right now) and the value is computed
        here (:meth:`Segment.compute_elsewhere`)."""
        a = self.array
        if a is None:
            seg = self.segment
            if seg is not _LOCAL.segment:
                return seg.compute_elsewhere(self)
            seg.flush()
            a = self.array
            if a is None:  # (read from inside the segment's own run: there is no value yet)
                raise RuntimeError("lazy mode: a pending value was read while the segment "
                                   "that computes it was running")
        if a.__class__ is _Failure:
            raise RuntimeError("this lazy value was never computed: running the segment that "
                               "computes it failed") from a.error
        return a


class LazyTensor(Tensor):
    """A tensor whose value a pending segment computes. Reading ``_value`` flushes the segment;
    the tensor then becomes a plain :class:`~jflow.tensor.Tensor` holding the array."""

    __slots__ = ()

    def _get_value(self) -> Any:
        v = self._meta
        if v.__class__ is LazyRef:
            v = v.get()
            self._meta = v
            cls = self.__class__  # (plain already when another thread read it meanwhile)
            self.__class__ = _PLAIN_OF.get(cls, cls)
        return v

    def _set_value(self, v: Any) -> None:
        self._meta = v
        if v.__class__ is not LazyRef:
            self.__class__ = _PLAIN_OF[self.__class__]

    _value = property(_get_value, _set_value)

    @property
    def device(self) -> Any:
        """The device the pending value will be on, found without running anything
        (:func:`pending_device`); when that cannot be told, the segment runs (as a value
        read does)."""
        v = self._meta
        if v.__class__ is LazyRef and self._global is None and not self._aliases:
            d = pending_device(v)
            if d is not None:
                return _device.from_jax(d)
        return Tensor.device.fget(self)


def pending_device(ref: LazyRef) -> Any:
    """The JAX device a pending value of this thread's segment will be computed on, or None
    when that needs the run: a node's result lands where its inputs are -- the device of a
    committed array it is computed from (jit places the call there), else the default
    device, when every uncommitted array and host input it reads is there."""
    seg = ref.segment
    if ref.array is not None or seg is not _LOCAL.segment:
        return None
    default = jax.config.jax_default_device
    if default is None:
        default = jax.devices()[0]
    elif not isinstance(default, jax.Device):  # (a platform name: left to the run)
        return None
    nodes, inputs = seg.nodes, seg.inputs
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


# (what error messages print for a pending tensor's type — ``type(x).__name__`` — is the class
# the user knows, as for the twins of register_lazy_class; ``repr(LazyTensor)`` still says it)
LazyTensor.__name__ = "Tensor"

#: tensor class -> its pending twin (same slots, ``_value`` a flushing property) and back: an
#: in-place op in lazy mode makes its target (a tensor, a module's Parameter) pending without
#: changing what ``isinstance`` says about it
_LAZY_OF: dict[type, type] = {Tensor: LazyTensor}
_PLAIN_OF: dict[type, type] = {LazyTensor: Tensor}

# a lazy tensor flattened into JAX (jax.jit / vmap arguments, block_until_ready) is computed
# and comes back as a plain tensor
jax.tree_util.register_pytree_node(LazyTensor, _flatten, _unflatten)


def register_lazy_class(cls: type, unflatten: Any) -> type:
    """Give tensor subclass ``cls`` (slots only, no ``_value`` property of its own) a pending
    twin, so in-place ops on its instances record (``nn.Parameter``: optimizer updates).
    ``unflatten`` is cls's pytree unflatten (the twin flattens as cls does)."""
    twin = type(cls.__name__, (cls,), {"__slots__": (), "__module__": cls.__module__,
                                       "__qualname__": cls.__qualname__,
                                       "__doc__": cls.__doc__,
                                       "_value": LazyTensor.__dict__["_value"],
                                       "device": LazyTensor.__dict__["device"]})
    jax.tree_util.register_pytree_node(twin, _flatten, unflatten)
    _LAZY_OF[cls], _PLAIN_OF[twin] = twin, cls
    return twin


def raw(t: Tensor) -> Any:
    """``t``'s array, or its :class:`LazyRef` while pending (no flush): for metadata and for
    moving a value between tensors."""
    return t._pending_or_value() if t._aliases else t._meta


def set_raw(t: Tensor, v: Any) -> bool:
    """Make ``v`` (an array or a :class:`LazyRef`) ``t``'s value without computing anything;
    False when ``t``'s class has no pending twin (the caller reads ``v``'s value instead)."""
    if v.__class__ is LazyRef:
        twin = _LAZY_OF.get(t.__class__)
        if twin is None:
            if t.__class__ not in _PLAIN_OF:
                return False
        else:
            t.__class__ = twin
    elif t.__class__ in _PLAIN_OF:
        t.__class__ = _PLAIN_OF[t.__class__]
    t._meta = v
    return True


def _new_lazy(ref: LazyRef) -> LazyTensor:
    """A new pending tensor (``tensor._wrap``'s fields, made a LazyTensor at once)."""
    t = _new(LazyTensor)
    t._meta = ref
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._version = 0
    t._global = None
    return t


_new = object.__new__


def host_to_device(x: Any) -> Any:
    """Host data as a device array: inside a compiled run the call's own transfer (the
    ``device_put`` of a traced value is the identity), in a node-by-node run a plain
    ``device_put`` (never a compile per shape: a transfer is not a computation)."""
    return jax.device_put(x)

_STATS = {"recorded": 0, "flushes": 0, "compiles": 0, "eager_flushes": 0}


def stats() -> dict[str, int]:
    """Counters: ops recorded, segments flushed, flushes that compiled, flushes that ran
    node by node (a structure's first sighting)."""
    return dict(_STATS)


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


_AVALS: dict[Any, Any] = {}


def _shaped(s: Any) -> Any:
    """``jax.eval_shape``'s result as the abstract value a LazyRef holds."""
    return jax.core.ShapedArray(s.shape, s.dtype, weak_type=getattr(s, "weak_type", False))


def _out_avals(f: Any, avals: tuple, dv: tuple) -> Any:
    """The abstract outputs of ``f`` on ``avals`` and dynamic values like ``dv`` (computed
    once per key, by ``jax.eval_shape``)."""
    if len(_AVALS) >= 4096:
        _AVALS.clear()
    structs = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
    shapes = _not_recording(jax.eval_shape, f, *structs, *dv)
    if getattr(f, "__name__", None) not in TRUSTED_OPS:
        _not_recording(f.lower, *structs, *dv)  # (its kernel is chosen now: see TRUSTED_OPS)
    out = tuple(map(_shaped, shapes if isinstance(shapes, (tuple, list)) else (shapes,)))
    _AVALS[(f, avals, *map(type, dv)) if dv else (f, avals)] = out
    return out


def _not_recording(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` with this thread's recording off: a trace that lazy mode runs (an op's
    abstract evaluation, a compiled backward's rules, a segment's compile) may run jflow ops
    on concrete constants (a rule's ``neg(lambd)``); they must run, not record into the
    segment being built — a later read would flush it halfway through a call."""
    local = _LOCAL
    was = local.active
    local.active = None
    try:
        return fn(*args)
    finally:
        local.active = was


def _flat_call(f: Any, na: int, avals: tuple) -> tuple[Any, Any, tuple]:
    """``f(a, b)`` (``a``: the first ``na`` values) as a jitted function of the values, flat,
    returning its result's leaves; the result's tree structure and abstract leaves."""
    structs = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
    out_leaves, out_def = jax.tree_util.tree_flatten(
        _not_recording(jax.eval_shape, f, structs[:na], structs[na:]))

    def flat(*xs: Any) -> list[Any]:
        return jax.tree_util.tree_leaves(f(list(xs[:na]), list(xs[na:])))
    return eager_jit(flat), out_def, tuple(map(_shaped, out_leaves))


def eager_jit(fn: Any) -> Any:
    """``jax.jit(fn)`` for one recorded node that stands for many eager ops (a backward, an
    optimizer step): run alone (a segment replayed node by node) it compiles with
    :data:`EAGER_ROUNDING`, as a segment does; traced into a segment's executable — which
    has the options, and a nested jit may not — its plain twin (``_jflow_nested``) is."""
    f = jax.jit(fn, compiler_options=EAGER_ROUNDING)
    f._jflow_nested = jax.jit(fn)
    return f


class _Failure:
    """A failed segment's outputs: reading one raises the error."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _NodeFailed(Exception):
    """Node ``node`` of a node-by-node replay raised ``cause``; ``outs``: the outputs of the
    nodes before it."""

    def __init__(self, node: int, outs: list[list[Any]], cause: BaseException) -> None:
        super().__init__(node)
        self.node, self.outs, self.cause = node, outs, cause


#: names of ops with a kernel that runs host code (python, ffi; kernels.registry adds them):
#: such a call can fail while the segment runs, so the line that recorded it is kept
HOST_OPS: set[str] = set()

#: names of ops whose calls need no lowering when they record: an unrestricted jflow kernel
#: (any dtype, no condition, every platform) and no device kernel written outside jflow
#: (kernels.registry keeps the set). A call of any other op — or of a value check's
#: reduction — on avals not seen before is lowered when it records, which selects its kernel
#: and traces it: "no kernel for these dtypes" (or none at all) and what a user's kernel
#: raises when traced (an attr it rejects) raise at the call, as eagerly (once per
#: executable and avals: the abstract values are cached)
TRUSTED_OPS: set[str] = set()

#: ``[fn]``: kernels.registry.take_host_error (installed by the registry, which imports this
#: module): the error a python kernel raised, behind JAX's runtime-error wrapper
HOST_ERROR: list[Any] = [None]

#: ``[bool]``: whether a recorded op keeps the user's call site (file, line) — what a failure
#: at run time is attributed to (``flow.config.set_lazy_call_sites``)
CALL_SITES = [True]
#: frames that are not the user's: jflow's own, its generated code, ``with`` machinery
_INTERNAL = (__file__.rsplit("/", 2)[0] + "/", "<jflow", contextlib.__file__)


def _call_site() -> tuple[str, int] | None:
    """The innermost frame outside jflow (the user's line that called the op)."""
    f = sys._getframe(1)
    while f is not None:
        if not f.f_code.co_filename.startswith(_INTERNAL):
            return f.f_code.co_filename, f.f_lineno
        f = f.f_back
    return None


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
        #: executable would compile too: see COMPILE_ON_SIGHTING)
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
                elif a.__class__ is _Failure:
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
        self.sites.append(_call_site() if HOST_OPS and CALL_SITES[0] and getattr(
            f, "__name__", None) in HOST_OPS else None)
        if single:
            r = LazyRef(out_avals[0], self, n, 0)
            self.refs.append((r,))
            out = _new_lazy(r)
        else:
            refs = tuple(LazyRef(a, self, n, i) for i, a in enumerate(out_avals))
            self.refs.append(refs)
            out = tuple(map(_new_lazy, refs))
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
            hit = _AVALS[key] = _flat_call(f, len(a), avals)
            self.new_shapes = True
        flat_f, out_def, out_avals = hit
        refs = self._add_flat(flat_f, wiring, out_avals)
        if not tensors:
            return refs
        return jax.tree_util.tree_unflatten(out_def, [*map(_new_lazy, refs)])

    def add_wired(self, f: Any, values: list, out_avals: tuple) -> tuple[LazyRef, ...]:
        """Record a call of jitted ``f`` on ``values`` (arrays, pending values, Python
        numbers) whose result avals are known (``out_avals``: a compiled backward's, from its
        template, jflow.autograd.lazy_backward); the pending values of its flat result."""
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
                elif x.__class__ is _Failure:
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
        self.sites.append(_call_site() if HOST_OPS and CALL_SITES[0] else None)
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
            self.sites[n] = _call_site()
        self.checks.append((n, list(self.refs[n]), check))  # (a list: its refs count as read)
        return True

    def flush(self) -> None:
        """Run the pending nodes, give every lazy value of the segment that is still referenced
        its array, and start empty."""
        if not self.nodes or self.flushing:
            return
        self.flushing = True
        try:
            _computing(self._run)
        finally:
            self.__init__()

    def _run(self) -> None:
        nodes, refs = self.nodes, self.refs
        if len(nodes) - self.n_host <= 1:  # (one op and host data: nothing to fuse, and a
            f = None                        # compile would cost what the op's executable did)
        else:
            # (input shapes are in the key: a shape seen once runs op by op, compiling nothing)
            live, last = _live(refs), _LAST_RUN[0]  # (one read: a tuple, replaced whole)
            # (a loop running one structure: compared with the last run's lists — mostly
            # identical objects — instead of building and hashing the key; only _compiled,
            # called here, evicts a key from the cache, and after another key ran ``last``
            # is that one's)
            if last[0] == nodes and last[1] == live and last[2] == self.in_avals:
                f = last[3]
            else:
                f = _compiled((tuple(nodes), live, tuple(self.in_avals)), self.new_shapes)
                _LAST_RUN[0] = (nodes, live, self.in_avals, f) if f is not None else _NO_RUN
        try:
            if f is None:
                _STATS["eager_flushes"] += 1
                for rs, vals in zip(refs, _replay(nodes, self.inputs, self.dvs)):
                    for r, v in zip(rs, vals):
                        r.array = v
            else:
                run, kept = f
                for (i, j), v in zip(kept, run(self.inputs, self.dvs)):
                    refs[i][j].array = v
        except _NodeFailed as e:
            self._fail(e.node, e.cause, e.outs)
        except Exception as e:  # noqa: BLE001  (the compiled run failed: find the node)
            try:
                _replay(nodes, self.inputs, self.dvs)
            except _NodeFailed as nf:
                self._fail(nf.node, nf.cause, nf.outs)
            self._fail(0, e, [])
        _STATS["flushes"] += 1
        _STATS["recorded"] += len(nodes)
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
            outs = _computing(_replay, nodes[:i + 1], inputs, dvs)
            for n, check_refs, check in list(checks):
                if n <= i:
                    node = n
                    check(*jax.device_get(outs[n][:len(check_refs)]))
        except _NodeFailed as e:
            raise _annotated(e.cause, e.node, nodes, sites, checks) from None
        except Exception as e:  # noqa: BLE001  (a value check's own error)
            raise _annotated(e, node, nodes, sites, checks) from None
        return outs[i][j]

    def _fail(self, node: int, cause: BaseException, outs: list[list[Any]] | None) -> None:
        """Node ``node`` failed with ``cause``: the nodes before it keep their values (from
        ``outs`` when given), it and every later node's values raise; raise ``cause``, with
        the op's recording line in a note."""
        cause = _annotated(cause, node, self.nodes, self.sites, self.checks)
        if outs is not None:
            for rs, vals in zip(self.refs, outs):
                for r, v in zip(rs, vals):
                    r.array = v
        failed = _Failure(cause)
        for rs in self.refs[node:]:
            for r in rs:
                r.array = failed
        raise cause.with_traceback(None) from None


def _annotated(cause: BaseException, node: int, nodes: list, sites: list, checks: list
               ) -> BaseException:
    """``cause`` (a python kernel's own error for JAX's wrapper of it) with a note naming the
    failing node ``node`` and the user's line that recorded it."""
    if isinstance(cause, jax.errors.JaxRuntimeError) and HOST_ERROR[0] is not None:
        cause = HOST_ERROR[0]() or cause  # (a python kernel's own error)
    drop_traceback_note(cause)  # (JAX's footer announces an exception that never follows)
    if node < len(nodes):
        site = sites[node]
        what = "value check" if any(n == node for n, _, _ in checks) else \
            f"op '{getattr(nodes[node][0], '__name__', '?')}'"
        cause.add_note(f"(lazy mode: raised when the pending ops ran; the failing {what} "
                       + (f"was recorded at {site[0]}:{site[1]})" if site else
                          "has no recorded line)"))
    return cause


def _computing(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` computing values on this thread, recording off: under
    ``jax.ensure_compile_time_eval`` while a trace is active (a read inside ``flow.jit`` /
    ``jax.jit`` must compute, not stage into the trace)."""
    if _TRACE_CLEAN is not None and _TRACE_CLEAN():
        return _not_recording(fn, *args)
    with jax.ensure_compile_time_eval():
        return _not_recording(fn, *args)


def _live(refs: list[tuple[LazyRef, ...]]) -> tuple[tuple[bool, ...], ...]:
    """Per node, which outputs anything outside the segment still references (a tensor, the
    tape, a reader): only those come back from the run, so XLA fuses the rest away and an
    unread intermediate costs no output buffer. A value nothing references can never be read
    again (CPython frees it), so this is exact, not a guess."""
    out = []
    keep = out.append
    for rs in refs:
        if len(rs) == 1:  # (most ops: no inner loop)
            keep(_KEPT if _refcount(rs[0]) > _BASE1 else _DROPPED)
        else:
            keep(tuple([_refcount(r) > _BASE for r in rs]))
    return tuple(out)


_KEPT, _DROPPED = (True,), (False,)
_refcount = sys.getrefcount
_BASE = _BASE1 = 0


def _calibrate() -> None:
    """The reference counts :func:`_live` sees for a value only the segment holds (they
    depend on the interpreter's frame layout, so they are measured, not assumed)."""
    global _BASE, _BASE1

    def dead(n: int) -> bool:  # (n fresh values held by their tuple only)
        return not any(_live([tuple(object.__new__(LazyRef) for _ in range(n))])[0])
    for _BASE1 in range(16):  # noqa: B007  (the global is the loop variable)
        if dead(1):
            break
    for _BASE in range(16):  # noqa: B007
        if dead(2):
            break
    if not (dead(1) and dead(2)):
        raise RuntimeError("lazy_mode: cannot calibrate reference counts")


def _replay(nodes: list, inputs: list, dvs: list, nested: bool = False) -> list[list[Any]]:
    """Every node's outputs, computed in order (eagerly, or — ``nested`` — traced into a
    segment's executable: see :func:`eager_jit`); a failing node raises
    :class:`_NodeFailed`."""
    outs: list[list[Any]] = []
    pos = 0
    for k, (f, wiring, ndv, _) in enumerate(nodes):
        if nested:
            f = getattr(f, "_jflow_nested", f)
        args = [inputs[w] if w.__class__ is int else outs[w[0]][w[1]] for w in wiring]
        if ndv:
            args += dvs[pos:pos + ndv]
            pos += ndv
        try:
            r = f(*args)
        except Exception as e:  # noqa: BLE001
            raise _NodeFailed(k, outs, e) from e
        outs.append(list(r) if isinstance(r, (tuple, list)) else [r])
    return outs


#: segment structure -> its jitted replay (LRU); structures seen once -> None
_CACHE: OrderedDict[tuple, Any] = OrderedDict()


def _compiled(key: tuple, new_shapes: bool) -> Any:
    """The jitted replay of a segment key (returning its live outputs, flat) and where
    they go (``(node, output)`` each), or None when it runs node by node (see
    :data:`COMPILE_ON_SIGHTING`)."""
    hit = _CACHE.get(key, _FIRST)
    if hit is _FIRST and (COMPILE_ON_SIGHTING == 2 or (
            COMPILE_ON_SIGHTING == "adaptive" and not new_shapes)):
        hit = _CACHE[key] = None
    elif hit is None or hit is _FIRST:
        first = hit is _FIRST
        structure, live, _ = key

        def run(inputs: list, dvs: list) -> list[Any]:
            outs = _replay(structure, inputs, dvs, nested=True)
            return [v for vals, ls in zip(outs, live) for v, keep in zip(vals, ls) if keep]
        kept = tuple((i, j) for i, ls in enumerate(live) for j, keep in enumerate(ls) if keep)
        hit = _CACHE[key] = (jax.jit(run, compiler_options=EAGER_ROUNDING), kept)
        _STATS["compiles"] += 1
        _note_compile(key, first)
    if hit is None or hit is not _MRU[0]:  # (a loop hitting one key: no reordering)
        _MRU[0] = hit
        _CACHE[key] = _CACHE.pop(key, hit)  # (to the end; another thread may have evicted it)
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return hit


_MRU: list[Any] = [None]  # the executable most recently returned (its key is last in _CACHE)
#: ``[(nodes, live, in_avals, executable)]`` of the last compiled run (its lists are the
#: flushed segment's own: a segment starts new lists after a flush, so they never change)
_NO_RUN = (None, None, None, None)
_LAST_RUN: list[Any] = [_NO_RUN]


#: why the recent compiles happened (newest last; :func:`recompile_reasons`)
_REASONS: deque[str] = deque(maxlen=32)
#: ``[bool]``: also warn (``RecompileWarning``) at each compile (``flow.lazy(explain=True)``)
EXPLAIN = [False]
_LAST: list[Any] = [None]


def recompile_reasons() -> list[str]:
    """Why lazy mode compiled its recent segments (newest last, at most 32)."""
    return list(_REASONS)


def _name(f: Any) -> str:
    return getattr(f, "__name__", "?")


def _note_compile(key: tuple, first: bool) -> None:
    last, _LAST[0] = _LAST[0], key
    reason = _describe_change(last, key, first)
    _REASONS.append(reason)
    if EXPLAIN[0]:
        site = _call_site() or ("<unknown>", 0)  # (the user's line that made it run)
        warnings.warn_explicit(f"flow.lazy: compiling a segment because {reason}",
                               RecompileWarning, site[0], site[1])


def _describe_change(last: tuple | None, key: tuple, first: bool = False) -> str:
    """What makes ``key`` (a segment's structure, kept outputs, input shapes) new, compared
    with the segment compiled before it; ``first``: compiled on its first sighting."""
    nodes, live, avals = key
    ops = [_name(n[0]) for n in nodes]
    more = ", ..." if len(ops) > 6 else ""
    what = f"its structure ({len(nodes)} ops: {', '.join(ops[:6])}{more})"
    head = (f"{what} is new and has ops on new shapes (run one by one, each would compile)"
            if first else f"{what} ran a second time (the first ran op by op)")
    if last is None:
        return head
    lnodes, llive, lavals = last
    if nodes == lnodes and live == llive:
        diff = [f"input {i}: {_aval_str(b)} (was {_aval_str(a)})"
                for i, (a, b) in enumerate(zip(lavals, avals)) if a != b]
        if len(avals) != len(lavals):
            diff.append(f"{len(avals)} inputs (was {len(lavals)})")
        return f"{head}; the last compiled segment had the same ops but " + "; ".join(diff[:4])
    if nodes == lnodes:
        return (f"{head}; the last compiled segment had the same ops but other results "
                f"still referenced (the results a run returns are part of its key)")
    for k, (a, b) in enumerate(zip(lnodes, nodes)):
        if a != b:
            what = (f"op {k} is '{_name(b[0])}' (was '{_name(a[0])}')" if a[0] is not b[0]
                    else f"op {k} ('{_name(b[0])}') takes other inputs or attributes")
            return f"{head}; differs from the last compiled segment: {what}"
    return (f"{head}; differs from the last compiled segment: {len(nodes)} ops "
            f"(was {len(lnodes)})")


def _aval_str(a: Any) -> str:
    shape, dtype = (a.shape, a.dtype) if hasattr(a, "shape") else a
    return f"{np.dtype(dtype).name}{list(shape)}"


_FIRST = object()
_TRACE_CLEAN = trace_state_clean_fn()


class _Local(threading.local):
    """Per thread: ``segment`` (its pending calls), ``active`` (it, while the thread is
    lazy). Class defaults: a read never misses (see grad_mode._State)."""

    segment: Segment | None = None
    active: Segment | None = None


_LOCAL = _Local()


def segment() -> Segment:
    """This thread's pending segment."""
    s = _LOCAL.segment
    if s is None:
        s = _LOCAL.segment = Segment()
    return s


def active() -> Segment | None:
    """This thread's segment while it is in lazy mode, else None."""
    return _LOCAL.active


def flush() -> None:
    """Run this thread's pending ops."""
    s = _LOCAL.segment
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


_calibrate()


#: sharded executables traced abstractly once (:func:`add_global`; bounded)
_TRACED_GLOBAL: set[Any] = set()


def add_global(fn: Any, ins: list, dyn: tuple, single: bool, plc: Any, nds: tuple,
               out_avals: Any, trace: Any) -> Any:
    """Record a global op's sharded executable (jflow.sharding.execute) when this thread is
    lazy: the pending segment then runs as one ``jax.jit`` over the ops' sharded programs.
    NotImplemented when not lazy, traced, or the placement spans processes (there each
    executable is waited for, to keep collectives in step: see Placement.wait_if_shared).
    ``trace()``: trace ``fn`` abstractly on its inputs' shardings — run on an executable's
    first recording, so what its trace rejects (a bad SBP signature of a user op) raises at
    the call, as eagerly, not when the segment runs."""
    seg = _LOCAL.active
    if seg is None or seg.flushing or len(
            {d.process_index for d in plc.mesh.devices.flat}) > 1:
        return NotImplemented
    if fn not in _TRACED_GLOBAL:
        _not_recording(trace)
        if len(_TRACED_GLOBAL) >= 4096:
            _TRACED_GLOBAL.clear()
        _TRACED_GLOBAL.add(fn)
    return seg.add(fn, tuple(ins), tuple(dyn), single,
                   (plc, nds, tuple(jax.core.ShapedArray(a.shape, a.dtype) for a in out_avals)))


def host_data(host: np.ndarray) -> LazyRef | None:
    """``tensor.HOST_DATA``'s hook: a pending value for a new tensor's host data when this
    thread is lazy, else None."""
    seg = _LOCAL.active
    if seg is None or seg.flushing:
        return None
    return seg.add_host(host)


#: view steps replayed on host data (numpy), by kind: what a value check of a view of a new
#: tensor's host data needs (a reshape of a batch of targets, a squeeze of token ids)
_HOST_STEPS = {
    "reshape": lambda a, shape: a.reshape(shape),
    "transpose": lambda a, perm: a.transpose(perm),
    "squeeze": lambda a, axes: np.squeeze(a, axis=axes),
    "unsqueeze": lambda a, dim: np.expand_dims(a, dim),
    "expand": lambda a, shape: np.broadcast_to(a, shape),
}


def host_value(t: Tensor) -> np.ndarray | None:
    """``t``'s value without running anything, when it is a new tensor's host data pending on
    this thread's segment (``flow.tensor(ndarray)`` in lazy mode) or a reshaping view of one;
    else None."""
    seg = _LOCAL.active
    if seg is None:
        return None
    steps: tuple = ()
    if t._aliases:
        m = t._view
        steps = m.steps
        if any(kind not in _HOST_STEPS for kind, _ in steps):
            return None
        t = m.base
    v = t._meta
    if v.__class__ is not LazyRef or v.array is not None or v.segment is not seg:
        return None
    f, wiring, _, _ = seg.nodes[v.wire[0]]
    if f is not host_to_device:
        return None
    a = seg.inputs[wiring[0]]
    for kind, args in steps:
        a = _HOST_STEPS[kind](a, *args)
    return a


def defer_check(reduce: Any, ins: tuple, check: Any, host: Any = None) -> bool:
    """A functor's value check without a flush: in lazy mode, when an input is pending, record
    ``reduce(*ins)`` and run ``check(*its values)`` when the segment runs (see
    :meth:`Segment.add_check`); True. False when the values are at hand or lazy mode is off:
    the caller checks now, as eagerly. ``host``: ``reduce`` on NumPy arrays. With it, inputs
    that are all new tensors' host data (a batch of targets or token ids from a data
    loader, or a reshape of one) are checked now, on their host copies, as eagerly: the
    error is raised at the call, and the run has no check to wait for (a deferred check
    reads its values back as soon as the segment ran, so it ends the overlap of the next
    step's Python with this one's computation)."""
    seg = _LOCAL.active
    if seg is None:
        return False
    for t in ins:
        v = t._meta
        if v.__class__ is LazyRef and v.array is None and v.segment is seg:
            break
    else:
        return False
    if host is not None:
        arrays = [host_value(t) for t in ins]
        if all(a is not None for a in arrays):
            check(*host(*arrays))
            return True
    return seg.add_check(reduce, ins, check)


def discard_checks_on_error(fn: Any) -> Any:
    """``fn`` (a functor that may defer a value check, :func:`defer_check`) whose deferred
    checks are dropped when it raises after deferring them (a shape error found after the
    bounds check was recorded): its op was never recorded, so its check must not fire at the
    next run, long after the call already raised. Costs one frame per call."""
    local = _LOCAL

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        seg = local.active
        if seg is None:
            return fn(*args, **kwargs)
        checks = seg.checks
        n = len(checks)
        try:
            return fn(*args, **kwargs)
        except BaseException:
            if seg.checks is checks:  # (not flushed in between: these are the call's)
                del checks[n:]
            raise
    return call
