"""jflow's own checkpoint format: a zip of a JSON manifest and one raw array per tensor.

``jflow.json`` holds the format name and version, the saved object encoded as JSON, and for
each tensor its dtype, shape, byte count and flags; ``data/<i>`` holds tensor ``i`` as raw
little-endian bytes. Entries are written stored (not compressed), so each carries the zip
CRC-32 of its bytes: a flipped bit anywhere in a manifest or a tensor is detected on read.

Reading treats the file as hostile. Nothing from the file is used before it is checked:

* a zip entry is read only after its zip header is checked against what the manifest
  declares (size, compression method, no encryption, inside the file), and at most the
  declared bytes are inflated, so a small file cannot make ``load`` allocate more than the
  tensors it declares (a "zip bomb" is refused before a byte is inflated);
* a declared shape is a list of non-negative ints whose exact byte count must match;
* the object tree may nest at most :data:`MAX_DEPTH` levels, dtypes must be jflow's, dict
  keys must be hashable, and every marker (``$tensor`` ...) must have the right type;
* every zip-level failure (bad directory, unknown method, encryption, CRC mismatch ...)
  becomes a :class:`SerializationError` naming the file and the entry.
"""

from __future__ import annotations

import io
import json
import struct
import sys
import zipfile
import zlib
from collections import OrderedDict
from typing import IO, Any

import numpy as np

from .. import dtypes as _dt
from ..nn.parameter import Parameter
from ..tensor import Tensor
from . import _common
from ._common import (
    SerializationError,
    array_from_bytes,
    corrupted,
    nbytes,
    parse_manifest,
    shape_problem,
    short,
    to_tensor,
)

FORMAT = "jflow.save"
VERSION = 1
MANIFEST = "jflow.json"

#: How deeply saved containers may nest, and the most a compressed manifest may inflate to:
#: the policy's bounds (``_common``). Decoding recurses once per level; the depth limit keeps
#: a hostile manifest from reaching Python's recursion limit (and ``save`` refuses deeper
#: objects, so nothing it writes is unreadable).
MAX_DEPTH = _common.MAX_DEPTH
MAX_MANIFEST_BYTES = _common.MAX_MANIFEST_BYTES
#: Deflate cannot expand data by more than ~1032x; a header claiming more is lying.
_DEFLATE_MAX_RATIO = 1032
#: Flag bits of entries we cannot read: encrypted (0x1), patched (0x20), strong crypto (0x40).
_UNREADABLE_FLAGS = 0x1 | 0x20 | 0x40
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
#: What ``zipfile`` raises on a damaged archive (a bit flip in its directory can give any).
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
               OverflowError, struct.error, NotImplementedError, RuntimeError, zlib.error)


# -- encoding ----------------------------------------------------------------------------------
class Encoded:
    """An object encoded for writing: the JSON tree and the arrays it references by index."""

    def __init__(self) -> None:
        self.arrays: list[np.ndarray] = []
        self.entries: list[dict[str, Any]] = []
        self.root: Any = None
        self._ids: dict[int, int] = {}
        self._keep: list[Any] = []  # keep encoded objects alive so ids stay unique

    def array(self, obj: Any, a: np.ndarray, meta: dict[str, Any]) -> int:
        """The index of ``obj``'s array, storing it on first sight (shared tensors once)."""
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


    def tensor(self, obj: Tensor) -> dict[str, Any]:
        """The JSON node of tensor ``obj`` (a global one as its logical value). A subclass
        (the sharded format's) stores global tensors differently."""
        a = np.asarray(obj.detach().numpy())
        return {"$tensor": self.array(obj, a, tensor_flags(obj))}


def tensor_flags(t: Tensor) -> dict[str, bool]:
    """What a checkpoint records about a tensor besides its data."""
    return {"requires_grad": bool(t.requires_grad and t.is_leaf),
            "parameter": isinstance(t, Parameter)}


def encode(obj: Any, enc: Encoded | None = None) -> Encoded:
    """Encode ``obj`` for :func:`write` (into ``enc``, a subclass's, if given); raises
    ``TypeError``/``ValueError`` before any file is touched if something in it cannot be
    saved."""
    enc = Encoded() if enc is None else enc
    enc.root = _encode(enc, obj, "obj", 0)
    return enc


def _encode(enc: Encoded, obj: Any, path: str, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError(f"flow.save: {path} is nested more than {MAX_DEPTH} levels deep")
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj)
    if isinstance(obj, Tensor):
        return enc.tensor(obj)
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in "biuf" and obj.dtype.name != "bfloat16":
            raise TypeError(f"flow.save: cannot save a NumPy array of dtype {obj.dtype} "
                            f"at {path}")
        return {"$ndarray": enc.array(obj, obj, {})}
    if isinstance(obj, np.generic):
        return _encode(enc, obj.item(), path, depth)
    if isinstance(obj, _dt.dtype):
        return {"$dtype": obj.name}
    d = depth + 1
    if isinstance(obj, dict):
        items = [[_encode(enc, k, f"{path} (key {k!r})", d), _encode(enc, v, f"{path}[{k!r}]", d)]
                 for k, v in obj.items()]
        return {"$dict": items, "ordered": isinstance(obj, OrderedDict)}
    if isinstance(obj, list):
        return [_encode(enc, v, f"{path}[{i}]", d) for i, v in enumerate(obj)]
    if isinstance(obj, tuple):
        return {"$tuple": [_encode(enc, v, f"{path}[{i}]", d) for i, v in enumerate(obj)]}
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


def write(f: IO[bytes], enc: Encoded) -> None:
    """Write ``enc`` as a jflow zip to the binary file object ``f``."""
    manifest = {"format": FORMAT, "version": VERSION, "byteorder": "little",
                "tensors": enc.entries, "object": enc.root}
    text = json.dumps(manifest, allow_nan=True, separators=(",", ":"))
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr(MANIFEST, text)
        for i, a in enumerate(enc.arrays):
            _write_array(zf, f"data/{i}", a)


def write_path(path: str, enc: Encoded) -> None:
    """Write ``enc`` to a new file at ``path`` (the atomic writer's temporary file)."""
    with open(path, "wb") as out:
        write(out, enc)


# -- reading the zip ---------------------------------------------------------------------------
class _Archive:
    """A zip file opened for reading in which no entry is read before its header is checked:
    the size it declares, its compression method and flags, and that it lies in the file."""

    def __init__(self, src: IO[bytes], name: str) -> None:
        self.name = name
        try:
            start = src.tell()
            self.end = src.seek(0, io.SEEK_END)  # offsets in the zip directory are absolute
            src.seek(start)
            self.zf = zipfile.ZipFile(src, "r")
        except _ZIP_ERRORS as err:
            raise SerializationError(
                f"flow.load: {name} is not a file written by flow.save, or it is truncated or "
                f"corrupted (no valid zip directory: {err})") from None

    def read(self, entry: str, size: int | None, label: str) -> bytes:
        """The bytes of zip entry ``entry``: exactly ``size`` (declared by the manifest) or,
        for the manifest itself (``size=None``), at most :data:`MAX_MANIFEST_BYTES`."""
        info = self._info(entry, label)
        self._check(info, size, label)
        try:
            with self.zf.open(info) as fh:
                data = fh.read(info.file_size)  # reading to the end checks the CRC-32
        except _ZIP_ERRORS as err:
            raise corrupted(self.name, label, f"cannot be read ({err})") from None
        if len(data) != info.file_size:
            raise corrupted(self.name, label, f"has {len(data)} bytes, its zip header says "
                                              f"{info.file_size} (truncated)")
        return data

    def _info(self, entry: str, label: str) -> zipfile.ZipInfo:
        try:
            return self.zf.getinfo(entry)
        except KeyError:
            raise corrupted(self.name, label, f"zip entry {entry} is missing") from None

    def _check(self, info: zipfile.ZipInfo, size: int | None, label: str) -> None:
        """Refuse an entry whose header disagrees with the manifest, before inflating it."""
        if info.flag_bits & _UNREADABLE_FLAGS:
            raise corrupted(self.name, label, f"zip entry is encrypted or patched (flags "
                                              f"{info.flag_bits:#x})")
        method = _METHODS.get(info.compress_type)
        if method is None:
            raise corrupted(self.name, label, f"zip entry uses compression method "
                                              f"{info.compress_type} (flow.load reads stored "
                                              f"or deflated entries)")
        if size is not None and info.file_size != size:
            raise corrupted(self.name, label, f"the manifest declares {size} bytes, but its "
                                              f"zip header says {info.file_size}")
        if size is None and info.file_size > max(MAX_MANIFEST_BYTES, info.compress_size):
            raise corrupted(self.name, label, f"inflates to {info.file_size} bytes, more than "
                                              f"the {MAX_MANIFEST_BYTES} allowed")
        if method == "stored" and info.compress_size != info.file_size:
            raise corrupted(self.name, label, f"a stored entry of {info.file_size} bytes "
                                              f"occupies {info.compress_size}")
        if info.file_size > info.compress_size * _DEFLATE_MAX_RATIO + 1024:
            raise corrupted(self.name, label, f"claims to inflate {info.compress_size} bytes "
                                              f"to {info.file_size}, more than deflate can")
        if info.header_offset + info.compress_size > self.end:
            raise corrupted(self.name, label, "zip entry extends past the end of the file "
                                              "(truncated)")


# -- decoding ----------------------------------------------------------------------------------
class _Decoder:
    """Rebuilds the saved object from the manifest's JSON tree, checking every node."""

    def __init__(self, archive: _Archive | None, entries: list[Any], map_location: Any,
                 name: str | None = None) -> None:
        self.archive, self.entries, self.map_location = archive, entries, map_location
        self.name = archive.name if archive is not None else str(name)
        self._tensors: dict[int, Tensor] = {}
        self._arrays: dict[int, np.ndarray] = {}
        self.top_key: Any = None

    def _bad(self, where: str, why: str) -> SerializationError:
        return corrupted(self.name, f"the object at {where}", why)

    def decode(self, obj: Any, where: str, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self._bad(where, f"nested more than {MAX_DEPTH} levels deep")
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        if isinstance(obj, list):
            return [self.decode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(obj)]
        if isinstance(obj, dict):
            if "$tensor" in obj:
                return self.tensor(obj["$tensor"], where)
            if "$ndarray" in obj:
                return self.ndarray(obj["$ndarray"], where)
            if "$tuple" in obj:
                return tuple(self._items(obj["$tuple"], where, depth))
            if "$dtype" in obj:
                return self.dtype(obj["$dtype"], where)
            if "$dict" in obj:
                return self.dict(obj["$dict"], bool(obj.get("ordered")), where, depth)
            if "$global" in obj:
                return self.global_tensor(obj["$global"], where)
        raise self._bad(where, f"unknown entry {short(obj)}")

    def _items(self, items: Any, where: str, depth: int) -> list[Any]:
        if not isinstance(items, list):
            raise self._bad(where, f"a tuple's items are {short(items)}, not a list")
        return [self.decode(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(items)]

    def dtype(self, name: Any, where: str) -> _dt.dtype:
        if isinstance(name, str) and name in _DTYPES:
            return _DTYPES[name]
        raise self._bad(where, f"unknown dtype {short(name)}")

    def dict(self, items: Any, ordered: bool, where: str, depth: int) -> dict[Any, Any]:
        if not isinstance(items, list):
            raise self._bad(where, f"a dict's items are {short(items)}, not a list")
        out: dict[Any, Any] = OrderedDict() if ordered else {}
        for n, item in enumerate(items):
            if not (isinstance(item, list) and len(item) == 2):
                raise self._bad(where, f"dict item {n} is {short(item)}, not a [key, value] "
                                       f"pair")
            k = self.decode(item[0], f"{where} (key {n})", depth + 1)
            try:
                hash(k)
            except TypeError:
                raise self._bad(where, f"dict key {n} is an unhashable "
                                       f"{type(k).__name__}") from None
            if depth == 0:
                self.top_key = k  # (a sharded load's per-key sbp= looks it up)
            out[k] = self.decode(item[1], f"{where}[{short(k)}]", depth + 1)
        return out

    def global_tensor(self, i: Any, where: str) -> Tensor:
        """A global tensor: only sharded checkpoints (a directory) hold them."""
        raise self._bad(where, "a global tensor reference, which only a sharded checkpoint "
                               "directory holds")

    def _raw(self, i: Any, where: str) -> np.ndarray:
        """Tensor ``i``'s array, after checking its manifest entry against its zip header."""
        if type(i) is not int or not 0 <= i < len(self.entries):
            raise self._bad(where, f"reference to tensor {short(i)}, but the file has "
                                   f"{len(self.entries)}")
        label = f"tensor {i} (zip entry data/{i}, at {where})"
        e = self.entries[i]
        if not isinstance(e, dict):
            raise corrupted(self.name, label, f"its manifest entry is {short(e)}")
        d = _DTYPES.get(e.get("dtype")) if isinstance(e.get("dtype"), str) else None
        if d is None:
            raise corrupted(self.name, label, f"unknown dtype {short(e.get('dtype'))}")
        shape = e.get("shape")
        problem = shape_problem(shape)
        if problem:
            raise corrupted(self.name, label, problem)
        n = nbytes(shape, d)
        declared = e.get("nbytes", n)
        if type(declared) is not int or declared != n:
            raise corrupted(self.name, label, f"declares {short(declared)} bytes, but "
                                              f"{d.name}{shape} has {n}")
        return self._read_array(i, d, shape, n, label)

    def _read_array(self, i: int, d: _dt.dtype, shape: list[int], n: int,
                    label: str) -> np.ndarray:
        """Tensor ``i``'s checked declaration turned into its array (from the zip here)."""
        assert self.archive is not None
        data = self.archive.read(f"data/{i}", n, label)
        return array_from_bytes(data, d, shape, self.name, label)

    def tensor(self, i: Any, where: str) -> Tensor:
        if type(i) is int and i in self._tensors:
            return self._tensors[i]
        a = self._raw(i, where)
        e = self.entries[i]
        t = to_tensor(a, self.map_location)
        grad = bool(e.get("requires_grad")) and t.is_floating_point()
        if e.get("parameter"):
            t = Parameter(t, requires_grad=grad)
        elif grad:
            t.requires_grad_(True)
        self._tensors[i] = t
        return t

    def ndarray(self, i: Any, where: str) -> np.ndarray:
        if type(i) is not int or i not in self._arrays:
            a = self._raw(i, where).copy()
            self._arrays[i] = a
        return self._arrays[i]


_DTYPES = {d.name: d for d in _dt.all_dtypes}


def _manifest(archive: _Archive) -> tuple[list[Any], Any]:
    """The manifest's tensor entries and object tree, after checking format and version."""
    name = archive.name
    try:
        archive.zf.getinfo(MANIFEST)
    except KeyError:
        raise SerializationError(f"flow.load: {name} is not a file written by flow.save "
                                 f"(a zip file without {MANIFEST})") from None
    text = archive.read(MANIFEST, None, f"the manifest ({MANIFEST})")
    manifest = parse_manifest(name, text, f"the manifest ({MANIFEST})", FORMAT, VERSION,
                              "a file written by flow.save")
    entries = manifest.get("tensors")
    if not isinstance(entries, list) or "object" not in manifest:
        raise corrupted(name, f"the manifest ({MANIFEST})", "no tensor list or no object")
    if manifest.get("byteorder", "little") != "little":
        raise corrupted(name, f"the manifest ({MANIFEST})",
                        f"byte order {short(manifest.get('byteorder'))}")
    return entries, manifest["object"]


def load(src: IO[bytes], name: str, map_location: Any) -> Any:
    """Read a jflow zip from the seekable binary file ``src`` (``name`` is for messages)."""
    archive = _Archive(src, name)
    with archive.zf:
        entries, root = _manifest(archive)
        return _Decoder(archive, entries, map_location).decode(root, "obj", 0)
