"""The checkpoint formats behind one interface.

Each :class:`Format` has a bounded reader (:meth:`Format.read`: a hostile file raises
:class:`SerializationError` naming the file and what was refused, under the bounds of
``_common``) and an atomic writer (:meth:`Format.save`: everything that can fail about the
object fails before a file is touched; a path is replaced atomically by ``_atomic``).
:func:`detect` says which format a file or directory holds, by its content, never its name;
:func:`for_save` which format a save writes.

========================  ==================================================================
format                    what it is
========================  ==================================================================
:data:`JFLOW`             jflow's zip: a JSON manifest and raw arrays (``_zipformat``)
:data:`SAFETENSORS`       a flat dict of tensors (``_safetensors``)
:data:`SHARDED`           a directory of per-process safetensors shards (``_sharded``)
:data:`TORCH`             PyTorch's zip of a pickle and raw storages (``_torchformat``)
========================  ==================================================================
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from . import _atomic, _safetensors, _sharded, _torchformat, _zipformat
from ._common import SerializationError

Target = str | IO[bytes]
#: Writes the encoded object to a path (the atomic writer's temporary) or a file object.
Writer = Callable[[Target], None]

#: ``format=`` values :func:`for_save` accepts.
FORMATS = ("jflow", "torch", "safetensors")


@dataclass
class LoadOptions:
    map_location: Any = None
    weights_only: bool = True
    allowed: list[Any] = field(default_factory=list)  # the safe globals of this load
    placement: Any = None
    sbp: Any = None


@dataclass
class SaveOptions:
    pickle_protocol: int = 2


class Format:
    """A checkpoint format: a bounded reader and an atomic writer."""

    name = ""

    def read(self, src: IO[bytes], name: str, path: str | None, opts: LoadOptions) -> Any:
        """The object in the seekable ``src`` (``name`` for messages; ``path`` if it is a
        file, to memory-map it)."""
        raise NotImplementedError

    def encode(self, obj: Any, where: str, opts: SaveOptions) -> Writer:
        """``obj`` checked and encoded; raises ``TypeError``/``ValueError`` before any file is
        touched if this format cannot hold it."""
        raise NotImplementedError

    def load(self, target: str | IO[bytes], opts: LoadOptions) -> Any:
        if isinstance(target, str):
            with open(target, "rb") as fh:
                return self.read(fh, repr(target), target, opts)
        return self.read(target, "the file object", None, opts)

    def save(self, obj: Any, target: str | IO[bytes], opts: SaveOptions) -> None:
        write = self.encode(obj, target if isinstance(target, str) else "the file object",
                            opts)
        if isinstance(target, str):
            _atomic.write_atomically(target, write)
        else:
            write(target)


def _to(target: Target, write: Callable[[IO[bytes]], None]) -> None:
    if isinstance(target, str):
        with open(target, "wb") as out:
            write(out)
    else:
        write(target)


class _Jflow(Format):
    name = "jflow"

    def read(self, src, name, path, opts):
        return _zipformat.load(src, name, opts.map_location)

    def encode(self, obj, where, opts):
        try:
            enc = _zipformat.encode(obj)
        except TypeError as err:
            raise TypeError(f"{err}. To pickle arbitrary objects, save with format='torch' "
                            f"(PyTorch's format; loading them needs weights_only=False or "
                            f"an allow-list: flow.serialization.add_safe_globals)") from None
        return lambda target: _to(target, lambda f: _zipformat.write(f, enc))


class _Safetensors(Format):
    name = "safetensors"

    def read(self, src, name, path, opts):
        return _safetensors.load(src, name, opts.map_location, path)

    def encode(self, obj, where, opts):
        arrays = _safetensors.arrays_to_save(obj, where)

        def write(target: Target) -> None:
            if isinstance(target, str):
                _safetensors.write(target, arrays)
            else:
                target.write(_safetensors.safetensors_numpy.save(arrays,
                                                                 metadata=_safetensors.METADATA))
        return write


class _Torch(Format):
    name = "torch"

    def read(self, src, name, path, opts):
        return _torchformat.load(src, name, opts.map_location, opts.weights_only, opts.allowed)

    def encode(self, obj, where, opts):
        pickled, storages = _torchformat.pickle_object(obj, opts.pickle_protocol)
        return lambda target: _to(target, lambda f: _torchformat.write(f, pickled, storages))


class _Sharded(Format):
    """A directory: written by every process, committed by ``manifest.json`` (its own
    atomic protocol, see ``_sharded``)."""

    name = "sharded"

    def load(self, target, opts):
        return _sharded.load(target, opts.map_location, opts.placement, opts.sbp)

    def save(self, obj, target, opts):
        _sharded.save(obj, target)


JFLOW, SAFETENSORS, TORCH, SHARDED = _Jflow(), _Safetensors(), _Torch(), _Sharded()


def detect(target: str | IO[bytes]) -> Format:
    """The format of the directory or file at path ``target``, or of the seekable binary
    file object ``target`` (left at its position), by content. A raw pickle (PyTorch's
    legacy format) raises :class:`SerializationError`; anything unrecognized is
    :data:`JFLOW`, whose reader says what is wrong with it."""
    if isinstance(target, str):
        if os.path.isdir(target):
            return SHARDED
        with open(target, "rb") as fh:
            return _detect_file(fh, repr(target))
    return _detect_file(target, "the file object")


def _detect_file(src: IO[bytes], name: str) -> Format:
    start = src.tell()
    head = src.read(9)
    src.seek(start)
    if _safetensors.looks_like_safetensors(head):
        return SAFETENSORS
    if head[:1] == b"\x80":
        raise SerializationError(
            f"flow.load: {name} is a raw pickle file: PyTorch's legacy format (torch.save "
            f"before 1.6, or with _use_new_zipfile_serialization=False) or a plain Python "
            f"pickle. flow.load reads PyTorch's zip format, never a raw pickle, whatever "
            f"weights_only says (weights_only=False does not change that). Re-save it with "
            f"PyTorch: torch.save(torch.load(path, weights_only=True), new_path)")
    if head[:2] == b"PK":
        try:
            with zipfile.ZipFile(src) as z:
                names = z.namelist()
        except Exception:  # noqa: BLE001  (damaged: jflow's reader reports it)
            names = []
        finally:
            src.seek(start)
        if "jflow.json" not in names and _torchformat.is_torch_zip(names):
            return TORCH
    return JFLOW


def for_save(obj: Any, target: str | IO[bytes], format: str | None,
             sharded: bool | None) -> Format:
    """The format ``flow.save(obj, target, format=..., sharded=...)`` writes (see
    ``docs/serialization.md``): ``format`` if given; else a ``.safetensors`` name gives
    safetensors, global tensors a sharded directory, a ``.pt`` / ``.pth`` / ``.bin`` name or
    an object holding a module or optimizer PyTorch's format, anything else jflow's."""
    if format is not None and format not in FORMATS:
        raise ValueError(f"flow.save: format must be None or one of {FORMATS}, got {format!r}")
    if sharded not in (None, True, False):
        raise TypeError(f"flow.save: sharded must be None, True or False, got {sharded!r}")
    path = target if isinstance(target, str) else None
    if sharded:
        if path is None:
            raise TypeError("flow.save: sharded=True needs a directory path for f, not a "
                            "file object")
        if format is not None:
            raise ValueError(f"flow.save: sharded=True writes a directory; format={format!r} "
                             f"does not apply")
    if (path is not None and _safetensors.is_safetensors_path(path)
            and format in (None, "safetensors")):
        if sharded:
            raise ValueError(f"flow.save: {path!r} ends in .safetensors, but a sharded "
                             f"checkpoint is a directory; choose another name")
        return SAFETENSORS
    if sharded or (path is not None and sharded is None and format is None
                   and _sharded.holds_global(obj)):
        return SHARDED
    if format is not None:
        return {"jflow": JFLOW, "torch": TORCH, "safetensors": SAFETENSORS}[format]
    if path is not None and _torchformat.is_torch_path(path):
        return TORCH
    return TORCH if holds_object(obj) else JFLOW


def holds_object(obj: Any, depth: int = 0) -> bool:
    """Whether ``obj`` is or holds (in dicts, lists, tuples) a module, optimizer or other
    object with a ``state_dict()``: what PyTorch users ``torch.save`` whole."""
    if depth > 32 or isinstance(obj, (str, bytes, int, float, type(None))):
        return False
    if callable(getattr(type(obj), "state_dict", None)):
        return True
    if isinstance(obj, dict):
        return any(holds_object(v, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(holds_object(v, depth + 1) for v in obj)
    return False


def seekable(f: IO[bytes]) -> IO[bytes]:
    """``f``, or its remaining bytes in memory if it cannot seek (every reader seeks)."""
    can = getattr(f, "seekable", None)
    return f if can is not None and can() else io.BytesIO(f.read())
