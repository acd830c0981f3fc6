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

import contextlib
import functools
import linecache
import os
import re
import warnings
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from .._jax_compat import drop_traceback_note
from ..autograd import Function, enable_grad, is_grad_enabled
from ..autograd.graph import watch_writes
from ..dispatch import watch_inputs
from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer
from ..recompile import RecompileWarning
from ..sharding import plan as step_plan
from ..tensor import Tensor
from .containers import from_tree, needs_tree, to_tree
from .fast_path import FAST, FastMiss, FastPath
from .reach import Opaque, describe_reach_change, discover
from .state import (
    Layout,
    StepState,
    TensorSlot,
    _static_sig,
    is_stateful,
    set_counter,
    tree_flatten_stateful,
    wrap_like,
)

__all__ = ["jit", "CompiledFunction", "RecompileWarning"]


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
            if na != nb:
                reasons.append(f"the set of existing .grad tensors changed ({na} -> {nb} "
                               f"tensors with a gradient)")
            elif len(a) != len(b):
                reasons.append(f"the tensors whose .grad is carried changed ({len(a)} -> "
                               f"{len(b)})")
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


#: graph breaks (distinct signatures) after which a function compiled by ``flow.compile``
#: stops tracing and runs every call eagerly (``torch._dynamo.config.cache_size_limit``'s default)
GRAPH_BREAK_LIMIT = 8

#: what :meth:`CompiledFunction._lookup` returns for a new signature to run eagerly
_PAST_LIMIT = object()

#: ``[n]``: ``flow.compile``'s ``recompile_limit`` (see :class:`CompiledFunction`): as
#: torch.compile's ``torch._dynamo.config.recompile_limit`` (8), which sets it under mock_torch
RECOMPILE_LIMIT = [8]

#: ``[fn or None]``: the active profiler's ``fn(compiled, args, kwargs)`` (jflow.profiler)
PROFILER: list[Any] = [None]


class _StateMadeInTrace(Exception):
    """Raised out of a trace whose optimizer step made state (its first step): the call
    makes it up front, where ``_initial_state`` can, and traces again (one compile)."""

    def __init__(self, made: list[tuple[Optimizer, list[Tensor]]]) -> None:
        super().__init__(f"{len(made)} optimizer(s) made state inside the step")
        self.made = made


def _attrs(modules: Any) -> dict[tuple[int, str], Any]:
    """Every plain attribute of ``modules`` (a snapshot taken before a trace)."""
    return {(id(m), k): v for m in modules for k, v in vars(m).items()}


_MISSING = object()


class _HookAttribute(RuntimeError):
    """A forward pre-hook set a module attribute to a tensor computed in the trace (the hook
    form of weight_norm / spectral_norm / pruning): ``flow.jit`` raises it, ``flow.compile``
    runs that signature eagerly (a graph break, as the value cannot leave the step)."""

    def __init__(self, hooks: str, message: str) -> None:
        super().__init__(message)
        self.read = f"a forward pre-hook ({hooks}) sets a module attribute on every call"


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
    hooks = [f"{type(h).__name__} on {type(m).__name__}.{k}" for m, k, _ in leaked
             for h in getattr(m, "_forward_pre_hooks", {}).values()
             if k in (getattr(h, "name", None), getattr(h, "_tensor_name", None))]
    if hooks:  # the hook form of a reparametrization: it sets the attribute every forward
        raise _HookAttribute(", ".join(hooks),
            f"flow.jit({name}): a forward pre-hook ({', '.join(hooks)}) computes a module "
            f"attribute on every call (the hook form of weight_norm / spectral_norm / "
            f"pruning); that value would exist only inside the compiled step. Use the "
            f"parametrization form (nn.utils.parametrizations.weight_norm / spectral_norm, "
            f"nn.utils.parametrize.register_parametrization), which compiles, or make it "
            f"permanent before compiling (nn.utils.remove_weight_norm, prune.remove).")
    raise RuntimeError(f"flow.jit({name}): the step stored a tensor it computed on a module "
                       f"attribute ({where}); that value exists only inside the compiled step. "
                       f"Build it outside the step and register it as a buffer "
                       f"(self.register_buffer(name, tensor)), or return it from the step.")


class _Entry:
    __slots__ = ("jitted", "layout", "bwd", "guards", "sbp", "planned", "fallback", "before")

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
        #: a graph break (``graph_breaks=True``): why calls with this key run eagerly
        self.fallback: str | None = None
        #: (the last key, how many recompile reasons, the pending reason) before this entry
        #: was made
        self.before: tuple[Any, int, str | None] = (None, 0, None)


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


class CompiledFunction(Opaque):
    """A function compiled by :func:`jit` (call it like the original).

    ``recompile_reasons``: one string per trace after the first, saying what changed, and one
    per graph break. ``cache_size``: executables kept (least recently used beyond
    ``max_cache_size`` dropped). ``graph_breaks``: a trace that reads a traced value
    (``bool(t)``, ``t.item()``, ``int(t)``) makes calls with that signature run the function
    eagerly (``flow.compile``'s behaviour) instead of raising (``flow.jit``, ``nn.Graph``).
    ``recompile_limit`` (None: no limit): past that many
    traced signatures a new one warns once, saying what changed (a Python number argument
    that changes every call traces every call: pass it as a tensor); with ``graph_breaks``
    new signatures then run eagerly, as torch.compile's past its recompile limit, while
    ``flow.jit`` and ``nn.Graph`` keep compiling them.
    """

    def __init__(self, fn: Callable[..., Any], *, donate: bool = False, explain: bool = False,
                 max_cache_size: int = 16, track_grads: bool = True,
                 modules: list[Module] | None = None,
                 optimizers: list[Optimizer] | None = None, scan_closure: bool = True,
                 reach: tuple[Callable[..., Any], ...] | None = None,
                 after: Callable[[], None] | None = None, name: str | None = None,
                 graph_breaks: bool = False,
                 compiler_options: dict[str, Any] | None = None,
                 recompile_limit: int | None = 8) -> None:
        if not callable(fn):
            raise TypeError(f"flow.jit: expected a function, got {type(fn).__name__}")
        if max_cache_size < 1:
            raise ValueError(f"flow.jit: max_cache_size must be >= 1, got {max_cache_size}")
        self.fn = fn
        self.donate = donate
        #: XLA options of every executable (``_jax_setup.EAGER_ROUNDING``: nn.Graph with AMP)
        self.compiler_options = compiler_options
        self.graph_breaks = graph_breaks
        if recompile_limit is not None and (not isinstance(recompile_limit, int)
                                            or recompile_limit < 1):
            raise ValueError(f"flow.jit: recompile_limit must be a positive int or None, got "
                             f"{recompile_limit!r}")
        self.recompile_limit = recompile_limit
        #: whether the recompile limit's warning was given (once per function)
        self._limit_warned = False
        #: graph breaks so far; at :data:`GRAPH_BREAK_LIMIT` every later call runs eagerly
        self.graph_break_count = 0
        self.explain = explain
        self.max_cache_size = max_cache_size
        self.track_grads = track_grads
        self.name = name or getattr(fn, "__qualname__", None) or type(fn).__name__
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
        #: optimizers whose first state was made up front once (or tried: _initial_state)
        self._state_tried: weakref.WeakSet = weakref.WeakSet()
        self._owned: dict[int, int] = {}   # id(state tensor) -> id(the array a step gave it)
        #: the last call's key and its stamps (None: the next call computes the key)
        self._fast: FastPath | None = None
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
        if self.graph_break_count >= GRAPH_BREAK_LIMIT:
            return self.fn(*args, **kwargs)
        fast = self._fast
        if fast is not None:
            inputs = None if kwargs else fast.inputs(fast, self, args)
            if inputs is not None and not (fast.entry.guards
                                           and self._promote_changed(fast.entry)):
                return self._run_fast(fast, args, inputs)
            self._disarm()
        found = self._lookup(args, kwargs, limited=True)
        if found is None:
            return self._call(*args, **kwargs)  # the changed tensors are inputs now: a new key
        if found is _PAST_LIMIT:  # a new signature past the recompile limit: eagerly
            self._fast = None
            return self.fn(*args, **kwargs)
        entry, key, state, leaves, slow = found
        if entry.fallback is not None:  # a graph break: this signature runs eagerly
            self._fast = None
            return self.fn(*args, **kwargs)
        try:
            return self._run(entry, key, state, leaves, slow)
        except _HookAttribute as e:
            if not self.graph_breaks:
                drop_traceback_note(e)
                raise
            return self._graph_break(entry, e.read, e, args, kwargs)
        except Exception as e:
            read = traced_read(e)
            if read is None:
                # without the footer JAX's jax.jit adds to an error from the traced code
                drop_traceback_note(e)  # (see _jax_compat.drop_traceback_note)
                raise
            return self._graph_break(entry, read, e, args, kwargs)

    def _graph_break(self, entry: _Entry, read: str, error: Exception, args: tuple,
                     kwargs: dict) -> Any:
        """The trace of ``entry`` read a traced value: with ``graph_breaks``, remember that
        this signature runs eagerly (with the reason) and run this call so; else raise a clear
        error naming the read."""
        self._fast = None
        if not self.graph_breaks:
            raise RuntimeError(
                f"flow.jit({self.name}): {read}, but inside a compiled function tensors have "
                f"no values yet (they are traced). Keep that code outside the compiled "
                f"function, use flow.where / masks instead of Python branches on tensor values, "
                f"or use flow.compile, which runs such a call eagerly (a graph break)"
            ) from error
        entry.fallback = reason = (f"graph break: {read}; calls with this signature run "
                                   f"eagerly")
        entry.jitted = entry.bwd = None
        entry.guards = []
        self.graph_break_count += 1
        if self.graph_break_count >= GRAPH_BREAK_LIMIT:
            reason += (f"; {GRAPH_BREAK_LIMIT} signatures broke the graph, so every later "
                       f"call runs eagerly without tracing")
            self._cache.clear()
        self.recompile_reasons.append(reason)
        if self.explain:
            warnings.warn(f"flow.jit({self.name}): {reason}", RecompileWarning, stacklevel=4)
        return self.fn(*args, **kwargs)

    def _disarm(self) -> None:
        """Leave the fast path: the next call computes its key (the donation record of the
        slow path comes from the stamps)."""
        if self.donate:
            self._owned = self._fast.owned()
        self._fast = None

    def _run_fast(self, fast: FastPath, args: tuple, inputs: tuple) -> Any:
        """A call with the last key (see :mod:`.fast_path`; its key stays the most recently
        used: no other entry runs while the fast path holds)."""
        self._current = FAST
        try:
            res = fast.entry.jitted(*inputs)
        except FastMiss:  # jax saw other avals and began a trace: compute the key
            self._disarm()
            return self._call(*args)
        finally:
            self._current = None
        out = fast.write_back(fast, *res)
        if self._after is not None:
            self._after()
        if fast.attach:
            out = self._attach_backward(fast.entry, out, inputs, fast.current(args))
        return from_tree(out) if fast.entry.layout.out_nodes else out

    def lower(self, *args: Any, **kwargs: Any) -> Any:
        """JAX's ``Lowered`` for a call with these arguments, without running it (after the
        whole-step SBP choice): ``.as_text()``, ``.compile().as_text()`` show the HLO."""
        found = None
        while found is None:
            found = self._lookup(args, kwargs)
        entry, key, state, leaves, slow = found
        arrays = [x for x in leaves if isinstance(x, (jax.Array, np.ndarray))]
        inputs = (*state.inputs(self._owned if self.donate else None), arrays)
        self._current = (state, leaves, slow[0])
        try:
            self._plan_sbp(entry, state, inputs)
            return entry.jitted.lower(*inputs)
        except _StateMadeInTrace as e:  # (as a call would: the state made up front, for
            added = self._make_first_state(entry, key, e.made)  # the program; then it goes
            try:                                 # again, as no step ran: PyTorch's rule)
                return self.lower(*args, **kwargs)
            finally:
                for opt, p in added:
                    opt.state.pop(p, None)
                    self._state_tried.discard(opt)
        finally:
            self._current = None

    def _lookup(self, args: tuple, kwargs: dict, limited: bool = False) -> Any:
        """The cache entry for a call (made if new) and what running it needs; None when
        guarded constants changed (they were promoted to inputs: look up again);
        :data:`_PAST_LIMIT` (only when ``limited``) for a new signature that
        :meth:`_past_limit` sends to run eagerly."""
        leaves, treedef = tree_flatten_stateful((args, kwargs))
        if needs_tree(leaves):  # dataclasses, cache objects ... (see containers.py)
            leaves, treedef = tree_flatten_stateful(to_tree((args, kwargs)))
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
            if limited and self._past_limit(key):
                return _PAST_LIMIT
            entry = self._new_entry(key)
        else:
            self._cache.move_to_end(key)
        self._reach_checks = checks
        return entry, key, state, leaves, (treedef, reach, modules, optimizers, extra, grad_on)

    def _past_limit(self, key: tuple) -> bool:
        """A new signature ``key`` would be trace number ``recompile_limit + 1`` or later: warn
        once (what changed since the last signature); True when it is to run eagerly
        (``graph_breaks``: flow.compile's behaviour)."""
        limit = self.recompile_limit
        if limit is None or self.trace_count < limit:
            return False
        if not self._limit_warned:
            self._limit_warned = True
            change = (explain_change(self._last_key, key) if self._last_key is not None
                      else "a new signature")
            then = ("new signatures run eagerly from now on (the compiled ones stay), as "
                    "torch.compile's past torch._dynamo.config.recompile_limit"
                    if self.graph_breaks else "each new signature is traced and compiled "
                    "again (seconds each)")
            warnings.warn(f"flow.jit({self.name}): {limit} signatures traced (the recompile "
                          f"limit), the next because {change}: {then}. A Python number "
                          f"argument that changes every call makes a signature per call: pass "
                          f"it as a tensor (or set recompile_limit)", RecompileWarning,
                          stacklevel=5)
        return self.graph_breaks

    def _run(self, entry: _Entry, key: tuple, state: StepState, leaves: list,
             slow: tuple) -> Any:
        """Run ``entry`` on ``state`` and write the results back; then arm the fast path if
        the next call would have this key (``slow``: what the key was computed from)."""
        grad_on = is_grad_enabled()
        treedef = slow[0]
        arrays = [x for x in leaves if isinstance(x, (jax.Array, np.ndarray))]
        owned = self._owned if self.donate else None
        inputs = (*state.inputs(owned), arrays)
        self._current = (state, leaves, treedef)
        try:
            self._plan_sbp(entry, state, inputs)
            out, new_values, new_grads, opt_out, counter = entry.jitted(*inputs)
        except _StateMadeInTrace as e:  # made up front, it is an input: trace again
            self._make_first_state(entry, key, e.made)
            args, kwargs = from_tree(jax.tree_util.tree_unflatten(treedef, leaves))
            return self._call(*args, **kwargs)
        except _CapturedWrites as e:  # they become state: trace again
            self._cache.pop(key, None)
            for t in e.tensors:
                k = id(t)
                self._extra[k] = weakref.ref(t, lambda _, k=k: self._extra.pop(k, None))
            self._pending_reason = (f"{len(e.tensors)} captured tensor(s) of shape(s) "
                                    f"{[list(t.shape) for t in e.tensors]} are written in place "
                                    f"by the step (they are state now)")
            self._fast = None
            args, kwargs = from_tree(jax.tree_util.tree_unflatten(treedef, leaves))
            return self._call(*args, **kwargs)
        finally:
            self._current = None
        layout = entry.layout
        if entry.guards is None:
            self._set_guards(entry)
        state.write_back(layout, new_values, new_grads, opt_out, owned)
        set_counter(counter)
        if self._after is not None:
            self._after()
        self._fast = FastPath.arm(self, entry, key, state, leaves, slow)
        out_leaves, out_def = jax.tree_util.tree_flatten(out)
        out = jax.tree_util.tree_unflatten(out_def, [
            x if slot is None else wrap_like(x, slot.glob)
            for x, slot in zip(out_leaves, layout.out_slots)])
        if grad_on and not self.donate and any(layout.out_diff) and not layout.ran_backward:
            out = self._attach_backward(entry, out, inputs, (state, leaves, treedef))
        return from_tree(out) if layout.out_nodes else out

    def _make_first_state(self, entry: _Entry, key: tuple,
                          made: list[tuple[Optimizer, list[Tensor]]]
                          ) -> list[tuple[Optimizer, Tensor]]:
        """(A trace raised :class:`_StateMadeInTrace`.) Drop ``entry`` as if never made (it
        compiled nothing) and make the optimizers' first state for the parameters their
        step made it for, where ``_initial_state`` can (each optimizer tried once); returns
        ``(optimizer, parameter)`` of the state made."""
        self._cache.pop(key, None)
        self._last_key, n, self._pending_reason = entry.before
        del self.recompile_reasons[n:]
        self.trace_count -= 1
        self._fast = None
        added = []
        for opt, params in made:
            self._state_tried.add(opt)
            ids = {id(p) for p in params}
            added += [(opt, p) for p in opt._make_initial_state(
                lambda p, ids=ids: id(p) in ids)]
        return added

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
        entry.jitted = jax.jit(pure, donate_argnums=(1, 3) if self.donate else (),  # cache
                               compiler_options=self.compiler_options)
        self.sbp_plans.append((rec, res))

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
            current = self._current
            if current is FAST:  # (a fast call whose inputs jax finds new: see fast_path)
                raise FastMiss
            state, leaves, treedef = current
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
                a, kw = from_tree(jax.tree_util.tree_unflatten(treedef, call_leaves))
                out = fn(*a, **kw)
                converted = to_tree(out)  # (dataclasses, cache objects: containers.py)
                layout.out_nodes = converted is not out
                out = converted
                if written:
                    raise _CapturedWrites([w[0] for w in written.values()])
                made = state.state_made(self._state_tried)
                if made:
                    raise _StateMadeInTrace(made)
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
            except BaseException:  # (a failed trace: no tracer stays on a module either)
                with contextlib.suppress(RuntimeError):
                    _check_attrs(name, attrs, state.submodules)
                raise
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
        before = (self._last_key, len(self.recompile_reasons), self._pending_reason)
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
        entry.before = before
        entry.jitted = jax.jit(self._make_pure(layout, entry.sbp), donate_argnums=donate,
                               compiler_options=self.compiler_options)
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
            entry.bwd = jax.jit(self._make_vjp(entry), static_argnums=(2,),
                                compiler_options=self.compiler_options)
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


_CONCRETE_CODE = Tensor._concrete.__code__
_JAX_READS = tuple(getattr(jax.errors, n) for n in (
    "ConcretizationTypeError", "TracerBoolConversionError", "TracerIntegerConversionError",
    "TracerArrayConversionError") if hasattr(jax.errors, n))
#: what jflow's ops with a data-dependent result shape (boolean-mask indexing, ``nonzero``,
#: ``masked_select``, ``unique``, ``repeat_interleave`` with tensor repeats) say when traced
_SHAPE_READS = ("unknown while tracing", "cannot be traced (inside jax.jit",
                "cannot run under tracing")
_INTERNAL = tuple(os.path.dirname(os.path.abspath(p)) + os.sep for p in (
    jax.__file__, np.__file__, os.path.dirname(os.path.abspath(__file__))))


def traced_read(error: BaseException) -> str | None:
    """When ``error`` is a trace reading a tensor's value (``Tensor.__bool__`` / ``item`` /
    ``numpy`` ... on a tracer, or JAX's concretization errors): what was read and where in
    the user's code (the innermost frame outside jflow, JAX and NumPy); else None."""
    what = None
    if isinstance(error, _JAX_READS):
        what = f"a traced value is read ({type(error).__name__})"
    user = None
    tb = error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        code = frame.f_code
        if code is _CONCRETE_CODE and isinstance(error, RuntimeError):
            op = frame.f_locals.get("what", "item")
            what = {"__bool__": "bool() of a traced tensor (e.g. `if tensor:` or a comparison "
                                "used as a condition)",
                    "item": ".item() / int() / float() of a traced tensor"}.get(
                op, f"Tensor.{op}() of a traced tensor")
        elif not code.co_filename.startswith(_INTERNAL + ("<jflow",)):
            user = (code.co_filename, tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    if what is None and isinstance(error, (TypeError, RuntimeError)):
        msg = str(error)
        if any(m in msg for m in _SHAPE_READS):
            first = re.split(r";|\. | \(inside|, which", msg)[0]
            what = f"an op whose result shape depends on values ({first})"
    if what is None:
        return None
    if user is None:
        return what
    line = linecache.getline(user[0], user[1]).strip()
    return (f"{what} at {os.path.basename(user[0])}:{user[1]} in {user[2]}"
            + (f" (`{line}`)" if line else ""))


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



def jit(fn: Callable[..., Any] | None = None, *, donate: bool = False, explain: bool = False,
        max_cache_size: int = 16, recompile_limit: int | None = 8) -> Any:
    """Compile ``fn`` (a function of tensors, modules and optimizers) into one XLA executable
    per signature; usable as ``@flow.jit`` or ``@flow.jit(explain=True)``.

    Modules and optimizers passed as arguments or referenced by the function (closure or
    globals) are state: their parameters, buffers, ``.grad`` and optimizer state go in and
    come back out, written into the same objects. ``donate=True`` lets XLA reuse the state's
    buffers for the new state (arrays that alias them — ``detach()`` views — become invalid).
    ``explain=True`` warns with the reason whenever the function traces again; the reasons
    are always kept in ``.recompile_reasons``. Past ``recompile_limit`` traced signatures
    (None: no limit) a new one warns once, saying what changed.
    """
    if fn is None:
        return lambda f: CompiledFunction(f, donate=donate, explain=explain,
                                          max_cache_size=max_cache_size,
                                          recompile_limit=recompile_limit)
    return CompiledFunction(fn, donate=donate, explain=explain, max_cache_size=max_cache_size,
                            recompile_limit=recompile_limit)
