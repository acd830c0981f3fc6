"""Give the C heap's free memory back to the operating system (glibc's ``malloc_trim``).

Why: XLA's compiler allocates its working memory (LLVM's modules, passes, code buffers)
with ``malloc`` and frees it when a compile ends; glibc keeps freed memory in its heaps for
reuse, so the process's resident memory stays at the compiles' high-water mark. Measured on
the GPT benchmark's first three eager steps (benchmarks/real_models.py, 88 compiles): peak
RSS growth 92-98 MiB without trimming, 75-80 MiB with a trim after its one large compile
(executable_budget calls :func:`trim` after a compile of 0.2 s or more: a trim costs 2-8 ms
there; after every few small compiles it cost a compile-bound test run 3-5%).

Such a compile also leaves a trim *pending* for the next host read (``Tensor.item``, the loss
a training loop reads at the end of its step: :func:`trim_pending`). The step that compiled
freed its buffers among the compiler's live allocations; the next steps, which compile
nothing, allocate theirs in another order, find those holes too small and grow the heap
while the holes stay resident. Trimming once at the end of that step returns the holes'
pages: the GPT's eager steps 2-3 then peak ~77 instead of ~90 MiB over the start (measured
on 2026-12-03's host, where the whole first three steps peaked at 88-96).

A no-op where the C library has no ``malloc_trim`` (macOS, musl) or ctypes cannot load it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

__all__ = ["trim", "available", "trim_pending", "PENDING"]


def _load() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.malloc_trim
    except (OSError, AttributeError):  # (no glibc: musl has no malloc_trim)
        return None
    fn.argtypes = [ctypes.c_size_t]
    fn.restype = ctypes.c_int
    return fn


_TRIM = _load()


def available() -> bool:
    """Whether this process's C library can trim (glibc)."""
    return _TRIM is not None


def trim() -> bool:
    """Return the free memory of every malloc heap to the OS; whether any was returned."""
    return bool(_TRIM(0)) if _TRIM is not None else False


#: ``[True]`` from a large compile (executable_budget) until the next host read trims
PENDING = [False]


def trim_pending() -> None:
    """The pending trim, once (called by ``Tensor.item`` when :data:`PENDING` is set)."""
    PENDING[0] = False
    trim()
