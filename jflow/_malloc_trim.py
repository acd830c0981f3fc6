"""Give the C heap's free memory back to the operating system (glibc's ``malloc_trim``).

Why: XLA's compiler allocates its working memory (LLVM's modules, passes, code buffers)
with ``malloc`` and frees it when a compile ends; glibc keeps freed memory in its heaps for
reuse, so the process's resident memory stays at the compiles' high-water mark. Measured on
the GPT benchmark's first three eager steps (benchmarks/real_models.py, 88 compiles): peak
RSS growth 92-98 MiB without trimming, 75-80 MiB with a trim after its one large compile
(executable_budget calls :func:`trim` after a compile of 0.2 s or more: a trim costs 2-8 ms
there; after every few small compiles it cost a compile-bound test run 3-5%).

Any compile (executable_budget) also leaves trims *pending* for the next two
``Tensor.item()`` calls (the loss a training loop reads at the end of its step:
:func:`trim_pending`). The step that compiled freed its buffers among the compiler's live
allocations; the next steps, which compile nothing, allocate theirs in another order, find
those holes too small and grow the heap while the holes stay resident. Trimming at the end
of that step returns the holes' pages: the GPT's eager steps 2-3 then peak ~77 instead of
~90 MiB over the start (measured on 2026-12-03's host, where the whole first three steps
peaked at 88-96). The first step that compiled nothing leaves holes of its own, among what
the compiling step left live (the optimizer's state, the executables); from then on the
steps repeat its order of allocations and reuse them, so one more trim, at its end, is the
last (:data:`AFTER_COMPILE`; a trim costs ~2 ms and the next step's page faults ~4 ms on
the GPT: never every step). Measured in session 26: see :data:`AFTER_COMPILE`.

Before a compile known to be large -- an eager training step's whole backward and its fused
optimizer step, at their first call -- :func:`before_large_compile` trims as well: the
compiler's working memory then starts from the heap's live bytes, not from them plus the
free holes earlier steps left resident. Five paired runs of the GPT's eager steps on
2026-12-03's host, peak RSS growth over the start, medians without / with: first 3 steps
79 / 63 MiB, step 4 (compiling the fused AdamW step) 144 / 114 MiB.

A no-op where the C library has no ``malloc_trim`` (macOS, musl) or ctypes cannot load it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

__all__ = ["trim", "available", "trim_pending", "PENDING", "before_large_compile", "LARGE",
           "ENABLED"]


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


#: ``[False]`` turns :func:`before_large_compile` off (``flow.config.set_release_lowerings``)
ENABLED = [True]

#: how many ``Tensor.item()`` calls trim after a compile: the step that compiled and the
#: next one (see the module docstring)
AFTER_COMPILE = 2

#: ``[n]``: the trims still pending, :data:`AFTER_COMPILE` from a compile (executable_budget)
#: on, one less at each ``Tensor.item()``
PENDING = [0]


def trim_pending() -> None:
    """One pending trim (called by ``Tensor.item`` while :data:`PENDING` is set)."""
    PENDING[0] -= 1
    trim()


#: the size (graph nodes, step tensors) from which a first call's compile counts as large
LARGE = 64


def before_large_compile(size: int) -> None:
    """Trim now when ``size`` (nodes of a backward graph, tensors of an optimizer step about
    to compile) is :data:`LARGE` or more; small programs' compiles reuse the free memory."""
    if size >= LARGE and ENABLED[0]:
        trim()
