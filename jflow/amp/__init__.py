"""``flow.amp``: automatic mixed precision, as ``torch.amp``.

* :class:`autocast` (also ``flow.autocast`` and ``flow.cuda.amp.autocast``): matrix products
  and convolutions in bfloat16 / float16 inside a block, and the state functions ``torch.*``
  has (``get_autocast_dtype``, ``set_autocast_enabled`` ...: :mod:`.autocast_mode`; the
  deprecated per-device forms: :mod:`.autocast_legacy`);
* :class:`GradScaler` (also ``flow.cuda.amp.GradScaler``): dynamic loss scaling
  (:mod:`.grad_scaler`);
* :class:`inference_mode` (``flow.inference_mode``; :mod:`.inference_mode`).

This package imports nothing above the autograd grad mode and ``Tensor``: the functional
layer reads the autocast state from it while jflow is being imported.
"""

import functools
from collections.abc import Callable
from typing import Any

from ..tensor import Tensor
from .autocast_mode import (
    ELIGIBLE,
    autocast,
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .grad_scaler import GradScaler
from .inference_mode import inference_mode, is_inference_mode_enabled

__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype",
           "set_autocast_enabled", "set_autocast_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "autocast_increment_nesting",
           "autocast_decrement_nesting", "inference_mode", "is_inference_mode_enabled",
           "custom_fwd", "custom_bwd"]


def _cast(value: Any, dtype: Any) -> Any:
    if isinstance(value, Tensor):
        return value.to(dtype) if value._meta.dtype in ELIGIBLE else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd: Callable[..., Any] | None = None, *, device_type: str = "cuda",
               cast_inputs: Any = None) -> Any:
    """``torch.amp.custom_fwd`` for an ``autograd.Function.forward``: with ``cast_inputs``,
    inside an autocast region the forward's floating tensor arguments are cast to it and the
    forward runs with autocast off; otherwise a pass-through."""
    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        if cast_inputs is None:
            return f

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not is_autocast_enabled():
                return f(*args, **kwargs)
            with autocast(device_type, enabled=False):
                return f(*_cast(args, cast_inputs), **_cast(kwargs, cast_inputs))
        return wrapper
    return deco(fwd) if fwd is not None else deco


def custom_bwd(bwd: Callable[..., Any] | None = None, *, device_type: str = "cuda") -> Any:
    """``torch.amp.custom_bwd``: a pass-through (jflow's backward does not run under the
    forward's autocast state; a custom backward computes in the dtypes it is given)."""
    return bwd if bwd is not None else (lambda f: f)
