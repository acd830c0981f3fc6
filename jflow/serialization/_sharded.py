"""Sharded checkpoints: global tensors saved as a directory, each process writing only its
own shards, loaded back onto any placement and SBP.

On disk (``flow.save(state, "ckpt")`` when ``state`` holds a global tensor)::

    ckpt/
      manifest.json                                   the commit point (written last)
      shard-<token>-00000-of-00002.safetensors        what process 0 wrote
      shard-<token>-00001-of-00002.safetensors        what process 1 wrote

``<token>`` is 16 hex digits drawn anew by each save (process 0 draws it and broadcasts it).
Every process writes one file, in parallel, holding the distinct shards it owns: each
distinct slice of a tensor (a broadcast tensor is one slice; an ``S(0)`` tensor on 8 ranks,
eight) is written once, by one device holding it (for replicated slices the owner rotates
with the tensor's number, so broadcast tensors spread over processes). A ``partial_sum``
tensor is reduced first (boxed to broadcast on the ``P`` axes) and stored as its logical
value: storing the addends would make every load read all of them, and a load onto another
placement could not use them as they are. The manifest records ``P`` as the tensor's SBP, so
a load onto the saved layout gives it back as a partial sum. Local (non-global) tensors and
NumPy arrays are written by process 0, whole.

The shard files are safetensors files (an 8-byte header length, a JSON header of
``{name: {dtype, shape, data_offsets}}``, raw little-endian bytes), written and read here
without the optional ``safetensors`` package: the format is simple, and reading a shard's
*slice* needs only an offset and a memory map. Any safetensors reader can open them
(complex tensors use the codes ``C64``/``C128``, which the package may not know).

``manifest.json`` holds the format and version, the number of processes and their files,
the saved object tree (JSON, as jflow's zip format encodes it, global tensors as
``{"$global": j}``), and per global tensor its logical shape, dtype, ``requires_grad`` and
``Parameter`` flags, the saved placement (device type and ranks, whose shape is the
hierarchy) and SBP (``"S(0)"``, ``"B"``, ``"P"`` per hierarchy axis), and its shards: each
the slice of the logical tensor it holds (``[[start, stop], ...]`` per dimension), the file
and the name in that file.

Atomic commit. A directory cannot be renamed over a non-empty one, so the manifest is the
commit point instead: each save writes new files (new token) next to the old ones, every
process reports success (an all-gather; no barrier in one process), then process 0 replaces
``manifest.json`` atomically (temporary file + rename) and removes every shard file the new
manifest does not name: the previous checkpoint's, and those a crashed save left behind. A
save that fails before the rename leaves the previous manifest and the files it names
untouched, so the previous checkpoint still loads; its own file is removed, or, if the
process was killed, the next successful save removes it. Two jobs saving to one directory at
the same time are not supported.

Loading reshards. Each process builds, for every device of the target placement it holds,
that device's slice of the logical tensor from the saved shards overlapping it, reading only
those byte ranges (``numpy.memmap``: only the pages of the slice are read) from only those
files; slices needed by several local devices are read once. So a checkpoint saved on 8
devices as ``S(0)`` loads on 4 as ``B`` (each device reading everything), as ``S(1)`` (each
reading a column band of every saved shard), or as local tensors (``map_location=``).

Hostile directories. The manifest and every shard file header are checked before data is
read: JSON shape of every entry, dtypes, logical shapes, placement ranks, SBP strings, shard
slices inside the logical shape, shards tiling the tensor exactly (no overlap, nothing
missing), file names (only ``shard-...safetensors`` in the directory: no path can escape
it), each file's header against its length (a truncated file is refused before any read),
and each shard's dtype and shape in its file against the manifest. Every problem raises
:class:`SerializationError` naming the directory, the file and the entry.

Why not orbax-checkpoint / tensorstore: see ``docs/serialization.md`` ("Sharded
checkpoints"); in short, a dozen more packages (tensorstore's native library, protobuf,
uvloop, ...) for what a few hundred lines do here, and their errors on a hostile checkpoint
are theirs, not :class:`SerializationError`.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from .. import dtypes as _dt
from ..nn.parameter import Parameter
from ..sharding.global_tensor import _check_divisible, box_value, make_global
from ..sharding.placement import placement as Placement
from ..sharding.sbp import SbpParallel, _PartialSum, _Split, broadcast, split
from ..sharding.spec import named_sharding, normalize_nd_sbp
from ..tensor import Tensor
from . import _atomic, _common, _safetensors, _zipformat
from ._common import (
    MAX_NDIM,
    SerializationError,
    corrupted,
    parse_manifest,
    shape_problem,
    short,
    to_tensor,
)

FORMAT = "jflow.sharded"
VERSION = 1
MANIFEST = "manifest.json"
#: The most bytes ``manifest.json`` may have (it lists every shard; data lives elsewhere).
MAX_MANIFEST_BYTES = 256 << 20
#: The most shards one tensor may have, and ranks a placement (bounds the coverage check).
MAX_SHARDS = 1 << 16
#: Shard file names: the only names a manifest may point at (no path can leave the dir).
SHARD_FILE = re.compile(r"shard-([0-9a-f]{16})-([0-9]{5})-of-([0-9]{5})\.safetensors")

#: safetensors dtype codes: the package's, plus complex ones for jflow's complex dtypes.
CODES: dict[str, _dt.dtype] = {**_safetensors._DTYPES, "C64": _dt.complex64,
                               "C128": _dt.complex128}
_CODE_OF = {d.name: c for c, d in CODES.items()}
_DTYPES = {d.name: d for d in _dt.all_dtypes}


def file_name(token: str, process: int, nproc: int) -> str:
    return f"shard-{token}-{process:05d}-of-{nproc:05d}.safetensors"


def sbp_str(x: SbpParallel) -> str:
    return f"S({x.axis})" if isinstance(x, _Split) else "P" if isinstance(x, _PartialSum) \
        else "B"


_SBP_RE = re.compile(r"S\(([0-9]{1,2})\)|B|P")


def holds_global(obj: Any, depth: int = 0) -> bool:
    """Whether ``obj`` (nested dicts / lists / tuples) holds a global tensor."""
    if isinstance(obj, Tensor):
        return obj._global is not None
    if depth > _common.MAX_DEPTH:
        return False
    if isinstance(obj, dict):
        return any(holds_global(v, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(holds_global(v, depth + 1) for v in obj)
    return False


# -- saving ------------------------------------------------------------------------------------
class _Encoded(_zipformat.Encoded):
    """The object tree with global tensors as ``{"$global": j}``, the manifest entry of each,
    and the shards this process owns (to write to its file)."""

    def __init__(self, token: str, nproc: int, me: int) -> None:
        super().__init__()
        self.token, self.nproc, self.me = token, nproc, me
        self.globals: list[dict[str, Any]] = []
        self.mine: list[tuple[str, Any]] = []  # (name in my file, jax array of the shard)
        self._gids: dict[int, int] = {}

    def tensor(self, obj: Tensor) -> dict[str, Any]:
        if obj._global is None:
            return super().tensor(obj)
        if id(obj) not in self._gids:
            self._gids[id(obj)] = self._add_global(obj)
            self._keep.append(obj)
        return {"$global": self._gids[id(obj)]}

    def _add_global(self, t: Tensor) -> int:
        j = len(self.globals)
        plc, nd = t._global
        value = t._value
        stored = tuple(broadcast if isinstance(x, _PartialSum) else x for x in nd)
        if stored != nd:  # a collective: every process encodes the same tree in one order
            value = box_value(value, plc, nd, stored)
        d = _dt.from_numpy_dtype(np.dtype(value.dtype))
        if d.name not in _CODE_OF:
            raise TypeError(f"flow.save: cannot save a global tensor of dtype {d.name}")
        shape = tuple(int(s) for s in value.shape)
        indices = value.sharding.devices_indices_map(shape)
        groups: dict[tuple[tuple[int, int], ...], list[Any]] = {}
        for dev in plc.mesh.devices.flat:  # rank order: every process computes the same
            groups.setdefault(_box(indices[dev], shape), []).append(dev)
        by_device = {s.device: s.data for s in value.addressable_shards}
        shards = []
        for k, (box, devs) in enumerate(groups.items()):
            owner = devs[j % len(devs)]  # replicated slices: rotate owners over tensors
            name = f"{j}/{k}"
            shards.append({"index": [list(b) for b in box],
                           "file": file_name(self.token, owner.process_index, self.nproc),
                           "name": name})
            if owner.process_index == self.me:
                self.mine.append((name, by_device[owner]))
        self.globals.append({
            "dtype": d.name, "shape": list(shape), **_zipformat.tensor_flags(t),
            "placement": {"type": plc.type, "ranks": plc.ranks},
            "sbp": [sbp_str(x) for x in nd], "shards": shards})
        return j

    def manifest(self) -> dict[str, Any]:
        local_file = file_name(self.token, 0, self.nproc)
        tensors = [{**e, "file": local_file, "name": f"local/{i}"}
                   for i, e in enumerate(self.entries)]
        return {"format": FORMAT, "version": VERSION, "byteorder": "little",
                "processes": self.nproc,
                "files": [file_name(self.token, p, self.nproc) for p in range(self.nproc)],
                "tensors": tensors, "globals": self.globals, "object": self.root}

    def arrays_to_write(self) -> list[tuple[str, Any]]:
        """This process's file: its shards, and (process 0) the local tensors and arrays."""
        local = [(f"local/{i}", a) for i, a in enumerate(self.arrays)] if self.me == 0 else []
        return self.mine + local


def _box(index: tuple[slice, ...], shape: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """A device's index (slices) as ``((start, stop), ...)`` over every dimension."""
    out = []
    for d, n in enumerate(shape):
        s = index[d] if d < len(index) else slice(None)
        start, stop, _ = s.indices(n)
        out.append((start, stop))
    return tuple(out)


def write_shard_file(path: str, arrays: list[tuple[str, Any]]) -> None:
    """Write ``arrays`` as a safetensors file at ``path`` (one array in memory at a time on
    the host), flushed to disk."""
    header: dict[str, Any] = {"__metadata__": {"format": FORMAT}}
    offset = 0
    specs = []
    for name, a in arrays:
        d = _dt.from_numpy_dtype(np.dtype(a.dtype))
        n = math.prod(a.shape) * d.itemsize
        header[name] = {"dtype": _CODE_OF[d.name], "shape": [int(s) for s in a.shape],
                        "data_offsets": [offset, offset + n]}
        specs.append(a)
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the package writes
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for a in specs:
            h = np.ascontiguousarray(np.asarray(a))
            if sys.byteorder != "little" and h.dtype.itemsize > 1:
                h = h.byteswap()
            f.write(memoryview(h.reshape(-1).view(np.uint8)))
        f.flush()
        os.fsync(f.fileno())


def check_target(path: str) -> None:
    """Refuse a target that is a file, or a non-empty directory that is not a sharded
    checkpoint (a save must never mix its files into, or delete from, someone else's)."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"flow.save: {path!r} exists and is not a directory; a checkpoint "
                         f"holding global tensors is a directory (one file per process and "
                         f"{MANIFEST}). Save to another path, or pass sharded=False to gather "
                         f"the tensors into one file")
    if os.path.isdir(path) and not os.path.exists(os.path.join(path, MANIFEST)):
        foreign = [n for n in os.listdir(path)
                   if not SHARD_FILE.fullmatch(n) and not n.startswith(f".{MANIFEST}.")]
        if foreign:
            raise ValueError(f"flow.save: {path!r} is a non-empty directory without "
                             f"{MANIFEST} (it holds {short(sorted(foreign))}), so it is not a "
                             f"sharded checkpoint; refusing to write into it")


def _agree_token(nproc: int) -> str:
    """A fresh token for this save's file names, the same on every process."""
    if nproc == 1:
        return secrets.token_hex(8)
    from jax.experimental import multihost_utils
    mine = np.frombuffer(secrets.token_bytes(8), dtype=np.uint32).copy()
    words = np.asarray(multihost_utils.broadcast_one_to_all(mine))
    return "".join(f"{int(w):08x}" for w in words)


def _all_succeeded(ok: bool, nproc: int) -> bool:
    """Whether every process's step succeeded (an all-gather, so also a barrier)."""
    if nproc == 1:
        return ok
    from jax.experimental import multihost_utils
    flags = np.asarray(multihost_utils.process_allgather(np.asarray([int(ok)], np.int32)))
    return bool(flags.all())


def save(obj: Any, path: str) -> None:
    """Save ``obj`` as a sharded checkpoint directory at ``path`` (every process calls it,
    with the same object tree: global tensors' collectives run in tree order)."""
    nproc, me = jax.process_count(), jax.process_index()
    check_target(path)
    token = _agree_token(nproc)
    enc = _zipformat.encode(obj, _Encoded(token, nproc, me))
    os.makedirs(path, exist_ok=True)
    mine = os.path.join(path, file_name(token, me, nproc))
    error: BaseException | None = None
    try:
        write_shard_file(mine, enc.arrays_to_write())
    except Exception as e:  # noqa: BLE001  (reported to the others first, then raised)
        error = e
        _remove_quietly(mine)
    except BaseException:
        _remove_quietly(mine)
        raise
    if not _all_succeeded(error is None, nproc):
        if error is not None:
            raise error
        if me == 0:
            _remove_quietly(mine)
        raise RuntimeError(f"flow.save: another process failed to write its shards of "
                           f"{path!r}; the previous checkpoint there is unchanged")
    if me == 0:
        text = json.dumps(enc.manifest(), allow_nan=True, separators=(",", ":"))
        _atomic.write_atomically(os.path.join(path, MANIFEST),
                                 lambda tmp: _write_text(tmp, text))
        _fsync_dir(path)
        keep = {file_name(token, p, nproc) for p in range(nproc)}
        for n in os.listdir(path):
            if SHARD_FILE.fullmatch(n) and n not in keep:
                _remove_quietly(os.path.join(path, n))
    _all_succeeded(True, nproc)  # nobody returns before the commit


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _fsync_dir(path: str) -> None:
    """Make the rename durable (POSIX; elsewhere a no-op)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- loading -----------------------------------------------------------------------------------
Box = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class _Shard:
    box: Box
    file: str
    name: str


@dataclass(frozen=True)
class _Global:
    """A global tensor's checked manifest entry."""

    dtype: _dt.dtype
    shape: tuple[int, ...]
    ptype: str
    ranks: np.ndarray
    sbp: tuple[SbpParallel, ...]
    shards: tuple[_Shard, ...]
    requires_grad: bool
    parameter: bool


class _ShardFile:
    """One shard file: its header checked against its length once, then slices read from
    it through a memory map (only the pages of the slice are read)."""

    def __init__(self, directory: str, fname: str, dname: str) -> None:
        self.path = os.path.join(directory, fname)
        self.name = f"{dname} (file {fname})"
        try:
            with open(self.path, "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                header, self.data_start = _safetensors._read_header(fh, size, self.name)
        except FileNotFoundError:
            raise SerializationError(f"flow.load: {dname} is incomplete: shard file {fname} "
                                     f"is missing") from None
        except OSError as err:
            raise SerializationError(f"flow.load: {self.name} cannot be read ({err})") from None
        specs = _safetensors._specs(header, size - self.data_start, self.name, CODES)
        self.specs = {s.key: s for s in specs}

    def spec(self, name: str, d: _dt.dtype, shape: list[int], what: str) -> Any:
        s = self.specs.get(name)
        if s is None:
            raise corrupted(self.name, what, f"shard {short(name)} is not in the file")
        if s.dtype != d or s.shape != shape:
            raise corrupted(self.name, what, f"shard {short(name)} is {s.dtype.name}{s.shape} "
                                             f"in the file, but the manifest says "
                                             f"{d.name}{shape}")
        return s

    def read(self, s: Any, region: tuple[slice, ...], what: str) -> np.ndarray:
        """``region`` of the array ``s``, copied out of the file."""
        if math.prod(s.shape) == 0:
            return np.empty(s.shape, s.dtype.np)[region]
        try:
            mm = np.memmap(self.path, dtype=s.dtype.np, mode="r",
                           offset=self.data_start + s.begin, shape=tuple(s.shape))
            a = np.array(mm[region])
            del mm
        except (OSError, ValueError) as err:
            raise corrupted(self.name, what, f"cannot be read ({err})") from None
        if sys.byteorder != "little" and a.dtype.itemsize > 1:
            a = a.byteswap()
        if a.dtype == np.bool_ and a.size and a.view(np.uint8).max() > 1:
            raise corrupted(self.name, what, "a bool tensor holds bytes other than 0 and 1")
        return a


class _Loader(_zipformat._Decoder):
    """Rebuilds the saved tree; global tensors on the target layout, read shard by shard."""

    def __init__(self, directory: str, manifest: dict[str, Any], map_location: Any,
                 placement: Placement | None, sbp: Any) -> None:
        name = repr(directory)
        super().__init__(None, manifest["tensors"], map_location, name)
        self.directory = directory
        self.globals = manifest["globals"]
        self.files = set(manifest["files"])
        self.placement, self.sbp = placement, sbp
        self._open: dict[str, _ShardFile] = {}
        self._globals: dict[int, Tensor] = {}

    def file(self, fname: str) -> _ShardFile:
        if fname not in self._open:
            self._open[fname] = _ShardFile(self.directory, fname, self.name)
        return self._open[fname]

    # local tensors and arrays: whole, from the file the manifest names
    def _read_array(self, i: int, d: _dt.dtype, shape: list[int], n: int,
                    label: str) -> np.ndarray:
        e = self.entries[i]
        fname, key = e.get("file"), e.get("name")
        if not isinstance(key, str) or fname not in self.files:
            raise corrupted(self.name, label, f"file {short(fname)} / name {short(key)} is not "
                                              f"a shard file of the manifest and a name")
        f = self.file(fname)
        s = f.spec(key, d, shape, label)
        return f.read(s, tuple(slice(None) for _ in shape), label)

    def global_tensor(self, j: Any, where: str) -> Tensor:
        if type(j) is int and j in self._globals:
            return self._globals[j]
        g = self._check_global(j, where)
        label = f"global tensor {j} (at {where})"
        if self.map_location is not None:
            full = tuple((0, n) for n in g.shape)
            t = to_tensor(self._read_box(g, full, label), self.map_location)
        else:
            t = self._to_layout(g, where, label)
        grad = g.requires_grad and t.is_floating_point()
        if g.parameter:
            t = Parameter(t, requires_grad=grad)
        elif grad:
            t.requires_grad_(True)
        self._globals[j] = t
        return t

    def _to_layout(self, g: _Global, where: str, label: str) -> Tensor:
        fname = f"flow.load ({where})"
        plc = self.placement
        if plc is None:
            plc = Placement(g.ptype, g.ranks.tolist())
            try:
                n = len(jax.devices(plc.type if plc.type == "cpu" else "gpu"))
            except RuntimeError:  # no such backend here
                n = 0
            if int(g.ranks.max()) >= n:
                raise ValueError(f"flow.load: {where} of {self.name} was saved on {plc!r}, but "
                                 f"there are {n} {plc.type} devices here; pass placement= "
                                 f"(and sbp=) to reshard it, or map_location= for local "
                                 f"tensors")
        sbp = self.sbp
        if isinstance(sbp, dict):
            sbp = sbp.get(self.top_key)
        if sbp is None:
            if len(g.sbp) != len(plc.hierarchy):
                raise ValueError(f"{fname}: it was saved with sbp {_sbp_list(g.sbp)} on a "
                                 f"{len(g.sbp)}-d hierarchy, and {plc!r} has a "
                                 f"{len(plc.hierarchy)}-d one; pass sbp=")
            sbp = g.sbp
        nd = normalize_nd_sbp(sbp, plc, len(g.shape), fname)
        if g.dtype == _dt.bool_ and any(isinstance(x, _PartialSum) for x in nd):
            raise TypeError(f"{fname}: sbp partial_sum is not defined for a bool tensor")
        _check_divisible(g.shape, plc, nd, fname)
        stored = tuple(broadcast if isinstance(x, _PartialSum) else x for x in nd)
        sharding = named_sharding(plc, stored, len(g.shape))
        read: dict[Box, np.ndarray] = {}
        arrays = []
        for dev, index in sharding.addressable_devices_indices_map(g.shape).items():
            box = _box(index, g.shape)
            if box not in read:
                read[box] = self._read_box(g, box, label)
            arrays.append(jax.device_put(read[box], dev))
        value = jax.make_array_from_single_device_arrays(g.shape, sharding, arrays)
        if stored != nd:
            value = box_value(value, plc, stored, nd)
        return make_global(value, plc, nd)

    def _read_box(self, g: _Global, box: Box, label: str) -> np.ndarray:
        """The slice ``box`` of the logical tensor, from the saved shards overlapping it."""
        out = np.empty(tuple(b - a for a, b in box), dtype=g.dtype.np)
        if out.size == 0:
            return out
        for s in g.shards:
            inter = [(max(a, c), min(b, d)) for (a, b), (c, d) in zip(box, s.box)]
            if any(a >= b for a, b in inter):
                continue
            f = self.file(s.file)
            spec = f.spec(s.name, g.dtype, [b - a for a, b in s.box], label)
            src = tuple(slice(a - c, b - c) for (a, b), (c, _) in zip(inter, s.box))
            dst = tuple(slice(a - c, b - c) for (a, b), (c, _) in zip(inter, box))
            out[dst] = f.read(spec, src, label)
        return out

    def _check_global(self, j: Any, where: str) -> _Global:
        """Global tensor ``j``'s manifest entry, checked (see the module docstring)."""
        if type(j) is not int or not 0 <= j < len(self.globals):
            raise self._bad(where, f"reference to global tensor {short(j)}, but the manifest "
                                   f"has {len(self.globals)}")
        label = f"global tensor {j} (at {where})"

        def bad(why: str) -> SerializationError:
            return corrupted(self.name, f"{MANIFEST}: {label}", why)

        e = self.globals[j]
        if not isinstance(e, dict):
            raise bad(f"its entry is {short(e)}")
        d = _DTYPES.get(e.get("dtype")) if isinstance(e.get("dtype"), str) else None
        if d is None:
            raise bad(f"unknown dtype {short(e.get('dtype'))}")
        shape = e.get("shape")
        problem = shape_problem(shape)
        if problem:
            raise bad(problem)
        ptype, ranks = _check_placement(e.get("placement"), bad)
        sbp = e.get("sbp")
        if not (isinstance(sbp, list) and len(sbp) == ranks.ndim
                and all(isinstance(x, str) and _SBP_RE.fullmatch(x) for x in sbp)):
            raise bad(f"sbp {short(sbp)} is not a list of 'S(<dim>)' / 'B' / 'P', one per "
                      f"axis of the {ranks.ndim}-d placement hierarchy")
        nd = tuple(_parse_sbp(x) for x in sbp)
        if any(isinstance(x, _Split) and x.axis >= len(shape) for x in nd):
            raise bad(f"sbp {sbp} splits a dimension the shape {shape} does not have")
        shards = _check_shards(e.get("shards"), shape, self.files, bad)
        return _Global(d, tuple(shape), ptype, ranks, nd, shards,
                       bool(e.get("requires_grad")), bool(e.get("parameter")))


def _sbp_list(nd: tuple[SbpParallel, ...]) -> list[str]:
    return [sbp_str(x) for x in nd]


def _parse_sbp(s: str) -> SbpParallel:
    m = _SBP_RE.fullmatch(s)
    assert m is not None
    if m.group(1) is not None:
        return split(int(m.group(1)))
    return broadcast if s == "B" else _PartialSum()


def _check_placement(p: Any, bad: Callable[[str], SerializationError]
                     ) -> tuple[str, np.ndarray]:
    if not (isinstance(p, dict) and p.get("type") in ("cpu", "cuda")):
        raise bad(f"placement {short(p)} is not {{'type': 'cpu' | 'cuda', 'ranks': [...]}}")
    try:
        ranks = np.asarray(p.get("ranks"))
    except (ValueError, TypeError, RecursionError):
        ranks = None
    if (ranks is None or ranks.dtype.kind not in "iu" or not 1 <= ranks.ndim <= MAX_NDIM
            or not 0 < ranks.size <= MAX_SHARDS or int(ranks.min()) < 0
            or len(np.unique(ranks)) != ranks.size):
        raise bad(f"placement ranks {short(p.get('ranks'))} are not a non-empty nested list of "
                  f"distinct non-negative ints")
    return p["type"], ranks


def _check_shards(shards: Any, shape: list[int], files: set[str],
                  bad: Callable[[str], SerializationError]) -> tuple[_Shard, ...]:
    """The shards, each a slice inside ``shape`` in a file of the manifest, tiling the
    tensor exactly: no two overlap and together they cover every element."""
    if not isinstance(shards, list) or not 0 < len(shards) <= MAX_SHARDS:
        raise bad(f"shards are {short(shards)}, not a list of 1 to {MAX_SHARDS}")
    out = []
    for k, s in enumerate(shards):
        if not isinstance(s, dict):
            raise bad(f"shard {k} is {short(s)}")
        index, f, name = s.get("index"), s.get("file"), s.get("name")
        if not (isinstance(index, list) and len(index) == len(shape)
                and all(isinstance(r, list) and len(r) == 2
                        and all(type(x) is int for x in r) and 0 <= r[0] <= r[1] <= n
                        for r, n in zip(index, shape))):
            raise bad(f"shard {k}'s index {short(index)} is not a [start, stop] per dimension "
                      f"inside the shape {shape}")
        if f not in files:
            raise bad(f"shard {k}'s file {short(f)} is not one of the manifest's files")
        if not isinstance(name, str):
            raise bad(f"shard {k}'s name {short(name)} is not a string")
        out.append(_Shard(tuple((r[0], r[1]) for r in index), f, name))
    total = math.prod(shape)
    covered = sum(math.prod(b - a for a, b in s.box) for s in out)
    if len(shape):
        lo = np.array([[a for a, _ in s.box] for s in out], dtype=np.int64)
        hi = np.array([[b for _, b in s.box] for s in out], dtype=np.int64)
        for i in range(len(out)):  # pairwise, vectorized per shard
            o = np.all(np.maximum(lo[i], lo[i + 1:]) < np.minimum(hi[i], hi[i + 1:]), axis=1)
            if o.any():
                k = i + 1 + int(np.argmax(o))
                raise bad(f"shards {i} and {k} overlap ({[list(b) for b in out[i].box]} and "
                          f"{[list(b) for b in out[k].box]})")
    elif len(out) > 1:
        raise bad(f"a 0-d tensor has {len(out)} shards")
    if covered != total:
        raise bad(f"the shards cover {covered} of the {total} elements of shape {shape} "
                  f"(incomplete)")
    return tuple(out)


def _read_manifest(directory: str, name: str) -> dict[str, Any]:
    path = os.path.join(directory, MANIFEST)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_MANIFEST_BYTES + 1)
    except FileNotFoundError:
        raise SerializationError(f"flow.load: {name} is a directory without {MANIFEST}, so not "
                                 f"a sharded checkpoint written by flow.save (or its first "
                                 f"save did not complete)") from None
    except OSError as err:
        raise SerializationError(f"flow.load: {name}: {MANIFEST} cannot be read ({err})"
                                 ) from None
    entry = f"the manifest ({MANIFEST})"
    if len(raw) > MAX_MANIFEST_BYTES:
        raise corrupted(name, entry, f"is larger than {MAX_MANIFEST_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except ValueError as err:
        raise corrupted(name, entry, f"bad JSON ({err})") from None
    m = parse_manifest(name, text, entry, FORMAT, VERSION,
                       "a sharded checkpoint written by flow.save")
    if m.get("byteorder", "little") != "little":
        raise corrupted(name, entry, f"byte order {short(m.get('byteorder'))}")
    files = m.get("files")
    if not (isinstance(files, list) and files
            and all(isinstance(f, str) and SHARD_FILE.fullmatch(f) for f in files)):
        raise corrupted(name, entry, f"files {short(files)} are not a list of shard file "
                                     f"names (shard-<token>-<process>-of-<n>.safetensors)")
    if not isinstance(m.get("tensors"), list) or not isinstance(m.get("globals"), list) \
            or "object" not in m:
        raise corrupted(name, entry, "no tensor list, global tensor list or object")
    return m


def load(directory: str, map_location: Any, placement: Any, sbp: Any) -> Any:
    """Load the sharded checkpoint ``directory`` (see the module docstring for layouts)."""
    if map_location is not None and (placement is not None or sbp is not None):
        raise ValueError("flow.load: map_location= loads global tensors as local ones, "
                         "placement= / sbp= as global ones; pass one or the other")
    if placement is not None and not isinstance(placement, Placement):
        raise TypeError(f"flow.load: placement must be a flow.placement, got "
                        f"{type(placement).__name__}")
    if sbp is not None and not isinstance(sbp, (SbpParallel, list, tuple, dict)):
        raise TypeError(f"flow.load: sbp must be a flow.sbp value, a sequence of them (one per "
                        f"placement hierarchy axis), or a dict of state-dict key -> those; got "
                        f"{type(sbp).__name__}")
    m = _read_manifest(directory, repr(directory))
    return _Loader(directory, m, map_location, placement, sbp).decode(m["object"], "obj", 0)

