"""Tensor operators and op-backed methods, attached once the functional layer is loaded.

Operators call functors directly (no argument parsing: the operand types are known here).
Named methods forward to ``flow._C`` with the tensor as first argument.
"""

from __future__ import annotations

import types
from collections import namedtuple as _namedtuple
from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from . import dtypes as _dt
from .autograd.grad_mode import is_grad_enabled
from .autograd.graph import rebase_inplace
from .creation import (
    _draw_device,
    _draw_dtype,
    as_tensor,
    bernoulli,
    empty,
    full,
    multinomial,
    ones,
    tensor,
    zeros,
)
from .device import device as _device
from .functional import F
from .functional.functors.math import tensor_alpha
from .functional.promotion import assign_inplace, cast, result_dtype
from .functional.registry import FUNCTORS as _FN
from .memory_format import check_memory_format
from .meta import meta_value
from .ops import get as _get_op
from .sharding.sbp import broadcast as _broadcast
from .tensor import Size, Tensor, _wrap
from .views import as_strided, layout_of, unview

_SCALARS = (bool, int, float, complex, np.bool_, np.integer, np.floating, np.complexfloating)
_neg, _abs = _get_op("neg").apply, _get_op("abs").apply


def _operand(x: Any) -> Any:
    """A NumPy array operand becomes a tensor (dtype kept), as ``torch_tensor + ndarray``."""
    if isinstance(x, np.ndarray):
        return as_tensor(x)
    return x


def _binary(name: str, reflected: bool = False):
    tt = _FN[name]
    ts = _FN[f"Scalar{name}"]
    tr = _FN.get(f"ScalarR{name}")

    if not reflected:
        def op(self: Tensor, other: Any) -> Any:
            if isinstance(other, Tensor):
                return tt(self, other)
            if isinstance(other, _SCALARS):
                return ts(self, other.item() if isinstance(other, np.generic) else other)
            if isinstance(other, np.ndarray):
                return tt(self, _operand(other))
            return NotImplemented
    else:
        def op(self: Tensor, other: Any) -> Any:
            if isinstance(other, _SCALARS):
                return tr(other.item() if isinstance(other, np.generic) else other, self)
            if isinstance(other, np.ndarray):
                return tt(_operand(other), self)
            if isinstance(other, Tensor):  # called directly: t.__radd__(u) is u + t
                return tt(other, self)
            return NotImplemented
    return op


_OPERATORS = {
    "__add__": ("Add", False), "__radd__": ("Add", True), "__sub__": ("Sub", False),
    "__rsub__": ("Sub", True), "__mul__": ("Mul", False), "__rmul__": ("Mul", True),
    "__truediv__": ("Div", False), "__rtruediv__": ("Div", True),
    "__floordiv__": ("FloorDivide", False), "__rfloordiv__": ("FloorDivide", True),
    "__mod__": ("Remainder", False), "__rmod__": ("Remainder", True),
    "__pow__": ("Pow", False), "__rpow__": ("Pow", True),
    "__eq__": ("Eq", False), "__ne__": ("Ne", False), "__lt__": ("Lt", False),
    "__le__": ("Le", False), "__gt__": ("Gt", False), "__ge__": ("Ge", False),
    "__and__": ("BitwiseAnd", False), "__rand__": ("BitwiseAnd", True),
    "__or__": ("BitwiseOr", False), "__ror__": ("BitwiseOr", True),
    "__xor__": ("BitwiseXor", False), "__rxor__": ("BitwiseXor", True),
}
for _m, (_name, _refl) in _OPERATORS.items():
    setattr(Tensor, _m, _binary(_name, _refl))
Tensor.__rdiv__ = Tensor.__rtruediv__  # PyTorch keeps the Python 2 name as an alias
Tensor.__hash__ = object.__hash__  # defining __eq__ must not make tensors unhashable


def _matmul_ops() -> None:
    """``a @ b`` / ``ndarray @ a`` through ``flow._C.matmul``."""
    fn = F.matmul

    def matmul(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, np.ndarray)):
            return NotImplemented
        return fn(self, _operand(other))

    def rmatmul(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, np.ndarray)):  # a Tensor: called directly
            return NotImplemented
        return fn(_operand(other), self)

    def imatmul(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, np.ndarray)):
            return NotImplemented
        return assign_inplace(self, fn(self, _operand(other)), "matmul")

    Tensor.__matmul__, Tensor.__rmatmul__, Tensor.__imatmul__ = matmul, rmatmul, imatmul


_matmul_ops()

# neg and abs take any dtype: their api.yaml entries bind the ops directly (=> op:neg)
Tensor.__neg__ = lambda self: _neg(self)
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: _abs(self)
Tensor.__invert__ = lambda self: _FN["BitwiseNot"](self)


def _inplace(fname: str):
    fn = getattr(F, fname)

    def op(self: Tensor, other: Any) -> Tensor:
        if not isinstance(other, (Tensor, np.ndarray, *_SCALARS)):
            return NotImplemented
        return fn(self, _operand(other), inplace=True)
    return op


for _m, _f in [("__iadd__", "add"), ("__isub__", "sub"), ("__imul__", "mul"),
               ("__itruediv__", "div")]:
    setattr(Tensor, _m, _inplace(_f))


def _assign_result(fname: str):
    fn = getattr(F, fname)

    def op(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        args = tuple(_operand(a) for a in args)
        return assign_inplace(self, fn(self, *args, **kwargs), f"{fname}_")
    op.__name__ = f"{fname}_"
    op.__doc__ = (f"In-place ``{fname}``: ``x.{fname}_(...)`` writes ``x.{fname}(...)`` into "
                  f"``x`` (its version bumps; views of it see the change).")
    return op


for _m in ["__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__"]:
    _fname = {"__ifloordiv__": "floor_divide", "__imod__": "remainder", "__ipow__": "pow",
              "__iand__": "bitwise_and", "__ior__": "bitwise_or", "__ixor__": "bitwise_xor"}[_m]
    setattr(Tensor, _m, _assign_result(_fname))


# -- named methods forwarding to flow._C -------------------------------------------------------

def _method(fname: str):
    fn = getattr(F, fname)
    if isinstance(fn, types.FunctionType) and fn.__name__ == fname:
        return fn  # (the function itself: ``self`` is its first argument; no forwarding frame)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = fname
    method.__doc__ = fn.__doc__
    return method


#: Methods that are exactly ``flow._C.<name>(self, ...)``.
METHODS = [
    "add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum",
    "minimum", "atan2", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
    "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "abs", "neg", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "square", "reciprocal",
    "sign", "floor", "ceil", "round", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "relu",
    "clamp",
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


def _alpha_method(fname: str, inplace: bool):
    """``add``/``sub`` (``inplace``: ``add_``/``sub_``) that also take a 0-d tensor ``alpha``
    (an optimizer's learning rate, a traced input under ``flow.jit``); other calls go to
    ``flow._C`` unchanged."""
    fn = getattr(F, fname)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        if isinstance(kwargs.get("alpha"), Tensor) and len(args) == 1 \
                and set(kwargs) <= {"alpha", "inplace"}:
            other = args[0]
            if isinstance(other, np.generic):
                other = other.item()
            return tensor_alpha(fname, self, _operand(other), kwargs["alpha"],
                                inplace or bool(kwargs.get("inplace", False)))
        if inplace:
            return fn(self, *args, inplace=True, **kwargs)
        return fn(self, *args, **kwargs)
    method.__name__ = f"{fname}_" if inplace else fname
    method.__doc__ = fn.__doc__
    return method


for _name in ("add", "sub"):
    setattr(Tensor, _name, _alpha_method(_name, False))

Tensor.clip = Tensor.clamp
Tensor.negative = Tensor.neg
Tensor.true_divide = Tensor.div
Tensor.multiply = Tensor.mul
Tensor.subtract = Tensor.sub
Tensor.greater = Tensor.gt
Tensor.less = Tensor.lt


def _inplace_method(fname: str):
    fn = getattr(F, fname)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return fn(self, *args, inplace=True, **kwargs)
    method.__name__ = f"{fname}_"
    method.__doc__ = (f"In-place ``{fname}``: ``x.{fname}_(...)`` writes ``x.{fname}(...)`` "
                      f"into ``x`` (its version bumps; views of it see the change).")
    return method


for _name in ["mul", "div", "clamp"]:
    setattr(Tensor, f"{_name}_", _inplace_method(_name))
for _name in ("add", "sub"):
    setattr(Tensor, f"{_name}_", _alpha_method(_name, True))
for _name in ["exp", "log", "sqrt", "abs", "neg", "relu", "sigmoid", "tanh", "floor", "ceil",
              "round", "pow", "fmod", "remainder", "floor_divide", "masked_fill", "scatter",
              "scatter_add", "tril", "triu"]:
    setattr(Tensor, f"{_name}_", _assign_result(_name))

# issue 14 (elementwise math): methods and their in-place forms, as PyTorch's
_MATH14 = ["asin", "acos", "atan", "asinh", "acosh", "atanh", "arcsin", "arccos", "arctan",
           "arcsinh", "arccosh", "arctanh", "sinh", "cosh", "log2", "log10", "exp2", "erfc",
           "erfinv", "lgamma", "digamma", "i0", "sinc", "deg2rad", "rad2deg", "trunc", "fix",
           "frac", "sgn", "absolute", "xlogy", "copysign", "hypot"]
for _name in _MATH14 + ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "logaddexp",
                        "logaddexp2", "float_power"]:
    setattr(Tensor, _name, _method(_name))
for _name in _MATH14 + ["negative"]:
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


def zero_(self: Tensor) -> Tensor:
    """Fill with zeros in place."""
    return fill_(self, 0)


def fill_(self: Tensor, value: Any) -> Tensor:
    """Fill with ``value`` (a number or a 0-d tensor) in place. As PyTorch, the graph is kept:
    a tensor with history still requires grad (a zero gradient reaches its old value), and a
    ``value`` that requires grad gets the sum of this tensor's gradient."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions")
        if value._requires_grad and is_grad_enabled():
            filled = F.broadcast_to(cast(value, self._meta.dtype), tuple(self.shape))
            return assign_inplace(self, filled, "fill_")
        value = value.item()
    if not isinstance(value, _SCALARS):
        raise TypeError(f"fill_(): argument 'value' must be a Number, not {type(value).__name__}")
    filled = F.full(tuple(self.shape), value, dtype=self.dtype,
                    device="meta" if self.is_meta else None)
    return assign_inplace(self, filled, "fill_")


def copy_(self: Tensor, src: Any) -> Tensor:
    """Copy ``src`` (broadcast to this shape, cast to this dtype) into this tensor."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src.is_meta != self.is_meta:  # PyTorch's rules for the meta device (jflow.meta)
        if src.is_meta:
            raise NotImplementedError("copy_(): Cannot copy out of meta tensor; no data! "
                                      "(meta tensors have shape and dtype only)")
        src = src.to("meta")  # into a meta tensor: a no-op on data, checked as a copy
    v = cast(src, self._meta.dtype)
    if tuple(v.shape) != tuple(self.shape):
        v = F.broadcast_to(v, tuple(self.shape))
    return assign_inplace(self, v, "copy_")


def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other_tensor)``.

    Returns ``self`` when neither the dtype nor the device changes (as PyTorch does), unless
    ``copy=True``; in-place ops on a copy never reach the original.
    """
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = bool(kwargs.pop("copy", False))
    kwargs.pop("non_blocking", None)
    # memory_format changes PyTorch's strides, never the values; jflow's layout stays row-major
    check_memory_format("Tensor.to", kwargs.pop("memory_format", None), self.ndim)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword argument(s) {sorted(kwargs)}")
    # PyTorch's positional flags after the target: to(device, dtype, non_blocking, copy),
    # to(dtype, non_blocking, copy), to(other, non_blocking, copy)
    flags = 0
    while flags < len(args) and isinstance(args[len(args) - 1 - flags], (bool, np.bool_)):
        flags += 1
    if flags > 2:
        raise TypeError(f"to(): at most two positional flags (non_blocking, copy), got {flags}")
    if flags:
        if flags == 2:
            copy = bool(args[-1])
        args = args[:len(args) - flags]
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, _device):
            device = a
        elif isinstance(a, str) and a.partition(":")[0] in ("cpu", "cuda", "rocm", "tpu", "meta"):
            device = a
        else:
            try:
                dtype = _dt.as_dtype(a)
            except TypeError:
                raise TypeError(f"to(): cannot interpret {a!r} as a dtype or a device") from None
    out = self
    if dtype is not None:
        out = F.cast(out, _dt.as_dtype(dtype))
    if device is not None and (_device(device).type == "meta" or out.is_meta):
        if not out.is_meta:  # to the meta device: shape and dtype kept, the data dropped
            out = _wrap(meta_value(out._meta.shape, out._meta.dtype))
        elif _device(device).type != "meta":
            raise NotImplementedError(f"Tensor.to(): Cannot copy out of meta tensor; no data! "
                                      f"(to {_device(device)}: use Module.to_empty / "
                                      f"flow.empty_like(t, device=...) to allocate, then load)")
    elif device is not None:
        target = _device(device).jax_device()
        v = out._value
        if not isinstance(v, Tracer) and target not in v.devices():
            out = _wrap(jax.device_put(v, target))
    if copy and out is self:  # a new tensor, with the history (PyTorch differentiates it)
        out = F.clone(self)
    return out


Tensor.zero_ = zero_
Tensor.fill_ = fill_
Tensor.copy_ = copy_
Tensor.to = to
def _caster(name: str, dtype: Any) -> Any:
    def cast_to(self: Tensor, *, memory_format: Any = None) -> Tensor:
        check_memory_format(f"Tensor.{name}", memory_format, self.ndim)
        return F.cast(self, dtype)
    cast_to.__name__ = name
    cast_to.__doc__ = f"``x.{name}()`` is ``x.to({dtype})`` (a copy unless already {dtype})."
    return cast_to


for _name, _dtype in [("float", _dt.float32), ("double", _dt.float64), ("half", _dt.float16),
                      ("bfloat16", _dt.bfloat16), ("long", _dt.int64), ("int", _dt.int32),
                      ("short", _dt.int16), ("char", _dt.int8), ("byte", _dt.uint8),
                      ("bool", _dt.bool_)]:
    setattr(Tensor, _name, _caster(_name, _dtype))


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """This tensor cast to ``other``'s dtype."""
    return F.cast(self, other.dtype)


def cpu(self: Tensor) -> Tensor:
    """This tensor on the CPU (itself if already there)."""
    return to(self, "cpu")


def cuda(self: Tensor, index: int = 0) -> Tensor:
    """This tensor on GPU ``index`` (a clear error when JAX has no GPU backend)."""
    return to(self, f"cuda:{index}")


Tensor.type_as, Tensor.cpu, Tensor.cuda = type_as, cpu, cuda


# -- PyTorch type strings, is_cuda --------------------------------------------------------------

#: PyTorch's tensor type names (``torch.FloatTensor``...) by jflow dtype name.
_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
               "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
               "bool": "BoolTensor"}
_BY_TYPE_NAME = {v: k for k, v in _TYPE_NAMES.items()}
_MODULES = ("torch.", "flow.", "oneflow.", "jflow.")


def _is_cuda(self: Tensor) -> bool:
    """True when the tensor is on a CUDA (GPU) device, as ``torch.Tensor.is_cuda``."""
    return self.device.type == "cuda"


def _parse_type_string(s: str) -> tuple[_dt.dtype, str | None]:
    """``'torch.FloatTensor'`` -> (float32, 'cpu'), ``'torch.cuda.HalfTensor'`` -> (float16,
    'cuda'); a plain dtype name (``'float32'``) -> (dtype, None: the device is kept)."""
    name = s
    for m in _MODULES:
        if name.startswith(m):
            name = name[len(m):]
            break
    cuda = name.startswith("cuda.")
    if cuda:
        name = name[len("cuda."):]
    if name in _BY_TYPE_NAME:
        return _dt.as_dtype(_BY_TYPE_NAME[name]), "cuda" if cuda else "cpu"
    try:
        return _dt.as_dtype(s), None
    except TypeError:
        raise ValueError(f"type(): invalid type: {s!r}") from None


def _has_cuda() -> bool:
    try:
        return bool(jax.local_devices(backend="gpu"))
    except RuntimeError:
        return False


def type_(self: Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """``t.type()``: PyTorch's type string (``'torch.FloatTensor'``, or
    ``'torch.cuda.FloatTensor'`` on a GPU). ``t.type(dtype)``: ``t`` cast to ``dtype`` (a
    dtype, or a type string such as ``'torch.LongTensor'``); ``self`` when nothing changes.

    A type string names a device as in PyTorch (``'torch.FloatTensor'`` is a CPU tensor,
    ``'torch.cuda.FloatTensor'`` a GPU one); without a GPU a ``cuda`` type string only sets
    the dtype (PyTorch would raise).
    """
    kwargs.pop("async", None)
    if kwargs:
        raise TypeError(f"type() got unexpected keyword argument(s) {sorted(kwargs)}")
    if dtype is None:
        name = _TYPE_NAMES[self.dtype.name]
        return f"torch.cuda.{name}" if _is_cuda(self) else f"torch.{name}"
    dev: str | None = None
    if isinstance(dtype, str):
        d, dev = _parse_type_string(dtype)
        if dev == "cuda" and not _has_cuda():
            dev = None
        elif dev is not None and self.device.type == dev:
            dev = None
    else:
        d = _dt.as_dtype(dtype)
    if dev is None:
        return self if d == self.dtype else F.cast(self, d)
    return to(self, dev, d)


Tensor.type = type_
Tensor.is_cuda = property(_is_cuda, doc="True when the tensor is on a CUDA (GPU) device.")


# -- new_* factories -----------------------------------------------------------------------------

def _new_kwargs(self: Tensor, dtype: Any, device: Any) -> dict[str, Any]:
    """dtype and device of a ``new_*`` tensor: ``self``'s unless given."""
    return {"dtype": self.dtype if dtype is None else dtype,
            "device": _draw_device(self) if device is None else device}


def new_zeros(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """Zeros of ``size`` with this tensor's dtype and device (unless given); a plain tensor
    even when ``self`` is an ``nn.Parameter``."""
    return zeros(*size, requires_grad=requires_grad, **_new_kwargs(self, dtype, device))


def new_ones(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    """Ones of ``size`` with this tensor's dtype and device (unless given)."""
    return ones(*size, requires_grad=requires_grad, **_new_kwargs(self, dtype, device))


def new_empty(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False) -> Tensor:
    """``new_zeros`` (jflow has no uninitialised memory)."""
    return empty(*size, requires_grad=requires_grad, **_new_kwargs(self, dtype, device))


def new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """``fill_value`` in ``size`` with this tensor's dtype and device (unless given)."""
    return full(size, fill_value, requires_grad=requires_grad,
                **_new_kwargs(self, dtype, device))


def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """A copy of ``data`` with this tensor's dtype and device (unless given), as
    ``torch.Tensor.new_tensor`` (``int_tensor.new_tensor([1.7])`` is ``[1]``)."""
    return tensor(data, requires_grad=requires_grad, **_new_kwargs(self, dtype, device))


Tensor.new_zeros = new_zeros
Tensor.new_ones = new_ones
Tensor.new_empty = new_empty
Tensor.new_full = new_full
Tensor.new_tensor = new_tensor


# -- in-place random fills -----------------------------------------------------------------------

def _check_floating(self: Tensor, fname: str) -> None:
    if not self.is_floating_point():
        raise RuntimeError(f"{fname}: not implemented for '{_TYPE_NAMES[self.dtype.name][:-6]}' "
                           f"(a floating point tensor is expected)")


def _uniform_like(self: Tensor, generator: Any) -> Tensor:
    """Uniform [0, 1) draws in ``self``'s shape (float64 for float64, else float32)."""
    return F.rand(tuple(self.shape), generator=generator, dtype=_draw_dtype(self),
                  device=_draw_device(self))


def normal_(self: Tensor, mean: Any = 0.0, std: Any = 1.0, *,
            generator: Any = None) -> Tensor:
    """Fill with draws from N(``mean``, ``std``**2) in place (floating tensors)."""
    _check_floating(self, "normal_")
    if isinstance(std, _SCALARS) and std < 0:
        raise RuntimeError(f"normal_ expects std >= 0.0, but found std {std}")
    z = F.randn(tuple(self.shape), generator=generator, dtype=_draw_dtype(self),
                device=_draw_device(self))
    if not (isinstance(std, _SCALARS) and std == 1):
        z = z * std
    if not (isinstance(mean, _SCALARS) and mean == 0):
        z = z + mean
    return assign_inplace(self, cast(z, self._meta.dtype), "normal_")


def uniform_(self: Tensor, a: Any = 0.0, b: Any = 1.0, *, generator: Any = None,
             **kwargs: Any) -> Tensor:
    """Fill with draws from U[``a``, ``b``) in place (floating tensors); PyTorch's keyword
    names ``from=`` / ``to=`` are accepted too."""
    a = kwargs.pop("from", a)
    b = kwargs.pop("to", b)
    if kwargs:
        raise TypeError(f"uniform_() got unexpected keyword argument(s) {sorted(kwargs)}")
    _check_floating(self, "uniform_")
    if isinstance(a, _SCALARS) and isinstance(b, _SCALARS) and a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={a} > to={b}")
    u = _uniform_like(self, generator)
    return assign_inplace(self, cast(u * (b - a) + a, self._meta.dtype), "uniform_")


def exponential_(self: Tensor, lambd: Any = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with draws from Exp(``lambd``) (density ``lambd * exp(-lambd x)``) in place."""
    _check_floating(self, "exponential_")
    if isinstance(lambd, _SCALARS) and not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    u = _uniform_like(self, generator)
    e = F.neg(F.log1p(F.neg(u))) / lambd
    return assign_inplace(self, cast(e, self._meta.dtype), "exponential_")


def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fill with 0/1 in place: 1 with probability ``p`` (a number, or a tensor broadcast to
    this shape). Any dtype, as PyTorch."""
    if isinstance(p, _SCALARS) and not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    if isinstance(p, Tensor) and p.ndim > self.ndim:
        raise RuntimeError(f"bernoulli_: p of shape {list(p.shape)} does not broadcast to "
                           f"{list(self.shape)}")
    out = F.lt(_uniform_like(self, generator), p)
    return assign_inplace(self, cast(out, self._meta.dtype), "bernoulli_")


def _random_top(self: Tensor) -> int:
    """``random_()``'s exclusive upper bound: every integer the dtype holds exactly (2**mantissa
    + 1 for floats, the dtype's maximum for integers; PyTorch's inclusive top is one more,
    drawn with probability ~2**-63, so the difference cannot be observed)."""
    dt = np.dtype(self._meta.dtype)
    if dt == np.bool_:
        return 2
    if dt.kind == "f" or self.dtype is _dt.bfloat16:
        return 2 ** (int(jax.numpy.finfo(self._meta.dtype).nmant) + 1) + 1
    return int(np.iinfo(dt).max)


def random_(self: Tensor, *args: Any, generator: Any = None, **kwargs: Any) -> Tensor:
    """Fill with integers drawn uniformly in place: ``random_()`` over every integer the dtype
    holds exactly, ``random_(to)`` from ``[0, to)``, ``random_(from, to)`` from ``[from, to)``
    (``from=`` / ``to=`` keywords as PyTorch)."""
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments, got {len(args)}")
    lo, hi = (0, args[0]) if len(args) == 1 else (args + (0, None)[len(args):])
    lo = kwargs.pop("from", lo)
    hi = kwargs.pop("to", hi)
    if kwargs:
        raise TypeError(f"random_() got unexpected keyword argument(s) {sorted(kwargs)}")
    if self.is_complex():
        raise RuntimeError("random_: not implemented for complex tensors")
    if hi is None:
        hi = _random_top(self)
    if not lo < hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={lo} >= to={hi}")
    r = F.randint(int(lo), int(hi), tuple(self.shape), generator=generator,
                  dtype=_dt.int64, device=_draw_device(self))
    return assign_inplace(self, cast(r, self._meta.dtype), "random_")


def fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Write ``fill_value`` on the main diagonal in place (PyTorch's ``fill_diagonal_``): a
    2-d tensor, or any rank with all dimensions equal; ``wrap=True`` restarts the diagonal
    every ``columns + 1`` rows of a tall matrix."""
    shape = tuple(self.shape)
    if len(shape) < 2:
        raise RuntimeError(f"fill_diagonal_: dimensions must be larger than 1, got {len(shape)}")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError(f"fill_diagonal_: all dimensions of input must be of equal length, "
                           f"got shape {list(shape)}")
    n = int(np.prod(shape))
    strides = np.cumprod((1,) + shape[:0:-1])[::-1]
    step = int(strides.sum())
    stop = n if (wrap and len(shape) == 2) else min(shape) * step
    mask = np.zeros(n, bool)
    mask[0:min(stop, n):step] = True
    keep = _wrap(jax.numpy.asarray(mask.reshape(shape)))
    if self._global is not None:   # the mask laid out like ``self``, on every device
        keep = keep.to_global(self.placement, [_broadcast] * len(self.sbp))
    out = cast(F.where(keep, fill_value, self), self._meta.dtype)
    return assign_inplace(self, out, "fill_diagonal_")


Tensor.random_ = random_
Tensor.fill_diagonal_ = fill_diagonal_
Tensor.normal_ = normal_
Tensor.uniform_ = uniform_
Tensor.exponential_ = exponential_
Tensor.bernoulli_ = bernoulli_


def _bernoulli(self: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    """0/1 draws with probability ``p`` (default: this tensor's values), its shape."""
    return bernoulli(self, p, generator=generator)


def _multinomial(self: Tensor, num_samples: int, replacement: bool = False, *,
                 generator: Any = None) -> Tensor:
    """Indices drawn from the categorical distribution(s) in this tensor's last dim."""
    return multinomial(self, num_samples, replacement, generator=generator)


Tensor.bernoulli, Tensor.multinomial = _bernoulli, _multinomial


# -- addcmul, addcdiv, lerp --------------------------------------------------------------------

def _scale(t: Tensor, value: Any, fname: str) -> Tensor:
    """``value * t`` in ``t``'s dtype (``value`` takes no part in type promotion, as
    PyTorch's ``value=``); a floating ``value`` is refused for an integral ``t``."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"{fname}(): value must be a number or a 0-d tensor")
        if value.is_floating_point() and not t.is_floating_point():
            raise RuntimeError(f"{fname}(): For integral input tensors, argument value must "
                               f"not be a floating point number.")
        return t * cast(value, t._meta.dtype)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not t.is_floating_point():
        raise RuntimeError(f"{fname}(): For integral input tensors, argument value must not "
                           f"be a floating point number.")
    return t if value == 1 else t * value


def _tensors(fname: str, *ts: Any) -> None:
    for t in ts:
        if not isinstance(t, Tensor):
            raise TypeError(f"{fname}(): expected Tensor arguments, got {type(t).__name__}")


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (broadcast; PyTorch's result dtype of the three
    tensors, ``value`` outside the promotion)."""
    _tensors("addcmul", input, tensor1, tensor2)
    d = result_dtype(input, tensor1, tensor2)
    prod = F.mul(cast(tensor1, d), cast(tensor2, d))
    return F.add(cast(input, d), _scale(prod, value, "addcmul"))


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (broadcast); integer division is refused, as
    in PyTorch."""
    _tensors("addcdiv", input, tensor1, tensor2)
    if not tensor1.is_floating_point() and not tensor2.is_floating_point():
        raise RuntimeError("addcdiv(): Integer division with addcdiv is no longer supported, "
                           "and in a future release addcdiv will perform a true division of "
                           "tensor1 and tensor2.")
    d = result_dtype(input, tensor1, tensor2)
    quot = F.div(cast(tensor1, d), cast(tensor2, d))
    return F.add(cast(input, d), _scale(quot, value, "addcdiv"))


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """``input + weight * (end - input)`` with PyTorch's formula (``end - (end - input) *
    (1 - weight)`` where ``|weight| >= 0.5``, exact at ``weight = 1``). ``input`` and ``end``
    (and a tensor ``weight``) must share one floating dtype, as in PyTorch."""
    _tensors("lerp", input, end)
    if end.dtype != input.dtype:
        raise RuntimeError(f"lerp(): expected dtype {input.dtype} for `end` but got dtype "
                           f"{end.dtype}")
    if not input.is_floating_point():
        raise RuntimeError(f"lerp(): not implemented for {input.dtype} (floating dtypes only)")
    diff = end - input
    if isinstance(weight, Tensor):
        if weight.dtype != input.dtype:
            raise RuntimeError(f"lerp(): expected dtype {input.dtype} for `weight` but got "
                               f"dtype {weight.dtype}")
        return F.where(F.lt(F.abs(weight), 0.5), input + weight * diff,
                       end - diff * (1 - weight))
    if isinstance(weight, np.generic):
        weight = weight.item()
    if not isinstance(weight, _SCALARS):
        raise TypeError(f"lerp(): weight must be a number or a Tensor, not "
                        f"{type(weight).__name__}")
    if abs(weight) < 0.5:
        return input + diff * weight
    return end - diff * (1 - weight)


def addcmul_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """:func:`addcmul` in place."""
    return assign_inplace(self, addcmul(self, tensor1, tensor2, value=value), "addcmul_")


def addcdiv_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """:func:`addcdiv` in place."""
    return assign_inplace(self, addcdiv(self, tensor1, tensor2, value=value), "addcdiv_")


def lerp_(self: Tensor, end: Tensor, weight: Any) -> Tensor:
    """:func:`lerp` in place."""
    return assign_inplace(self, lerp(self, end, weight), "lerp_")


Tensor.addcmul, Tensor.addcdiv, Tensor.lerp = addcmul, addcdiv, lerp
Tensor.addcmul_, Tensor.addcdiv_, Tensor.lerp_ = addcmul_, addcdiv_, lerp_


# issue 14 (nn.functional activations): the activation methods torch.Tensor has
for _name in ("hardshrink", "prelu"):
    setattr(Tensor, _name, _method(_name))


# issue 14 (linear algebra): torch.Tensor's methods of flow.addmm & co., and their in-place forms
for _name in ("addmm", "addmv", "addbmm", "baddbmm", "diag", "diag_embed", "trace", "cross",
              "kron", "inner", "ger", "vdot", "det", "slogdet", "inverse"):
    setattr(Tensor, _name, _method(_name))
for _name in ("addmm", "addmv", "addbmm", "baddbmm"):
    setattr(Tensor, f"{_name}_", _assign_result(_name))


# issue 14 (reductions and search): torch.Tensor's methods of the new reductions
for _name in ("nansum", "nanmean", "count_nonzero", "aminmax", "isclose", "allclose", "equal",
              "cummax", "cummin", "logcumsumexp", "median", "nanmedian", "mode", "kthvalue",
              "quantile", "nanquantile", "histc", "bincount", "unique", "unique_consecutive"):
    setattr(Tensor, _name, _method(_name))
# (torch.Tensor has no searchsorted / bucketize methods: top-level functions only)

# issue 14 (shape and index): torch.Tensor's methods and in-place forms (the in-place ones
# assign the out-of-place result through assign_inplace, so they write through views)
_INDEX14 = ["masked_scatter", "index_add", "index_copy", "index_fill", "index_put"]
for _name in _INDEX14 + ["nonzero", "argwhere", "masked_select", "take", "take_along_dim"]:
    setattr(Tensor, _name, _method(_name))
for _name in _INDEX14:
    setattr(Tensor, f"{_name}_", _assign_result(_name))
for _name in ["repeat_interleave", "fliplr", "flipud", "rot90", "diff"]:
    setattr(Tensor, _name, _method(_name))
Tensor.scatter_reduce = _method("scatter_reduce")
Tensor.scatter_reduce_ = _assign_result("scatter_reduce")
Tensor.narrow_copy = _method("narrow_copy")


# -- issue 14, breadth round 2 -------------------------------------------------------------------
# In-place forms torch.Tensor has (each assigns the out-of-place result through
# assign_inplace: PyTorch's cast rules, views written through, the graph kept), aliases, and
# the small torch.* helpers on dtypes and shapes.
_BREADTH2_INPLACE = ["cos", "sin", "tan", "expm1", "log1p", "rsqrt", "square", "reciprocal",
                     "erf", "sign", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                     "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
                     "bitwise_xor", "bitwise_not", "cumsum", "cumprod", "atan2"]
for _name in _BREADTH2_INPLACE:
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
for _name in ("svd", "qr", "cholesky", "cholesky_solve", "cholesky_inverse", "triangular_solve",
              "lu_solve", "matrix_exp"):
    setattr(Tensor, _name, _method(_name))


def ndimension(self: Tensor) -> int:
    """The number of dimensions (``x.dim()``; PyTorch's legacy name)."""
    return self._meta.ndim


def positive(input: Tensor) -> Tensor:
    """``input`` itself (PyTorch's ``+x``); refused for a bool tensor, as PyTorch."""
    _tensors("positive", input)
    if input._meta.dtype == np.bool_:
        raise RuntimeError("positive(): the `+` operator, with a bool tensor is not supported "
                           "(argument 'input' must not be a bool tensor)")
    return input


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether ``input`` and ``other`` have the same shape."""
    _tensors("is_same_size", input, other)
    return tuple(input.shape) == tuple(other.shape)


def is_nonzero(input: Tensor) -> bool:
    """The truth of a one-element tensor (an error for any other size, as PyTorch)."""
    _tensors("is_nonzero", input)
    n = input.numel()
    if n == 0:
        raise RuntimeError("is_nonzero(): Boolean value of Tensor with no values is ambiguous")
    if n != 1:
        raise RuntimeError("is_nonzero(): Boolean value of Tensor with more than one value is "
                           "ambiguous (argument 'input' must have exactly one element)")
    return bool(input.item())


def is_signed(input: Tensor) -> bool:
    """Whether the dtype is signed (False for bool and uint8)."""
    _tensors("is_signed", input)
    return input._meta.dtype.kind not in "ub"


def is_floating_point(input: Tensor) -> bool:
    """Whether the dtype is a floating-point one (``torch.is_floating_point``)."""
    _tensors("is_floating_point", input)
    return input.is_floating_point()


def numel(input: Tensor) -> int:
    """The number of elements of ``input`` (``torch.numel``)."""
    _tensors("numel", input)
    return input.numel()


def _promotion_operand(fname: str, arg: str, x: Any) -> tuple[int, Any]:
    """(tier, dtype or category) of a ``result_type`` operand: 0 tensor with dims, 1 0-d
    tensor, 2 Python scalar."""
    if isinstance(x, Tensor):
        d = _dt.from_numpy_dtype(x._meta.dtype)
        return (0 if x.ndim else 1), d
    if isinstance(x, _SCALARS):
        return 2, _dt.scalar_category(x)
    raise TypeError(f"{fname}(): argument '{arg}' must be a Tensor or a Number, not "
                    f"{type(x).__name__}")


def result_type(tensor1: Any, tensor2: Any) -> _dt.dtype:
    """The dtype PyTorch's type promotion gives an op on ``tensor1`` and ``tensor2`` (each a
    tensor or a Python number)."""
    tiers: tuple[list, list, list] = ([], [], [])
    for arg, x in (("tensor1", tensor1), ("tensor2", tensor2)):
        tier, v = _promotion_operand("result_type", arg, x)
        tiers[tier].append(v)
    return _dt.result_type(*tiers)


def can_cast(from_: Any, to: Any) -> bool:
    """Whether PyTorch's casting rules allow ``from_`` to ``to`` (no float -> integer, no
    number -> bool; same-category narrowing is allowed)."""
    for arg, d in (("from_", from_), ("to", to)):
        if not isinstance(d, _dt.dtype):
            raise TypeError(f"can_cast(): argument '{arg}' must be a dtype, not "
                            f"{type(d).__name__}")
    return from_.category <= to.category


def broadcast_shapes(*shapes: Any) -> Any:
    """The shape the given shapes broadcast to (each a sequence of ints or an int), as a
    ``flow.Size``; a clear error when they do not broadcast."""
    norm = []
    for k, s in enumerate(shapes):
        if isinstance(s, (int, np.integer)):
            s = (int(s),)
        if not isinstance(s, (tuple, list)) or not all(isinstance(v, (int, np.integer))
                                                       for v in s):
            raise TypeError(f"broadcast_shapes(): shape {k} must be a sequence of ints or an "
                            f"int, got {s!r}")
        norm.append(tuple(int(v) for v in s))
    nd = max((len(s) for s in norm), default=0)
    out = [1] * nd
    for s in norm:
        for i, v in enumerate(s, nd - len(s)):
            if v < 0:
                raise RuntimeError(f"broadcast_shapes(): trying to create a tensor with "
                                   f"negative dimension {v}: {list(s)}")
            if out[i] == 1:
                out[i] = v
            elif v not in (1, out[i]):
                raise RuntimeError(f"broadcast_shapes(): shape mismatch: objects cannot be "
                                   f"broadcast to a single shape ({[list(t) for t in norm]})")
    return Size(out)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Each tensor expanded to the common broadcast shape (views, as PyTorch)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    _tensors("broadcast_tensors", *tensors)
    shape = tuple(broadcast_shapes(*(tuple(t.shape) for t in tensors)))
    return tuple(t if tuple(t.shape) == shape else F.expand(t, shape) for t in tensors)


def _atleast(fname: str, nd: int, tensors: tuple[Any, ...]) -> Any:
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    _tensors(fname, *tensors)
    outs = []
    for t in tensors:
        d = t._meta.ndim
        if d >= nd:
            outs.append(t)
        elif d == 0:
            outs.append(F.reshape(t, (1,) * nd))
        elif d == 1:  # (n,) -> (1, n) -> (1, n, 1), as NumPy / PyTorch
            outs.append(F.reshape(t, (1, t.shape[0]) if nd == 2 else (1, t.shape[0], 1)))
        else:  # 2-d to 3-d: (m, n) -> (m, n, 1)
            outs.append(F.unsqueeze(t, -1))
    return outs[0] if single else tuple(outs)


def atleast_1d(*tensors: Any) -> Any:
    """Each tensor with at least 1 dimension (a 0-d one becomes shape ``(1,)``); one tensor
    in, one out; several (or a list) in, a tuple out."""
    return _atleast("atleast_1d", 1, tensors)


def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least 2 dimensions (``(n,)`` becomes ``(1, n)``)."""
    return _atleast("atleast_2d", 2, tensors)


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least 3 dimensions (``(n,)`` becomes ``(1, n, 1)``, ``(m, n)``
    becomes ``(m, n, 1)``)."""
    return _atleast("atleast_3d", 3, tensors)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """``torch.select``: ``input.select(dim, index)`` (a view without ``dim``)."""
    _tensors("select", input)
    return input.select(dim, index)


def detach(input: Tensor) -> Tensor:
    """``torch.detach``: ``input.detach()`` (shares the value, no history)."""
    _tensors("detach", input)
    return input.detach()


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding the number ``s`` (default dtype: the default float dtype, as
    PyTorch, whatever the number's type)."""
    if isinstance(s, Tensor):
        if s.numel() != 1:
            raise RuntimeError("scalar_tensor(): argument 's' must be a number or a "
                               "one-element tensor")
        s = s.item()
    if not isinstance(s, _SCALARS):
        raise TypeError(f"scalar_tensor(): argument 's' must be a Number, not "
                        f"{type(s).__name__}")
    return full((), s, dtype=_dt.get_default_dtype() if dtype is None else dtype,
                device=device, requires_grad=requires_grad)


def where_method(self: Tensor, condition: Tensor, y: Any) -> Tensor:
    """``x.where(condition, y)`` is ``flow.where(condition, x, y)``."""
    return F.where(condition, self, y)


Tensor.ndimension = ndimension
Tensor.positive = positive
Tensor.is_same_size = is_same_size
Tensor.is_nonzero = is_nonzero
Tensor.is_signed = is_signed
Tensor.where = where_method


def sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """This tensor summed to ``size`` (a shape it broadcasts to): leading dims summed away,
    dims where ``size`` is 1 summed with keepdim, as ``torch.Tensor.sum_to_size``."""
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    shape = tuple(self.shape)
    size = tuple(int(s) for s in size)
    lead = len(shape) - len(size)
    ok = lead >= 0 and all(s in (1, d) for s, d in zip(size, shape[lead:]))
    if not ok:
        raise RuntimeError(f"sum_to_size(): size {list(size)} is not expandable to size "
                           f"{list(shape)} (argument 'size' must broadcast to this tensor)")
    out = self
    if lead:
        out = F.sum(out, list(range(lead)))
    dims = [i for i, (s, d) in enumerate(zip(size, shape[lead:])) if s == 1 and d != 1]
    if dims:
        out = F.sum(out, dims, keepdim=True)
    return out


Tensor.sum_to_size = sum_to_size


def _top_inplace(name: str):
    meth = getattr(Tensor, name)

    def fn(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                            f"{type(input).__name__}")
        return meth(input, *args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``flow.{name}(x, ...)`` is ``x.{name}(...)``: {meth.__doc__ or ''}"
    return fn


#: torch.<name>_ in-place functions: each is the method of the same name.
INPLACE_FUNCTIONS = {n: _top_inplace(n) for n in [
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_",
    "expm1_", "fill_", "fix_", "floor_", "frac_", "i0_", "ldexp_", "log10_", "log1p_",
    "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_",
    "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_",
    "tan_", "tanh_", "trunc_", "xlogy_", "zero_", "addmv_", "index_put_", "detach_"]}


def selu_(input: Tensor) -> Tensor:
    """``torch.selu_``: ``selu`` written into ``input``."""
    _tensors("selu_", input)
    return assign_inplace(input, F.selu(input), "selu_")


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``torch.celu_``: ``celu(input, alpha)`` written into ``input``."""
    _tensors("celu_", input)
    return assign_inplace(input, F.celu(input, alpha), "celu_")


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``torch.threshold_``: ``threshold(input, threshold, value)`` written into ``input``."""
    _tensors("threshold_", input)
    return assign_inplace(input, F.threshold(input, threshold, value), "threshold_")


def rrelu_(input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3.0,
           training: bool = False, generator: Any = None) -> Tensor:
    """``torch.rrelu_``: ``rrelu`` written into ``input``."""
    _tensors("rrelu_", input)
    return F.rrelu(input, lower, upper, training, True, generator=generator)


def fill(input: Tensor, value: Any) -> Tensor:
    """``torch.fill``: a new tensor of ``input``'s shape and dtype filled with ``value`` (a
    number or a 0-d tensor, which gets the gradient's sum)."""
    _tensors("fill", input)
    # the result requires grad when input does (a zero gradient reaches input, as PyTorch's
    # FillBackward), and a 0-d value tensor gets the gradient's sum
    out = fill_(F.clone(input.detach()), value)
    if input.requires_grad and is_grad_enabled():
        out = F.where(flow_true(), out, input)
    return out


def flow_true() -> Tensor:
    """A 0-d bool True (a where() that keeps its first operand and joins the second's graph)."""
    return tensor(True)


INPLACE_FUNCTIONS.update(selu_=selu_, celu_=celu_, threshold_=threshold_, rrelu_=rrelu_)


# -- shifts, gcd / lcm, nextafter, frexp, put, index_reduce: methods, in-place forms, operators
for _name in ("bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "nextafter", "frexp",
              "put", "index_reduce"):
    setattr(Tensor, _name, _method(_name))
for _name in ("bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "nextafter", "put",
              "index_reduce"):
    setattr(Tensor, f"{_name}_", _assign_result(_name))
for _m, (_name, _refl) in {"__lshift__": ("BitwiseLeftShift", False),
                           "__rlshift__": ("BitwiseLeftShift", True),
                           "__rshift__": ("BitwiseRightShift", False),
                           "__rrshift__": ("BitwiseRightShift", True)}.items():
    setattr(Tensor, _m, _binary(_name, _refl))
Tensor.__ilshift__ = _assign_result("bitwise_left_shift")
Tensor.__irshift__ = _assign_result("bitwise_right_shift")
INPLACE_FUNCTIONS.update({n: _top_inplace(n) for n in ("gcd_", "lcm_")})


# -- more in-place random fills (as exponential_: uniform draws, then the inverse CDF) ----------

def cauchy_(self: Tensor, median: Any = 0.0, sigma: Any = 1.0, *,
            generator: Any = None) -> Tensor:
    """Fill with draws from Cauchy(``median``, ``sigma``) in place (floating tensors):
    ``median + sigma * tan(pi (u - 1/2))``."""
    _check_floating(self, "cauchy_")
    if isinstance(sigma, _SCALARS) and not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    u = _uniform_like(self, generator)
    c = F.tan(F.mul(F.sub(u, 0.5), float(np.pi))) * sigma + median
    return assign_inplace(self, cast(c, self._meta.dtype), "cauchy_")


def log_normal_(self: Tensor, mean: Any = 1.0, std: Any = 2.0, *,
                generator: Any = None) -> Tensor:
    """Fill with ``exp(N(mean, std**2))`` draws in place (floating tensors)."""
    _check_floating(self, "log_normal_")
    if isinstance(std, _SCALARS) and not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    z = F.randn(tuple(self.shape), generator=generator, dtype=_draw_dtype(self),
                device=_draw_device(self))
    return assign_inplace(self, cast(F.exp(z * std + mean), self._meta.dtype), "log_normal_")


def geometric_(self: Tensor, p: Any, *, generator: Any = None) -> Tensor:
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...) in
    place: ``ceil(log(1 - u) / log(1 - p))``, at least 1. Any real dtype, as PyTorch."""
    if isinstance(p, _SCALARS) and not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if self.is_complex() or self.dtype is _dt.bool_:
        raise RuntimeError(f"geometric_: not implemented for '{self.dtype}'")
    u = _uniform_like(self, generator)
    k = F.ceil(F.div(F.log1p(F.neg(u)), float(np.log1p(-p))))
    k = F.clamp(k, 1.0, None)
    return assign_inplace(self, cast(k, self._meta.dtype), "geometric_")


Tensor.cauchy_, Tensor.log_normal_, Tensor.geometric_ = cauchy_, log_normal_, geometric_


# -- in-place shape changes (squeeze_ / unsqueeze_ / t_ / transpose_), get_device, unfold -------

def _rebase(self: Tensor, out: Tensor, fname: str) -> Tensor:
    """``self`` takes ``out``'s value and history though its shape differs (``out`` is
    first made a plain tensor: a view of ``self`` would replay from the changed base)."""
    if out._aliases:
        out = unview(out)
    return rebase_inplace(self, out, fname)


def _reshaped_inplace(fname: str, view_fn: Any):
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if self._aliases:
            raise RuntimeError(f"{fname}(): changing the shape of a view in place is not "
                               f"supported in jflow (the view aliases its base); call it on "
                               f"a clone() or use the out-of-place form")
        out = view_fn(self, *args, **kwargs)
        return _rebase(self, out, fname)
    method.__name__ = fname
    method.__doc__ = (f"In place ``{fname[:-1]}``: this tensor takes the new shape (its "
                      f"version bumps, its history continues as PyTorch's).")
    return method


Tensor.squeeze_ = _reshaped_inplace("squeeze_", lambda self, *a, **k: F.squeeze(self, *a, **k))
Tensor.unsqueeze_ = _reshaped_inplace("unsqueeze_",
                                      lambda self, *a, **k: F.unsqueeze(self, *a, **k))
Tensor.transpose_ = _reshaped_inplace("transpose_",
                                      lambda self, *a, **k: F.transpose(self, *a, **k))
Tensor.t_ = _reshaped_inplace("t_", lambda self: F.t(self))


def get_device(self: Tensor) -> int:
    """The device index: -1 on the CPU (as PyTorch), the ordinal on an accelerator."""
    d = self.device
    return -1 if d.type == "cpu" else int(d.index or 0)


def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Every slice of ``size`` elements along ``dimension``, ``step`` apart, as a new last
    dim: a view of this tensor (writes reach it), as ``Tensor.unfold``."""
    nd = self._meta.ndim
    if not (-max(nd, 1) <= dimension < max(nd, 1)):
        raise IndexError(f"unfold(): dimension out of range (expected to be in range of "
                         f"[{-max(nd, 1)}, {max(nd, 1) - 1}], but got {dimension})")
    d = dimension % max(nd, 1)
    lay = layout_of(self)
    sizes, strides = list(lay.sizes), list(lay.strides)
    n = sizes[d] if nd else 1
    if size < 0:
        raise RuntimeError(f"unfold(): size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(f"unfold(): maximum size for tensor at dimension {d} is {n} but "
                           f"size is {size}")
    if step <= 0:
        raise RuntimeError(f"unfold(): step is {step} but must be > 0")
    st = strides[d] if nd else 1
    count = (n - size) // step + 1
    if nd:
        sizes[d], strides[d] = count, st * step
    return as_strided(self, tuple(sizes) + (size,), tuple(strides) + (st,), lay.offset)


Tensor.get_device, Tensor.unfold = get_device, unfold


# -- histogram / histogramdd / unravel_index / gradient (compositions of ops) --------------------

builtins_range = range  # (histogram's keyword ``range`` shadows the builtin inside it)
_HISTOGRAM = _namedtuple("histogram", ["hist", "bin_edges"])
_HISTOGRAMDD = _namedtuple("histogramdd", ["hist", "bin_edges"])

def _hist_range(fname: str, x: Tensor, rng: Any) -> tuple[float, float]:
    """The (leftmost, rightmost) edges: ``range`` or the data's extremes (eager), widened by
    0.5 each way when equal ([0, 1] for no data), as PyTorch."""
    if rng is not None:
        lo, hi = (float(v) for v in rng)
        if lo > hi:
            raise ValueError(f"{fname}(): max must be larger than min, got range ({lo}, {hi})")
    elif x.numel() == 0:
        lo, hi = 0.0, 1.0
    else:
        if isinstance(x._meta, Tracer):
            raise RuntimeError(f"{fname}(): without range= the edges come from the data, "
                               f"which must be concrete (not traced)")
        v = np.asarray(x.detach()._value)
        lo, hi = float(v.min()), float(v.max())
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"{fname}(): range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _bin_of(x: Tensor, edges: Tensor) -> tuple[Tensor, Tensor]:
    """Each value's bin among sorted ``edges`` (the last bin closed on the right) and whether
    it falls inside them."""
    nb = edges.shape[0] - 1
    pos = F.sub(F.searchsorted(edges, x, right=True), 1)
    pos = F.clamp(pos, 0, max(nb - 1, 0))
    inside = F.logical_and(F.ge(x, edges[0]), F.le(x, edges[-1]))
    return pos, inside


def _hist_edges(fname: str, x: Tensor, bins: Any, rng: Any) -> Tensor:
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.shape[0] < 1:
            raise RuntimeError(f"{fname}(): bins tensor should have one dimension and at least "
                               f"1 element, got shape {list(bins.shape)}")
        if bins.dtype != x.dtype:
            raise RuntimeError(f"{fname}(): input tensor and bins tensors should have the same "
                               f"dtype, got {x.dtype} and {bins.dtype}")
        return bins.detach()
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins <= 0:
        raise RuntimeError(f"{fname}(): bins must be a positive int or a 1-d tensor of edges, "
                           f"got {bins!r}")
    lo, hi = _hist_range(fname, x, rng)
    return F.linspace(lo, hi, int(bins) + 1, dtype=x.dtype, device=x.device)


def _hist_input(fname: str, input: Tensor, weight: Any) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{fname}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if not input.is_floating_point():
        raise RuntimeError(f"{fname}(): \"{fname}\" not implemented for '{input.dtype}' (a "
                           f"floating point input is expected)")
    if weight is not None:
        if not isinstance(weight, Tensor) or weight.dtype != input.dtype:
            raise RuntimeError(f"{fname}(): weight must be a tensor of the input's dtype "
                               f"({input.dtype})")


def histogram(input: Tensor, bins: Any = 100, *, range: Any = None,  # noqa: A002
              weight: Tensor | None = None, density: bool = False) -> Any:
    """torch.histogram: counts (or summed ``weight``) of ``input``'s values in ``bins`` equal
    bins over ``range`` (default: the data's extremes) or between the edges of a 1-d ``bins``
    tensor; the last bin includes its right edge, values outside are left out. Returns
    ``(hist, bin_edges)`` in the input's dtype; ``density`` divides by total times width."""
    _hist_input("histogram", input, weight)
    if isinstance(bins, Tensor) and range is not None:
        raise TypeError("histogram(): range= is only accepted with an int number of bins")
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError(f"histogram(): weight should have the same shape as input, got "
                           f"{list(weight.shape)} and {list(input.shape)}")
    edges = _hist_edges("histogram", input, bins, range)
    hist = _histdd([F.reshape(input.detach(), (-1,))], [edges],
                   None if weight is None else F.reshape(weight, (-1,)), density, input.dtype)
    return _HISTOGRAM(hist, edges)


def _histdd(cols: list, edges: list, weight: Any, density: bool, dtype: Any) -> Tensor:
    nbins = [e.shape[0] - 1 for e in edges]
    total = int(np.prod(nbins))
    lin, ok = None, None
    for c, e, nb in zip(cols, edges, nbins):
        pos, inside = _bin_of(c, e)
        lin = pos if lin is None else F.add(F.mul(lin, nb), pos)
        ok = inside if ok is None else F.logical_and(ok, inside)
    n = cols[0].shape[0]
    w = F.full((n,), 1, dtype=dtype) if weight is None else weight
    w = F.where(ok, w, zeros((n,), dtype=dtype)) if n else w
    hist = F.scatter_add(zeros((total,), dtype=dtype), 0, lin, w) if total \
        else zeros((0,), dtype=dtype)
    hist = F.reshape(hist, tuple(nbins))
    if density:
        widths = None
        for k, e in enumerate(edges):
            d = F.sub(e[1:], e[:-1])
            shape = [1] * len(edges)
            shape[k] = nbins[k]
            d = F.reshape(d, tuple(shape))
            widths = d if widths is None else F.mul(widths, d)
        hist = F.div(hist, F.mul(F.sum(hist), widths))
    return hist


def histogramdd(input: Tensor, bins: Any = 10, *, range: Any = None,  # noqa: A002
                weight: Tensor | None = None, density: bool = False) -> Any:
    """torch.histogramdd: a D-dimensional histogram of the points in ``input``'s last dim
    (``(..., D)``); ``bins`` an int, D ints or D 1-d edge tensors; ``range`` 2 D numbers
    (min, max per dim). Returns ``(hist, bin_edges)`` with a list of D edge tensors."""
    _hist_input("histogramdd", input, weight)
    if input.ndim < 1:
        raise RuntimeError("histogramdd(): input should have at least 1 dimension")
    D = input.shape[-1]
    pts = F.reshape(input.detach(), (-1, D))
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        bins = [int(bins)] * D
    bins = list(bins)
    if len(bins) != D:
        raise RuntimeError(f"histogramdd(): expected {D} sequences of bin edges for each "
                           f"dimension, but got {len(bins)}")
    if range is not None:
        range = list(range)
        if len(range) != 2 * D:
            raise RuntimeError(f"histogramdd(): expected range to have {2 * D} elements, got "
                               f"{len(range)}")
    cols = [pts[:, k] for k in builtins_range(D)]
    edges = [_hist_edges("histogramdd", cols[k], bins[k],
                         None if range is None else range[2 * k:2 * k + 2])
             for k in builtins_range(D)]
    w = None
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(f"histogramdd(): weight should have the shape of input without "
                               f"its last dim, {list(input.shape[:-1])}, got "
                               f"{list(weight.shape)}")
        w = F.reshape(weight, (-1,))
    hist = _histdd(cols, edges, w, density, input.dtype)
    return _HISTOGRAMDD(hist, edges)


def unravel_index(indices: Tensor, shape: Any) -> tuple[Tensor, ...]:
    """torch.unravel_index: the coordinates in ``shape`` of flat (row-major) ``indices``, one
    tensor per dim of ``shape``, each of ``indices``' shape (values taken modulo the size,
    as PyTorch: ``-1`` is the last element)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index(): argument 'indices' must be Tensor, not "
                        f"{type(indices).__name__}")
    if indices.dtype.is_floating_point or indices.is_complex() or indices.dtype is _dt.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"unravel_index(): 'shape' cannot have negative values, but got "
                         f"{shape}")
    if any(s == 0 for s in shape) and indices.numel():
        raise ValueError(f"unravel_index(): an index cannot be unravelled into shape {shape} "
                         f"with no elements")
    idx = cast(indices, np.dtype(np.int64))
    out = []
    for s in reversed(shape):
        out.append(F.remainder(idx, s))
        idx = F.floor_divide(idx, s)
    return tuple(reversed(out))


def _spacings(fname: str, input: Tensor, spacing: Any, dims: list) -> list:
    """Per differentiated dim: a float step or a 1-d coordinate tensor."""
    if isinstance(spacing, (int, float, np.integer, np.floating)) and \
            not isinstance(spacing, bool):
        return [float(spacing)] * len(dims)
    if isinstance(spacing, Tensor) and spacing.ndim == 0:
        return [spacing.item()] * len(dims)
    sp = list(spacing)
    if len(sp) == 1 and not isinstance(sp[0], Tensor) and len(dims) != 1:
        return [float(sp[0])] * len(dims)
    if len(sp) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                           f"it's spacing and dim arguments to have the same length, but got "
                           f"a spacing argument of length {len(sp)} and a dim argument of "
                           f"length {len(dims)}.")
    out = []
    for s, d in zip(sp, dims):
        if isinstance(s, Tensor) and s.ndim == 1:
            if s.shape[0] != input.shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same "
                                   f"device and of size {input.shape[d]} along dim {d}, got "
                                   f"{s.shape[0]}")
            out.append(s)
        elif isinstance(s, Tensor):
            out.append(s.item())
        else:
            out.append(float(s))
    return out


def gradient(input: Tensor, *, spacing: Any = 1, dim: Any = None,
             edge_order: int = 1) -> tuple[Tensor, ...]:
    """torch.gradient: the derivative along each of ``dim`` (all by default) by second-order
    central differences inside and first- or second-order (``edge_order``) one-sided ones at
    the ends; ``spacing`` a step (per dim) or the coordinates (1-d tensors, one per dim).
    Integer inputs give the default float dtype. One tensor per dim."""
    if not isinstance(input, Tensor):
        raise TypeError(f"gradient(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, got "
                           f"{edge_order}")
    nd = input.ndim
    if spacing is None:
        spacing = 1
    if dim is None:
        dims = list(builtins_range(nd))
        if not isinstance(spacing, (int, float, Tensor)) and len(list(spacing)) not in (1, nd):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, "
                               f"or a list of length equal to 'self.dim() = {nd}', since dim "
                               f"argument was not given, but got a list of length "
                               f"{len(list(spacing))}")
    else:
        dims = [dim] if isinstance(dim, (int, np.integer)) else list(dim)
        dims = [d + nd if d < 0 else d for d in dims]
        if any(not 0 <= d < nd for d in dims):
            raise IndexError(f"gradient(): dim {dim} out of range for a {nd}-d tensor")
    if dim is None and not isinstance(spacing, (int, float, Tensor)) and \
            len(list(spacing)) == 1 and nd != 1:
        spacing = [list(spacing)[0]] * nd if not isinstance(list(spacing)[0], Tensor) \
            else spacing
    x = input if input.is_floating_point() or input.is_complex() else \
        cast(input, _dt.get_default_dtype().np)
    steps = _spacings("gradient", input, spacing, dims)
    return tuple(_grad_along(x, d, s, edge_order) for d, s in zip(dims, steps))


def _grad_along(x: Tensor, d: int, h: Any, edge_order: int) -> Tensor:
    n = x.shape[d]
    if n < edge_order + 1:
        raise RuntimeError("torch.gradient expected each dimension size to be at least "
                           "edge_order+1")

    def sl(a: int, b: int) -> Tensor:
        return F.narrow(x, d, a, b - a)

    def along(v: Tensor) -> Tensor:  # a 1-d coefficient tensor broadcast along dim d
        shape = [1] * x.ndim
        shape[d] = v.shape[0]
        return F.reshape(cast(v, x._meta.dtype), tuple(shape))

    if not isinstance(h, Tensor):  # uniform steps
        mid = F.div(F.sub(sl(2, n), sl(0, n - 2)), 2.0 * h) if n > 2 else None
        if edge_order == 1:
            first = F.div(F.sub(sl(1, 2), sl(0, 1)), h)
            last = F.div(F.sub(sl(n - 1, n), sl(n - 2, n - 1)), h)
        else:
            first = F.div(F.add(F.add(F.mul(sl(0, 1), -1.5), F.mul(sl(1, 2), 2.0)),
                                F.mul(sl(2, 3), -0.5)), h)
            last = F.div(F.add(F.add(F.mul(sl(n - 3, n - 2), 0.5),
                                     F.mul(sl(n - 2, n - 1), -2.0)),
                               F.mul(sl(n - 1, n), 1.5)), h)
    else:  # coordinates: NumPy's / PyTorch's non-uniform formulas
        c = h.detach()
        dx = F.sub(c[1:], c[:-1])
        mid = None
        if n > 2:
            hl, hr = dx[:-1], dx[1:]
            a = F.neg(F.div(hr, F.mul(hl, F.add(hl, hr))))
            b = F.div(F.sub(hr, hl), F.mul(hl, hr))
            cc = F.div(hl, F.mul(hr, F.add(hl, hr)))
            mid = F.add(F.add(F.mul(along(a), sl(0, n - 2)), F.mul(along(b), sl(1, n - 1))),
                        F.mul(along(cc), sl(2, n)))
        if edge_order == 1:
            first = F.div(F.sub(sl(1, 2), sl(0, 1)), along(dx[:1]))
            last = F.div(F.sub(sl(n - 1, n), sl(n - 2, n - 1)), along(dx[-1:]))
        else:
            h1, h2 = dx[0:1], dx[1:2]
            a = F.neg(F.div(F.add(F.mul(h1, 2.0), h2), F.mul(h1, F.add(h1, h2))))
            b = F.div(F.add(h1, h2), F.mul(h1, h2))
            cc = F.neg(F.div(h1, F.mul(h2, F.add(h1, h2))))
            first = F.add(F.add(F.mul(along(a), sl(0, 1)), F.mul(along(b), sl(1, 2))),
                          F.mul(along(cc), sl(2, 3)))
            h1, h2 = dx[-2:-1], dx[-1:]
            a = F.div(h2, F.mul(h1, F.add(h1, h2)))
            b = F.neg(F.div(F.add(h2, h1), F.mul(h1, h2)))
            cc = F.div(F.add(F.mul(h2, 2.0), h1), F.mul(h2, F.add(h1, h2)))
            last = F.add(F.add(F.mul(along(a), sl(n - 3, n - 2)),
                               F.mul(along(b), sl(n - 2, n - 1))),
                         F.mul(along(cc), sl(n - 1, n)))
    parts = [first] + ([mid] if mid is not None else []) + [last]
    return F.cat(parts, d)


# -- short-time Fourier transforms (functors/fft.py): Tensor.stft / Tensor.istft -------------
for _name in ("stft", "istft"):
    setattr(Tensor, _name, _method(_name))


# -- special functions (ops/special.py): the incomplete gamma methods, as PyTorch's ----------
for _name in ("igamma", "igammac"):
    setattr(Tensor, _name, _method(_name))
    setattr(Tensor, f"{_name}_", _assign_result(_name))
