"""The steady-state call of a compiled function: the last cache key, reused while nothing that
shapes the trace changed, with the executable's inputs built straight from the objects.

A call that computes its key (``CompiledFunction._lookup``) reaches the module tree, gathers
the state, hashes every aval and looks the key up: ~25 µs of Python for a small step. A training
loop calls the same step with the same structure every time, so after such a call
:meth:`FastPath.arm` records what the next call must find unchanged, and
:meth:`FastPath.inputs` checks it — by identity and a few version counters, never by reading
the structure again — and returns the inputs of the cached executable, or None (then the key is
computed as usual). What is checked, against the parts of the key (``StepState.key``):

- arguments: tensors (no keywords, no other leaves), distinct, none of them state, the same
  ``requires_grad`` and global layout, no ``.grad`` where gradients are tracked. Their shapes
  and dtypes are not compared here: ``jax.jit`` compares them itself, and a mismatch makes it
  trace, which the compiled function refuses on this path (``FAST`` as the current call) and
  answers by computing the key;
- the reach walk's reads (:func:`~jflow.compiler.reach.reach_holds`), the grad mode, the module
  structure and training modes (:func:`~jflow.nn.modules.module.structure_version`), the
  optimizers' ``param_groups`` and ``state`` (watched containers:
  :data:`jflow.optim.watched.VERSION`, and the attributes' identity);
- the state tensors' arrays, ``requires_grad`` and layouts, their ``.grad`` tensors, and the
  optimizer state tensors' arrays, by identity with what the last call wrote (so the arrays
  have the key's avals, and a donated array is one the step produced for that tensor);
- captured tensors that became state (``CompiledFunction._extra``).

The state arrays a call writes back are the stamps of the next call and, for a donating step,
the very input lists of the next executable call.
"""

from __future__ import annotations

import operator
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import random as _random
from ..autograd import is_grad_enabled
from ..nn.modules.module import structure_version
from ..optim import watched
from ..tensor import Tensor
from .reach import reach_holds
from .state import (
    _COUNTER,
    _OWNED_REFS,
    StepState,
    _lr_array,
    is_stateful,
    set_counter,
    wrap_like,
    write_grads,
)

__all__ = ["FastPath", "FAST", "FastMiss"]

_is = operator.is_
_VALUE = operator.attrgetter("_value")
_REQUIRES_GRAD = operator.attrgetter("_requires_grad")
_GLOBAL = operator.attrgetter("_global")
_GRAD = operator.attrgetter("_grad")
_STATE = operator.attrgetter("state")
_GROUPS = operator.attrgetter("param_groups")
_LR = operator.itemgetter("lr")
_getrefcount = sys.getrefcount
#: values whose identity says all about them (a list could change in place)
_FROZEN = frozenset({int, float, bool, str, bytes, complex, type(None)})


def frozen(v: Any) -> bool:
    """Whether ``v`` cannot change in place (so its identity stands for its value)."""
    t = type(v)
    return t in _FROZEN or (t is tuple and all(map(frozen, v)))


class _Fast:
    """The value of ``CompiledFunction._current`` during a fast call: a trace started by
    ``jax.jit`` then (the avals it saw differ from the key's) raises :class:`FastMiss`."""


FAST = _Fast()


class FastMiss(Exception):
    """``jax.jit`` started a trace during a fast call: the call's key must be computed."""


class FastPath:
    """The stamps of the last call that computed its key, and the inputs they prove valid
    (see the module docstring)."""

    __slots__ = ("key", "entry", "state", "n_args", "arg_rg", "arg_glob", "none_args",
                 "reach_checks", "grad_on", "structure", "version", "optimizers", "groups",
                 "opt_states", "tensors", "state_ids", "values", "rg", "globs", "grads",
                 "grad_values", "opt_tensors", "opt_values", "changed", "grad_slots",
                 "lr_groups", "lr_last", "lrs", "none_grads", "extra", "donate", "draws",
                 "local_counter", "out_slot", "out_flat", "ran_backward")

    @staticmethod
    def arm(owner: Any, entry: Any, key: tuple, state: StepState, leaves: list,
            slow: tuple) -> FastPath | None:
        """After a call that computed its key: the stamps that let the next calls skip it, or
        None when the state as the call left it would not have that very key again (the first
        step that creates optimizer state, a step that flips a training mode while tracing), or
        when a part of it can change unseen (then every call computes its key)."""
        treedef, reach, modules, optimizers, extra, grad_on = slow
        if owner._cache.get(key) is not entry or entry.guards is None:
            return None
        n = state.n_args
        if len(leaves) != n or any(type(x) is not Tensor for x in leaves) \
                or treedef != jax.tree_util.tree_structure((tuple(leaves), {}), is_stateful):
            return None  # (only calls with distinct tensor arguments and no keywords are fast)
        checks = owner._reach_checks
        if checks is not None and not checks[0]:
            return None  # (a walk cut short: only a new walk can tell)
        track = owner.track_grads
        after = StepState.gather(leaves, modules, optimizers, track, owner._gather_cache,
                                 extra)
        if len(after.tensors) != len(state.tensors) \
                or not all(map(_is, after.tensors, state.tensors)) or after.key() != key[2:-1]:
            return None
        if after.value_of[n:] != list(range(len(after.tensors) - n)):
            return None  # (state tensors sharing an array: the key follows the sharing)
        if track and any(t._grad is not None for t in leaves):
            return None
        for opt in optimizers:
            groups = opt.param_groups
            if type(groups) is not watched.WatchedList or type(opt.state) is not \
                    watched.WatchedDict:
                return None  # (not written back by a step, or replaced by the user)
            for g in groups:
                if type(g) is not watched.WatchedGroup or type(g["params"]) is not \
                        watched.WatchedList or not all(frozen(v) for k, v in g.items()
                                                       if k not in ("params", "lr",
                                                                    "initial_lr")):
                    return None  # (a value that could change in place: only the key can tell)
            if any(type(e) is not watched.WatchedDict
                   or not all(isinstance(v, Tensor) or frozen(v) for v in e.values())
                   for e in opt.state.values()):
                return None
        layout = entry.layout
        if any(i < n for i in layout.changed) or (track and any(layout.grads[:n])):
            return None  # (the step writes into its arguments: they are new objects each call)
        tensors = after.tensors[n:]
        f = FastPath()
        f.key, f.entry, f.state, f.n_args = key, entry, after, n
        f.arg_rg = [t._requires_grad for t in leaves]
        f.arg_glob = [t._global for t in leaves]
        f.none_args = [None] * n
        f.reach_checks = checks
        f.grad_on = grad_on
        f.structure = structure_version()
        f.version = watched.VERSION[0]
        f.optimizers = list(optimizers)
        f.groups = list(map(_GROUPS, optimizers))
        f.opt_states = list(map(_STATE, optimizers))
        f.tensors = tensors
        f.state_ids = frozenset(map(id, tensors))
        f.rg = list(map(_REQUIRES_GRAD, tensors))
        f.globs = list(map(_GLOBAL, tensors))
        f.opt_tensors = [[v for s in opt.state.values() for v in s.values()
                          if isinstance(v, Tensor)] for opt in optimizers]
        f.changed = [after.tensors[i] for i in layout.changed]
        f.grad_slots = layout.grads[n:] if track else None
        f.lr_groups = [g for opt in optimizers for g in opt.param_groups]
        f.lr_last = f.lrs = None
        f.none_grads = [None] * len(after.tensors)
        f.extra = [r() for r in owner._extra.values()]
        f.donate = owner.donate
        f.draws = layout.draws
        f.local_counter = not any(t._global is not None for t in after.tensors)
        slots = layout.out_slots
        f.out_slot = slots[0] if len(slots) == 1 else None
        f.out_flat = f.out_slot is None and all(s is None for s in slots)
        f.ran_backward = layout.ran_backward
        f.stamp()
        return f

    def stamp(self, values: list[Any] | None = None, opt_values: list[Any] | None = None
              ) -> None:
        """Record the arrays the state holds now (after a write-back) as the next stamps
        (``values`` / ``opt_values``: the lists the executable returned, when they are
        exactly those arrays)."""
        self.values = list(map(_VALUE, self.tensors)) if values is None else values
        self.opt_values = [list(map(_VALUE, ts)) for ts in self.opt_tensors] \
            if opt_values is None else opt_values
        if self.grad_slots is not None:
            self.grads = list(map(_GRAD, self.tensors))
            self.grad_values = [None if g is None else g._value for g in self.grads]

    def owned(self) -> dict[int, int]:
        """``id(tensor) -> id(array)`` of the state arrays the last call gave their tensors
        (what a donating call may donate without a copy, see ``StepState.inputs``)."""
        out = dict(zip(map(id, self.tensors), map(id, self.values)))
        for ts, vs in zip(self.opt_tensors, self.opt_values):
            out.update(zip(map(id, ts), map(id, vs)))
        return out

    def inputs(self, owner: Any, args: tuple) -> tuple | None:
        """The executable's inputs for a call with ``args``, or None when the stamps do not
        prove that the call has the last key."""
        if len(args) != self.n_args:
            return None
        state_ids = self.state_ids
        for a, rg, glob in zip(args, self.arg_rg, self.arg_glob):
            if type(a) is not Tensor or a._requires_grad is not rg or a._global is not glob \
                    or id(a) in state_ids:
                return None
        n = self.n_args
        if n > 1 and (len(set(map(id, args))) != n
                      or len(set(map(id, map(_VALUE, args)))) != n):
            return None
        track = self.grad_slots is not None
        if track and not all(map(_is, map(_GRAD, args), self.none_args)):
            return None
        if structure_version() != self.structure or watched.VERSION[0] != self.version \
                or is_grad_enabled() is not self.grad_on:
            return None
        if self.reach_checks is not None and not reach_holds(self.reach_checks):
            return None
        opts = self.optimizers
        if opts and (not all(map(_is, map(_GROUPS, opts), self.groups))
                     or not all(map(_is, map(_STATE, opts), self.opt_states))):
            return None
        tensors, values, opt_values = self.tensors, self.values, self.opt_values
        if not all(map(_is, map(_VALUE, tensors), values)) \
                or list(map(_REQUIRES_GRAD, tensors)) != self.rg \
                or not all(map(_is, map(_GLOBAL, tensors), self.globs)):
            return None
        for ts, vs in zip(self.opt_tensors, opt_values):
            if not all(map(_is, map(_VALUE, ts), vs)):
                return None
        if track:
            if not all(map(_is, map(_GRAD, tensors), self.grads)) \
                    or not all(g is None or g._value is v
                               for g, v in zip(self.grads, self.grad_values)):
                return None
            grads = [*self.none_args, *self.grad_values]
        else:
            grads = self.none_grads
        if (owner._extra or self.extra) and not _same_objects(
                [r() for r in owner._extra.values()], self.extra):
            return None
        if self.donate:
            # (a donated array must be held by its tensor and the stamps alone)
            if values and max(map(_getrefcount, values)) > _OWNED_REFS:
                values = _copied(values)
            if opts:
                opt_values = [vs if not vs or max(map(_getrefcount, vs)) <= _OWNED_REFS
                              else _copied(vs) for vs in opt_values]
        lrs = self.lrs
        if lrs is None or not all(map(_is, map(_LR, self.lr_groups), self.lr_last)):
            lrs = [[_lr_array(g) for g in groups] for groups in self.groups]
            last = list(map(_LR, self.lr_groups))
            # (kept while the same numbers are there; a tensor lr is read on every call)
            self.lrs, self.lr_last = (lrs, last) if all(type(v) in _FROZEN for v in last) \
                else (None, None)
        gen = _random.default_generator
        c = _COUNTER
        if c[0] is not gen or c[1] != gen._counter:
            c[:] = [gen, gen._counter, jax.device_put(np.int64(gen._counter))]
        key = gen._key
        if key is None:
            key = gen._key_tensor()
        return (list(map(_VALUE, args)), values, grads, opt_values, lrs, (key._value, c[2]),
                [])

    def write_back(self, new_values: list[Any], new_grads: list[Any], opt_out: list[Any],
                   counter: Any) -> None:
        """The executable's outputs into the objects, as ``StepState.write_back`` does (the
        optimizer state's dicts stay: only their tensors' arrays change), then the stamps."""
        for t, v in zip(self.changed, new_values):
            if t._value is not v:
                t._value = v
                t._version += 1
        if self.grad_slots is not None:
            write_grads(self.tensors, self.grad_slots, new_grads)
        for ts, vs in zip(self.opt_tensors, opt_out):
            for t, v in zip(ts, vs):
                t._value = v
                t._version += 1
        gen = _random.default_generator
        if self.draws:
            gen._counter += self.draws
        if self.local_counter:
            _COUNTER[:] = [gen, gen._counter, counter]
        else:
            set_counter(counter)
        # (a donating step returns every state array, in order: the stamps are its lists)
        self.stamp(new_values if self.donate else None, opt_out)

    def outputs(self, out: Any) -> Any:
        """The call's result: the executable's outputs wrapped as the trace returned them."""
        slot = self.out_slot
        if slot is not None and isinstance(out, jax.Array):
            return wrap_like(out, slot.glob)
        if self.out_flat:
            return out
        leaves, treedef = jax.tree_util.tree_flatten(out)
        return jax.tree_util.tree_unflatten(treedef, [
            x if s is None else wrap_like(x, s.glob)
            for x, s in zip(leaves, self.entry.layout.out_slots)])

    def current(self, args: tuple) -> tuple:
        """``CompiledFunction._current`` for this call (what a backward's trace reads)."""
        state = self.state.with_args(args, {id(t): i for i, t in enumerate(
            self.state.tensors) if i >= self.n_args})
        return state, list(args), _tensor_args_def(self.n_args)


def _copied(arrays: list[Any]) -> list[Any]:
    """``arrays`` with a copy of each that something besides its tensor holds."""
    return [v if _getrefcount(v) <= _OWNED_REFS + 1 else jnp.copy(v) for v in arrays]


def _same_objects(a: list, b: list) -> bool:
    return len(a) == len(b) and all(map(_is, a, b))


_TREEDEFS: dict[int, Any] = {}


def _tensor_args_def(n: int) -> Any:
    """The tree structure of ``(args, {})`` for ``n`` tensor arguments."""
    d = _TREEDEFS.get(n)
    if d is None:
        d = _TREEDEFS[n] = jax.tree_util.tree_structure((tuple(range(n)), {}))
    return d

