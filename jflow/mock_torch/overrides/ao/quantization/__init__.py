"""``torch.ao.quantization``: importable so libraries that mention quantization load; every
function raises when called and every class when constructed (jflow has no quantized
tensors or kernels)."""

from __future__ import annotations

from typing import Any, NoReturn

from jflow.mock_torch._refusals import refuser, refusing_function

__all__ = ["quantize_dynamic", "quantize", "prepare", "convert", "prepare_qat", "QConfig",
           "default_qconfig", "get_default_qconfig", "QuantStub", "DeQuantStub",
           "fuse_modules", "default_dynamic_qconfig", "float_qparams_weight_only_qconfig"]


_refuse = refuser("torch.ao.quantization",
                  "jflow has no quantization (no quantized tensors or kernels)")


def _fn(name: str) -> Any:
    return refusing_function(__name__, _refuse, name,
                             f"``torch.ao.quantization.{name}``: raises (no quantization in "
                             f"jflow).")


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
