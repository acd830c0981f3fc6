"""SBP <-> ``jax.sharding``: a global tensor's nd-SBP (one entry per hierarchy axis of its
placement) is a ``PartitionSpec`` over the placement's mesh (axes ``r0, r1, ...``):

* ``split(i)`` on axis ``rk``   -> ``rk`` in entry ``i`` of the spec (several axes splitting the
  same dim appear in hierarchy order, so ranks are row-major as in OneFlow);
* ``broadcast``                 -> the axis is absent (replicated);
* ``partial_sum`` on ``rk``     -> ``rk`` in the spec's ``unreduced`` set (explicit sharding).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
from jax.sharding import NamedSharding, PartitionSpec

from .placement import BY_MESH as _BY_MESH
from .placement import placement as Placement
from .sbp import SbpParallel, _PartialSum, _Split, broadcast, partial_sum, split

__all__ = ["normalize_nd_sbp", "partition_spec", "named_sharding", "nd_sbp_repr",
           "split_factor", "local_shape", "divisible", "info_of_value"]

NdSbp = tuple[SbpParallel, ...]


def normalize_nd_sbp(sbp: Any, plc: Placement, ndim: int, fname: str) -> NdSbp:
    """The user's ``sbp=`` (one SbpParallel, or a sequence with one per hierarchy axis) as a
    tuple; errors name ``fname``, the count expected and a bad split axis."""
    n = len(plc.hierarchy)
    items = (sbp,) if isinstance(sbp, SbpParallel) else tuple(sbp) \
        if isinstance(sbp, (list, tuple)) else None
    if items is None or not all(isinstance(x, SbpParallel) for x in items):
        raise TypeError(f"{fname}: sbp must be a flow.sbp value or a sequence of them (one per "
                        f"placement hierarchy axis), got {sbp!r}")
    if len(items) != n:
        raise ValueError(f"{fname}: the placement has a {n}-d hierarchy {plc.hierarchy}, so sbp "
                         f"needs {n} entries, got {len(items)}: {items}")
    for x in items:
        if isinstance(x, _Split) and x.axis >= ndim:
            raise ValueError(f"{fname}: {x!r} is out of range for a tensor with {ndim} "
                             f"dimension(s)")
    return items


def partition_spec(nd_sbp: Sequence[SbpParallel], ndim: int,
                   axis_names: Sequence[str]) -> PartitionSpec:
    dims: list[list[str]] = [[] for _ in range(ndim)]
    unreduced = set()
    for name, x in zip(axis_names, nd_sbp):
        if isinstance(x, _Split):
            dims[x.axis].append(name)
        elif isinstance(x, _PartialSum):
            unreduced.add(name)
    entries = [None if not d else d[0] if len(d) == 1 else tuple(d) for d in dims]
    return PartitionSpec(*entries, unreduced=frozenset(unreduced))


def named_sharding(plc: Placement, nd_sbp: Sequence[SbpParallel], ndim: int) -> NamedSharding:
    return NamedSharding(plc.mesh, partition_spec(nd_sbp, ndim, plc.axis_names))


def split_factor(nd_sbp: Sequence[SbpParallel], hierarchy: Sequence[int], dim: int) -> int:
    """How many pieces dimension ``dim`` is cut into."""
    f = 1
    for x, n in zip(nd_sbp, hierarchy):
        if isinstance(x, _Split) and x.axis == dim:
            f *= n
    return f


def local_shape(shape: Sequence[int], nd_sbp: Sequence[SbpParallel],
                hierarchy: Sequence[int]) -> tuple[int, ...]:
    return tuple(s // split_factor(nd_sbp, hierarchy, d) for d, s in enumerate(shape))


def divisible(shape: Sequence[int], nd_sbp: Sequence[SbpParallel],
              hierarchy: Sequence[int]) -> bool:
    return all(s % split_factor(nd_sbp, hierarchy, d) == 0 for d, s in enumerate(shape))


def nd_sbp_repr(nd_sbp: Sequence[SbpParallel]) -> str:
    return "(" + ", ".join(repr(x) for x in nd_sbp) + ("," if len(nd_sbp) == 1 else "") + ")"


def info_of_value(value: Any) -> tuple[Placement, tuple] | None:
    """``(placement, nd_sbp)`` of a global ``jax.Array``/tracer, read from its sharding."""
    sh = getattr(value, "sharding", None)
    if not isinstance(sh, NamedSharding):
        try:
            sh = jax.typeof(value).sharding
        except TypeError:
            return None
    if not isinstance(sh, NamedSharding) or sh.mesh.empty:
        return None
    plc = _BY_MESH.get(sh.mesh)
    if plc is None:
        return None
    spec = sh.spec
    nd = []
    for name in plc.axis_names:
        if name in spec.unreduced:
            nd.append(partial_sum)
            continue
        entries = getattr(spec, "partitions", None)  # (iterating a spec with unreduced
        entries = tuple(spec) if entries is None else entries  # axes is refused by JAX)
        for d, entry in enumerate(entries):
            names = entry if isinstance(entry, tuple) else (entry,)
            if name in names:
                nd.append(split(d))
                break
        else:
            nd.append(broadcast)
    return plc, tuple(nd)
