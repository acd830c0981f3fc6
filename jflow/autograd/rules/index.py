"""Backward rules of the index ops (``jflow/ops/index.py``)."""

from __future__ import annotations
