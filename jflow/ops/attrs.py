"""Typed op attributes (OneFlow's AttrType): validation and normalisation.

Attr values become JAX primitive params, so every normaliser returns a hashable value of one
canonical type (lists become tuples, dtypes become NumPy dtypes that kernels can use directly).

**Static or dynamic.** A static attr is part of the executable: each new value compiles a new
one. A *dynamic* attr (scalar types only; float/double by default, int opt-in, see
:class:`jflow.ops.Attr`) reaches the executable as a runtime scalar operand: the primitive's
param holds the marker :data:`DYNAMIC` and the value is a trailing argument of the bind, so a
new value costs no compile. ``None`` (an optional attr left out) stays static.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .. import dtypes as _dtypes

__all__ = ["ATTR_TYPES", "normalize_attr", "REQUIRED", "DYNAMIC", "DYNAMIC_TYPES",
           "DYNAMIC_BY_DEFAULT", "scalar_as", "normalize_dynamic"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()


class _Dynamic:
    """The param value of a dynamic attr whose value is a runtime operand of the bind."""

    def __repr__(self) -> str:
        return "DYNAMIC"

    def __reduce__(self) -> str:
        return "DYNAMIC"


DYNAMIC: Any = _Dynamic()

#: attr types that may be dynamic (scalars that only enter arithmetic)
DYNAMIC_TYPES = frozenset({"float", "double", "int32", "int64"})
#: attr types dynamic unless declared ``static=True``
DYNAMIC_BY_DEFAULT = frozenset({"float", "double"})

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


_PLAIN = frozenset({float, int, bool, type(None), str})


def normalize_dynamic(attr_type: str, value: Any, optional: bool) -> Any:
    """:func:`normalize_attr` for a dynamic attr, which may also be a 0-d array: a concrete
    one becomes a Python number (cacheable); a tracer (the attr traced by ``jax.jit``) is
    kept as it is, after a check of its shape and dtype kind."""
    if value.__class__ in _PLAIN:  # the common case, first (isinstance of jax.Array is slow)
        return normalize_attr(attr_type, value, optional)
    if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer):
        if value.shape != ():
            raise TypeError(f"expected a scalar, got an array of shape {value.shape}")
        value = value.item()
    elif isinstance(value, jax.core.Tracer):
        kinds = "fiu" if attr_type in ("float", "double") else "iu"
        if value.shape != () or np.dtype(value.dtype).kind not in kinds:
            raise TypeError(f"expected a traced {attr_type} scalar, got "
                            f"{np.dtype(value.dtype).name}{list(value.shape)}")
        return value
    return normalize_attr(attr_type, value, optional)


_NARROW = frozenset({np.dtype(jnp.float16), np.dtype(jnp.bfloat16)})


def scalar_as(value: Any, dtype: Any) -> Any:
    """``value`` (a Python number or a 0-d array: a dynamic attr) as a 0-d array of ``dtype``,
    rounded exactly as ``jnp.asarray(python_float, dtype)`` rounds it (once, from the double).

    Why: XLA converts float64 to float16 through float32 (two roundings), so a dynamic attr
    cast with a plain ``astype`` could differ in the last bit from the same value given as a
    static Python float. Here float64 goes to float32 rounded *to odd* (truncate, set the last
    bit when inexact), after which the one rounding to float16/bfloat16 is the correct one.
    """
    dt = np.dtype(dtype)
    if not isinstance(value, jax.Array):
        return jnp.asarray(value, dt)
    v = value
    if dt in _NARROW and v.dtype == np.float64:
        r = lax.convert_element_type(v, np.float32)
        back = lax.convert_element_type(r, np.float64)
        bits = lax.bitcast_convert_type(r, np.uint32)
        bits = jnp.where(jnp.abs(back) > jnp.abs(v), bits - np.uint32(1), bits)  # toward 0
        bits = jnp.where(back != v, bits | np.uint32(1), bits)  # inexact: odd
        v = lax.bitcast_convert_type(bits, np.float32)
    return lax.convert_element_type(v, dt)
