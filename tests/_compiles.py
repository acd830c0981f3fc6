"""The XLA compiles a block of test code causes, by program name.

One ``jax.monitoring`` listener per process, registered at import: JAX's public API cannot
remove a listener, so tests share this one instead of each registering its own for the rest
of the worker's run. Names are kept only while a :func:`compiled` block is open.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import jax

_EVENT = "/jax/core/compile/backend_compile_duration"
_OPEN: list[list[str]] = []  # the open blocks' name lists


def _listen(event: str, _secs: float, fun_name: str = "", **_kw: Any) -> None:
    if event == _EVENT:
        for names in _OPEN:
            names.append(fun_name)


jax.monitoring.register_event_duration_secs_listener(_listen)


@contextlib.contextmanager
def compiled() -> Iterator[list[str]]:
    """The names (``jit(copy)``, ...) of the programs compiled inside the block."""
    names: list[str] = []
    _OPEN.append(names)
    try:
        yield names
    finally:
        _OPEN.remove(names)


def compiles(fn: Callable[[], Any]) -> int:
    """How many programs ``fn()`` compiles."""
    with compiled() as names:
        fn()
    return len(names)
