"""PyTorch's legacy tensor types (``torch.LongTensor``, ``torch.FloatTensor`` ...): a call
makes a tensor of that dtype (``LongTensor([1, 2])`` from data, ``FloatTensor(2, 3)``
uninitialised — zeros here — of that shape), ``isinstance(t, torch.LongTensor)`` is True
for an int64 tensor on that device type, and the classes serve as annotations."""

from __future__ import annotations

from typing import Any

from . import dtypes as _dt

__all__ = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
           "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor", "cuda_types"]


class _LegacyTensorType(type):
    _dtype: _dt.dtype
    _device_type: str

    def __instancecheck__(cls, obj: Any) -> bool:
        from .tensor import Tensor  # noqa: PLC0415
        return (isinstance(obj, Tensor) and obj.dtype is cls._dtype
                and obj.device.type == cls._device_type)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return sub is cls

    def __call__(cls, *args: Any, device: Any = None) -> Any:
        from . import creation  # noqa: PLC0415
        dev = device if device is not None else (None if cls._device_type == "cpu"
                                                 else cls._device_type)
        if args and not all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            if len(args) != 1:
                raise TypeError(f"{cls.__name__}(): expected sizes or one data argument")
            return creation.tensor(args[0], dtype=cls._dtype, device=dev)
        return creation.zeros(*args, dtype=cls._dtype, device=dev) if args else \
            creation.zeros(0, dtype=cls._dtype, device=dev)

    @property
    def dtype(cls) -> _dt.dtype:
        """The dtype of tensors of this type."""
        return cls._dtype

    def __repr__(cls) -> str:
        prefix = "torch." if cls._device_type == "cpu" else "torch.cuda."
        return f"<class '{prefix}{cls.__name__}'>"


def _make(name: str, dtype: _dt.dtype, device_type: str) -> type:
    return _LegacyTensorType(name, (), {"_dtype": dtype, "_device_type": device_type,
                                        "__doc__": f"Tensors of dtype {dtype.name} on "
                                                   f"{device_type} (PyTorch's legacy type)."})


_SPECS = {"FloatTensor": _dt.float32, "DoubleTensor": _dt.float64, "HalfTensor": _dt.float16,
          "BFloat16Tensor": _dt.bfloat16, "LongTensor": _dt.int64, "IntTensor": _dt.int32,
          "ShortTensor": _dt.int16, "CharTensor": _dt.int8, "ByteTensor": _dt.uint8,
          "BoolTensor": _dt.bool_}

_cpu = {n: _make(n, d, "cpu") for n, d in _SPECS.items()}
#: the ``torch.cuda.<Type>Tensor`` classes
cuda_types = {n: _make(n, d, "cuda") for n, d in _SPECS.items()}

FloatTensor = _cpu["FloatTensor"]
DoubleTensor = _cpu["DoubleTensor"]
HalfTensor = _cpu["HalfTensor"]
BFloat16Tensor = _cpu["BFloat16Tensor"]
LongTensor = _cpu["LongTensor"]
IntTensor = _cpu["IntTensor"]
ShortTensor = _cpu["ShortTensor"]
CharTensor = _cpu["CharTensor"]
ByteTensor = _cpu["ByteTensor"]
BoolTensor = _cpu["BoolTensor"]
