"""nd boxing at the minimum (issue 18): every pair of nd-SBPs of a 2-d tensor on the 2x4
placement (B, P, S(0), S(1) per axis: 16 layouts, 256 pairs) round-trips its values, costs
what an independent reference says, and the compiled HLO moves exactly that many bytes.

The reference (``reference_costs``) is written from first principles, sharing nothing with
``jflow.sharding.boxing_plan``: a layout is simulated as the NumPy arrays the 8 devices hold;
a step is one collective over one mesh axis (all-gather, all-reduce, reduce-scatter,
all-to-all) or a local slice / zero-fill / embedding, applied to those arrays; a step is
valid when the arrays it yields decode to the logical tensor under the new layout. Bytes per
device are the ring formulas on the arrays each step actually handles (f(n) = (n-1)/n):
all-gather f(n)|result|, all-reduce 2f(n)|operand|, reduce-scatter and all-to-all
f(n)|operand|, local steps 0. The formula for a pair is

    bytes(src -> dst) = min over chains of valid steps src -> ... -> dst of the sum of their bytes

(a uniform-cost search over simulated layouts). A few pairs in closed form, N the tensor's
bytes, checked in ``test_closed_forms``:

    (S0,S1) -> (B,B)    f(2)N/4 + f(4)N            = f(8)N   gather r0 on N/4, then r1
    (P,P)   -> (B,B)    f(4)N + 2f(2)N/4 + f(4)N   = 2f(8)N  reduce-scatter r1, all-reduce
                                                             r0, all-gather r1
    (B,P)   -> (B,B)    2f(4)N/2 + f(2)N           = 5N/4    cut r0, all-reduce r1, gather r0
    (S0,B)  -> (B,S0)   2f(2)N/4                   = N/4     embed r0, cut r1, all-reduce r0
"""

from __future__ import annotations

import heapq
import itertools
from fractions import Fraction

import numpy as np
import pytest

import jflow as flow
from jflow.sharding.boxing import cost, describe
from jflow.sharding.global_tensor import _BOX_CACHE, _boxer
from jflow.sharding.hlo_traffic import hlo_collectives

S, B, P = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum
H = (2, 4)
P24 = flow.placement("cpu", [[0, 1, 2, 3], [4, 5, 6, 7]])
KINDS = [B, P, S(0), S(1)]
NDS = list(itertools.product(KINDS, repeat=2))
COORDS = list(itertools.product(range(H[0]), range(H[1])))


# -- the reference: layouts simulated as per-device NumPy arrays ------------------------------

def _block(nd: tuple, c: tuple[int, int], shape: tuple[int, ...]) -> tuple[slice, ...]:
    """Where device ``c``'s block lies: the axes splitting a dim cut it row-major."""
    out = []
    for d, size in enumerate(shape):
        lo, n = 0, size
        for k, x in enumerate(nd):
            if x == S(d):
                n //= H[k]
                lo += c[k] * n
        out.append(slice(lo, lo + n))
    return tuple(out)


def _layout(nd: tuple, x: np.ndarray) -> dict:
    """The arrays a layout holds: each device its block, partial sums on rank 0 of the axis."""
    return {c: x[_block(nd, c, x.shape)] * all(c[k] == 0 for k in range(2) if nd[k] == P)
            for c in COORDS}


def _decodes(nd: tuple, arrays: dict, x: np.ndarray) -> bool:
    out = np.zeros_like(x)
    for c in COORDS:
        blk = _block(nd, c, x.shape)
        if arrays[c].shape != out[blk].shape:
            return False
        copy = tuple(0 if nd[k] == B else c[k] for k in range(2))
        if not np.array_equal(arrays[c], arrays[copy]):
            return False  # broadcast copies differ
        if copy == c:
            out[blk] += arrays[c]
    return np.array_equal(out, x)


def _apply(arrays: dict, k: int, a, b) -> tuple[dict, Fraction]:
    """One step on axis ``k`` (``a`` -> ``b``) on every group; bytes per device (elements)."""
    n, out, sent = H[k], {}, Fraction(0)
    for c in COORDS:
        group = [arrays[c[:k] + (t,) + c[k + 1:]] for t in range(n)]
        me, i = arrays[c], c[k]
        if a == B and b == P:
            y = me * (i == 0)
        elif a == B:
            y = np.split(me, n, axis=b.axis)[i]
        elif b == P:  # from a split: embed in zeros
            pieces = [np.zeros_like(me)] * n
            pieces[i] = me
            y = np.concatenate(pieces, axis=a.axis)
        elif a == P and b == B:
            y = sum(group)
            sent = Fraction(2 * (n - 1), n) * me.size
        elif a == P:
            y = np.split(sum(group), n, axis=b.axis)[i]
            sent = Fraction(n - 1, n) * me.size
        elif b == B:
            y = np.concatenate(group, axis=a.axis)
            sent = Fraction(n - 1, n) * y.size
        else:  # split to split
            y = np.concatenate([np.split(g, n, axis=b.axis)[i] for g in group], axis=a.axis)
            sent = Fraction(n - 1, n) * me.size
        out[c] = y
    return out, sent


def reference_costs(src: tuple, x: np.ndarray) -> dict:
    """The minimum over chains of valid simulated steps from ``src`` to every layout, as a
    fraction of ``x``'s size (one uniform-cost search serves every destination)."""
    heap = [(Fraction(0), 0, src)]
    arrays = {src: _layout(src, x)}
    done: dict = {}
    tick = 0
    while heap:
        c, _, nd = heapq.heappop(heap)
        if nd in done:
            continue
        done[nd] = c / x.size
        for k in range(2):
            for b in KINDS:
                if b == nd[k]:
                    continue
                nxt = nd[:k] + (b,) + nd[k + 1:]
                try:
                    new, sent = _apply(arrays[nd], k, nd[k], b)
                except ValueError:  # a split that does not divide
                    continue
                if nxt in done or not _decodes(nxt, new, x):
                    continue
                arrays.setdefault(nxt, new)
                tick += 1
                heapq.heappush(heap, (c + sent, tick, nxt))
    return done


def old_cost(src: tuple, dst: tuple) -> Fraction:
    """Bytes (fraction of N) of the conversion through broadcast that boxing used before:
    each non-broadcast axis gathered / reduced on the whole tensor, then sliced."""
    total = Fraction(0)
    for k, x in enumerate(src):
        f = Fraction(H[k] - 1, H[k])
        total += 2 * f if x == P else f if x != B else 0
    return total


# -- the tests ---------------------------------------------------------------------------------

def _short(nd: tuple) -> str:
    return "(" + ",".join("B" if x == B else "P" if x == P else f"S{x.axis}" for x in nd) + ")"


def _to_global_with(a: flow.Tensor, src: tuple, dst: tuple, compiled) -> flow.Tensor:
    """``a.to_global(sbp=dst)`` through the public path, running ``compiled`` (the boxer of
    this pair, compiled ahead of time) as the boxing program, which must run: the HLO checked
    is the conversion's. The cache entry is put back after the call: a compiled program takes
    only this shape, the cache's jitted boxers any."""
    if compiled is None:
        return a.to_global(sbp=dst)
    key = (P24, src, dst, 2)
    before = _BOX_CACHE.get(key)
    ran = []

    def run(value):
        ran.append(True)
        return compiled(value)

    _BOX_CACHE[key] = run
    try:
        out = a.to_global(sbp=dst)
    finally:
        if before is None:
            _BOX_CACHE.pop(key, None)
        else:
            _BOX_CACHE[key] = before
    assert ran == [True], f"{src} -> {dst}: the conversion did not run its boxing program"
    return out


def test_every_pair_round_trips_and_moves_what_the_formula_says() -> None:
    rng = np.random.default_rng(0)
    # float64: boxing moves and sums values without rounding them, checked to 1e-12
    x = rng.standard_normal((16, 24))
    ints = rng.integers(-9, 9, size=(8, 8))  # the reference simulates on exact integers
    base = flow.tensor(x)
    for src in NDS:
        a = base.to_global(P24, src)
        np.testing.assert_allclose(a.numpy(), x, rtol=1e-12, atol=1e-12)
        reference = reference_costs(src, ints)
        assert set(reference) == set(NDS), src  # every layout is reachable
        for dst in NDS:
            pair = f"{_short(src)} -> {_short(dst)}"
            compiled = None
            if src != dst:
                # the conversion program, compiled once: its HLO is read below, and the
                # conversion runs it (handed to the boxing cache for this one call; an
                # eager call and .lower().compile() would compile it twice)
                compiled = _boxer(P24, src, dst, 2).lower(a._value).compile()
            b = _to_global_with(a, src, dst, compiled)
            assert b.sbp == dst
            np.testing.assert_allclose(b.numpy(), x, rtol=1e-12, atol=1e-12, err_msg=pair)
            got = cost(src, dst, x.nbytes, H, x.shape)
            want = float(reference[dst] * x.nbytes)
            assert got == pytest.approx(want, abs=1e-9), pair
            if src == dst:
                continue
            hlo = compiled.as_text()
            wire = sum(c.wire for c in hlo_collectives(hlo, 8))
            assert wire == pytest.approx(got, abs=1e-6), f"{pair}: {describe(src, dst, H)}"
            old = float(old_cost(src, dst) * x.nbytes)
            assert got <= old + 1e-9, pair
            if sum(s != d for s, d in zip(src, dst)) == 2 and old > 0:
                assert got < old, pair


def test_closed_forms() -> None:
    f = {n: Fraction(n - 1, n) for n in (2, 4, 8)}
    n = 1536
    cases = [((S(0), S(1)), (B, B), f[2] / 4 + f[4], f[8]),
             ((P, P), (B, B), f[4] + 2 * f[2] / 4 + f[4], 2 * f[8]),
             ((B, P), (B, B), 2 * f[4] / 2 + f[2], Fraction(5, 4)),
             ((S(0), B), (B, S(0)), 2 * f[2] / 4, Fraction(1, 4))]
    for src, dst, formula, value in cases:
        assert formula == value
        assert cost(src, dst, n, H, (16, 24)) == float(value * n), (src, dst)


def test_describe_lists_the_steps() -> None:
    assert describe((S(0), S(1)), (B, B), H, (16, 24)) == "r0:all-gather, r1:all-gather"
    assert describe((B, P), (B, B), H, (16, 24)) == \
        "r0:local slice, r1:all-reduce, r0:all-gather"
    assert describe((S(0),), (S(1),), (8,), (16, 24)) == "all-to-all"
    assert describe((B, B), (B, B), H) == "none"
    # a dim split by both axes: the outer axis cannot gather it first, and does not
    x = flow.tensor(np.arange(16 * 24, dtype=np.float32).reshape(16, 24))
    ex = flow.sharding.explain(lambda t: t + t, x.to_global(P24, (S(0), S(0))))
    assert ex.collectives() == []
    steps = describe((S(0), S(0)), (B, B), H, (16, 24))
    assert steps == "r1:all-gather, r0:all-gather"


def test_bool_and_int_tensors_through_partial_sum_paths() -> None:
    """Paths may pass through partial sums (cheapest for (S0,B) -> (B,S0)): a bool tensor
    travels them as 0/1 integers, integers exactly."""
    assert "all-reduce" in describe((S(0), B), (B, S(0)), H, (8, 8))
    m = np.random.default_rng(1).random((8, 8)) > 0.5
    for src, dst in [((S(0), B), (B, S(0))), ((S(0), S(0)), (S(1), S(1)))]:
        t = flow.tensor(m).to_global(P24, src).to_global(sbp=dst)
        np.testing.assert_array_equal(t.numpy(), m)
        i = flow.tensor(m.astype(np.int32) * 7 - 3).to_global(P24, src).to_global(sbp=dst)
        np.testing.assert_array_equal(i.numpy(), m.astype(np.int32) * 7 - 3)
