"""Gradient mode: ``flow.no_grad()``, ``flow.enable_grad()``, ``flow.set_grad_enabled()``.

Thread-local, like PyTorch's. The eager tape records an op only while grad mode is enabled
(the tape itself arrives with the autograd milestone and reads :func:`is_grad_enabled`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from .. import tensor as _tensor

__all__ = ["is_grad_enabled", "no_grad", "enable_grad", "set_grad_enabled"]

class _State(threading.local):
    """Per thread: ``enabled``. The class attribute is every thread's start value, so a read
    never misses (a ``getattr`` default on a missing thread-local attribute costs ~0.4 µs:
    it raises and swallows an AttributeError, on every recorded op)."""

    enabled = True


_state = _State()


def is_grad_enabled() -> bool:
    """Whether autograd records operations on this thread (False under ``no_grad``)."""
    return _state.enabled


_tensor.GRAD_ENABLED[0] = is_grad_enabled  # Tensor.numpy() refuses requires-grad only in grad mode


def _set(enabled: bool) -> None:
    _state.enabled = enabled


class _GradMode:
    """Base of the grad-mode context managers; also usable as function decorators."""

    _mode: bool

    def __enter__(self) -> None:
        self._prev = is_grad_enabled()
        _set(self._mode)

    def __exit__(self, *exc: object) -> None:
        _set(self._prev)

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper


def _new_or_decorate(cls: type, orig_func: Callable[..., Any] | None) -> Any:
    """``@no_grad`` without parentheses (PyTorch accepts it): the decorated function."""
    if orig_func is None:
        return object.__new__(cls)
    if not callable(orig_func):
        raise TypeError(f"{cls.__name__}() takes no arguments, or a function to decorate; got "
                        f"{type(orig_func).__name__}")
    return object.__new__(cls)(orig_func)


class no_grad(_GradMode):
    """Disable gradient recording inside the block (or the decorated function; ``@no_grad``
    and ``@no_grad()`` both decorate)."""

    _mode = False

    def __new__(cls, orig_func: Callable[..., Any] | None = None) -> Any:
        return _new_or_decorate(cls, orig_func)


class enable_grad(_GradMode):
    """Enable gradient recording inside the block (e.g. within ``no_grad``); ``@enable_grad``
    and ``@enable_grad()`` both decorate."""

    _mode = True

    def __new__(cls, orig_func: Callable[..., Any] | None = None) -> Any:
        return _new_or_decorate(cls, orig_func)


class set_grad_enabled(_GradMode):
    """``set_grad_enabled(False)`` as a context manager, or called to set the mode."""

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): mode must be a bool, got {type(mode).__name__}")
        self._prev = is_grad_enabled()
        self._mode = mode
        _set(mode)

    def __enter__(self) -> None:
        pass

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        mode = self._mode
        _set(self._prev)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper
