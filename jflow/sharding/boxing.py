"""Boxing (OneFlow's name for SBP conversion), as collectives on local shards.

Inside a ``shard_map`` over the placement's mesh, one hierarchy axis at a time:

=========  ===========  ==========================================================
from       to           collective
=========  ===========  ==========================================================
S(i)       B            all-gather along i
P          B            all-reduce (psum)
P          S(j)         reduce-scatter along j
S(i)       S(j)         all-to-all
B          S(j)         local slice (no communication)
B          P            local: rank 0 keeps the value, the others hold zeros
S(i)       P            local: each rank embeds its slice in zeros
=========  ===========  ==========================================================

A 1-d hierarchy uses the table directly; so does an n-d one when a single axis changes and
no other axis splits the same dimensions or holds a partial sum. Otherwise a change goes
through broadcast: every non-broadcast axis is gathered/reduced (innermost first), then each
axis is converted from broadcast to its target (outermost first) — always correct when several
axes split the same dimension, though not the minimum traffic (``explain`` says "via
broadcast").
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
from jax import lax

from .._jax_compat import all_gather_invariant
from .sbp import SbpParallel, _Broadcast, _PartialSum, _Split

__all__ = ["box_local", "cost", "describe"]


def _index(name: str) -> Any:
    return lax.axis_index(name)


def _to_broadcast(x: Any, src: SbpParallel, name: str) -> Any:
    if isinstance(src, _Split):
        return all_gather_invariant(x, name, axis=src.axis, tiled=True)
    if isinstance(src, _PartialSum):
        return lax.psum(x, name)
    return x


def _from_broadcast(x: Any, dst: SbpParallel, name: str, n: int) -> Any:
    if isinstance(dst, _Split):
        size = x.shape[dst.axis] // n
        return lax.dynamic_slice_in_dim(x, _index(name) * size, size, axis=dst.axis)
    if isinstance(dst, _PartialSum):
        keep = _index(name) == 0
        return lax.pcast(jnp.where(keep, x, jnp.zeros_like(x)), name, to="unreduced")
    return x


def _direct(x: Any, src: SbpParallel, dst: SbpParallel, name: str, n: int) -> Any:
    """One axis of a 1-d hierarchy: the table of the module docstring."""
    if src == dst:
        return x
    if isinstance(dst, _Broadcast):
        return _to_broadcast(x, src, name)
    if isinstance(src, _Broadcast):
        return _from_broadcast(x, dst, name, n)
    if isinstance(src, _PartialSum) and isinstance(dst, _Split):
        return lax.psum_scatter(x, name, scatter_dimension=dst.axis, tiled=True)
    if isinstance(src, _Split) and isinstance(dst, _Split):
        return lax.all_to_all(x, name, split_axis=dst.axis, concat_axis=src.axis, tiled=True)
    if isinstance(src, _Split) and isinstance(dst, _PartialSum):
        size = x.shape[src.axis]
        shape = list(x.shape)
        shape[src.axis] = size * n
        full = jnp.zeros(shape, x.dtype)
        full = lax.dynamic_update_slice_in_dim(full, x, _index(name) * size, axis=src.axis)
        return lax.pcast(full, name, to="unreduced")
    raise AssertionError(f"no boxing from {src} to {dst}")  # all pairs are covered above


def _lone_change(src: Sequence[SbpParallel], dst: Sequence[SbpParallel]) -> int | None:
    """The one hierarchy axis that changes, when it can be converted on its own: the dims it
    splits are split by no other axis, and no other axis holds a partial sum."""
    changed = [k for k in range(len(src)) if src[k] != dst[k]]
    if len(changed) != 1:
        return None
    k = changed[0]
    mine = {x.axis for x in (src[k], dst[k]) if isinstance(x, _Split)}
    for j in range(len(src)):
        if j == k:
            continue
        for x in (src[j], dst[j]):
            if isinstance(x, _PartialSum) or (isinstance(x, _Split) and x.axis in mine):
                return None
    return k


def box_local(x: Any, src: Sequence[SbpParallel], dst: Sequence[SbpParallel],
              names: Sequence[str], hierarchy: Sequence[int]) -> Any:
    """Convert the local shard ``x`` of a tensor from nd-SBP ``src`` to ``dst``."""
    if tuple(src) == tuple(dst):
        return x
    if len(names) == 1:
        return _direct(x, src[0], dst[0], names[0], hierarchy[0])
    k = _lone_change(src, dst)
    if k is not None:
        return _direct(x, src[k], dst[k], names[k], hierarchy[k])
    for k in reversed(range(len(names))):
        x = _to_broadcast(x, src[k], names[k])
    partial = []
    for k in range(len(names)):
        if isinstance(dst[k], _PartialSum):
            partial.append(names[k])  # made last, in one step: no op runs on unreduced values
        else:
            x = _from_broadcast(x, dst[k], names[k], hierarchy[k])
    if partial:
        keep = functools.reduce(jnp.logical_and, [_index(n) == 0 for n in partial])
        x = lax.pcast(jnp.where(keep, x, jnp.zeros_like(x)), tuple(partial), to="unreduced")
    return x


def _axis_cost(src: SbpParallel, dst: SbpParallel, nbytes: float, n: int) -> float:
    """Bytes one device sends for one axis's conversion (OneFlow's boxing cost model)."""
    if src == dst or isinstance(src, _Broadcast):
        return 0.0  # B -> S and B -> P are local
    if isinstance(dst, _PartialSum) and isinstance(src, _Split):
        return 0.0
    frac = (n - 1) / n
    if isinstance(src, _PartialSum) and isinstance(dst, _Broadcast):
        return 2 * frac * nbytes  # all-reduce = reduce-scatter + all-gather
    return frac * nbytes  # all-gather, reduce-scatter, all-to-all


def cost(src: Sequence[SbpParallel], dst: Sequence[SbpParallel], nbytes: float,
         hierarchy: Sequence[int]) -> float:
    """Bytes moved per device to box a tensor of ``nbytes`` (logical) from ``src`` to
    ``dst``; 0 when nothing moves."""
    if tuple(src) == tuple(dst):
        return 0.0
    if len(hierarchy) == 1:
        return _axis_cost(src[0], dst[0], nbytes, hierarchy[0])
    k = _lone_change(src, dst)
    if k is not None:  # one axis converts alone, on the slices the other axes leave it
        rest = 1
        for j, x in enumerate(src):
            if j != k and isinstance(x, _Split):
                rest *= hierarchy[j]
        return _axis_cost(src[k], dst[k], nbytes / rest, hierarchy[k])
    total = 0.0
    for k in reversed(range(len(hierarchy))):
        total += _axis_cost(src[k], _Broadcast(), nbytes, hierarchy[k])
    return total


def describe(src: Sequence[SbpParallel], dst: Sequence[SbpParallel]) -> str:
    """The collective(s) a conversion uses, for ``explain``."""
    if tuple(src) == tuple(dst):
        return "none"
    k = 0 if len(src) == 1 else _lone_change(src, dst)
    if k is not None:
        s, d = src[k], dst[k]
        if isinstance(s, _Broadcast):
            return "local slice" if isinstance(d, _Split) else "local (zeros off rank 0)"
        if isinstance(d, _Broadcast):
            return "all-gather" if isinstance(s, _Split) else "all-reduce"
        if isinstance(s, _PartialSum):
            return "reduce-scatter"
        return "all-to-all" if isinstance(d, _Split) else "local (embed in zeros)"
    return "via broadcast: " + ", ".join(
        f"r{k}:{'all-gather' if isinstance(s, _Split) else 'all-reduce'}"
        for k, s in enumerate(src) if not isinstance(s, _Broadcast))


