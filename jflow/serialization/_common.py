"""What both checkpoint formats share: the error, its message shape, and the checks that turn
declared dtypes, shapes and bytes into arrays without trusting them.

Every message names the file and the entry inside it (a zip entry, a tensor, a place in the
saved object, the header) so a user can tell *which* part of a large checkpoint is bad.
"""

from __future__ import annotations

import json
import math
import reprlib
import sys
from typing import Any

import jax.numpy as jnp
import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor, _wrap

#: The most dimensions a declared shape may have (NumPy's own limit).
MAX_NDIM = 64

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


def to_tensor(a: np.ndarray, map_location: Any) -> Tensor:
    """A jflow tensor holding a copy of ``a``, on ``map_location`` if given."""
    t = _wrap(jnp.asarray(a))
    if map_location is not None:
        t = t.to(map_location)
    return t
