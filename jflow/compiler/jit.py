"""``flow.jit``: compile a Python function of tensors, modules and optimizers with ``jax.jit``.

The function runs once per *signature* (shapes, dtypes and structure of arguments and state,
module train/eval modes, optimizer hyper-parameters other than the learning rate) as a trace;
later calls with the same signature run the cached executable and write the new state (in-place
updates, ``.grad``, optimizer state, the generator's draw count) back into the Python objects,
so compiled and eager code can be mixed freely. The learning rate and the random generator are
*inputs* of the executable: schedulers and dropout don't recompile and are not frozen.

When a call needs a new trace, the reason (which argument or state changed, and how) is kept in
``fn.recompile_reasons``; with ``explain=True`` it is also emitted as a warning.
"""

from __future__ import annotations

import functools
import operator
import types
import warnings
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from itertools import repeat as _repeat
from typing import Any

import jax
import numpy as np

from ..autograd import Function, enable_grad, is_grad_enabled
from ..autograd.graph import watch_writes
from ..dispatch import watch_inputs
from ..nn.modules.module import Module, structure_version
from ..optim.optimizer import Optimizer
from ..sharding import plan as step_plan
from ..tensor import Tensor
from .state import (
    OPT_STATE_VERSION,
    Layout,
    StepState,
    TensorSlot,
    _static_sig,
    _WatchedDict,
    is_stateful,
    set_counter,
    tree_flatten_stateful,
    wrap_like,
)

__all__ = ["jit", "CompiledFunction", "RecompileWarning"]


class RecompileWarning(UserWarning):
    """A compiled function traced again; the message says why."""


def _arg_sig(leaf: Any) -> Any:
    if isinstance(leaf, (Module, Optimizer)):
        return (type(leaf).__name__, id(leaf))
    if isinstance(leaf, (jax.Array, np.ndarray)):
        return ("array", tuple(leaf.shape), np.dtype(leaf.dtype))
    return _static_sig(leaf)


def _describe_sig(s: Any) -> str:
    if isinstance(s, tuple) and s and s[0] == "T":
        aval, rg = s[1], s[2]
        return (f"Tensor{list(aval.shape)} {np.dtype(aval.dtype).name}"
                f"{' requires_grad' if rg else ''}")
    if isinstance(s, tuple) and s and s[0] == "array":
        return f"array{list(s[1])} {s[2].name}"
    return repr(s)


def explain_change(old: tuple, new: tuple) -> str:
    """A human-readable difference between two cache keys (see :meth:`CompiledFunction._key`)."""
    reasons = []
    for (name, a), (_, b) in zip(old, new):
        if a == b:
            continue
        if name == "arguments":
            (ta, la), (tb, lb) = a, b
            if ta != tb:
                reasons.append(f"the argument structure changed: {ta} -> {tb}")
            else:
                for i, (x, y) in enumerate(zip(la, lb)):
                    if x != y:
                        reasons.append(f"argument leaf {i} changed: {_describe_sig(x)} -> "
                                       f"{_describe_sig(y)}")
        elif name == "state tensors" and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b)):
                if x != y:
                    reasons.append(f"state tensor {i} changed: {_describe_sig(('T',) + x)} -> "
                                   f"{_describe_sig(('T',) + y)}")
        elif name == "grads":
            na, nb = sum(g is not None for g in a), sum(g is not None for g in b)
            reasons.append(f"the set of existing .grad tensors changed ({na} -> {nb} tensors "
                           f"with a gradient)")
        elif name == "optimizer hyper-parameters and state":
            reasons.append("optimizer hyper-parameters or state changed (e.g. the state the "
                           "first optimizer step creates)")
        elif name == "reachable modules and optimizers":
            reasons.append(describe_reach_change(a, b))
        elif name == "grad mode":
            reasons.append(f"grad mode changed: {'enabled' if a else 'disabled'} -> "
                           f"{'enabled' if b else 'disabled'}")
        else:
            reasons.append(f"{name} changed")
    return "; ".join(reasons) or "the signature changed"


class _CapturedWrites(Exception):
    """Raised out of a trace that wrote in place into tensors that were not state of the
    step (the call traces again with them as state)."""

    def __init__(self, tensors: list[Tensor]) -> None:
        super().__init__(f"{len(tensors)} captured tensor(s) written in place")
        self.tensors = tensors


_is = operator.is_
_VALUE = operator.attrgetter("_value")
_REQUIRES_GRAD = operator.attrgetter("_requires_grad")
_GLOBAL = operator.attrgetter("_global")
_GRAD = operator.attrgetter("_grad")
_TRAINING = operator.attrgetter("training")
#: values whose identity says all about them (a list could change in place)
_FROZEN = frozenset({int, float, bool, str, bytes, complex, type(None)})


def _frozen(v: Any) -> bool:
    t = type(v)
    return t in _FROZEN or (t is tuple and all(map(_frozen, v)))


@functools.cache
def _tensor_args_def(n: int) -> Any:
    """The tree structure of ``(args, {})`` for ``n`` tensor arguments."""
    return jax.tree_util.tree_structure((tuple(range(n)), {}))


class _Fast:
    """The last call's key with the stamps that prove a new call would compute it again
    (see :meth:`CompiledFunction._fast_state`). Everything is compared by identity, holding
    the objects, so an identity can't be reused by another object."""

    __slots__ = ("key", "entry", "state", "state_index", "n_args", "arg_avals", "arg_values",
                 "reach_checks", "modules", "optimizers", "grad_on", "structure", "groups",
                 "subs", "training", "checked", "values", "requires_grad", "globs", "grads",
                 "opt_states", "opt_version", "extra")


def _same(a: list, b: list) -> bool:
    """Whether two lists hold the same objects (``==`` would compare tensors elementwise)."""
    return len(a) == len(b) and all(map(_is, a, b))


#: ``[fn or None]``: the active profiler's ``fn(compiled, args, kwargs)`` (jflow.profiler)
PROFILER: list[Any] = [None]


def _attrs(modules: Any) -> dict[tuple[int, str], Any]:
    """Every plain attribute of ``modules`` (a snapshot taken before a trace)."""
    return {(id(m), k): v for m in modules for k, v in vars(m).items()}


_MISSING = object()


def _check_attrs(name: str, before: dict[tuple[int, str], Any], modules: Any) -> None:
    """A module attribute set inside the trace to a traced tensor would leak the tracer into
    the next call: put the old attribute back and say what to do instead."""
    leaked = [(m, k, before.get((id(m), k), _MISSING)) for m in modules
              for k, v in vars(m).items()
              if isinstance(v, Tensor) and isinstance(v._value, jax.core.Tracer)
              and before.get((id(m), k), _MISSING) is not v]
    if not leaked:
        return
    for m, k, prev in leaked:
        if prev is _MISSING:
            delattr(m, k)
        else:
            object.__setattr__(m, k, prev)
    where = ", ".join(f"{type(m).__name__}.{k}" for m, k, _ in leaked)
    raise RuntimeError(f"flow.jit({name}): the step stored a tensor it computed on a module "
                       f"attribute ({where}); that value exists only inside the compiled step. "
                       f"Build it outside the step and register it as a buffer "
                       f"(self.register_buffer(name, tensor)), or return it from the step.")


class _Entry:
    __slots__ = ("jitted", "layout", "bwd", "guards", "sbp", "planned")

    def __init__(self, jitted: Any) -> None:
        self.jitted = jitted
        self.layout: Layout | None = None
        self.bwd: Any = None
        #: ``[None | StepRecorder | StepPlan]``: the whole-step SBP choice (sharding/plan.py)
        #: the traces of this entry record or follow; ``planned``: whether it was made
        self.sbp: list[Any] = [None]
        self.planned = False
        #: tensors the trace read as constants: ``(weakref, value it had, description)``;
        #: None until the first call has traced
        self.guards: list[tuple[Any, Any, str]] | None = None


class _CompiledCall:
    """What the backward of one call needs: the call's inputs and objects."""

    __slots__ = ("owner", "entry", "inputs", "current", "diff_pos", "diff_globals", "outs")

    def __init__(self, owner: CompiledFunction, entry: _Entry, inputs: tuple, current: tuple,
                 diff: list[tuple[int, int, Tensor]], outs: list[Tensor]) -> None:
        self.owner, self.entry, self.inputs, self.current = owner, entry, inputs, current
        self.diff_pos = tuple((g, i) for g, i, _ in diff)   # (static for the vjp's jit)
        self.diff_globals = [t._global for _, _, t in diff]
        self.outs = outs


class _CompiledVJP(Function):
    """The tape node of a compiled call's differentiable outputs."""

    @staticmethod
    def forward(ctx: Any, call: _CompiledCall, *diff: Tensor) -> Any:
        ctx.call = call
        return tuple(wrap_like(o._value, o._global) for o in call.outs)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> Any:
        call = ctx.call
        inputs = call.inputs
        diff_vals = [(inputs[0] if g == 0 else inputs[1])[i] for g, i in call.diff_pos]
        owner = call.owner
        owner._current = call.current
        try:
            res = call.entry.bwd(inputs, diff_vals, call.diff_pos, [g._value for g in grads])
        finally:
            owner._current = None
        return (None, *(wrap_like(r, g) for r, g in zip(res, call.diff_globals)))


class CompiledFunction:
    """A function compiled by :func:`jit` (call it like the original).

    ``recompile_reasons``: one string per trace after the first, saying what changed.
    ``cache_size``: executables kept (least recently used beyond ``max_cache_size`` dropped).
    """

    def __init__(self, fn: Callable[..., Any], *, donate: bool = False, explain: bool = False,
                 max_cache_size: int = 16, track_grads: bool = True,
                 modules: list[Module] | None = None,
                 optimizers: list[Optimizer] | None = None, scan_closure: bool = True,
                 reach: tuple[Callable[..., Any], ...] | None = None,
                 after: Callable[[], None] | None = None, name: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"flow.jit: expected a function, got {type(fn).__name__}")
        if max_cache_size < 1:
            raise ValueError(f"flow.jit: max_cache_size must be >= 1, got {max_cache_size}")
        self.fn = fn
        self.donate = donate
        self.explain = explain
        self.max_cache_size = max_cache_size
        self.track_grads = track_grads
        self.name = name or getattr(fn, "__qualname__", repr(fn))
        self._modules = list(modules or [])
        self._optimizers = list(optimizers or [])
        #: where modules and optimizers are looked for on every call (see :func:`discover`)
        self._reach = (fn,) if reach is None and scan_closure else tuple(reach or ())
        #: captured tensors that changed after being traced as constants: now state inputs
        self._extra: dict[int, Any] = {}
        self._after = after
        self._cache: OrderedDict[tuple, _Entry] = OrderedDict()
        self._last_key: tuple | None = None
        self._current: Any = None
        self._gather_cache: list = []
        self._pending_reason: str | None = None
        self._owned: dict[int, int] = {}   # id(state tensor) -> id(the array a step gave it)
        #: the last call's key and its stamps (None: the next call computes the key)
        self._fast: _Fast | None = None
        #: the checks of the last reach walk (see :func:`reach_holds`)
        self._reach_checks: list | None = None
        self.recompile_reasons: list[str] = []
        self.trace_count = 0
        #: ``(recording, (plan, its cost, greedy cost))`` of the whole-step SBP plans adopted
        #: (the latest, as many as executables are kept)
        self.sbp_plans: deque[tuple[Any, Any]] = deque(maxlen=max(1, max_cache_size))
        functools.update_wrapper(self, fn, updated=())  # (a module's __dict__ is its own)

    @property
    def cache_size(self) -> int:
        return len(self._cache)

    def _reachable(self) -> tuple[tuple[str, Any], ...]:
        return discover(*self._reach) if self._reach else ()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        hook = PROFILER[0]
        if hook is None:
            return self._call(*args, **kwargs)
        return hook(self, args, kwargs)  # jflow.profiler: times the step, notes retraces

    def _call(self, *args: Any, **kwargs: Any) -> Any:
        fast = self._fast
        if fast is not None and not kwargs:
            state = self._fast_state(fast, args)
            if state is not None:
                entry, key = fast.entry, fast.key
                if entry.guards and self._promote_changed(entry):
                    self._fast = None
                    return self._call(*args, **kwargs)
                self._cache.move_to_end(key)
                return self._run(entry, key, state, list(args), fast)
            self._fast = None
        found = self._lookup(args, kwargs)
        if found is None:
            return self._call(*args, **kwargs)  # the changed tensors are inputs now: a new key
        entry, key, state, leaves, slow = found
        return self._run(entry, key, state, leaves, None, slow)

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        """JAX's ``Lowered`` for a call with these arguments, without running it (after the
        whole-step SBP choice): ``.as_text()``, ``.compile().as_text()`` show the HLO."""
        found = None
        while found is None:
            found = self._lookup(args, kwargs)
        entry, _, state, leaves, slow = found
        arrays = [x for x in leaves if isinstance(x, (jax.Array, np.ndarray))]
        inputs = (*state.inputs(self._owned if self.donate else None), arrays)
        self._current = (state, leaves, slow[0])
        try:
            self._plan_sbp(entry, state, inputs)
            return entry.jitted.lower(*inputs)
        finally:
            self._current = None

    def _lookup(self, args: tuple, kwargs: dict) -> tuple | None:
        """The cache entry for a call (made if new) and what running it needs; None when
        guarded constants changed (they were promoted to inputs: look up again)."""
        leaves, treedef = tree_flatten_stateful((args, kwargs))
        checks: list | None = [] if self._reach else None
        reach = discover(*self._reach, checks=checks) if self._reach else ()
        modules, optimizers = self._modules, self._optimizers
        if reach:
            have = {id(o) for o in (*modules, *optimizers)}
            for _, o in reach:
                if id(o) not in have:
                    have.add(id(o))
                    if isinstance(o, Module):
                        modules = [*modules, o]
                    else:
                        optimizers = [*optimizers, o]
        extra = [t for t in (r() for r in self._extra.values()) if t is not None]
        state = StepState.gather(leaves, modules, optimizers, self.track_grads,
                                 self._gather_cache, extra)
        grad_on = is_grad_enabled()
        key = (("arguments", (treedef, tuple(_arg_sig(x) for x in leaves))),
               ("reachable modules and optimizers", tuple((p, id(o)) for p, o in reach)),
               *state.key(), ("grad mode", grad_on))
        entry = self._cache.get(key)
        if entry is not None and entry.guards and self._promote_changed(entry):
            return None
        if entry is None:
            entry = self._new_entry(key)
        else:
            self._cache.move_to_end(key)
        self._reach_checks = checks
        return entry, key, state, leaves, (treedef, reach, modules, optimizers, extra, grad_on)

    def _run(self, entry: _Entry, key: tuple, state: StepState, leaves: list,
             fast: _Fast | None, slow: tuple | None = None) -> Any:
        """Run ``entry`` on ``state`` and write the results back (``fast``: the stamps to
        renew; ``slow``: what the full key was computed from, to arm the fast path)."""
        grad_on = is_grad_enabled()
        if fast is not None:
            treedef, arrays = _tensor_args_def(len(leaves)), []
            fast.values = None  # (a donated array must be referenced by its tensor alone)
        else:
            treedef = slow[0]
            arrays = [x for x in leaves if isinstance(x, (jax.Array, np.ndarray))]
        owned = self._owned if self.donate else None
        inputs = (*state.inputs(owned), arrays)
        self._current = (state, leaves, treedef)
        try:
            self._plan_sbp(entry, state, inputs)
            out, new_values, new_grads, opt_out, counter = entry.jitted(*inputs)
        except _CapturedWrites as e:  # they become state: trace again
            self._cache.pop(key, None)
            for t in e.tensors:
                k = id(t)
                self._extra[k] = weakref.ref(t, lambda _, k=k: self._extra.pop(k, None))
            self._pending_reason = (f"{len(e.tensors)} captured tensor(s) of shape(s) "
                                    f"{[list(t.shape) for t in e.tensors]} are written in place "
                                    f"by the step (they are state now)")
            self._fast = None
            args, kwargs = jax.tree_util.tree_unflatten(treedef, leaves)
            return self._call(*args, **kwargs)
        finally:
            self._current = None
        layout = entry.layout
        if entry.guards is None:
            self._set_guards(entry)
        state.write_back(layout, new_values, new_grads, opt_out, owned)
        set_counter(counter)
        if fast is not None:  # what the step itself rewrote: the stamps move with it
            self._stamp_written(fast, state)
        if self._after is not None:
            self._after()
        if slow is not None:
            self._arm(entry, key, state, leaves, slow)
        out_leaves, out_def = jax.tree_util.tree_flatten(out)
        out = jax.tree_util.tree_unflatten(out_def, [
            x if slot is None else wrap_like(x, slot.glob)
            for x, slot in zip(out_leaves, layout.out_slots)])
        if grad_on and not self.donate and any(layout.out_diff) and not layout.ran_backward:
            out = self._attach_backward(entry, out, inputs, (state, leaves, treedef))
        return out

    def _plan_sbp(self, entry: _Entry, state: StepState, inputs: tuple) -> None:
        """Once per entry whose step holds global tensors, choose the SBP signatures of the
        whole step (``sharding/plan.py``): trace once recording the greedy choices, solve,
        and when the plan moves fewer bytes, make the entry trace again following it (one
        XLA compile either way)."""
        if entry.planned:
            return
        entry.planned = True
        if not any(t._global is not None for t in state.tensors):
            return
        rec = step_plan.StepRecorder()
        entry.sbp[0] = rec
        try:
            entry.jitted.trace(*inputs)
        finally:
            entry.sbp[0] = None
        res = step_plan.solve(rec)
        rec.release()
        if res is None or res[1] >= res[2] - 1e-6 * max(1.0, res[2]):
            return
        entry.sbp[0] = step_plan.StepPlan([op[0] for op in rec.ops], res[0])
        pure = self._make_pure(entry.layout, entry.sbp)  # a new function: jax's trace
        entry.jitted = jax.jit(pure, donate_argnums=(1, 3) if self.donate else ())  # cache
        self.sbp_plans.append((rec, res))

    # -- the fast path: the last key, when stamps prove nothing structural changed ----------
    def _fast_state(self, fast: _Fast, args: tuple) -> StepState | None:
        """The state of a call that has the last call's key, or None when something may
        differ (then the key is computed and compared as usual). Every part of the key is
        covered: the arguments (tensors of the same avals, requires_grad and layouts, distinct,
        none of them state), the reach walk (:func:`reach_holds`), the grad mode, the module
        structure, the optimizers' parameter groups and hyper-parameters, the training modes,
        the state tensors' arrays, requires_grad and layouts and their grads (by identity:
        arrays this step wrote have the avals of the key, see :meth:`_arm`), the optimizer
        state (untouched since written back) and the captured tensors that became state."""
        n = fast.n_args
        if len(args) != n:
            return None
        index = fast.state_index
        for a, (aval, rg, glob), value in zip(args, fast.arg_avals, fast.arg_values):
            if type(a) is not Tensor or id(a) in index or a._requires_grad is not rg \
                    or a._global is not glob:
                return None
            v = a._value
            if v is not value and (not isinstance(v, jax.Array) or v.aval != aval):
                return None
        if n > 1 and (len({id(a) for a in args}) != n
                      or len({id(a._value) for a in args}) != n):
            return None
        if is_grad_enabled() is not fast.grad_on or structure_version() != fast.structure:
            return None
        if fast.reach_checks is not None and not reach_holds(fast.reach_checks):
            return None
        for opt, groups, snaps in fast.groups:
            pg = opt.param_groups
            if pg is not groups[0] or len(pg) != len(snaps) or not all(map(_is, pg, groups[1])):
                return None
            for g, (keys, hyper, values, plist, params) in zip(pg, snaps):
                if len(g) != len(keys) or not all(map(_is, g, keys)) \
                        or not all(map(_is, map(g.get, hyper), values)) \
                        or len(plist) != len(params) or not all(map(_is, plist, params)):
                    return None
        if list(map(_TRAINING, fast.subs)) != fast.training:
            return None
        checked = fast.checked
        if not all(map(_is, map(_VALUE, checked), fast.values)) \
                or list(map(_REQUIRES_GRAD, checked)) != fast.requires_grad \
                or not all(map(_is, map(_GLOBAL, checked), fast.globs)):
            return None
        base = fast.state
        if fast.grads is not None and not all(map(_is, map(_GRAD, base.tensors), fast.grads)):
            return None
        if OPT_STATE_VERSION[0] != fast.opt_version \
                or not all(map(_is, (o.state for o in fast.optimizers), fast.opt_states)):
            return None
        if not _same([r() for r in self._extra.values()], fast.extra):
            return None
        return base.with_args(args, index) if n else base

    def _stamp_written(self, fast: _Fast, state: StepState) -> None:
        """After a fast call's write-back: the stamps of what the step rewrote (arrays,
        grads, optimizer state dicts), which have the key's structure (see :meth:`_arm`)."""
        if fast.grads is not None:
            fast.grads = list(map(_GRAD, state.tensors))
            fast.checked = [*fast.checked[:len(state.tensors) - state.n_args],
                            *(g for g in fast.grads if g is not None)]
            fast.requires_grad = list(map(_REQUIRES_GRAD, fast.checked))
            fast.globs = list(map(_GLOBAL, fast.checked))
        fast.values = list(map(_VALUE, fast.checked))
        fast.opt_states = [o.state for o in fast.optimizers]
        fast.opt_version = OPT_STATE_VERSION[0]

    def _arm(self, entry: _Entry, key: tuple, state: StepState, leaves: list,
             slow: tuple) -> None:
        """After a call that computed its key: if the state as the call left it has that very
        key again (the step's outputs have the avals and structure of its inputs, and nothing
        that ran after it changed the state), record the stamps that let the next calls skip
        the key (:meth:`_fast_state`). A step that changes the structure of its own state
        (the first step that creates optimizer state, a step that flips a training mode while
        tracing) is not armed until a call leaves the state as it found it."""
        self._fast = None
        treedef, reach, modules, optimizers, extra, grad_on = slow
        if self._cache.get(key) is not entry or entry.guards is None:
            return
        n = state.n_args
        if len(leaves) != n or any(type(x) is not Tensor for x in leaves) \
                or treedef != jax.tree_util.tree_structure((tuple(leaves), {}), is_stateful):
            return  # (only calls with distinct tensor arguments and no keywords are fast)
        checks = self._reach_checks
        if checks is not None and not checks[0]:
            return  # (a walk cut short: only a new walk can tell)
        after = StepState.gather(leaves, modules, optimizers, self.track_grads,
                                 self._gather_cache, extra)
        if not _same(after.tensors, state.tensors) or after.key() != key[2:-1]:
            return
        groups = []
        for opt in optimizers:
            snaps = []
            for g in opt.param_groups:
                hyper = tuple(k for k in g if k not in ("lr", "initial_lr"))
                if not all(_frozen(g[k]) for k in hyper if k != "params"):
                    return  # (a value that could change in place: only the key can tell)
                snaps.append((tuple(g), hyper, tuple(g[k] for k in hyper), g["params"],
                              tuple(g["params"])))
            groups.append((opt, (opt.param_groups, tuple(opt.param_groups)), snaps))
        for opt in optimizers:
            st = opt.state
            if type(st) is not _WatchedDict or any(
                    type(e) is not _WatchedDict
                    or not all(isinstance(v, Tensor) or _frozen(v) for v in e.values())
                    for e in st.values()):
                return  # (state not written back by a step: not watched)
        fast = _Fast()
        fast.key, fast.entry, fast.state = key, entry, after
        fast.state_index = {id(t): i for i, t in enumerate(after.tensors) if i >= n}
        fast.n_args = n
        fast.arg_avals = [(x[1], x[2], x[3]) for x in key[0][1][1]]
        fast.arg_values = [t._value if isinstance(t._value, jax.Array)
                           and t._value.aval == x[0] else _MISSING
                           for t, x in zip(leaves, fast.arg_avals)]
        fast.reach_checks = checks
        fast.modules, fast.optimizers, fast.grad_on = modules, optimizers, grad_on
        fast.structure = structure_version()
        fast.groups = groups
        fast.subs = after.submodules
        fast.training = list(map(_TRAINING, after.submodules))
        fast.grads = list(map(_GRAD, after.tensors)) if self.track_grads else None
        fast.checked = [*after.tensors[n:], *(g for g in fast.grads or () if g is not None)]
        fast.values = list(map(_VALUE, fast.checked))
        fast.requires_grad = list(map(_REQUIRES_GRAD, fast.checked))
        fast.globs = list(map(_GLOBAL, fast.checked))
        fast.opt_states = [o.state for o in optimizers]
        fast.opt_version = OPT_STATE_VERSION[0]
        fast.extra = [r() for r in self._extra.values()]
        self._fast = fast

    # -- tensors the traced code read without them being inputs (captured constants) ---------
    def _set_guards(self, entry: _Entry) -> None:
        """After a trace: guard every live tensor it read as a constant (by its value's
        identity: in-place ops replace the value), and say so with ``explain=True``."""
        captured = entry.layout.captured
        entry.layout.captured = {}
        entry.guards = [(weakref.ref(t), t._value, desc) for t, desc in captured.values()]
        if self.explain and entry.guards:
            warnings.warn(f"flow.jit({self.name}): {len(entry.guards)} tensor(s) were read as "
                          f"constants of the executable (guarded: if one changes, the step "
                          f"traces again with it as an input): "
                          f"{'; '.join(d for _, _, d in entry.guards)}", RecompileWarning,
                          stacklevel=3)

    @property
    def captured_constants(self) -> list[str]:
        """Descriptions of the live tensors the cached executables hold as constants."""
        return [d for e in self._cache.values() for r, _, d in (e.guards or ()) if r() is not None]

    def _promote_changed(self, entry: _Entry) -> bool:
        """Captured tensors whose value changed since the trace become state inputs (the next
        key differs, so the step traces again, with the reason)."""
        changed = []
        for ref, value, desc in entry.guards:
            t = ref()
            if t is not None and t._value is not value:
                changed.append((t, desc))
        if not changed:
            return False
        for t, _ in changed:
            key = id(t)
            self._extra[key] = weakref.ref(t, lambda _, k=key: self._extra.pop(k, None))
        self._pending_reason = "; ".join(f"captured tensor {d} changed since it was traced "
                                         f"as a constant (it is an input now)"
                                         for _, d in changed)
        return True

    def _make_pure(self, layout: Layout, sbp: list | None = None) -> Callable[..., tuple]:
        fn, everything, name = self.fn, self.donate, self.name
        sbp = [None] if sbp is None else sbp

        def pure(arg_values: list, values: list, grads: list, opt_state: list, lrs: list,
                 rng: Any, arrays: list) -> tuple:
            # tensors keep their identity (their state is installed into them); raw arrays
            # among the arguments are replaced by their tracers. The objects come from the
            # current call, so a retrace by jax (or the backward's) uses live objects.
            state, leaves, treedef = self._current
            it = iter(arrays)
            call_leaves = [next(it) if isinstance(x, (jax.Array, np.ndarray)) else x
                           for x in leaves]
            state.install(arg_values, values, grads, opt_state, lrs, rng)
            previous = watch_inputs(layout.watch)
            written: dict[int, tuple] = {}

            def on_write(t: Tensor) -> None:  # a concrete tensor written inside the trace
                if id(t) not in written and not isinstance(t._value, jax.core.Tracer):
                    written[id(t)] = (t, t._value, t._version, t.grad_fn, t._requires_grad,
                                      getattr(t, "_output_nr", 0), t._global)
            previous_writes = watch_writes(on_write)
            attrs = _attrs(state.submodules)
            choice = sbp[0]
            planning = step_plan.following(choice)
            planning.__enter__()
            try:
                a, kw = jax.tree_util.tree_unflatten(treedef, call_leaves)
                out = fn(*a, **kw)
                if written:
                    raise _CapturedWrites([w[0] for w in written.values()])
                _check_attrs(name, attrs, state.submodules)
                out_vals = _output_values(out, name)
                out_leaves = jax.tree_util.tree_leaves(out, is_leaf=is_stateful)
                layout.out_diff = [isinstance(x, Tensor) and x._requires_grad
                                   for x in out_leaves]
                layout.out_slots = [TensorSlot(x._global) if isinstance(x, Tensor) else None
                                    for x in out_leaves]
                new = state.collect(layout, everything)
                if isinstance(choice, step_plan.StepRecorder):
                    choice.pin(state.pins())
                    choice.pin_outputs(jax.tree_util.tree_leaves(out_vals))
            finally:
                planning.__exit__(None, None, None)
                watch_inputs(previous)
                watch_writes(previous_writes)
                for t, v, ver, node, req, nr, glob in written.values():
                    t._value, t._version, t.grad_fn, t._requires_grad = v, ver, node, req
                    t._output_nr, t._global = nr, glob
                state.restore()
            return (out_vals, *new, rng[1] + layout.draws)
        return pure

    def _new_entry(self, key: tuple) -> _Entry:
        if self._last_key is not None:
            reason = explain_change(self._last_key, key)
            pending, self._pending_reason = self._pending_reason, None
            if pending:
                reason = pending
            self.recompile_reasons.append(reason)
            if self.explain:
                warnings.warn(f"flow.jit({self.name}): recompiling because {reason}",
                              RecompileWarning, stacklevel=3)
        self._last_key = key
        self.trace_count += 1
        layout = Layout()
        donate = (1, 3) if self.donate else ()
        entry = _Entry(None)
        entry.jitted = jax.jit(self._make_pure(layout, entry.sbp), donate_argnums=donate)
        entry.layout = layout
        self._cache[key] = entry
        if len(self._cache) > self.max_cache_size:
            self._cache.popitem(last=False)
        return entry

    # -- outputs that are differentiated eagerly (loss = compiled(x); loss.backward()) --------
    def _attach_backward(self, entry: _Entry, out: Any, inputs: tuple, current: tuple) -> Any:
        """Give the outputs one tape node whose backward is a compiled ``jax.vjp`` of the
        function (it recomputes the forward: activations are not kept between the calls)."""
        state = current[0]
        diff = state.diff_inputs()
        if not diff:
            return out
        leaves, treedef = jax.tree_util.tree_flatten(out, is_leaf=is_stateful)
        pos = [k for k, (x, d) in enumerate(zip(leaves, entry.layout.out_diff))
               if d and isinstance(x, Tensor)]
        if entry.bwd is None:
            entry.bwd = jax.jit(self._make_vjp(entry), static_argnums=(2,))
        call = _CompiledCall(self, entry, inputs, current, diff, [leaves[k] for k in pos])
        res = _CompiledVJP.apply(call, *[t for _, _, t in diff])
        res = (res,) if isinstance(res, Tensor) else res
        for k, r in zip(pos, res):
            leaves[k] = r
        return jax.tree_util.tree_unflatten(treedef, leaves)

    def _make_vjp(self, entry: _Entry) -> Callable[..., Any]:
        pure = self._make_pure(Layout(), entry.sbp)
        out_diff = entry.layout.out_diff

        def vjp(inputs: tuple, diff_vals: list, diff_pos: tuple, cts: list) -> Any:
            def f(dv: list) -> list:
                av, vv = list(inputs[0]), list(inputs[1])
                for (group, i), v in zip(diff_pos, dv):
                    (av if group == 0 else vv)[i] = v
                with enable_grad():
                    outs = pure(av, vv, *inputs[2:])[0]
                return [x for x, d in zip(jax.tree_util.tree_leaves(outs), out_diff) if d]
            return jax.vjp(f, diff_vals)[1](cts)[0]
        return vjp

    def __repr__(self) -> str:
        return f"<flow.jit of {self.name}: {self.cache_size} executable(s)>"


def _output_values(out: Any, name: str) -> Any:
    def leaf(x: Any) -> Any:
        if isinstance(x, Tensor):
            return x._value
        if isinstance(x, (Module, Optimizer)):
            raise TypeError(f"flow.jit({name}): the function returned a "
                            f"{type(x).__name__}; compiled functions return tensors, numbers "
                            f"and containers of them")
        return x
    return jax.tree_util.tree_map(leaf, out, is_leaf=lambda x: isinstance(
        x, (Tensor, Module, Optimizer)))


#: How far :func:`discover` follows containers and attributes, and how many objects it visits
#: at most (it runs on every call: a step must not pay for walking a large data structure).
_DISCOVER_DEPTH = 3
_DISCOVER_LIMIT = 256
#: Values that never lead to a module (checked by exact type first: the common case).
_LEAF_TYPES = frozenset({int, float, bool, str, bytes, complex, type(None)})
_SKIP = (types.ModuleType, type, Tensor, np.ndarray, jax.Array, types.BuiltinFunctionType,
         CompiledFunction)
#: Functions of these packages are not user code: their closures and globals hold no model.
_LIBRARIES = frozenset({"jflow", "jax", "jaxlib", "numpy", "builtins", "functools"})


_PATH_FORMATS = {"self": "self", "__self__": ".__self__", "closure": "closure '{}'",
                 "global": "global '{}'", "item": "[{!r}]", "attr": ".{}"}


def _path_text(path: Any) -> str:
    """A path kept as nested ``(parent, kind, key)`` triples (cheap to build: formatted only
    for what is found) as text."""
    parts = []
    while path is not None:
        path, kind, key = path
        parts.append(_PATH_FORMATS[kind].format(key))
    return "".join(reversed(parts))


def discover(*roots: Callable[..., Any], checks: list | None = None
             ) -> tuple[tuple[str, Any], ...]:
    """``(path, object)`` for every module and optimizer the roots can reach: a root itself
    (a module), the object a method is bound to and that object's attributes, closure cells,
    the globals the code names, functions reached that way (their closures and globals), and
    dicts, lists, tuples and plain objects among those, a few levels deep.

    It runs on every call, so a rebinding (``model = Net()`` again in the closure or module,
    ``models["g"] = other``, ``trainer.model = other``) is seen before the executable runs:
    the reachable set is part of the cache key and a change retraces, with the path as the
    reason. Paths read like the code: ``closure 'model'``, ``global 'models'['g']``,
    ``self.model``.

    ``checks``: filled with what the walk read from every mutable object it looked into
    (closure cells, the globals named, list items, dict and ``__dict__`` entries, by
    identity), so :func:`reach_holds` can tell cheaply that a new walk would find the same;
    ``checks[0]`` is False when the walk was cut short (then only a walk can tell)."""
    complete = [True]
    found: list[tuple[Any, Any]] = []
    seen: set[int] = set()
    budget = [_DISCOVER_LIMIT]

    def visit(path: Any, obj: Any, depth: int) -> None:
        t = type(obj)
        if t in _LEAF_TYPES or id(obj) in seen:
            return
        if budget[0] <= 0:
            complete[0] = False
            return
        seen.add(id(obj))
        budget[0] -= 1
        if isinstance(obj, (Module, Optimizer)):
            found.append((path, obj))
            return
        if depth >= _DISCOVER_DEPTH:
            return
        if t is types.MethodType:
            visit((path, "__self__", None) if path is not None else (None, "self", None),
                  obj.__self__, depth)
            visit(path, obj.__func__, depth)
        elif t is types.FunctionType:
            if (obj.__module__ or "").partition(".")[0] in _LIBRARIES:
                return
            code = obj.__code__
            if checks is not None:
                cells = obj.__closure__ or ()
                g = obj.__globals__
                checks.append((2, obj, code, cells, tuple(map(_cell_value, cells)), g,
                               code.co_names, tuple(map(g.get, code.co_names,
                                                        _repeat(_MISSING)))))
            for name, cell in zip(code.co_freevars, obj.__closure__ or ()):
                try:
                    value = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                visit((None, "closure", name), value, depth + 1)
            g = obj.__globals__
            for name in code.co_names:
                value = g.get(name, _MISSING)
                if value is not _MISSING:
                    visit((None, "global", name), value, depth + 1)
        elif t is list or t is tuple:
            if checks is not None and t is list:
                checks.append((0, obj, tuple(obj)))
            if len(obj) > _DISCOVER_LIMIT:
                complete[0] = False
            for i, v in enumerate(obj[:_DISCOVER_LIMIT]):
                if type(v) not in _LEAF_TYPES:
                    visit((path, "item", i), v, depth + 1)
        elif isinstance(obj, dict):
            if checks is not None:
                checks.append((1, obj, tuple(obj), tuple(obj.values())))
            if len(obj) > _DISCOVER_LIMIT:
                complete[0] = False
            for n, (k, v) in enumerate(obj.items()):
                if n >= _DISCOVER_LIMIT:
                    break
                if type(v) not in _LEAF_TYPES:
                    visit((path, "item", k), v, depth + 1)
        elif not isinstance(obj, _SKIP):
            d = getattr(obj, "__dict__", None)  # a plain or callable object, e.g. nn.Graph
            if type(d) is dict:
                if checks is not None:
                    checks.append((1, d, tuple(d), tuple(d.values())))
                if len(d) > _DISCOVER_LIMIT:
                    complete[0] = False
                known = getattr(t, "_state_known_to_compiler", ())  # e.g. a Graph's registry
                for n, (k, v) in enumerate(d.items()):
                    if n >= _DISCOVER_LIMIT:
                        break
                    if type(v) not in _LEAF_TYPES and k not in known:
                        visit((path, "attr", k), v, depth + 1)

    if checks is not None:
        checks.append(None)  # (becomes the completeness flag)
    for root in roots:
        visit(None, root, 0)
    if checks is not None:
        checks.insert(0, complete[0])
        checks.pop(1)
    return tuple((_path_text(p), o) for p, o in found)


def _cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return _MISSING


def reach_holds(checks: list) -> bool:
    """Whether everything :func:`discover` read when it filled ``checks`` is still the same
    objects (then a new walk finds exactly what that one found)."""
    if not checks[0]:
        return False
    for c in checks[1:]:
        kind = c[0]
        if kind == 0:  # a list: its items
            obj, snap = c[1], c[2]
            if len(obj) != len(snap) or not all(map(_is, obj, snap)):
                return False
        elif kind == 1:  # a dict or __dict__: its keys and values
            d, keys, values = c[1], c[2], c[3]
            if len(d) != len(keys) or not all(map(_is, d, keys)) \
                    or not all(map(_is, d.values(), values)):
                return False
        else:  # a function: its code, closure cells and the globals it names
            f, code, cells, cvals, g, names, gvals = c[1:]
            if f.__code__ is not code or not all(map(_is, map(_cell_value, cells), cvals)) \
                    or not all(map(_is, map(g.get, names, _repeat(_MISSING)), gvals)):
                return False
    return True


_MISSING = object()


def describe_reach_change(old: tuple, new: tuple) -> str:
    """Why the reachable modules/optimizers differ: which paths were rebound, appeared or
    disappeared (keys are ``((path, id), ...)``)."""
    a, b = dict(old), dict(new)
    out = []
    for path in dict.fromkeys([*a, *b]):
        if path in a and path in b:
            if a[path] != b[path]:
                out.append(f"{path or 'the function'} was rebound to another object")
        elif path in b:
            out.append(f"{path} now holds a module or optimizer")
        else:
            out.append(f"{path} no longer holds the module or optimizer it held")
    return "; ".join(out) or "the reachable modules and optimizers changed"


def jit(fn: Callable[..., Any] | None = None, *, donate: bool = False, explain: bool = False,
        max_cache_size: int = 16) -> Any:
    """Compile ``fn`` (a function of tensors, modules and optimizers) into one XLA executable
    per signature; usable as ``@flow.jit`` or ``@flow.jit(explain=True)``.

    Modules and optimizers passed as arguments or referenced by the function (closure or
    globals) are state: their parameters, buffers, ``.grad`` and optimizer state go in and
    come back out, written into the same objects. ``donate=True`` lets XLA reuse the state's
    buffers for the new state (arrays that alias them — ``detach()`` views — become invalid).
    ``explain=True`` warns with the reason whenever the function traces again; the reasons
    are always kept in ``.recompile_reasons``.
    """
    if fn is None:
        return lambda f: CompiledFunction(f, donate=donate, explain=explain,
                                          max_cache_size=max_cache_size)
    return CompiledFunction(fn, donate=donate, explain=explain, max_cache_size=max_cache_size)
