"""Sharded checkpoints (flow.save of global tensors to a directory, flow.load resharding):
round trips against NumPy references, resharding 8 devices -> 4 (B, S(1), local), each
distinct shard written once, slice reads, atomic commit under a simulated crash, and a
SerializationError naming the problem for every hostile directory. The multi-process case is
in tests/test_distributed.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import jflow as flow
from jflow import serialization as ser
from jflow.serialization import _sharded

S, B, P = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum
P8 = flow.placement("cpu", list(range(8)))
P4 = flow.placement("cpu", list(range(4)))
P22 = flow.placement("cpu", [[0, 1], [2, 3]])

RNG = np.random.default_rng(0)
W = RNG.standard_normal((16, 8)).astype(np.float32)
BIAS = RNG.standard_normal(8)
M = RNG.integers(-50, 50, (4, 6)).astype(np.int32)
H = RNG.standard_normal((8, 4)).astype(ml_dtypes.bfloat16)
MASK = RNG.integers(0, 2, (8, 2)).astype(bool)


def _state() -> dict[str, Any]:
    return {
        "w": flow.nn.Parameter(flow.tensor(W).to_global(P8, S(0))),
        "b": flow.tensor(BIAS).to_global(P8, B),
        "p": flow.tensor(W).to_global(P8, B).to_global(P8, P),   # logical value W
        "m": flow.tensor(M).to_global(P22, [S(0), S(1)]),
        "h": flow.tensor(H).to_global(P4, S(0)),
        "mask": flow.tensor(MASK).to_global(P8, S(0)),
        "empty": flow.zeros(0, 8).to_global(P8, S(1)),
        "local": flow.tensor([1.5, 2.5]),
        "nested": {"step": 7, "arr": np.arange(3), "name": "adam", "t": (1, None)},
    }


REFS = {"w": W, "b": BIAS, "p": W, "m": M, "h": H, "mask": MASK,
        "empty": np.zeros((0, 8), np.float32)}


def _same(t: Any, ref: np.ndarray) -> None:
    a = np.asarray(t.detach().numpy())
    assert a.dtype == ref.dtype and a.shape == ref.shape, (a.dtype, a.shape, ref.dtype)
    np.testing.assert_array_equal(a, ref)


def _save(tmp_path: Path) -> Path:
    d = tmp_path / "ckpt"
    flow.save(_state(), d)
    return d


def test_round_trip_keeps_values_layouts_and_flags(tmp_path: Path) -> None:
    d = _save(tmp_path)
    names = sorted(os.listdir(d))
    assert names[0] == "manifest.json" and len(names) == 2
    assert _sharded.SHARD_FILE.fullmatch(names[1])
    out = flow.load(d)
    state = _state()
    for k, ref in REFS.items():
        _same(out[k], ref)
        assert out[k]._global == state[k]._global, k        # saved placement and sbp
    assert out["p"].sbp == (P,)                              # reduced on disk, P again
    assert type(out["w"]) is flow.nn.Parameter and out["w"].requires_grad
    assert out["local"]._global is None and out["local"].tolist() == [1.5, 2.5]
    n = out["nested"]
    assert n["step"] == 7 and n["name"] == "adam" and n["t"] == (1, None)
    np.testing.assert_array_equal(n["arr"], np.arange(3))


def test_saved_on_8_loads_on_4_as_b_s1_and_local(tmp_path: Path) -> None:
    d = tmp_path / "ckpt"
    flow.save({"w": flow.tensor(W).to_global(P8, S(0)), "b": flow.tensor(BIAS).to_global(P8, B)},
              d)
    for sbp in (B, S(1)):
        w = flow.load(d, placement=P4, sbp={"w": sbp})["w"]
        assert w._global == (P4, (sbp,))
        _same(w, W)
        shards = sorted(w._value.addressable_shards, key=lambda s: s.device.id)
        cols = 8 // 4 if sbp == S(1) else 8
        for i, s in enumerate(shards):                       # each device's own slice
            want = W[:, i * cols:(i + 1) * cols] if sbp == S(1) else W
            np.testing.assert_array_equal(np.asarray(s.data), want)
    out = flow.load(d, placement=P4, sbp=B)                  # one sbp for every tensor
    assert out["b"]._global == (P4, (B,)) and out["w"].sbp == (B,)
    loc = flow.load(d, map_location="cpu")
    assert loc["w"]._global is None and loc["b"]._global is None
    _same(loc["w"], W)
    _same(loc["b"], BIAS)


def test_each_distinct_shard_is_written_once(tmp_path: Path) -> None:
    d = _save(tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    (fname,) = m["files"]
    raw = (d / fname).read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__")
    by_tensor = {}
    for g in m["globals"]:
        by_tensor[tuple(g["shape"]), g["dtype"], tuple(g["sbp"])] = len(g["shards"])
    assert by_tensor[(16, 8), "float32", ("S(0)",)] == 8     # one per rank
    assert by_tensor[(8,), "float64", ("B",)] == 1           # replicated: once
    assert by_tensor[(16, 8), "float32", ("P",)] == 1        # reduced: once
    assert by_tensor[(4, 6), "int32", ("S(0)", "S(1)")] == 4
    # the file holds exactly the manifest's shards and local tensors, nothing twice
    named = {s["name"] for g in m["globals"] for s in g["shards"]}
    named |= {t["name"] for t in m["tensors"]}
    assert set(header) == named
    data = sum(e["data_offsets"][1] - e["data_offsets"][0] for e in header.values())
    logical = W.nbytes * 2 + BIAS.nbytes + M.nbytes + H.nbytes + MASK.nbytes + 2 * 4 + 3 * 8
    assert data == logical


def test_loads_read_only_the_slices_they_need(tmp_path: Path, monkeypatch: Any) -> None:
    d = tmp_path / "ckpt"
    flow.save({"w": flow.tensor(W).to_global(P8, S(0))}, d)
    reads: list[tuple[int, ...]] = []
    real = _sharded._ShardFile.read

    def spy(self: Any, s: Any, region: Any, what: str) -> np.ndarray:
        a = real(self, s, region, what)
        reads.append(a.shape)
        return a

    monkeypatch.setattr(_sharded._ShardFile, "read", spy)
    _same(flow.load(d, placement=P4, sbp=S(1))["w"], W)
    # 4 devices x 8 saved row-shards, each read as its 2 rows x this device's 2 columns
    assert reads == [(2, 2)] * 32
    reads.clear()
    _same(flow.load(d, placement=P4, sbp=B)["w"], W)
    assert reads == [(2, 8)] * 8        # replicated on 4 devices: read once, not 4 times


def test_load_state_dict_keeps_the_models_layouts(tmp_path: Path) -> None:
    d = tmp_path / "ckpt"
    flow.save({"weight": flow.tensor(W.T.copy()).to_global(P8, S(0)),
               "bias": flow.tensor(W[0, :].copy()).to_global(P8, B)}, d)
    lin = flow.nn.Linear(16, 8)
    lin.weight = flow.nn.Parameter(flow.zeros(8, 16).to_global(P4, S(1)))
    lin.bias = flow.nn.Parameter(flow.zeros(8).to_global(P4, B))
    lin.load_state_dict(flow.load(d))
    assert lin.weight._global == (P4, (S(1),)) and lin.bias._global == (P4, (B,))
    np.testing.assert_array_equal(lin.weight.detach().numpy(), W.T)
    np.testing.assert_array_equal(lin.bias.detach().numpy(), W[0])


def test_choice_of_format_and_clear_errors(tmp_path: Path) -> None:
    g = {"w": flow.tensor(W).to_global(P8, S(0))}
    flow.save(g, tmp_path / "one.jf", sharded=False)          # gathered into one file
    assert (tmp_path / "one.jf").is_file()
    assert flow.load(tmp_path / "one.jf")["w"]._global is None
    flow.save({"x": flow.ones(2)}, tmp_path / "loc", sharded=True)   # local only, as a dir
    assert flow.load(tmp_path / "loc")["x"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="exists and is not a directory"):
        flow.save(g, tmp_path / "one.jf")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="non-empty directory without manifest.json"):
        flow.save(g, foreign)
    assert os.listdir(foreign) == ["notes.txt"]
    with pytest.raises(TypeError, match="sharded=True needs a directory path"):
        flow.save(g, open(os.devnull, "wb"), sharded=True)  # noqa: SIM115
    with pytest.raises(ValueError, match="placement= and sbp= apply to a sharded"):
        flow.load(tmp_path / "one.jf", placement=P4)
    d = tmp_path / "ckpt"
    flow.save(g, d)
    with pytest.raises(ValueError, match="pass one or the other"):
        flow.load(d, map_location="cpu", placement=P4)
    with pytest.raises(ValueError, match=r"flow.load \(obj\['w'\]\).*cannot be split evenly"):
        flow.load(d, placement=flow.placement("cpu", list(range(3))), sbp=S(0))
    with pytest.raises(TypeError, match="placement must be a flow.placement"):
        flow.load(d, placement="cpu")


# -- atomic commit ------------------------------------------------------------------------------
def _crashing_writer(path: str, arrays: list[tuple[str, Any]]) -> None:
    with open(path, "wb") as f:                        # half a file, then the "crash"
        f.write(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\"")
    raise OSError("disk full (simulated)")


def _files(d: Path) -> list[str]:
    return sorted(os.listdir(d))


def test_a_failed_save_leaves_the_previous_checkpoint(tmp_path: Path, monkeypatch: Any) -> None:
    d = tmp_path / "ckpt"
    flow.save({"w": flow.tensor(W).to_global(P8, S(0))}, d)
    before = _files(d)
    monkeypatch.setattr(_sharded, "write_shard_file", _crashing_writer)
    with pytest.raises(OSError, match="simulated"):
        flow.save({"w": flow.tensor(W + 1).to_global(P8, S(0))}, d)
    assert _files(d) == before                         # its partial file was removed
    _same(flow.load(d)["w"], W)


def test_a_killed_save_leaves_the_previous_checkpoint_and_no_leak(tmp_path: Path,
                                                                  monkeypatch: Any) -> None:
    d = tmp_path / "ckpt"
    flow.save({"w": flow.tensor(W).to_global(P8, S(0))}, d)
    before = _files(d)
    with monkeypatch.context() as mp:                  # killed: nothing cleans up
        mp.setattr(_sharded, "write_shard_file", _crashing_writer)
        mp.setattr(_sharded, "_remove_quietly", lambda path: None)
        with pytest.raises(OSError):
            flow.save({"w": flow.tensor(W + 1).to_global(P8, S(0))}, d)
    leaked = sorted(set(_files(d)) - set(before))
    assert len(leaked) == 1 and _sharded.SHARD_FILE.fullmatch(leaked[0])
    _same(flow.load(d)["w"], W)                         # still the previous checkpoint
    flow.save({"w": flow.tensor(W + 2).to_global(P8, S(0))}, d)
    after = _files(d)
    assert len(after) == 2 and not set(after) & set(leaked) and not set(after) - {
        "manifest.json"} & set(before)                  # old and leaked files removed
    assert not [n for n in after if n.endswith(".tmp")]
    _same(flow.load(d)["w"], W + 2)


# -- hostile directories ------------------------------------------------------------------------
def _tamper(d: Path, edit: Any) -> None:
    m = json.loads((d / "manifest.json").read_text())
    edit(m)
    (d / "manifest.json").write_text(json.dumps(m))


def _w(m: dict[str, Any]) -> dict[str, Any]:
    return m["globals"][0]


def _set(obj: Any, key: Any, value: Any) -> None:
    obj[key] = value


CASES = {
    "shape larger than the shards": (lambda m: _set(_w(m), "shape", [17, 8]),
                                     r"cover 128 of the 136 elements.*incomplete"),
    "shape smaller than a shard": (lambda m: _set(_w(m), "shape", [15, 8]),
                                   r"shard 7's index .* inside the shape \[15, 8\]"),
    "a shard missing": (lambda m: _w(m)["shards"].pop(3), r"cover 112 of the 128.*incomplete"),
    "overlapping shards": (lambda m: _set(_w(m)["shards"][1], "index", [[0, 2], [0, 8]]),
                           r"shards 0 and 1 overlap"),
    "shard shape differs from its file": (
        lambda m: (_set(_w(m)["shards"][0], "index", [[0, 1], [0, 8]]),
                   _w(m)["shards"].append({**_w(m)["shards"][0], "index": [[1, 2], [0, 8]]})),
        r"is float32\[2, 8\] in the file, but the manifest says float32\[1, 8\]"),
    "dtype differs from the file": (lambda m: _set(_w(m), "dtype", "int32"),
                                    r"is float32\[2, 8\] in the file, but the manifest says "
                                    r"int32"),
    "unknown dtype": (lambda m: _set(_w(m), "dtype", "float128"), r"unknown dtype 'float128'"),
    "path escaping the directory": (lambda m: _set(m, "files", ["../../etc/passwd"]),
                                    r"not a list of shard file names"),
    "shard in an unlisted file": (
        lambda m: _set(_w(m)["shards"][0], "file", "shard-0000000000000000-00001-of-00002"
                                                   ".safetensors"),
        r"shard 0's file .* is not one of the manifest's files"),
    "bad sbp": (lambda m: _set(_w(m), "sbp", ["S(x)"]), r"sbp \['S\(x\)'\] is not a list"),
    "split beyond the shape": (lambda m: _set(_w(m), "sbp", ["S(5)"]),
                               r"splits a dimension the shape"),
    "bad ranks": (lambda m: _set(_w(m), "placement", {"type": "cpu", "ranks": [0, 0]}),
                  r"placement ranks \[0, 0\]"),
    "bad global reference": (lambda m: _set(m, "object", {"$global": 5}),
                             r"reference to global tensor 5"),
    "not a manifest": (lambda m: _set(m, "format", "other"), r"not a sharded checkpoint"),
    "future version": (lambda m: _set(m, "version", 99), r"format version 99"),
    "shard name absent from its file": (lambda m: _set(_w(m)["shards"][0], "name", "nope"),
                                        r"shard 'nope' is not in the file"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_manifests_raise_serialization_error(tmp_path: Path, case: str) -> None:
    d = tmp_path / "ckpt"
    flow.save({"w": flow.tensor(W).to_global(P8, S(0))}, d)
    edit, match = CASES[case]
    _tamper(d, edit)
    with pytest.raises(ser.SerializationError, match=match):
        flow.load(d)
    with pytest.raises(ser.SerializationError, match=match):
        flow.load(d, map_location="cpu")


def _shard_file(d: Path) -> Path:
    return d / json.loads((d / "manifest.json").read_text())["files"][0]


def test_hostile_files_raise_serialization_error(tmp_path: Path) -> None:
    d = tmp_path / "ckpt"
    flow.save({"w": flow.tensor(W).to_global(P8, S(0))}, d)
    f = _shard_file(d)
    raw = f.read_bytes()
    f.write_bytes(raw[:-5])                                    # truncated
    with pytest.raises(ser.SerializationError, match=r"file shard-.*tensor '0/7': "
                                                     r"data_offsets .* within the 507 bytes"):
        flow.load(d)
    f.write_bytes(raw[:6])                                     # truncated in the header
    with pytest.raises(ser.SerializationError, match="shorter than the header length"):
        flow.load(d)
    f.unlink()                                                 # missing
    with pytest.raises(ser.SerializationError, match=r"incomplete: shard file shard-.* is "
                                                     r"missing"):
        flow.load(d)
    (d / "manifest.json").write_text("{not json")
    with pytest.raises(ser.SerializationError, match="bad JSON"):
        flow.load(d)
    (d / "manifest.json").unlink()
    with pytest.raises(ser.SerializationError, match="directory without manifest.json"):
        flow.load(d)


def test_bool_shard_with_odd_bytes_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "ckpt"
    flow.save({"m": flow.tensor(MASK).to_global(P8, S(0))}, d)
    f = _shard_file(d)
    raw = bytearray(f.read_bytes())
    raw[-1] = 7
    f.write_bytes(bytes(raw))
    with pytest.raises(ser.SerializationError, match="bytes other than 0 and 1"):
        flow.load(d)
