"""``flow.autocast``: PyTorch's automatic mixed precision, as a thread-local switch the matrix
product and convolution functors read.

Inside ``with flow.autocast("cuda"):`` (or ``"cpu"``, or as a decorator) the ops on PyTorch's
lower-precision autocast list -- ``matmul`` / ``@``, ``mm``, ``bmm``, ``mv``, ``linear``,
``conv1d``, ``conv2d``, ``conv_transpose2d`` -- cast their floating inputs (float32, float16,
bfloat16; float64 is left alone, as PyTorch does) to the autocast dtype and so return that
dtype. Every other op runs unchanged, so ``a + b`` of two float32 tensors stays float32, and a
float32 tensor meeting an autocast result promotes as usual. The casts are ordinary ``cast``
ops on the tape: gradients flow back to the float32 parameters in float32.

The state is PyTorch's, per thread: for each device type whether autocast is on and its
dtype (``is_autocast_enabled(device_type)``, ``get_autocast_dtype(device_type)`` and their
setters, which the block writes on entry and restores on exit), the cache flag and the
nesting count (``autocast_increment_nesting``). ``torch.*``'s deprecated per-device forms
(``get_autocast_cpu_dtype`` ...) are in :mod:`.autocast_legacy`.

Differences from PyTorch, on purpose:

* the ops follow one device type: a jflow tensor lives wherever JAX puts it, so the device
  type switched last -- a block entered (``autocast("cuda")`` and ``autocast("cpu")`` alike,
  ``enabled=False`` switching autocast off inside) or ``set_autocast_enabled(device_type,
  True)`` -- decides for every op (``set_autocast_enabled(device_type, False)`` switches the
  ops off when that device type is the one deciding); ``is_autocast_enabled()`` without a
  device type says whether the ops autocast now (PyTorch's answers for CUDA only), with one
  it is PyTorch's per-device flag;
* the default dtype is bfloat16 for every device type (PyTorch's is float16 on CUDA, XPU,
  MPS, IPU and MTIA): it needs no loss scaling and is native on TPUs and recent GPUs; pass
  ``dtype=flow.float16`` or call ``set_autocast_dtype("cuda", flow.float16)`` to get
  PyTorch's CUDA behaviour;
* ``cache_enabled`` is recorded (``is_autocast_cache_enabled``) and has no other effect:
  casts are cheap ops, nothing is cached (``clear_autocast_cache`` has nothing to clear);
* the dtypes are float16, bfloat16 (and float32, which ``set_autocast_dtype`` accepts as
  PyTorch's does): others are refused where PyTorch records them silently.

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
           "set_autocast_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
           "clear_autocast_cache", "autocast_increment_nesting", "autocast_decrement_nesting",
           "state", "ELIGIBLE", "DEVICE_TYPES"]

F = TypeVar("F", bound=Callable[..., Any])

#: device types ``autocast`` accepts (PyTorch's, plus JAX's platform names)
DEVICE_TYPES = ("cuda", "cpu", "gpu", "tpu", "xpu", "mps", "hpu", "xla", "rocm", "meta", "ipu",
                "mtia", "maia")

_LOW = {_dt.float16.np, _dt.bfloat16.np}
#: dtypes ``set_autocast_dtype`` records (a block's ``dtype=`` takes the low ones only)
_SETTABLE = _LOW | {_dt.float32.np}
#: dtypes autocast casts (PyTorch's "eligible" tensors: floating, not float64)
ELIGIBLE = frozenset({_dt.float32.np, _dt.float16.np, _dt.bfloat16.np})
_DEFAULT = _dt.bfloat16.np


class _State(threading.local):
    """Per-thread autocast state; class attributes are every new thread's defaults."""

    dtype: np.dtype | None = None  # the active autocast dtype; None: autocast is off
    device: str | None = None      # the device type whose switch set ``dtype``
    cache_enabled: bool = True
    nesting: int = 0

    def __init__(self) -> None:
        self.enabled: dict[str, bool] = {}       # device type -> on (absent: off)
        self.dtypes: dict[str, np.dtype] = {}    # device type -> dtype (absent: bfloat16)


#: the thread-local autocast state (``state.dtype`` is what the functors read)
state = _State()


def _device_type(fname: str, device_type: Any) -> str:
    """``device_type`` checked and without its index (``"cuda:0"`` -> ``"cuda"``)."""
    if not isinstance(device_type, str):
        raise TypeError(f"{fname}(): argument 'device_type' must be str, not "
                        f"{type(device_type).__name__}")
    dt = device_type.split(":")[0]
    if dt not in DEVICE_TYPES:
        raise RuntimeError(f"{fname}(): unsupported device_type {device_type!r}; expected one "
                           f"of {', '.join(DEVICE_TYPES)}")
    return dt


def _bool(fname: str, arg: str, position: int, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{fname}(): argument '{arg}' (position {position}) must be bool, not "
                        f"{type(value).__name__}")
    return bool(value)


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` in this thread (PyTorch's per-device flag);
    without one, whether the ops autocast now (any device type's block or switch: see the
    module docstring)."""
    if device_type is None:
        return state.dtype is not None
    return state.enabled.get(_device_type("is_autocast_enabled", device_type), False)


def get_autocast_dtype(device_type: str | None = None) -> _dt.dtype:
    """The dtype autocast on ``device_type`` casts to: the block's ``dtype`` inside one, else
    what ``set_autocast_dtype`` set (bfloat16 by default). Without a device type: the
    active dtype inside an autocast region, else CUDA's."""
    if device_type is None:
        if state.dtype is not None:
            return _dt.from_numpy_dtype(state.dtype)
        device_type = "cuda"
    dt = _device_type("get_autocast_dtype", device_type)
    return _dt.from_numpy_dtype(state.dtypes.get(dt, _DEFAULT))


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """Set the dtype autocast on ``device_type`` casts to (float16, bfloat16 or float32);
    inside a block of that device type the ops use it from now on (the block's exit restores
    the one before)."""
    dt = _device_type("set_autocast_dtype", device_type)
    try:
        d = _dt.as_dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be a "
                        f"dtype, not {type(dtype).__name__}") from None
    if d.np not in _SETTABLE:
        raise ValueError(f"set_autocast_dtype(): jflow's autocast casts to float16, bfloat16 "
                         f"or float32, got {d}")
    state.dtypes[dt] = d.np
    if state.device == dt and state.dtype is not None:
        state.dtype = d.np


def set_autocast_enabled(*args: Any) -> None:
    """``set_autocast_enabled(device_type, enabled)`` (or PyTorch's older
    ``set_autocast_enabled(enabled)``, for CUDA): switch autocast on ``device_type`` on or off
    in this thread, outside a block. Switched on, the ops autocast to its dtype; switched
    off, they stop when it is the device type deciding (see the module docstring)."""
    fname = "set_autocast_enabled"
    if len(args) == 1:
        dt, enabled = "cuda", _bool(fname, "enabled", 1, args[0])
    elif len(args) == 2:
        dt, enabled = _device_type(fname, args[0]), _bool(fname, "enabled", 2, args[1])
    else:
        raise TypeError(f"{fname}() takes (enabled) or (device_type, enabled), got "
                        f"{len(args)} arguments")
    state.enabled[dt] = enabled
    if enabled:
        state.dtype, state.device = state.dtypes.get(dt, _DEFAULT), dt
    elif state.device == dt:
        state.dtype, state.device = None, None


def is_autocast_cache_enabled() -> bool:
    """Whether autocast's cast cache is on (recorded only: jflow caches no casts)."""
    return state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Record whether autocast's cast cache is on (``autocast(cache_enabled=)`` sets it in a
    block); jflow caches no casts, so nothing else changes."""
    if not isinstance(enabled, (bool, np.bool_)):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Nothing to clear: jflow's autocast caches no casts (each is a cheap op)."""
    return None


def autocast_increment_nesting() -> int:
    """Count one more autocast block entered in this thread; returns the new depth."""
    state.nesting += 1
    return state.nesting


def autocast_decrement_nesting() -> int:
    """Count one autocast block left in this thread; returns the new depth (PyTorch's counter:
    it may go below 0 when called unpaired)."""
    state.nesting -= 1
    return state.nesting


class autocast:
    """``flow.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``: run the
    block (or the decorated function) with matrix products and convolutions in ``dtype``
    (when ``None``, ``get_autocast_dtype(device_type)``: bfloat16 unless set; float16 and
    bfloat16 are supported). ``enabled=False`` turns autocast off inside, e.g. nested in an
    enabled region for a precision-sensitive part. Entering records the device type's flag,
    dtype and ``cache_enabled`` in the state (``is_autocast_enabled(device_type)`` ...) and
    counts the nesting; leaving restores them.
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
        self._prev: list[tuple] = []

    def __enter__(self) -> autocast:
        dt = self.device_type.split(":")[0]
        self._prev.append((state.dtype, state.device, state.enabled.get(dt),
                           state.dtypes.get(dt), state.cache_enabled))
        if self.fast_dtype is not None and self.fast_dtype.np in _LOW:
            state.dtypes[dt] = self.fast_dtype.np  # (PyTorch's block sets its device's dtype)
        state.enabled[dt] = self._enabled
        state.dtype = state.dtypes.get(dt, _DEFAULT) if self._enabled else None
        state.device = dt
        if self._cache_enabled is not None:
            state.cache_enabled = bool(self._cache_enabled)
        autocast_increment_nesting()
        return self

    def __exit__(self, *exc: object) -> None:
        dt = self.device_type.split(":")[0]
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        state.dtype, state.device, enabled, dtype, state.cache_enabled = self._prev.pop()
        for table, value in ((state.enabled, enabled), (state.dtypes, dtype)):
            if value is None:
                table.pop(dt, None)
            else:
                table[dt] = value

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
