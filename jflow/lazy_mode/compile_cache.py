"""When a segment compiles, and the compiled segments kept: lazy mode's compile policy.

A flushed segment is keyed by its structure (the nodes: executables and wiring), which of
its outputs come back (:func:`jflow.lazy_mode.replay.live`) and its input avals. A key seen
for the first time usually runs node by node on the eager executables (nothing compiles for
code whose structure never repeats); :data:`COMPILE_ON_SIGHTING` says when a key compiles
instead. Compiled keys are kept in an LRU of :data:`CACHE_SIZE`; why each compile happened is
kept for :func:`recompile_reasons` (and warned with ``flow.lazy(explain=True)``).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict, deque
from typing import Any

import jax
import numpy as np

from .._jax_setup import EAGER_ROUNDING
from ..recompile import RecompileWarning
from .failures import call_site
from .replay import replay

__all__ = ["compiled", "recompile_reasons", "COMPILE_ON_SIGHTING", "CACHE_SIZE", "EXPLAIN",
           "STATS"]

#: compiled segment structures kept (least recently used dropped beyond it)
CACHE_SIZE = 64
#: when a segment key compiles. ``"adaptive"`` (the default): on its first sighting when it
#: recorded ops on shapes they were not seen with (run node by node, each of those ops'
#: executables would compile anyway: one compile of the whole segment is cheaper), else on
#: its second (a new arrangement of known ops runs node by node on warm executables: code
#: whose structure never repeats compiles nothing). 1 / 2: always on the first / second.
#: benchmarks/lazy_policy.py measures the three.
COMPILE_ON_SIGHTING: Any = "adaptive"

#: counters (``flow.lazy_mode.stats()``): ops recorded, segments flushed, flushes that
#: compiled, flushes that ran node by node
STATS = {"recorded": 0, "flushes": 0, "compiles": 0, "eager_flushes": 0}

#: segment structure -> its jitted replay (LRU); structures seen once -> None
_CACHE: OrderedDict[tuple, Any] = OrderedDict()
_FIRST = object()


def compiled(key: tuple, new_shapes: bool) -> Any:
    """The jitted replay of a segment key (returning its live outputs, flat) and where
    they go (``(node, output)`` each), or None when it runs node by node (see
    :data:`COMPILE_ON_SIGHTING`)."""
    hit = _CACHE.get(key, _FIRST)
    if hit is _FIRST and (COMPILE_ON_SIGHTING == 2 or (
            COMPILE_ON_SIGHTING == "adaptive" and not new_shapes)):
        hit = _CACHE[key] = None
    elif hit is None or hit is _FIRST:
        first = hit is _FIRST
        structure, live, _ = key

        def run(inputs: list, dvs: list) -> list[Any]:
            outs = replay(structure, inputs, dvs, nested=True)
            return [v for vals, ls in zip(outs, live) for v, keep in zip(vals, ls) if keep]
        kept = tuple((i, j) for i, ls in enumerate(live) for j, keep in enumerate(ls) if keep)
        hit = _CACHE[key] = (jax.jit(run, compiler_options=EAGER_ROUNDING), kept)
        STATS["compiles"] += 1
        _note_compile(key, first)
    if hit is None or hit is not _MRU[0]:  # (a loop hitting one key: no reordering)
        _MRU[0] = hit
        _CACHE[key] = _CACHE.pop(key, hit)  # (to the end; another thread may have evicted it)
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return hit


_MRU: list[Any] = [None]  # the executable most recently returned (its key is last in _CACHE)
#: ``[(nodes, live, in_avals, executable)]`` of the last compiled run (its lists are the
#: flushed segment's own: a segment starts new lists after a flush, so they never change)
NO_RUN = (None, None, None, None)
LAST_RUN: list[Any] = [NO_RUN]


#: why the recent compiles happened (newest last; :func:`recompile_reasons`)
_REASONS: deque[str] = deque(maxlen=32)
#: ``[bool]``: also warn (``RecompileWarning``) at each compile (``flow.lazy(explain=True)``)
EXPLAIN = [False]
_LAST: list[Any] = [None]


def recompile_reasons() -> list[str]:
    """Why lazy mode compiled its recent segments (newest last, at most 32)."""
    return list(_REASONS)


def _name(f: Any) -> str:
    return getattr(f, "__name__", "?")


def _note_compile(key: tuple, first: bool) -> None:
    last, _LAST[0] = _LAST[0], key
    reason = _describe_change(last, key, first)
    _REASONS.append(reason)
    if EXPLAIN[0]:
        site = call_site() or ("<unknown>", 0)  # (the user's line that made it run)
        warnings.warn_explicit(f"flow.lazy: compiling a segment because {reason}",
                               RecompileWarning, site[0], site[1])


def _describe_change(last: tuple | None, key: tuple, first: bool = False) -> str:
    """What makes ``key`` (a segment's structure, kept outputs, input shapes) new, compared
    with the segment compiled before it; ``first``: compiled on its first sighting."""
    nodes, live, avals = key
    ops = [_name(n[0]) for n in nodes]
    more = ", ..." if len(ops) > 6 else ""
    what = f"its structure ({len(nodes)} ops: {', '.join(ops[:6])}{more})"
    head = (f"{what} is new and has ops on new shapes (run one by one, each would compile)"
            if first else f"{what} ran a second time (the first ran op by op)")
    if last is None:
        return head
    lnodes, llive, lavals = last
    if nodes == lnodes and live == llive:
        diff = [f"input {i}: {_aval_str(b)} (was {_aval_str(a)})"
                for i, (a, b) in enumerate(zip(lavals, avals)) if a != b]
        if len(avals) != len(lavals):
            diff.append(f"{len(avals)} inputs (was {len(lavals)})")
        return f"{head}; the last compiled segment had the same ops but " + "; ".join(diff[:4])
    if nodes == lnodes:
        return (f"{head}; the last compiled segment had the same ops but other results "
                f"still referenced (the results a run returns are part of its key)")
    for k, (a, b) in enumerate(zip(lnodes, nodes)):
        if a != b:
            what = (f"op {k} is '{_name(b[0])}' (was '{_name(a[0])}')" if a[0] is not b[0]
                    else f"op {k} ('{_name(b[0])}') takes other inputs or attributes")
            return f"{head}; differs from the last compiled segment: {what}"
    return (f"{head}; differs from the last compiled segment: {len(nodes)} ops "
            f"(was {len(lnodes)})")


def _aval_str(a: Any) -> str:
    shape, dtype = (a.shape, a.dtype) if hasattr(a, "shape") else a
    return f"{np.dtype(dtype).name}{list(shape)}"
