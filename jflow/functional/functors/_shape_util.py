"""Helpers shared by the functors of the shape-op families (view, join, slicing, rearrange):
PyTorch's dim wrapping (:mod:`jflow._dims`) and error wording."""

from __future__ import annotations

from ..._dims import wrap_dim

__all__ = ["wrap_dim", "in_function"]




def in_function(fname: str, e: ValueError) -> ValueError:
    """An op-level shape error reworded as raised by the function ``fname``."""
    return ValueError(f"{fname}(): {e}")
