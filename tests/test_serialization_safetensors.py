"""flow.save / flow.load with .safetensors files: round trips, files written by the
safetensors package (and PyTorch), clear errors for what safetensors cannot hold, and a
SerializationError naming the file and the tensor for every malformed file."""

from __future__ import annotations

import io
import json
import struct
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import jflow as flow
from jflow import serialization as S
from jflow.serialization import _safetensors

safetensors_numpy = pytest.importorskip("safetensors.numpy")

ALL = (flow.bool, flow.uint8, flow.int8, flow.int16, flow.int32, flow.int64, flow.float16,
       flow.bfloat16, flow.float32, flow.float64)


def _tensors() -> dict[str, flow.Tensor]:
    out = {f"layer.{d.name}": flow.tensor([[1, 0, 3], [4, 5, 6]]).to(d) for d in ALL}
    out["scalar"] = flow.tensor(2.5)
    out["empty"] = flow.zeros(0, 3)
    out["param"] = flow.nn.Parameter(flow.randn(4))
    return out


def _assert_same(a: Any, b: Any) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.asarray(a.numpy()).tobytes() == np.asarray(b.detach().numpy()).tobytes()


def test_round_trip_all_dtypes(tmp_path):
    path = tmp_path / "model.safetensors"
    obj = _tensors()
    S.save(obj, path)
    out = S.load(path)
    assert sorted(out) == sorted(obj)
    for k, t in obj.items():
        assert type(out[k]) is flow.Tensor and not out[k].requires_grad
        _assert_same(out[k], t)
    with open(path, "rb") as fh:                        # file objects too
        buf = io.BytesIO(fh.read())
    for k, t in S.load(buf).items():
        _assert_same(t, obj[k])


def test_files_we_write_are_read_by_the_package(tmp_path):
    path = tmp_path / "m.safetensors"
    obj = _tensors()
    S.save(obj, path)
    arrays = safetensors_numpy.load_file(str(path))
    for k, t in obj.items():
        assert arrays[k].dtype == t.dtype.np and arrays[k].shape == tuple(t.shape)
        assert arrays[k].tobytes() == np.asarray(t.detach().numpy()).tobytes()


def test_files_the_package_writes_are_read(tmp_path):
    arrays = {"w": np.arange(6, dtype=np.float32).reshape(2, 3),
              "bf": np.arange(4, dtype=ml_dtypes.bfloat16),
              "i": np.array([-1, 2], dtype=np.int64), "b": np.array([True, False]),
              "u": np.array([255], dtype=np.uint8)}
    path = tmp_path / "np.safetensors"
    safetensors_numpy.save_file(arrays, str(path), metadata={"who": "someone else"})
    for src in (path, io.BytesIO(path.read_bytes())):
        out = S.load(src)
        assert set(out) == set(arrays)
        for k, a in arrays.items():
            assert out[k].dtype.np == a.dtype and out[k].shape == a.shape
            assert np.asarray(out[k].numpy()).tobytes() == a.tobytes()


def test_recognized_by_content_not_name(tmp_path):
    path = tmp_path / "weights.bin"
    path.write_bytes(safetensors_numpy.save({"w": np.ones(2, np.float32)}))
    assert S.load(path)["w"].numpy().tolist() == [1, 1]


def test_pytorch_interop(tmp_path):
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    path = tmp_path / "torch.safetensors"
    safetensors_torch.save_file({"w": torch.arange(6, dtype=torch.bfloat16).reshape(2, 3)},
                                str(path))
    out = S.load(path)
    assert out["w"].dtype == flow.bfloat16 and out["w"].float().numpy().tolist() == \
        [[0, 1, 2], [3, 4, 5]]
    S.save({"w": flow.arange(4).to(flow.bfloat16)}, path)
    back = safetensors_torch.load_file(str(path))
    assert back["w"].dtype == torch.bfloat16 and back["w"].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("obj,fragment", [
    ([flow.ones(1)], "got a list"),
    ({"a": {"b": flow.ones(1)}}, "obj['a'] is a dict"),
    ({"a": np.ones(1)}, "obj['a'] is a ndarray"),
    ({"a": 1.0}, "obj['a'] is a float"),
    ({1: flow.ones(1)}, "key 1 is not allowed"),
    ({"__metadata__": flow.ones(1)}, "key '__metadata__' is not allowed"),
])
def test_what_safetensors_cannot_hold_is_refused(tmp_path, obj, fragment):
    with pytest.raises(TypeError, match="flat dict of str -> tensor") as info:
        S.save(obj, tmp_path / "x.safetensors")
    assert fragment in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_without_the_package(tmp_path, monkeypatch):
    path = tmp_path / "m.safetensors"
    S.save({"w": flow.ones(1)}, path)
    monkeypatch.setattr(_safetensors, "safetensors", None)
    with pytest.raises(ImportError, match=r"pip install 'jflow-jax\[safetensors\]'"):
        S.save({"w": flow.ones(1)}, path)
    with pytest.raises(ImportError, match=r"pip install 'jflow-jax\[safetensors\]'"):
        S.load(path)


# -- malformed files -------------------------------------------------------------------------
def _st(header: Any, data: bytes = b"", length: int | None = None) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def _f32(shape: Any, offsets: Any, dtype: Any = "F32") -> dict[str, Any]:
    return {"dtype": dtype, "shape": shape, "data_offsets": offsets}


MALFORMED = {
    "bad JSON": (_st(b"{not json", b""), "the safetensors header", "bad JSON"),
    "not UTF-8": (_st(b'{"\xff": 1}'), "the safetensors header", "bad JSON"),
    "huge header length": (_st(b"{}", length=2**63), "the safetensors header",
                           "declares 9223372036854775808 header bytes"),
    "header past the end": (_st({"a": _f32([1], [0, 4])}, bytes(4), length=500),
                            "the safetensors header", "declares 500 header bytes"),
    "not an object": (_st(b'{"a": 1}'), "tensor 'a'", "header entry is 1"),
    "offsets out of range": (_st({"a": _f32([1], [0, 400])}, bytes(4)), "tensor 'a'",
                             "data_offsets [0, 400]"),
    "offsets reversed": (_st({"a": _f32([1], [4, 0])}, bytes(4)), "tensor 'a'",
                         "data_offsets"),
    "offsets not ints": (_st({"a": _f32([1], [0.0, 4])}, bytes(4)), "tensor 'a'",
                         "data_offsets"),
    "size mismatch": (_st({"a": _f32([2], [0, 4])}, bytes(4)), "tensor 'a'",
                      "4 bytes of data, but F32[2] has 8"),
    "shape overflow": (_st({"a": _f32([2**32, 2**32], [0, 0])}), "tensor 'a'",
                       "F32[4294967296, 4294967296] has"),
    "negative shape": (_st({"a": _f32([-2, -2], [0, 16])}, bytes(16)), "tensor 'a'",
                       "non-negative"),
    "float shape": (_st({"a": _f32([1.5], [0, 4])}, bytes(4)), "tensor 'a'", "non-negative"),
    "huge shape": (_st({"a": _f32([10**30], [0, 4])}, bytes(4)), "tensor 'a'",
                   "has 4000000000000000000000000000000"),
    "unsupported dtype": (_st({"a": _f32([2], [0, 4], "U16")}, bytes(4)), "tensor 'a'",
                          "dtype 'U16' is not one jflow supports"),
    "unknown dtype": (_st({"a": _f32([1], [0, 4], "Q9")}, bytes(4)), "tensor 'a'",
                      "dtype 'Q9'"),
    "overlap": (_st({"a": _f32([1], [0, 4]), "b": _f32([1], [0, 4])}, bytes(4)),
                "tensor 'b'", "overlap or leave a gap"),
    "gap": (_st({"a": _f32([1], [4, 8])}, bytes(8)), "tensor 'a'", "starts at byte 4"),
    "trailing bytes": (_st({"a": _f32([1], [0, 4])}, bytes(8)), "the safetensors header",
                       "cover 4 bytes of data, but the file has 8"),
    "truncated data": (_st({"a": _f32([2], [0, 8])}, bytes(4)), "tensor 'a'",
                       "data_offsets [0, 8] are not [begin, end] within the 4 bytes"),
    "duplicate name": (_st(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                           b'"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', bytes(4)),
                       "the safetensors header", "key 'a' appears twice"),
    "metadata not strings": (_st({"__metadata__": {"a": 1}}), "__metadata__",
                             "not a map of strings"),
    "deep nesting": (_st(b"{" + b'"a":[' * 100_000 + b"}"), "the safetensors header",
                     "bad JSON"),
    "bool bytes": (_st({"a": _f32([2], [0, 2], "BOOL")}, b"\x00\x07"), "tensor 'a'",
                   "bytes other than 0 and 1"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
@pytest.mark.parametrize("as_path", [True, False], ids=["path", "fileobj"])
def test_malformed_files(tmp_path, case, as_path):
    data, entry, fragment = MALFORMED[case]
    path = tmp_path / "bad.safetensors"
    path.write_bytes(data)
    with pytest.raises(S.SerializationError) as info:
        S.load(path if as_path else io.BytesIO(data))
    msg = str(info.value)
    assert (repr(str(path)) if as_path else "the file object") in msg, msg
    assert entry in msg and fragment in msg, msg


@pytest.mark.parametrize("cut", [0, 3, 8, 9, 20])
def test_truncated_files(tmp_path, cut):
    data = safetensors_numpy.save({"w": np.ones(4, np.float32)})
    path = tmp_path / "t.safetensors"
    path.write_bytes(data[:cut])
    with pytest.raises(S.SerializationError, match="truncated|corrupted|not a file"):
        S.load(path)


def test_package_errors_become_serialization_errors(tmp_path, monkeypatch):
    """If the file changes between jflow's check and the package's read, the package's own
    error still comes out as a SerializationError."""
    path: Path = tmp_path / "m.safetensors"
    S.save({"w": flow.ones(2)}, path)

    class Broken:
        def __init__(self, *a: Any, **k: Any) -> None:
            raise _safetensors.safetensors.SafetensorError("header changed")

    monkeypatch.setattr(_safetensors.safetensors, "safe_open", Broken)
    with pytest.raises(S.SerializationError, match="header changed"):
        S.load(path)
