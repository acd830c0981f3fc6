"""Backward rules of jflow's own ops, one module per op family (mirrors ``jflow/ops``)."""

from . import conv, index, loss, math, matmul, nn, norm, reduce, shape  # noqa: F401
