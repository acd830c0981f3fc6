"""``torch.types``: the type aliases PyTorch annotates with."""

from typing import Union

from jflow import Tensor, device, dtype

_dtype = dtype
_device = device
Device = Union[device, str, int, None]  # noqa: UP007
Number = Union[int, float, bool]  # noqa: UP007
_int = int
_float = float
_bool = bool
_size = tuple
Storage = object
__all__ = ["Device", "Number", "Tensor", "_dtype", "_device", "_int", "_float", "_bool",
           "_size"]
