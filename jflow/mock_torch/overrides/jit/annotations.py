"""``torch.jit.annotations``: TorchScript's type-hint helpers, as plain typing objects."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple  # noqa: UP035  (PyTorch re-exports these)

__all__ = ["BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "Any", "List",
           "Optional", "Tuple"]


class _BroadcastingList:
    """``BroadcastingList2[int]``: an int or a list of ints (eagerly, just a hint)."""

    def __getitem__(self, item: Any) -> Any:
        return item


BroadcastingList1 = BroadcastingList2 = BroadcastingList3 = _BroadcastingList()
