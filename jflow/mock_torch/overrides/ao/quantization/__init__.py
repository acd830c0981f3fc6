"""``torch.ao.quantization``: importable so libraries that mention quantization load; every
function raises when called and every class when constructed (jflow has no quantized
tensors or kernels)."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["quantize_dynamic", "quantize", "prepare", "convert", "prepare_qat", "QConfig",
           "default_qconfig", "get_default_qconfig", "QuantStub", "DeQuantStub",
           "fuse_modules", "default_dynamic_qconfig", "float_qparams_weight_only_qconfig"]


def _refuse(name: str) -> NoReturn:
    raise NotImplementedError(f"torch.ao.quantization.{name}: jflow has no quantization "
                              f"(no quantized tensors or kernels)")


def _fn(name: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        _refuse(name)
    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"``torch.ao.quantization.{name}``: raises (no quantization in jflow)."
    return refuse


quantize_dynamic = _fn("quantize_dynamic")
quantize = _fn("quantize")
prepare = _fn("prepare")
convert = _fn("convert")
prepare_qat = _fn("prepare_qat")
fuse_modules = _fn("fuse_modules")
get_default_qconfig = _fn("get_default_qconfig")


class _Refused:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _refuse(type(self).__name__)


class QConfig(_Refused):
    """Raises when constructed."""


class QuantStub(_Refused):
    """Raises when constructed."""


class DeQuantStub(_Refused):
    """Raises when constructed."""


class _Unusable:
    """A predefined qconfig: any use raises."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, key: str) -> NoReturn:
        _refuse(self.__dict__.get("_name", "qconfig"))

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse(self._name)


default_qconfig = _Unusable("default_qconfig")
default_dynamic_qconfig = _Unusable("default_dynamic_qconfig")
float_qparams_weight_only_qconfig = _Unusable("float_qparams_weight_only_qconfig")
