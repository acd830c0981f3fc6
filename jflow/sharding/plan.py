"""Whole-step SBP signature choice for compiled code (OneFlow's auto-parallel, as an ILP).

Eager global ops choose their signature one at a time (``execute.choose_signature``: no
transfer if an exact match exists, else the least boxing traffic for *this* op). That is all
eager code can do, but it is greedy: a choice that is free now can force expensive boxing
three ops later. Inside ``flow.jit`` / ``nn.Graph`` the whole step is known before it runs,
so the step is traced twice:

1. a *recording* trace (greedy choices, as eager) notes every global op call — its candidate
   nd signatures, where each input came from (the output of an earlier call, or a tensor
   whose SBP is fixed: a step input, state, an explicit ``to_global``) — and every explicit
   conversion (``box_value``: ``to_global``, ``numpy()``), and which values escape the step
   (outputs, new state, gradients: their SBP is *pinned* to the greedy one, so the state's
   layout, hence the next call's key, does not change);
2. :func:`solve` picks one signature per call minimising the modelled time of the whole
   step on one device: its boxing bytes (``boxing.cost``, the model ``explain`` reports) over
   the interconnect (:data:`LINK_BANDWIDTH`) plus its per-device compute — each call's FLOPs
   on its local shards (the op's ``flops=`` estimate, :mod:`jflow.ops.cost`) at
   :data:`FLOP_RATE`, or for an op declaring none, the bytes of its local outputs at
   :data:`MEMORY_BANDWIDTH` (whichever is longer: a roofline). Splitting a call's inputs
   shrinks its work; broadcasting them runs the whole of it on every device. The
   program's objective is that time times ``LINK_BANDWIDTH`` (bytes the link moves in it),
   so its numbers stay in the range of the bytes. First the calls whose choice can be
   minimised out exactly go (a dynamic program on the chain-like parts: a call with one edge
   in and one out, a leaf, a source; OneFlow's auto-parallel eliminates the same shapes),
   then what is left is an integer program: one binary per (call, signature) and, per edge, a
   transport block between the producer's output SBP and the consumer's input SBP whose
   marginals are the two calls' choices (a tight linearisation of the pairwise cost: on a
   transformer step its LP relaxation was already integral). It is built with NumPy and
   SciPy's ``milp`` (HiGHS; SciPy is a dependency of JAX) solves it; ``LAST_SOLVE`` has
   HiGHS's lower bound next to the plan;
3. when the plan costs less than the greedy choice, the step is traced again with the plan
   *forced*: call ``k`` uses signature ``plan[k]``. Any signature is correct for any input
   layout (boxing converts), so the plan only changes traffic and which device does which
   part of the work, never results.

Only what the cost model sees is optimised; XLA may still fuse or reorder collectives.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from ..ops import registry as _ops
from .boxing import cost
from .boxing_plan import steps_from
from .sbp import _Broadcast, _PartialSum, _Split

__all__ = ["StepRecorder", "StepPlan", "recording", "forcing", "following", "active", "solve",
           "step_terms", "total_cost", "layout_summary", "FLOP_RATE", "LINK_BANDWIDTH",
           "MEMORY_BANDWIDTH"]

#: ``[None | StepRecorder | StepPlan]``: what global ops report to while a step is traced
_ACTIVE: list[Any] = [None]

# The device the planner weighs compute against communication for: an A100-class GPU
# training in float32 over NVLink -- the hardware a tensor-parallel step is written for, not
# this CPU (whose "devices" share one memory and one core pool: a plan tuned to it would
# never split anything). One device's step time is modelled as
#     boxing bytes / LINK_BANDWIDTH + sum over calls of max(2 * local multiply-adds /
#     FLOP_RATE, local output bytes / MEMORY_BANDWIDTH)
# (no overlap of the two, no per-collective latency). Their ratio is what matters: about 65
# FLOPs per byte sent here; bfloat16 tensor cores would make compute ~16x cheaper and favour
# gathering more. Change them (module attributes, read at each solve) to plan for other
# hardware.
#: float32 FLOP/s of one device (A100: 19.5 TFLOP/s without TF32, PyTorch's default for
#: float32 matmuls); a multiply-add is two FLOPs
FLOP_RATE = 19.5e12
#: bytes/s one device sends to the others (A100 NVLink 3: 12 links x 25 GB/s per direction).
#: Boxing bytes are per-device wire bytes of ring collectives, the unit ``boxing.cost`` and
#: the compiled HLO's collectives are measured in
LINK_BANDWIDTH = 300e9
#: bytes/s of one device's memory (A100 40 GB HBM2): what an op that declares no ``flops=``
#: (elementwise, reductions, indexing: memory-bound) costs per byte of its local outputs
MEMORY_BANDWIDTH = 1.555e12
#: the largest program solved (variables); bigger steps keep the greedy choice
_MAX_VARIABLES = 500_000
_TIME_LIMIT_S = 60.0
#: HiGHS's relative gap: a plan reported optimal is within this of the minimum
_GAP = 1e-6
#: what the last :func:`solve` met (calls, candidates, variables, outcome, the greedy
#: choice's cost and, when solved, the plan's): why a step kept its greedy choice, or what
#: the plan saves (examples, benchmarks)
LAST_SOLVE: dict[str, Any] = {}


def active() -> Any:
    return _ACTIVE[0]


class StepRecorder:
    """What one greedy trace of a step did with global tensors (see the module docstring).

    ``ops[k]`` = ``(op name, candidates, inputs, chosen, hierarchy, outputs, flops)`` where
    each input is ``(source, size)`` and a source is ``("call", k, j)`` (output ``j`` of call
    ``k``) or ``("fixed", nd, f)`` (the ``f``-th distinct value the step did not compute:
    calls reading the same one share its conversions, as a forced trace does), outputs are
    sizes, a size is ``(bytes, logical shape or None)``, and ``flops`` the op's estimate of
    its multiply-adds (``OpDef.flops``) or None. ``boxes`` = ``(source, dst nd, size,
    hierarchy)``."""

    def __init__(self) -> None:
        self.ops: list[tuple] = []
        self.boxes: list[tuple] = []
        self.pinned: dict[tuple[int, int], tuple] = {}
        self._producer: dict[int, tuple[int, int]] = {}
        self._fixed: dict[int, int] = {}
        self._keep: list[Any] = []  # the traced values, so their ids are not reused

    def _source(self, value: Any, nd: tuple) -> tuple:
        where = self._producer.get(id(value))
        if where is not None:
            return ("call", *where)
        f = self._fixed.get(id(value))
        if f is None:
            f = self._fixed[id(value)] = len(self._fixed)
            self._keep.append(value)
        return ("fixed", nd, f)

    def op(self, name: str, candidates: Sequence[Any], in_values: Sequence[Any],
           in_nds: Sequence[tuple], in_sizes: Sequence[tuple[float, tuple]], chosen: Any,
           out_values: Sequence[Any], out_nbytes: Sequence[float],
           hierarchy: Sequence[int], flops: Callable[..., int] | None = None) -> None:
        """One global op call. ``flops``: its multiply-adds from (input, output) avals;
        None takes the registered op's ``flops=`` (if ``name`` is one)."""
        k = len(self.ops)
        ins = [(self._source(v, nd), b) for v, nd, b in zip(in_values, in_nds, in_sizes)]
        if flops is None and _ops.is_registered(name):
            flops = _ops.get(name).flops
        outs = []
        for v, b in zip(out_values, out_nbytes):
            shape = getattr(v, "shape", None)
            outs.append((b, None if shape is None else tuple(shape)))
        self.ops.append((name, list(candidates), ins, chosen, tuple(hierarchy), outs, flops))
        for j, v in enumerate(out_values):
            self._producer[id(v)] = (k, j)
            self._keep.append(v)

    def box(self, value: Any, src: tuple, dst: tuple, size: tuple[float, tuple],
            hierarchy: Sequence[int]) -> None:
        self.boxes.append((self._source(value, src), dst, size, tuple(hierarchy)))

    def release(self) -> None:
        """Drop the traced values (kept only while the trace runs, so ids stay unique)."""
        self._producer.clear()
        self._fixed.clear()
        self._keep.clear()

    def pin(self, pins: Sequence[tuple[Any, tuple]]) -> None:
        """``(value, (placement, nd))`` pairs: state the step rewrites must come back with
        the layout it came in with (else the next call's key changes)."""
        for v, glob in pins:
            where = self._producer.get(id(v))
            if where is not None:
                self.pinned[where] = glob[1]

    def pin_outputs(self, values: Sequence[Any]) -> None:
        """The step's outputs keep the SBP eager execution (the greedy choice) gives them:
        the plan changes traffic, not what the caller receives."""
        for v in values:
            where = self._producer.get(id(v))
            if where is not None and where not in self.pinned:
                self.pinned[where] = self.ops[where[0]][3].outputs[where[1]]


class StepPlan:
    """Forced signatures for the calls of a step, in call order (a trace that strays from
    the recorded op sequence falls back to greedy choices for the rest)."""

    def __init__(self, names: list[str], sigs: list[Any]) -> None:
        self.names, self.sigs = names, sigs
        self.k = 0
        self.off = False
        self._boxed: dict[tuple[int, tuple], tuple[Any, Any]] = {}

    def boxed(self, value: Any, plc: Any, src: tuple, dst: tuple,
              box_value: Callable[..., Any]) -> Any:
        """``value`` converted from ``src`` to ``dst``, once per step: every call that needs
        the same conversion of the same value shares one collective (as the plan's cost
        assumes)."""
        if src == dst:
            return value
        key = (id(value), dst)
        hit = self._boxed.get(key)
        if hit is None or hit[0] is not value:
            hit = (value, box_value(value, plc, src, dst))
            self._boxed[key] = hit
        return hit[1]

    def next(self, name: str) -> Any:
        k = self.k
        self.k += 1
        if self.off or k >= len(self.names) or self.names[k] != name:
            self.off = True
            return None
        return self.sigs[k]


class _Active:
    def __init__(self, what: Any) -> None:
        self.what = what

    def __enter__(self) -> Any:
        self.prev = _ACTIVE[0]
        _ACTIVE[0] = self.what
        return self.what

    def __exit__(self, *exc: Any) -> None:
        _ACTIVE[0] = self.prev
        if isinstance(self.what, StepPlan):
            self.what._boxed.clear()  # (the trace's values: not kept past it)


def recording(rec: StepRecorder) -> _Active:
    return _Active(rec)


def forcing(plan: StepPlan) -> _Active:
    plan.k, plan.off = 0, False
    return _Active(plan)


def following(what: StepRecorder | StepPlan | None) -> _Active:
    """The context a traced step runs in: recording, following a plan, or neither."""
    return forcing(what) if isinstance(what, StepPlan) else _Active(what)


_COSTS: dict[tuple, float] = {}  # _cost's memo, emptied by each solve (bounded by it)
#: per (src, hierarchy, rank, which splits divide): every reachable dst's bytes as a fraction
#: of the tensor's (one Dijkstra from src instead of one per pair), emptied by each solve
_FROM: dict[tuple, dict[tuple, Fraction]] = {}


def _fractions(src: tuple, hierarchy: tuple[int, ...], shape: tuple[int, ...]) -> dict:
    """``boxing_plan.plan(src, dst, hierarchy, shape)[1]`` for every ``dst`` at once: the
    same Dijkstra over one-axis steps, run to the end. The least bytes depend on the shape
    only through which dims the axes' products divide, so shapes share the result."""
    parts = sorted({math.prod(c) for r in range(len(hierarchy) + 1)
                    for c in itertools.combinations(hierarchy, r)})
    key = (src, hierarchy, tuple(tuple(s % q == 0 for q in parts) for s in shape))
    out = _FROM.get(key)
    if out is not None:
        return out
    kinds = [_Broadcast(), _PartialSum(), *(_Split(d) for d in range(len(shape)))]
    best: dict[tuple, Fraction] = {src: Fraction(0)}
    heap: list = [(Fraction(0), 0, src)]
    tick = 0
    while heap:
        c, _, state = heapq.heappop(heap)
        if c != best[state]:
            continue
        for _, _, _, nxt, nbytes in steps_from(state, kinds, hierarchy, shape):
            cn = c + nbytes
            if nxt not in best or cn < best[nxt]:
                best[nxt] = cn
                tick += 1
                heapq.heappush(heap, (cn, tick, nxt))
    _FROM[key] = best
    return best


def _cost(src: tuple, dst: tuple, size: tuple[float, tuple], hierarchy: Sequence[int]) -> float:
    """``boxing.cost`` of a value of ``size`` = ``(bytes, logical shape)`` (the same float:
    the same least fraction times the bytes), memoised per solve: a transformer step asks
    for ~260,000 (src, dst, shape) pairs, ~13,000 distinct, and one Dijkstra per pair
    (``boxing_plan.plan``) took ~100 s there."""
    key = (src, dst, size, tuple(hierarchy))
    c = _COSTS.get(key)
    if c is None:
        if src == dst:
            c = 0.0
        elif size[1] is None:
            c = float(cost(src, dst, size[0], hierarchy, None))
        else:
            frac = _fractions(tuple(src), tuple(hierarchy), tuple(size[1]))[tuple(dst)]
            c = float(frac * Fraction(size[0]))
        _COSTS[key] = c
    return c


def _local_bytes(nbytes: float, nd: tuple, hierarchy: Sequence[int]) -> float:
    split = 1
    for x, n in zip(nd, hierarchy):
        if isinstance(x, _Split):
            split *= n
    return nbytes / split


class _Local:
    """A local shard's shape, as a ``flops(in_avals, out_avals)`` estimate reads an aval."""

    __slots__ = ("shape", "ndim", "size")

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape, self.ndim, self.size = shape, len(shape), math.prod(shape)


def _local_shape(shape: tuple[int, ...], nd: tuple, hierarchy: Sequence[int]) -> tuple:
    """One device's piece of a value of logical ``shape`` laid out as ``nd`` (a partial
    sum's addend, like a broadcast copy, has the whole shape)."""
    out = list(shape)
    for x, n in zip(nd, hierarchy):
        if isinstance(x, _Split) and out:
            out[x.axis % len(out)] //= n
    return tuple(out)


_FLOPS: dict[tuple, float] = {}  # _compute_s's memo of flops estimates, emptied by each solve


def _compute_s(op: tuple, sig: Any) -> float:
    """Seconds one device spends on call ``op`` under ``sig`` (see the constants): the op's
    multiply-adds on its local shards at ``FLOP_RATE``, at least its local output bytes at
    ``MEMORY_BANDWIDTH`` (all an op without a ``flops=`` estimate is charged)."""
    _, _, ins, _, h, outs, flops = op
    t = sum(_local_bytes(b, nd, h) for (b, _), nd in zip(outs, sig.outputs)) / MEMORY_BANDWIDTH
    if flops is None or any(size[1] is None for _, size in ins) \
            or any(shape is None for _, shape in outs):
        return t
    key = (flops, tuple(_local_shape(size[1], nd, h) for (_, size), nd in zip(ins, sig.inputs)),
           tuple(_local_shape(shape, nd, h) for (_, shape), nd in zip(outs, sig.outputs)))
    n = _FLOPS.get(key)
    if n is None:
        n = _FLOPS[key] = float(flops([_Local(x) for x in key[1]], [_Local(x) for x in key[2]]))
    return max(t, 2.0 * n / FLOP_RATE)


def _work_split(sig: Any, hierarchy: Sequence[int]) -> int:
    """Over how many devices a call under ``sig`` divides its work: the product of the
    hierarchy axes on which an input or output is split (1: every device runs all of it)."""
    n = 1
    for i, size in enumerate(hierarchy):
        if any(isinstance(nd[i], _Split) for nd in (*sig.inputs, *sig.outputs)):
            n *= size
    return n


def layout_summary(rec: StepRecorder, choice: Sequence[Any]) -> dict[int, int]:
    """How many calls of a step divide their work over how many devices under ``choice``
    (``{1: calls run whole on every device, 2: ..., 8: ...}``): whether a plan is really
    tensor / data parallel."""
    out: dict[int, int] = {}
    for op, sig in zip(rec.ops, choice):
        n = _work_split(sig, op[4])
        out[n] = out.get(n, 0) + 1
    return dict(sorted(out.items()))


def _shared_fixed(rec: StepRecorder) -> set[int]:
    """The fixed values more than one call input reads (their conversions are shared)."""
    seen: set[int] = set()
    shared: set[int] = set()
    for op in rec.ops:
        for src, _ in op[2]:
            if src[0] == "fixed":
                (shared if src[2] in seen else seen).add(src[2])
    return shared


def _own_cost(rec: StepRecorder, k: int, sig: Any,
              skip: set[int] | frozenset[int] = frozenset()) -> float:
    """The part of call ``k``'s cost that depends on its choice alone: boxing bytes of fixed
    inputs (but those in ``skip``, shared with other calls) and its compute time, in the
    program's unit (bytes the link moves in that time)."""
    op = rec.ops[k]
    ins, h = op[2], op[4]
    c = sum(_cost(src[1], need, b, h) for (src, b), need in zip(ins, sig.inputs)
            if src[0] == "fixed" and src[2] not in skip)
    return c + LINK_BANDWIDTH * _compute_s(op, sig)


def step_terms(rec: StepRecorder, choice: Sequence[Any],
               shared: bool = True) -> tuple[float, float]:
    """The step's two costs for one signature per call: the boxing bytes each device sends
    and its compute seconds. ``shared``: a conversion of one value is paid once (a forced
    plan boxes each value once per target; greedy calls each box their own inputs)."""
    nbytes = compute = 0.0
    seen = set()
    skip = _shared_fixed(rec) if shared else set()
    for k, op in enumerate(rec.ops):
        ins, h = op[2], op[4]
        compute += _compute_s(op, choice[k])
        for (src, b), need in zip(ins, choice[k].inputs):
            if src[0] == "fixed":
                if src[2] not in skip:
                    nbytes += _cost(src[1], need, b, h)
                elif ("fixed", src[2], need) not in seen:
                    seen.add(("fixed", src[2], need))
                    nbytes += _cost(src[1], need, b, h)
            else:
                have = choice[src[1]].outputs[src[2]]
                if shared and (src[1], src[2], need) in seen:
                    continue
                seen.add((src[1], src[2], need))
                nbytes += _cost(have, need, b, h)
    for src, dst, b, h in rec.boxes:
        if src[0] == "call":
            nbytes += _cost(choice[src[1]].outputs[src[2]], dst, b, h)
    return nbytes, compute


def total_cost(rec: StepRecorder, choice: Sequence[Any], shared: bool = True) -> float:
    """The step's cost for one signature per call, as the program counts it: boxing bytes
    + compute seconds x ``LINK_BANDWIDTH`` (:func:`step_terms`)."""
    nbytes, compute = step_terms(rec, choice, shared)
    return nbytes + LINK_BANDWIDTH * compute


class _Edge:
    """One producer-output -> consumer-input dependence of the reduced program: ``pa[s]`` /
    ``qb[s]`` index the producer's / consumer's candidates into the rows / columns of the
    cost matrix ``c`` (a conversion's bytes, or after eliminating calls between them, the
    least cost of the eliminated chain for that pair); ``value`` = ``(p, j)`` when the
    producer's output feeds several consumers (its conversions are shared), else None."""

    __slots__ = ("p", "pa", "q", "qb", "c", "value")

    def __init__(self, p: int, pa: np.ndarray, q: int, qb: np.ndarray, c: np.ndarray,
                 value: tuple | None) -> None:
        self.p, self.pa, self.q, self.qb, self.c, self.value = p, pa, q, qb, c, value


def _index(keys: list) -> tuple[list, np.ndarray]:
    """The distinct ``keys`` (first-seen order) and each key's position among them."""
    pos: dict = {}
    idx = np.fromiter((pos.setdefault(k, len(pos)) for k in keys), dtype=np.int64,
                      count=len(keys))
    return list(pos), idx


def _program(rec: StepRecorder, cands: list[list[Any]]) -> tuple[list[np.ndarray], dict]:
    """The step as unary costs per call (own cost + explicit conversions of its outputs)
    and edges (:class:`_Edge`). A fixed value several calls read becomes one more node
    (after the calls), with one choice: its SBP, and shared edges to its readers."""
    skip = _shared_fixed(rec)
    unary = [np.array([_own_cost(rec, k, s, skip) for s in cs]) for k, cs in enumerate(cands)]
    fixed_node: dict[int, int] = {}
    for f in sorted(skip):
        fixed_node[f] = len(unary)
        unary.append(np.zeros(1))
    for src, dst, b, h in rec.boxes:  # explicit conversions: a cost on the producer's choice
        if src[0] == "call":
            p, j = src[1], src[2]
            unary[p] = unary[p] + np.array([_cost(s.outputs[j], dst, b, h) for s in cands[p]])
    fanout: dict[tuple, int] = {}
    for op in rec.ops:
        for src, _ in op[2]:
            if src[0] == "call":
                fanout[src[1:]] = fanout.get(src[1:], 0) + 1
    edges = {}
    for k, op in enumerate(rec.ops):
        h = op[4]
        for i, (src, b) in enumerate(op[2]):
            if src[0] == "fixed" and src[2] in skip:
                p = fixed_node[src[2]]
                needs, qb = _index([s.inputs[i] for s in cands[k]])
                c = np.array([[_cost(src[1], bb, b, h) for bb in needs]])
                edges[len(edges)] = _Edge(p, np.zeros(1, dtype=np.int64), k, qb, c,
                                          (p, 0, [src[1]], needs))
                continue
            if src[0] != "call":
                continue
            p, j = src[1], src[2]
            outs, pa = _index([s.outputs[j] for s in cands[p]])
            needs, qb = _index([s.inputs[i] for s in cands[k]])
            c = np.array([[_cost(a, bb, b, h) for bb in needs] for a in outs]).reshape(
                len(outs), len(needs))
            edges[len(edges)] = _Edge(p, pa, k, qb, c, (p, j, outs, needs)
                                      if fanout[(p, j)] > 1 else None)
    return unary, edges


def _reduce(unary: list[np.ndarray], edges: dict) -> tuple[list, set]:
    """Eliminate calls whose choice can be minimised out exactly (a dynamic program on the
    chain-like parts of the graph; OneFlow's auto-parallel does the same): a call with one
    unshared edge in and none out (its least cost per producer choice joins the producer's
    unary cost), none in and one out (joins the consumer's), or one in and one out (the two
    edges become one, its matrix the min-plus product through the call). Returns the
    eliminations in order (to recover the eliminated calls' choices) and the calls left."""
    ins: dict[int, set] = {k: set() for k in range(len(unary))}
    outs: dict[int, set] = {k: set() for k in range(len(unary))}
    for e, ed in edges.items():
        ins[ed.q].add(e)
        outs[ed.p].add(e)
    steps: list[tuple] = []
    next_e = max(edges, default=-1) + 1
    alive = set(range(len(unary)))
    work = list(range(len(unary)))
    while work:
        k = work.pop()
        if k not in alive:
            continue
        i_e, o_e = ins[k], outs[k]
        if len(i_e) > 1 or len(o_e) > 1 or any(edges[e].value is not None for e in i_e | o_e):
            continue
        u = unary[k]
        if not i_e and not o_e:  # isolated: its own cheapest
            steps.append(("alone", k, int(np.argmin(u))))
        elif i_e and not o_e:  # a leaf: min over k per producer choice
            e = i_e.pop()
            ed = edges.pop(e)
            t = u[None, :] + ed.c[:, ed.qb]  # [producer's a, k's candidate]
            best = np.argmin(t, axis=1)
            unary[ed.p] = unary[ed.p] + t[np.arange(len(best)), best][ed.pa]
            outs[ed.p].discard(e)
            steps.append(("leaf", k, ed.p, ed.pa, best))
            work.append(ed.p)
        elif o_e and not i_e:  # a source: min over k per consumer choice
            e = o_e.pop()
            ed = edges.pop(e)
            t = u[:, None] + ed.c[ed.pa, :]  # [k's candidate, consumer's b]
            best = np.argmin(t, axis=0)
            unary[ed.q] = unary[ed.q] + t[best, np.arange(len(best))][ed.qb]
            ins[ed.q].discard(e)
            steps.append(("source", k, ed.q, ed.qb, best))
            work.append(ed.q)
        else:  # a link of a chain: p -> k -> q becomes p -> q
            e1, e2 = i_e.pop(), o_e.pop()
            a, b = edges.pop(e1), edges.pop(e2)
            t = a.c[:, a.qb][:, :, None] + u[None, :, None] + b.c[b.pa, :][None, :, :]
            best = np.argmin(t, axis=1)  # [a, b] -> k's candidate
            c = np.take_along_axis(t, best[:, None, :], axis=1)[:, 0, :]
            e = next_e
            next_e += 1
            edges[e] = _Edge(a.p, a.pa, b.q, b.qb, c, None)
            outs[a.p].discard(e1)
            outs[a.p].add(e)
            ins[b.q].discard(e2)
            ins[b.q].add(e)
            steps.append(("link", k, a.p, a.pa, b.q, b.qb, best))
            work += [a.p, b.q]
        alive.discard(k)
    return steps, alive


def _recover(steps: list[tuple], pick: dict[int, int]) -> None:
    """The eliminated calls' choices, given the kept calls' (``pick``: call -> candidate)."""
    for st in reversed(steps):
        if st[0] == "alone":
            pick[st[1]] = st[2]
        elif st[0] in ("leaf", "source"):
            _, k, other, idx, best = st
            pick[k] = int(best[idx[pick[other]]])
        else:
            _, k, p, pa, q, qb, best = st
            pick[k] = int(best[pa[pick[p]], qb[pick[q]]])


def _milp(unary: list[np.ndarray], edges: dict, kept: list[int],
          time_limit: float) -> tuple[Any, dict[int, int], int, float]:
    """The reduced program as a MILP (binaries per kept call's candidate, a transport block
    per edge whose marginals are the two calls' choices, a shared variable per conversion of
    a value with several consumers), built with NumPy; SciPy's HiGHS solves it. Returns
    its result, the kept calls' choices, the variables and when the build ended."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    offset, n = {}, 0
    for k in kept:
        offset[k] = n
        n += len(unary[k])
    nx = n
    obj = [np.concatenate([unary[k] for k in kept])] if kept else []
    rows, cols, vals, lo, hi = [], [], [], [], []
    r = 0
    for k in kept:  # one candidate per call
        m = len(unary[k])
        rows.append(np.full(m, r))
        cols.append(offset[k] + np.arange(m))
        vals.append(np.ones(m))
        r += 1
    lo.append(np.ones(len(kept)))
    hi.append(np.ones(len(kept)))
    shared: dict[tuple, int] = {}
    for ed in edges.values():
        na, nb = ed.c.shape
        z = n + np.arange(na * nb).reshape(na, nb)
        n += na * nb
        obj.append(np.zeros(na * nb) if ed.value is not None else ed.c.ravel())
        # producer marginals: sum_b z[a, b] = sum_{s: pa[s] = a} x[p, s]
        rows += [np.repeat(r + np.arange(na), nb), r + ed.pa]
        cols += [z.ravel(), offset[ed.p] + np.arange(len(ed.pa))]
        vals += [np.ones(na * nb), -np.ones(len(ed.pa))]
        r += na
        rows += [np.tile(r + np.arange(nb), na), r + ed.qb]
        cols += [z.ravel(), offset[ed.q] + np.arange(len(ed.qb))]
        vals += [np.ones(na * nb), -np.ones(len(ed.qb))]
        r += nb
        lo.append(np.zeros(na + nb))
        hi.append(np.zeros(na + nb))
        if ed.value is not None:  # y[a, b] >= z[a, b]: a conversion paid once per value
            p, j, outs, needs = ed.value
            ai, bi = np.nonzero(ed.c)
            ys = []
            for a_, b_ in zip(ai.tolist(), bi.tolist()):
                key = (p, j, outs[a_], needs[b_])
                y = shared.get(key)
                if y is None:
                    y = shared[key] = n
                    n += 1
                    obj.append(ed.c[a_, b_:b_ + 1])
                ys.append(y)
            m = len(ys)
            rows += [r + np.arange(m), r + np.arange(m)]
            cols += [np.array(ys, dtype=np.int64), z[ai, bi]]
            vals += [np.ones(m), -np.ones(m)]
            r += m
            lo.append(np.zeros(m))
            hi.append(np.full(m, np.inf))
    integrality = np.zeros(n)
    integrality[:nx] = 1
    a = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                   shape=(r, n))
    cons = LinearConstraint(a, np.concatenate(lo), np.concatenate(hi))
    built = time.perf_counter()
    res = milp(np.concatenate(obj), constraints=cons, integrality=integrality,
               bounds=Bounds(0, 1), options={"time_limit": time_limit, "mip_rel_gap": _GAP})
    pick = {} if res.x is None else {
        k: int(np.argmax(res.x[offset[k]:offset[k] + len(unary[k])])) for k in kept}
    return res, pick, n, built


def _size(unary: list[np.ndarray], edges: dict, kept: set) -> int:
    """The reduced program's variables (before building it)."""
    n = sum(len(unary[k]) for k in kept) + sum(ed.c.size for ed in edges.values())
    return n + len({(*ed.value[:2], ed.value[2][a], ed.value[3][b])
                    for ed in edges.values() if ed.value is not None
                    for a, b in zip(*np.nonzero(ed.c))})


def solve(rec: StepRecorder) -> tuple[list[Any], float, float] | None:
    """The cheapest signature per call: ``(plan, its cost, the greedy cost)`` (costs in the
    program's unit: modelled seconds x ``LINK_BANDWIDTH``), or None when there is nothing
    to choose, the program is too big or no solution was found in time. ``LAST_SOLVE``
    says what it met, whether the plan is proven optimal, and the plan's and the greedy
    choice's terms: ``*_bytes`` (boxing bytes per device), ``*_compute_s`` (compute
    seconds per device), ``*_s`` (their modelled total), ``work_split`` /
    ``greedy_work_split`` (:func:`layout_summary`)."""
    if not rec.ops:
        return None
    t0 = time.perf_counter()
    _COSTS.clear()
    _FROM.clear()
    _FLOPS.clear()
    try:
        import scipy.optimize  # noqa: F401
    except ImportError:  # pragma: no cover - SciPy comes with JAX
        return None
    greedy = [op[3] for op in rec.ops]
    # candidates, with pinned outputs restricted to the greedy SBP
    cands = []
    for k, (_, cs, _, chosen, *_) in enumerate(rec.ops):
        keep = [s for s in cs if all(s.outputs[j] == nd
                                     for (kk, j), nd in rec.pinned.items() if kk == k)]
        cands.append(keep or [chosen])
    unary, edges = _program(rec, cands)
    steps, kept = _reduce(unary, edges)
    n = _size(unary, edges, kept)
    LAST_SOLVE.clear()
    LAST_SOLVE.update(calls=len(rec.ops), candidates=sum(len(cs) for cs in cands),
                      kept_calls=sum(k < len(cands) for k in kept), variables=n,
                      outcome="too large", link_bandwidth=LINK_BANDWIDTH, flop_rate=FLOP_RATE,
                      memory_bandwidth=MEMORY_BANDWIDTH)
    g_bytes, g_compute = step_terms(rec, greedy, shared=False)
    greedy_cost = g_bytes + LINK_BANDWIDTH * g_compute
    LAST_SOLVE.update(greedy=greedy_cost, greedy_bytes=g_bytes, greedy_compute_s=g_compute,
                      greedy_s=greedy_cost / LINK_BANDWIDTH,
                      greedy_work_split=layout_summary(rec, greedy))
    if n > _MAX_VARIABLES:
        return None
    kept_l = sorted(kept)
    pick: dict[int, int] = {}
    optimal, built = True, time.perf_counter()
    # the calls eliminated alone add their least cost; every other elimination is folded
    # into the kept calls' costs, so the program's objective is the step's cost
    bound: float | None = sum(float(unary[st[1]][st[2]]) for st in steps if st[0] == "alone")
    if kept_l:
        res, pick, n, built = _milp(unary, edges, kept_l, _TIME_LIMIT_S)
        optimal = res.status == 0
        dual = getattr(res, "mip_dual_bound", None)  # HiGHS's lower bound of the program
        bound = None if dual is None else bound + float(dual)
    LAST_SOLVE.update(variables=n, build_s=built - t0, solve_s=time.perf_counter() - built)
    if kept_l and res.x is None:
        LAST_SOLVE.update(outcome="no solution")
        return None
    _recover(steps, pick)
    plan = [cands[k][pick[k]] for k in range(len(cands))]
    p_bytes, p_compute = step_terms(rec, plan)
    planned = p_bytes + LINK_BANDWIDTH * p_compute
    LAST_SOLVE.update(outcome="solved" if optimal else "time limit (best found)",
                      optimal=optimal, planned=planned, planned_bytes=p_bytes,
                      planned_compute_s=p_compute, planned_s=planned / LINK_BANDWIDTH,
                      bound=bound, work_split=layout_summary(rec, plan))
    return plan, planned, greedy_cost
