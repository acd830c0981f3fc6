"""Backward rules of the loss ops (``jflow/ops/loss.py``)."""

from __future__ import annotations
