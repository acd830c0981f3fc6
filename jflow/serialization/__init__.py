"""``flow.save`` / ``flow.load``: checkpoints in four formats behind one interface.

* jflow's own (the default for data: a name not ending in ``.safetensors`` / ``.pt`` /
  ``.pth`` / ``.bin``): a zip holding a JSON manifest and one raw array per tensor; it stores
  any nesting of tensors, NumPy arrays, dicts, lists, tuples, numbers, strings, ``None`` and
  dtypes, shared tensors once, and ``requires_grad`` / ``Parameter`` flags, and cannot hold
  code. See :mod:`._zipformat`.
* ``.safetensors`` (a target name ending so): a flat dict of ``str`` -> tensor, readable by
  PyTorch, Hugging Face and anything else that speaks safetensors. Needs the optional
  ``safetensors`` package. See :mod:`._safetensors`.
* a sharded checkpoint directory (a path, when the object holds global tensors): each
  process writes only its own shards; ``flow.load`` of the directory reshards onto any
  placement and SBP. See :mod:`._sharded`.
* PyTorch's own (``torch.save``'s zip of a pickle and raw storages): written for a ``.pt`` /
  ``.pth`` / ``.bin`` name, ``format="torch"``, or an object holding a whole module or
  optimizer; read with PyTorch 2.6's rules: ``weights_only=True`` (the default) rebuilds
  only tensors, containers, numbers, strings and the globals allowed with
  :func:`add_safe_globals` / :func:`safe_globals`; ``weights_only=False`` unpickles whole
  objects, running the code the file names. See :mod:`._torchformat`.

``flow.load`` recognizes every format by its content, whatever the name (:func:`._formats.detect`);
the formats share one interface and one hostile-file policy (:mod:`._formats`, :mod:`._common`):
a truncated, corrupted, foreign or crafted file raises :class:`SerializationError` naming the
file and what was refused, and memory is bounded by the tensors the file declares, each
declaration checked against the bytes actually present before any is read.

Why jflow's own format stays the default for data rather than becoming "a safetensors blob
plus a JSON manifest" or PyTorch's: the zip gives every entry a CRC-32, so a flipped bit
anywhere is a clear error, while safetensors has no checksum and loads it as a wrong value;
the zip streams one tensor at a time; and, unlike PyTorch's pickle, it cannot name code to
run, so loading it needs no allow-list.

Writes are atomic. ``save`` to a path writes ``.<name>.<host>-<pid>.<random>.tmp`` in the
target's directory, fsyncs it and renames it over the target (``os.replace``), so a failure
mid-write leaves any previous file intact, and removes its temporary; stale temporaries of
crashed writers are removed by the next save. See :func:`._atomic.remove_stale_temps`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from typing import IO, Any

from . import _formats
from ._common import SerializationError
from ._formats import LoadOptions, SaveOptions

__all__ = ["save", "load", "SerializationError", "add_safe_globals", "safe_globals",
           "get_safe_globals", "clear_safe_globals"]


def save(obj: Any, f: str | os.PathLike[str] | IO[bytes], pickle_module: Any = None,
         pickle_protocol: int = 2, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False, *, sharded: bool | None = None,
         format: str | None = None) -> None:
    """Save ``obj`` to the path or binary file object ``f``, atomically for a path (if
    anything fails the previous file at ``f`` is untouched).

    The format (``docs/serialization.md``): ``format=`` (``"jflow"``, ``"torch"``,
    ``"safetensors"``) if given; otherwise a name ending in ``.safetensors`` gets a
    safetensors file (``obj`` a flat dict of ``str`` -> tensor); an object holding global
    tensors saved to a path gets a sharded checkpoint directory (a collective: every process
    calls ``save``; ``sharded=False`` gathers them into one file instead, ``sharded=True``
    forces a directory); a name ending in ``.pt`` / ``.pth`` / ``.bin``, or an object that is
    or holds a module, optimizer or other object with ``state_dict()`` (``torch.save(model,
    f)``), gets PyTorch's format, which real PyTorch loads (a state dict with
    ``weights_only=True``); anything else gets jflow's format, which holds tensors, NumPy
    arrays, dicts, lists, tuples, numbers, strings, ``None`` and dtypes (other objects are a
    ``TypeError``: pass ``format="torch"`` to pickle them).

    ``pickle_protocol`` is used by PyTorch's format (2, as PyTorch); ``pickle_module``
    (``None`` or ``pickle``), ``_use_new_zipfile_serialization`` and
    ``_disable_byteorder_record`` are accepted and ignored (the zip format is always written,
    with its byte order).
    """
    import pickle as _pickle

    if pickle_module not in (None, _pickle):
        raise TypeError("flow.save: pickle_module must be None or the pickle module")
    if isinstance(f, (str, os.PathLike)):
        target: str | IO[bytes] = os.fspath(f)
    elif hasattr(f, "write"):
        target = f
    else:
        raise TypeError(f"flow.save: f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    fmt = _formats.for_save(obj, target, format, sharded)
    fmt.save(obj, target, SaveOptions(pickle_protocol=pickle_protocol))


def load(f: str | os.PathLike[str] | IO[bytes], map_location: Any = None,
         pickle_module: Any = None, *, weights_only: bool | None = None, mmap: bool | None = None,
         placement: Any = None, sbp: Any = None, **pickle_load_args: Any) -> Any:
    """Load a checkpoint in any of the four formats (recognized by content): what
    :func:`save` wrote, a safetensors file (a dict of tensors), a sharded checkpoint
    directory, or a PyTorch ``torch.save`` file (``pytorch_model.bin`` ...).

    Tensors come back on the default device, or as ``map_location`` says (a device or
    string, a dict from saved location to device, or a callable ``(tensor, location)``).
    Raises :class:`SerializationError` for a file that is not a checkpoint, is truncated,
    corrupted or crafted, naming the file and what was refused.

    ``weights_only`` (default ``True``, as PyTorch 2.6+) matters for PyTorch's format only
    (the others hold no code): ``True`` rebuilds only tensors, containers, numbers, strings,
    bytes and the globals allowed by :func:`add_safe_globals` / :func:`safe_globals`, and
    calls nothing else; ``False`` unpickles whole objects (modules ...), importing and
    running whatever the file names: only for files you trust. PyTorch's legacy non-zip
    format (a raw pickle) is refused. ``mmap`` is accepted (tensors are read into memory);
    ``pickle_module`` only as ``pickle`` with ``weights_only=False``; ``pickle_load_args``
    (``encoding=...``) are accepted and unused.

    A sharded checkpoint directory loads its global tensors as global tensors, resharded to
    the layout asked for: by default the saved placement and SBP; ``placement=`` (a
    ``flow.placement``) and/or ``sbp=`` (a ``flow.sbp`` value or one per hierarchy axis, for
    every global tensor, or a dict of top-level key -> sbp) choose another one;
    ``map_location=`` loads them as local tensors (their logical values) instead. Each
    process reads only the byte ranges of the shards its devices need.
    """
    import pickle as _pickle

    if pickle_module is not None and (pickle_module is not _pickle or weights_only is not False):
        raise SerializationError(
            "flow.load: pickle_module is not supported (only pickle itself, with "
            "weights_only=False: jflow unpickles with its own restricted unpickler, and "
            "PyTorch refuses an explicit pickle_module with weights_only=True too)")
    if weights_only not in (None, True, False) or mmap not in (None, True, False):
        raise TypeError("flow.load: weights_only and mmap must be None or a bool")
    opts = LoadOptions(map_location=map_location, weights_only=weights_only is not False,
                       allowed=get_safe_globals(), placement=placement, sbp=sbp)
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        fmt = _formats.detect(path)
        if fmt is not _formats.SHARDED and (placement is not None or sbp is not None):
            raise ValueError(f"flow.load: placement= and sbp= apply to a sharded checkpoint "
                             f"directory (what flow.save writes for global tensors); "
                             f"{path!r} is a file")
        return fmt.load(path, opts)
    if not hasattr(f, "read"):
        raise TypeError(f"flow.load: f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    if placement is not None or sbp is not None:
        raise ValueError("flow.load: placement= and sbp= apply to a sharded checkpoint "
                         "directory, not a file object")
    src = _formats.seekable(f)
    return _formats.detect(src).load(src, opts)


# -- PyTorch's allowlist of globals for weights_only unpickling ---------------------------------
_safe_globals: list[Any] = []


def _checked_globals(safe_globals: Iterable[Any]) -> list[Any]:
    out = list(safe_globals)
    for g in out:
        if isinstance(g, tuple) and not (len(g) == 2 and isinstance(g[1], str)):
            raise TypeError(f"flow.serialization: a safe global given as a tuple must be "
                            f"(object, 'module.name'), got {g!r}")
    return out


def add_safe_globals(safe_globals: Iterable[Any]) -> None:
    """``torch.serialization.add_safe_globals``: allow ``weights_only=True`` loads of PyTorch
    checkpoints to use these globals (classes, functions; or ``(obj, "module.name")`` for an
    object a file names by another path). A class is matched by its ``module.qualname``; a
    PyTorch name such as ``torch.nn.modules.linear.Linear`` matches jflow's equivalent
    (``flow.nn.Linear``). Allowed classes may be created and have their state set; allowed
    functions may be called: allow only what you trust."""
    _safe_globals.extend(_checked_globals(safe_globals))


def get_safe_globals() -> list[Any]:
    """The globals :func:`add_safe_globals` and :func:`safe_globals` allow now."""
    return list(_safe_globals)


def clear_safe_globals() -> None:
    """Forget every global :func:`add_safe_globals` allowed."""
    _safe_globals.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: Iterable[Any]) -> Iterator[None]:
    """``torch.serialization.safe_globals``: allow ``safe_globals`` (as
    :func:`add_safe_globals`) inside the ``with`` block only."""
    added = _checked_globals(safe_globals)
    _safe_globals.extend(added)
    try:
        yield
    finally:
        for g in added:
            for i in range(len(_safe_globals) - 1, -1, -1):
                if _safe_globals[i] is g:
                    del _safe_globals[i]
                    break
