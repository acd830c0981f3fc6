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

On an nd hierarchy a conversion is a sequence of such one-axis steps through intermediate
nd-SBPs, the cheapest valid one (:mod:`.boxing_plan`: which steps are valid when several axes
split one dim, and the bytes of each). Steps run on values that other axes hold as partial sums
(JAX types them "unreduced"): the local ones are written with operations JAX accepts on them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from .._jax_compat import all_gather_invariant
from .boxing_plan import cost, describe, plan
from .sbp import SbpParallel, _Broadcast, _PartialSum, _Split
from .spec import split_factor

__all__ = ["box_local", "cost", "describe"]


def _zeros(shape: Sequence[int], dtype: Any, partial: tuple[str, ...]) -> Any:
    """Zeros typed as a partial sum over the axes ``partial``: JAX drops (where) or refuses
    (dynamic_update_slice) an unreduced operand mixed with a plain one."""
    z = jnp.zeros(shape, dtype)
    if partial:
        z = lax.pcast(lax.pcast(z, partial, to="varying"), partial, to="unreduced")
    return z


def _slice(x: Any, axis: int, name: str, n: int, partial: tuple[str, ...]) -> Any:
    """This rank's piece of ``x`` along ``axis`` (B -> S)."""
    size = x.shape[axis] // n
    i = lax.axis_index(name)
    if not partial:
        return lax.dynamic_slice_in_dim(x, i * size, size, axis=axis)
    # dynamic_slice has no rule for unreduced values; static slices and a select do
    return lax.select_n(i, *[lax.slice_in_dim(x, t * size, (t + 1) * size, axis=axis)
                             for t in range(n)])


def _step(x: Any, a: SbpParallel, b: SbpParallel, name: str, n: int,
          partial: tuple[str, ...]) -> Any:
    """Change one hierarchy axis from ``a`` to ``b`` (the table of the module docstring);
    ``partial``: the other axes on which ``x`` is a partial sum."""
    i = lax.axis_index(name)
    if isinstance(b, _Broadcast):
        if isinstance(a, _Split):
            return all_gather_invariant(x, name, axis=a.axis, tiled=True)
        return lax.psum(x, name)
    if isinstance(a, _Broadcast) and isinstance(b, _Split):
        return _slice(x, b.axis, name, n, partial)
    if isinstance(a, _Broadcast):  # -> P
        y = jnp.where(i == 0, x, _zeros(x.shape, x.dtype, partial))
        return lax.pcast(y, name, to="unreduced")
    if isinstance(a, _PartialSum):  # -> S
        return lax.psum_scatter(x, name, scatter_dimension=b.axis, tiled=True)
    if isinstance(b, _Split):
        return lax.all_to_all(x, name, split_axis=b.axis, concat_axis=a.axis, tiled=True)
    shape = list(x.shape)  # S -> P
    shape[a.axis] *= n
    y = lax.dynamic_update_slice_in_dim(_zeros(shape, x.dtype, partial), x,
                                        i * x.shape[a.axis], axis=a.axis)
    return lax.pcast(y, name, to="unreduced")


def box_local(x: Any, src: Sequence[SbpParallel], dst: Sequence[SbpParallel],
              names: Sequence[str], hierarchy: Sequence[int]) -> Any:
    """Convert the local shard ``x`` of a tensor from nd-SBP ``src`` to ``dst`` (inside a
    ``shard_map`` over the placement's mesh), along :func:`.boxing_plan.plan`'s path."""
    src, dst = tuple(src), tuple(dst)
    if src == dst:
        return x
    shape = tuple(s * split_factor(src, hierarchy, d) for d, s in enumerate(x.shape))
    steps, _ = plan(src, dst, tuple(hierarchy), shape)
    boolean = x.dtype == np.bool_ and any(isinstance(s, _PartialSum)
                                          for _, a, b in steps for s in (a, b))
    if boolean:  # a path through partial sums of a bool tensor sums 0/1 as integers
        x = x.astype(jnp.uint8)
    state = list(src)
    for k, a, b in steps:
        partial = tuple(names[j] for j, s in enumerate(state)
                        if j != k and isinstance(s, _PartialSum))
        x = _step(x, a, b, names[k], hierarchy[k], partial)
        state[k] = b
    return x.astype(jnp.bool_) if boolean else x
