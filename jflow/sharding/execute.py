"""Running an op on global tensors: SBP signature inference, boxing, and the
op's kernel under ``shard_map`` on the local shards.

1. All inputs must share one placement. The op's 1-d signatures for these logical shapes
   (``signatures_of``: its declared ones plus all-broadcast) become nd signatures by taking
   one per hierarchy axis (the Cartesian product); those that would split a dimension
   unevenly are dropped.
2. A signature whose inputs need no conversion wins; else the one with the least boxing
   traffic (``boxing.cost``), ties to the op's declared order.
3. One cached ``jax.jit(shard_map(...))`` per (op, attrs, placement, input SBPs, signature)
   boxes each input and binds the op's primitive on the local shards — so the kernel the
   registry picks (xla, python, Pallas, C++ FFI) runs sharded without gathering. Attrs that
   name the output shape (``shape``) are given per-shard sizes.

The same function runs on tracers inside ``jax.jit``; outputs carry their SBP in
``Tensor._global`` and the tape records them like local ones.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax import lax

from .._jax_compat import vary_together
from ..autograd.graph import record
from ..lazy_values import LOCAL as _LAZY_LOCAL
from ..tensor import Tensor, _wrap
from . import plan as step_plan
from .boxing import box_local, cost, describe
from .boxing_plan import greedy_rank
from .global_tensor import box_value, make_global, make_local, to_global
from .placement import placement as Placement
from .sbp import SbpParallel, Signature, _Broadcast, _PartialSum, signatures_of
from .spec import divisible, local_shape, named_sharding, partition_spec

__all__ = ["global_apply", "NdSignature", "choose_signature", "SbpInferenceError",
           "last_choices"]

_CACHE: dict[Any, Any] = {}
_CACHE_SIZE = 512

#: ``[hook]``: with several processes, ``jflow.sharding.consistency`` puts a callable here
#: that ``global_apply`` calls as ``hook(op, params, placement, in_nds, ins, cache_key)`` before
#: each global op, to check that all processes run the same op (None: nothing is called)
CONSISTENCY_HOOK: list[Any] = [None]


class SbpInferenceError(ValueError):
    """No SBP signature of an op can run on the given global inputs."""


class NdSignature:
    """One SBP per hierarchy axis for every flat input and output."""

    __slots__ = ("inputs", "outputs")

    def __init__(self, inputs: tuple[tuple[SbpParallel, ...], ...],
                 outputs: tuple[tuple[SbpParallel, ...], ...]) -> None:
        self.inputs, self.outputs = inputs, outputs

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NdSignature) and (self.inputs, self.outputs) == \
            (other.inputs, other.outputs)

    def __hash__(self) -> int:
        return hash((self.inputs, self.outputs))

    def __repr__(self) -> str:
        def f(nd: tuple) -> str:
            return "(" + ", ".join(Signature._short(x) for x in nd) + ")" if len(nd) > 1 \
                else Signature._short(nd[0])
        return f"({', '.join(map(f, self.inputs))}) -> ({', '.join(map(f, self.outputs))})"


def usable_1d(sigs: Sequence[Signature], in_avals: Sequence[Any],
              out_avals: Sequence[Any]) -> list[Signature]:
    """Drop signatures no layout can carry: partial sums of bool tensors (a sum of bools is
    not a bool), and any split or partial sum of an empty tensor (only broadcast is
    meaningful, and collectives reject zero-size operands)."""
    avals = list(in_avals) + list(out_avals)
    empty = any(0 in tuple(a.shape) for a in avals)
    boolean = [np.dtype(a.dtype) == np.bool_ for a in avals]
    out = []
    for s in sigs:
        entries = list(s.inputs) + list(s.outputs)
        if empty and not all(isinstance(x, _Broadcast) for x in entries):
            continue
        if any(b and isinstance(x, _PartialSum) for b, x in zip(boolean, entries)):
            continue
        out.append(s)
    return out


def candidates(op: Any, attrs: dict[str, Any], in_avals: Sequence[Any],
               out_avals: Sequence[Any], hierarchy: Sequence[int]) -> list[NdSignature]:
    """The op's nd signatures for these logical avals (uneven splits dropped)."""
    in_shapes = [tuple(a.shape) for a in in_avals]
    out_shapes = [tuple(a.shape) for a in out_avals]
    one = usable_1d(signatures_of(op, in_shapes, len(out_shapes), attrs), in_avals, out_avals)
    out = []
    for combo in itertools.product(one, repeat=len(hierarchy)):
        ins = tuple(tuple(s.inputs[i] for s in combo) for i in range(len(in_shapes)))
        outs = tuple(tuple(s.outputs[i] for s in combo) for i in range(len(out_shapes)))
        if all(divisible(sh, nd, hierarchy) for sh, nd in zip(in_shapes, ins)) and \
                all(divisible(sh, nd, hierarchy) for sh, nd in zip(out_shapes, outs)):
            out.append(NdSignature(ins, outs))
    return out


def choose_signature(op: Any, sigs: Sequence[NdSignature], in_nds: Sequence[tuple],
                     in_avals: Sequence[Any], plc: Placement) -> NdSignature:
    best, best_cost = None, None
    for sig in sigs:
        if tuple(sig.inputs) == tuple(in_nds):
            return sig  # no transfer at all
        c = sum(greedy_rank(src, dst, a.size * np.dtype(a.dtype).itemsize, plc.hierarchy,
                            a.shape) for src, dst, a in zip(in_nds, sig.inputs, in_avals))
        if best_cost is None or c < best_cost:
            best, best_cost = sig, c
    if best is None:
        raise SbpInferenceError(_no_signature_message(op, in_nds, in_avals, plc, sigs))
    return best


def _no_signature_message(op: Any, in_nds: Sequence[tuple], in_avals: Sequence[Any],
                          plc: Placement, sigs: Sequence[NdSignature]) -> str:
    ins = "; ".join(f"input {i}: shape {tuple(a.shape)} sbp {nd}"
                    for i, (nd, a) in enumerate(zip(in_nds, in_avals)))
    return (f"op '{op.name}': no SBP signature can run on placement {plc!r} with {ins}; "
            f"the op offers {list(sigs) or 'none (shapes do not divide evenly)'}")


def _localize(op: Any, params: dict[str, Any], sig: NdSignature, out_avals: Sequence[Any],
              hierarchy: Sequence[int]) -> dict[str, Any]:
    """Attrs that give the output's (logical) shape -> the shard's shape."""
    if "shape" not in params or not out_avals:
        return params
    new = dict(params)
    new["shape"] = local_shape(out_avals[0].shape, sig.outputs[0], hierarchy)
    return new


def _build(op: Any, params: dict[str, Any], plc: Placement, in_nds: tuple, sig: NdSignature,
           in_ndims: tuple[int, ...], out_avals: Sequence[Any], n_dyn: int = 0) -> Any:
    names, hierarchy = plc.axis_names, plc.hierarchy
    prim = op.primitive
    local = _localize(op, params, sig, out_avals, hierarchy)
    # on a mesh axis where some input is a partial sum, the others (broadcast) are typed
    # "reduced" so the kernel's linear ops accept the pair (JAX's explicit sharding rules)
    reduced_axes = [[names[k] for k in range(len(names))
                     if isinstance(need[k], _Broadcast)
                     and any(isinstance(o[k], _PartialSum) for o in sig.inputs)]
                    for need in sig.inputs]

    def body(*xs: Any) -> list[Any]:
        ys = []
        for x, src, need, red in zip(xs, in_nds, sig.inputs, reduced_axes):
            y = box_local(x, src, need, names, hierarchy)
            if red:
                y = lax.pcast(y, tuple(red), to="reduced")
            ys.append(y)
        # dynamic attr values (replicated scalars) follow the tensors, as in an eager bind
        return list(prim.bind(*vary_together(ys), *xs[len(ys):], **local))

    in_specs = tuple(partition_spec(nd, n, names) for nd, n in zip(in_nds, in_ndims))
    in_specs += (jax.sharding.PartitionSpec(),) * n_dyn
    out_specs = [partition_spec(nd, len(a.shape), names)
                 for nd, a in zip(sig.outputs, out_avals)]
    fn = jax.shard_map(body, mesh=plc.mesh, in_specs=in_specs, out_specs=out_specs)
    fn.__name__ = f"{op.name}_global"
    return jax.jit(fn)


#: (op, signature, boxings) of recent global op calls, for ``flow.sharding.explain``
last_choices: list[tuple[str, NdSignature, list[str], float]] = []
_RECORDING = [False]


_SCALARS: dict[Any, Any] = {}


def _broadcast_scalar(t: Tensor, plc: Placement) -> Tensor:
    """A local 0-d tensor (a Python scalar operand, as in ``x * 2``) used with global
    tensors becomes broadcast on their placement (cached: scalar operands are reused)."""
    key = (id(t._value), plc)
    hit = _SCALARS.get(key)
    if hit is not None and hit[0] is t._value:
        return hit[1]
    g = to_global(t.detach() if not t._requires_grad else t, plc,
                  (_Broadcast(),) * len(plc.hierarchy))
    if not t._requires_grad and not isinstance(g._value, jax.core.Tracer):  # never a tracer
        if len(_SCALARS) >= 256:
            _SCALARS.clear()
        _SCALARS[key] = (t._value, g)
    return g


#: when set (per thread, ``implicit_broadcast()``), a local tensor used with global ones is
#: taken as ``broadcast`` on their placement instead of refused: in one process a local tensor
#: is one value, so this is exact (PyTorch's DTensor ``implicit_replication``)
_IMPLICIT = threading.local()


class implicit_broadcast:
    """Context manager: local tensors mixed with global ones become ``broadcast`` on their
    placement (``to_global``, differentiable) instead of raising. Off by default: in OneFlow
    mixing is an error, and an accidental local tensor usually means a missed ``to_global``."""

    def __enter__(self) -> implicit_broadcast:
        self._prev = getattr(_IMPLICIT, "on", False)
        _IMPLICIT.on = True
        return self

    def __exit__(self, *exc: Any) -> None:
        _IMPLICIT.on = self._prev


def _common_placement(op: Any, ins: list[Tensor]) -> Placement:
    plc = None
    for t in ins:
        if t._global is not None:
            plc = t._global[0]
            break
    for i, t in enumerate(ins):
        if t._global is None:
            if t._meta.ndim == 0 and plc is not None:
                ins[i] = _broadcast_scalar(t, plc)
                continue
            if plc is not None and getattr(_IMPLICIT, "on", False):
                ins[i] = to_global(t, plc, (_Broadcast(),) * len(plc.hierarchy))
                continue
            raise ValueError(f"op '{op.name}': input {i} is a local tensor while others are "
                             f"global; convert it with .to_global(placement, sbp)")
        p = t._global[0]
        if plc is None:
            plc = p
        elif p != plc:
            raise ValueError(f"op '{op.name}': inputs are on different placements: {plc!r} "
                             f"and {p!r} (input {i}); move one with .to_global(placement=...)")
    return plc  # type: ignore[return-value]


def _empty_apply(op: Any, params: dict[str, Any], ins: list[Tensor], single: bool,
                 plc: Placement, dyn: tuple = ()) -> Any:
    """An op touching an empty tensor: computed on the (tiny) logical values and broadcast —
    XLA's partitioner rejects zero-size operands in a manual computation."""
    if any(isinstance(t._value, jax.core.Tracer) for t in ins):
        raise NotImplementedError(f"op '{op.name}': empty global tensors are not supported "
                                  f"inside jax.jit")
    attrs, layout, _ = op.split_params(op.with_dynamic(params, dyn))
    local = op.unflatten([make_local(t) for t in ins], layout)
    res = op.apply(*local, **attrs)
    outs = res if isinstance(res, tuple) else (res,)
    b = tuple(_Broadcast() for _ in plc.hierarchy)
    g = [to_global(_wrap(o._value), plc, b) for o in outs]
    return g[0] if single else tuple(g)


def _plan(op: Any, params: dict[str, Any], plc: Placement, in_nds: tuple, ins: list[Tensor],
          n_dyn: int = 0, forced: NdSignature | None = None) -> tuple | None:
    """Signature inference and the executable: ``(fn, signature, in_avals, out_avals,
    candidates)``, or None when an empty tensor is involved. ``forced``: the signature a
    whole-step plan (``sharding/plan.py``) chose instead of the greedy one."""
    attrs, layout, _ = op.split_params(params)
    in_avals = [jax.core.ShapedArray(tuple(t._meta.shape), t._meta.dtype) for t in ins]
    out_avals = op.infer_descs(in_avals, layout, attrs)
    if any(0 in tuple(a.shape) for a in (*in_avals, *out_avals)):
        return None
    sigs = candidates(op, attrs, in_avals, out_avals, plc.hierarchy)
    sig = forced if forced is not None else choose_signature(op, sigs, in_nds, in_avals, plc)
    fn = _build(op, params, plc, in_nds, sig, tuple(len(a.shape) for a in in_avals), out_avals,
                n_dyn)
    return fn, sig, in_avals, out_avals, sigs


def _nbytes(a: Any) -> float:
    return float(a.size * np.dtype(a.dtype).itemsize)


def _cached_plan(key: Any, *args: Any, forced: NdSignature | None = None) -> tuple | None:
    if key is not None:
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
    plan = _plan(*args, forced=forced)
    if plan is not None and key is not None:
        if len(_CACHE) >= _CACHE_SIZE:
            del _CACHE[next(iter(_CACHE))]
        _CACHE[key] = plan
    return plan


def _abstract_call(fn: Any, plc: Any, in_nds: tuple, in_avals: Any, dyn: tuple) -> Any:
    """``fn`` traced on abstract inputs laid out as the call's (its trace-time errors)."""
    return jax.eval_shape(fn, *[
        jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=named_sharding(plc, nd, len(a.shape)))
        for a, nd in zip(in_avals, in_nds)], *dyn)


def global_apply(op: Any, params: dict[str, Any], ins: list[Tensor], single: bool,
                 dyn: tuple = ()) -> Any:
    """Run ``op`` on global tensors (see the module docstring); records on the tape.
    ``dyn``: the values of the op's dynamic attrs (``params`` holds ``DYNAMIC`` markers for
    them): operands of the executable, so a new value compiles nothing here either."""
    plc = _common_placement(op, ins)
    if params.get("_vmap"):
        raise NotImplementedError(f"op '{op.name}': jax.vmap over global tensors is not "
                                  f"supported; vmap the local computation instead")
    in_nds = tuple(t._global[1] for t in ins)
    try:  # one cache hit per call: inference + executable, per layout, shapes and dtypes
        key = (op.name, tuple(params.items()), plc, in_nds,
               tuple((t._meta.shape, t._meta.dtype) for t in ins))
        hash(key)
    except TypeError:
        key = None
    if CONSISTENCY_HOOK[0] is not None:  # multi-process check (jflow.sharding.consistency)
        CONSISTENCY_HOOK[0](op, params, plc, in_nds, ins, key)
    args = (op, params, plc, in_nds, ins, len(dyn))
    plan = _cached_plan(key, *args)
    if plan is None:
        return _empty_apply(op, params, ins, single, plc, dyn)
    step, in_values = step_plan.active(), None
    if step is not None and not isinstance(step, step_plan.StepRecorder):
        forced = step.next(op.name)  # a whole-step plan (flow.jit) picked this call's
        if forced is not None:  # signature; each input is boxed once per step, shared by
            # every call that needs it so (the tape still sees the tensors themselves)
            in_values = [step.boxed(t._value, plc, src, need, box_value)
                         for t, src, need in zip(ins, in_nds, forced.inputs)]
            in_nds = tuple(forced.inputs)
            key = None if key is None else (op.name, key[1], plc, in_nds, key[4], forced)
            plan = _cached_plan(key, op, params, plc, in_nds, ins, len(dyn), forced=forced)
    fn, sig, in_avals, out_avals, sigs = plan
    seg = _LAZY_LOCAL.active  # (lazy mode: this thread's segment records the call)
    if seg is not None and step is None and not _RECORDING[0]:
        out = seg.add_global(fn, ins, dyn, single, plc, sig.outputs, out_avals,
                             lambda: _abstract_call(fn, plc, in_nds, in_avals, dyn))
        if out is not NotImplemented:
            return record(op, params, ins, out, dyn) if any(
                t._requires_grad for t in ins) else out
    if _RECORDING[0]:
        moved = sum(cost(s, d, a.size * np.dtype(a.dtype).itemsize, plc.hierarchy, a.shape)
                    for s, d, a in zip(in_nds, sig.inputs, in_avals))
        last_choices.append((op.name, sig, [describe(s, d, plc.hierarchy, a.shape)
                                            for s, d, a in zip(in_nds, sig.inputs, in_avals)],
                             moved))
    if in_values is None:
        in_values = [t._value for t in ins]
    values = plc.wait_if_shared(fn(*in_values, *dyn))
    if step is not None and isinstance(step, step_plan.StepRecorder):
        step.op(op.name, sigs, in_values, in_nds, [(_nbytes(a), a.shape) for a in in_avals],
                sig, values, [_nbytes(a) for a in out_avals], plc.hierarchy)
    outs = [make_global(v, plc, nd) for v, nd in zip(values, sig.outputs)]
    out = outs[0] if single else tuple(outs)
    if any(t._requires_grad for t in ins):
        return record(op, params, ins, out, dyn)
    return out
