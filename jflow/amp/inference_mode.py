"""``flow.inference_mode``: PyTorch's inference mode, as jflow's ``no_grad``.

PyTorch's inference mode is ``no_grad`` plus tensors that skip version counting and view
tracking. jflow keeps no extra per-tensor bookkeeping that could be skipped, so here it is
exactly ``no_grad`` (ops are not recorded on the tape) plus a thread-local flag read by
:func:`is_inference_mode_enabled`. ``inference_mode(False)`` changes nothing about grad mode
(as in PyTorch, it does not re-enable gradients inside ``no_grad``); it only clears the flag.

(It lives in :mod:`jflow.amp` only because the autograd package was not open for edits when it
was added; its natural home is ``jflow/autograd/grad_mode.py``.)
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ..autograd.grad_mode import is_grad_enabled
from ..autograd.grad_mode import set_grad_enabled as _set_grad_enabled

__all__ = ["inference_mode", "is_inference_mode_enabled"]

F = TypeVar("F", bound=Callable[..., Any])


class _State(threading.local):
    enabled: bool = False


_state = _State()


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``flow.inference_mode()``."""
    return _state.enabled


class inference_mode:
    """``with flow.inference_mode():`` / ``@flow.inference_mode()`` (or bare
    ``@flow.inference_mode``): run without recording gradients, as ``no_grad``."""

    def __init__(self, mode: bool | Callable[..., Any] = True) -> None:
        self._fn: Callable[..., Any] | None = None
        if callable(mode):  # used bare as a decorator: @flow.inference_mode
            self._fn, mode = mode, True
            functools.update_wrapper(self, self._fn)
        if not isinstance(mode, bool):
            raise TypeError(f"inference_mode(): mode must be a bool, got {type(mode).__name__}")
        self.mode = mode
        self._prev: list[tuple[bool, bool]] = []

    def __enter__(self) -> None:
        self._prev.append((_state.enabled, is_grad_enabled()))
        _state.enabled = self.mode
        if self.mode:
            _set_grad_enabled(False)

    def __exit__(self, *exc: object) -> None:
        enabled, grad = self._prev.pop()
        _state.enabled = enabled
        _set_grad_enabled(grad)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fn is not None:  # the bare-decorator form, called
            with inference_mode(self.mode):
                return self._fn(*args, **kwargs)
        (fn,) = args
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*a: Any, **kw: Any) -> Any:
            with inference_mode(mode):
                return fn(*a, **kw)
        return wrapper

    def clone(self) -> inference_mode:
        """A new ``inference_mode`` with the same mode (PyTorch uses it to re-enter)."""
        return inference_mode(self.mode)
