"""Backward rules of jflow's own ops, one module per op family (mirrors ``jflow/ops``)."""

from . import index, math, matmul, nn, reduce, shape  # noqa: F401
