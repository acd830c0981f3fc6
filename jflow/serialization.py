"""``flow.save`` / ``flow.load``: tensors and state dicts in a file that cannot run code.

The file is a zip container (stored, not compressed) holding ``jflow.json`` — a manifest
with the format name and version, the saved object encoded as JSON, and for each tensor its
dtype, shape and flags — and one raw little-endian array per tensor (``data/<i>``). Nothing
is pickled: loading only builds tensors, NumPy arrays, dicts, lists, tuples, numbers,
strings, ``None`` and dtypes, so a file cannot execute code. ``save`` writes a temporary file
in the target's directory and renames it over the target (``os.replace``), so a failure
mid-write leaves any previous file intact. A truncated, corrupted or foreign file raises
:class:`SerializationError` saying so.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
import zipfile
from collections import OrderedDict
from typing import IO, Any

import jax.numpy as jnp
import numpy as np

from . import dtypes as _dt
from .tensor import Tensor, _wrap

__all__ = ["save", "load", "SerializationError"]

FORMAT = "jflow.save"
VERSION = 1
MANIFEST = "jflow.json"


class SerializationError(RuntimeError):
    """A file that ``flow.load`` cannot read: not a jflow file, truncated, or corrupted."""


# -- encoding ----------------------------------------------------------------------------------
class _Encoder:
    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self.entries: list[dict[str, Any]] = []
        self._ids: dict[int, int] = {}
        self._keep: list[Any] = []  # keep encoded objects alive so ids stay unique

    def _array(self, obj: Any, a: np.ndarray, meta: dict[str, Any]) -> int:
        key = id(obj)
        if key in self._ids:
            return self._ids[key]
        i = len(self.arrays)
        self._ids[key] = i
        self._keep.append(obj)
        if not a.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
            a = a.copy(order="C")
        self.arrays.append(a)
        self.entries.append({"dtype": _dtype_name(a.dtype), "shape": list(a.shape),
                             "nbytes": int(a.nbytes), **meta})
        return i

    def encode(self, obj: Any, path: str) -> Any:
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return float(obj)
        if isinstance(obj, Tensor):
            from .nn.parameter import Parameter
            a = np.asarray(obj.detach().numpy())
            return {"$tensor": self._array(obj, a, {
                "requires_grad": bool(obj.requires_grad and obj.is_leaf),
                "parameter": isinstance(obj, Parameter)})}
        if isinstance(obj, np.ndarray):
            if obj.dtype.kind not in "biuf" and obj.dtype.name != "bfloat16":
                raise TypeError(f"flow.save: cannot save a NumPy array of dtype {obj.dtype} "
                                f"at {path}")
            return {"$ndarray": self._array(obj, obj, {})}
        if isinstance(obj, np.generic):
            return self.encode(obj.item(), path)
        if isinstance(obj, _dt.dtype):
            return {"$dtype": obj.name}
        if isinstance(obj, dict):
            items = [[self.encode(k, f"{path} (key {k!r})"), self.encode(v, f"{path}[{k!r}]")]
                     for k, v in obj.items()]
            return {"$dict": items, "ordered": isinstance(obj, OrderedDict)}
        if isinstance(obj, list):
            return [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]
        if isinstance(obj, tuple):
            return {"$tuple": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        raise TypeError(f"flow.save: cannot save an object of type {type(obj).__name__} at "
                        f"{path} (supported: tensors, NumPy arrays, dicts, lists, tuples, "
                        f"numbers, strings, None, dtypes)")


def _dtype_name(d: np.dtype) -> str:
    try:
        return _dt.from_numpy_dtype(d).name
    except Exception:  # noqa: BLE001
        raise TypeError(f"flow.save: unsupported array dtype {d}") from None


def _write_array(zf: zipfile.ZipFile, name: str, a: np.ndarray) -> None:
    if sys.byteorder != "little" and a.dtype.itemsize > 1:
        a = a.byteswap()
    with zf.open(name, "w", force_zip64=True) as f:
        f.write(memoryview(a.reshape(-1).view(np.uint8)))


def _write(f: IO[bytes], enc: _Encoder, root: Any) -> None:
    manifest = {"format": FORMAT, "version": VERSION, "byteorder": "little",
                "tensors": enc.entries, "object": root}
    text = json.dumps(manifest, allow_nan=True, separators=(",", ":"))
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr(MANIFEST, text)
        for i, a in enumerate(enc.arrays):
            _write_array(zf, f"data/{i}", a)


def save(obj: Any, f: str | os.PathLike[str] | IO[bytes]) -> None:
    """Save ``obj`` (a tensor, or nested dicts / lists / tuples of tensors, NumPy arrays,
    numbers, strings, ``None``) to the path or binary file object ``f``.

    A path is written atomically: to a temporary file in the same directory, flushed to disk,
    then renamed over ``f``; if anything fails the previous file at ``f`` is untouched. Global
    tensors are saved as their logical (full) value and load as local tensors. A tensor
    referenced twice is stored once and loads as one tensor.
    """
    enc = _Encoder()
    root = enc.encode(obj, "obj")
    if not isinstance(f, (str, os.PathLike)):
        if not hasattr(f, "write"):
            raise TypeError(f"flow.save: f must be a path or a binary file object, got "
                            f"{type(f).__name__}")
        _write(f, enc, root)
        return
    path = os.fspath(f)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                               dir=directory)
    try:
        with os.fdopen(fd, "wb") as out:
            _write(out, enc, root)
            out.flush()
            os.fsync(out.fileno())
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mask = os.umask(0)
            os.umask(mask)
            mode = 0o666 & ~mask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


# -- decoding ----------------------------------------------------------------------------------
class _Decoder:
    def __init__(self, zf: zipfile.ZipFile, entries: list[dict[str, Any]], name: str,
                 map_location: Any) -> None:
        self.zf, self.entries, self.name, self.map_location = zf, entries, name, map_location
        self._tensors: dict[int, Tensor] = {}
        self._arrays: dict[int, np.ndarray] = {}

    def _bad(self, why: str) -> SerializationError:
        return SerializationError(f"flow.load: {self.name} is corrupted: {why}")

    def _raw(self, i: Any) -> np.ndarray:
        if not isinstance(i, int) or not 0 <= i < len(self.entries):
            raise self._bad(f"reference to tensor {i!r}, but the file has "
                            f"{len(self.entries)}")
        e = self.entries[i]
        try:
            d = _dt.as_dtype(e["dtype"]).np
            shape = tuple(int(s) for s in e["shape"])
        except (KeyError, TypeError, ValueError) as err:
            raise self._bad(f"bad entry for tensor {i}: {err}") from None
        try:
            data = self.zf.read(f"data/{i}")
        except KeyError:
            raise self._bad(f"the data of tensor {i} is missing") from None
        except (zipfile.BadZipFile, OSError, EOFError) as err:
            raise self._bad(f"the data of tensor {i} cannot be read ({err})") from None
        n = int(np.prod(shape, dtype=np.int64)) * np.dtype(d).itemsize
        if len(data) != n or e.get("nbytes", n) != n:
            raise self._bad(f"tensor {i} has {len(data)} bytes, expected {n} for "
                            f"{e['dtype']}{list(shape)}")
        a = np.frombuffer(data, dtype=d).reshape(shape)
        if sys.byteorder != "little" and a.dtype.itemsize > 1:
            a = a.byteswap()
        return a

    def tensor(self, i: Any) -> Tensor:
        if isinstance(i, int) and i in self._tensors:
            return self._tensors[i]
        a = self._raw(i)
        e = self.entries[i]
        t = _wrap(jnp.asarray(a))
        if self.map_location is not None:
            t = t.to(self.map_location)
        if e.get("parameter"):
            from .nn.parameter import Parameter
            t = Parameter(t, requires_grad=bool(e.get("requires_grad")))
        elif e.get("requires_grad") and t.is_floating_point():
            t.requires_grad_(True)
        self._tensors[i] = t
        return t

    def decode(self, obj: Any) -> Any:
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        if isinstance(obj, list):
            return [self.decode(v) for v in obj]
        if isinstance(obj, dict):
            if "$tensor" in obj:
                return self.tensor(obj["$tensor"])
            if "$ndarray" in obj:
                i = obj["$ndarray"]
                if i not in self._arrays:
                    self._arrays[i] = self._raw(i).copy()
                return self._arrays[i]
            if "$tuple" in obj:
                return tuple(self.decode(v) for v in obj["$tuple"])
            if "$dtype" in obj:
                return _dt.as_dtype(obj["$dtype"])
            if "$dict" in obj:
                out: dict[Any, Any] = OrderedDict() if obj.get("ordered") else {}
                for k, v in obj["$dict"]:
                    k = self.decode(k)
                    if isinstance(k, list):
                        raise self._bad("a dict key is a list")
                    out[k] = self.decode(v)
                return out
        raise self._bad(f"unknown entry {str(obj)[:80]}")


def load(f: str | os.PathLike[str] | IO[bytes], map_location: Any = None) -> Any:
    """Load what :func:`save` wrote (tensors come back on the default device, or on
    ``map_location``). Raises :class:`SerializationError` for a file that is not a jflow
    file, is truncated, or is corrupted; never unpickles anything."""
    name = repr(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else "the file object"
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            data = fh.read()
        src: IO[bytes] = io.BytesIO(data)
    else:
        src = f
    try:
        zf = zipfile.ZipFile(src, "r")
    except zipfile.BadZipFile:
        raise SerializationError(f"flow.load: {name} is not a file written by flow.save, or it "
                                 f"is truncated (no valid zip directory)") from None
    with zf:
        try:
            text = zf.read(MANIFEST)
        except KeyError:
            raise SerializationError(f"flow.load: {name} is not a file written by flow.save "
                                     f"(a zip file without {MANIFEST})") from None
        except (zipfile.BadZipFile, OSError, EOFError) as err:
            raise SerializationError(f"flow.load: {name} is corrupted: the manifest cannot be "
                                     f"read ({err})") from None
        try:
            manifest = json.loads(text)
        except (ValueError, UnicodeDecodeError) as err:
            raise SerializationError(f"flow.load: {name} is corrupted: bad manifest ({err})") \
                from None
        fmt = manifest.get("format") if isinstance(manifest, dict) else None
        if fmt != FORMAT:
            raise SerializationError(f"flow.load: {name} is not a file written by flow.save "
                                     f"(format {fmt!r}, expected {FORMAT!r})")
        version = manifest.get("version")
        if not isinstance(version, int) or version > VERSION:
            raise SerializationError(f"flow.load: {name} has format version {version!r}; this "
                                     f"jflow reads versions up to {VERSION}")
        entries = manifest.get("tensors")
        if not isinstance(entries, list) or "object" not in manifest:
            raise SerializationError(f"flow.load: {name} is corrupted: incomplete manifest")
        return _Decoder(zf, entries, name, map_location).decode(manifest["object"])
