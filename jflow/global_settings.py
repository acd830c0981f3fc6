"""The process-wide switches and queries PyTorch keeps at ``torch.*``, as jflow honours them.

Scripts set these at the top (``torch.use_deterministic_algorithms(True)``,
``torch.set_default_tensor_type(...)``, ``torch.set_num_interop_threads(...)``); each is
accepted with PyTorch's argument checks and reads back what was set. What each does in
jflow:

* **Deterministic algorithms** (``use_deterministic_algorithms``, the debug mode): jflow's
  CPU kernels are deterministic whatever the switch (XLA CPU has no atomics-based reductions;
  sort and topk are stable). On a GPU, XLA's scatter-adds and some reductions use atomics;
  XLA makes them deterministic only through ``--xla_gpu_deterministic_ops=true`` in
  ``XLA_FLAGS``, read when the GPU backend starts: turning the switch on after that, on a
  machine with a GPU, warns that it cannot take effect (once per process).
* **Interop threads** (``set_num_interop_threads``): XLA has no inter-op pool to size; the
  number is remembered and read back (PyTorch's rule that it can be set once, before any
  parallel work, raises as in PyTorch). ``flow.set_num_threads`` sizes XLA's CPU pool.
* **warn_always**: remembered; jflow's one-time warnings go through Python's ``warnings``
  module, whose filters decide repetition.
* **Flushing denormals**: XLA's CPU code keeps its own floating-point mode, so
  ``set_flush_denormal`` reports that it is not supported (False), as PyTorch does on a CPU
  without it.
* ``set_default_tensor_type``: PyTorch's deprecated form of ``set_default_dtype`` (and, for
  ``torch.cuda.*Tensor`` types, the default device).
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from typing import Any

from . import dtypes as _dt
from ._legacy_types import _SPECS, _LegacyTensorType
from .tensor import PRINT_OPTIONS

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_num_interop_threads", "get_num_interop_threads",
           "init_num_threads", "set_warn_always", "is_warn_always_enabled", "set_flush_denormal",
           "set_default_tensor_type", "is_vulkan_available", "compiled_with_cxx11_abi",
           "set_printoptions"]

# (deterministic on, warn_only)
_DETERMINISTIC = [False, False]
_WARNED_GPU = [False]
_INTEROP: list[int | None] = [None]
_WARN_ALWAYS = [False]


def _check_bool(fname: str, arg: str, value: Any, position: int) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{fname}(): argument '{arg}' (position {position}) must be bool, not "
                        f"{type(value).__name__}")
    return value


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms (see the module docstring for what that changes)."""
    _check_bool("use_deterministic_algorithms", "mode", mode, 1)
    _check_bool("use_deterministic_algorithms", "warn_only", warn_only, 2)
    _DETERMINISTIC[:] = [mode, warn_only]
    if mode and not _WARNED_GPU[0] and "--xla_gpu_deterministic_ops=true" not in \
            os.environ.get("XLA_FLAGS", ""):
        import jax  # (only when asked: which platforms JAX has started)
        if any(d.platform == "gpu" for d in jax.devices()):
            _WARNED_GPU[0] = True
            warnings.warn("use_deterministic_algorithms(True): on a GPU, XLA makes its "
                          "scatter-adds and reductions deterministic only with "
                          "XLA_FLAGS=--xla_gpu_deterministic_ops=true set before the process "
                          "starts JAX; this process runs without it", UserWarning, stacklevel=2)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether :func:`use_deterministic_algorithms` is on."""
    return _DETERMINISTIC[0]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether it is on with ``warn_only=True``."""
    return _DETERMINISTIC[1]


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """``0`` / ``"default"`` (off), ``1`` / ``"warn"`` (on, warn only), ``2`` / ``"error"``."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif isinstance(debug_mode, int) and not isinstance(debug_mode, bool):
        if debug_mode not in (0, 1, 2):
            raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                               f"{debug_mode}")
    else:
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0 (off), 1 (warn only) or 2 (on)."""
    if not _DETERMINISTIC[0]:
        return 0
    return 1 if _DETERMINISTIC[1] else 2


def get_num_interop_threads() -> int:
    """The number set by :func:`set_num_interop_threads`, else the CPU count (PyTorch's
    default)."""
    return _INTEROP[0] if _INTEROP[0] is not None else (os.cpu_count() or 1)


def set_num_interop_threads(num: int) -> None:
    """Remembered (XLA has no inter-op pool); settable once, as in PyTorch."""
    if not isinstance(num, int) or isinstance(num, bool):
        raise TypeError(f"set_num_interop_threads(): argument 'num' must be int, not "
                        f"{type(num).__name__}")
    if num <= 0:
        raise RuntimeError("Expected positive number of threads")
    if _INTEROP[0] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _INTEROP[0] = num


def init_num_threads() -> None:
    """PyTorch's per-thread pool initialisation: nothing to do for XLA's pool."""


def set_warn_always(b: bool) -> None:
    """Remembered (see the module docstring)."""
    _WARN_ALWAYS[0] = _check_bool("set_warn_always", "b", b, 1)


def is_warn_always_enabled() -> bool:
    """What :func:`set_warn_always` set (False by default)."""
    return _WARN_ALWAYS[0]


def set_flush_denormal(mode: bool) -> bool:
    """False: not supported (XLA's CPU code keeps its own floating-point mode)."""
    _check_bool("set_flush_denormal", "mode", mode, 1)
    return False


def set_default_tensor_type(t: Any) -> None:
    """PyTorch's deprecated ``set_default_tensor_type``: a floating legacy type (``flow.
    DoubleTensor``, ``"torch.FloatTensor"``, ``"torch.cuda.HalfTensor"``...) sets the default
    dtype, and a ``cuda`` one the default device too."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please "
                  "use torch.set_default_dtype() and torch.set_default_device() as "
                  "alternatives.", UserWarning, stacklevel=2)
    if isinstance(t, str):
        parts = t.split(".")
        ok = parts[0] in ("torch", "flow", "jflow") and (
            len(parts) == 2 or (len(parts) == 3 and parts[1] == "cuda"))
        dtype = _SPECS.get(parts[-1]) if ok else None
        cuda = len(parts) == 3
    elif isinstance(t, _LegacyTensorType):
        dtype, cuda = t._dtype, t._device_type == "cuda"
    else:
        dtype = None
    if dtype is None:
        raise TypeError(f"invalid type: '{t}'")
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _dt.set_default_dtype(dtype)
    if cuda:
        from .default_device import set_default_device  # (the device layer sits above)
        set_default_device("cuda")


def is_vulkan_available() -> bool:
    """False: jflow runs on XLA's backends."""
    return False


def compiled_with_cxx11_abi() -> bool:
    """True: the C++ ops jflow builds (``flow.sysconfig``) take the compiler's default, the
    C++11 ABI (as PyTorch's wheels)."""
    return True


_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
             "full": (4, math.inf, 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """How tensors print, as ``torch.set_printoptions``: digits after the point
    (``precision``), the element count above which the middle is summarised
    (``threshold``) and the items kept at each end (``edgeitems``), the line width, a
    ``profile`` (``"default"`` / ``"short"`` / ``"full"``: PyTorch's sets of the first four),
    and ``sci_mode`` (True / False: floats always / never in scientific notation; None: as
    NumPy chooses). jflow prints through NumPy's ``array2string``, so the layout is NumPy's
    (``tensor([0. , 0.5])`` where PyTorch prints ``tensor([0.0000, 0.5000])``); before any
    call, a repr shows NumPy's default 8 digits."""
    if profile is not None and profile in _PROFILES:
        (PRINT_OPTIONS["precision"], PRINT_OPTIONS["threshold"], PRINT_OPTIONS["edgeitems"],
         PRINT_OPTIONS["linewidth"]) = _PROFILES[profile]
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            PRINT_OPTIONS[name] = value
    PRINT_OPTIONS["sci_mode"] = sci_mode
    if PRINT_OPTIONS["threshold"] == math.inf:
        PRINT_OPTIONS["threshold"] = sys.maxsize  # (NumPy wants an int)
