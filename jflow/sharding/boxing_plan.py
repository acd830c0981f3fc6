"""The cheapest sequence of one-axis conversions between two nd-SBPs (no JAX here).

A step changes the SBP of one hierarchy axis ``k`` and is one collective of the 1-d table in
:mod:`.boxing`, run over the ``n_k`` devices that differ only in their coordinate on ``k``.
Dijkstra over nd-SBP states (each axis B, P or S(d) for every dim ``d`` of the tensor) finds
the path of least bytes; ties go to fewer collectives, then fewer steps.

A state is *valid* when every dim divides evenly by the axes splitting it. A step on ``k`` that
gathers or cuts dim ``d`` (``S(d)`` before or after it) is valid only when no axis after ``k``
also splits ``d``: the ranks of a dim split by several axes are row-major in hierarchy order
(:mod:`.spec`), so the pieces one axis's group holds are contiguous only on the innermost
of those axes. Partial sums on other axes need nothing: every step is linear.

Bytes of a step (per device, ring algorithms, as ``benchmarks/sbp.py`` counts the compiled
HLO), with ``f(n) = (n-1)/n`` and ``V`` the bytes of the local block that the other axes'
splits leave (axis ``k`` not split)::

    S -> B  all-gather        f(n) V        B -> S  local slice       0
    P -> B  all-reduce       2f(n) V        B -> P  zeros off rank 0  0
    P -> S  reduce-scatter    f(n) V        S -> P  embed in zeros    0
    S -> S  all-to-all        f(n) V / n
"""

from __future__ import annotations

import functools
import heapq
import math
from collections.abc import Iterator, Sequence
from fractions import Fraction

from .sbp import SbpParallel, _Broadcast, _PartialSum, _Split

__all__ = ["Step", "plan", "cost", "greedy_rank", "describe", "step_name"]

#: (hierarchy axis, SBP before, SBP after)
Step = tuple[int, SbpParallel, SbpParallel]
NdSbp = tuple[SbpParallel, ...]


def _split_dims(*nds: NdSbp) -> set[int]:
    return {x.axis for nd in nds for x in nd if isinstance(x, _Split)}


def _divides(state: NdSbp, hierarchy: Sequence[int], shape: Sequence[int] | None) -> bool:
    if shape is None:
        return True
    for d, size in enumerate(shape):
        parts = math.prod(n for x, n in zip(state, hierarchy) if x == _Split(d))
        if size % parts:
            return False
    return True


def _ordered(state: NdSbp, k: int, a: SbpParallel, b: SbpParallel) -> bool:
    """The step on ``k`` touches only dims that no later axis also splits."""
    dims = _split_dims((a, b))
    return not any(isinstance(x, _Split) and x.axis in dims for x in state[k + 1:])


def step_bytes(state: NdSbp, k: int, b: SbpParallel, hierarchy: Sequence[int]) -> Fraction:
    """Bytes per device of changing axis ``k`` of ``state`` to ``b``, as a fraction of the
    logical tensor's bytes (the table of the module docstring)."""
    a, n = state[k], hierarchy[k]
    if isinstance(a, _Broadcast) or isinstance(b, _PartialSum):
        return Fraction(0)  # B -> S, B -> P, S -> P: local
    v = Fraction(1, math.prod(m for j, (x, m) in enumerate(zip(state, hierarchy))
                              if j != k and isinstance(x, _Split)))
    f = Fraction(n - 1, n)
    if isinstance(a, _PartialSum):
        return 2 * f * v if isinstance(b, _Broadcast) else f * v
    return f * v if isinstance(b, _Broadcast) else f * v / n  # all-gather / all-to-all


def _moves(a: SbpParallel, b: SbpParallel) -> bool:
    """Whether the step a -> b is a collective (not local)."""
    return not (isinstance(a, _Broadcast) or isinstance(b, _PartialSum))


def steps_from(state: NdSbp, kinds: Sequence[SbpParallel], hierarchy: tuple[int, ...],
               shape: tuple[int, ...] | None) -> Iterator[tuple]:
    """The valid one-axis steps out of ``state``: ``(axis, from, to, next state, bytes per
    device as a fraction of the tensor's)`` — the edges both Dijkstra searches walk (this
    module's ``plan`` to one destination, ``plan.py``'s to all of them)."""
    for k, a in enumerate(state):
        for b in kinds:
            nxt = state[:k] + (b,) + state[k + 1:]
            if b == a or not _ordered(state, k, a, b) or not _divides(nxt, hierarchy, shape):
                continue
            yield k, a, b, nxt, step_bytes(state, k, b, hierarchy)


@functools.lru_cache(maxsize=4096)
def plan(src: NdSbp, dst: NdSbp, hierarchy: tuple[int, ...],
         shape: tuple[int, ...] | None = None) -> tuple[tuple[Step, ...], Fraction]:
    """The cheapest valid steps from ``src`` to ``dst`` and their bytes per device, as a
    fraction of the logical tensor's bytes. ``shape`` (the logical shape) gives the dims a
    step may split and which splits divide; without it, the dims ``src`` and ``dst`` split,
    assumed to divide evenly."""
    dims = range(len(shape)) if shape is not None else sorted(_split_dims(src, dst))
    kinds: list[SbpParallel] = [_Broadcast(), _PartialSum(), *(_Split(d) for d in dims)]
    start = (Fraction(0), 0, 0)  # bytes, collectives, steps
    best: dict[NdSbp, tuple[Fraction, int, int]] = {src: start}
    back: dict[NdSbp, tuple[NdSbp, Step]] = {}
    heap = [(*start, 0, src)]
    tick = 0  # insertion order: ties pop deterministically, states are never compared
    while heap:
        c, colls, steps, _, state = heapq.heappop(heap)
        if state == dst:
            break
        if (c, colls, steps) != best[state]:
            continue
        for k, a, b, nxt, nbytes in steps_from(state, kinds, hierarchy, shape):
            key = (c + nbytes, colls + _moves(a, b), steps + 1)
            if nxt not in best or key < best[nxt]:
                best[nxt] = key
                back[nxt] = (state, (k, a, b))
                tick += 1
                heapq.heappush(heap, (*key, tick, nxt))
    if dst not in best:  # unreachable for valid src and dst: B everywhere is always valid
        raise AssertionError(f"no boxing path from {src} to {dst}")
    path: list[Step] = []
    state = dst
    while state != src:
        state, step = back[state]
        path.append(step)
    return tuple(reversed(path)), best[dst][0]


def cost(src: Sequence[SbpParallel], dst: Sequence[SbpParallel], nbytes: float,
         hierarchy: Sequence[int], shape: Sequence[int] | None = None) -> float:
    """Bytes moved per device to box a tensor of ``nbytes`` (logical) from ``src`` to
    ``dst`` along :func:`plan`'s path; 0 when nothing moves. Exact with ``shape``."""
    if tuple(src) == tuple(dst):
        return 0.0
    key = tuple(shape) if shape is not None else None
    return float(plan(tuple(src), tuple(dst), tuple(hierarchy), key)[1] * Fraction(nbytes))


def greedy_rank(src: Sequence[SbpParallel], dst: Sequence[SbpParallel], nbytes: float,
                hierarchy: Sequence[int], shape: Sequence[int] | None = None) -> float:
    """How eager (greedy, one op at a time) signature choice ranks a conversion: ``cost``
    with every all-to-all charged as an all-gather of the same block. An all-to-all is cheap
    by itself, but a greedy choice made for it tends to leave partial sums or splits that
    later ops pay for in full (the compiled whole-step choice, ``plan.py``, sees those and
    uses the exact cost)."""
    if tuple(src) == tuple(dst):
        return 0.0
    h = tuple(hierarchy)
    steps, _ = plan(tuple(src), tuple(dst), h, tuple(shape) if shape is not None else None)
    state, total = tuple(src), Fraction(0)
    for k, a, b in steps:
        c = step_bytes(state, k, b, h)
        total += c * h[k] if isinstance(a, _Split) and isinstance(b, _Split) else c
        state = state[:k] + (b,) + state[k + 1:]
    return float(total * Fraction(nbytes))


def step_name(a: SbpParallel, b: SbpParallel) -> str:
    """The collective (or local operation) that changes one axis from ``a`` to ``b``."""
    if isinstance(a, _Broadcast):
        return "local slice" if isinstance(b, _Split) else "local (zeros off rank 0)"
    if isinstance(b, _Broadcast):
        return "all-gather" if isinstance(a, _Split) else "all-reduce"
    if isinstance(a, _PartialSum):
        return "reduce-scatter"
    return "all-to-all" if isinstance(b, _Split) else "local (embed in zeros)"


def describe(src: Sequence[SbpParallel], dst: Sequence[SbpParallel],
             hierarchy: Sequence[int], shape: Sequence[int] | None = None) -> str:
    """The steps of a conversion, for ``explain``: ``"none"``, one step's name on a 1-d
    hierarchy, else ``"r1:all-to-all, r0:all-gather"`` (hierarchy axis: step)."""
    if tuple(src) == tuple(dst):
        return "none"
    key = tuple(shape) if shape is not None else None
    steps, _ = plan(tuple(src), tuple(dst), tuple(hierarchy), key)
    return ", ".join(step_name(a, b) if len(src) == 1 else f"r{k}:{step_name(a, b)}"
                     for k, a, b in steps)
