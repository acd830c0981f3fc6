"""Known (min, max) of integer device arrays made from host data, so that an index bounds
check on an accelerator need not read the array back.

An embedding's or a cross-entropy's bounds check reads its indices' min and max before the op
runs (``functional/functors/index.py:host_min_max``). On CPU it reads the buffer in place; on a
GPU that read is a small executable queued behind every computation still running, so each
check waits for the previous training step to finish and the GPU then idles while Python
issues the next ops: three checks a step held a GPT's eager step on an H200 at the host's pace
(benchmarks/results_gpu_models_NVIDIA_H200.txt). The indices of such checks are mostly made
from host data: a batch (``flow.tensor(ids, device="cuda")``, ``ids.to("cuda")``) or position
ids (``flow.arange(t, device="cuda")``). Their bounds are known on the host when they are made,
so they are remembered here, per device array, and the check reads them instead.

Sound because a ``jax.Array`` never changes: an in-place op gives its tensor a new array. The
table holds weak references (an entry goes with its array) and at most :data:`SIZE` entries.
Only arrays placed off the CPU are noted here (on CPU reading a ready array in place costs
nothing).

A second table holds what is known of *computed* integer arrays, on any device: every element
lies in ``[lo, hi]`` or equals one exceptional value (:func:`note_within`). HF's causal-LM loss
pads its labels with the ignore index and slices them; the padded labels' bounds are the
labels' plus the pad value, known when the pad is issued, and a cross-entropy's target check
reads them instead of the computed array -- which, even on CPU, waits behind every computation
queued before it (XLA CPU runs executions in order: the check held HF GPT-2's eager step at
4.6-6.8 ms a step, benchmarks/results_ecosystem_models_cpu.txt, session 28). These bounds are
a superset of the values (a slice keeps some of them), so they can pass a check, never give
an exact min or max.
"""

from __future__ import annotations

import weakref
from typing import Any

import jax
import numpy as np

__all__ = ["note", "note_host", "known", "note_within", "within", "SIZE"]

#: arrays remembered at most (the oldest dropped first)
SIZE = 256

_TABLE: dict[int, tuple[Any, int, int]] = {}


def _off_cpu(value: Any) -> bool:
    """Whether ``value`` is an array off the CPU (an array's devices share one platform)."""
    if isinstance(value, jax.core.Tracer):  # (traced: no device array to remember)
        return False
    try:
        for d in value.devices():
            return d.platform != "cpu"
    except AttributeError:  # (a meta value: nothing to remember)
        pass
    return False


def note(value: Any, lo: int, hi: int) -> None:
    """Remember that every element of the device array ``value`` lies in ``[lo, hi]``."""
    if _off_cpu(value):
        _put(_TABLE, value, int(lo), int(hi))


def _put(table: dict, value: Any, *entry: Any) -> None:
    """``table[id(value)] = (a weak reference to value, *entry)``: the entry goes with its
    array, and the oldest goes when the table holds :data:`SIZE`."""
    key = id(value)
    try:
        ref = weakref.ref(value, lambda _, k=key: table.pop(k, None))
    except TypeError:
        return
    if len(table) >= SIZE:
        table.pop(next(iter(table)), None)
    table[key] = (ref, *entry)


def note_host(value: Any, host: np.ndarray) -> None:
    """``value`` was made from the host array ``host``: remember its bounds when it is a
    non-empty integer array off the CPU."""
    if host.dtype.kind in "iu" and host.size and _off_cpu(value):
        note(value, host.min(), host.max())


def known(value: Any) -> tuple[int, int] | None:
    """``(min, max)`` of ``value`` when remembered, else None."""
    hit = _TABLE.get(id(value))
    if hit is None or hit[0]() is not value:
        return None
    return hit[1], hit[2]


_WITHIN: dict[int, tuple[Any, int, int, int | None]] = {}


def note_within(value: Any, lo: int, hi: int, extra: int | None = None) -> None:
    """Remember that every element of the computed array ``value`` lies in ``[lo, hi]`` or
    equals ``extra`` (None: no exception); any device, weakly, at most :data:`SIZE`."""
    if not isinstance(value, jax.core.Tracer):
        _put(_WITHIN, value, int(lo), int(hi), None if extra is None else int(extra))


def within(value: Any) -> tuple[int, int, int | None] | None:
    """``(lo, hi, extra)``: every element of ``value`` lies in ``[lo, hi]`` or equals
    ``extra`` -- from :func:`note` (exact, no exception) or :func:`note_within` -- else None."""
    b = known(value)
    if b is not None:
        return b[0], b[1], None
    hit = _WITHIN.get(id(value))
    if hit is None or hit[0]() is not value:
        return None
    return hit[1], hit[2], hit[3]
