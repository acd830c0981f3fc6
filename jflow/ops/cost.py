"""Cost estimates an op declares (``define_op(..., flops=...)``): the multiply-adds of one call,
from its input and output avals. Only the heavy families declare one. Two readers: lazy mode
weighs them when a ``backward()`` decides to run a heavy forward first
(``lazy_mode.segment.SPLIT_FLOPS``), and the whole-step SBP planner (``sharding/plan.py``)
calls them on each candidate signature's *local* shard shapes, so an estimate must scale
with the shapes it is given (a split operand shrinks it) — elementwise work, uncounted
here, the planner charges by bytes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["contraction", "convolution", "transposed_convolution", "attention"]


def contraction(ins: Sequence[Any], outs: Sequence[Any]) -> int:
    """A product of two operands: the geometric mean of the operands' and the result's sizes
    — m·k·n for a matrix product, exact too for a batched operand against a shared one
    (``x @ w.T``). When both operands carry batch dims that broadcast to the result's
    (``(..., m, k) @ (..., k, n)``, attention's score and value products), the product of
    the sizes holds the batch once too often, and is divided by it: still m·k·n per batch
    element. Exactness matters beyond lazy mode's threshold: the SBP planner compares the
    estimate on local shards (a batch split over devices must shrink it by the devices,
    not by their power 1.5)."""
    if len(ins) < 2:
        return 0
    a, b, out = ins[0], ins[1], outs[0]
    prod = a.size * b.size * out.size
    if a.ndim >= 3 and b.ndim >= 3 and out.ndim >= 3:
        batch_a, batch_b = tuple(a.shape[:-2]), tuple(b.shape[:-2])
        batch = tuple(out.shape[:-2])
        try:
            broadcast = np.broadcast_shapes(batch_a, batch_b) == batch
        except ValueError:
            broadcast = False
        if broadcast:
            prod = prod * math.prod(batch) // max(math.prod(batch_a) * math.prod(batch_b), 1)
    return int(prod ** 0.5)


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
