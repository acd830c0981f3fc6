"""Backward rules of the norm ops (``jflow/ops/norm.py``)."""

from __future__ import annotations
