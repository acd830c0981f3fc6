"""``flow.placement``: a device type and (nested) global device ranks (OneFlow's placement)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["placement"]


class placement:
    """Devices a global tensor lives on: ``flow.placement("cpu", ranks=[[0, 1], [2, 3]])``.

    ``ranks`` may be nested for an N-d hierarchy; ``hierarchy`` is its shape.
    """

    __slots__ = ("type", "_ranks")

    def __init__(self, type: str = "cpu", ranks: Any = None) -> None:  # noqa: A002
        if type not in ("cpu", "cuda"):
            raise ValueError(f"flow.placement: type must be 'cpu' or 'cuda', got {type!r}")
        if ranks is None:
            raise TypeError("flow.placement: ranks are required (or use placement.all)")
        arr = np.asarray(ranks)
        if arr.ndim == 0:
            arr = arr.reshape(1)
        if arr.dtype.kind not in "iu" or arr.size == 0:
            raise TypeError(f"flow.placement: ranks must be a non-empty (nested) list of ints, "
                            f"got {ranks!r}")
        if len(set(arr.ravel().tolist())) != arr.size:
            raise ValueError(f"flow.placement: ranks contain duplicates: {ranks!r}")
        self.type = type
        self._ranks = arr.astype(np.int64)

    @classmethod
    def all(cls, type: str = "cpu") -> placement:  # noqa: A002
        """All devices of this type (as ``flow.placement.all``)."""
        import jax
        n = len(jax.devices("gpu" if type == "cuda" else "cpu"))
        return cls(type, list(range(n)))

    @property
    def ranks(self) -> list:
        return self._ranks.tolist()

    @property
    def hierarchy(self) -> tuple[int, ...]:
        return tuple(self._ranks.shape)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, placement) and self.type == other.type
                and self._ranks.shape == other._ranks.shape
                and bool((self._ranks == other._ranks).all()))

    def __hash__(self) -> int:
        return hash((self.type, self._ranks.shape, tuple(self._ranks.ravel().tolist())))

    def __repr__(self) -> str:
        return f"oneflow.placement(type=\"{self.type}\", ranks={self.ranks})"
