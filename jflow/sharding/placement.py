"""``flow.placement``: a device type and (nested) global device ranks (OneFlow's placement)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, Mesh

__all__ = ["placement", "BY_MESH", "devices_by_rank"]

#: meshes (concrete and abstract) -> their placement: how a global value's sharding is read
#: back as (placement, nd_sbp) where only the array is at hand
BY_MESH: dict[Any, Any] = {}


def _platform(type: str) -> str:  # noqa: A002
    if type not in ("cpu", "cuda"):
        raise ValueError(f"flow.env: device type must be 'cpu' or 'cuda', got {type!r}")
    return "gpu" if type == "cuda" else "cpu"


def devices_by_rank(type: str = "cpu") -> list[Any]:  # noqa: A002
    """Every ``type`` device of all processes, indexed by rank: ordered by process, then
    device id (in one process, rank == device id)."""
    return sorted(jax.devices(_platform(type)), key=lambda d: (d.process_index, d.id))


class placement:
    """Devices a global tensor lives on: ``flow.placement("cpu", ranks=[[0, 1], [2, 3]])``.

    ``ranks`` may be nested for an N-d hierarchy; ``hierarchy`` is its shape.
    """

    __slots__ = ("type", "_ranks", "_mesh", "_spans")

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
        self._mesh = None
        self._spans: bool | None = None

    def __reduce__(self) -> tuple:
        """Pickled as its type and ranks (its mesh's devices are this process's: rebuilt)."""
        return placement, (self.type, self.ranks)

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

    @property
    def axis_names(self) -> tuple[str, ...]:
        """Mesh axis names, one per hierarchy axis: ``("r0",)``, ``("r0", "r1")``..."""
        return tuple(f"r{i}" for i in range(self._ranks.ndim))

    @property
    def mesh(self) -> Any:
        """The ``jax.sharding.Mesh`` of these ranks (positions in
        ``flow.env.devices_by_rank``: by process, then device id), hierarchy axes ``Explicit``
        (needed for partial sums: ``PartitionSpec(unreduced=...)``)."""
        if self._mesh is None:
            try:
                devs = devices_by_rank(self.type)  # rank r -> devs[r]: by process, then id
            except RuntimeError:
                raise RuntimeError(f"{self!r}: no {self.type} devices here") from None
            flat = set(self._ranks.ravel().tolist())
            missing = sorted(r for r in flat if not 0 <= r < len(devs))
            if missing:
                raise ValueError(f"{self!r}: ranks {missing} are out of range: there are "
                                 f"{len(devs)} {self.type} devices over all processes "
                                 f"(ranks 0..{len(devs) - 1})")
            arr = np.vectorize(lambda r: devs[int(r)], otypes=[object])(self._ranks)
            self._mesh = Mesh(arr, self.axis_names,
                              axis_types=(AxisType.Explicit,) * self._ranks.ndim)
            BY_MESH[self._mesh] = self
            BY_MESH[self._mesh.abstract_mesh] = self
        return self._mesh

    def wait_if_shared(self, values: Any) -> Any:
        """On a placement spanning several processes, let an executable's ``values`` be
        computed before the next executable is launched. Eager global ops and boxings are
        independent executables (DDP's gradient all-reduces, say): run concurrently, their
        gloo collectives can pair up in different orders on different processes and
        deadlock (seen: one process in the optimizer, the other in the next forward).
        Traced values pass through."""
        if self._spans is None:
            self._spans = len({d.process_index for d in self.mesh.devices.flat}) > 1
        if self._spans:
            leaves = jax.tree_util.tree_leaves(values)
            if leaves and not isinstance(leaves[0], jax.core.Tracer):
                jax.block_until_ready(leaves)
        return values

    @property
    def size(self) -> int:
        return int(self._ranks.size)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, placement) and self.type == other.type
                and self._ranks.shape == other._ranks.shape
                and bool((self._ranks == other._ranks).all()))

    def __hash__(self) -> int:
        return hash((self.type, self._ranks.shape, tuple(self._ranks.ravel().tolist())))

    def __repr__(self) -> str:
        return f"oneflow.placement(type=\"{self.type}\", ranks={self.ranks})"
