"""The hostile-file policy every checkpoint format follows, in one place: the error, its
message shape, the size bounds, and the checks that turn declared dtypes, shapes and bytes
into arrays without trusting them.

Every message names the file and the entry inside it (a zip entry, a tensor, a place in the
saved object, the header, a pickle global) so a user can tell *which* part of a large
checkpoint is bad, and what was refused. The bounds:

* :data:`MAX_NDIM` dimensions per declared shape;
* :data:`MAX_DEPTH` levels of nesting in a JSON object tree;
* :data:`MAX_MANIFEST_BYTES` for a JSON manifest, :data:`MAX_PICKLE_BYTES` for a pickle;
* a tensor's bytes must match the bytes its file holds for it, checked against the file's
  headers before anything is read or allocated; views that materialize more elements than
  their storages hold (a stride-0 expansion, overlapping views) may add at most
  :data:`MAX_EXPANSION_BYTES` in all.
"""

from __future__ import annotations

import json
import math
import reprlib
import sys
from typing import Any

import jax
import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor, _wrap

#: The most dimensions a declared shape may have (NumPy's own limit).
MAX_NDIM = 64
#: How deeply a JSON object tree may nest (decoding recurses once per level).
MAX_DEPTH = 100
#: The most a JSON manifest may inflate to.
MAX_MANIFEST_BYTES = 64 << 20
#: The most bytes a PyTorch checkpoint's pickle (``data.pkl``) may have: it holds the object
#: tree and one short record per tensor; the tensors' data lives in other entries.
MAX_PICKLE_BYTES = 256 << 20
#: PyTorch tensors are views of storages: what views may materialize beyond the bytes of
#: the storages in the file (a stride-0 ``expand``, overlapping views), all views together.
MAX_EXPANSION_BYTES = 1 << 30

_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 60
_repr.maxlevel = 3


class SerializationError(RuntimeError):
    """A file that ``flow.load`` cannot read: not a checkpoint, truncated, corrupted, or
    hostile. The message names the file and the entry that is wrong."""

    __module__ = "jflow.serialization"


def corrupted(name: str, entry: str, why: str) -> SerializationError:
    """The error for a bad ``entry`` of file ``name`` (``name`` is already quoted)."""
    return SerializationError(f"flow.load: {name} is corrupted: {entry}: {why}")


def parse_manifest(name: str, raw: bytes | str, entry: str, fmt: str, version: int,
                   what: str) -> dict:
    """A checkpoint's JSON manifest, checked for its format tag and version (both checkpoint
    kinds, zip and sharded, start so)."""
    try:
        m = json.loads(raw)
    except (ValueError, RecursionError) as err:
        raise corrupted(name, entry, f"bad JSON ({err})") from None
    got = m.get("format") if isinstance(m, dict) else None
    if got != fmt:
        raise SerializationError(f"flow.load: {name} is not {what} (format {short(got)}, "
                                 f"expected {fmt!r})")
    v = m.get("version")
    if type(v) is not int or not 1 <= v <= version:
        raise SerializationError(f"flow.load: {name} has format version {short(v)}; this "
                                 f"jflow reads versions 1 to {version}")
    return m


def short(x: Any) -> str:
    """A bounded ``repr`` for error messages: a hostile value may be huge or deeply nested."""
    return _repr.repr(x)


def shape_problem(shape: Any) -> str | None:
    """Why ``shape`` is not a declared shape we accept, or ``None`` if it is.

    A shape is a list of at most :data:`MAX_NDIM` non-negative Python ints (not bools, not
    floats: ``1.5`` must not load as ``1``). The element count is computed by the caller
    with Python ints, so ``[2**32, 2**32]`` cannot wrap around to 0 the way an int64 product
    does.
    """
    if not isinstance(shape, list) or len(shape) > MAX_NDIM:
        return f"shape {short(shape)} is not a list of at most {MAX_NDIM} sizes"
    if not all(type(s) is int and s >= 0 for s in shape):
        return f"shape {short(shape)} is not a list of non-negative integers"
    return None


def nbytes(shape: list[int], d: _dt.dtype) -> int:
    """Bytes of a ``d`` array of ``shape`` (exact: Python ints do not overflow)."""
    return math.prod(shape) * d.itemsize


def array_from_bytes(data: bytes | bytearray | memoryview, d: _dt.dtype,
                     shape: list[int], name: str, entry: str) -> np.ndarray:
    """A read-only array over little-endian ``data``, whose length the caller has checked.

    A bool tensor whose bytes are not all 0 or 1 is refused: NumPy and XLA would carry the
    odd byte along and comparisons on it would disagree.
    """
    a = np.frombuffer(data, dtype=d.np).reshape(shape)
    if sys.byteorder != "little" and a.dtype.itemsize > 1:
        a = a.byteswap()
    if a.dtype == np.bool_ and a.size and a.view(np.uint8).max() > 1:
        raise corrupted(name, entry, "a bool tensor holds bytes other than 0 and 1")
    return a


def to_tensor(a: np.ndarray, map_location: Any, location: str = "cpu") -> Tensor:
    """A jflow tensor holding a copy of ``a``, placed as PyTorch's ``map_location`` says:
    ``None`` (the default device), a device or string, a dict from saved location (``location``,
    e.g. ``"cuda:0"``) to device, or a callable ``(tensor, location)`` returning a tensor, a
    device or ``None`` (keep it)."""
    # a private copy on the device: device_put aliases host memory on CPU, and ``a`` may be a
    # view of the file's buffer (jnp.asarray would also compile a copy program per shape)
    t = _wrap(jax.device_put(np.array(a)))
    if map_location is None:
        return t
    if isinstance(map_location, dict):
        target = map_location.get(location)
        return t if target is None else t.to(target)
    if callable(map_location):
        out = map_location(t, location)
        return t if out is None else out if isinstance(out, Tensor) else t.to(out)
    return t.to(map_location)
