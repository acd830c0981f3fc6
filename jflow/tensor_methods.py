"""Tensor operators and op-backed methods, attached once the functional layer is loaded.

Operators call functors directly (no argument parsing: the operand types are known here).
Named methods forward to ``flow._C`` with the tensor as first argument.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from . import dtypes as _dt
from .autograd.grad_mode import is_grad_enabled
from .creation import as_tensor
from .device import device as _device
from .functional import F
from .functional.promotion import assign_inplace, cast
from .functional.registry import FUNCTORS as _FN
from .ops import get as _get_op
from .tensor import Tensor, _wrap

_SCALARS = (bool, int, float, np.bool_, np.integer, np.floating)
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
Tensor.__hash__ = object.__hash__  # defining __eq__ must not make tensors unhashable


def _matmul_ops() -> None:
    """``a @ b`` / ``ndarray @ a`` through ``flow._C.matmul``."""
    fn = F.matmul

    def matmul(self: Tensor, other: Any) -> Any:
        if not isinstance(other, (Tensor, np.ndarray)):
            return NotImplemented
        return fn(self, _operand(other))

    def rmatmul(self: Tensor, other: Any) -> Any:
        if not isinstance(other, np.ndarray):
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
    return op


for _m in ["__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__"]:
    _fname = {"__ifloordiv__": "floor_divide", "__imod__": "remainder", "__ipow__": "pow",
              "__iand__": "bitwise_and", "__ior__": "bitwise_or", "__ixor__": "bitwise_xor"}[_m]
    setattr(Tensor, _m, _assign_result(_fname))


# -- named methods forwarding to flow._C -------------------------------------------------------

def _method(fname: str):
    fn = getattr(F, fname)

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
    return method


for _name in ["add", "sub", "mul", "div", "clamp"]:
    setattr(Tensor, f"{_name}_", _inplace_method(_name))
for _name in ["exp", "log", "sqrt", "abs", "neg", "relu", "sigmoid", "tanh", "floor", "ceil",
              "round", "pow", "fmod", "remainder", "floor_divide", "masked_fill", "scatter",
              "scatter_add", "tril", "triu"]:
    setattr(Tensor, f"{_name}_", _assign_result(_name))


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
            filled = F.broadcast_to(cast(value, self._value.dtype), tuple(self.shape))
            return assign_inplace(self, filled, "fill_")
        value = value.item()
    if not isinstance(value, _SCALARS):
        raise TypeError(f"fill_(): argument 'value' must be a Number, not {type(value).__name__}")
    filled = F.full(tuple(self.shape), value, dtype=self.dtype)
    return assign_inplace(self, filled, "fill_")


def copy_(self: Tensor, src: Any) -> Tensor:
    """Copy ``src`` (broadcast to this shape, cast to this dtype) into this tensor."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    v = cast(src, self._value.dtype)
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
    if kwargs:
        raise TypeError(f"to() got unexpected keyword argument(s) {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, _device):
            device = a
        elif isinstance(a, str) and a.partition(":")[0] in ("cpu", "cuda", "rocm", "tpu"):
            device = a
        else:
            try:
                dtype = _dt.as_dtype(a)
            except TypeError:
                raise TypeError(f"to(): cannot interpret {a!r} as a dtype or a device") from None
    out = self
    if dtype is not None:
        out = F.cast(out, _dt.as_dtype(dtype))
    if device is not None:

        target = _device(device).jax_device()
        v = out._value
        if not isinstance(v, Tracer) and target not in v.devices():
            out = _wrap(jax.device_put(v, target))
    if copy and out is self:  # a new tensor; the immutable value itself needs no copy
        out = _wrap(self._value)
    return out


Tensor.zero_ = zero_
Tensor.fill_ = fill_
Tensor.copy_ = copy_
Tensor.to = to
Tensor.float = lambda self: F.cast(self, _dt.float32)
Tensor.double = lambda self: F.cast(self, _dt.float64)
Tensor.half = lambda self: F.cast(self, _dt.float16)
Tensor.bfloat16 = lambda self: F.cast(self, _dt.bfloat16)
Tensor.long = lambda self: F.cast(self, _dt.int64)
Tensor.int = lambda self: F.cast(self, _dt.int32)
Tensor.short = lambda self: F.cast(self, _dt.int16)
Tensor.char = lambda self: F.cast(self, _dt.int8)
Tensor.byte = lambda self: F.cast(self, _dt.uint8)
Tensor.bool = lambda self: F.cast(self, _dt.bool_)
Tensor.type_as = lambda self, other: F.cast(self, other.dtype)
Tensor.cpu = lambda self: to(self, "cpu")
Tensor.cuda = lambda self, index=0: to(self, f"cuda:{index}")
