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
* a sharded checkpoint directory (a path, when the object holds global tensors): each
  process writes only its own shards to its own safetensors file, process 0 commits a JSON
  manifest last; ``flow.load`` of the directory reshards onto any placement and SBP, reading
  only the byte ranges each process needs. See :mod:`._sharded`.

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

PyTorch's pickle-based API, and what it becomes here. ``flow.save(model)`` (a whole module,
optimizer or other object with a ``state_dict``: PyTorch pickles its class by reference) is
refused with a message saying to save ``model.state_dict()``: a loadable module would have to
run its class's code at load time. ``flow.load`` accepts PyTorch's keywords (``weights_only``,
``mmap``, ``map_location``); ``weights_only=False`` does *not*
enable unpickling (nothing does), and a PyTorch pickle checkpoint is refused with a message
saying how to convert it. ``add_safe_globals`` / ``safe_globals`` / ``get_safe_globals`` /
``clear_safe_globals`` are accepted and change nothing: jflow never unpickles, so there is no
allowlist to extend.
"""

from __future__ import annotations

import contextlib
import io
import os
import zipfile
from collections.abc import Iterable, Iterator
from typing import IO, Any

from . import _atomic, _safetensors, _sharded, _zipformat
from ._common import SerializationError

__all__ = ["save", "load", "SerializationError", "add_safe_globals", "safe_globals",
           "get_safe_globals", "clear_safe_globals"]

_PICKLE_HINT = (
    "jflow never unpickles (weights_only=False does not change that: a pickle can run any "
    "code on load). To convert a PyTorch checkpoint, in PyTorch run "
    "`safetensors.torch.save_file(torch.load(path, weights_only=True), 'model.safetensors')` "
    "(a state dict of tensors) and flow.load the .safetensors file")


def save(obj: Any, f: str | os.PathLike[str] | IO[bytes], pickle_module: Any = None,
         pickle_protocol: int = 2, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False, *, sharded: bool | None = None) -> None:
    """Save ``obj`` (a tensor, or nested dicts / lists / tuples of tensors, NumPy arrays,
    numbers, strings, ``None``, dtypes) to the path or binary file object ``f``.

    A path ending in ``.safetensors`` gets a safetensors file; ``obj`` must then be a flat
    dict of ``str`` -> tensor (``requires_grad`` and ``Parameter`` are not recorded). A path
    is written atomically: if anything fails the previous file at ``f`` is untouched. Global
    tensors go to a sharded checkpoint directory (below). In jflow's format a tensor
    referenced twice is stored once and loads as one tensor.

    Sharded checkpoints: when ``obj`` holds a global tensor and ``f`` is a path not ending in
    ``.safetensors`` (or with ``sharded=True``), ``f`` becomes a *directory*: every process
    writes only the shards it owns, in parallel, to its own file, and process 0 commits a
    ``manifest.json`` last, so a save that fails leaves the previous checkpoint loadable.
    Every process must call ``save`` with the same object (it is a collective). A partial
    sum is reduced before it is written. ``sharded=False`` gathers every global tensor to
    its logical value in one file instead (loading gives local tensors). See
    :mod:`._sharded` for the layout.

    A module, optimizer or scheduler (anything with a ``state_dict()`` method) is refused:
    save ``obj.state_dict()`` instead (loading a whole object would mean running its code).
    ``pickle_module`` / ``pickle_protocol`` / ``_use_new_zipfile_serialization`` (PyTorch's
    keywords) are accepted and ignored.
    """
    _refuse_objects(obj, "obj", 0)
    if sharded not in (None, True, False):
        raise TypeError(f"flow.save: sharded must be None, True or False, got {sharded!r}")
    if not isinstance(f, (str, os.PathLike)):
        if not hasattr(f, "write"):
            raise TypeError(f"flow.save: f must be a path or a binary file object, got "
                            f"{type(f).__name__}")
        if sharded:
            raise TypeError("flow.save: sharded=True needs a directory path for f, not a "
                            "file object")
        _zipformat.write(f, _zipformat.encode(obj))
        return
    path = os.fspath(f)
    if sharded is None:
        sharded = not _safetensors.is_safetensors_path(path) and _sharded.holds_global(obj)
    if sharded:
        if _safetensors.is_safetensors_path(path):
            raise ValueError(f"flow.save: {path!r} ends in .safetensors, but a sharded "
                             f"checkpoint is a directory; choose another name")
        _sharded.save(obj, path)
        return
    if _safetensors.is_safetensors_path(path):
        arrays = _safetensors.arrays_to_save(obj, path)
        _atomic.write_atomically(path, lambda tmp: _safetensors.write(tmp, arrays))
    else:
        encoded = _zipformat.encode(obj)
        _atomic.write_atomically(path, lambda tmp: _zipformat.write_path(tmp, encoded))


def load(f: str | os.PathLike[str] | IO[bytes], map_location: Any = None,
         pickle_module: Any = None, *, weights_only: bool | None = None, mmap: bool | None = None,
         placement: Any = None, sbp: Any = None, **pickle_load_args: Any) -> Any:
    """Load what :func:`save` wrote, or any safetensors file (as a dict of tensors). Tensors
    come back on the default device, or on ``map_location``.

    Raises :class:`SerializationError` for a file that is not a checkpoint, is truncated,
    corrupted or crafted; never unpickles anything. PyTorch's keywords are accepted:
    ``weights_only`` (either value: loading only ever builds data, so it is always "weights
    only"; ``False`` does not enable unpickling, and a pickle file's error says so), ``mmap``
    (accepted; tensors are read into memory) and ``pickle_load_args`` (``encoding=...``)
    accepted and unused; a ``pickle_module`` is refused.

    A sharded checkpoint directory (what ``save`` writes for global tensors) loads its
    global tensors as global tensors, resharded to the layout asked for: by default the
    saved placement and SBP; ``placement=`` (a ``flow.placement``) and/or ``sbp=`` (a
    ``flow.sbp`` value or one per hierarchy axis, for every global tensor, or a dict of
    top-level key -> sbp; keys not in it keep their saved SBP) choose another one, e.g. a
    checkpoint saved on 8 devices as ``S(0)`` loads on 4 as ``B``. ``map_location=`` loads
    them as local tensors (their logical values) on that device instead. Each process reads
    only the byte ranges of the shards its devices need. To keep a model's own layouts,
    ``model.load_state_dict(flow.load(dir))``: ``copy_`` keeps each parameter's placement
    and SBP.
    """
    if pickle_module is not None:
        raise SerializationError(f"flow.load: pickle_module is not supported; {_PICKLE_HINT}")
    if weights_only not in (None, True, False) or mmap not in (None, True, False):
        raise TypeError("flow.load: weights_only and mmap must be None or a bool")
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        if os.path.isdir(path):
            return _sharded.load(path, map_location, placement, sbp)
        if placement is not None or sbp is not None:
            raise ValueError(f"flow.load: placement= and sbp= apply to a sharded checkpoint "
                             f"directory (what flow.save writes for global tensors); "
                             f"{path!r} is a file")
        with open(path, "rb") as fh:
            return _load(fh, repr(path), map_location, path)
    if not hasattr(f, "read"):
        raise TypeError(f"flow.load: f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    if placement is not None or sbp is not None:
        raise ValueError("flow.load: placement= and sbp= apply to a sharded checkpoint "
                         "directory, not a file object")
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
    try:
        return _zipformat.load(src, name, map_location)
    except SerializationError as e:
        if _is_pickle(src, start, head):
            raise SerializationError(f"flow.load: {name} is a pickle file (a PyTorch "
                                     f"torch.save checkpoint or a Python pickle), which jflow "
                                     f"does not load. {_PICKLE_HINT}") from e
        raise


def _is_pickle(src: IO[bytes], start: int, head: bytes) -> bool:
    """Whether the file is a pickle: a raw one (protocol 2+ starts with 0x80), or a zip
    holding ``<name>/data.pkl`` (``torch.save``'s format). Only names are read, never data."""
    if head[:1] == b"\x80":
        return True
    if not head.startswith(b"PK"):
        return False
    try:
        src.seek(start)
        with zipfile.ZipFile(src) as z:
            return any(n == "data.pkl" or n.endswith("/data.pkl") for n in z.namelist()[:4096])
    except Exception:  # noqa: BLE001  (any damage: not recognizably a pickle; keep the error)
        return False


def _refuse_objects(obj: Any, where: str, depth: int) -> None:
    """Refuse a module / optimizer (anything with ``state_dict()``) anywhere in ``obj``,
    naming where and saying what to save instead."""
    if depth > 32 or isinstance(obj, (str, bytes, int, float, type(None))):
        return
    if callable(getattr(type(obj), "state_dict", None)):
        kind = type(obj).__name__
        rebuild = (f" and rebuild with {kind}(...).load_state_dict(flow.load(path))"
                   if where == "obj" else "")
        raise TypeError(f"flow.save: cannot save a {kind} object at {where}: jflow saves only "
                        f"data (tensors, arrays, dicts, lists, tuples, numbers, strings), never "
                        f"objects whose loading would run code. Save {where}.state_dict() "
                        f"instead{rebuild}")
    if isinstance(obj, dict):
        for k, v in obj.items():
            _refuse_objects(v, f"{where}[{k!r}]", depth + 1)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _refuse_objects(v, f"{where}[{i}]", depth + 1)


# -- PyTorch's allowlist of globals for weights_only unpickling: nothing to allow here --------
_safe_globals: list[Any] = []


def add_safe_globals(safe_globals: Iterable[Any]) -> None:
    """``torch.serialization.add_safe_globals``: accepted and recorded, changes nothing
    (jflow never unpickles, so no class is ever looked up by a load)."""
    _safe_globals.extend(safe_globals)


def get_safe_globals() -> list[Any]:
    """What :func:`add_safe_globals` recorded."""
    return list(_safe_globals)


def clear_safe_globals() -> None:
    """Forget what :func:`add_safe_globals` recorded."""
    _safe_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: Iterable[Any]) -> Iterator[None]:
    """``torch.serialization.safe_globals``: a context manager that records ``safe_globals``
    inside the block; changes nothing (jflow never unpickles)."""
    added = list(safe_globals)
    n = len(_safe_globals)
    _safe_globals.extend(added)
    try:
        yield
    finally:
        del _safe_globals[n:]
