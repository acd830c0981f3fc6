"""Argument types of the functional layer: a fast inline check and a converter for each.

``FAST[type]`` is a Python expression template (``{v}`` = the argument) that is true when
the value needs no conversion; otherwise the generated parser calls ``convert(type, v, size)``,
which returns the converted value or :data:`NO_MATCH`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from jax.core import Tracer

from .. import dtypes as _dt
from ..device import device as _device
from ..random import Generator
from ..sharding.placement import placement as _placement
from ..sharding.sbp import SbpParallel
from ..tensor import Tensor

__all__ = ["NO_MATCH", "FAST", "CONVERTERS", "EXACT", "convert", "type_name", "PY_TYPES"]


class _NoMatch:
    def __repr__(self) -> str:
        return "NO_MATCH"


NO_MATCH: Any = _NoMatch()

_INTS = (int, np.integer)
_BOOLS = (bool, np.bool_)

FAST = {
    "Tensor": "isinstance({v}, _Tensor)",
    "Scalar": "(type({v}) is float or type({v}) is int or type({v}) is bool "
              "or type({v}) is complex)",
    "Int32": "type({v}) is int",
    "Int64": "type({v}) is int",
    "Float": "type({v}) is float",
    "Double": "type({v}) is float",
    "Bool": "type({v}) is bool",
    "String": "type({v}) is str",
    "DataType": "type({v}) is _dtype",
}

#: Python annotation of each parameter type in the generated ``_C.pyi`` stub. A sized list
#: type (``Int32List[2]``) also accepts one element: the stub adds ``PY_ELEMENT[t] | ``.
PY_TYPES = {
    "Tensor": "Tensor", "TensorTuple": "Sequence[Tensor]", "Scalar": "int | float",
    "Int32": "int", "Int64": "int", "Float": "float", "Double": "float", "Bool": "bool",
    "String": "str", "Int32List": "Sequence[int]", "Int64List": "Sequence[int]",
    "FloatList": "Sequence[float]", "Shape": "Sequence[int]", "DataType": "dtype",
    "Device": "str | device", "Generator": "Generator", "Placement": "placement",
    "Sbp": "SbpParallel", "SbpList": "SbpParallel | Sequence[SbpParallel]",
}
PY_ELEMENT = {"Int32List": "int", "Int64List": "int", "FloatList": "float"}
#: Python annotation of each return type in the stub (named TensorTuples get a NamedTuple).
PY_RETURN_TYPES = {"Tensor": "Tensor", "TensorTuple": "tuple[Tensor, ...]", "Void": "None",
                   "Bool": "bool", "Int64": "int", "Double": "float", "Shape": "tuple[int, ...]"}

_NAMES = {"Scalar": "Number", "Int32": "int", "Int64": "int", "Float": "float",
          "Double": "float", "Bool": "bool", "String": "str", "Int32List": "tuple of ints",
          "Int64List": "tuple of ints", "FloatList": "tuple of floats", "Shape": "tuple of ints",
          "DataType": "flow.dtype", "Device": "flow.device", "TensorTuple": "tuple of Tensors",
          "Placement": "flow.placement", "Sbp": "flow.sbp", "SbpList": "tuple of flow.sbp",
          "Generator": "flow.Generator"}
_ELEMENT_NAMES = {"Int32List": "int", "Int64List": "int", "FloatList": "float"}


def type_name(t: str, size: int | None = None) -> str:
    """How error messages name a parameter type (PyTorch's wording: "tuple of ints")."""
    if size is not None and t in _ELEMENT_NAMES:
        return f"{_ELEMENT_NAMES[t]} or {_NAMES[t]}"
    return _NAMES.get(t, t)


def _is_int(v: Any) -> bool:
    return isinstance(v, _INTS) and not isinstance(v, _BOOLS)


def _is_index_tensor(v: Any) -> bool:
    """A one-element integer tensor, which PyTorch's parser takes in a list of ints (read
    back with ``.item()``): HF models compute sizes on tensors and pass them to ``view`` /
    ``zeros``. A lone int parameter takes only a 0-dim one (:func:`_int`), as PyTorch's
    ``int`` does through ``__index__`` (``narrow``'s start then refuses ``tensor([1])``)."""
    return isinstance(v, Tensor) and v._meta.dtype.kind in "iu" and v.numel() == 1


def _is_int_like(v: Any) -> bool:
    return _is_int(v) or _is_index_tensor(v)


def _is_float(v: Any) -> bool:
    """A real number that a Float parameter accepts: ints and floats, never bools."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, _BOOLS)


def _int_list(v: Any, size: int | None) -> Any:
    """A list/tuple of ints; a single int only when the type has a size N (repeated N times)."""
    t = type(v)
    if t is tuple or t is list:  # fast path: plain Python ints (bools are not ints here)
        for e in v:
            if type(e) is not int:
                break
        else:
            return v if t is tuple else tuple(v)
    if _is_int_like(v):
        return (int(v),) * size if size is not None else NO_MATCH
    if isinstance(v, (list, tuple)) and all(_is_int_like(e) for e in v):
        return tuple(int(e) for e in v)
    return NO_MATCH


def _tensor(v: Any, size: int | None) -> Any:
    return v if isinstance(v, Tensor) else NO_MATCH


def _tensor_tuple(v: Any, size: int | None) -> Any:
    if isinstance(v, (list, tuple)) and all(isinstance(e, Tensor) for e in v):
        return tuple(v)
    return NO_MATCH


def _scalar(v: Any, size: int | None) -> Any:
    if isinstance(v, (bool, int, float, complex, np.bool_, np.integer, np.floating,
                      np.complexfloating)):
        return v.item() if isinstance(v, np.generic) else v
    return NO_MATCH


def _int(v: Any, size: int | None) -> Any:
    return int(v) if _is_int(v) or (_is_index_tensor(v) and not v.shape) else NO_MATCH


def _float(v: Any, size: int | None) -> Any:
    if _is_float(v):
        return float(v)
    # a traced 0-d number: a dynamic attr's value inside a compiled backward rule or jax.jit
    # (ops take it as a runtime scalar; see jflow.ops.Attr)
    if isinstance(v, Tracer) and v.shape == () and np.dtype(v.dtype).kind in "fiu":
        return v
    return NO_MATCH


def _bool(v: Any, size: int | None) -> Any:
    return bool(v) if isinstance(v, _BOOLS) else NO_MATCH


def _string(v: Any, size: int | None) -> Any:
    return v if isinstance(v, str) else NO_MATCH


def _shape(v: Any, size: int | None) -> Any:
    return _int_list(v, None) if not _is_int(v) else NO_MATCH


def _float_list(v: Any, size: int | None) -> Any:
    # as Int32List: a single number only when the type has a size N (repeated N times)
    if _is_float(v):
        return (float(v),) * size if size is not None else NO_MATCH
    if isinstance(v, (list, tuple)) and all(_is_float(e) for e in v):
        return tuple(float(e) for e in v)
    return NO_MATCH


def _data_type(v: Any, size: int | None) -> Any:
    if isinstance(v, _dt.dtype):
        return v
    if isinstance(v, (type, np.dtype)):
        try:
            return _dt.as_dtype(v)
        except TypeError:
            return NO_MATCH
    return NO_MATCH


def _device_arg(v: Any, size: int | None) -> Any:
    if isinstance(v, _device):
        return v
    if isinstance(v, str):
        try:
            return _device(v)
        except ValueError:
            return NO_MATCH
    return NO_MATCH


def _generator(v: Any, size: int | None) -> Any:
    return v if isinstance(v, Generator) else NO_MATCH


def _placement_arg(v: Any, size: int | None) -> Any:
    return v if isinstance(v, _placement) else NO_MATCH


def _sbp(v: Any, size: int | None) -> Any:
    return v if isinstance(v, SbpParallel) else NO_MATCH


def _sbp_list(v: Any, size: int | None) -> Any:
    if isinstance(v, SbpParallel):
        return (v,)
    if isinstance(v, (list, tuple)) and v and all(isinstance(e, SbpParallel) for e in v):
        return tuple(v)
    return NO_MATCH


#: ``CONVERTERS[type](value, size)`` -> the converted value or NO_MATCH. Generated parsers
#: hold the converter of each parameter directly (no per-call lookup by type name).
CONVERTERS = {
    "Tensor": _tensor, "TensorTuple": _tensor_tuple, "Scalar": _scalar, "Int32": _int,
    "Int64": _int, "Float": _float, "Double": _float, "Bool": _bool, "String": _string,
    "Int32List": _int_list, "Int64List": _int_list, "FloatList": _float_list, "Shape": _shape,
    "DataType": _data_type, "Device": _device_arg, "Generator": _generator,
    "Placement": _placement_arg, "Sbp": _sbp, "SbpList": _sbp_list,
}
#: Types whose FAST test accepts exactly what the converter accepts: no converter call needed.
EXACT = frozenset({"Tensor"})


def convert(t: str, v: Any, size: int | None = None) -> Any:
    """Convert ``v`` to type ``t`` or return NO_MATCH."""
    try:
        conv = CONVERTERS[t]
    except KeyError:
        raise AssertionError(f"unknown functional type {t}") from None
    return conv(v, size)
