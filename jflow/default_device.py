"""``flow.get_default_device`` / ``flow.set_default_device``: where tensors are created when
no device is given. Setting it sets JAX's default device (``jax_default_device``), so every
creation op, as in PyTorch, places its result there."""

from __future__ import annotations

from typing import Any

import jax

from .device import device

__all__ = ["get_default_device", "set_default_device"]

_DEFAULT: list[device | None] = [None]


def get_default_device() -> device:
    """The device new tensors go to: the one set, else JAX's default device."""
    if _DEFAULT[0] is not None:
        return _DEFAULT[0]
    return device.from_jax(jax.devices()[0])


def set_default_device(d: Any) -> None:
    """Create tensors on ``d`` from now on (``None``: back to JAX's default)."""
    if d is None:
        _DEFAULT[0] = None
        jax.config.update("jax_default_device", None)
        return
    dev = device(d) if not isinstance(d, int) else device("cuda", d)
    jax.config.update("jax_default_device", dev.jax_device())
    _DEFAULT[0] = dev
