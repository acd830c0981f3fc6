"""``flow.autocast``: PyTorch's automatic mixed precision, as a thread-local switch the matrix
product and convolution functors read.

Inside ``with flow.autocast("cuda"):`` (or ``"cpu"``, or as a decorator) the ops on PyTorch's
lower-precision autocast list -- ``matmul`` / ``@``, ``mm``, ``bmm``, ``mv``, ``linear``,
``conv1d``, ``conv2d``, ``conv_transpose2d`` -- cast their floating inputs (float32, float16,
bfloat16; float64 is left alone, as PyTorch does) to the autocast dtype and so return that
dtype. Every other op runs unchanged, so ``a + b`` of two float32 tensors stays float32, and a
float32 tensor meeting an autocast result promotes as usual. The casts are ordinary ``cast``
ops on the tape: gradients flow back to the float32 parameters in float32.

Differences from PyTorch, on purpose:

* one state for every ``device_type``: a jflow tensor lives wherever JAX puts it, so
  ``autocast("cuda")`` and ``autocast("cpu")`` both apply to every op (the device type is
  checked and recorded, nothing more);
* the default dtype is bfloat16 for every device type (PyTorch's is float16 on CUDA): it
  needs no loss scaling and is native on TPUs and recent GPUs; pass ``dtype=flow.float16`` to
  get PyTorch's CUDA behaviour;
* ``cache_enabled`` is accepted and ignored (casts are cheap ops, nothing is cached).

The hook in the functors (``jflow/functional/functors/matmul.py``, ``conv.py``; ``linear``,
bound straight to its op in api.yaml, is wrapped by :mod:`._linear`) is :data:`state`
``.dtype``: one thread-local attribute read, ``None`` when autocast is off. This module
imports nothing above :mod:`jflow.dtypes`, so the functional layer may read it.
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from .. import dtypes as _dt

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "set_autocast_enabled",
           "set_autocast_dtype", "state", "ELIGIBLE", "DEVICE_TYPES"]

F = TypeVar("F", bound=Callable[..., Any])

#: device types ``autocast`` accepts (PyTorch's, plus JAX's platform names)
DEVICE_TYPES = ("cuda", "cpu", "gpu", "tpu", "xpu", "mps", "hpu", "xla", "rocm", "meta")

_LOW = {_dt.float16.np, _dt.bfloat16.np}
#: dtypes autocast casts (PyTorch's "eligible" tensors: floating, not float64)
ELIGIBLE = frozenset({_dt.float32.np, _dt.float16.np, _dt.bfloat16.np})


class _State(threading.local):
    """Per-thread autocast state; class attributes are every new thread's defaults."""

    dtype: np.dtype | None = None      # the active autocast dtype; None: autocast is off
    default: np.dtype = _dt.bfloat16.np  # what ``autocast(dtype=None)`` uses


#: the thread-local autocast state (``state.dtype`` is what the functors read)
state = _State()


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on in this thread (``device_type`` accepted as PyTorch's)."""
    return state.dtype is not None


def get_autocast_dtype(device_type: str | None = None) -> _dt.dtype:
    """The dtype ``autocast(device_type)`` casts to when given no ``dtype`` (bfloat16), or
    the active one inside an autocast region."""
    return _dt.from_numpy_dtype(state.dtype if state.dtype is not None else state.default)


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """Set the dtype ``autocast(device_type)`` uses when given none (float16 or bfloat16)."""
    d = _dt.as_dtype(dtype)
    if d.np not in _LOW:
        raise ValueError(f"set_autocast_dtype: expected float16 or bfloat16, got {d}")
    state.default = d.np


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Switch autocast on (with the default dtype) or off in this thread, outside a block."""
    state.dtype = state.default if enabled else None


class autocast:
    """``flow.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: run the
    block (or the decorated function) with matrix products and convolutions in ``dtype``
    (bfloat16 when ``None``; float16 and bfloat16 are supported). ``enabled=False`` turns
    autocast off inside, e.g. nested in an enabled region for a precision-sensitive part.
    """

    def __init__(self, device_type: str = "cuda", dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"autocast: expected device_type as a string, got "
                             f"{type(device_type).__name__} (use e.g. 'cuda' or 'cpu')")
        if device_type.split(":")[0] not in DEVICE_TYPES:
            raise RuntimeError(f"autocast: unsupported device_type {device_type!r}; expected "
                               f"one of {', '.join(DEVICE_TYPES)}")
        if not isinstance(enabled, bool):
            raise TypeError(f"autocast: enabled must be a bool, got {type(enabled).__name__}")
        self.device_type = device_type
        self.fast_dtype = _dt.as_dtype(dtype) if dtype is not None else None
        self._enabled = enabled
        self._cache_enabled = cache_enabled
        if enabled and self.fast_dtype is not None and self.fast_dtype.np not in _LOW:
            warnings.warn(f"In autocast, but the target dtype {self.fast_dtype} is not "
                          f"supported; only float16 and bfloat16 are. Disabling autocast.",
                          UserWarning, stacklevel=2)
            self._enabled = False
        self._prev: list[np.dtype | None] = []

    def __enter__(self) -> autocast:
        self._prev.append(state.dtype)
        if self._enabled:
            state.dtype = self.fast_dtype.np if self.fast_dtype is not None else state.default
        else:
            state.dtype = None
        return self

    def __exit__(self, *exc: object) -> None:
        state.dtype = self._prev.pop()

    def __call__(self, fn: F) -> F:
        """Use as a decorator: each call of ``fn`` runs in a fresh autocast region."""
        args = (self.device_type, self.fast_dtype, self._enabled, self._cache_enabled)

        @functools.wraps(fn)
        def wrapper(*a: Any, **kw: Any) -> Any:
            with autocast(*args):
                return fn(*a, **kw)
        return wrapper  # type: ignore[return-value]

    def __repr__(self) -> str:
        return (f"autocast(device_type={self.device_type!r}, dtype={self.fast_dtype}, "
                f"enabled={self._enabled})")
