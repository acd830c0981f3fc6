"""The one timing loop every benchmark uses (imported as ``_timing``: benchmarks run as
scripts, so their folder is on ``sys.path``)."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import jax

import jflow as flow


def options(doc: str, number: int, repeat: int = 7) -> argparse.Namespace:
    """The ``--repeat`` / ``--number`` command line every timing benchmark takes."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--number", type=int, default=number)
    return ap.parse_args()


def machine() -> str:
    """Versions, CPU, load and backend: the first words of every results file."""
    cpu = platform.processor() or platform.machine()
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    return (f"jflow {flow.__version__}, jax {jax.__version__}, {cpu} x {os.cpu_count()}, "
            f"load average {load}, backend {jax.default_backend()}")


def run(fn: Callable[[], Any], number: int, wait: Callable[[Any], Any] | None = None) -> float:
    """µs per call of one run of ``number`` calls; ``wait`` (e.g. ``jax.block_until_ready``)
    is applied to the run's last result, so asynchronous work is inside the run."""
    t0 = time.perf_counter()
    r = None
    for _ in range(number):
        r = fn()
    if wait is not None:
        wait(r)
    return (time.perf_counter() - t0) / number * 1e6


def bench(fn: Callable[[], Any], number: int, repeat: int,
          wait: Callable[[Any], Any] | None = None) -> float:
    """Median µs per call over ``repeat`` runs of ``number`` calls, after a warm-up (waited
    for: work it queued must not land in the first run)."""
    run(fn, max(20, number // 10), wait)
    return statistics.median(run(fn, number, wait) for _ in range(repeat))


def round_robin(fns: dict[str, tuple[Callable[[], Any], int, Any]], repeat: int,
                warmup: int | None = None) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Interleaved timing: each round runs every function once (``(fn, number, wait)``), so
    load changes on a shared machine hit all of them alike. Returns the median µs per call of
    each function and every round's µs per call (for per-round ratios, see
    :func:`median_ratio`). ``warmup``: calls of each function before the rounds (default
    ``max(20, number // 10)``; a 100-ms training step needs a few, not 20)."""
    for fn, n, w in fns.values():
        k = max(20, n // 10) if warmup is None else warmup
        if k:
            run(fn, k, w)  # warm-up
    runs: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeat):
        for k, (fn, n, w) in fns.items():
            runs[k].append(run(fn, n, w))
    return {k: statistics.median(v) for k, v in runs.items()}, runs


def median_ratio(runs: dict[str, list[float]], a: str, b: str) -> float:
    """The median over rounds of ``a``'s time / ``b``'s time in the same round."""
    return statistics.median(x / y for x, y in zip(runs[a], runs[b]))


def write_report(path: str | None, lines: list[str]) -> None:
    """Write a benchmark's report lines to ``path`` (nothing when None)."""
    if path:
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
