"""A bound on the XLA executables JAX keeps for jflow's eager code.

Every new (op, attrs, shape) compiles an executable, and JAX keeps each one for the life of
the process: eager code over many distinct shapes grows without bound (measured on CPU: about
1.4 MiB per executable, 3.5 GB after 3000 sizes of ``x + 1``). jflow's own caches are bounded
(:func:`jflow.config.cache_limits`); JAX's are not, and it offers only clearing them all
(``jax.clear_caches``). So jflow counts backend compiles (JAX's public monitoring events) and,
after ``limit`` of them, clears JAX's caches at the next safe point: the next eager op call
made outside any trace. Memory the cleared executables held is reused by later compiles, so
the process's memory stays bounded.

The cost: a shape seen again after a clear compiles again (20–40 ms on CPU per op and shape).
A training loop with fixed shapes compiles a handful of executables and never reaches the
limit. ``limit=None`` turns the bound off.

Each executable also costs less to keep: after every compile (or persistent-cache load) jflow
drops the lowered StableHLO module JAX keeps beside the executable
(:func:`jflow._jax_compat.release_lowerings`: 1.1 of the 1.5 MiB each eager executable held
on CPU; the GPT benchmark's first three eager steps keep 84 of them). The executable and
jit's fast path are untouched; only a call that misses the fast path for shapes it compiled
before lowers them again. After a compile of :data:`TRIM_AFTER_S` seconds or more (a large
program), the memory XLA's compiler freed is given back to the OS (:mod:`jflow._malloc_trim`,
glibc: the GPT benchmark's first eager steps peak ~15 MiB lower); after any compile, once
more at the next ``Tensor.item()`` (the end of that training step).
``set_release_lowerings(False)`` keeps both (JAX's and glibc's behaviour).
"""

from __future__ import annotations

from typing import Any

import jax

from . import _malloc_trim
from ._jax_compat import is_tracing, release_lowerings
from .dispatch import watch_inputs

__all__ = ["set_limit", "get_limit", "stats", "clear", "set_release_lowerings"]

_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

#: the limit, the compiles since the last clear, and the number of clears so far
_state: dict[str, Any] = {"limit": 2048, "compiles": 0, "clears": 0, "armed": False,
                          "release_lowerings": True, "trims": 0}

#: a compile that took at least this many seconds is followed by a trim of the C heap: a
#: large program (a whole backward, a training step) leaves tens of MiB of the compiler's
#: memory behind; a small op's compile little, which the next compiles reuse (a trim costs
#: 2-8 ms after a large compile, and trimming after every few small ones slowed a
#: compile-bound test run by 3-5%)
TRIM_AFTER_S = 0.2


def set_limit(limit: int | None) -> int | None:
    """Clear JAX's caches after ``limit`` new executables (None: never); returns the old
    limit."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                              or limit < 1):
        raise ValueError(f"flow.config.set_executable_limit: limit must be a positive int or "
                         f"None, got {limit!r}")
    old = _state["limit"]
    _state["limit"] = limit
    _maybe_arm()
    return old


def get_limit() -> int | None:
    return _state["limit"]


def set_release_lowerings(flag: bool) -> bool:
    """Whether what a compile leaves behind is released: JAX's lowered module of each compiled
    executable, dropped after the compile, and the compiler's freed working memory, given
    back to the OS after a large compile (``TRIM_AFTER_S``), at the next ``Tensor.item()``
    after any compile and before a large program's first compile (default True: memory;
    False: JAX's and the C library's own behaviour, the module kept for a re-lowering that
    misses jit's fast path); returns the old setting."""
    if not isinstance(flag, bool):
        raise TypeError(f"flow.config.set_release_lowerings: flag must be a bool, got "
                        f"{type(flag).__name__}")
    old = _state["release_lowerings"]
    _state["release_lowerings"] = _malloc_trim.ENABLED[0] = flag
    if not flag:
        _malloc_trim.PENDING[0] = 0
    return old


def stats() -> dict[str, int]:
    """``compiles`` since the last clear, ``clears`` so far and ``trims`` of the C heap."""
    return {"compiles": _state["compiles"], "clears": _state["clears"],
            "trims": _state["trims"]}


def clear() -> None:
    """Clear JAX's compilation caches now (outside any trace)."""
    jax.clear_caches()
    _state["compiles"] = 0
    _state["clears"] += 1


def _on_compile(event: str, duration: float, **_: Any) -> None:
    if event == _COMPILE_EVENT:
        _state["compiles"] += 1
        if _state["release_lowerings"]:
            release_lowerings()
            if duration >= TRIM_AFTER_S and _malloc_trim.available():
                _state["trims"] += 1
                _malloc_trim.trim()
            _malloc_trim.PENDING[0] = _malloc_trim.AFTER_COMPILE  # trims at host reads
        _maybe_arm()


def _maybe_arm() -> None:
    limit = _state["limit"]
    if limit is not None and _state["compiles"] >= limit and not _state["armed"]:
        _state["armed"] = True
        _arm()


def _arm() -> None:
    previous = watch_inputs(None)
    if previous is not None:  # flow.jit is tracing: it restores its predecessor afterwards
        watch_inputs(previous)
        _state["armed"] = False  # the next compile arms again
        return

    def at_next_op(op: Any, inputs: tuple) -> None:
        if is_tracing():
            return  # not here: wait for an op call outside any trace
        watch_inputs(None)
        _state["armed"] = False
        clear()

    watch_inputs(at_next_op)


jax.monitoring.register_event_duration_secs_listener(_on_compile)
