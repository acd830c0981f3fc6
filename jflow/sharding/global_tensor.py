"""Global tensors: a ``jax.Array`` with a ``NamedSharding`` over a placement's mesh, plus the
tensor's ``(placement, nd_sbp)`` in ``Tensor._global``.

The logical value is what ``numpy()`` returns; ``to_global`` distributes a local tensor (its
value is the logical value) or re-boxes a global one; ``to_local`` is this process's shard.
Both are differentiable on the tape (logically they are the identity, so the gradient is boxed
back) and, being collectives inside ``shard_map``, under ``jax.grad`` too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor, _wrap
from . import plan as step_plan
from .boxing import box_local
from .placement import placement as Placement
from .sbp import SbpParallel, _PartialSum, broadcast
from .spec import (
    divisible,
    named_sharding,
    nd_sbp_repr,
    normalize_nd_sbp,
    partition_spec,
    split_factor,
)

__all__ = ["to_global", "to_local", "make_global", "replicated_value"]

_BOX_CACHE: dict[Any, Any] = {}
_BOX_CACHE_SIZE = 256


def make_global(value: Any, plc: Placement, nd_sbp: tuple[SbpParallel, ...]) -> Tensor:
    t = _wrap(value)
    t._global = (plc, nd_sbp)
    return t


def _boxer(plc: Placement, src: tuple, dst: tuple, ndim: int) -> Any:
    key = (plc, src, dst, ndim)
    f = _BOX_CACHE.get(key)
    if f is None:
        names, h = plc.axis_names, plc.hierarchy
        f = jax.jit(jax.shard_map(lambda x: box_local(x, src, dst, names, h), mesh=plc.mesh,
                                  in_specs=partition_spec(src, ndim, names),
                                  out_specs=partition_spec(dst, ndim, names)))
        if len(_BOX_CACHE) >= _BOX_CACHE_SIZE:
            _BOX_CACHE.clear()
        _BOX_CACHE[key] = f
    return f


def box_value(value: Any, plc: Placement, src: tuple, dst: tuple) -> Any:
    """The same logical value with nd-SBP ``dst`` (collectives as ``boxing`` describes)."""
    if src == dst:
        return value
    rec = step_plan.active()
    if isinstance(rec, step_plan.StepRecorder):  # a flow.jit step being planned
        rec.box(value, src, dst, (float(value.size * np.dtype(value.dtype).itemsize),
                                  tuple(value.shape)), plc.hierarchy)
    return plc.wait_if_shared(_boxer(plc, src, dst, value.ndim)(value))


def _check_divisible(shape: Sequence[int], plc: Placement, nd: tuple, fname: str) -> None:
    if not divisible(shape, nd, plc.hierarchy):
        bad = [d for d, s in enumerate(shape) if s % split_factor(nd, plc.hierarchy, d)]
        d = bad[0]
        raise ValueError(f"{fname}: dimension {d} of size {shape[d]} cannot be split evenly "
                         f"into {split_factor(nd, plc.hierarchy, d)} parts (sbp "
                         f"{nd}, placement hierarchy {plc.hierarchy}); uneven splits are not "
                         f"supported")


def replicated_value(t: Tensor) -> Any:
    """A global tensor's value boxed to all-broadcast (a replicated array)."""
    plc, nd = t._global
    _check_addressable(plc)
    return box_value(t._value, plc, nd, (broadcast,) * len(nd))


def _distribute(value: Any, plc: Placement, nd: tuple) -> Any:
    b = (broadcast,) * len(plc.hierarchy)
    sharding = named_sharding(plc, b, value.ndim)
    if not sharding.is_fully_addressable and not isinstance(value, jax.core.Tracer):
        # other processes' devices: JAX places it from host data (and checks that it is equal
        # on every process); a device array would need a cross-host transfer
        value = np.asarray(value)
    return box_value(jax.device_put(value, sharding), plc, b, nd)


def _check_addressable(plc: Placement) -> None:
    if not any(d.process_index == jax.process_index() for d in plc.mesh.devices.flat):
        raise RuntimeError(f"process {jax.process_index()} holds no device of {plc!r}: its "
                           f"value is only available on processes holding ranks of it")


def to_global(t: Tensor, placement: Placement | None = None, sbp: Any = None) -> Tensor:
    """``x.to_global(placement, sbp)``: distribute a local tensor or re-box a global one."""
    fname = "Tensor.to_global"
    if not isinstance(t, Tensor):
        raise TypeError(f"{fname}: expected a jflow Tensor, got {type(t).__name__}")
    if t._global is None:
        if placement is None or sbp is None:
            raise ValueError(f"{fname}: a local tensor needs both placement= and sbp=")
    else:
        placement = t._global[0] if placement is None else placement
        sbp = t._global[1] if sbp is None else sbp
    if not isinstance(placement, Placement):
        raise TypeError(f"{fname}: placement must be a flow.placement, got "
                        f"{type(placement).__name__}")
    nd = normalize_nd_sbp(sbp, placement, t._meta.ndim, fname)
    if t._meta.dtype == np.bool_ and any(isinstance(x, _PartialSum) for x in nd):
        raise TypeError(f"{fname}: sbp partial_sum is not defined for a bool tensor (a sum "
                        f"of bools is not a bool); cast it to an integer dtype first")
    _check_divisible(t._meta.shape, placement, nd, fname)
    if t._global is not None and t._global == (placement, nd):
        return t
    return ToGlobal.apply(t, placement, nd)


def _to_global_value(t: Tensor, plc: Placement, nd: tuple) -> Any:
    if t._global is None:
        return _distribute(t._value, plc, nd)
    old_plc, old_nd = t._global
    if old_plc == plc:
        return box_value(t._value, plc, old_nd, nd)
    # another placement: gather the logical value, then distribute it there
    full = np.asarray(replicated_value(t))
    return _distribute(jax.numpy.asarray(full), plc, nd)


def _local_of(t: Tensor) -> Any:
    """This process's shard: the value on the first addressable device of the placement."""
    plc, _ = t._global
    _check_addressable(plc)
    v = t._value  # (a partial tensor's local buffer is this rank's addend)
    first = plc.mesh.devices.flat[0]
    for shard in v.addressable_shards:
        if shard.device == first:
            return shard.data
    return v.addressable_shards[0].data


def to_local(t: Tensor) -> Tensor:
    """``x.to_local()``: this process's shard as a local tensor (a local tensor: itself)."""
    if t._global is None:
        return t
    return ToLocal.apply(t)


class ToGlobal(Function):
    """Identity on logical values: the gradient goes back to the source's layout."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, plc: Placement, nd: tuple) -> Tensor:
        ctx.src = x._global
        return make_global(_to_global_value(x, plc, nd), plc, nd)

    @staticmethod
    def backward(ctx: Any, dy: Tensor) -> tuple[Any, None, None]:
        if ctx.src is None:  # the input was local: its gradient is the logical gradient
            return make_local(dy), None, None
        plc, nd = ctx.src
        return to_global(dy, plc, nd), None, None

class ToLocal(Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        ctx.src = x._global
        ctx.shape = tuple(x._meta.shape)
        return _wrap(_local_of(x))

    @staticmethod
    def backward(ctx: Any, dy: Tensor) -> Any:
        plc, nd = ctx.src
        if all(x is broadcast for x in nd):
            # every rank holds the same value: the logical gradient is this one (as
            # OneFlow, which treats the local copies of a broadcast tensor as one)
            return to_global(dy, plc, nd)
        raise RuntimeError("Tensor.to_local: the gradient of a split or partial tensor's "
                           "local shard is not defined in a single process; use "
                           "to_global(sbp=broadcast) first")


def make_local(t: Tensor) -> Tensor:
    """The logical value of a global tensor as a local tensor (gathered)."""
    return _wrap(jax.numpy.asarray(np.asarray(replicated_value(t))))


# -- Tensor methods owned by the sharding layer (Tensor itself is the bottom layer) ----------

def _tensor_to_global(self: Tensor, placement: Placement | None = None, sbp: Any = None
                      ) -> Tensor:
    """Distribute this local tensor (its value is the logical value) over ``placement``
    with ``sbp``, or re-box a global one (collectives as needed)."""
    return to_global(self, placement, sbp)


def _tensor_to_local(self: Tensor) -> Tensor:
    """This process's shard of a global tensor (a local tensor is returned as is)."""
    return to_local(self)


def _tensor_global_repr(self: Tensor) -> str:
    return f", placement={self._global[0]!r}, sbp={nd_sbp_repr(self._global[1])}"


_tensor_to_global.__name__ = _tensor_to_global.__qualname__ = "to_global"
_tensor_to_local.__name__ = _tensor_to_local.__qualname__ = "to_local"
Tensor.to_global = _tensor_to_global  # type: ignore[attr-defined]
Tensor.to_local = _tensor_to_local  # type: ignore[attr-defined]
Tensor._logical_value = replicated_value  # type: ignore[attr-defined]
Tensor._global_repr = _tensor_global_repr  # type: ignore[attr-defined]
