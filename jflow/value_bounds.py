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
Only arrays placed off the CPU are noted (on CPU reading in place costs nothing).
"""

from __future__ import annotations

import weakref
from typing import Any

import jax
import numpy as np

__all__ = ["note", "note_host", "known", "SIZE"]

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
    if not _off_cpu(value):
        return
    key = id(value)
    try:
        ref = weakref.ref(value, lambda _, k=key: _TABLE.pop(k, None))
    except TypeError:
        return
    if len(_TABLE) >= SIZE:
        _TABLE.pop(next(iter(_TABLE)), None)
    _TABLE[key] = (ref, int(lo), int(hi))


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
