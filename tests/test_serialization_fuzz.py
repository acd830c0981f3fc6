"""Fuzzing flow.load with mutated checkpoints (hypothesis, derandomized so CI is deterministic).

* Byte-level damage to a jflow file (bit flips, truncations, overwrites, insertions,
  deletions): SerializationError or the exact original values. The zip CRC-32 of every entry
  is what makes "exact" possible.
* Edits of the manifest's JSON, re-zipped with valid CRCs (a crafted file, not a damaged
  one): SerializationError or an object built only of the loadable types.
* Damage to a .safetensors file: SerializationError or a dict of tensors that the safetensors
  package reads identically (the format has no checksum, so damaged data loads as data).
* Damage to a PyTorch-format file (torch.save's zip): SerializationError or the exact values;
  damage to its pickle, re-zipped with valid CRCs (a crafted pickle): SerializationError or
  data only (weights_only=True never returns, builds or calls anything else).

Every load must stay within a small memory bound (the files are a few KB).
"""

from __future__ import annotations

import io
import json
import tempfile
import tracemalloc
import zipfile
from collections import OrderedDict
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import jflow as flow
from jflow import serialization as S

safetensors = pytest.importorskip("safetensors")

FUZZ = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MEMORY_BOUND = 8 << 20      # bytes of Python allocations during one load of a ~2 KB file


def _original() -> dict[str, Any]:
    flow.manual_seed(0)
    shared = flow.arange(3)
    return {"w": flow.nn.Parameter(flow.randn(3, 4)), "i": flow.tensor([1, -2], dtype=flow.int32),
            "bf": flow.tensor([1.5, -2.0]).to(flow.bfloat16), "mask": flow.tensor([True, False]),
            "np": np.arange(5, dtype=np.int16), "pair": (shared, shared),
            "meta": OrderedDict(epoch=3, name="run", lr=0.1, none=None,
                                dtype=flow.float16, nested=[1, [2.5, "x"]])}


def _saved(obj: Any) -> bytes:
    buf = io.BytesIO()
    S.save(obj, buf)
    return buf.getvalue()


ORIGINAL = _original()
JFLOW_BYTES = _saved(ORIGINAL)
TENSORS = {k: v for k, v in ORIGINAL.items() if k in ("w", "i", "bf", "mask")}


def _safetensors_bytes() -> bytes:
    # save to a path (the .safetensors name picks the format), read the bytes back
    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/t.safetensors"
        S.save(TENSORS, path)
        with open(path, "rb") as fh:
            return fh.read()


ST_BYTES = _safetensors_bytes()


# -- comparing results -----------------------------------------------------------------------
def _same(a: Any, b: Any) -> bool:
    """Exactly the same value: types, dtypes, shapes, bytes, flags, key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, flow.Tensor):
        return (a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
                and a.detach().numpy().tobytes() == b.detach().numpy().tobytes())
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    return a == b


def _only_loadable_types(x: Any, depth: int = 0) -> bool:
    assert depth < 200
    if x is None or isinstance(x, (bool, int, float, str, flow.Tensor, np.ndarray, flow.dtype)):
        return True
    if isinstance(x, dict):
        return all(_only_loadable_types(k, depth + 1) and _only_loadable_types(v, depth + 1)
                   for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return all(_only_loadable_types(v, depth + 1) for v in x)
    return False


def _load_bounded(data: bytes) -> Any:
    """``flow.load`` of ``data``: the result, or the SerializationError it raised; never
    another exception, and never more than MEMORY_BOUND of Python allocations."""
    tracemalloc.start()
    try:
        out = S.load(io.BytesIO(data))
        event("loaded")
        return out
    except S.SerializationError as err:
        assert "the file object" in str(err)
        event("SerializationError")
        return err
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < MEMORY_BOUND, f"load used {peak} bytes"


# -- byte-level damage ------------------------------------------------------------------------
def _damage(lo: int, hi: int) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    """1 to 3 damaging operations at positions in ``[lo, hi)``."""
    pos = st.integers(lo, hi - 1)
    some = st.binary(min_size=1, max_size=8)
    op = st.one_of(
        st.tuples(st.just("flip"), pos, st.integers(0, 7)),
        st.tuples(st.just("truncate"), pos),
        st.tuples(st.just("overwrite"), pos, some),
        st.tuples(st.just("insert"), pos, some),
        st.tuples(st.just("delete"), pos, st.integers(1, 8)),
    )
    return st.lists(op, min_size=1, max_size=3)


def _apply(data: bytes, ops: list[tuple[Any, ...]]) -> bytes:
    b = bytearray(data)
    for kind, p, *arg in ops:
        p = min(p, max(len(b) - 1, 0))
        if kind == "flip" and b:
            b[p] ^= 1 << arg[0]
        elif kind == "truncate":
            del b[p:]
        elif kind == "overwrite":
            b[p:p + len(arg[0])] = arg[0]
        elif kind == "insert":
            b[p:p] = arg[0]
        elif kind == "delete":
            del b[p:p + arg[0]]
    return bytes(b)


def _directory_start(data: bytes) -> int:
    eocd = data.rfind(b"PK\x05\x06")
    return int.from_bytes(data[eocd + 16:eocd + 20], "little")


@FUZZ
@given(st.one_of(_damage(0, len(JFLOW_BYTES)),            # anywhere
                 _damage(_directory_start(JFLOW_BYTES), len(JFLOW_BYTES))))  # the directory
def test_damaged_jflow_files(ops):
    data = _apply(JFLOW_BYTES, ops)
    out = _load_bounded(data)
    assert isinstance(out, S.SerializationError) or _same(out, ORIGINAL), ops


# -- crafted manifests ------------------------------------------------------------------------
_KEYS = st.sampled_from(["$tensor", "$ndarray", "$tuple", "$dtype", "$dict", "ordered",
                         "dtype", "shape", "nbytes", "parameter", "requires_grad", "x"])
_HOSTILE = st.sampled_from([2**32, 2**64, -1, -2, 10**30, 1.5, float("inf"), float("nan"),
                            True, "float128", "bfloat16", "bool", [2**32, 2**32], [-2, -2],
                            [1.5], [], {}, [[]], {"$dict": [[{"$dict": []}, 1]]}])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 40) | st.floats() | st.text(max_size=4)
    | _HOSTILE,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=8)


def _nodes(x: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to every node of a JSON tree."""
    out = [path]
    items = x.items() if isinstance(x, dict) else enumerate(x) if isinstance(x, list) else ()
    for k, v in items:
        out += _nodes(v, (*path, k))
    return out


def _manifest() -> dict[str, Any]:
    with zipfile.ZipFile(io.BytesIO(JFLOW_BYTES)) as zf:
        return json.loads(zf.read("jflow.json"))


MANIFEST = _manifest()
NODES = _nodes(MANIFEST)


def _edit(manifest: dict[str, Any], path: tuple[Any, ...], value: Any, delete: bool) -> Any:
    m = json.loads(json.dumps(manifest))
    if not path:
        return value
    parent = m
    for k in path[:-1]:
        parent = parent[k]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return m


def _rezip(manifest: Any) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(JFLOW_BYTES))
    buf = io.BytesIO()
    with src, zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("jflow.json", json.dumps(manifest))
        for name in src.namelist():
            if name != "jflow.json":
                zf.writestr(name, src.read(name))
    return buf.getvalue()


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(NODES), _JSON, st.booleans()), min_size=1,
                max_size=3))
def test_crafted_manifests(edits):
    m: Any = MANIFEST
    for path, value, delete in edits:
        try:
            m = _edit(m, path, value, delete)
        except (KeyError, IndexError, TypeError):
            continue                          # an earlier edit removed this node
    out = _load_bounded(_rezip(m))
    assert isinstance(out, S.SerializationError) or _only_loadable_types(out), edits


# -- damaged safetensors files ---------------------------------------------------------------
_PACKAGE_DTYPES = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16,
                   "I32": np.int32, "I64": np.int64, "F16": np.float16,
                   "BF16": ml_dtypes.bfloat16, "F32": np.float32, "F64": np.float64}


def _header_len() -> int:
    return 8 + int.from_bytes(ST_BYTES[:8], "little")


@FUZZ
@given(st.one_of(_damage(0, _header_len()), _damage(_header_len(), len(ST_BYTES))))
def test_damaged_safetensors_files(ops):
    data = _apply(ST_BYTES, ops)
    out = _load_bounded(data)
    if isinstance(out, S.SerializationError):
        return
    # what jflow accepted, the reference implementation reads the same way
    ref = dict(safetensors.deserialize(data))
    assert set(out) == set(ref), ops
    for k, t in out.items():
        a = np.frombuffer(ref[k]["data"], dtype=_PACKAGE_DTYPES[ref[k]["dtype"]])
        assert list(t.shape) == list(ref[k]["shape"])
        assert np.asarray(t.numpy()).tobytes() == a.tobytes(), (ops, k)


# -- damaged and crafted PyTorch-format files ---------------------------------------------------
def _torch_format_bytes() -> bytes:
    """A PyTorch checkpoint written by real PyTorch (views sharing a storage, a parameter,
    bfloat16, bool, metadata), or by jflow's writer when PyTorch is missing."""
    try:
        import torch
    except ImportError:
        buf = io.BytesIO()
        S.save({**{k: ORIGINAL[k] for k in ("w", "i", "bf", "mask")},
                "meta": OrderedDict(epoch=3, name="run", lr=0.1, size=flow.Size([2]))},
               buf, format="torch")
        return buf.getvalue()
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(3, 4))
    obj = {"w": w, "col": w.data[:, 1], "t": w.data.t(),
           "i": torch.tensor([1, -2], dtype=torch.int32),
           "bf": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
           "mask": torch.tensor([True, False]),
           "meta": OrderedDict(epoch=3, name="run", lr=0.1, size=torch.Size([2]),
                               dtype=torch.float16)}
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


TORCH_BYTES = _torch_format_bytes()
TORCH_REF = S.load(io.BytesIO(TORCH_BYTES))


class _SmallExpansion:
    """Views may add at most 64 KB over their storages (the default 1 GiB would let a
    damaged stride-0 view allocate beyond this test's memory bound, legitimately)."""

    def __enter__(self) -> None:
        from jflow.serialization import _torchformat
        self.mod, self.old = _torchformat, _torchformat.MAX_EXPANSION_BYTES
        _torchformat.MAX_EXPANSION_BYTES = 64 << 10

    def __exit__(self, *exc: Any) -> None:
        self.mod.MAX_EXPANSION_BYTES = self.old


@FUZZ
@given(st.one_of(_damage(0, len(TORCH_BYTES)),
                 _damage(_directory_start(TORCH_BYTES), len(TORCH_BYTES))))
def test_damaged_torch_files(ops):
    data = _apply(TORCH_BYTES, ops)
    with _SmallExpansion():
        out = _load_bounded(data)
    assert isinstance(out, S.SerializationError) or _same(out, TORCH_REF), ops


def _torch_pickle() -> tuple[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(TORCH_BYTES)) as zf:
        name = next(n for n in zf.namelist() if n.endswith("/data.pkl"))
        return name, zf.read(name)


PKL_NAME, PKL = _torch_pickle()


def _rezip_torch(pkl: bytes) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(TORCH_BYTES))
    buf = io.BytesIO()
    with src, zipfile.ZipFile(buf, "w") as zf:
        for name in src.namelist():
            zf.writestr(name, pkl if name == PKL_NAME else src.read(name))
    return buf.getvalue()


def _only_weights(x: Any) -> bool:
    """Only what weights_only=True may return: tensors, containers, numbers, strings, bytes,
    dtypes, sizes, devices."""
    todo, seen = [x], set()
    while todo:
        y = todo.pop()
        if y is None or isinstance(y, (bool, int, float, complex, str, bytes, bytearray,
                                       flow.Tensor, flow.dtype, flow.device)):
            continue
        if id(y) in seen:
            continue
        seen.add(id(y))
        if type(y) in (dict, OrderedDict):
            todo += [*y.keys(), *y.values(), *vars(y).values()] if type(y) is OrderedDict \
                else [*y.keys(), *y.values()]
        elif type(y) in (list, tuple, set, flow.Size):
            todo += list(y)
        else:
            return False
    return True


@FUZZ
@given(_damage(0, len(PKL)))
def test_crafted_torch_pickles(ops):
    """A damaged pickle re-zipped with valid CRCs: what a crafted file looks like. It is
    refused, or loads as data only; it never runs anything."""
    with _SmallExpansion():
        out = _load_bounded(_rezip_torch(_apply(PKL, ops)))
    assert isinstance(out, S.SerializationError) or _only_weights(out), ops
