"""``apply_`` / ``map_`` / ``map2_``: a Python callable on each element, written back in place,
as PyTorch's CPU-only methods: the callable gets Python numbers (``float`` for floating
tensors, ``int``, ``bool``, ``complex``) in row-major order, and its results are converted to
this tensor's dtype by PyTorch's rules (integers truncate floats toward zero and refuse what
they cannot hold, except that an unsigned type wraps negative integers down to ``-max``).
Tensors that require grad are refused, as in PyTorch; the write goes through
``assign_inplace`` (the version bumps, views of this tensor and the base of a view see it).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..creation import as_tensor
from ..functional.promotion import assign_inplace
from ..tensor import Tensor

__all__ = ["apply_", "map_", "map2_"]

_NOT_REAL = (complex, np.complexfloating, str, bytes)


def _check_self(self: Tensor, fname: str, *others: Tensor) -> None:
    if any(t.requires_grad for t in (self, *others)):
        raise RuntimeError(f"Can't call {fname}() on Variable that requires grad. Use "
                           f"var.detach().{fname}() instead.")
    if self.device.type not in ("cpu", "meta"):
        raise TypeError(f"{fname} is only implemented on CPU tensors")
    if self._global is not None:
        raise RuntimeError(f"{fname}(): runs a Python callable on a local tensor's values; "
                           f"call it on to_local()")


def _other(self: Tensor, t: Any, fname: str, what: str) -> Tensor:
    """``t`` checked (a tensor of ``self``'s dtype) and broadcast to ``self``'s shape."""
    if not isinstance(t, Tensor):
        raise TypeError(f"{fname}(): argument '{what}' must be Tensor, not {type(t).__name__}")
    if t.dtype != self.dtype:
        arg = "'other'" if fname == "map_" else f"argument '{what}'"
        raise TypeError(f"{fname}: expected {self.type()} for {arg} (got {t.type()})")
    try:
        return t.expand_as(self)
    except ValueError as e:  # (PyTorch's error type)
        raise RuntimeError(f"{fname}(): '{what}' of shape {list(t.shape)} does not broadcast "
                           f"to this tensor's shape {list(self.shape)}: {e}") from None


def _elements(t: Tensor, fname: str) -> list:
    """``t``'s values as Python numbers, row-major."""
    a = np.asarray(t._concrete(fname))
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        a = a.astype(np.float64)
    return a.reshape(-1).tolist()


def _not_int(fname: str, r: Any, d: _dt.dtype) -> TypeError:
    return TypeError(f"{fname}(): '{type(r).__name__}' object cannot be interpreted as an "
                     f"integer (the callable's result, for a {d} tensor)")


def _not_real(fname: str, r: Any, d: _dt.dtype) -> TypeError:
    return TypeError(f"{fname}(): must be real number, not {type(r).__name__} (the "
                     f"callable's result, for a {d} tensor)")


def _converter(d: _dt.dtype, fname: str) -> Callable[[Any], Any]:
    """Python result -> a value of ``d``, with PyTorch's checks: a number (``bool``, ``int``,
    ``float``, ``complex`` or a NumPy one), or an object with ``__float__`` / ``__index__``
    (a one-element tensor) where a real / integer value is wanted."""
    name = d.name
    if name == "bool":
        def to_bool(r: Any) -> bool:
            if not isinstance(r, numbers.Number):
                raise _not_int(fname, r, d)
            return bool(r)
        return to_bool
    if d.is_complex:
        def to_complex(r: Any) -> complex:
            if not isinstance(r, numbers.Number):
                raise _not_real(fname, r, d)
            return complex(r)
        return to_complex
    if d.is_floating_point:
        def to_float(r: Any) -> float:
            if isinstance(r, _NOT_REAL) or not (isinstance(r, numbers.Number)
                                                or hasattr(r, "__float__")):
                raise _not_real(fname, r, d)
            return float(r)
        return to_float
    info = np.iinfo(d.np)
    lo = -int(info.max) if info.min == 0 else int(info.min)

    def to_int(r: Any) -> int:
        if isinstance(r, (int, np.integer)) or (
                not isinstance(r, numbers.Number) and hasattr(r, "__index__")):
            v = int(r)  # (an integer: an unsigned type wraps it down to -max)
            ok = lo <= v <= int(info.max)
        elif isinstance(r, numbers.Real) or (
                not isinstance(r, (numbers.Number, *_NOT_REAL)) and hasattr(r, "__float__")):
            f = float(r)  # (a float must lie in the type's range, NaN does not; truncated)
            ok = int(info.min) <= f <= int(info.max)
            v = int(f) if ok else 0
        else:
            raise _not_int(fname, r, d)
        if not ok:
            raise RuntimeError(f"{fname}(): value cannot be converted to type {name} without "
                               f"overflow")
        return v % (int(info.max) + 1) if v < 0 and info.min == 0 else v
    return to_int


def _write(self: Tensor, results: list, fname: str) -> Tensor:
    convert = _converter(self.dtype, fname)
    vals = [convert(r) for r in results]
    target = self.dtype.np
    with np.errstate(over="ignore"):  # (a result out of range is inf, as PyTorch)
        arr = np.asarray(vals, dtype=object if not vals else None)
        if target.itemsize == 2 and self.dtype.is_floating_point:
            arr = arr.astype(np.float32)  # (PyTorch's half types round from float)
        arr = arr.astype(target)
    out = as_tensor(arr.reshape(tuple(self.shape)), device=self.device)
    return assign_inplace(self, out, fname)


def apply_(self: Tensor, callable: Callable[[Any], Any]) -> Tensor:  # noqa: A002
    """Each element ``x`` becomes ``callable(x)`` (see the module); returns this tensor."""
    _check_self(self, "apply_")
    if self.is_meta:
        return self
    return _write(self, [callable(v) for v in _elements(self, "apply_")], "apply_")


def map_(self: Tensor, tensor: Tensor, callable: Callable[[Any, Any], Any]) -> Tensor:  # noqa: A002
    """Each element ``a`` becomes ``callable(a, b)``, ``b`` the matching element of ``tensor``
    (same dtype, broadcast to this tensor's shape); returns this tensor."""
    other = _other(self, tensor, "map_", "other")
    _check_self(self, "map_", tensor)
    if self.is_meta:
        return self
    a, b = _elements(self, "map_"), _elements(other, "map_")
    return _write(self, [callable(x, y) for x, y in zip(a, b)], "map_")


def map2_(self: Tensor, x: Tensor, y: Tensor, callable: Callable[[Any, Any, Any], Any]  # noqa: A002
          ) -> Tensor:
    """Each element ``a`` becomes ``callable(a, b, c)`` with the matching elements of ``x``
    and ``y`` (same dtype, broadcast to this tensor's shape); returns this tensor."""
    xs, ys = _other(self, x, "map2_", "x"), _other(self, y, "map2_", "y")
    _check_self(self, "map2_", x, y)
    if self.is_meta:
        return self
    a, b, c = (_elements(t, "map2_") for t in (self, xs, ys))
    return _write(self, [callable(p, q, r) for p, q, r in zip(a, b, c)], "map2_")


Tensor.apply_ = apply_  # type: ignore[attr-defined]
Tensor.map_ = map_  # type: ignore[attr-defined]
Tensor.map2_ = map2_  # type: ignore[attr-defined]
