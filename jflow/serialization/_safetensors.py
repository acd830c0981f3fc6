"""``.safetensors`` files: the code-free tensor format PyTorch and Hugging Face users exchange.

A safetensors file is an 8-byte little-endian header length, a JSON header mapping each
tensor name to its dtype, shape and ``[begin, end)`` byte offsets (plus an optional
``__metadata__`` of strings), then the raw bytes. It holds a flat dict of tensors only, and
carries no checksum: a flipped bit in the data loads as a different value.

Reading and writing go through the ``safetensors`` package (``pip install
'jflow-jax[safetensors]'``): ``safetensors.numpy.save_file`` writes, ``safetensors.safe_open``
memory-maps a file path, and ``safetensors.deserialize`` parses a file object's bytes. Before
the package sees a file, jflow checks the header itself: the header length against the file,
the JSON, each tensor's dtype (it must be one jflow has), shape and offsets, and that the
tensors tile the data exactly. So every malformed file raises :class:`SerializationError`
naming the file and the tensor (the package's own errors are converted too), and a dtype
jflow lacks (``U16``, ``F8_E4M3`` ...) is refused up front rather than after reading.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor
from ._common import (
    SerializationError,
    array_from_bytes,
    corrupted,
    nbytes,
    shape_problem,
    short,
    to_tensor,
)

try:
    import safetensors
    import safetensors.numpy as safetensors_numpy
except ImportError:  # the optional extra is missing: .safetensors raises a clear ImportError
    safetensors = None
    safetensors_numpy = None

SUFFIX = ".safetensors"
#: The format's own limit on the header (the package refuses larger ones too).
MAX_HEADER_BYTES = 100_000_000
#: Written as ``__metadata__``: the tensors follow PyTorch's layout conventions, and
#: Hugging Face loaders check this key.
METADATA = {"format": "pt"}

_DTYPES: dict[str, _dt.dtype] = {
    "BOOL": _dt.bool_, "U8": _dt.uint8, "I8": _dt.int8, "I16": _dt.int16, "I32": _dt.int32,
    "I64": _dt.int64, "F16": _dt.float16, "BF16": _dt.bfloat16, "F32": _dt.float32,
    "F64": _dt.float64,
}
_HEADER = "the safetensors header"


@dataclass(frozen=True)
class _Spec:
    """One tensor as the header declares it, after checking."""

    key: str
    dtype: _dt.dtype
    shape: list[int]
    begin: int
    end: int


def is_safetensors_path(path: str) -> bool:
    return path.lower().endswith(SUFFIX)


def looks_like_safetensors(head: bytes) -> bool:
    """Whether a file starting with ``head`` (9 bytes) is safetensors: its JSON header must
    start with ``{`` at byte 8, where a zip has its compression method (0 or 8)."""
    return len(head) >= 9 and head[8:9] == b"{"


def _require(action: str) -> None:
    if safetensors is None:
        raise ImportError(f"flow.{action}: .safetensors files need the safetensors package: "
                          f"pip install 'jflow-jax[safetensors]'")


# -- writing -----------------------------------------------------------------------------------
def arrays_to_save(obj: Any, path: str) -> dict[str, np.ndarray]:
    """The arrays of ``obj``, which must be a flat dict of ``str`` -> tensor; raises before
    any file is touched otherwise."""
    _require("save")
    what = f"flow.save: {path!r} is a {SUFFIX} file, which holds a flat dict of str -> tensor"
    if not isinstance(obj, dict):
        raise TypeError(f"{what}; got a {type(obj).__name__} (save other objects to a "
                        f"non-{SUFFIX} name)")
    out: dict[str, np.ndarray] = {}
    for k, v in obj.items():
        if not isinstance(k, str) or k == "__metadata__":
            raise TypeError(f"{what}; key {k!r} is not allowed (keys are strings other than "
                            f"'__metadata__')")
        if not isinstance(v, Tensor):
            raise TypeError(f"{what}; obj[{k!r}] is a {type(v).__name__}")
        a = np.asarray(v.detach().numpy())
        out[k] = a if a.flags.c_contiguous else a.copy(order="C")
    return out


def write(path: str, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` (the atomic writer's temporary file)."""
    safetensors_numpy.save_file(arrays, path, metadata=METADATA)


# -- reading -----------------------------------------------------------------------------------
def load(src: IO[bytes], name: str, map_location: Any, path: str | None) -> dict[str, Tensor]:
    """Read a safetensors file from the seekable ``src`` (a file path ``path`` too, if it is
    one, to memory-map it); return its tensors in the header's order."""
    _require("load")
    start = src.tell()
    size = src.seek(0, io.SEEK_END) - start
    src.seek(start)
    header, data_start = _read_header(src, size, name)
    specs = _specs(header, size - data_start, name)
    arrays = _read_mapped(path, specs, name) if path else _read_bytes(src, start, specs, name)
    return {key: to_tensor(a, map_location) for key, a in arrays}


def _read_header(src: IO[bytes], size: int, name: str) -> tuple[dict[str, Any], int]:
    """The parsed JSON header and where the data starts, relative to the file's start."""
    raw = src.read(8)
    if len(raw) < 8:
        raise corrupted(name, _HEADER, "the file is shorter than the header length")
    n = int.from_bytes(raw, "little")
    if n > MAX_HEADER_BYTES or n > size - 8:
        raise corrupted(name, _HEADER, f"declares {n} header bytes, but the file has "
                                       f"{size - 8} after the length (limit "
                                       f"{MAX_HEADER_BYTES})")
    try:
        header = json.loads(src.read(n).decode("utf-8"), object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError) as err:
        raise corrupted(name, _HEADER, f"bad JSON ({err})") from None
    if not isinstance(header, dict):
        raise corrupted(name, _HEADER, f"is a {type(header).__name__}, not an object")
    return header, 8 + n


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are distinct: a name declared twice is ambiguous."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"key {dup!r} appears twice")
    return out


def _specs(header: dict[str, Any], data_len: int, name: str,
           dtypes: dict[str, _dt.dtype] = _DTYPES) -> list[_Spec]:
    """Each tensor's checked declaration, in file order; the tensors must tile the data.
    ``dtypes``: the dtype codes accepted (sharded checkpoints add complex ones)."""
    meta = header.get("__metadata__", {})
    if not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        raise corrupted(name, f"{_HEADER} (__metadata__)", "is not a map of strings")
    specs = [_spec(k, v, data_len, name, dtypes) for k, v in header.items()
             if k != "__metadata__"]
    specs.sort(key=lambda s: (s.begin, s.end))
    pos = 0
    for s in specs:
        if s.begin != pos:
            raise corrupted(name, f"tensor {s.key!r}", f"its data starts at byte {s.begin}, "
                                                       f"expected {pos} (tensors overlap or "
                                                       f"leave a gap)")
        pos = s.end
    if pos != data_len:
        raise corrupted(name, _HEADER, f"the tensors cover {pos} bytes of data, but the file "
                                       f"has {data_len}")
    return specs


def _spec(key: str, info: Any, data_len: int, name: str,
          dtypes: dict[str, _dt.dtype] = _DTYPES) -> _Spec:
    entry = f"tensor {short(key)}"
    if not isinstance(info, dict):
        raise corrupted(name, entry, f"its header entry is {short(info)}")
    code = info.get("dtype")
    d = dtypes.get(code) if isinstance(code, str) else None
    if d is None:
        raise corrupted(name, entry, f"dtype {short(code)} is not one jflow supports "
                                     f"({', '.join(dtypes)})")
    shape = info.get("shape")
    problem = shape_problem(shape)
    if problem:
        raise corrupted(name, entry, problem)
    offsets = info.get("data_offsets")
    if not (isinstance(offsets, list) and len(offsets) == 2
            and all(type(o) is int for o in offsets)
            and 0 <= offsets[0] <= offsets[1] <= data_len):
        raise corrupted(name, entry, f"data_offsets {short(offsets)} are not [begin, end] "
                                     f"within the {data_len} bytes of data")
    n = nbytes(shape, d)
    if offsets[1] - offsets[0] != n:
        raise corrupted(name, entry, f"{offsets[1] - offsets[0]} bytes of data, but "
                                     f"{code}{shape} has {n}")
    return _Spec(key, d, shape, offsets[0], offsets[1])


def _read_mapped(path: str, specs: list[_Spec], name: str) -> Iterator[tuple[str, np.ndarray]]:
    """Each tensor read through ``safetensors.safe_open`` (memory-mapped), one at a time so
    the caller can convert each before the next is read."""
    try:
        with safetensors.safe_open(path, framework="numpy") as f:
            for s in specs:
                yield s.key, _checked(f.get_tensor(s.key), s, name)
    except (safetensors.SafetensorError, OSError, ValueError, TypeError) as err:
        raise SerializationError(f"flow.load: {name} is corrupted: {err}") from None


def _read_bytes(src: IO[bytes], start: int, specs: list[_Spec],
                name: str) -> Iterator[tuple[str, np.ndarray]]:
    """Each tensor parsed by ``safetensors.deserialize`` from the file object's bytes (its
    NumPy loader has no bfloat16, so the bytes become arrays here)."""
    src.seek(start)
    try:
        views = dict(safetensors.deserialize(src.read()))
    except (safetensors.SafetensorError, ValueError) as err:
        raise SerializationError(f"flow.load: {name} is corrupted: {err}") from None
    for s in specs:
        entry = f"tensor {short(s.key)}"
        if s.key not in views:
            raise corrupted(name, entry, "the safetensors package did not find it")
        yield s.key, _checked(array_from_bytes(views.pop(s.key)["data"], s.dtype, s.shape,
                                               name, entry), s, name)


def _checked(a: np.ndarray, s: _Spec, name: str) -> np.ndarray:
    """``a`` if it is what the checked header declared (guards against the file changing
    between our check and the package's read)."""
    if a.dtype != s.dtype.np or list(a.shape) != s.shape:
        raise corrupted(name, f"tensor {short(s.key)}", f"read as {a.dtype}{list(a.shape)}, "
                                                        f"declared {s.dtype.name}{s.shape}")
    if a.dtype == np.bool_ and a.size and a.view(np.uint8).max() > 1:
        raise corrupted(name, f"tensor {short(s.key)}", "a bool tensor holds bytes other "
                                                        "than 0 and 1")
    return a
