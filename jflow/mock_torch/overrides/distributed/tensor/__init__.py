"""``torch.distributed.tensor``: the module exists (``torch.distributed.is_available()`` is
True in jflow), but jflow's distributed tensors are its global tensors with SBP
(docs/sbp.md), not PyTorch's ``DTensor``: ``DTensor`` is a class no tensor is an instance of
(so ``isinstance(x, DTensor)`` probes answer False and code takes its plain-tensor path), and
building one (``distribute_tensor``, ``DTensor.from_local``, ``DeviceMesh``) raises.
Placements (``Shard(0)``, ``Replicate()``) are plain descriptions and can be built."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["DTensor", "DeviceMesh", "Placement", "Shard", "Replicate", "Partial",
           "distribute_tensor", "distribute_module", "init_device_mesh"]


def _refuse(name: str) -> NoReturn:
    raise NotImplementedError(f"torch.distributed.tensor.{name}: jflow has no DTensor; its "
                              f"distributed tensors are global tensors with SBP (flow.sbp, "
                              f"flow.placement; docs/sbp.md)")


class DTensor:
    """No jflow tensor is a DTensor; constructing one raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _refuse("DTensor")

    @staticmethod
    def from_local(*args: Any, **kwargs: Any) -> NoReturn:
        """Raises (no DTensor)."""
        _refuse("DTensor.from_local")


class DeviceMesh:
    """Raises when constructed (no DTensor)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _refuse("DeviceMesh")


class Placement:
    """A DTensor placement: a plain description (libraries build placement plans at import);
    only applying one to a tensor needs DTensor, which raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._args = args
        self._kwargs = kwargs

    def is_shard(self, dim: int | None = None) -> bool:
        """Whether this is a :class:`Shard` (of ``dim``)."""
        return False

    def is_replicate(self) -> bool:
        """Whether this is :class:`Replicate`."""
        return False

    def is_partial(self, reduce_op: str | None = None) -> bool:
        """Whether this is :class:`Partial`."""
        return False

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self._args == other._args  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._args))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self._args))})"


class Shard(Placement):
    """Sharded along ``dim``."""

    def __init__(self, dim: int = 0) -> None:
        super().__init__(dim)
        self.dim = dim

    def is_shard(self, dim: int | None = None) -> bool:
        return dim is None or dim == self.dim


class Replicate(Placement):
    """Replicated."""

    def is_replicate(self) -> bool:
        return True


class Partial(Placement):
    """Pending reduction (``reduce_op``)."""

    def __init__(self, reduce_op: str = "sum") -> None:
        super().__init__(reduce_op)
        self.reduce_op = reduce_op

    def is_partial(self, reduce_op: str | None = None) -> bool:
        return reduce_op is None or reduce_op == self.reduce_op


def distribute_tensor(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (no DTensor)."""
    _refuse("distribute_tensor")


def distribute_module(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (no DTensor)."""
    _refuse("distribute_module")


def init_device_mesh(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (no DTensor)."""
    _refuse("init_device_mesh")
