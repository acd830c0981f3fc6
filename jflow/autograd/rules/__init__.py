"""Backward rules of jflow's own ops, one module per op family (mirrors ``jflow/ops``)."""

from . import attention, conv, index, loss, math, matmul, nn, norm, reduce, shape  # noqa: F401
