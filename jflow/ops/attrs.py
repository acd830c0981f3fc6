"""Typed op attributes (OneFlow's AttrType): validation and normalisation.

Attr values become JAX primitive params, so every normaliser returns a hashable value of one
canonical type (lists become tuples, dtypes become NumPy dtypes that kernels can use directly).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes as _dtypes

__all__ = ["ATTR_TYPES", "normalize_attr", "REQUIRED"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

_INT32 = (-(2**31), 2**31 - 1)


def _int(v: Any) -> int:
    if isinstance(v, (bool, np.bool_)):
        raise TypeError("expected an int, got a bool")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"expected an int, got {type(v).__name__}") from None


def _int32(v: Any) -> int:
    i = _int(v)
    if not _INT32[0] <= i <= _INT32[1]:
        raise ValueError(f"{i} does not fit in int32")
    return i


def _bool(v: Any) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    raise TypeError(f"expected a bool, got {type(v).__name__}")


def _float(v: Any) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"expected a float, got {type(v).__name__}")
    return float(v)


def _string(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"expected a str, got {type(v).__name__}")
    return v


def _dtype(v: Any) -> np.dtype:
    if v is None:  # np.dtype(None) is float64: never let None pass as a dtype
        raise TypeError("expected a dtype, got None")
    return _dtypes.as_dtype(v).np


def _list_of(elem: Callable[[Any], Any]) -> Callable[[Any], tuple]:
    def norm(v: Any) -> tuple:
        if isinstance(v, (str, bytes)) or not hasattr(v, "__iter__"):
            raise TypeError(f"expected a list, got {type(v).__name__}")
        return tuple(elem(e) for e in v)
    return norm


def _shape(v: Any) -> tuple[int, ...]:
    return _list_of(_int)(v)


ATTR_TYPES: dict[str, Callable[[Any], Any]] = {
    "int32": _int32,
    "int64": _int,
    "bool": _bool,
    "float": _float,
    "double": _float,
    "string": _string,
    "shape": _shape,
    "dtype": _dtype,
    "int32_list": _list_of(_int32),
    "int64_list": _list_of(_int),
    "float_list": _list_of(_float),
    "bool_list": _list_of(_bool),
    "string_list": _list_of(_string),
    "shape_list": _list_of(_shape),
    "dtype_list": _list_of(_dtype),
}


def normalize_attr(attr_type: str, value: Any, optional: bool) -> Any:
    """Check ``value`` against ``attr_type`` and return its canonical hashable form."""
    if value is None and optional:
        return None
    return ATTR_TYPES[attr_type](value)
