"""Argument types of the functional layer: a fast inline check and a converter for each.

``FAST[type]`` is a Python expression template (``{v}`` = the argument) that is true when
the value needs no conversion; otherwise the generated parser calls ``convert(type, v, size)``,
which returns the converted value or :data:`NO_MATCH`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..device import device as _device
from ..sharding.placement import placement as _placement
from ..sharding.sbp import SbpParallel
from ..tensor import Tensor

__all__ = ["NO_MATCH", "FAST", "convert", "type_name", "PY_TYPES"]


class _NoMatch:
    def __repr__(self) -> str:
        return "NO_MATCH"


NO_MATCH: Any = _NoMatch()

_INTS = (int, np.integer)
_BOOLS = (bool, np.bool_)

FAST = {
    "Tensor": "isinstance({v}, _Tensor)",
    "Scalar": "(type({v}) is float or type({v}) is int or type({v}) is bool)",
    "Int32": "type({v}) is int",
    "Int64": "type({v}) is int",
    "Float": "type({v}) is float",
    "Double": "type({v}) is float",
    "Bool": "type({v}) is bool",
    "String": "type({v}) is str",
    "DataType": "type({v}) is _dtype",
}

#: Python annotation used in the generated ``_C.pyi`` stub.
PY_TYPES = {
    "Tensor": "Tensor", "TensorTuple": "Sequence[Tensor]", "Scalar": "Number", "Int32": "int",
    "Int64": "int", "Float": "float", "Double": "float", "Bool": "bool", "String": "str",
    "Int32List": "int | Sequence[int]", "Int64List": "int | Sequence[int]",
    "FloatList": "float | Sequence[float]", "Shape": "Sequence[int]", "DataType": "dtype",
    "Device": "str | device", "Generator": "Generator", "Placement": "placement",
    "Sbp": "SbpParallel", "SbpList": "SbpParallel | Sequence[SbpParallel]",
}

_NAMES = {"Scalar": "Number", "Int32": "int", "Int64": "int", "Float": "float",
          "Double": "float", "Bool": "bool", "String": "str", "Int32List": "tuple of ints",
          "Int64List": "tuple of ints", "FloatList": "tuple of floats", "Shape": "tuple of ints",
          "DataType": "flow.dtype", "Device": "flow.device", "TensorTuple": "tuple of Tensors",
          "Placement": "flow.placement", "Sbp": "flow.sbp", "SbpList": "tuple of flow.sbp"}


def type_name(t: str) -> str:
    return _NAMES.get(t, t)


def _is_int(v: Any) -> bool:
    return isinstance(v, _INTS) and not isinstance(v, _BOOLS)


def _int_list(v: Any, size: int | None) -> Any:
    """A list/tuple of ints; a single int only when the type has a size N (repeated N times)."""
    if _is_int(v):
        return (int(v),) * size if size is not None else NO_MATCH
    if isinstance(v, (list, tuple)) and all(_is_int(e) for e in v):
        return tuple(int(e) for e in v)
    return NO_MATCH


def convert(t: str, v: Any, size: int | None = None) -> Any:
    """Convert ``v`` to type ``t`` or return NO_MATCH."""
    if t == "Tensor":
        return v if isinstance(v, Tensor) else NO_MATCH
    if t == "TensorTuple":
        if isinstance(v, (list, tuple)) and all(isinstance(e, Tensor) for e in v):
            return tuple(v)
        return NO_MATCH
    if t == "Scalar":
        if isinstance(v, (bool, int, float, np.bool_, np.integer, np.floating)):
            return v.item() if isinstance(v, np.generic) else v
        return NO_MATCH
    if t in ("Int32", "Int64"):
        return int(v) if _is_int(v) else NO_MATCH
    if t in ("Float", "Double"):
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, _BOOLS):
            return float(v)
        return NO_MATCH
    if t == "Bool":
        return bool(v) if isinstance(v, _BOOLS) else NO_MATCH
    if t == "String":
        return v if isinstance(v, str) else NO_MATCH
    if t in ("Int32List", "Int64List"):
        return _int_list(v, size)
    if t == "Shape":
        return _int_list(v, None) if not _is_int(v) else NO_MATCH
    if t == "FloatList":
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return (float(v),) * (size or 1)
        if isinstance(v, (list, tuple)) and all(isinstance(e, (int, float)) for e in v):
            return tuple(float(e) for e in v)
        return NO_MATCH
    if t == "DataType":
        if isinstance(v, _dt.dtype):
            return v
        if isinstance(v, (type, np.dtype)):
            try:
                return _dt.as_dtype(v)
            except TypeError:
                return NO_MATCH
        return NO_MATCH
    if t == "Device":
        if isinstance(v, _device):
            return v
        if isinstance(v, str):
            try:
                return _device(v)
            except ValueError:
                return NO_MATCH
        return NO_MATCH
    if t == "Generator":
        from ..random import Generator
        return v if isinstance(v, Generator) else NO_MATCH
    if t == "Placement":
        return v if isinstance(v, _placement) else NO_MATCH
    if t == "Sbp":
        return v if isinstance(v, SbpParallel) else NO_MATCH
    if t == "SbpList":
        if isinstance(v, SbpParallel):
            return (v,)
        if isinstance(v, (list, tuple)) and v and all(isinstance(e, SbpParallel) for e in v):
            return tuple(v)
        return NO_MATCH
    raise AssertionError(f"unknown functional type {t}")
