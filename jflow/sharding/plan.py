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
2. :func:`solve` picks one signature per call minimising the boxing bytes of the whole step
   (``boxing.cost``, the model ``explain`` reports) plus a small compute term (bytes of the
   local outputs: among equally cheap plans, prefer the one that does not replicate work).
   It is an integer program over the call graph: one binary per (call, signature) and, per
   edge, a transport block between the producer's output SBP and the consumer's input SBP
   whose marginals are the two calls' choices (a tight linearisation of the pairwise cost).
   SciPy's ``milp`` (HiGHS; SciPy is a dependency of JAX) solves it;
3. when the plan moves less than the greedy choice, the step is traced again with the plan
   *forced*: call ``k`` uses signature ``plan[k]``. Any signature is correct for any input
   layout (boxing converts), so the plan only changes traffic, never results.

Only the traffic the cost model sees is optimised; XLA may still fuse or reorder collectives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .boxing import cost
from .sbp import _Split

__all__ = ["StepRecorder", "StepPlan", "recording", "forcing", "following", "active", "solve"]

#: ``[None | StepRecorder | StepPlan]``: what global ops report to while a step is traced
_ACTIVE: list[Any] = [None]

#: weight of the compute term (bytes of local outputs) against boxing bytes
_COMPUTE_WEIGHT = 1e-3
#: the largest program solved (variables); bigger steps keep the greedy choice
_MAX_VARIABLES = 200_000
_TIME_LIMIT_S = 10.0
#: what the last :func:`solve` met (calls, candidates, variables, outcome, the greedy
#: choice's cost and, when solved, the plan's): why a step kept its greedy choice, or what
#: the plan saves (examples, benchmarks)
LAST_SOLVE: dict[str, Any] = {}


def active() -> Any:
    return _ACTIVE[0]


class StepRecorder:
    """What one greedy trace of a step did with global tensors (see the module docstring).

    ``ops[k]`` = ``(op name, candidates, inputs, chosen, hierarchy, out_nbytes)`` where each
    input is ``(source, nbytes)`` and a source is ``("call", k, j)`` (output ``j`` of call
    ``k``) or ``("fixed", nd)``, and sizes are ``(bytes, logical shape)``. ``boxes`` =
    ``(source, dst nd, size, hierarchy)``."""

    def __init__(self) -> None:
        self.ops: list[tuple] = []
        self.boxes: list[tuple] = []
        self.pinned: dict[tuple[int, int], tuple] = {}
        self._producer: dict[int, tuple[int, int]] = {}
        self._keep: list[Any] = []  # the traced values, so their ids are not reused

    def _source(self, value: Any, nd: tuple) -> tuple:
        where = self._producer.get(id(value))
        return ("call", *where) if where is not None else ("fixed", nd)

    def op(self, name: str, candidates: Sequence[Any], in_values: Sequence[Any],
           in_nds: Sequence[tuple], in_sizes: Sequence[tuple[float, tuple]], chosen: Any,
           out_values: Sequence[Any], out_nbytes: Sequence[float],
           hierarchy: Sequence[int]) -> None:
        k = len(self.ops)
        ins = [(self._source(v, nd), b) for v, nd, b in zip(in_values, in_nds, in_sizes)]
        self.ops.append((name, list(candidates), ins, chosen, tuple(hierarchy),
                         list(out_nbytes)))
        for j, v in enumerate(out_values):
            self._producer[id(v)] = (k, j)
            self._keep.append(v)

    def box(self, value: Any, src: tuple, dst: tuple, size: tuple[float, tuple],
            hierarchy: Sequence[int]) -> None:
        self.boxes.append((self._source(value, src), dst, size, tuple(hierarchy)))

    def release(self) -> None:
        """Drop the traced values (kept only while the trace runs, so ids stay unique)."""
        self._producer.clear()
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


def _cost(src: tuple, dst: tuple, size: tuple[float, tuple], hierarchy: Sequence[int]) -> float:
    """``boxing.cost`` of a value of ``size`` = ``(bytes, logical shape)``, memoised per
    solve: a transformer step asks for the same (src, dst, shape) pairs many times, and
    more distinct ones than ``boxing_plan.plan``'s LRU holds."""
    key = (src, dst, size, tuple(hierarchy))
    c = _COSTS.get(key)
    if c is None:
        c = _COSTS[key] = float(cost(src, dst, size[0], hierarchy, size[1]))
    return c


def _local_bytes(nbytes: float, nd: tuple, hierarchy: Sequence[int]) -> float:
    split = 1
    for x, n in zip(nd, hierarchy):
        if isinstance(x, _Split):
            split *= n
    return nbytes / split


def _own_cost(rec: StepRecorder, k: int, sig: Any) -> float:
    """The part of call ``k``'s cost that depends on its choice alone: boxing of fixed
    inputs and its compute term."""
    _, _, ins, _, h, out_nbytes = rec.ops[k]
    c = sum(_cost(src[1], need, b, h) for (src, b), need in zip(ins, sig.inputs)
            if src[0] == "fixed")
    return c + _COMPUTE_WEIGHT * sum(_local_bytes(b, nd, h)
                                     for b, nd in zip(out_nbytes, sig.outputs))


def total_cost(rec: StepRecorder, choice: Sequence[Any], shared: bool = True) -> float:
    """The step's cost (boxing bytes + compute term) for one signature per call;
    ``shared``: a conversion of one value is paid once (a forced plan boxes each value once
    per target; greedy calls each box their own inputs)."""
    c = 0.0
    seen = set()
    for k, (_, _, ins, _, h, _) in enumerate(rec.ops):
        c += _own_cost(rec, k, choice[k])
        for (src, b), need in zip(ins, choice[k].inputs):
            if src[0] == "call":
                have = choice[src[1]].outputs[src[2]]
                if shared and (src[1], src[2], need) in seen:
                    continue
                seen.add((src[1], src[2], need))
                c += _cost(have, need, b, h)
    for src, dst, b, h in rec.boxes:
        if src[0] == "call":
            c += _cost(choice[src[1]].outputs[src[2]], dst, b, h)
    return c


def solve(rec: StepRecorder) -> tuple[list[Any], float, float] | None:
    """The cheapest signature per call: ``(plan, its cost, the greedy cost)``, or None when
    there is nothing to choose or the program is too big / SciPy is missing."""
    if not rec.ops:
        return None
    _COSTS.clear()
    try:
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import coo_matrix
    except ImportError:  # pragma: no cover - SciPy comes with JAX
        return None
    greedy = [op[3] for op in rec.ops]
    # candidates, with pinned outputs restricted to the greedy SBP
    cands = []
    for k, (_, cs, _, chosen, _, _) in enumerate(rec.ops):
        keep = [s for s in cs if all(s.outputs[j] == nd
                                     for (kk, j), nd in rec.pinned.items() if kk == k)]
        cands.append(keep or [chosen])
    # size first: the choice and transport variables (one per producer-output x consumer-
    # input SBP pair of each edge) are a lower bound of the program's; building a program
    # past the bound before giving up took minutes (a transformer's training step)
    n_min = sum(len(cs) for cs in cands)
    for k, (_, _, ins, _, _, _) in enumerate(rec.ops):
        for i, (src, _) in enumerate(ins):
            if src[0] == "call":
                n_min += len({s.outputs[src[2]] for s in cands[src[1]]}) * \
                    len({s.inputs[i] for s in cands[k]})
    LAST_SOLVE.clear()
    LAST_SOLVE.update(calls=len(rec.ops), candidates=sum(len(cs) for cs in cands),
                      variables=n_min, outcome="too large")
    if n_min > _MAX_VARIABLES:
        LAST_SOLVE["greedy"] = total_cost(rec, greedy, shared=False)
        return None
    offset, n = [], 0
    for cs in cands:
        offset.append(n)
        n += len(cs)
    obj: list[float] = [0.0] * n
    for k, cs in enumerate(cands):
        for s_i, s in enumerate(cs):
            obj[offset[k] + s_i] = _own_cost(rec, k, s)
    for src, dst, b, h in rec.boxes:  # explicit conversions: a cost on the producer's choice
        if src[0] == "call":
            p, j = src[1], src[2]
            for s_i, s in enumerate(cands[p]):
                obj[offset[p] + s_i] += _cost(s.outputs[j], dst, b, h)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    lo: list[float] = []
    hi: list[float] = []

    def row(entries: list[tuple[int, float]], low: float, high: float | None = None) -> None:
        r = len(lo)
        for c, v in entries:
            rows.append(r)
            cols.append(c)
            vals.append(v)
        lo.append(low)
        hi.append(low if high is None else high)

    # a conversion (a -> b) of one value is paid once, however many calls use it: one
    # variable per (value, a, b) bounds the transport variables of all its edges
    shared: dict[tuple, int] = {}

    for k, cs in enumerate(cands):  # one signature per call
        row([(offset[k] + i, 1.0) for i in range(len(cs))], 1.0)
    for k, (_, _, ins, _, h, _) in enumerate(rec.ops):
        for i, (src, b) in enumerate(ins):
            if src[0] != "call":
                continue
            p, j = src[1], src[2]
            outs = sorted({s.outputs[j] for s in cands[p]}, key=repr)
            needs = sorted({s.inputs[i] for s in cands[k]}, key=repr)
            z0 = n
            n += len(outs) * len(needs)
            obj += [0.0] * (len(outs) * len(needs))
            for ai, a in enumerate(outs):
                for bi, bb in enumerate(needs):
                    c = _cost(a, bb, b, h)
                    if c == 0:
                        continue
                    y = shared.get((p, j, a, bb))
                    if y is None:
                        y = shared[(p, j, a, bb)] = n
                        n += 1
                        obj.append(c)
                    row([(y, 1.0), (z0 + ai * len(needs) + bi, -1.0)], 0.0, np.inf)
            if n > _MAX_VARIABLES:
                LAST_SOLVE.update(variables=n, greedy=total_cost(rec, greedy, shared=False))
                return None
            for ai, a in enumerate(outs):  # marginal on the producer's side
                row([(z0 + ai * len(needs) + bi, 1.0) for bi in range(len(needs))]
                    + [(offset[p] + si, -1.0) for si, s in enumerate(cands[p])
                       if s.outputs[j] == a], 0.0)
            for bi, bb in enumerate(needs):  # and on the consumer's
                row([(z0 + ai * len(needs) + bi, 1.0) for ai in range(len(outs))]
                    + [(offset[k] + si, -1.0) for si, s in enumerate(cands[k])
                       if s.inputs[i] == bb], 0.0)
    integrality = np.zeros(n)
    integrality[:offset[-1] + len(cands[-1])] = 1
    a = coo_matrix((vals, (rows, cols)), shape=(len(lo), n))
    res = milp(np.asarray(obj), constraints=LinearConstraint(a, lo, hi),
               integrality=integrality, bounds=Bounds(0, 1),
               options={"time_limit": _TIME_LIMIT_S})
    LAST_SOLVE.update(variables=n, outcome="no solution" if res.x is None else "solved")
    if res.x is None:
        return None
    plan = []
    for k, cs in enumerate(cands):
        xs = res.x[offset[k]:offset[k] + len(cs)]
        plan.append(cs[int(np.argmax(xs))])
    planned, greedy_cost = total_cost(rec, plan), total_cost(rec, greedy, shared=False)
    LAST_SOLVE.update(planned=planned, greedy=greedy_cost)
    return plan, planned, greedy_cost
