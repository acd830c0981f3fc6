"""The state a compiled step reads and writes, and how it moves in and out of ``jax.jit``.

A jflow training step is a Python function over *mutable* objects: parameters and buffers of
modules, ``.grad`` of tensors, optimizer state and learning rates, and the random generator.
``jax.jit`` needs a pure function of arrays. :class:`StepState` gathers the mutable state of
one call into flat inputs (:meth:`StepState.inputs`), *installs* tracers into the very same
Python objects while the function traces (:meth:`StepState.install` — so user code, modules,
``loss.backward()`` and ``opt.step()`` run unchanged), reads the final values back out as
outputs (:meth:`StepState.collect`), restores the objects, and after the executable ran writes
the new arrays into them (:meth:`StepState.write_back`). Only arrays cross the boundary; the
structure (which grads exist, which optimizer state entries, which tensors changed) is
recorded at trace time in a :class:`Layout` and is part of the cache key.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from .. import random as _random
from ..device import device_scalar
from ..functional.wrapped_number import wrapped_number
from ..nn.modules.module import Module, structure_version
from ..optim.optimizer import Optimizer
from ..optim.watched import WatchedDict
from ..tensor import Tensor, _wrap, is_constant
from ..views import View

__all__ = ["StepState", "Layout", "is_stateful"]


#: ``sys.getrefcount(values[i])`` of a state array that only its own tensor holds: the
#: tensor's ``_value``, the input list and getrefcount's argument (tests/test_compile.py
#: checks that steady-state steps copy nothing and that held buffers are copied)
_OWNED_REFS = 3


def donatable_copy(a: Any) -> Any:
    """A new buffer with ``a``'s value and sharding, safe to donate (no compile)."""
    return jax.device_put(a, may_alias=False)


#: group entries that are not traced-in hyper-parameters (lr is an input of the step)
_NOT_HYPER = frozenset(("params", "lr", "initial_lr"))


def is_stateful(x: Any) -> bool:
    """Objects whose state a compiled function reads and writes (not pytree leaves)."""
    return isinstance(x, (Tensor, Module, Optimizer))


def _sig(t: Tensor) -> tuple:
    # the abstract value (shape, dtype, sharding) is a cached attribute of jax arrays:
    # several times cheaper than reading shape and dtype
    return (t._meta.aval, t._requires_grad, t._global)


def _static_sig(v: Any) -> Any:
    if isinstance(v, Tensor):
        return ("T",) + _sig(v)
    try:
        hash(v)
    except TypeError:
        return ("unhashable", type(v).__name__, repr(v))
    return v


class TensorSlot:
    """Stands for a tensor in a layout: its global layout (``Tensor._global``)."""

    __slots__ = ("glob",)

    def __init__(self, glob: Any) -> None:
        self.glob = glob


def wrap_like(value: Any, glob: Any) -> Tensor:
    """A Tensor around ``value`` with the global layout ``glob`` (None: local)."""
    t = _wrap(value)
    t._global = glob
    return t


@dataclass
class Layout:
    """What one trace found out: the output structure of the state (filled while tracing)."""

    changed: list[int] = field(default_factory=list)       # indices of tensors given new values
    grads: list[Any] = field(default_factory=list)          # per tensor: None or a TensorSlot
    opt_state: list[Any] = field(default_factory=list)      # per optimizer: [(p, {k: v|slot})]
    draws: int = 0                                          # default-generator draws
    ran_backward: bool = False                              # some .grad was (re)assigned
    out_diff: list[bool] = field(default_factory=list)      # per output leaf: requires grad
    out_slots: list[Any] = field(default_factory=list)      # per output leaf: TensorSlot|None
    out_nodes: bool = False                                 # the result holds containers.Node
    #: tensors the trace read with a concrete value (not inputs): id -> (tensor, description)
    captured: dict[int, Any] = field(default_factory=dict)

    def watch(self, op: Any, inputs: tuple) -> None:
        """The dispatch watcher while tracing: note each input tensor that is not a tracer."""
        for t in inputs:
            if t is None:
                continue
            if isinstance(t, (list, tuple)):
                self.watch(op, tuple(t))
            elif not isinstance(t._value, Tracer) and id(t) not in self.captured \
                    and not is_constant(t):
                kind = "Parameter" if type(t).__name__ == "Parameter" else "Tensor"
                self.captured[id(t)] = (t, f"{kind}{list(t.shape)} {t.dtype} (read by op "
                                           f"'{op.name}')")


class StepState:
    """The mutable state of one call of a compiled function.

    ``tensors``: every Tensor involved — the call's tensor arguments, the parameters and
    buffers of the modules, and the optimizers' parameters (each once). Arrays shared by
    several tensors are passed once. ``track_grads``: ``.grad`` of tensors that require grad
    goes in and out (flow.jit); otherwise grads start empty inside the step and the eager
    grads are left as they were (nn.Graph, as OneFlow's graph mode).
    """

    def __init__(self, tensors: list[Tensor], n_args: int, submodules: tuple[Module, ...],
                 optimizers: list[Optimizer],
                 track_grads: bool) -> None:
        self.tensors = tensors
        self.submodules = submodules
        self.optimizers = optimizers
        self.track_grads = track_grads
        self.n_args = n_args
        self.index = {id(t): i for i, t in enumerate(tensors)}
        # arrays shared by several tensors go in once; argument tensors' arrays apart from the
        # state's (the state's may be donated, the arguments' never are)
        a_ids: dict[int, int] = {}
        s_ids: dict[int, int] = {}
        self.value_of = [a_ids.setdefault(id(t._value), len(a_ids)) for t in tensors[:n_args]]
        self.value_of += [s_ids.setdefault(id(t._value), len(s_ids)) for t in tensors[n_args:]]
        self.n_values = (len(a_ids), len(s_ids))
        self._undo: list[Any] = []
        self._traced: list[Any] = []
        self._installed_grads: list[Any] = []

    def with_args(self, args: Any, state_index: dict[int, int]) -> StepState:
        """This state with other argument tensors (as many, all distinct, none of them state,
        with distinct arrays: the caller checked) and ``state_index`` (:attr:`index` without
        the arguments): the fast path's gather."""
        new = StepState.__new__(StepState)
        n = self.n_args
        new.tensors = [*args, *self.tensors[n:]]
        new.submodules, new.optimizers = self.submodules, self.optimizers
        new.track_grads, new.n_args = self.track_grads, n
        index = state_index.copy()
        for i, t in enumerate(args):
            index[id(t)] = i
        new.index = index
        new.value_of, new.n_values = self.value_of, self.n_values
        new._undo, new._traced, new._installed_grads = [], [], []
        return new

    # -- gathering ------------------------------------------------------------------------
    @staticmethod
    def gather(leaves: list[Any], modules: list[Module], optimizers: list[Optimizer],
               track_grads: bool, cache: list | None = None,
               extra: list[Tensor] = ()) -> StepState:
        """The state of one call: the arguments' tensors, then the modules' parameters and
        buffers and the optimizers' parameters, then ``extra`` tensors (captured tensors that
        changed after a trace: they become inputs) (the module walk is cached in ``cache`` under
        the module structure version and the optimizers' parameter groups)."""
        tensors: list[Tensor] = []
        seen: set[int] = set()
        for x in leaves:
            if isinstance(x, Tensor):
                if id(x) not in seen:
                    seen.add(id(x))
                    tensors.append(x)
            elif isinstance(x, Module) and x not in modules:
                modules = [*modules, x]
            elif isinstance(x, Optimizer) and x not in optimizers:
                optimizers = [*optimizers, x]
        n_args = len(tensors)
        stamp = (structure_version(), tuple(map(id, modules)),
                 tuple((id(g["params"]), len(g["params"])) for opt in optimizers
                       for g in opt.param_groups))
        if cache is not None and cache and cache[0] == stamp:
            subs, owned = cache[1], cache[2]
        else:
            subs, owned, own_seen = [], [], set()
            for m in modules:
                for mm in m.modules():
                    subs.append(mm)
                    for store in (mm._parameters, mm._buffers):
                        for v in store.values():
                            if v is not None and id(v) not in own_seen:
                                own_seen.add(id(v))
                                owned.append(v)
            for opt in optimizers:
                for g in opt.param_groups:
                    for p in g["params"]:
                        if id(p) not in own_seen:
                            own_seen.add(id(p))
                            owned.append(p)
            subs = tuple(subs)
            if cache is not None:
                cache[:] = [stamp, subs, owned]
        if seen:
            tensors += [t for t in owned if id(t) not in seen]
        else:
            tensors = list(owned)
        if extra:
            have = {id(t) for t in tensors}
            tensors += [t for t in extra if id(t) not in have]
        return StepState(tensors, n_args, subs, optimizers, track_grads)

    def key(self) -> tuple:
        """Everything about the state that shapes the trace (see :func:`explain_change`)."""
        tensors = tuple(_sig(t) for t in self.tensors)
        grads = tuple(None if t.grad is None else _sig(t.grad) for t in self.tensors) \
            if self.track_grads else ()
        training = tuple(m.training for m in self.submodules)
        opts = []
        index = self.index
        for opt in self.optimizers:
            # (which state tensors each group updates is structure too: a parameter appended
            # to a group's list changes what the step writes)
            hyper = tuple(tuple(_static_sig(v) if k not in _NOT_HYPER else None
                                for k, v in g.items()) + tuple(g)
                          + (tuple(index.get(id(p), -1) for p in g["params"]),)
                          for g in opt.param_groups)
            # which entries exist, and the values of non-tensor ones (the avals of state
            # tensors follow their parameters'; jax itself retraces if one ever differs)
            state = tuple((index.get(id(p), -1), tuple(s),
                           tuple(None if isinstance(v, Tensor) else _static_sig(v)
                                 for v in s.values()))
                          for p, s in opt.state.items())
            opts.append((hyper, state))
        return (("state tensors", tensors), ("shared arrays", tuple(self.value_of)),
                ("grads", grads), ("module training modes", training),
                ("optimizer hyper-parameters and state", tuple(opts)))

    # -- inputs ---------------------------------------------------------------------------
    def inputs(self, owned: dict[int, int] | None = None) -> tuple:
        """(argument values, state values, grads, optimizer state, learning rates, rng) as
        arrays."""
        n = self.n_args
        arg_values: list[Any] = [None] * self.n_values[0]
        values: list[Any] = [None] * self.n_values[1]
        for t, vi in zip(self.tensors[:n], self.value_of[:n]):
            arg_values[vi] = t._value
        for t, vi in zip(self.tensors[n:], self.value_of[n:]):
            values[vi] = t._value
        # flat lists (the order of opt.state and its entries): cheaper for jax to flatten
        opt_tensors = [[v for s in opt.state.values() for v in s.values()
                        if isinstance(v, Tensor)] for opt in self.optimizers]
        opt_state = [[v._value for v in ts] for ts in opt_tensors]
        if owned is not None:
            # Donation: a donated buffer is deleted by the call. jax arrays are immutable, so
            # jflow shares them freely (detach(), deepcopy, state_dict(), the tape's saved
            # values) and jax itself may alias buffers (device_put of a local array into a
            # global one). Only an array that this step produced for this very tensor (the
            # ``owned`` record of the last write-back) and that nothing else references is
            # donated; any other is copied first, once: by ``jax.device_put(may_alias=False)``,
            # a buffer copy that keeps the sharding and compiles nothing (``jnp.copy`` is an
            # executable per shape: 19 compiles on a ResNet's first call, ~0.3 s cold)
            for t, vi in zip(self.tensors[n:], self.value_of[n:]):
                if sys.getrefcount(values[vi]) > _OWNED_REFS or \
                        owned.get(id(t)) != id(values[vi]):
                    values[vi] = donatable_copy(values[vi])
            for ts, arrays in zip(opt_tensors, opt_state):
                for i, t in enumerate(ts):
                    if sys.getrefcount(arrays[i]) > _OWNED_REFS or \
                            owned.get(id(t)) != id(arrays[i]):
                        arrays[i] = donatable_copy(arrays[i])
        grads = [t.grad._value if self.track_grads and t.grad is not None else None
                 for t in self.tensors]
        lrs = [[_lr_array(g) for g in opt.param_groups] for opt in self.optimizers]
        gen = _random.default_generator
        c = _COUNTER
        if c[0] is not gen or c[1] != gen._counter:   # (steady state: the last step's output)
            c[:] = [gen, gen._counter, jax.device_put(np.int64(gen._counter))]
        rng = (gen._key_tensor()._value, c[2])
        return arg_values, values, grads, opt_state, lrs, rng

    # -- inside the trace -----------------------------------------------------------------
    def install(self, arg_values: list[Any], values: list[Any], grads: list[Any],
                opt_state: list[Any], lrs: list[Any], rng: Any) -> None:
        """Put the tracers into the Python objects (undone by :meth:`restore`)."""
        undo = self._undo
        self._traced = [arg_values[vi] if i < self.n_args else values[vi]
                        for i, vi in enumerate(self.value_of)]
        self._installed_grads = []
        for t, v, g in zip(self.tensors, self._traced, grads):
            if t._aliases:  # inside the step a view is its own tensor (a plain one, so a
                undo.append(("view", t))  # write stays in it); after the call, write_back
                undo.append((t, t._value, t._version, t.grad_fn, t.grad))  # commits its
                t.__class__ = Tensor  # new value to its base
            else:
                undo.append((t, t._value, t._version, t.grad_fn, t.grad))
            t._value = v
            t.grad_fn = None
            # (a backward replaying the step may find the .grad cleared since the call)
            t._grad = None if g is None else wrap_like(
                g, (t._grad if t._grad is not None else t)._global)
            self._installed_grads.append((t.grad, g))
        self._globs_in = [t._global for t in self.tensors]
        self._opt_had = [{id(p) for p in opt.state} for opt in self.optimizers]
        self._opt_globs_in = {}
        for opt, states, group_lrs in zip(self.optimizers, opt_state, lrs):
            undo.append((opt, opt.state, [g["lr"] for g in opt.param_groups]))
            self._opt_globs_in.update({(id(opt), id(p), k): v._global
                                       for p, s in opt.state.items()
                                       for k, v in s.items() if isinstance(v, Tensor)})
            new_state = {}
            it = iter(states)
            for p, s in opt.state.items():
                new_state[p] = {k: (wrap_like(next(it), v._global) if isinstance(v, Tensor)
                                    else v)
                                for k, v in s.items()}
            opt.state = new_state
            for g, lr in zip(opt.param_groups, group_lrs):
                # (a Python float lr: promoted as one, as the eager step promotes it)
                g["lr"] = _wrap(lr) if isinstance(g["lr"], Tensor) else wrapped_number(lr)
        gen = _random.default_generator
        undo.append((gen, gen._key, gen._counter))
        gen._key, gen._base, gen._counter = _wrap(rng[0]), rng[1], 0
        _random._tracing_guard = _foreign_generator

    def collect(self, layout: Layout, everything: bool) -> tuple:
        """The state's final values as outputs; fills ``layout``. ``everything``: output
        every state value (donated inputs must all come back), else only changed ones."""
        layout.changed, layout.grads, layout.opt_state = [], [], []
        new_values = []
        for i, t in enumerate(self.tensors):
            if (everything and i >= self.n_args) or t._value is not self._traced[i]:
                layout.changed.append(i)
                new_values.append(t._value)
        grads = []
        for t in self.tensors:
            g = t.grad if self.track_grads else None
            layout.grads.append(None if g is None else TensorSlot(g._global))
            if g is not None:
                grads.append(g._value)
        opt_out = []
        for opt in self.optimizers:
            entries, arrays = [], []
            for p, s in opt.state.items():
                statics = {k: (TensorSlot(v._global) if isinstance(v, Tensor) else v)
                           for k, v in s.items()}
                # (state of a tensor the optimizer no longer updates is kept by identity)
                entries.append((self.index.get(id(p), p), statics))
                arrays += [v._value for v in s.values() if isinstance(v, Tensor)]
            layout.opt_state.append(entries)
            opt_out.append(arrays)
        layout.draws = _random.default_generator._counter
        layout.ran_backward = any(t.grad is not g or (g is not None and g._value is not gv)
                                  for t, (g, gv) in zip(self.tensors, self._installed_grads))
        return new_values, grads, opt_out

    def state_made(self, skip: Any) -> list[tuple[Optimizer, list[Tensor]]]:
        """(Inside the trace, after the step ran.) ``(optimizer, parameters)`` for each
        optimizer not in ``skip`` whose step made state for parameters that had none (its
        first step): flow.jit makes that state up front and traces again, so the state is an
        input of the one executable it compiles (else the second call compiles the whole
        step again, with the state as inputs)."""
        made = []
        for opt, had in zip(self.optimizers, self._opt_had):
            if opt not in skip:
                new = [p for p in opt.state if id(p) not in had]
                if new:
                    made.append((opt, new))
        return made

    def pins(self) -> list[tuple[Any, Any]]:
        """``(new value, (placement, nd))`` of the state a traced step rewrote that existed
        before it: it must come back with the same layout, else the next call's key changes
        (the whole-step SBP plan keeps these, sharding/plan.py). Called after the step ran,
        inside the trace."""
        pins = [(t._value, g) for t, g in zip(self.tensors, self._globs_in)
                if g is not None and t._global is not None]
        pins += [(t.grad._value, g._global) for t, (g, gv) in zip(self.tensors,
                                                                  self._installed_grads)
                 if g is not None and gv is not None and t.grad is not None
                 and t.grad._global is not None]
        pins += [(v._value, self._opt_globs_in[(id(opt), id(p), k)])
                 for opt in self.optimizers for p, s in opt.state.items()
                 for k, v in s.items() if (id(opt), id(p), k) in self._opt_globs_in
                 and isinstance(v, Tensor) and self._opt_globs_in[(id(opt), id(p), k)]]
        return pins

    def diff_inputs(self) -> list[tuple[int, int, Tensor]]:
        """``(group, value index, tensor)`` of the inputs an output may be differentiated
        with respect to: tensors that require grad (group 0: arguments, 1: state)."""
        out, seen = [], set()
        for i, (t, vi) in enumerate(zip(self.tensors, self.value_of)):
            pos = (int(i >= self.n_args), vi)
            if t._requires_grad and pos not in seen:
                seen.add(pos)
                out.append((*pos, t))
        return out

    def restore(self) -> None:
        """Give the Python objects their concrete state back (after tracing)."""
        _random._tracing_guard = None
        for u in reversed(self._undo):
            obj = u[0]
            if obj.__class__ is str:  # ("view", t): a view again
                u[1].__class__ = View
            elif isinstance(obj, Tensor):
                obj._value, obj._version, obj.grad_fn, obj._grad = u[1:]
            elif isinstance(obj, Optimizer):
                obj.state = u[1]
                for g, lr in zip(obj.param_groups, u[2]):
                    g["lr"] = lr
            else:  # the generator
                obj._key, obj._counter, obj._base = u[1], u[2], None
        self._undo = []

    # -- after the call -------------------------------------------------------------------
    def write_back(self, layout: Layout, new_values: list[Any], grads: list[Any],
                   opt_out: list[Any], owned: dict[int, int] | None = None) -> None:
        """Write the step's outputs into the objects; with ``owned`` (a donating step),
        record which array each state tensor now holds (see :meth:`inputs`)."""
        if owned is not None:
            owned.clear()
        for i, v in zip(layout.changed, new_values):
            t = self.tensors[i]
            if t._value is not v:
                t._value = v
                t._version += 1
            if owned is not None:
                owned[id(t)] = id(v)
        if self.track_grads:
            write_grads(self.tensors, layout.grads, grads)
        for opt, entries, arrays in zip(self.optimizers, layout.opt_state, opt_out):
            old = opt.state
            new: dict[Tensor, dict[str, Any]] = {}
            it = iter(arrays)
            for pi, statics in entries:
                p = self.tensors[pi] if isinstance(pi, int) else pi
                prev = old.get(p, {})
                entry = {}
                for k, sv in statics.items():
                    if sv.__class__ is TensorSlot:
                        t = prev.get(k)
                        if isinstance(t, Tensor):
                            t._value = next(it)
                            t._version += 1
                        else:
                            t = wrap_like(next(it), sv.glob)
                        entry[k] = t
                        if owned is not None:
                            owned[id(t)] = id(t._value)
                    else:
                        entry[k] = sv
                new[p] = WatchedDict(entry)
            opt.state = WatchedDict(new)
        if layout.draws:
            _random.default_generator._counter += layout.draws


def write_grads(tensors: list[Tensor], slots: list[Any], grads: list[Any]) -> None:
    """The step's gradients into ``tensors`` (``slots``: per tensor, None for no gradient or
    a :class:`TensorSlot`; ``grads``: the arrays of the slots, in order)."""
    it = iter(grads)
    for t, slot in zip(tensors, slots):
        if slot is None:
            t._grad = None
        elif t.grad is None:
            t._grad = wrap_like(next(it), slot.glob)
        else:
            t.grad._value = next(it)
            t.grad._version += 1


# Host scalars reach a compiled step as device arrays: a NumPy argument sends jax.jit down
# its slow dispatch path (measured: 86 vs 51 µs for a small MLP step).

#: (generator, draw count, that count as a device int64): the draw count after a step comes
#: out of the step itself (see :meth:`StepState.set_counter`)
_COUNTER: list[Any] = [None, None, None]

def _lr_array(group: dict[str, Any]) -> Any:
    lr = group["lr"]
    if isinstance(lr, Tensor):
        return lr._value
    return device_scalar(lr, np.float64)  # (a Python float's precision: a WrappedNumber)


def set_counter(value: Any) -> None:
    """Record the default generator's draw count after a step, as the step computed it on
    device, so the next step needs no host-to-device transfer for it."""
    gen = _random.default_generator
    if isinstance(value.sharding, jax.sharding.SingleDeviceSharding):
        # (a step over global tensors returns it replicated over the mesh: feeding that back
        # would change an input's sharding and make jax retrace)
        _COUNTER[:] = [gen, gen._counter, value]


def _foreign_generator(gen: Any) -> None:
    raise RuntimeError(
        f"a compiled function (flow.jit / nn.Graph) drew random numbers from {gen!r}, which is "
        f"not the default generator: its draws would be frozen into the executable. Use the "
        f"default generator (flow.manual_seed) inside compiled code")


def tree_flatten_stateful(tree: Any) -> tuple[list[Any], Any]:
    """Flatten arguments keeping Tensors, Modules and Optimizers as leaves."""
    return jax.tree_util.tree_flatten(tree, is_leaf=is_stateful)
