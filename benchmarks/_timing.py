"""The one timing loop every benchmark uses (imported as ``_timing``: benchmarks run as
scripts, so their folder is on ``sys.path``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def bench(fn: Callable[[], Any], number: int, repeat: int,
          wait: Callable[[Any], Any] | None = None) -> float:
    """Median µs per call over ``repeat`` runs of ``number`` calls, after a warm-up; ``wait``
    (e.g. ``jax.block_until_ready``) is applied to each run's last result."""
    r = None
    for _ in range(max(20, number // 10)):
        r = fn()
    if wait is not None:  # (asynchronous work queued by the warm-up must not land in run 1)
        wait(r)
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = None
        for _ in range(number):
            r = fn()
        if wait is not None:
            wait(r)
        runs.append((time.perf_counter() - t0) / number * 1e6)
    return statistics.median(runs)
