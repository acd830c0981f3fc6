"""PyTorch's dim wrapping, in one place: a ``dim`` argument normalised against a tensor's
rank, or PyTorch's IndexError ("Dimension out of range (expected to be in range of [-2, 1],
but got 2)"), named by the function that took it.

A 0-d tensor accepts ``dim`` -1 and 0, as PyTorch's ``maybe_wrap_dim`` does; functions that
refuse 0-d inputs altogether say so themselves before wrapping.
"""

from __future__ import annotations

__all__ = ["wrap_dim"]


def wrap_dim(fname: str, dim: int, ndim: int, extra: int = 0, arg: str = "dim") -> int:
    """``dim`` in ``[0, ndim + extra)`` (``extra`` = 1 where one past the last dim is valid,
    as for ``unsqueeze`` / ``stack``); else IndexError naming ``fname()`` (and ``arg`` when
    it is not ``dim``)."""
    n = max(ndim + extra, 1)
    if not -n <= dim < n:
        what = "" if arg == "dim" else f" for argument '{arg}'"
        raise IndexError(f"{fname}(): Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim}){what}")
    return dim % n
