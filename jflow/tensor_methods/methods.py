"""The named ``Tensor`` methods that forward to ``flow._C``, their in-place forms and aliases:
the lists, in one place.

A name in a list becomes ``Tensor.<name>`` (``_method``: ``flow._C.<name>(self, ...)``) or
``Tensor.<name>_`` (``_assign_result`` / ``_inplace_method``); aliases are assigned from the
method they copy, so they come after it. The few hand-written methods here replace a list entry
(``clone`` with ``memory_format=``, ``add``/``sub`` with a tensor ``alpha``), swap the
argument order (``polygamma``, ``where``) or read metadata (``ndimension``). Later
assignments override earlier ones, so the order of this file is part of its meaning; methods
needing more than a forward are in the package's other modules.
"""

from __future__ import annotations

from typing import Any

from ..functional import F
from ..functional.promotion import assign_inplace
from ..memory_format import check_memory_format
from ..ops.math import UnaryFunction, derive_unary_parts
from ..tensor import Tensor
from ._forward import _alpha_method, _assign_result, _inplace_method, _method


def _unary_methods(u: UnaryFunction) -> None:
    """``Tensor.<name>`` and ``Tensor.<name>_`` of a declared unary function
    (``ops.math.unary_function``: exp, expm1, sinc ...). A name Tensor already has is
    refused: a declaration never replaces a method silently."""
    for attr in (u.name, f"{u.name}_"):
        if hasattr(Tensor, attr):
            raise ValueError(f"unary_function('{u.name}'): Tensor.{attr} already exists")
    setattr(Tensor, u.name, _method(u.name))
    setattr(Tensor, f"{u.name}_", _assign_result(u.name))
    _DERIVED.add(u.name)


_DERIVED: set[str] = set()


def _forget_unary_methods(name: str) -> None:
    if name in _DERIVED:
        _DERIVED.discard(name)
        delattr(Tensor, name)
        delattr(Tensor, f"{name}_")


derive_unary_parts(_unary_methods, _forget_unary_methods)

#: Methods that are exactly ``flow._C.<name>(self, ...)`` (besides the derived ones above).
METHODS = [
    "add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum",
    "minimum", "atan2", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
    "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "abs", "neg", "square", "sign", "relu", "clamp",
    # reductions and scans
    "sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std",
    "logsumexp", "any", "all", "norm", "cumsum", "cumprod",
    # matrix products, gather/scatter, sorting, softmax
    "matmul", "mm", "bmm", "dot", "mv", "outer", "gather", "scatter", "scatter_add",
    "index_select", "masked_fill", "sort", "argsort", "topk", "softmax", "log_softmax",
    # shape ops (varargs forms such as reshape/permute live in tensor_indexing.py)
    "flatten", "unflatten", "squeeze", "unsqueeze", "transpose", "swapaxes", "swapdims",
    "movedim", "t", "broadcast_to", "split", "chunk", "unbind", "narrow", "roll", "tril",
    "triu", "clone",
]
for _name in METHODS:
    setattr(Tensor, _name, _method(_name))


def clone(input: Any, *, memory_format: Any = None) -> Any:  # noqa: A002  (PyTorch's names)
    """``torch.clone``: a copy with the same values (and history); ``memory_format`` only
    picks PyTorch's strides, which jflow's row-major arrays do not have."""
    if not isinstance(input, Tensor):
        raise TypeError(f"clone(): argument 'input' must be Tensor, not {type(input).__name__}")
    check_memory_format("clone", memory_format, input.ndim)
    return F.clone(input)


Tensor.clone = clone  # memory_format= (checked; jflow arrays are row-major)


for _name in ("add", "sub"):
    setattr(Tensor, _name, _alpha_method(_name, False))

Tensor.clip = Tensor.clamp
Tensor.negative = Tensor.neg
Tensor.true_divide = Tensor.div
Tensor.multiply = Tensor.mul
Tensor.subtract = Tensor.sub
Tensor.greater = Tensor.gt
Tensor.less = Tensor.lt


for _name in ["mul", "div", "clamp"]:
    setattr(Tensor, f"{_name}_", _inplace_method(_name))
for _name in ("add", "sub"):
    setattr(Tensor, f"{_name}_", _alpha_method(_name, True))
for _name in ["abs", "neg", "relu", "pow", "fmod", "remainder", "floor_divide", "masked_fill",
              "scatter", "scatter_add", "tril", "triu"]:
    setattr(Tensor, f"{_name}_", _assign_result(_name))

# elementwise math: methods and their in-place forms, as PyTorch's (aliases of the derived
# unary functions, and the functions written by hand)
_ELEMENTWISE_MATH = [
    "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "fix", "frac", "sgn",
    "absolute", "xlogy", "copysign", "hypot"]
for _name in _ELEMENTWISE_MATH + ["isnan", "isinf", "isfinite", "isposinf", "isneginf",
                                  "logaddexp", "logaddexp2", "float_power"]:
    setattr(Tensor, _name, _method(_name))
for _name in _ELEMENTWISE_MATH + ["negative"]:
    setattr(Tensor, f"{_name}_", _assign_result(_name))
for _name in ["nan_to_num", "float_power", "clamp_min", "clamp_max", "clip"]:
    setattr(Tensor, f"{_name}_", _inplace_method(_name))
for _name in ["nan_to_num", "clamp_min", "clamp_max"]:
    setattr(Tensor, _name, _method(_name))
Tensor.true_divide_, Tensor.multiply_ = Tensor.div_, Tensor.mul_
Tensor.subtract_ = Tensor.sub_


def polygamma(self: Tensor, n: int) -> Tensor:
    """``x.polygamma(n)`` is ``flow.polygamma(n, x)`` (PyTorch's method order)."""
    return F.polygamma(n, self)


def polygamma_(self: Tensor, n: int) -> Tensor:
    """In-place ``polygamma``: ``x.polygamma_(n)`` writes ``flow.polygamma(n, x)`` into x."""
    return assign_inplace(self, F.polygamma(n, self), "polygamma_")


Tensor.polygamma, Tensor.polygamma_ = polygamma, polygamma_


# nn.functional activations: the activation methods torch.Tensor has
for _name in ("hardshrink", "prelu"):
    setattr(Tensor, _name, _method(_name))


# linear algebra: torch.Tensor's methods of flow.addmm & co., and their in-place forms
for _name in ("addmm", "addmv", "addbmm", "baddbmm", "diag", "diag_embed", "trace", "cross",
              "kron", "inner", "ger", "vdot", "det", "slogdet", "inverse"):
    setattr(Tensor, _name, _method(_name))
for _name in ("addmm", "addmv", "addbmm", "baddbmm"):
    setattr(Tensor, f"{_name}_", _assign_result(_name))


# reductions and search: torch.Tensor's methods of the reductions, comparisons and counts
for _name in ("nansum", "nanmean", "count_nonzero", "aminmax", "isclose", "allclose", "equal",
              "cummax", "cummin", "logcumsumexp", "median", "nanmedian", "mode", "kthvalue",
              "quantile", "nanquantile", "histc", "bincount", "unique", "unique_consecutive"):
    setattr(Tensor, _name, _method(_name))
# (torch.Tensor has no searchsorted / bucketize methods: top-level functions only)

# shape and index: torch.Tensor's methods and in-place forms (the in-place ones
# assign the out-of-place result through assign_inplace, so they write through views)
_INDEX_WRITES = ["masked_scatter", "index_add", "index_copy", "index_fill", "index_put"]
for _name in _INDEX_WRITES + ["nonzero", "argwhere", "masked_select", "take", "take_along_dim"]:
    setattr(Tensor, _name, _method(_name))
for _name in _INDEX_WRITES:
    setattr(Tensor, f"{_name}_", _assign_result(_name))
for _name in ["repeat_interleave", "fliplr", "flipud", "rot90", "diff"]:
    setattr(Tensor, _name, _method(_name))
Tensor.scatter_reduce = _method("scatter_reduce")
Tensor.scatter_reduce_ = _assign_result("scatter_reduce")
Tensor.narrow_copy = _method("narrow_copy")


# -- more in-place forms, aliases and methods ------------------------------------------------
# (each in-place form assigns the out-of-place result through assign_inplace: PyTorch's
# cast rules, views written through, the graph kept)
_MORE_INPLACE = ["square", "sign", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                 "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
                 "bitwise_not", "cumsum", "cumprod", "atan2"]
for _name in _MORE_INPLACE:
    setattr(Tensor, f"{_name}_", _assign_result(_name))
Tensor.arctan2, Tensor.arctan2_ = Tensor.atan2, Tensor.atan2_
Tensor.greater_equal, Tensor.greater_equal_ = Tensor.ge, Tensor.ge_
Tensor.less_equal, Tensor.less_equal_ = Tensor.le, Tensor.le_
Tensor.not_equal, Tensor.not_equal_ = Tensor.ne, Tensor.ne_
Tensor.greater_, Tensor.less_ = Tensor.gt_, Tensor.lt_
Tensor.divide, Tensor.divide_ = Tensor.div, Tensor.div_
Tensor.moveaxis = Tensor.movedim
for _name in ("fmax", "fmin", "heaviside", "ldexp", "logit", "signbit", "dist", "cov",
              "corrcoef", "logdet", "addr", "adjoint", "mvlgamma", "renorm", "ravel", "msort",
              "diagflat", "matrix_power", "pinverse", "tensor_split", "hsplit", "vsplit",
              "dsplit", "split_with_sizes", "select_scatter", "slice_scatter",
              "diagonal_scatter"):
    setattr(Tensor, _name, _method(_name))
for _name in ("heaviside", "ldexp", "logit", "addr", "renorm", "mvlgamma"):
    setattr(Tensor, f"{_name}_", _assign_result(_name))
# linear algebra: PyTorch's older torch.* factorizations and solves as methods
for _name in ("svd", "qr", "geqrf", "cholesky", "cholesky_solve", "cholesky_inverse",
              "triangular_solve", "lu_solve", "matrix_exp"):
    setattr(Tensor, _name, _method(_name))


def ndimension(self: Tensor) -> int:
    """The number of dimensions (``x.dim()``; PyTorch's legacy name)."""
    return self._meta.ndim


def where_method(self: Tensor, condition: Tensor, y: Any) -> Tensor:
    """``x.where(condition, y)`` is ``flow.where(condition, x, y)``."""
    return F.where(condition, self, y)


Tensor.ndimension = ndimension
Tensor.where = where_method


# -- shifts, gcd / lcm, nextafter, frexp, put, index_reduce: methods and in-place forms
# (the shift operators are in operators.py)
for _name in ("bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "nextafter", "frexp",
              "put", "index_reduce"):
    setattr(Tensor, _name, _method(_name))
for _name in ("bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "nextafter", "put",
              "index_reduce"):
    setattr(Tensor, f"{_name}_", _assign_result(_name))


# -- short-time Fourier transforms (functors/fft.py): Tensor.stft / Tensor.istft -------------
for _name in ("stft", "istft"):
    setattr(Tensor, _name, _method(_name))


# -- special functions (ops/special.py): the incomplete gamma methods, as PyTorch's ----------
for _name in ("igamma", "igammac"):
    setattr(Tensor, _name, _method(_name))
    setattr(Tensor, f"{_name}_", _assign_result(_name))
