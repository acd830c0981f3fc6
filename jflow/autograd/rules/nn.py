"""Backward rules of the nn ops (``jflow/ops/nn.py``)."""

from __future__ import annotations
