"""``flow.get_num_threads`` / ``flow.set_num_threads``: PyTorch's intra-op thread count, as far
as XLA lets it be read and set.

XLA's CPU runtime sizes its thread pool once, when JAX starts its CPU backend: to the CPUs the
process may run on (its affinity mask), or one thread with
``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false``; JAX has no call that resizes it later. So
:func:`get_num_threads` reports that size, and :func:`set_num_threads` checks its argument as
PyTorch does and, for any other count, warns (once per count) that the pool keeps its size and
how to choose one (start the process on fewer CPUs: ``taskset -c 0 python ...``, or
``os.sched_setaffinity`` before jflow first computes). Results never depend on the count, only
the speed: so a script that calls ``torch.set_num_threads(1)`` runs, told what it gets.
"""

from __future__ import annotations

import os
import warnings

__all__ = ["get_num_threads", "set_num_threads"]

_WARNED: set[int] = set()


def get_num_threads() -> int:
    """The number of threads XLA's CPU runtime runs an op's work on."""
    if "--xla_cpu_multi_thread_eigen=false" in os.environ.get("XLA_FLAGS", ""):
        return 1
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover  (no affinity masks: macOS, Windows)
        return os.cpu_count() or 1


def set_num_threads(num: int) -> None:
    """PyTorch's ``set_num_threads``: accepted, but XLA's pool keeps its size (see the module
    docstring); a count other than :func:`get_num_threads` warns once."""
    if isinstance(num, bool) or not isinstance(num, int):
        raise TypeError(f"set_num_threads(): argument 'int' must be int, not "
                        f"{type(num).__name__}")
    if num <= 0:
        raise RuntimeError(f"set_num_threads(): expected a positive number of threads, got {num}")
    have = get_num_threads()
    if num != have and num not in _WARNED:
        _WARNED.add(num)
        warnings.warn(f"set_num_threads({num}): XLA's CPU thread pool keeps its {have} "
                      f"threads (JAX sizes it once, at start-up, to the CPUs the process may "
                      f"run on); to use {num}, start the process on {num} CPUs, e.g. "
                      f"`taskset -c 0-{num - 1} python ...`. Results are the same either way.",
                      stacklevel=2)
