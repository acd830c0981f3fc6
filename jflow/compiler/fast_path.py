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
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from .. import _codegen
from .. import random as _random
from ..autograd import is_grad_enabled
from ..nn.modules.module import structure_version
from ..optim import watched
from ..tensor import Tensor
from . import state as _state
from .reach import _MISSING, _cell_value
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
                 "local_counter", "out_slot", "out_flat", "attach", "inputs", "write_back",
                 "source")

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
        if not _codegen.enabled():  # plain mode (jflow._codegen): every call computes its key
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
        # (the result gets a tape node: a flow.jit call differentiated eagerly afterwards)
        f.attach = not owner.donate and not layout.ran_backward and grad_on \
            and any(layout.out_diff)
        f.stamp()
        f.source, f.inputs, f.write_back = _compile(f, owner)
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

    def refresh_lrs(self) -> list[list[Any]]:
        """The learning rates as device scalars, kept while the same numbers are there (a
        tensor lr is read on every call)."""
        lrs = [[_lr_array(g) for g in groups] for groups in self.groups]
        last = list(map(_LR, self.lr_groups))
        self.lrs, self.lr_last = (lrs, last) if all(type(v) in _FROZEN for v in last) \
            else (None, None)
        return lrs

    @staticmethod
    def rng() -> None:
        """Put the default generator's draw count on the device (it was changed eagerly)."""
        gen = _random.default_generator
        _COUNTER[:] = [gen, gen._counter, jax.device_put(np.int64(gen._counter))]

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


def _compile(f: FastPath, owner: Any) -> tuple[str, Callable[..., Any], Callable[..., None]]:
    """``inputs(F, owner, args)``: the executable's inputs for a call with ``args``, or None when
    the stamps do not prove that the call has the last key (the checks of the module
    docstring); and ``write_back(F, out, new_values, new_grads, opt_out, counter)``, which
    writes the executable's outputs into the objects as ``StepState.write_back`` does (the
    optimizer state's dicts stay, only their tensors' arrays change), stamps them and
    returns the call's result.
    Generated straight-line code over this call's objects (bound as constants): a call pays
    one attribute read and one identity test per stamp instead of a loop. ``f.source`` keeps
    their text."""
    # (``F``, the FastPath, is an argument: a constant would make a reference cycle that
    # keeps the stamped arrays alive until a full garbage collection)
    env: dict[str, Any] = {"Tensor": Tensor, "_is": _is, "_MISSING": _MISSING,
                           "structure_version": structure_version, "VERSION": watched.VERSION,
                           "is_grad_enabled": is_grad_enabled, "_same_objects": _same_objects,
                           "_cell_value": _cell_value, "random": _random, "_COUNTER": _COUNTER,
                           "set_counter": set_counter, "write_grads": write_grads,
                           "getrefcount": _getrefcount, "_copied": _copied,
                           "Array": jax.Array, "wrap_like": wrap_like}

    def const(obj: Any) -> str:
        if obj is None or obj is True or obj is False:
            return repr(obj)
        name = f"k{len(env)}"
        env[name] = obj
        return name

    n = f.n_args
    lines = [f"if len(args) != {n}: return None"]
    if n:
        names = [f"a{i}" for i in range(n)]
        lines.append(f"{', '.join(names)}, = args")
        ids = const(f.state_ids)
        for a, rg, glob in zip(names, f.arg_rg, f.arg_glob):
            lines.append(f"if type({a}) is not Tensor or {a}._requires_grad is not {rg!r} or "
                         f"{a}._global is not {const(glob)} or id({a}) in {ids}: return None")
            if f.grad_slots is not None:
                lines.append(f"if {a}._grad is not None: return None")
        if n == 2:
            lines.append("if a0 is a1: return None")
        elif n > 2:
            lines.append(f"if len(set(map(id, args))) != {n}: return None")
    lines.append(f"if structure_version() != F.structure or VERSION[0] != F.version or "
                 f"is_grad_enabled() is not {f.grad_on}: return None")
    for c in (f.reach_checks or [True])[1:]:
        if c[0] == 0:  # a list: its items
            obj = const(c[1])
            lines.append(f"if len({obj}) != {len(c[2])} or not all(map(_is, {obj}, "
                         f"{const(c[2])})): return None")
        elif c[0] == 1:  # a dict or __dict__: its keys and values
            obj = const(c[1])
            lines.append(f"if len({obj}) != {len(c[2])} or not all(map(_is, {obj}, "
                         f"{const(c[2])})) or not all(map(_is, {obj}.values(), "
                         f"{const(c[3])})): return None")
        else:  # a function: its code, closure cells and the globals it names
            fn, code, cells, cvals, g, gnames, gvals = c[1:]
            terms = [f"{const(fn)}.__code__ is not {const(code)}"]
            terms += [f"{const(cell)}.cell_contents is not {const(v)}" if v is not _MISSING
                      else f"_cell_value({const(cell)}) is not _MISSING"
                      for cell, v in zip(cells, cvals)]  # (a cell emptied since: ValueError)
            gd = const(g)
            terms += [f"{gd}.get({name!r}, _MISSING) is not {const(v)}"
                      for name, v in zip(gnames, gvals)]
            lines += [f"if {term}: return None" for term in terms]
    for opt, groups, st in zip(f.optimizers, f.groups, f.opt_states):
        o = const(opt)
        lines.append(f"if {o}.param_groups is not {const(groups)} or {o}.state is not "
                     f"{const(st)}: return None")
    lines.append("V = F.values")
    for i, (t, rg, glob) in enumerate(zip(f.tensors, f.rg, f.globs)):
        x = const(t)
        lines.append(f"if {x}._value is not V[{i}] or {x}._requires_grad is not {rg} or "
                     f"{x}._global is not {const(glob)}: return None")
    if any(f.opt_tensors):
        lines.append("OV = F.opt_values")
        for i, ts in enumerate(f.opt_tensors):
            for j, t in enumerate(ts):
                lines.append(f"if {const(t)}._value is not OV[{i}][{j}]: return None")
    if f.grad_slots is not None:
        lines.append("G, GV = F.grads, F.grad_values")
        for i, t in enumerate(f.tensors):
            x = const(t)
            lines.append(f"if {x}._grad is not G[{i}] or (G[{i}] is not None and "
                         f"G[{i}]._value is not GV[{i}]): return None")
    lines.append("extra = owner._extra")
    lines.append(f"if {'True' if f.extra else 'extra'} and not _same_objects("
                 f"[r() for r in extra.values()], F.extra): return None")
    if f.donate:  # (a donated array must be held by its tensor and the stamps alone)
        refs = " or ".join(f"getrefcount(V[{i}]) > {_OWNED_REFS}" for i in range(len(f.tensors)))
        if refs:
            lines.append(f"if {refs}: V = _copied(V)")
        for i, ts in enumerate(f.opt_tensors):
            if ts:
                refs = " or ".join(f"getrefcount(OV[{i}][{j}]) > {_OWNED_REFS}"
                                   for j in range(len(ts)))
                lines.append(f"if {refs}: OV = [*OV[:{i}], _copied(OV[{i}]), *OV[{i + 1}:]]")
    lrs = " or ".join(f"{const(g)}['lr'] is not L[{i}]" for i, g in enumerate(f.lr_groups))
    lines.append("lrs, L = F.lrs, F.lr_last")
    lines.append(f"if lrs is None{' or ' + lrs if lrs else ''}: lrs = F.refresh_lrs()")
    grads = "F.none_grads" if f.grad_slots is None else "[*F.none_args, *F.grad_values]"
    vals = "".join(f"a{i}._value, " for i in range(n))
    lines.append("gen, c = random.default_generator, _COUNTER")
    lines.append("if c[0] is not gen or c[1] != gen._counter: F.rng()")
    lines.append("key = gen._key")
    lines.append("if key is None: key = gen._key_tensor()")
    lines.append(f"return [{vals}], V, {grads}, {'OV' if any(f.opt_tensors) else 'F.opt_values'}"
                 f", lrs, (key._value, c[2]), []")
    body = "\n".join("        " + line for line in lines)
    source = (f"def inputs(F, owner, args):\n    try:\n{body}\n"
              f"    except ValueError:  # an emptied closure cell\n        return None\n\n")

    w = []
    for i, t in enumerate(f.changed):
        x = const(t)
        w.append(f"v = new_values[{i}]")
        w.append(f"if {x}._value is not v: {x}._value = v; {x}._version += 1")
    if f.grad_slots is not None:
        w.append(f"write_grads({const(f.tensors)}, {const(f.grad_slots)}, new_grads)")
    for i, ts in enumerate(f.opt_tensors):
        if ts:
            w.append(f"o = opt_out[{i}]")
        for j, t in enumerate(ts):
            x = const(t)
            w.append(f"{x}._value = o[{j}]; {x}._version += 1")
    w.append("gen = random.default_generator")
    if f.draws:
        w.append(f"gen._counter += {f.draws}")
    w.append("_COUNTER[:] = [gen, gen._counter, counter]" if f.local_counter
             else "set_counter(counter)")
    # (a donating step returns every state array, in order: its lists are the stamps)
    w.append("F.values = new_values" if f.donate else
             f"F.values = [{', '.join(const(t) + '._value' for t in f.tensors)}]")
    w.append("F.opt_values = opt_out")
    if f.grad_slots is not None:
        w.append(f"F.grads = G = [{', '.join(const(t) + '._grad' for t in f.tensors)}]")
        w.append("F.grad_values = [None if g is None else g._value for g in G]")
    if f.out_slot is not None:
        w.append(f"if isinstance(out, Array): return wrap_like(out, {const(f.out_slot.glob)})")
    w.append("return out" if f.out_flat else "return F.outputs(out)")
    source += ("def write_back(F, out, new_values, new_grads, opt_out, counter):\n"
               + "\n".join("    " + line for line in w) + "\n")
    code = _CODE.get(source)  # (the same structure: the same text over other objects)
    fn_name = getattr(getattr(owner, "fn", None), "__name__", None) or type(owner).__name__
    name = f"{fn_name}#{hash(source) & 0xFFFFFFFF:08x}"
    if code is None:
        if len(_CODE) >= 64:
            del _CODE[next(iter(_CODE))]
        code = _CODE[source] = _codegen.compile_source("fast_path", name, source)
    fns = _codegen.define("fast_path", name, source, env, code=code,
                          plain={"inputs": _inputs_plain})
    return source, fns["inputs"], fns["write_back"]


def _inputs_plain(F, owner, args):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202, N803
    """The plain twin of a generated ``inputs`` (jflow._codegen): no proof, so the call
    computes its key (the key path); an armed fast path answers this after a switch."""
    return None


#: generated fast-path source -> its code object (compiling costs ~0.5 ms; a step that
#: alternates between two keys re-arms on every call)
_CODE: dict[str, Any] = {}


def _copied(arrays: list[Any]) -> list[Any]:
    """``arrays`` with a copy of each that something besides its tensor holds
    (:func:`state.donatable_copy`: no compile)."""
    return [v if _getrefcount(v) <= _OWNED_REFS + 1 else _state.donatable_copy(v)
            for v in arrays]


def _same_objects(a: list, b: list) -> bool:
    return len(a) == len(b) and all(map(_is, a, b))


_TREEDEFS: dict[int, Any] = {}


def _tensor_args_def(n: int) -> Any:
    """The tree structure of ``(args, {})`` for ``n`` tensor arguments."""
    d = _TREEDEFS.get(n)
    if d is None:
        d = _TREEDEFS[n] = jax.tree_util.tree_structure((tuple(range(n)), {}))
    return d

