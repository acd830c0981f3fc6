"""``flow.save`` / ``flow.load``: checkpoints in files that cannot run code.

Two formats, neither of which is pickle (loading only builds tensors, NumPy arrays, dicts,
lists, tuples, numbers, strings, ``None`` and dtypes, so a file cannot execute code):

* jflow's own (any name not ending in ``.safetensors``): a zip holding a JSON manifest and
  one raw array per tensor; it stores any nesting of the types above, shared tensors once,
  and ``requires_grad`` / ``Parameter`` flags. See :mod:`._zipformat`.
* ``.safetensors`` (a target name ending so): a flat dict of ``str`` -> tensor, readable by
  PyTorch, Hugging Face and anything else that speaks safetensors. ``flow.load`` recognizes
  a safetensors file by its content, whatever its name. Needs the optional ``safetensors``
  package. See :mod:`._safetensors`.

Why jflow's own format did not become "a safetensors blob plus a JSON manifest": the zip
gives every entry a CRC-32, so a flipped bit anywhere is a clear error, while safetensors has
no checksum and loads it as a wrong value; the zip streams one tensor at a time where the
safetensors writer wants every tensor at hand, and its tensors cannot be memory-mapped from
inside a zip anyway, so no other tool could read them in place; and it would make the core
format depend on an optional package, and every existing checkpoint need a second reader.
Exchange with other tools is what ``.safetensors`` targets are for.

Hostile files. ``flow.load`` treats every file as hostile: a truncated, corrupted, foreign or
crafted file raises :class:`SerializationError` naming the file and the entry at fault, and
never anything else; memory is bounded by the tensors the file declares, each declaration
checked against the bytes actually present before any is read or inflated.

Writes are atomic. ``save`` to a path writes ``.<name>.<host>-<pid>.<random>.tmp`` in the
target's directory, fsyncs it and renames it over the target (``os.replace``), so a failure
mid-write leaves any previous file intact, and removes its temporary. A writer killed
mid-save cannot remove it, so each save first removes stale temporaries of the same target:
regular files of the current user, named as above for this target, whose writer process no
longer exists on this host, or which nobody has modified for 6 hours (writers on other hosts
sharing the directory, temporaries of older jflow versions). A live writer's temporary is
never removed. See :func:`._atomic.remove_stale_temps`.
"""

from __future__ import annotations

import io
import os
from typing import IO, Any

from . import _atomic, _safetensors, _zipformat
from ._common import SerializationError

__all__ = ["save", "load", "SerializationError"]


def save(obj: Any, f: str | os.PathLike[str] | IO[bytes]) -> None:
    """Save ``obj`` (a tensor, or nested dicts / lists / tuples of tensors, NumPy arrays,
    numbers, strings, ``None``, dtypes) to the path or binary file object ``f``.

    A path ending in ``.safetensors`` gets a safetensors file; ``obj`` must then be a flat
    dict of ``str`` -> tensor (``requires_grad`` and ``Parameter`` are not recorded). A path
    is written atomically: if anything fails the previous file at ``f`` is untouched. Global
    tensors are saved as their logical (full) value and load as local tensors. In jflow's
    format a tensor referenced twice is stored once and loads as one tensor.
    """
    if not isinstance(f, (str, os.PathLike)):
        if not hasattr(f, "write"):
            raise TypeError(f"flow.save: f must be a path or a binary file object, got "
                            f"{type(f).__name__}")
        _zipformat.write(f, _zipformat.encode(obj))
        return
    path = os.fspath(f)
    if _safetensors.is_safetensors_path(path):
        arrays = _safetensors.arrays_to_save(obj, path)
        _atomic.write_atomically(path, lambda tmp: _safetensors.write(tmp, arrays))
    else:
        encoded = _zipformat.encode(obj)
        _atomic.write_atomically(path, lambda tmp: _zipformat.write_path(tmp, encoded))


def load(f: str | os.PathLike[str] | IO[bytes], map_location: Any = None) -> Any:
    """Load what :func:`save` wrote, or any safetensors file (as a dict of tensors). Tensors
    come back on the default device, or on ``map_location``.

    Raises :class:`SerializationError` for a file that is not a checkpoint, is truncated,
    corrupted or crafted; never unpickles anything.
    """
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        with open(path, "rb") as fh:
            return _load(fh, repr(path), map_location, path)
    if not hasattr(f, "read"):
        raise TypeError(f"flow.load: f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    return _load(_seekable(f), "the file object", map_location, None)


def _seekable(f: IO[bytes]) -> IO[bytes]:
    """``f``, or its remaining bytes in memory if it cannot seek (both formats need to)."""
    seekable = getattr(f, "seekable", None)
    return f if seekable is not None and seekable() else io.BytesIO(f.read())


def _load(src: IO[bytes], name: str, map_location: Any, path: str | None) -> Any:
    start = src.tell()
    head = src.read(9)
    src.seek(start)
    if _safetensors.looks_like_safetensors(head):
        return _safetensors.load(src, name, map_location, path)
    return _zipformat.load(src, name, map_location)
