"""Python's operators on ``Tensor``: arithmetic, comparisons, bitwise and shift operators with
their reflected and in-place forms, ``@``, and the unary ``-x``, ``+x``, ``abs(x)``, ``~x``.

Operators call functors directly (no argument parsing: the operand types are known here), so
``a + b`` costs one functor call; ``__eq__`` keeps tensors hashable by identity. Imported first
by the package: nothing later assigns these names.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..functional import F
from ..functional.promotion import assign_inplace
from ..functional.registry import FUNCTORS as _FN
from ..ops import get as _get_op
from ..tensor import Tensor
from ._forward import _assign_result, _binary, _inplace, _operand

_neg, _abs = _get_op("neg").apply, _get_op("abs").apply


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


for _m, _f in [("__iadd__", "add"), ("__isub__", "sub"), ("__imul__", "mul"),
               ("__itruediv__", "div")]:
    setattr(Tensor, _m, _inplace(_f))


for _m in ["__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__"]:
    _fname = {"__ifloordiv__": "floor_divide", "__imod__": "remainder", "__ipow__": "pow",
              "__iand__": "bitwise_and", "__ior__": "bitwise_or", "__ixor__": "bitwise_xor"}[_m]
    setattr(Tensor, _m, _assign_result(_fname))

# shift operators (their named methods and in-place forms are in methods.py)
for _m, (_name, _refl) in {"__lshift__": ("BitwiseLeftShift", False),
                           "__rlshift__": ("BitwiseLeftShift", True),
                           "__rshift__": ("BitwiseRightShift", False),
                           "__rrshift__": ("BitwiseRightShift", True)}.items():
    setattr(Tensor, _m, _binary(_name, _refl))
Tensor.__ilshift__ = _assign_result("bitwise_left_shift")
Tensor.__irshift__ = _assign_result("bitwise_right_shift")
