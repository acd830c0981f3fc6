"""``flow.nn.Graph``: a whole training (or inference) step as one XLA executable, as OneFlow's
``nn.Graph`` (``jflow.nn.graph`` re-exports it).

Subclass it, assign modules in ``__init__``, register optimizers with :meth:`Graph.add_optimizer`
and write :meth:`Graph.build`; calling the graph runs ``build`` — and, when optimizers were
added, each optimizer's ``step()`` and ``zero_grad()`` after it — compiled by ``jax.jit``
(:mod:`jflow.compiler.jit`). Parameters, buffers and optimizer state are donated to the
executable and the new values written back into the modules and optimizers, so the same model
can be trained, evaluated or saved eagerly between graph calls. Learning rates and the random
generator are inputs (schedulers and dropout neither recompile nor freeze); a learning-rate
scheduler given to :meth:`Graph.add_optimizer` steps after every call, as in OneFlow.

Gradients live only inside the step (the eager ``.grad`` of parameters is left alone), as in
OneFlow's graph mode; ``flow.nn.utils.clip_grad_norm_`` in ``build`` works on them.

``graph.config`` (:class:`.graph_config.GraphConfig`) holds OneFlow's graph options: automatic
mixed precision, gradient accumulation and ZeRO are implemented here, in :meth:`Graph._step`
(the function that is compiled); :meth:`Graph.set_grad_scaler` adds dynamic loss scaling
inside the executable; :meth:`Graph.debug` prints what each compile traced.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter, OrderedDict
from typing import Any

import jax
import numpy as np

from .. import _C
from .._jax_setup import EAGER_ROUNDING
from ..amp import GradScaler, autocast
from ..autograd import engine as _engine
from ..autograd import no_grad
from ..creation import tensor as _tensor
from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer, assign_
from ..sharding import plan as _plan
from ..sharding.hlo_traffic import hlo_collectives
from ..sharding.sbp import broadcast, split
from ..tensor import Tensor
from .graph_config import GraphConfig
from .jit import PROFILER, CompiledFunction

__all__ = ["Graph"]


class _ScalerState(Module):
    """The dynamic loss scale of a graph with a grad scaler, as buffers: state of the compiled
    step (an input and an output), so changing it never recompiles."""

    def __init__(self, scaler: GradScaler) -> None:
        super().__init__()
        self.register_buffer("scale", _tensor(scaler.get_scale(), dtype=np.float32))
        self.register_buffer("growth_tracker", _tensor(0, dtype=np.int32))


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def _pack(outs: list[Any]) -> Any:
    """OneFlow's packing of the outputs of ``n`` micro-batches: a 0-d tensor becomes a
    tensor of ``n`` elements, other tensors are concatenated along dim 0; anything else is
    the last micro-batch's."""
    flat = [jax.tree_util.tree_flatten(o, is_leaf=_is_tensor) for o in outs]
    treedef = flat[-1][1]
    cols = list(zip(*(f[0] for f in flat)))
    packed = []
    for col in cols:
        if isinstance(col[-1], Tensor):
            packed.append(_C.stack(list(col), 0) if col[-1].dim() == 0 else
                          _C.cat(list(col), 0))
        else:
            packed.append(col[-1])
    return jax.tree_util.tree_unflatten(treedef, packed)


def _count_primitives(jaxpr: Any, counts: Counter) -> None:
    for eqn in jaxpr.eqns:
        counts[eqn.primitive.name] += 1
        for v in eqn.params.values():
            for sub in (v if isinstance(v, (list, tuple)) else (v,)):
                inner = getattr(sub, "jaxpr", None)
                if inner is not None and hasattr(inner, "eqns"):
                    _count_primitives(inner, counts)
                elif hasattr(sub, "eqns"):
                    _count_primitives(sub, counts)


class Graph:
    """Base class of compiled steps (see the module docstring)::

        class TrainStep(flow.nn.Graph):
            def __init__(self, model, opt):
                super().__init__()
                self.model = model
                self.add_optimizer(opt)
            def build(self, x, y):
                loss = F.cross_entropy(self.model(x), y)
                loss.backward()
                return loss
    """

    #: attributes the compiler need not search for modules: the Graph hands their contents
    #: over itself, and assigning a module to the Graph recreates the compiled step
    _state_known_to_compiler = frozenset({"_modules", "_optimizers", "_schedulers",
                                          "_compiled", "config", "_grad_scaler",
                                          "_scaler_state"})

    def __init__(self, *, explain: bool = False, max_cache_size: int = 8,
                 debug_v_level: int = -1, debug_ranks: Any = None,
                 debug_max_py_stack_depth: int = 2, debug_only_user_py_stack: bool = True,
                 debug_op_repr_with_py_stack: bool = False,
                 enable_get_runtime_state_dict: bool = False) -> None:
        d = self.__dict__
        if enable_get_runtime_state_dict:
            raise NotImplementedError(
                f"{type(self).__name__}.__init__(): enable_get_runtime_state_dict=True is not "
                f"supported by jflow (a compiled step's state is its modules' and optimizers' "
                f"state_dict())")
        d["_modules"] = OrderedDict()
        d["_optimizers"] = []
        d["_schedulers"] = []
        d["_compiled"] = None
        d["_explain"] = explain
        d["_max_cache_size"] = max_cache_size
        d["config"] = GraphConfig(type(self).__name__, self._reset)
        d["_grad_scaler"] = None
        d["_scaler_state"] = None
        d["_debug"] = -1
        d["_debug_ranks"] = None
        if debug_v_level != -1:
            self.debug(debug_v_level, ranks=debug_ranks)

    def _reset(self) -> None:
        """A module, optimizer or config change: the next call builds the step again."""
        self.__dict__["_compiled"] = None

    @property
    def name(self) -> str:
        """The subclass's name (used in messages and the repr)."""
        return type(self).__name__

    def __setattr__(self, name: str, value: Any) -> None:
        if "_modules" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() in __init__ "
                                 f"before assigning attributes")
        if isinstance(value, Module):
            self._modules[name] = value
            self.__dict__.pop(name, None)
            self._reset()
        else:
            self._modules.pop(name, None)
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        mods = self.__dict__.get("_modules", {})
        if name in mods:
            return mods[name]
        if name == "config":
            raise AttributeError(f"'{type(self).__name__}' object has no attribute 'config': "
                                 f"call super().__init__() in __init__ first")
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def add_optimizer(self, optim: Optimizer, *, lr_sch: Any = None,
                      is_sparse: bool = False) -> None:
        """Step ``optim`` (then zero its grads) after every :meth:`build`; step ``lr_sch``
        after every call."""
        if not isinstance(optim, Optimizer):
            raise TypeError(f"{self.name}.add_optimizer(): expected a flow.optim.Optimizer, got "
                            f"{type(optim).__name__}")
        if is_sparse:
            raise NotImplementedError(f"{self.name}.add_optimizer(): is_sparse=True is not "
                                      f"supported by jflow")
        if lr_sch is not None and getattr(lr_sch, "optimizer", None) is not optim:
            raise ValueError(f"{self.name}.add_optimizer(): lr_sch must be a scheduler of this "
                             f"optimizer")
        self._optimizers.append(optim)
        if lr_sch is not None:
            self._schedulers.append(lr_sch)
        self.config._training = True
        self._reset()

    def set_grad_scaler(self, grad_scaler: GradScaler) -> None:
        """Dynamic loss scaling inside the step (OneFlow's ``Graph.set_grad_scaler``), for
        ``config.enable_amp(True)`` with float16: every ``loss.backward()`` in ``build``
        differentiates ``loss * scale``; the gradients are divided by the scale before the
        optimizers step; when one holds an inf or a NaN the step changes no parameter nor
        optimizer state and the scale is multiplied by ``backoff_factor``, after
        ``growth_interval`` finite steps in a row by ``growth_factor`` — what
        ``flow.amp.GradScaler``'s ``scale`` / ``step`` / ``update`` do in eager code. The
        scale is state of the executable (no recompile when it changes): read it with
        :attr:`grad_scale`."""
        if not isinstance(grad_scaler, GradScaler):
            raise TypeError(f"{self.name}.set_grad_scaler(): expected a flow.amp.GradScaler, "
                            f"got {type(grad_scaler).__name__}")
        self.__dict__["_grad_scaler"] = grad_scaler if grad_scaler.is_enabled() else None
        self.__dict__["_scaler_state"] = (_ScalerState(grad_scaler)
                                          if grad_scaler.is_enabled() else None)
        self._reset()

    @property
    def grad_scale(self) -> float | None:
        """The current loss scale of :meth:`set_grad_scaler` (one read from the device), or
        None without a grad scaler."""
        st = self._scaler_state
        return None if st is None else float(st.scale.numpy())

    def build(self, *args: Any, **kwargs: Any) -> Any:
        """The step to compile, written by subclasses (with optimizers, calling ``backward()``)."""
        raise NotImplementedError(f"{self.name}: nn.Graph subclasses must implement build()")

    # -- the compiled function -----------------------------------------------------------------
    def _forward(self, args: tuple, kwargs: dict) -> Any:
        amp = self.config.amp_dtype
        if amp is None:
            return self.build(*args, **kwargs)
        with autocast("cuda", dtype=amp):
            return self.build(*args, **kwargs)

    def _micro_batches(self, args: tuple, kwargs: dict) -> Any:
        """``build`` on each micro-batch (gradient accumulation), outputs packed."""
        n = self.config.grad_acc_steps
        if n == 1:
            return self._forward(args, kwargs)
        leaves, treedef = jax.tree_util.tree_flatten((args, kwargs), is_leaf=_is_tensor)
        outs = []
        for i in range(n):
            part = [x.narrow(0, i * (x.shape[0] // n), x.shape[0] // n)
                    if isinstance(x, Tensor) else x for x in leaves]
            a, kw = jax.tree_util.tree_unflatten(treedef, part)
            outs.append(self._forward(a, kw))
        return _pack(outs)

    def _step(self, *args: Any, **kwargs: Any) -> Any:
        if not self._optimizers:
            with no_grad():
                return self._micro_batches(args, kwargs)
        n = self.config.grad_acc_steps
        st = self._scaler_state
        hook = None
        if n > 1 or st is not None:
            owner, inv_n = threading.get_ident(), 1.0 / n

            def hook(loss: Tensor) -> Tensor:  # what Tensor.backward() differentiates
                if threading.get_ident() != owner:
                    return loss
                if n > 1:
                    loss = loss * inv_n
                if st is not None:  # (in the loss's dtype, as GradScaler.scale's float)
                    scale = st.scale.to(loss.dtype)
                    if loss._global is not None and scale._global != loss._global:
                        scale = scale.to_global(loss._global[0],
                                                (broadcast,) * len(loss._global[1]))
                    loss = loss * scale
                return loss
        previous = _engine.LOSS_SCALE[0]
        _engine.LOSS_SCALE[0] = hook
        try:
            out = self._micro_batches(args, kwargs)
        finally:
            _engine.LOSS_SCALE[0] = previous
        params = [p for opt in self._optimizers for g in opt.param_groups for p in g["params"]]
        if not any(p.grad is not None for p in params):
            raise RuntimeError(f"{self.name}.build(): no optimized parameter got a gradient; a "
                               f"graph with an optimizer must call loss.backward() in build()")
        if self.config.zero_stage >= 2:
            with no_grad():
                for p in params:
                    sbp = self._zero_sbp(p.grad)
                    if sbp is not None:  # reduce-scatter (from partial sums) or a slice
                        p._grad = p.grad.to_global(p.grad._global[0], sbp)
        if st is None:
            for opt in self._optimizers:
                opt.step()
        else:
            self._scaled_step(params, st)
        for opt in self._optimizers:
            if self.config.zero_stage:
                self._shard_state(opt)
            opt.zero_grad(set_to_none=True)
        return out

    def _scaled_step(self, params: list[Tensor], st: _ScalerState) -> None:
        """The optimizers' steps under dynamic loss scaling, decided inside the executable:
        unscale, step, and keep the old parameters and state where a gradient was not
        finite; then the scale's update (``GradScaler.update``'s rule)."""
        sc = self._grad_scaler
        with no_grad():
            grads = [p for p in params if p.grad is not None]
            check = None
            for p in grads:
                c = _C.sum(p.grad * 0)  # NaN exactly when the gradient holds an inf or NaN
                if c._global is not None:  # (the verdict is every rank's: broadcast)
                    c = c.to_global(c._global[0], (broadcast,) * len(c._global[1]))
                check = c if check is None else check + c
            finite = _C.isfinite(check)
            scale = st.scale
            for p in grads:
                inv = (1.0 / scale).to(p.grad.dtype)
                if p.grad._global is not None:
                    inv = inv.to_global(p.grad._global[0], (broadcast,) * len(p.grad._global[1]))
                p._grad = p.grad * inv
            kept: list[tuple[Tensor, Tensor]] = []
            states: list[tuple[dict, Any, Tensor]] = []
            for opt in self._optimizers:
                for p in (q for g in opt.param_groups for q in g["params"]):
                    kept.append((p, p.detach().clone()))
                    for k, v in opt.state.get(p, {}).items():
                        if isinstance(v, Tensor):
                            states.append((opt.state[p], k, v.detach().clone()))
            for opt in self._optimizers:
                opt.step()

            def keep(new: Tensor, old: Tensor) -> Tensor:
                f = finite
                if new._global is not None:
                    f = f.to_global(new._global[0], (broadcast,) * len(new._global[1]))
                return _C.where(f, new, old)
            for p, old in kept:
                assign_(p, keep(p, old))
            for d, k, old in states:
                if isinstance(d.get(k), Tensor):
                    assign_(d[k], keep(d[k], old))
            grow = st.growth_tracker + 1
            full = grow == sc.get_growth_interval()
            new_scale = _C.where(finite, _C.where(full, scale * sc.get_growth_factor(), scale),
                                 scale * sc.get_backoff_factor())
            new_tracker = _C.where(finite, _C.where(full, grow * 0, grow), grow * 0)
            assign_(st.scale, new_scale.to(st.scale.dtype))
            assign_(st.growth_tracker, new_tracker.to(st.growth_tracker.dtype))

    # -- ZeRO ---------------------------------------------------------------------------------
    def _zero_sbp(self, t: Any) -> tuple | None:
        """split(0) for a tensor ZeRO shards: global on a 1-D placement, not split already,
        dim 0 divisible by the ranks, shards of at least ``shard_min_size`` elements."""
        if not isinstance(t, Tensor) or t._global is None or t.dim() == 0:
            return None
        plc, nd = t._global
        if len(nd) != 1 or nd[0] == split(0):
            return None
        ranks = len(plc.ranks) if hasattr(plc, "ranks") else plc.size()
        if t.shape[0] % ranks or t.numel() // ranks < self.config.zero_shard_min_size:
            return None
        return (split(0),)

    def _shard_state(self, opt: Optimizer) -> None:
        with no_grad():
            for state in opt.state.values():
                for k, v in list(state.items()):
                    sbp = self._zero_sbp(v)
                    if sbp is not None:
                        state[k] = v.to_global(v._global[0], sbp)

    def _check_zero(self) -> None:
        params = [p for opt in self._optimizers for g in opt.param_groups for p in g["params"]]
        if not self._optimizers:
            raise RuntimeError(f"{self.name}.config.enable_zero(): the graph has no optimizer "
                               f"(add_optimizer) whose state could be sharded")
        if not any(p._global is not None for p in params):
            raise RuntimeError(f"{self.name}.config.enable_zero(): ZeRO shards optimizer state "
                               f"across a data-parallel placement, but the parameters are "
                               f"local tensors; make them global first, e.g. "
                               f"p.to_global(placement, flow.sbp.broadcast)")
        nd = next((p._global[1] for p in params
                   if p._global is not None and len(p._global[1]) != 1), None)
        if nd is not None:
            raise NotImplementedError(
                f"{self.name}.config.enable_zero(): jflow shards optimizer state across a "
                f"1-D data-parallel placement; a parameter has the {len(nd)}-D SBP {nd} (for a "
                f"dp x tp mesh, place the optimizer state yourself with to_global)")

    # -- calling ------------------------------------------------------------------------------
    def _check_batch(self, args: tuple, kwargs: dict) -> None:
        n = self.config.grad_acc_steps
        leaves = jax.tree_util.tree_leaves_with_path((args, kwargs), is_leaf=_is_tensor)
        for path, x in leaves:
            if not isinstance(x, Tensor):
                continue
            first = (f"argument {path[1].idx}" if path[0].idx == 0
                     else f"keyword argument {path[1].key!r}")
            where = first + (f" (at {jax.tree_util.keystr(path[2:])})" if len(path) > 2
                             else "")
            if x.dim() == 0:
                raise ValueError(f"{self.name}(): {where} is 0-d, but "
                                 f"config.set_gradient_accumulation_steps({n}) splits every "
                                 f"tensor argument along dim 0 into {n} micro-batches")
            if x.shape[0] % n:
                raise ValueError(f"{self.name}(): {where} has {x.shape[0]} rows along dim 0, "
                                 f"not divisible by config.set_gradient_accumulation_steps({n})"
                                 f" micro-batches")

    def _build_compiled(self) -> CompiledFunction:
        if self.config.zero_stage:
            self._check_zero()
        for opt in self._optimizers:
            opt._prepare_state()
            if self.config.zero_stage:
                self._shard_state(opt)
        modules = list(self._modules.values())
        st = self._scaler_state
        if st is not None and self._optimizers:
            glob = next((p._global for opt in self._optimizers for g in opt.param_groups
                         for p in g["params"] if p._global is not None), None)
            if glob is not None and st.scale._global is None:
                rep = (broadcast,) * len(glob[1])
                st.scale = st.scale.to_global(glob[0], rep)
                st.growth_tracker = st.growth_tracker.to_global(glob[0], rep)
            modules.append(st)
        c = CompiledFunction(self._step, donate=bool(self._optimizers),
                             explain=self._explain, max_cache_size=self._max_cache_size,
                             track_grads=False, modules=modules,
                             optimizers=list(self._optimizers),
                             reach=(self.build,),
                             after=self._after_call, name=self.name,
                             # low-precision results rounded per op, as eager autocast
                             compiler_options=(EAGER_ROUNDING if self.config.amp_dtype
                                               is not None else None))
        self.__dict__["_compiled"] = c
        return c

    def _after_call(self) -> None:
        for sch in self._schedulers:
            sch.step()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        c = self._compiled
        if c is None:
            c = self._build_compiled()
        if self.config.grad_acc_steps > 1:
            self._check_batch(args, kwargs)
        if self._debug >= 0:
            return self._call_debug(c, args, kwargs)
        if PROFILER[0] is None:
            return c._call(*args, **kwargs)
        return c(*args, **kwargs)

    # -- debug --------------------------------------------------------------------------------
    def debug(self, v_level: int = 0, *, ranks: Any = None, max_py_stack_depth: int = 2,
              only_user_py_stack: bool = True, op_repr_with_py_stack: bool = False) -> None:
        """OneFlow's ``Graph.debug``: from now on each call that compiles prints what it
        compiled (``g.debug()`` opens debug mode). ``v_level`` -1: off; 0: that a compile
        happened, why (the recompile reason), the config and how long it took; 1: also the
        traced ops (primitive counts of the step's jaxpr) and, for a step on global
        tensors, the SBP plan (the whole-step planner's report and the collectives of the
        compiled executable, compiled once more to read them); 2 and 3: also the jaxpr.
        ``ranks``: the ranks that print (default: all). ``max_py_stack_depth``,
        ``only_user_py_stack`` and ``op_repr_with_py_stack`` are accepted: jflow's printout
        has no per-op Python stacks."""
        if isinstance(v_level, bool) or not isinstance(v_level, int) or v_level < -1:
            raise ValueError(f"{self.name}.debug(): v_level must be an int >= -1, got "
                             f"{v_level!r}")
        if ranks is not None and not isinstance(ranks, (int, list, tuple)):
            raise TypeError(f"{self.name}.debug(): ranks must be None, an int or a list of "
                            f"ints, got {type(ranks).__name__}")
        self.__dict__["_debug"] = v_level
        self.__dict__["_debug_ranks"] = ([ranks] if isinstance(ranks, int) else
                                         None if ranks is None else list(ranks))

    def _printing(self) -> bool:
        ranks = self._debug_ranks
        if ranks is None:
            return True
        return jax.process_index() in ranks

    def _call_debug(self, c: CompiledFunction, args: tuple, kwargs: dict) -> Any:
        before, plans = c.trace_count, len(c.sbp_plans)
        t0 = time.perf_counter()
        out = c._call(*args, **kwargs)
        if c.trace_count == before or not self._printing():
            return out
        took = time.perf_counter() - t0
        lines = [f"[{self.name}] compiled (trace {c.trace_count}) in {took:.2f} s"]
        if c.recompile_reasons and c.trace_count > 1:
            lines.append(f"  recompile reason: {c.recompile_reasons[-1]}")
        cfg = self.config
        lines.append(f"  config: amp={cfg.amp_dtype}, gradient accumulation steps="
                     f"{cfg.grad_acc_steps}, zero stage={cfg.zero_stage}, grad scaler="
                     f"{'on' if self._scaler_state is not None else 'off'}")
        if self._debug >= 1:
            lines.extend(self._describe(c, args, kwargs, len(c.sbp_plans) > plans))
        print("\n".join(lines), flush=True)
        return out

    def _describe(self, c: CompiledFunction, args: tuple, kwargs: dict,
                  adopted: bool) -> list[str]:
        """The traced ops, the SBP plan and the collectives of the executable the last call
        compiled (``debug(1)``); nothing when the call left state that compiles anew."""
        lines = []
        with self._peek(c) as fresh:
            jaxpr = self._traced(c, args, kwargs)
        if fresh[0]:
            return ["  (the call changed the step's state structure: the next call compiles "
                    "again and prints its ops)"]
        counts: Counter = Counter()
        _count_primitives(jaxpr, counts)
        lines.append(f"  traced ops ({sum(counts.values())} primitives): " + ", ".join(
            f"{k} x{v}" for k, v in counts.most_common()))
        glob = any(isinstance(x, Tensor) and x._global is not None
                   for x in jax.tree_util.tree_leaves((args, kwargs), is_leaf=_is_tensor))
        glob = glob or any(p._global is not None for m in self._modules.values()
                           for p in m.parameters())
        if glob:
            s = dict(_plan.LAST_SOLVE)  # (read defensively: the planner's report may grow)
            keys = ("outcome", "calls", "kept_calls", "candidates", "variables", "greedy",
                    "planned", "planned_bytes", "optimal")
            lines.append("  SBP plan: " + ", ".join(f"{k}={s[k]}" for k in keys if k in s)
                         + (" (plan adopted)" if adopted else " (greedy choice kept)"))
            with self._peek(c):
                colls = self.collectives(*args, **kwargs)
            lines.append(f"  collectives: {len(colls)}, "
                         f"{sum(x.wire for x in colls):,.0f} B per device (wire)")
            for x in colls:
                lines.append(f"    {x.kind} {' '.join(x.shapes)} {x.wire:,.0f} B ({x.origin})")
        if self._debug >= 2:
            lines.append(str(jaxpr))
        return lines

    @staticmethod
    @contextlib.contextmanager
    def _peek(c: CompiledFunction) -> Any:
        """Look the last call's executable up without leaving a trace: an entry the lookup
        had to create (the call's own state changes make a new key) is dropped again, with
        the trace count and reasons it added; ``fresh[0]`` says so."""
        keys, last, count = set(c._cache), c._last_key, c.trace_count
        reasons, pending = len(c.recompile_reasons), c._pending_reason
        fresh = [False]
        try:
            yield fresh
        finally:
            for k in [k for k in c._cache if k not in keys]:
                del c._cache[k]
                fresh[0] = True
            if fresh[0]:
                c._last_key, c.trace_count, c._pending_reason = last, count, pending
                del c.recompile_reasons[reasons:]

    def _traced(self, c: CompiledFunction, args: tuple, kwargs: dict) -> Any:
        """The jaxpr of the executable a call with ``args`` runs (traced, not run)."""
        found = None
        while found is None:
            found = c._lookup(args, kwargs)
        entry, _, state, leaves, slow = found
        if entry.jitted is None:  # (a graph break: nothing compiled)
            return None
        arrays = [x for x in leaves if isinstance(x, (jax.Array, np.ndarray))]
        inputs = (*state.inputs(None), arrays)
        c._current = (state, leaves, slow[0])
        try:
            return entry.jitted.trace(*inputs).jaxpr
        finally:
            c._current = None

    def collectives(self, *args: Any, **kwargs: Any) -> list[Any]:
        """The collectives of the executable a call with these arguments runs, read from
        its optimized HLO (``sharding.hlo_traffic.Collective``: kind, shapes, bytes per
        device); compiles it again, runs nothing."""
        c = self._compiled if self._compiled is not None else self._build_compiled()
        hlo = c.lower(*args, **kwargs).compile().as_text()
        return hlo_collectives(hlo, jax.device_count())

    def optimizer_state_bytes(self) -> int:
        """Bytes of optimizer state one device holds (the first device of each state
        tensor's placement: a split(0) state under ZeRO holds 1/ranks of it)."""
        total = 0
        for opt in self._optimizers:
            for state in opt.state.values():
                for v in state.values():
                    if isinstance(v, Tensor):
                        arr = v._value
                        shards = getattr(arr, "addressable_shards", None)
                        total += shards[0].data.nbytes if shards else np.asarray(arr).nbytes
        return total

    @property
    def recompile_reasons(self) -> list[str]:
        """Why each trace after the first happened (see ``flow.jit``)."""
        return [] if self._compiled is None else list(self._compiled.recompile_reasons)

    @property
    def trace_count(self) -> int:
        """How many times the step has been traced (compiled); 0 before the first call."""
        return 0 if self._compiled is None else self._compiled.trace_count

    def __repr__(self) -> str:
        lines = [f"({self.name}:nn.Graph)"]
        for k, m in self._modules.items():
            lines.append(f"  ({k}): " + repr(m).replace("\n", "\n  "))
        for opt in self._optimizers:
            lines.append(f"  (optimizer): {type(opt).__name__}")
        return "\n".join(lines)

