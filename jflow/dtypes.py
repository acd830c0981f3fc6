"""jflow dtypes (``flow.float32`` ...) and PyTorch's type-promotion rules.

A :class:`dtype` wraps a NumPy dtype (what JAX arrays carry). Promotion follows PyTorch:
categories bool < integer < floating < complex; within a category the wider type wins; uint8
with a signed type goes to the next signed type that holds both; float16 with bfloat16 is
float32; a complex type with a wider float becomes the complex type of that width
(complex64 + float64 -> complex128, as PyTorch).
:func:`result_type` adds PyTorch's three priority tiers: dimensioned tensors, zero-dim
tensors, and Python scalars ("wrapped numbers").
"""

from __future__ import annotations

import builtins

import ml_dtypes
import numpy as np

__all__ = [
    "dtype", "bool_", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
    "float32", "float64", "complex64", "complex128", "all_dtypes",
    "uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "float8_e8m0fnu", "limited_dtypes",
    "as_dtype", "promote_types",
    "result_type",
    "get_default_dtype", "set_default_dtype", "scalar_category", "finfo", "iinfo",
]

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type. Compare with ``==``; ``flow.float32.is_floating_point``."""

    __slots__ = ("name", "np", "category", "itemsize", "_hash")

    def __init__(self, name: str, np_dtype: np.dtype, category: int) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category
        self.itemsize = self.np.itemsize
        self._hash = hash(("jflow.dtype", name))

    @property
    def is_floating_point(self) -> builtins.bool:
        """Whether this is a floating-point dtype."""
        return self.category == _FLOAT

    @property
    def is_complex(self) -> builtins.bool:
        """Whether this is a complex dtype (complex64, complex128)."""
        return self.category == _COMPLEX

    @property
    def is_signed(self) -> builtins.bool:
        """Whether values can be negative (False only for ``bool`` and ``uint8``)."""
        return self.name not in ("bool", "uint8", "uint16", "uint32", "uint64")

    def __repr__(self) -> str:
        return f"flow.{self.name}"

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> builtins.bool:
        return self is other

    def __reduce__(self):
        return (as_dtype, (self.name,))


bool_ = dtype("bool", np.bool_, _BOOL)
uint8 = dtype("uint8", np.uint8, _INT)
int8 = dtype("int8", np.int8, _INT)
int16 = dtype("int16", np.int16, _INT)
int32 = dtype("int32", np.int32, _INT)
int64 = dtype("int64", np.int64, _INT)
float16 = dtype("float16", np.float16, _FLOAT)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, _FLOAT)
float32 = dtype("float32", np.float32, _FLOAT)
float64 = dtype("float64", np.float64, _FLOAT)
complex64 = dtype("complex64", np.complex64, _COMPLEX)
complex128 = dtype("complex128", np.complex128, _COMPLEX)

all_dtypes = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
              complex64, complex128)

# -- limited-support dtypes (PyTorch's "shell" dtypes) ------------------------------------------
# uint16/32/64 and float8 exist, as in PyTorch, for creating, casting, storing and loading
# tensors; like PyTorch they take no part in type promotion (mixing one with another dtype
# raises). They are not in ``all_dtypes`` (the dtypes every op supports).
uint16 = dtype("uint16", np.uint16, _INT)
uint32 = dtype("uint32", np.uint32, _INT)
uint64 = dtype("uint64", np.uint64, _INT)
float8_e4m3fn = dtype("float8_e4m3fn", ml_dtypes.float8_e4m3fn, _FLOAT)
float8_e5m2 = dtype("float8_e5m2", ml_dtypes.float8_e5m2, _FLOAT)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, _FLOAT)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, _FLOAT)
float8_e8m0fnu = dtype("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, _FLOAT)
limited_dtypes = (uint16, uint32, uint64, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz,
                  float8_e5m2fnuz, float8_e8m0fnu)

_BY_NP = {d.np: d for d in all_dtypes + limited_dtypes}
#: the NumPy dtypes jflow has (keys: NumPy dtypes, values: jflow's), read-only by convention
BY_NUMPY_DTYPE = _BY_NP
_BY_NAME = {d.name: d for d in all_dtypes + limited_dtypes}
_ALIASES = {"float": float32, "double": float64, "half": float16, "long": int64, "int": int32,
            "short": int16, "char": int8, "byte": uint8, "cfloat": complex64,
            "cdouble": complex128}
_PY_TYPES = {builtins.bool: bool_, builtins.int: int64, builtins.float: float64,
             builtins.complex: complex128}

_default_float = float32


def get_default_dtype() -> dtype:
    """The dtype of floating-point tensors made without one (``float32`` unless set)."""
    return _default_float


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype (float32 unless changed), as ``torch.set_default_dtype``."""
    global _default_float
    d = as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype: expected a floating dtype, got {d}")
    _default_float = d


def as_dtype(x: object) -> dtype:
    """Convert a jflow dtype, NumPy dtype, dtype name, or Python type to a jflow dtype.

    Python types map as in PyTorch: ``float`` -> float64, ``int`` -> int64, ``bool`` -> bool
    (``torch.zeros(2, dtype=float)`` is float64 whatever the default dtype is).
    """
    if type(x) is dtype:
        return x  # type: ignore[return-value]
    if isinstance(x, str):
        d = _BY_NAME.get(x) or _ALIASES.get(x)
        if d is not None:
            return d
    elif isinstance(x, type) and x in _PY_TYPES:
        return _PY_TYPES[x]
    elif x is not None:
        try:
            d = _BY_NP.get(np.dtype(x))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            d = None
        if d is not None:
            return d
    raise TypeError(f"unsupported dtype {x!r}; jflow supports "
                    + ", ".join(d.name for d in all_dtypes))


def from_numpy_dtype(np_dtype: np.dtype) -> dtype:
    """The jflow dtype of a NumPy dtype (fast path used for every tensor's ``.dtype``)."""
    d = _BY_NP.get(np_dtype)
    if d is None:
        raise TypeError(f"jflow does not support the NumPy dtype {np_dtype}")
    return d


def complex_of(d: dtype) -> dtype:
    """The complex dtype whose parts have float dtype ``d`` (float64 -> complex128, float32 and
    bfloat16 -> complex64, as PyTorch). float16's is PyTorch's complex32, which jflow does not
    have: a TypeError, not a quietly wider result."""
    if d is float16:
        raise TypeError("complex32 (the complex type of float16, PyTorch's result here) is not "
                        "supported by jflow; cast the float16 operand to float32 first")
    return complex128 if d is float64 else complex64


def real_of(d: dtype) -> dtype:
    """The float dtype of a complex dtype's parts (``d`` itself if it is not complex)."""
    if d is complex128:
        return float64
    return float32 if d is complex64 else d


def default_complex() -> dtype:
    """The dtype of a complex tensor made from Python complex numbers: the complex type of
    the default float dtype (complex64 unless the default is float64), as PyTorch."""
    return complex_of(_default_float)


def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if _COMPLEX in (a.category, b.category):
        c, o = (a, b) if a.category == _COMPLEX else (b, a)
        if o.category == _COMPLEX:
            return a if a.itemsize > b.itemsize else b
        return complex128 if o is float64 else c
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == _BOOL:
        return a
    if a.category == _FLOAT:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize > b.itemsize else b
    # integers: uint8 is the only unsigned type
    if uint8 in (a, b):
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    return a if a.itemsize > b.itemsize else b


class _PromoteTable(dict):
    """(a, b) -> promoted dtype; a pair with a limited-support dtype raises as in PyTorch."""

    def __missing__(self, key: tuple[dtype, dtype]) -> dtype:
        a, b = key
        if a is b:
            return a
        odd = a if a in limited_dtypes else b
        raise TypeError(f"Promotion for {a} and {b} is not supported: {odd} is a "
                        f"limited-support dtype (as in PyTorch); cast explicitly")


_PROMOTE = _PromoteTable({(a, b): _promote_pair(a, b) for a in all_dtypes for b in all_dtypes})


def promote_types(a: dtype, b: dtype) -> dtype:
    """PyTorch's ``promote_types`` for two dtypes."""
    return _PROMOTE[(as_dtype(a), as_dtype(b))]


def scalar_category(value: object) -> int:
    """Category of a Python / NumPy scalar: 0 bool, 1 integer, 2 floating, 3 complex."""
    if isinstance(value, (builtins.bool, np.bool_)):
        return _BOOL
    if isinstance(value, (builtins.int, np.integer)):
        return _INT
    if isinstance(value, (builtins.complex, np.complexfloating)):
        return _COMPLEX
    return _FLOAT


def _scalar_dtype(category: int) -> dtype:
    return (bool_, int64, _default_float, default_complex())[category]


def _lower_tier_wins(higher: dtype | None, lower: dtype) -> dtype:
    """A lower tier's dtype of a higher category decides, except that a complex one over a
    floating higher tier keeps that tier's width (float64 tensor * 1j -> complex128)."""
    if higher is not None and lower.category == _COMPLEX and higher.category == _FLOAT:
        return complex_of(higher)
    return lower


def result_type(dims: list[dtype], zero_dims: list[dtype], scalars: list[int]) -> dtype:
    """PyTorch's result type from three tiers of operands.

    ``dims``: dtypes of tensors with ndim > 0; ``zero_dims``: of 0-dim tensors; ``scalars``:
    categories of Python scalars. A lower tier only decides when its category is higher
    than every higher tier's.
    """
    result: dtype | None = None
    for tier in (dims, zero_dims):
        if not tier:
            continue
        t = tier[0]
        for d in tier[1:]:
            t = _PROMOTE[(t, d)]
        if result is None or t.category > result.category:
            result = _lower_tier_wins(result, t)
    if scalars:
        cat = max(scalars)
        if result is None or cat > result.category:
            result = _lower_tier_wins(result, _scalar_dtype(cat))
    if result is None:
        raise ValueError("result_type needs at least one operand")
    return result


class finfo:
    """``flow.finfo(dtype)``: machine limits of a floating dtype, as ``torch.finfo`` (the
    default dtype when none is given). Attributes, Python floats: ``eps``, ``max``, ``min``,
    ``tiny`` (= ``smallest_normal``), ``resolution``; ``bits`` (int), ``dtype`` (its name)."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type: object = None) -> None:  # noqa: A002  (PyTorch's name)
        d = _default_float if type is None else as_dtype(type)
        if not d.is_floating_point:
            raise TypeError(f"flow.finfo() requires a floating point dtype, got {d}; use "
                            f"flow.iinfo for integers")
        info = ml_dtypes.finfo(d.np)  # NumPy's finfo, extended to bfloat16
        self.bits: builtins.int = builtins.int(info.bits)
        self.eps: builtins.float = builtins.float(info.eps)
        self.max: builtins.float = builtins.float(info.max)
        self.min: builtins.float = builtins.float(info.min)
        self.tiny: builtins.float = builtins.float(info.smallest_normal)
        self.smallest_normal: builtins.float = self.tiny
        self.resolution: builtins.float = 10.0 ** -builtins.int(info.precision)  # as PyTorch
        self.dtype: str = d.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """``flow.iinfo(dtype)``: the limits of an integer dtype, as ``torch.iinfo``: ``bits``,
    ``max``, ``min`` (Python ints), ``dtype`` (its name)."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type: object) -> None:  # noqa: A002  (PyTorch's name)
        d = as_dtype(type)
        if d.category != _INT:
            raise TypeError(f"flow.iinfo() requires an integer dtype, got {d}"
                            + ("; use flow.finfo for floating dtypes"
                               if d.is_floating_point else ""))
        info = np.iinfo(d.np)
        self.bits: builtins.int = builtins.int(info.bits)
        self.max: builtins.int = builtins.int(info.max)
        self.min: builtins.int = builtins.int(info.min)
        self.dtype: str = d.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, bits={self.bits}, dtype={self.dtype})"
