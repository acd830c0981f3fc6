"""An optimizer step in lazy mode, recorded as ONE node (the update of every parameter fused
into the segment that computed the gradients).

Optimizers are written as eager code: per parameter a few in-place ops on the parameter and its
state tensors. Recorded op by op that is ~10 small nodes per parameter, each paying the
functor's Python. Instead, the step of an optimizer whose *structure* repeats (which
parameters have gradients, the state entries, shapes and dtypes, the hyper-parameters) is
traced once into a pure function of the tensors' values and the learning rates (the step's own
code runs, on tracers, under ``no_grad``), and later steps record one call of it.

What the trace may not do — else the step keeps running op by op, always correct:
create or replace state entries (a first step that makes moment buffers), change a non-tensor
state value or hyper-parameter (a Python step counter), read a value (``if loss > x``), touch
global tensors or use a closure. An optimizer's first structure is traced at its first step,
its state made first where that changes nothing (:func:`_make_first_state`, with recording
paused: the arrays later steps see, no ``full`` program per shape); a later structure on its
*second* sighting (a one-off one records op by op); each optimizer keeps its last
:data:`KEEP` structures. (The lazy benchmark models' first 3 steps, cold: GPT 25 compiles,
4.0 s -> 4, 2.7 s; ResNet 39, 10.8 s -> 4, 5.4 s.)

The learning rate is an input, so a scheduler that changes it every step does not retrace:
a float64 :class:`~jflow.functional.wrapped_number.WrappedNumber`, which promotes as the
Python float it stands for (the traced step rounds as the op-by-op one in bfloat16).
Version counters of the updated tensors move as the eager step moves them.

Eager code uses the same traced function: outside lazy mode, an optimizer's first step
structure from its first step (the state made beforehand), any later one once seen
:data:`EAGER_AFTER` times, runs as one ``jax.jit`` call (:func:`run_step_eagerly`) — one
executable for every parameter's update instead of one or more dispatches per parameter
(measured on the GPT benchmark's 53 parameters: AdamW's step 4.3 -> 2.1 ms). By default
not for an optimizer whose update is one op per parameter already (Adam, AdamW: little
faster fused, much larger to compile; :func:`fuses`);
``flow.config.set_fused_optimizer_step(True)`` fuses every optimizer's, ``(False)`` none.
The eager executable *donates* the parameters and state it updates (:func:`_eager_jit`):
the update writes into their buffers instead of holding every old and new value at once;
a step whose values are read elsewhere too (another tensor sharing an array, a graph kept
for a second backward) runs a second, non-donating executable (:func:`_exclusive`).

A new optimizer's first fused step is compiled *ahead*, while the first backward that reaches
its parameters compiles: the engine calls :func:`compile_ahead` with the leaves that
backward is about to give gradients, the step is traced and lowered for the structure it
will then have (the leaves' gradients of their own avals, the state
:func:`_make_first_state` will make), and XLA compiles it on a worker thread (XLA releases
the GIL; on 2 cores the backward's compile and the update's run side by side). The state
and gradients the trace needed are removed again: PyTorch's state rules hold. ``step()``
uses that executable, and that state, when the structure it finds is the one compiled for,
else goes on as without them (measured: see :data:`_AHEAD`).
"""

from __future__ import annotations

import sys
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import jax
import numpy as np
from jax.core import Tracer
from jax.extend.core import jaxpr_as_fun

from .. import _malloc_trim
from .._jax_setup import EAGER_ROUNDING
from ..autograd import engine as _engine
from ..autograd.grad_mode import no_grad
from ..dispatch import _WATCH
from ..functional.wrapped_number import wrapped_number
from ..host_transfer import queued_transfer
from ..lazy_values import _LAZY_OF, _PLAIN_OF, LOCAL, raw, set_raw
from ..tensor import Tensor, _wrap
from . import segment as _segment

__all__ = ["record_step", "run_step_eagerly", "set_fused_eager", "traced_steps", "lr_value",
           "note_new", "compile_ahead", "fuses", "KEEP", "EAGER_AFTER"]

#: traced step structures kept per optimizer (least recently used dropped beyond it)
KEEP = 8

_NOT_HYPER = ("params", "lr", "initial_lr")

#: optimizer -> its step structures (key -> False: seen once, a _Traced, or _UNTRACEABLE);
#: kept beside the optimizer, not in it (its copies and pickles stay plain), and dropped with
#: it (a traced function holds a jaxpr, not the optimizer)
_STEPS: weakref.WeakKeyDictionary[Any, OrderedDict] = weakref.WeakKeyDictionary()
_UNTRACEABLE = object()  # a structure whose step cannot be traced: it runs op by op


class _Traced:
    """A step structure's pure function and what it writes."""

    __slots__ = ("fn", "changed", "bumps", "donate", "kept", "jitted", "plain", "ahead")

    def __init__(self, fn: Any, changed: tuple[int, ...], bumps: tuple[int, ...],
                 donate: tuple[int, ...], n: int) -> None:
        self.fn, self.changed, self.bumps = fn, changed, bumps
        #: the inputs an eager run gives up to the outputs (a changed tensor whose new value
        #: has its old aval), and the others
        self.donate = donate
        given = set(donate)
        self.kept = tuple(i for i in range(n) if i not in given)
        #: the eager forms, made at the first eager run (:func:`_eager_jit`): ``jitted``
        #: donates, ``plain`` (for a step whose donated values are held elsewhere) does not
        self.jitted: Any = None
        self.plain: Any = None
        #: the donating executable compiled ahead (a Future, then the Compiled), or None
        self.ahead: Any = None


#: (learning rate, dtype) -> its device array (bounded)
_LRS: dict[tuple[float, Any], Any] = {}


def lr_value(lr: float, dtype: Any) -> Any:
    """A learning rate as a step's input: always a device array, cached per (value, dtype).
    Always an array, never host data: an executable called with host data for one step and
    a device array for the next misses jit's fast path, and with its lowering released
    (jflow.executable_budget) compiles again -- once per optimizer-update shape eagerly, the
    whole step in lazy mode. A scheduler's new value every step costs one queued transfer
    (``host_transfer.queued_transfer``, ~10 us), not a ``device_put`` that waits."""
    key = (lr, dtype)
    hit = _LRS.get(key)
    if hit is None:
        if len(_LRS) >= 64:
            _LRS.clear()
        hit = _LRS[key] = queued_transfer(np.asarray(lr, dtype))
    return hit


def _gather(opt: Any) -> tuple[list[Tensor], tuple, list[Any]] | None:
    """The tensors one step reads (parameters with gradients, the gradients, their state
    tensors), the structure key and the learning rates; None when the step cannot be
    recorded as one node."""
    tensors: list[Tensor] = []
    parts: list[Any] = [opt.__class__.step]
    lrs: list[Any] = []
    state = opt.state
    for group in opt.param_groups:
        lr = group["lr"]
        if isinstance(lr, Tensor) or not isinstance(lr, (float, int)):
            return None
        params = group["params"]
        if not params:
            return None
        parts.append(tuple([(k, v) for k, v in group.items() if k not in _NOT_HYPER]))
        for p in params:
            g = p._grad
            if g is None:
                parts.append(None)
                continue
            s = state.get(p)
            entries = []
            if s:
                for k, v in s.items():
                    if isinstance(v, Tensor):
                        tensors.append(v)
                        entries.append((k, v._meta.aval))
                    else:
                        entries.append((k, v))
            tensors.append(p)
            tensors.append(g)
            parts.append((p._meta.aval, g._meta.aval, tuple(entries)))
        lrs.append(lr_value(lr, _F64))  # (a Python float: float64, WrappedNumber in the trace)
    for t in tensors:
        if t._global is not None or t._aliases or t.grad_fn is not None or (
                t.__class__ not in _LAZY_OF and t.__class__ not in _PLAIN_OF) or \
                isinstance(t._meta, Tracer):  # (flow.jit / nn.Graph tracing the step)
            return None
    return tensors, tuple(parts), lrs


_F64 = np.dtype(np.float64)


def _snapshot(opt: Any) -> tuple:
    """What the trace must leave as it found: state entries (identities and non-tensor
    values) and the groups' hyper-parameters."""
    return (tuple((id(p), tuple((k, id(v) if isinstance(v, Tensor) else v)
                                for k, v in s.items()))
                  for p, s in opt.state.items()),
            tuple(tuple((k, v) for k, v in g.items() if k not in ("params", "lr"))
                  for g in opt.param_groups))


def _trace(opt: Any, step: Any, tensors: list[Tensor], lrs: list[Any]) -> _Traced | None:
    """Run ``step`` once on tracers, as a pure function of the tensors' values and the
    learning rates; None when it cannot be (see the module docstring). Everything it touched
    is restored."""
    before = [(t, t.__class__, t._meta, t._version) for t in tensors]
    groups = opt.param_groups
    old_lrs = [g["lr"] for g in groups]
    snap = _snapshot(opt)
    # (the state as it was: a step that creates entries — moments after ``state.clear()`` —
    # must not leave them holding the trace's tracers)
    state_before = [(p, s, dict(s)) for p, s in opt.state.items()]
    record: dict[str, Any] = {}

    def pure(vals: list[Any], lr_vals: list[Any]) -> list[Any]:
        for t, v in zip(tensors, vals):
            t._meta = v
        for g, lr in zip(groups, lr_vals):
            g["lr"] = wrapped_number(lr)  # (promoted as the Python float it stands for)
        with no_grad():
            step(opt)
        now = [t._meta for t in tensors]
        changed = tuple(i for i, (a, b) in enumerate(zip(now, vals)) if a is not b)
        record["changed"] = changed
        record["donate"] = tuple(i for i in changed if now[i].shape == vals[i].shape
                                 and now[i].dtype == vals[i].dtype)
        record["bumps"] = tuple(t._version - b[3] for t, b in zip(tensors, before))
        return [now[i] for i in changed]

    local = LOCAL
    seg = local.active
    local.active = None  # (the trace's ops run on tracers: nothing records)
    try:
        structs = [jax.ShapeDtypeStruct(v.shape, v.dtype) for _, _, v, _ in before]
        lr_structs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in lrs]
        closed = jax.make_jaxpr(pure)(structs, lr_structs)
        ok = _snapshot(opt) == snap
    except Exception:  # noqa: BLE001  (a step that reads values, etc.: it runs op by op)
        ok = False
    finally:
        local.active = seg
        for (t, cls, v, ver) in before:
            t.__class__ = cls
            t._meta = v
            t._version = ver
        for g, lr in zip(groups, old_lrs):
            g["lr"] = lr
        known = {id(p) for p, _, _ in state_before}
        for p in [p for p in opt.state if id(p) not in known]:
            del opt.state[p]
        for p, st, items in state_before:
            st.clear()
            st.update(items)
            opt.state[p] = st
    if not ok or "changed" not in record:
        return None
    flat = jaxpr_as_fun(closed)

    def fn(vals: list[Any], lr_vals: list[Any]) -> list[Any]:
        return flat(*vals, *lr_vals)
    return _Traced(fn, record["changed"], record["bumps"], record["donate"], len(tensors))


def traced_steps(opt: Any) -> int:
    """How many step structures of ``opt`` are traced into one node (for tests, tuning)."""
    return sum(isinstance(v, _Traced) for v in _STEPS.get(opt, {}).values())


def _lookup(opt: Any, step: Any, got: tuple, trace_at: int) -> _Traced | None:
    """The traced step of ``got``'s structure, traced at its ``trace_at``-th sighting; None
    before that, or when it cannot be traced."""
    tensors, key, lrs = got
    cache = _STEPS.get(opt)
    if cache is None:
        cache = _STEPS[opt] = OrderedDict()
    try:
        hit = cache.get(key, 0)
    except TypeError:  # an unhashable hyper-parameter
        return None
    if hit.__class__ is int:  # sightings so far: plain code until the trace_at-th
        hit = hit + 1
        if hit >= trace_at:
            hit = _trace(opt, step, tensors, lrs) or _UNTRACEABLE
        cache[key] = hit
    cache.move_to_end(key)
    while len(cache) > KEEP:
        cache.popitem(last=False)
    return hit if hit.__class__ is _Traced else None


def record_step(opt: Any, step: Any) -> bool:
    """Record ``step(opt)`` as one node of this thread's pending segment; False when it must
    run as plain code (a later structure's first sighting, or a step that cannot be traced)."""
    seg = _segment.active()
    if seg is None:
        return False
    first = _first_step(opt)  # (the optimizer's first structure: traced at once, as eagerly)
    got = _gather(opt)
    if got is None:
        return False
    hit = _lookup(opt, step, got, 1 if first else 2)
    if hit is None:
        return False
    tensors, _, lrs = got
    outs = seg.add_lists(hit.fn, [raw(t) for t in tensors], lrs, tensors=False)
    for i, o in zip(hit.changed, outs):
        set_raw(tensors[i], o)
    for t, b in zip(tensors, hit.bumps):
        if b:
            t._version += b
    return True


#: sightings of a step structure before an eager ``step()`` runs it as one executable, for
#: every structure but an optimizer's first (its state made first: :func:`_make_first_state`),
#: which runs fused from step 1 -- a training loop's one executable costs less to compile than
#: an update per parameter shape; a loop whose structure changes every step (a different
#: subset of parameters with gradients) does not compile a program per step
EAGER_AFTER = 3

#: whether eager steps run fused (flow.config.set_fused_optimizer_step): True always, False
#: never, None (default) where it pays -- see :func:`fuses`
EAGER: list[bool | None] = [None]
_F16 = np.dtype(np.float16)


def set_fused_eager(flag: bool | None) -> bool | None:
    """Whether an eager ``optimizer.step()`` whose structure repeats runs as one executable:
    True always, False never (op by op, every step), None (default) where it pays
    (:func:`fuses`); returns the old setting."""
    if flag is not None and not isinstance(flag, bool):
        raise TypeError(f"flow.config.set_fused_optimizer_step: flag must be a bool or None, "
                        f"got {type(flag).__name__}")
    old, EAGER[0] = EAGER[0], flag
    return old


def fuses(opt: Any) -> bool:
    """Whether ``opt``'s eager steps run fused. By default (None) every optimizer's does
    but one whose update is already one op per parameter (``Optimizer._one_op_per_parameter``:
    Adam / AdamW's ``adam_update``), where the whole step as one program buys little and
    costs much. Measured on benchmarks/real_models.py's GPT (53 parameters, 2026-12-05's
    host): AdamW's fused program of 318 fusions took +58 MiB to compile, and the first three
    eager steps' peak RSS grew 126-130 MiB cold / 86-88 warm with it against 72-74 / 68-71
    without (PyTorch: 46-49), for a step 88.6 against 100.6 ms (interleaved in one process;
    the update alone, benchmarks/optimizer_steps.py: 5.2 against 10.9 ms, PyTorch's 10.4).
    SGD with momentum (80.9 against 96.8 ms) and RMSprop (83.0 against 117.3) gain more
    from theirs, which cost 12 and 37 MiB more cold."""
    mode = EAGER[0]
    return mode if mode is not None else not opt._one_op_per_parameter()


def _make_first_state(opt: Any) -> None:
    """Create now, for each parameter with a gradient and no state, the state its first
    update would create (``Optimizer._initial_state``: same values, same updates; PyTorch's
    rule kept, no state for a parameter without a gradient), so the first step is traceable:
    it then compiles one program instead of one per parameter shape (the ResNet's cold eager
    start: 17 adam_update programs, 1.50 s, against one of 0.97 s)."""
    opt._make_initial_state(lambda p: p._grad is not None)


#: optimizers made and not yet stepped: a backward reaching their parameters compiles their
#: first fused step ahead (:func:`compile_ahead`)
_NEW: weakref.WeakSet = weakref.WeakSet()

#: optimizer -> (its first step's structure key, the traced step with its compile under way,
#: the state made for it: the step's own when the structure is the one compiled for).
#: Measured on benchmarks/real_models.py's first eager step, 2 cores, fresh caches, one process
#: each, alternating: GPT 2.55 -> 2.17 s, ResNet 6.9 -> 6.0 s (one XLA compile already keeps
#: ~1.5 cores busy here: two side by side take 0.74 s against 0.84 s one after the other;
#: more cores gain more)
_AHEAD: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_POOL: list[Any] = [None]  # the worker thread's executor, made at the first compile ahead


def note_new(opt: Any) -> None:
    """(``Optimizer.__init__``) ``opt`` may have its first step compiled ahead."""
    _NEW.add(opt)


def compile_ahead(leaves: Sequence[Tensor]) -> None:
    """(The engine, before a whole-graph backward gives ``leaves`` gradients.) For each new
    optimizer with a parameter among them: trace and lower its first fused step for the
    structure it will then have, and start XLA's compile of it on the worker thread."""
    if not _NEW:
        return
    if EAGER[0] is False or _WATCH[0] is not None or _segment.active() is not None:
        return
    ids = {id(t) for t in leaves}
    for opt in list(_NEW):
        if opt in _STEPS:  # (stepped already: its first step is behind it)
            _NEW.discard(opt)
        elif any(id(p) in ids for g in opt.param_groups for p in g["params"]):
            _NEW.discard(opt)  # (one try per optimizer)
            if fuses(opt):
                _prepare_ahead(opt, ids)


def _prepare_ahead(opt: Any, ids: set[int]) -> None:
    step = getattr(type(opt).step, "__wrapped__", None)  # (the class's own step, unwrapped)
    if step is None:
        return
    fake = []  # parameters given a stand-in gradient: their own value (the same aval)
    for group in opt.param_groups:
        for p in group["params"]:
            if p._grad is None and id(p) in ids:
                p._grad = _wrap(p._meta)
                fake.append(p)
    state_before = dict(opt.state)
    try:
        _make_first_state(opt)
        got = _gather(opt)
        if got is None:
            return
        tensors, key, lrs = got
        hash(key)  # (an unhashable hyper-parameter: no cached step, nothing ahead)
        if any(t.__class__ not in _LAZY_OF or t._meta.dtype == _F16 for t in tensors):
            return
        traced = _trace(opt, step, tensors, lrs)
        if traced is None:
            return
        traced.jitted = _eager_jit(traced, True)
        lowered = traced.jitted.lower([tensors[i]._meta for i in traced.donate],
                                      [tensors[i]._meta for i in traced.kept], lrs)
    except Exception:  # noqa: BLE001  (nothing ahead: the step goes on as without it)
        return
    finally:
        for p in fake:
            p._grad = None
        made = {p: s for p, s in opt.state.items() if p not in state_before}
        opt.state.clear()  # (the state goes until the step: PyTorch makes it there)
        opt.state.update(state_before)
    _malloc_trim.before_large_compile(len(tensors))
    if _POOL[0] is None:
        _POOL[0] = ThreadPoolExecutor(1, thread_name_prefix="jflow-compile-ahead")
    traced.ahead = _POOL[0].submit(lowered.compile)
    _AHEAD[opt] = (key, traced, made)


def _install_ahead(opt: Any, key: tuple, traced: _Traced, made: dict) -> None:
    """(The first step.) Give the parameters the state made ahead where
    :func:`_make_first_state` would make theirs (a gradient, no state); keep it, and the
    traced step, when the step's structure is the one compiled ahead, else take it back."""
    state, added = opt.state, []
    for group in opt.param_groups:
        for p in group["params"]:
            s = made.get(p)
            if s is not None and p._grad is not None and not state.get(p):
                state[p] = s
                added.append(p)
    got = _gather(opt)
    try:  # (an unhashable hyper-parameter, or one with elementwise ==: never the same)
        same = got is not None and hash(got[1]) == hash(key) and bool(got[1] == key)
    except (TypeError, ValueError):
        same = False
    if same:
        _STEPS[opt][key] = traced
        return
    for p in added:
        del state[p]


def _first_step(opt: Any) -> bool:
    """Whether this is ``opt``'s first step (eager or recorded); if so, its state is made
    now (:func:`_make_first_state`; the state made ahead, with its executable, when the
    structure is theirs: :func:`_install_ahead`), with lazy recording paused: arrays, the
    kind later steps see, from host zeros (no ``full`` program per shape)."""
    if opt in _STEPS:
        return False
    _STEPS[opt] = OrderedDict()
    ahead = _AHEAD.pop(opt, None)
    if ahead is not None:
        _install_ahead(opt, *ahead)
    seg, LOCAL.active = LOCAL.active, None
    try:
        _make_first_state(opt)
    finally:
        LOCAL.active = seg
    return True


def _eager_jit(hit: _Traced, donating: bool) -> Any:
    """``hit``'s step as ``jax.jit`` of (donated values, kept values, learning rates), with
    the options of every eager op (bfloat16 rounded per op). Donating, the update writes
    into the old parameter and state buffers: without it XLA allocates every new value
    while every old one is live, and the step's peak holds the optimizer's state twice
    (AdamW fused on the GPT benchmark: its first three steps' peak RSS growth, warm,
    102-103 -> 86-88 MiB)."""
    fn, donate, kept, n = hit.fn, hit.donate, hit.kept, len(hit.donate) + len(hit.kept)

    def split(given: list[Any], rest: list[Any], lrs: list[Any]) -> list[Any]:
        vals: list[Any] = [None] * n
        for i, v in zip(donate, given):
            vals[i] = v
        for i, v in zip(kept, rest):
            vals[i] = v
        return fn(vals, lrs)
    return jax.jit(split, donate_argnums=(0,) if donating else (),
                   compiler_options=EAGER_ROUNDING)


def _refcounts(given: list[Any]) -> list[int]:
    return [sys.getrefcount(v) for v in given]


class _Holder:
    __slots__ = ("value",)  # (a tensor's one reference to its array)


def _baseline() -> int:
    """The reference count :func:`_refcounts` sees for an array only its tensor holds (the
    interpreter's own references differ between Python versions: measured, not assumed)."""
    h = _Holder()
    h.value = object()
    return _refcounts([h.value])[0]


_BASELINE = _baseline()


def _exclusive(given: list[Any]) -> bool:
    """Whether each array in ``given`` is held only by its tensor (and ``given``): then
    donating it deletes nothing anyone else reads (another tensor sharing the array, a
    graph kept for a second backward, the user's own reference to it)."""
    return all(c == _BASELINE for c in _refcounts(given))


def donatable(donated: Sequence[Any], kept: Sequence[Any]) -> list[Any] | None:
    """The arrays of the tensors ``donated`` then ``kept`` when an eager op may donate the
    first ones' (an optimizer's per-parameter update, ``optim.Adam``): every tensor plain,
    local and concrete (no view, global, pending lazy or traced value), no lazy segment
    recording on this thread, no watcher on dispatch, and each donated array held by its
    tensor alone (:func:`_exclusive`). None otherwise: the caller takes ``op.apply``."""
    if _WATCH[0] is not None or LOCAL.active is not None:
        return None
    for t in (*donated, *kept):
        if t.__class__ not in _LAZY_OF or t._global is not None or t._aliases or \
                not isinstance(t._meta, jax.Array) or isinstance(t._meta, Tracer):
            return None
    given = [t._meta for t in donated]  # (no other local may hold them: counted references)
    if not _exclusive(given):
        return None
    return given + [t._meta for t in kept]


def _run_ahead(hit: _Traced, given: list[Any], rest: list[Any], lrs: list[Any]) -> Any:
    """Call the executable compiled ahead; None when it cannot take these values (it then
    goes: ``hit.jitted`` compiles for them) or its compile failed."""
    exe = hit.ahead
    try:
        if exe.__class__ is Future:
            exe = hit.ahead = exe.result()
        return exe(given, rest, lrs)
    except Exception:  # noqa: BLE001  (other shardings, a failed compile: jit's own path)
        hit.ahead = None
        return None


def run_step_eagerly(opt: Any, step: Any) -> bool:
    """Run ``step(opt)`` (no lazy segment active) as ONE call of the structure's traced
    function, jitted: the update of every parameter in one executable instead of one or more
    dispatches per parameter, as PyTorch's ``foreach`` implementations batch theirs. False
    when it must run as plain code: fusion off, a watcher on dispatch (the profiler, a
    flow.jit trace), before :data:`EAGER_AFTER` sightings (but for the optimizer's first step),
    a pending lazy value, a float16
    tensor (XLA CPU computes a fused float16 chain without rounding each op's result: the
    update would differ from the ops' in the last bit), or a step that cannot be traced (see
    the module docstring)."""
    if _WATCH[0] is not None or not fuses(opt):
        return False
    first = _first_step(opt)  # (the optimizer's first structure: traced at once, EAGER_AFTER)
    got = _gather(opt)
    if got is None:
        return False
    tensors = got[0]
    for t in tensors:
        if t.__class__ not in _LAZY_OF:  # a pending lazy value (its twin class): plain code
            return False
        if t._meta.dtype == _F16:  # (XLA CPU keeps a fused float16 chain's intermediates
            return False           # in float32 whatever the options: not the ops' rounding)
    hit = _lookup(opt, step, got, 1 if first else EAGER_AFTER)
    if hit is None:
        return False
    given = [tensors[i]._meta for i in hit.donate]
    rest = [tensors[i]._meta for i in hit.kept]
    if _exclusive(given):
        outs = None if hit.ahead is None else _run_ahead(hit, given, rest, got[2])
        if outs is None:
            if hit.jitted is None:
                hit.jitted = _eager_jit(hit, True)
                _malloc_trim.before_large_compile(len(tensors))  # (its compile: at the call)
            outs = hit.jitted(given, rest, got[2])
    else:  # (a donated value read elsewhere too: the step's other executable, not donating)
        if hit.plain is None:
            hit.plain = _eager_jit(hit, False)
            _malloc_trim.before_large_compile(len(tensors))
        outs = hit.plain(given, rest, got[2])
    for i, o in zip(hit.changed, outs):
        tensors[i]._meta = o
    for t, b in zip(tensors, hit.bumps):
        if b:
            t._version += b
    return True


_engine.set_leaf_gradients_hook(compile_ahead)
