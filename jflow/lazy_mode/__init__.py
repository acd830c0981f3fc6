"""``flow.lazy()``: eager code whose op calls record and run later, fused (see
:mod:`jflow.lazy_mode.segment` for the model: what is recorded, what flushes, what is cached;
docs/architecture.md, "One op call in lazy mode", for the path of a call).

    with flow.lazy():
        y = model(x)            # recorded: shapes and dtypes known, nothing ran
        print(y.sum().item())   # a value is needed: the segment runs as one executable

The mode is per thread. Leaving the context flushes what is pending; so does
:func:`sync`. Code inside ``flow.jit`` / ``nn.Graph`` is traced as always (lazy is moot there),
global tensors and calls on traced values run as they would outside lazy mode.
"""

from __future__ import annotations

import contextlib
import threading

from .. import lazy_values as _values
from .. import tensor as _tensor
from ..autograd import engine as _engine
from ..lazy_values import LazyTensor
from . import backward as _backward
from . import compile_cache as _compile_cache
from . import failures as _failures
from . import segment as _segment
from .compile_cache import recompile_reasons
from .segment import flush, stats

__all__ = ["lazy", "set_lazy", "is_lazy", "sync", "stats", "set_call_sites",
           "recompile_reasons", "LazyTensor"]

_LOCAL = _values.LOCAL  # per thread: ``segment`` (pending calls), ``active`` (it, while lazy)
_ACTIVE = _values.ACTIVE  # threads in lazy mode (values.HOOK is set while > 0)
_LOCK = threading.Lock()


def is_lazy() -> bool:
    """Whether op calls on this thread record instead of running."""
    return _LOCAL.active is not None


def set_lazy(flag: bool) -> bool:
    """Turn lazy mode on or off for this thread (off flushes what is pending); returns the
    previous setting."""
    if not isinstance(flag, bool):
        raise TypeError(f"flow.lazy.set_lazy(): flag must be a bool, got {type(flag).__name__}")
    old = _LOCAL.active is not None  # (is_lazy, inlined: every lazy block's entry and exit)
    if flag == old:
        return old
    with _LOCK:
        _ACTIVE[0] += 1 if flag else -1
        _values.HOOK[0] = True if _ACTIVE[0] > 0 else None
        _tensor.HOST_DATA[0] = _segment.host_data if _ACTIVE[0] > 0 else None
        if flag:  # (the backward engine's hook: installed once, for good)
            _engine.set_recording_hook(_backward.HOOK)
        elif _ACTIVE[0] == 0:
            _backward.close_window()
    if flag:
        _LOCAL.active = _segment.segment()
    else:
        _LOCAL.active = None
        flush()
    return old


class lazy(contextlib.ContextDecorator):
    """Record op calls in this block and run them when a value is needed (see the module
    docstring); leaving the block flushes. ``explain=True``: warn (``RecompileWarning``)
    with the reason whenever a segment compiles (:func:`recompile_reasons` keeps them).
    Also a function decorator. (A class, not a generator context manager: entering and
    leaving is part of every lazy training step.)"""

    __slots__ = ("_enabled", "_explain", "_old", "_was")

    def __init__(self, enabled: bool = True, *, explain: bool = False) -> None:
        self._enabled, self._explain = enabled, explain

    def __enter__(self) -> None:
        if self._explain:
            self._was, _compile_cache.EXPLAIN[0] = _compile_cache.EXPLAIN[0], True
        try:
            self._old = set_lazy(self._enabled)
        except BaseException:
            if self._explain:
                _compile_cache.EXPLAIN[0] = self._was
            raise

    def __exit__(self, kind: object, error: object, tb: object) -> None:
        try:
            if kind is None:
                set_lazy(self._old)
            else:
                try:
                    set_lazy(self._old)
                except Exception:  # noqa: BLE001, S110  (the block's own error is the one to
                    pass           # see; the pending values that failed raise when read)
        finally:
            if self._explain:
                _compile_cache.EXPLAIN[0] = self._was


def set_call_sites(flag: bool) -> bool:
    """Whether recorded ops keep the user's line that called them (default True, ~0.3 µs per
    op): an error raised when the pending ops run names it. Returns the previous setting."""
    if not isinstance(flag, bool):
        raise TypeError(f"flow.config.set_lazy_call_sites(): flag must be a bool, got "
                        f"{type(flag).__name__}")
    old = _failures.CALL_SITES[0]
    _failures.CALL_SITES[0] = flag
    return old


def sync() -> None:
    """Run this thread's pending op calls now."""
    flush()
