"""Shared logical shape+dtype inference functions (OneFlow's InferLogicalTensorDesc).

Each returns ``jax.ShapeDtypeStruct`` descriptions, or raises ``TypeError`` (dtype) /
``ValueError`` (shape) with a message the registry prefixes with the op name. Ops are
dtype-strict: promotion is the functional layer's job, so mismatched dtypes are an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jax
import numpy as np

__all__ = ["desc", "FLOAT", "INT", "BOOL", "NUMBER", "INTEGRAL", "COMPLEX", "FLOAT_C", "NUMBER_C",
           "ANY_C", "check_dtype", "same_as_input",
           "broadcast_shapes", "broadcast_binary", "normalize_axis", "normalize_axes",
           "reduce_shape"]

_K = {"f": "float", "i": "int", "u": "int", "b": "bool", "V": "float", "c": "complex"}


def desc(shape: Iterable[int], dtype: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(tuple(int(s) for s in shape), np.dtype(dtype))


def kind(dtype: Any) -> str:
    """'float' | 'int' | 'bool' | 'complex' for a NumPy dtype (bfloat16 counts as float)."""
    d = np.dtype(dtype)
    if d.name == "bfloat16":
        return "float"
    return _K.get(d.kind, d.kind)


FLOAT = frozenset({"float"})
INT = frozenset({"int"})
BOOL = frozenset({"bool"})
INTEGRAL = frozenset({"int", "bool"})
NUMBER = frozenset({"float", "int"})
ANY = frozenset({"float", "int", "bool"})
# the sets of ops that also take complex values (complex64 / complex128); every other
# op refuses complex inputs with a clear error
COMPLEX = frozenset({"complex"})
FLOAT_C = FLOAT | COMPLEX
NUMBER_C = NUMBER | COMPLEX
ANY_C = ANY | COMPLEX
_NAMES = {FLOAT: "a floating", INT: "an integer", BOOL: "a bool", INTEGRAL: "an integer or bool",
          NUMBER: "a numeric (non-bool)", ANY: "a real (non-complex)", COMPLEX: "a complex",
          FLOAT_C: "a floating or complex", NUMBER_C: "a numeric (non-bool)", ANY_C: "any"}


def check_dtype(aval: Any, allowed: frozenset[str], arg: str = "input") -> None:
    if kind(aval.dtype) not in allowed:
        raise TypeError(f"{arg} must have {_NAMES.get(allowed, str(set(allowed)))} dtype, "
                        f"got {np.dtype(aval.dtype).name}")


def same_as_input(allowed: frozenset[str] = ANY, out_dtype: Any = None) -> Callable[..., Any]:
    """Output has the input's shape and dtype (or ``out_dtype``)."""
    def infer(x: Any, **attrs: Any) -> jax.ShapeDtypeStruct:
        check_dtype(x, allowed, "input")
        return desc(x.shape, x.dtype if out_dtype is None else out_dtype)
    return infer


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """NumPy broadcasting, with an error naming both shapes."""
    nd = max((len(s) for s in shapes), default=0)
    out = [1] * nd
    for s in shapes:
        for i, d in enumerate(s):
            j = nd - len(s) + i
            if out[j] == 1:
                out[j] = d
            elif d != 1 and d != out[j]:
                raise ValueError("shapes " + ", ".join(str(tuple(x)) for x in shapes)
                                 + " cannot be broadcast together")
    return tuple(out)


def broadcast_binary(allowed: frozenset[str] = ANY, out_dtype: Any = None) -> Callable[..., Any]:
    """Two same-dtype inputs broadcast together; output dtype = input dtype or ``out_dtype``."""
    def infer(x: Any, y: Any, **attrs: Any) -> jax.ShapeDtypeStruct:
        if np.dtype(x.dtype) != np.dtype(y.dtype):
            raise TypeError(f"inputs must have the same dtype (promotion happens in the "
                            f"functional layer), got {np.dtype(x.dtype).name} and "
                            f"{np.dtype(y.dtype).name}")
        check_dtype(x, allowed, "input")
        return desc(broadcast_shapes(x.shape, y.shape), x.dtype if out_dtype is None else out_dtype)
    return infer


def normalize_axis(axis: int, ndim: int, name: str = "dim") -> int:
    n = max(ndim, 1)
    if not -n <= axis < n:
        raise ValueError(f"{name} {axis} is out of range for a {ndim}-d input "
                         f"(expected to be in [{-n}, {n - 1}])")
    return axis % n


def normalize_axes(axes: Sequence[int] | None, ndim: int, name: str = "dim") -> tuple[int, ...]:
    """Sorted unique non-negative axes; ``None`` or ``()`` means all axes."""
    if not axes:
        return tuple(range(ndim))
    out = sorted({normalize_axis(a, ndim, name) for a in axes})
    if len(out) != len(axes):
        raise ValueError(f"{name} {tuple(axes)} repeats an axis")
    return tuple(a for a in out if a < max(ndim, 1) and (ndim > 0))


def reduce_shape(shape: Sequence[int], axes: tuple[int, ...], keepdim: bool) -> tuple[int, ...]:
    if keepdim:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)
