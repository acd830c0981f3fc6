"""``flow.get_default_device`` / ``flow.set_default_device``: where tensors are created when
no device is given. Setting it sets JAX's default device (``jax_default_device``), so every
creation op, as in PyTorch, places its result there. The meta device (jflow.meta) has no JAX
device: factories read ``default_is_meta()`` instead. ``with flow.device(d):`` sets the default
device for the block, as PyTorch's device context does."""

from __future__ import annotations

from typing import Any

import jax

from .device import DEFAULT_IS_META, device

__all__ = ["get_default_device", "set_default_device"]

_DEFAULT: list[device | None] = [None]
#: the defaults that ``with device(...)`` blocks replaced, innermost last
_STACK: list[device | None] = []


def get_default_device() -> device:
    """The device new tensors go to: the one set, else JAX's default device."""
    if _DEFAULT[0] is not None:
        return _DEFAULT[0]
    return device.from_jax(jax.devices()[0])


def set_default_device(d: Any) -> None:
    """Create tensors on ``d`` from now on (``None``: back to JAX's default)."""
    if d is None:
        _DEFAULT[0] = None
        DEFAULT_IS_META[0] = False
        jax.config.update("jax_default_device", None)
        return
    dev = device(d) if not isinstance(d, int) else device("cuda", d)
    if dev.type == "meta":  # no JAX device: factories ask default_is_meta()
        jax.config.update("jax_default_device", None)
    else:
        jax.config.update("jax_default_device", dev.jax_device())
    _DEFAULT[0] = dev
    DEFAULT_IS_META[0] = dev.type == "meta"


def default_is_meta() -> bool:
    """Whether tensors created without a device go to the meta device (one list read)."""
    return DEFAULT_IS_META[0]


def _enter(self: device) -> device:
    """``with flow.device("meta"):``: this device is the default inside the block."""
    _STACK.append(_DEFAULT[0])
    set_default_device(self)
    return self


def _exit(self: device, *exc: object) -> None:
    set_default_device(_STACK.pop())


device.__enter__ = _enter  # type: ignore[attr-defined]
device.__exit__ = _exit  # type: ignore[attr-defined]
