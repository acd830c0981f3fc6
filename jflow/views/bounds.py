"""Bounds of integer tensors known without waiting for a computation (jflow/value_bounds.py):
what a loss's or an embedding's index check can read instead of the array. An op whose output
holds some of its input's values (a pad, a view made contiguous) notes the input's bounds for
its output's array, so that a computed tensor of labels -- HF's causal-LM loss pads its labels
with the ignore index and slices them -- is checked from the labels' bounds, not read back
behind every computation queued before it."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from ..tensor import Tensor
from ..value_bounds import note_within, within

__all__ = ["bounds_within", "note_bounds_like", "source_through", "SAME_VALUES", "READ_IN_PLACE"]

#: view steps after which a view holds exactly its base's values, rearranged
SAME_VALUES = frozenset({"reshape", "transpose", "squeeze", "unsqueeze", "expand"})
#: view steps after which a view holds some of its base's values (none changes the dtype)
_SUBSET_STEPS = SAME_VALUES | {"narrow", "slice", "index", "as_strided"}
#: elements of a ready CPU array :func:`bounds_within` reads in place for its bounds
READ_IN_PLACE = 1 << 16


def source_through(t: Tensor, kinds: frozenset) -> Tensor:
    """The base of the (non-empty) view ``t`` when every step from it is one of ``kinds``,
    else ``t``."""
    while t._aliases and t._meta.size:
        m = t._view
        if not all(kind in kinds for kind, _ in m.steps):
            break
        t = m.base
    return t


def bounds_within(t: Tensor) -> tuple[int, int, int | None] | None:
    """``(lo, hi, extra)`` such that every element of the integer tensor ``t`` lies in
    ``[lo, hi]`` or equals ``extra`` (None: no exception), known without waiting for any
    computation (jflow/value_bounds.py); None when not known so. A superset of the values
    (a view's are its base's, some of them): it can pass a check, not give an exact min or
    max. The source: ``t``'s base through views that keep values; its array's noted bounds,
    or, for a small CPU array already computed, the array read in place."""
    t = source_through(t, _SUBSET_STEPS)
    if t._aliases:  # (a view that changes values, e.g. another dtype's: not materialised here)
        return None
    v = t._meta
    if not isinstance(v, jax.Array) or isinstance(v, Tracer) or v.size == 0 or \
            v.dtype.kind not in "iu":
        return None  # (a pending lazy value, a meta value, a trace, no elements)
    w = within(v)
    if w is not None:
        return w
    if v.size <= READ_IN_PLACE and v.is_fully_addressable and v.is_ready() and \
            all(d.platform == "cpu" for d in v.devices()):
        h = np.asarray(v)  # (computed already: the read waits for nothing)
        return int(h.min()), int(h.max()), None
    return None


def note_bounds_like(out: Tensor, src: Tensor, extra: Any = None) -> None:
    """``out`` holds some of ``src``'s values (and, given, the value ``extra``): note the
    bounds :func:`bounds_within` knows of ``src`` for ``out``'s array (an integer ``out``
    with an array of its own)."""
    a = out._meta
    if out._aliases or not isinstance(a, jax.Array) or isinstance(a, Tracer) or \
            a.dtype.kind not in "iu" or src._meta.dtype != a.dtype:
        return
    w = bounds_within(src)
    if w is None:
        return
    lo, hi, ex = w
    if extra is not None:
        info = np.iinfo(a.dtype)
        if not np.isfinite(extra) or float(extra) != int(extra) or \
                not info.min <= int(extra) <= info.max:
            return  # (a value the cast changes: not noted)
        extra = int(extra)
        if ex is not None and ex != extra:  # (one exception only: the old one joins the range)
            lo, hi = min(lo, ex), max(hi, ex)
        ex = None if lo <= extra <= hi else extra
    note_within(a, lo, hi, ex)
