"""``flow.device``: where a tensor lives ("cpu", "cuda:0"), mapped onto JAX devices."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

__all__ = ["device", "device_scalar"]

_JAX_PLATFORM = {"cpu": "cpu", "cuda": "gpu", "rocm": "gpu", "tpu": "tpu"}
_FROM_JAX = {"cpu": "cpu", "gpu": "cuda", "cuda": "cuda", "rocm": "rocm", "tpu": "tpu"}


class device:
    """A device type and index, as ``torch.device`` / ``oneflow.device``."""

    __slots__ = ("type", "index")

    def __init__(self, type: Any, index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            self.type, self.index = type.type, type.index
            return
        if not isinstance(type, str):
            raise TypeError(f"device: expected a string like 'cpu' or 'cuda:0', got {type!r}")
        name, _, idx = type.partition(":")
        if name not in _JAX_PLATFORM and name != "meta":
            raise ValueError(f"device: unknown device type '{name}'; expected one of "
                             f"{sorted(_JAX_PLATFORM)}")
        if idx:
            if index is not None:
                raise ValueError(f"device: index given twice in {type!r} and index={index}")
            index = int(idx)
        self.type, self.index = name, index

    def __repr__(self) -> str:
        return f"device(type='{self.type}', index={self.index or 0})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            other = device(other)
        return (isinstance(other, device) and self.type == other.type
                and (self.index or 0) == (other.index or 0))

    def __hash__(self) -> int:
        return hash((self.type, self.index or 0))

    def jax_device(self) -> jax.Device:
        """The JAX device this names (a clear error when the platform is absent)."""
        if self.type == "meta":  # a name only: comparing / printing it works, data does not
            raise NotImplementedError("device 'meta': jflow has no meta tensors (shape and "
                                      "dtype without data); create the tensor on 'cpu'")
        try:
            devs = jax.local_devices(backend=_JAX_PLATFORM[self.type])  # this process's
        except RuntimeError:
            raise RuntimeError(f"device '{self}' is not available: JAX has no "
                               f"'{_JAX_PLATFORM[self.type]}' backend here") from None
        i = self.index or 0
        if i >= len(devs):
            raise RuntimeError(f"device '{self}' is not available: only {len(devs)} "
                               f"{self.type} device(s)")
        return devs[i]

    @staticmethod
    def from_jax(d: jax.Device) -> device:
        """The jflow ``device`` of a ``jax.Device`` (``cpu`` has no index)."""
        return device(_FROM_JAX.get(d.platform, d.platform), d.id if d.platform != "cpu" else None)


#: 0-d device arrays by (value, dtype), shared by the compiler (learning rates) and eager
#: optimizers; bounded (a scheduler makes a new value per step)
_SCALARS: dict[tuple, Any] = {}


def device_scalar(value: float, dtype: Any) -> Any:
    """A 0-d device array of ``value`` (cached by value and dtype, bounded)."""
    dt = np.dtype(dtype)
    k = (value, dt)
    a = _SCALARS.get(k)
    if a is None:
        if len(_SCALARS) >= 64:
            _SCALARS.clear()
        a = _SCALARS[k] = jax.device_put(np.asarray(value, dtype=dt))
    return a
