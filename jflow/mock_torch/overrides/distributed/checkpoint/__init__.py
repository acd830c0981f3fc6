"""``torch.distributed.checkpoint`` (DCP): sharded checkpoint files are not in jflow (save a
state dict with ``flow.save``): ``save`` / ``load`` and the storage readers / writers raise;
``state_dict``'s helpers work for jflow modules (their state is whole on every rank)."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["save", "load", "FileSystemReader", "FileSystemWriter"]


def _refuse(name: str) -> NoReturn:
    raise NotImplementedError(f"torch.distributed.checkpoint.{name}: jflow has no sharded "
                              f"(DCP) checkpoints; use flow.save(model.state_dict(), path)")


def save(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("save")


def load(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("load")


class _Refused:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _refuse(type(self).__name__)


class FileSystemReader(_Refused):
    """Raises when constructed."""


class FileSystemWriter(_Refused):
    """Raises when constructed."""
