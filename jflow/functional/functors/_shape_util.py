"""Helpers shared by the functors of the shape-op families (view, join, slicing, rearrange):
PyTorch's dim wrapping and error wording."""

from __future__ import annotations

__all__ = ["wrap_dim", "in_function"]


def wrap_dim(fname: str, dim: int, ndim: int, extra: int = 0) -> int:
    """``dim`` normalised for a tensor of ``ndim`` dims (``extra`` = 1 where one past the end
    is valid, as for unsqueeze / stack); IndexError as PyTorch's "Dimension out of range"."""
    n = max(ndim + extra, 1)
    if not -n <= dim < n:
        raise IndexError(f"{fname}(): dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim % n


def in_function(fname: str, e: ValueError) -> ValueError:
    """An op-level shape error reworded as raised by the function ``fname``."""
    return ValueError(f"{fname}(): {e}")
