"""Backward rules of the matmul ops (``jflow/ops/matmul.py``)."""

from __future__ import annotations
