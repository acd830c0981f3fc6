"""Cost estimates an op declares (``define_op(..., flops=...)``): the multiply-adds of one call,
from its input and output avals. Only the heavy families declare one — what lazy mode weighs
when a ``backward()`` decides to run a heavy forward first (``lazy_mode.segment.SPLIT_FLOPS``);
elementwise work is not counted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["contraction", "convolution", "transposed_convolution", "attention"]


def contraction(ins: Sequence[Any], outs: Sequence[Any]) -> int:
    """A product of two operands: the geometric mean of the operands' and the result's sizes
    — m·k·n for a matrix product, exact too for a batched operand against a shared one
    (``x @ w.T``); a batch on both operands is over-counted by its square root."""
    if len(ins) < 2:
        return 0
    return int((ins[0].size * ins[1].size * outs[0].size) ** 0.5)


def convolution(ins: Sequence[Any], outs: Sequence[Any]) -> int:
    """Each output element reads one filter's worth of weights (the weight, second input,
    per output channel, its first dim)."""
    w = ins[1]
    return outs[0].size * (w.size // max(w.shape[0], 1)) if w.ndim else 0


def attention(ins: Sequence[Any], outs: Sequence[Any]) -> int:
    """Queries x keys x feature size, twice (scores, then the weighted values)."""
    q, k = ins[0], ins[1]
    return 2 * q.size * k.shape[-2] if k.ndim >= 2 else 0


def transposed_convolution(ins: Sequence[Any], outs: Sequence[Any]) -> int:
    """Each input element scatters one filter's worth of weights (the weight
    ``(Cin, Cout / groups, k...)`` per input channel)."""
    w = ins[1]
    return ins[0].size * (w.size // max(w.shape[0], 1)) if w.ndim else 0
