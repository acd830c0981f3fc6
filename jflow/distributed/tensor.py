"""PyTorch's DTensor API (``torch.distributed.tensor``) on jflow's global tensors.

jflow already has distributed tensors: global tensors, a placement (which devices, an n-d
hierarchy) plus one SBP entry per hierarchy axis (docs/sbp.md). DTensor describes the same
thing with other words, so this module is a dictionary, not a second implementation:

=====================================  ==============================================
PyTorch (``torch.distributed.tensor``)  jflow
=====================================  ==============================================
``DeviceMesh`` / ``init_device_mesh``   ``flow.placement`` (ranks in the mesh's shape)
``Shard(d)``                            ``flow.sbp.split(d)``
``Replicate()``                         ``flow.sbp.broadcast``
``Partial("sum")``                      ``flow.sbp.partial_sum``
``distribute_tensor(t, mesh, pl)``      ``t.detach().to_global(placement, sbp)`` (a leaf)
``dt.redistribute(mesh, pl)``           ``x.to_global(placement, sbp)``
``dt.full_tensor()``                    ``x.to_global(sbp=broadcast).to_local()``
``dt.to_local()``                       ``x.to_local()`` (the first device's shard)
``isinstance(x, DTensor)``              ``x.is_global``
``implicit_replication()``              local tensors mixed in are taken as broadcast
=====================================  ==============================================

Choices where one process drives every device (PyTorch runs one process per device):

* ``DTensor`` is not a class any tensor is built as: it is a virtual class whose
  ``isinstance`` check is "a jflow tensor that is global"; its methods (``placements``,
  ``device_mesh``, ``redistribute``, ``full_tensor``) are attached to ``Tensor`` and answer
  for global tensors only (``AttributeError`` on a local one, so ``hasattr`` probes answer as
  for a ``torch.Tensor``).
* "This rank" is the process's first device of the mesh: ``to_local()`` is its shard (as
  jflow's), ``mesh["tp"]`` the sub-mesh through it, ``get_coordinate()`` its coordinate.
* ``DTensor.from_local(t, mesh, placements)`` takes ``t`` as every rank's local tensor (one
  process passes one tensor): the logical value is what PyTorch gives when all ranks pass the
  same ``t`` (``Shard``: ``t`` repeated along the dim; ``Partial``: the sum of the copies).
* A ``Partial`` tensor's logical value is PyTorch's; its per-device addends are jflow's
  (``Replicate -> Partial`` keeps the value on the first device and zeros elsewhere, where
  PyTorch divides by the mesh size).
* ``Partial`` reductions other than ``"sum"``, ``_StridedShard`` and several processes in
  ``from_local`` raise ``NotImplementedError`` naming the call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from ..creation import tensor as _tensor
from ..sharding.execute import implicit_broadcast
from ..sharding.placement import devices_by_rank
from ..sharding.placement import placement as FlowPlacement
from ..sharding.sbp import _Broadcast, _PartialSum, _Split, broadcast, partial_sum, split
from ..tensor import Tensor

__all__ = ["DTensor", "DeviceMesh", "Placement", "Shard", "Replicate", "Partial",
           "distribute_tensor", "init_device_mesh", "implicit_replication", "to_nd_sbp",
           "to_placements", "unsupported"]

_DOC = "docs/sbp.md, section 'DTensor users'"


def unsupported(name: str, what: str = "") -> NotImplementedError:
    """The error for a DTensor feature jflow does not map (named, with where to read)."""
    extra = f": {what}" if what else ""
    return NotImplementedError(f"torch.distributed.tensor.{name} is not supported by jflow"
                               f"{extra} (jflow's DTensor is its global tensors: {_DOC})")


# -- placements ------------------------------------------------------------------------------

class Placement:
    """A DTensor placement along one mesh dimension (an SBP entry)."""

    def is_shard(self, dim: int | None = None) -> bool:
        """Whether this is a :class:`Shard` (of ``dim``)."""
        return False

    def is_replicate(self) -> bool:
        """Whether this is :class:`Replicate`."""
        return False

    def is_partial(self, reduce_op: str | None = None) -> bool:
        """Whether this is :class:`Partial` (with ``reduce_op``)."""
        return False

    def _key(self) -> tuple:
        return ()

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self._key()))})"


class Shard(Placement):
    """Split along tensor dimension ``dim`` (``flow.sbp.split(dim)``)."""

    def __init__(self, dim: int = 0) -> None:
        self.dim = dim

    def is_shard(self, dim: int | None = None) -> bool:
        return dim is None or dim == self.dim

    def _key(self) -> tuple:
        return (self.dim,)

    def __repr__(self) -> str:
        return f"Shard(dim={self.dim})"


class Replicate(Placement):
    """Every device holds the whole tensor (``flow.sbp.broadcast``)."""

    def is_replicate(self) -> bool:
        return True


class Partial(Placement):
    """Every device holds an addend (``flow.sbp.partial_sum``; only ``"sum"`` is mapped)."""

    def __init__(self, reduce_op: str = "sum") -> None:
        self.reduce_op = reduce_op

    def is_partial(self, reduce_op: str | None = None) -> bool:
        return reduce_op is None or reduce_op == self.reduce_op

    def _key(self) -> tuple:
        return (self.reduce_op,)


def to_nd_sbp(placements: Sequence[Placement], ndim_mesh: int, ndim: int, fname: str
              ) -> tuple:
    """DTensor placements (one per mesh dimension) as jflow's nd-SBP for a tensor of
    ``ndim`` dimensions; ``Shard(-1)`` counts from the end as in PyTorch."""
    if isinstance(placements, Placement):
        raise TypeError(f"{fname}: placements must be a sequence (one per mesh dimension), "
                        f"got a single {placements!r}")
    placements = tuple(placements)
    if len(placements) != ndim_mesh:
        raise ValueError(f"{fname}: {len(placements)} placements for a {ndim_mesh}-d mesh "
                         f"(one per mesh dimension: {placements})")
    out = []
    for p in placements:
        if type(p) is Shard:
            d = p.dim + ndim if p.dim < 0 else p.dim
            if not 0 <= d < ndim:
                raise IndexError(f"{fname}: {p!r} is out of range for a tensor of {ndim} "
                                 f"dimension(s)")
            out.append(split(d))
        elif type(p) is Replicate:
            out.append(broadcast)
        elif type(p) is Partial:
            if p.reduce_op != "sum":
                raise unsupported(fname.rpartition(".")[2] or fname,
                                  f"Partial({p.reduce_op!r}) (only 'sum' maps to "
                                  f"flow.sbp.partial_sum)")
            out.append(partial_sum)
        elif isinstance(p, Placement):
            raise unsupported(type(p).__name__, f"the placement {p!r} in {fname}")
        else:
            raise TypeError(f"{fname}: expected Shard/Replicate/Partial placements, got "
                            f"{type(p).__name__}")
    return tuple(out)


def to_placements(nd_sbp: Sequence[Any]) -> tuple[Placement, ...]:
    """jflow's nd-SBP as DTensor placements."""
    out: list[Placement] = []
    for x in nd_sbp:
        if isinstance(x, _Split):
            out.append(Shard(x.axis))
        elif isinstance(x, _Broadcast):
            out.append(Replicate())
        elif isinstance(x, _PartialSum):
            out.append(Partial())
        else:  # pragma: no cover - SbpParallel has these three kinds
            raise TypeError(f"not an SBP entry: {x!r}")
    return tuple(out)


# -- the mesh ----------------------------------------------------------------------------------

_MESHES: dict[FlowPlacement, DeviceMesh] = {}  # the last mesh built per placement (its names)


class DeviceMesh:
    """PyTorch's ``DeviceMesh`` over a ``flow.placement`` whose ranks have the mesh's shape
    (``mesh.placement``); ``mesh_dim_names`` name the hierarchy axes."""

    def __init__(self, device_type: str, mesh: Any, *, mesh_dim_names: Sequence[str] | None
                 = None, _init_backend: bool = True) -> None:
        fname = "torch.distributed.tensor.DeviceMesh"
        ranks = np.asarray(mesh.numpy() if isinstance(mesh, Tensor) else mesh)
        if device_type not in ("cpu", "cuda"):
            raise ValueError(f"{fname}: device_type must be 'cpu' or 'cuda' (jflow's "
                             f"placement types), got {device_type!r}")
        names = None if mesh_dim_names is None else tuple(mesh_dim_names)
        if names is not None and (len(names) != max(ranks.ndim, 1)
                                  or len(set(names)) != len(names)):
            raise ValueError(f"{fname}: mesh_dim_names {names} must name each of the "
                             f"{ranks.ndim} mesh dimensions once")
        self.device_type = device_type
        self.placement = FlowPlacement(device_type, ranks.tolist())
        self.mesh_dim_names = names
        if len(_MESHES) >= 64:
            _MESHES.clear()
        _MESHES[self.placement] = self

    @classmethod
    def from_placement(cls, plc: FlowPlacement, mesh_dim_names: Sequence[str] | None = None
                       ) -> DeviceMesh:
        """The mesh of a placement (the names it was built with, if known)."""
        known = _MESHES.get(plc)
        if known is not None and mesh_dim_names is None:
            return known
        return cls(plc.type, plc.ranks, mesh_dim_names=mesh_dim_names)

    @property
    def mesh(self) -> Any:
        """The ranks, as an integer tensor of the mesh's shape."""
        return _tensor(np.asarray(self.placement.ranks, dtype=np.int64))

    @property
    def ndim(self) -> int:
        """Number of mesh dimensions."""
        return len(self.placement.hierarchy)

    @property
    def shape(self) -> tuple[int, ...]:
        """The mesh's shape."""
        return self.placement.hierarchy

    def size(self, mesh_dim: int | str | None = None) -> int:
        """Devices in the mesh, or along ``mesh_dim`` (index or name)."""
        if mesh_dim is None:
            return self.placement.size
        return self.shape[self._dim(mesh_dim, "DeviceMesh.size")]

    def _dim(self, d: int | str, fname: str) -> int:
        if isinstance(d, str):
            if self.mesh_dim_names is None or d not in self.mesh_dim_names:
                raise KeyError(f"{fname}: no mesh dimension named {d!r} (names: "
                               f"{self.mesh_dim_names})")
            return self.mesh_dim_names.index(d)
        if not -self.ndim <= d < self.ndim:
            raise IndexError(f"{fname}: mesh dimension {d} out of range for a {self.ndim}-d "
                             f"mesh")
        return d % self.ndim

    def get_coordinate(self) -> list[int] | None:
        """This process's coordinate: that of its first device in the mesh (None if none)."""
        devs = devices_by_rank(self.placement.type)
        ranks = np.asarray(self.placement.ranks)
        for idx in np.ndindex(*ranks.shape):
            if devs[int(ranks[idx])].process_index == jax.process_index():
                return list(idx)
        return None

    def get_rank(self) -> int:
        """The rank of this process's first device in the mesh."""
        c = self.get_coordinate()
        if c is None:
            raise RuntimeError("DeviceMesh.get_rank: this process holds no device of the mesh")
        return int(np.asarray(self.placement.ranks)[tuple(c)])

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        """This process's coordinate along ``mesh_dim`` (see :meth:`get_coordinate`)."""
        c = self.get_coordinate()
        if c is None:
            raise RuntimeError("DeviceMesh.get_local_rank: this process holds no device of "
                               "the mesh")
        if mesh_dim is None:
            if self.ndim != 1:
                raise RuntimeError("DeviceMesh.get_local_rank: mesh_dim is required for an "
                                   "n-d mesh")
            mesh_dim = 0
        return c[self._dim(mesh_dim, "DeviceMesh.get_local_rank")]

    def __getitem__(self, names: str | Sequence[str]) -> DeviceMesh:
        """The sub-mesh of the named dimensions through this process's first device (as
        PyTorch's through the calling rank)."""
        names = (names,) if isinstance(names, str) else tuple(names)
        dims = [self._dim(n, "DeviceMesh.__getitem__") for n in names]
        coord = self.get_coordinate() or [0] * self.ndim
        ranks = np.asarray(self.placement.ranks)
        index = tuple(slice(None) if d in dims else coord[d] for d in range(self.ndim))
        sub = ranks[index]  # the kept dims, in mesh order
        kept = [d for d in range(self.ndim) if d in dims]
        sub = np.transpose(sub, [kept.index(d) for d in dims])
        return DeviceMesh(self.device_type, sub, mesh_dim_names=names)

    def get_group(self, mesh_dim: int | str | None = None) -> Any:
        """Raises: process groups are per process in jflow, not per mesh dimension."""
        raise unsupported("DeviceMesh.get_group", "jflow's collectives are per placement "
                          "(global tensors), not process groups of a mesh dimension")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DeviceMesh) and self.placement == other.placement
                and self.mesh_dim_names == other.mesh_dim_names)

    def __hash__(self) -> int:
        return hash((self.placement, self.mesh_dim_names))

    def __repr__(self) -> str:
        names = "" if self.mesh_dim_names is None else \
            f", mesh_dim_names={self.mesh_dim_names}"
        return f"DeviceMesh('{self.device_type}', {self.placement.ranks}{names})"


def init_device_mesh(device_type: str, mesh_shape: Sequence[int], *,
                     mesh_dim_names: Sequence[str] | None = None) -> DeviceMesh:
    """A mesh of ``prod(mesh_shape)`` devices, ranks ``0..n-1`` in row-major order."""
    shape = tuple(int(s) for s in mesh_shape)
    if not shape or any(s < 1 for s in shape):
        raise ValueError(f"torch.distributed.tensor.init_device_mesh: mesh_shape must be "
                         f"positive sizes, got {mesh_shape!r}")
    ranks = np.arange(math.prod(shape)).reshape(shape)
    return DeviceMesh(device_type, ranks, mesh_dim_names=mesh_dim_names)


# -- DTensor -----------------------------------------------------------------------------------

def _mesh_arg(mesh: DeviceMesh | None, fname: str) -> DeviceMesh:
    if mesh is None:
        raise ValueError(f"{fname}: device_mesh is required (jflow has no default mesh)")
    if not isinstance(mesh, DeviceMesh):
        raise TypeError(f"{fname}: device_mesh must be a DeviceMesh, got {type(mesh).__name__}")
    return mesh


def distribute_tensor(tensor: Tensor, device_mesh: DeviceMesh | None = None,
                      placements: Sequence[Placement] | None = None, *,
                      src_data_rank: int | None = 0) -> Tensor:
    """``tensor`` (its value is the logical value) laid out on ``device_mesh`` as
    ``placements`` (default: replicated): a leaf that requires grad as ``tensor`` does, as in
    PyTorch (parameters stay leaves)."""
    fname = "torch.distributed.tensor.distribute_tensor"
    mesh = _mesh_arg(device_mesh, fname)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{fname}: expected a tensor, got {type(tensor).__name__}")
    if tensor.is_global:
        raise ValueError(f"{fname}: the tensor is already a DTensor (global); use "
                         f"redistribute to change its layout")
    if placements is None:
        placements = [Replicate()] * mesh.ndim
    nd = to_nd_sbp(placements, mesh.ndim, tensor.dim(), fname)
    out = tensor.detach().to_global(mesh.placement, nd)
    return out.requires_grad_(tensor.requires_grad) if tensor.is_floating_point() or \
        tensor.is_complex() else out


def _from_local(local_tensor: Tensor, device_mesh: DeviceMesh | None = None,
                placements: Sequence[Placement] | None = None, *, run_check: bool = False,
                shape: Any = None, stride: Any = None) -> Tensor:
    """The global tensor whose every rank's local tensor is ``local_tensor`` (one process
    speaks for all its ranks); differentiable."""
    fname = "torch.distributed.tensor.DTensor.from_local"
    mesh = _mesh_arg(device_mesh, fname)
    if not isinstance(local_tensor, Tensor):
        raise TypeError(f"{fname}: expected a tensor, got {type(local_tensor).__name__}")
    if local_tensor.is_global:
        raise ValueError(f"{fname}: the tensor is already a DTensor (global)")
    if jax.process_count() > 1:
        raise unsupported("DTensor.from_local", "with several processes (use "
                          "flow.env.global_from_process_local)")
    if placements is None:
        placements = [Replicate()] * mesh.ndim
    nd = to_nd_sbp(placements, mesh.ndim, local_tensor.dim(), fname)
    reps = [1] * local_tensor.dim()
    scale = 1
    for x, n in zip(nd, mesh.shape):
        if isinstance(x, _Split):
            reps[x.axis] *= n
        elif isinstance(x, _PartialSum):
            scale *= n
    logical = local_tensor.repeat(*reps) if any(r != 1 for r in reps) else local_tensor
    if scale != 1:
        logical = logical * scale
    if shape is not None and tuple(shape) != tuple(logical.shape):
        raise ValueError(f"{fname}: shape {tuple(shape)} differs from the global shape "
                         f"{tuple(logical.shape)} the local tensor and placements give")
    return logical.to_global(mesh.placement, nd)


class _DTensorType(type):
    """``isinstance(x, DTensor)``: a jflow tensor that is global."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and obj.is_global

    def __subclasscheck__(cls, sub: Any) -> bool:
        return sub is cls


class DTensor(metaclass=_DTensorType):
    """PyTorch's ``DTensor``: in jflow, a global tensor (see the module docstring). Not built
    directly: use :func:`distribute_tensor` or :meth:`DTensor.from_local`."""

    from_local = staticmethod(_from_local)

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("torch.distributed.tensor.DTensor(...): build one with "
                        "distribute_tensor(t, mesh, placements) or DTensor.from_local(...) "
                        f"(a DTensor is a jflow global tensor: {_DOC})")


def implicit_replication() -> implicit_broadcast:
    """Inside it, local tensors used with DTensors are taken as replicated (PyTorch's
    ``torch.distributed.tensor.experimental.implicit_replication``). Exact in one process,
    where a local tensor is one value."""
    return implicit_broadcast()


# -- methods on Tensor (global tensors only) ---------------------------------------------------

def _need_global(t: Tensor, name: str) -> None:
    if not t.is_global:
        raise AttributeError(f"'Tensor' object has no attribute '{name}' (a local tensor; "
                             f"DTensor attributes answer for global tensors: {_DOC})")


def _placements(self: Tensor) -> tuple[Placement, ...]:
    """The DTensor placements of a global tensor (its SBP)."""
    _need_global(self, "placements")
    return to_placements(self.sbp)


def _device_mesh(self: Tensor) -> DeviceMesh:
    """The DeviceMesh of a global tensor (its placement)."""
    _need_global(self, "device_mesh")
    return DeviceMesh.from_placement(self.placement)


def _redistribute(self: Tensor, device_mesh: DeviceMesh | None = None,
                  placements: Sequence[Placement] | None = None, *, async_op: bool = False,
                  forward_dtype: Any = None, backward_dtype: Any = None) -> Tensor:
    """The same logical value laid out as ``placements`` (``to_global``; differentiable)."""
    fname = "DTensor.redistribute"
    if not self.is_global:
        raise AttributeError(f"{fname}: a local tensor is not a DTensor (distribute_tensor "
                             f"first)")
    if forward_dtype is not None or backward_dtype is not None:
        raise unsupported("DTensor.redistribute", "forward_dtype / backward_dtype")
    mesh = DeviceMesh.from_placement(self.placement) if device_mesh is None else \
        _mesh_arg(device_mesh, fname)
    if placements is None:
        nd = self.sbp
    else:
        nd = to_nd_sbp(placements, mesh.ndim, self.dim(), fname)
    return self.to_global(mesh.placement, nd)


def _full_tensor(self: Tensor, *, grad_placements: Any = None) -> Tensor:
    """The logical value as a local tensor (an all-gather / all-reduce; differentiable)."""
    if not self.is_global:
        raise AttributeError("DTensor.full_tensor: a local tensor is not a DTensor")
    if grad_placements is not None:
        raise unsupported("DTensor.full_tensor", "grad_placements")
    return self.to_global(sbp=(broadcast,) * len(self.sbp)).to_local()


def _attach() -> None:
    """Give ``Tensor`` the DTensor attributes (as ``sharding/global_tensor.py`` attaches
    ``to_global``): properties raise ``AttributeError`` on local tensors."""
    Tensor.placements = property(_placements)  # type: ignore[attr-defined]
    Tensor.device_mesh = property(_device_mesh)  # type: ignore[attr-defined]
    _redistribute.__name__ = _redistribute.__qualname__ = "redistribute"
    _full_tensor.__name__ = _full_tensor.__qualname__ = "full_tensor"
    Tensor.redistribute = _redistribute  # type: ignore[attr-defined]
    Tensor.full_tensor = _full_tensor  # type: ignore[attr-defined]


_attach()
