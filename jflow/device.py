"""``flow.device``: where a tensor lives ("cpu", "cuda:0"), mapped onto JAX devices."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ._jax_compat import refuse_as_argument

__all__ = ["device", "device_scalar", "META", "MetaValue", "meta_value", "is_meta_value",
           "is_meta_device", "no_data", "DEFAULT_IS_META"]

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
        if self.type == "meta":  # (PyTorch's: the meta device has no index)
            return "device(type='meta')"
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
        if self.type == "meta":  # no JAX device: meta tensors hold no data (jflow.meta)
            raise NotImplementedError("device 'meta' has no JAX device: meta tensors keep "
                                      "shape and dtype only (jflow.meta)")
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


#: device scalars kept (``device_scalar``; cleared beyond it)
SCALARS_SIZE = 64


def device_scalar(value: float, dtype: Any) -> Any:
    """A 0-d device array of ``value`` (cached by value and dtype, bounded)."""
    dt = np.dtype(dtype)
    k = (value, dt)
    a = _SCALARS.get(k)
    if a is None:
        if len(_SCALARS) >= SCALARS_SIZE:
            _SCALARS.clear()
        a = _SCALARS[k] = jax.device_put(np.asarray(value, dtype=dt))
    return a


# -- the meta device: shape and dtype, no data (jflow.meta) -----------------------------------
# (here, in the base layer: Tensor reads these; jflow/meta.py adds ops on meta values)

#: ``[bool]``: whether tensors created without a device go to the meta device (set by
#: ``default_device.set_default_device``; read by every factory: one list read)
DEFAULT_IS_META: list[bool] = [False]

#: the meta device
META = device("meta")


class MetaValue(jax.ShapeDtypeStruct):
    """A meta tensor's value: shape and dtype, no data. JAX refuses it as an argument of a
    compiled call before tracing it (a ``TypeError``: how an op's ``apply`` notices a meta
    input; see ``_refuse_meta``); ``jax.eval_shape`` takes its plain ``ShapeDtypeStruct``."""

    __slots__ = ()

    @property
    def aval(self) -> jax.core.ShapedArray:
        """The abstract value, as a JAX array's ``aval`` (what metadata reads use)."""
        return jax.core.ShapedArray(self.shape, self.dtype)

    # any read of the values (NumPy conversion, a Python scalar or bool), wherever a functor
    # reads data on the host, raises instead of giving NumPy's 0-d object array
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise no_data("reading a tensor's values (NumPy conversion)")

    def __bool__(self) -> bool:
        raise no_data("Tensor.__bool__()")

    def __int__(self) -> int:
        raise no_data("Tensor.__int__()")

    def __float__(self) -> float:
        raise no_data("Tensor.__float__()")

    def __index__(self) -> int:
        raise no_data("Tensor.__index__()")


def _refuse_meta(v: MetaValue) -> Any:
    # JAX would take a ShapeDtypeStruct subclass as an abstract argument: lower and compile the
    # call, then refuse the value when the executable runs (an XLA compile per meta call)
    raise TypeError(f"Argument of shape {v.dtype}{list(v.shape)} of type {type(v)} is not a "
                    f"valid JAX type (a meta tensor's value: no data)")


refuse_as_argument(MetaValue, _refuse_meta)
_SDS = MetaValue


def is_meta_value(v: Any) -> bool:
    """Whether a tensor's value slot holds a meta value (shape and dtype, no data)."""
    return v.__class__ is _SDS


def meta_value(shape: Any, dtype: Any) -> MetaValue:
    """The value of a meta tensor of ``shape`` and (NumPy / JAX) ``dtype``."""
    return _SDS(tuple(int(s) for s in shape), np.dtype(dtype))


def is_meta_device(d: Any) -> bool:
    """Whether ``d`` (a ``device``, a string or None) names the meta device."""
    if d is None:
        return False
    if isinstance(d, device):
        return d.type == "meta"
    return isinstance(d, str) and d.partition(":")[0] == "meta"


def no_data(what: str) -> NotImplementedError:
    """The error for reading a meta tensor's values (``what``: the op or method)."""
    return NotImplementedError(f"{what}: meta tensors have no data (device 'meta' keeps only "
                               f"shape and dtype); create or load the tensor on a real device "
                               f"first (e.g. Module.to_empty(device='cpu') then load weights)")


