"""``WrappedNumber``: a Python number that a compiled or fused step takes as an input.

An optimizer's learning rate is a Python float in its parameter group. Eagerly,
``lr / bias_correction`` with a bfloat16 0-d tensor is bfloat16 (a Python number takes the
tensor's dtype: PyTorch's "wrapped number" tier). A step traced into one function (an eager
fused step, lazy mode's one node, ``nn.Graph`` / ``flow.jit``) takes the rate as an *input*
instead, so a scheduler's new value does not retrace; as a plain 0-d float tensor it would
win that promotion (float32 over bfloat16) and round differently from the eager step.

A ``WrappedNumber`` is that input: a 0-d float64 tensor (a Python float's precision) that
promotes as a Python number (:func:`jflow.functional.promotion.result_dtype` puts it in the
scalar tier), and whose arithmetic with Python numbers or other wrapped numbers stays a
wrapped float64 number (``1 - lr * wd`` as Python computes it). With a real tensor it is
cast to the tensor's dtype, as a Python float is. (Only where XLA converts float64 to a
16-bit float it rounds through float32, as PyTorch converts a double too; a value within
2**-24 of a bfloat16 half-way point may then differ in its last bit from NumPy's direct
rounding of the Python float.)
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor, new_tensor

__all__ = ["WrappedNumber", "wrapped_number"]


class WrappedNumber(Tensor):
    """A 0-d tensor that promotes and computes as the Python number it stands for."""

    __slots__ = ()


def wrapped_number(value: Any) -> WrappedNumber:
    """``value`` (a 0-d float64 array or tracer) as a :class:`WrappedNumber`."""
    return new_tensor(WrappedNumber, value)


_NUMBERS = (int, float, WrappedNumber)


def _number_op(name: str) -> Any:
    def op(self: WrappedNumber, other: Any) -> Any:
        out = getattr(Tensor, name)(self, other)
        if other.__class__ in _NUMBERS and out.__class__ is Tensor:
            out.__class__ = WrappedNumber  # (number op number: a number, as in Python)
        return out
    op.__name__ = name
    return op


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__pow__", "__rpow__"):
    setattr(WrappedNumber, _name, _number_op(_name))


def _neg(self: WrappedNumber) -> WrappedNumber:
    out = Tensor.__neg__(self)
    out.__class__ = WrappedNumber
    return out


WrappedNumber.__neg__ = _neg  # type: ignore[assignment]
