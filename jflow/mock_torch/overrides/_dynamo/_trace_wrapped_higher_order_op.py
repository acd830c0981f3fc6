"""``torch._dynamo._trace_wrapped_higher_order_op``: ``TransformGetItemToIndex``."""

from __future__ import annotations

from typing import Any

__all__ = ["TransformGetItemToIndex"]


class TransformGetItemToIndex:
    """PyTorch's mode making ``x[idx]`` with 0-d tensor indices an index op instead of a
    Python-int view (so it works under ``vmap``). In jflow a tensor index is always an index
    op (never read back as a Python int), so the block runs unchanged."""

    def __enter__(self) -> TransformGetItemToIndex:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None
