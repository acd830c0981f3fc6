"""flow.save / flow.load: round trips, atomic writes, clear errors, and no pickle."""

import base64
import io
import json
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import jflow as flow
from jflow import nn, optim
from jflow import serialization as S
from jflow.serialization import _zipformat as Z


def test_tensor_round_trip_all_dtypes(tmp_path):
    path = tmp_path / "t.jf"
    for dt in (flow.float32, flow.float64, flow.float16, flow.bfloat16, flow.int8, flow.int32,
               flow.int64, flow.uint8, flow.bool):
        t = flow.tensor([[1, 0, 3], [4, 5, 6]]).to(dt)
        S.save(t, path)
        u = S.load(path)
        assert type(u) is flow.Tensor and u.dtype == dt and u.shape == t.shape
        np.testing.assert_array_equal(np.asarray(u.numpy(), dtype=np.float64),
                                      np.asarray(t.numpy(), dtype=np.float64))
    S.save(flow.tensor(2.5), path)
    assert S.load(path).shape == flow.Size([]) and float(S.load(path)) == 2.5
    S.save(flow.zeros(0, 3), path)
    assert S.load(path).shape == flow.Size([0, 3])


def test_nested_objects_round_trip(tmp_path):
    path = str(tmp_path / "obj.jf")
    shared = flow.arange(3)
    obj = {"a": [1, 2.5, "x", None, True, float("inf")], "t": (shared, shared),
           7: OrderedDict(k=np.arange(4, dtype=np.int16)), (1, "b"): {"dtype": flow.float16},
           "$tensor": "a key that looks like a marker", "n": np.float32(1.5)}
    S.save(obj, path)
    out = S.load(path)
    assert out["a"] == [1, 2.5, "x", None, True, float("inf")]
    assert isinstance(out["t"], tuple) and out["t"][0] is out["t"][1]   # stored once
    assert isinstance(out[7], OrderedDict)
    assert out[7]["k"].dtype == np.int16 and out[7]["k"].tolist() == [0, 1, 2, 3]
    assert out[(1, "b")]["dtype"] == flow.float16
    assert out["$tensor"] == "a key that looks like a marker" and out["n"] == 1.5
    assert list(out) == list(obj)


def test_requires_grad_and_parameters(tmp_path):
    path = tmp_path / "p.jf"
    p = nn.Parameter(flow.randn(2))
    r = flow.randn(2, requires_grad=True)
    S.save({"p": p, "r": r, "y": r * 2}, path)
    out = S.load(path)
    assert isinstance(out["p"], nn.Parameter) and out["p"].requires_grad
    assert out["r"].requires_grad and out["r"].is_leaf
    assert not out["y"].requires_grad             # a non-leaf is saved as its value


def test_module_and_optimizer_state_round_trip(tmp_path):
    flow.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    opt = optim.Adam(model.parameters(), lr=0.01)
    x = flow.randn(8, 3)
    for _ in range(3):
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        opt.step()
    path = tmp_path / "ckpt.jf"
    S.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, path)
    ck = S.load(path)
    assert ck["epoch"] == 3 and isinstance(ck["model"], OrderedDict)
    model2 = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    model2.load_state_dict(ck["model"])
    opt2 = optim.Adam(model2.parameters(), lr=0.01)
    opt2.load_state_dict(ck["optim"])
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        (m(x) ** 2).mean().backward()
        o.step()
    for a, b in zip(model.parameters(), model2.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_file_objects():
    buf = io.BytesIO()
    S.save({"w": flow.ones(2)}, buf)
    buf.seek(0)
    assert S.load(buf)["w"].numpy().tolist() == [1, 1]


def test_unsupported_object_is_refused_before_writing(tmp_path):
    path = tmp_path / "x.jf"
    with pytest.raises(TypeError, match=r"cannot save an object of type object at obj\['bad'\]"):
        S.save({"bad": object()}, path)
    assert not path.exists() and os.listdir(tmp_path) == []


def test_atomic_write_keeps_old_file(tmp_path, monkeypatch):
    path = tmp_path / "model.jf"
    S.save({"w": flow.ones(3)}, path)
    before = path.read_bytes()
    real = Z._write_array

    def failing(zf, name, a):
        real(zf, name, a)
        if name == "data/1":
            raise OSError("disk full")

    monkeypatch.setattr(Z, "_write_array", failing)
    with pytest.raises(OSError, match="disk full"):
        S.save({"w": flow.zeros(3), "v": flow.zeros(1000), "u": flow.zeros(5)}, path)
    assert path.read_bytes() == before                       # the old file is intact
    assert os.listdir(tmp_path) == ["model.jf"]               # no temporary file left behind
    assert S.load(path)["w"].numpy().tolist() == [1, 1, 1]


def test_atomic_write_interrupt(tmp_path, monkeypatch):
    path = tmp_path / "model.jf"
    S.save(flow.ones(2), path)
    before = path.read_bytes()

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(S.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        S.save(flow.zeros(2), path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["model.jf"]


def test_truncated_file_is_a_clear_error(tmp_path):
    path = tmp_path / "t.jf"
    S.save({"w": flow.randn(100), "b": flow.randn(10)}, path)
    data = path.read_bytes()
    for cut in (len(data) - 10, len(data) // 2, 30, 0):
        path.write_bytes(data[:cut])
        with pytest.raises(S.SerializationError, match="truncated|corrupted|not a file"):
            S.load(path)


def test_corrupted_data_is_a_clear_error(tmp_path):
    path = tmp_path / "t.jf"
    S.save(flow.arange(64), path)
    data = bytearray(path.read_bytes())
    i = data.find(np.arange(64).tobytes()[8:16])
    data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(S.SerializationError, match="corrupted"):
        S.load(path)


def test_foreign_files_are_a_clear_error(tmp_path):
    text = tmp_path / "a.txt"
    text.write_text("hello")
    with pytest.raises(S.SerializationError, match="not a file written by flow.save"):
        S.load(text)
    z = tmp_path / "b.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("other.txt", "x")
    with pytest.raises(S.SerializationError, match="without jflow.json"):
        S.load(z)
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("jflow.json", json.dumps({"format": "something-else"}))
    with pytest.raises(S.SerializationError, match="format 'something-else'"):
        S.load(z)
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("jflow.json", json.dumps({"format": "jflow.save", "version": 99,
                                              "tensors": [], "object": None}))
    with pytest.raises(S.SerializationError, match="version 99"):
        S.load(z)
    with zipfile.ZipFile(z, "w") as zf:   # a manifest pointing at data that is not there
        zf.writestr("jflow.json", json.dumps({"format": "jflow.save", "version": 1,
                                              "tensors": [], "object": {"$tensor": 0}}))
    with pytest.raises(S.SerializationError, match="corrupted"):
        S.load(z)


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_no_pickle(tmp_path, monkeypatch):
    # a pickle file is refused, not executed
    evil = tmp_path / "evil.pt"
    evil.write_bytes(pickle.dumps({"x": _Boom()}))
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: pytest.fail("pickle.loads called"))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("pickle.load called"))
    monkeypatch.setattr(pickle, "Unpickler", None)
    with pytest.raises(S.SerializationError):
        S.load(evil)
    # our own files contain no pickle and load without it
    path = tmp_path / "ok.jf"
    S.save({"w": flow.ones(2), "meta": ["a", 1]}, path)
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == ["data/0", "jflow.json"]
        manifest = json.loads(zf.read("jflow.json"))
    assert manifest["format"] == "jflow.save" and manifest["tensors"][0]["dtype"] == "float32"
    assert S.load(path)["meta"] == ["a", 1]
    with pytest.raises(TypeError):
        S.save({"x": _Boom()}, path)      # arbitrary objects are not saved either


# A checkpoint written by jflow before the hostile-file checks (format version 1, HEAD's
# serialization.py): {"w": Parameter([[1.5, -2], [0.25, 8]]), "ids": int64 [3, 1, 2],
# "half": bfloat16 [1, 2], "np": int16 arange(3), "meta": OrderedDict(epoch=3,
# dtype=float16), "pair": (None, "x")}.
V1_FILE = (
    "UEsDBBQAAAAAALcjeF2nGbbgUQIAAFECAAAKAAAAamZsb3cuanNvbnsiZm9ybWF0IjoiamZsb3cuc2F2ZSIsInZlcn"
    "Npb24iOjEsImJ5dGVvcmRlciI6ImxpdHRsZSIsInRlbnNvcnMiOlt7ImR0eXBlIjoiZmxvYXQzMiIsInNoYXBlIjpb"
    "MiwyXSwibmJ5dGVzIjoxNiwicmVxdWlyZXNfZ3JhZCI6dHJ1ZSwicGFyYW1ldGVyIjp0cnVlfSx7ImR0eXBlIjoiaW"
    "50NjQiLCJzaGFwZSI6WzNdLCJuYnl0ZXMiOjI0LCJyZXF1aXJlc19ncmFkIjpmYWxzZSwicGFyYW1ldGVyIjpmYWxz"
    "ZX0seyJkdHlwZSI6ImJmbG9hdDE2Iiwic2hhcGUiOlsyXSwibmJ5dGVzIjo0LCJyZXF1aXJlc19ncmFkIjpmYWxzZS"
    "wicGFyYW1ldGVyIjpmYWxzZX0seyJkdHlwZSI6ImludDE2Iiwic2hhcGUiOlszXSwibmJ5dGVzIjo2fV0sIm9iamVj"
    "dCI6eyIkZGljdCI6W1sidyIseyIkdGVuc29yIjowfV0sWyJpZHMiLHsiJHRlbnNvciI6MX1dLFsiaGFsZiIseyIkdG"
    "Vuc29yIjoyfV0sWyJucCIseyIkbmRhcnJheSI6M31dLFsibWV0YSIseyIkZGljdCI6W1siZXBvY2giLDNdLFsiZHR5"
    "cGUiLHsiJGR0eXBlIjoiZmxvYXQxNiJ9XV0sIm9yZGVyZWQiOnRydWV9XSxbInBhaXIiLHsiJHR1cGxlIjpbbnVsbC"
    "wieCJdfV1dLCJvcmRlcmVkIjpmYWxzZX19UEsDBC0AAAAAAAAAIQAtC8W3//////////8GABQAZGF0YS8wAQAQABAA"
    "AAAAAAAAEAAAAAAAAAAAAMA/AAAAwAAAgD4AAABBUEsDBC0AAAAAAAAAIQDk9ZIX//////////8GABQAZGF0YS8xAQ"
    "AQABgAAAAAAAAAGAAAAAAAAAADAAAAAAAAAAEAAAAAAAAAAgAAAAAAAABQSwMELQAAAAAAAAAhABqK9pX/////////"
    "/wYAFABkYXRhLzIBABAABAAAAAAAAAAEAAAAAAAAAIA/AEBQSwMELQAAAAAAAAAhAESkSDv//////////wYAFABkYX"
    "RhLzMBABAABgAAAAAAAAAGAAAAAAAAAAAAAQACAFBLAQIUAxQAAAAAALcjeF2nGbbgUQIAAFECAAAKAAAAAAAAAAAA"
    "AACAAQAAAABqZmxvdy5qc29uUEsBAi0DLQAAAAAAAAAhAC0LxbcQAAAAEAAAAAYAAAAAAAAAAAAAAIABeQIAAGRhdG"
    "EvMFBLAQItAy0AAAAAAAAAIQDk9ZIXGAAAABgAAAAGAAAAAAAAAAAAAACAAcECAABkYXRhLzFQSwECLQMtAAAAAAAA"
    "ACEAGor2lQQAAAAEAAAABgAAAAAAAAAAAAAAgAERAwAAZGF0YS8yUEsBAi0DLQAAAAAAAAAhAESkSDsGAAAABgAAAA"
    "YAAAAAAAAAAAAAAIABTQMAAGRhdGEvM1BLBQYAAAAABQAFAAgBAACLAwAAAAA="
)


def test_reads_files_written_by_earlier_jflow():
    out = S.load(io.BytesIO(base64.b64decode(V1_FILE)))
    assert isinstance(out["w"], nn.Parameter) and out["w"].requires_grad
    assert out["w"].detach().numpy().tolist() == [[1.5, -2.0], [0.25, 8.0]]
    assert out["ids"].dtype == flow.int64 and out["ids"].numpy().tolist() == [3, 1, 2]
    assert out["half"].dtype == flow.bfloat16 and out["half"].float().numpy().tolist() == [1, 2]
    assert out["np"].dtype == np.int16 and out["np"].tolist() == [0, 1, 2]
    assert out["meta"] == OrderedDict(epoch=3, dtype=flow.float16)
    assert isinstance(out["meta"], OrderedDict) and out["pair"] == (None, "x")
