"""flow.load on hostile jflow files: every one is a SerializationError naming the file and the
entry, no other exception leaks, a zip bomb is refused before it inflates, and a crashed
save's temporary is cleaned up by the next save."""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import subprocess
import sys
import textwrap
import time
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import jflow as flow
from jflow import serialization as S
from jflow.serialization import _atomic

F32_4 = {"dtype": "float32", "shape": [4], "nbytes": 16}


def _write_zip(path: Path, manifest: Any, entries: dict[str, bytes] | None = None,
               method: int = zipfile.ZIP_STORED) -> Path:
    """A zip with ``manifest`` as jflow.json (JSON-encoded unless already bytes)."""
    text = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w", compression=method) as zf:
        zf.writestr("jflow.json", text)
        for name, data in (entries or {}).items():
            zf.writestr(name, data)
    return path


def _manifest(obj: Any, tensors: list[Any]) -> dict[str, Any]:
    return {"format": "jflow.save", "version": 1, "tensors": tensors, "object": obj}


def _expect_error(path: Path, *fragments: str) -> str:
    with pytest.raises(S.SerializationError) as info:
        S.load(path)
    msg = str(info.value)
    assert repr(str(path)) in msg, msg          # names the file
    for frag in fragments:                      # ... and the entry
        assert frag in msg, msg
    return msg


# -- declared shapes, dtypes and references ---------------------------------------------------
@pytest.mark.parametrize("shape,data", [
    ([2**32, 2**32], b""),          # int64 product wraps to 0
    ([-2, -2], bytes(16)),          # product 4: the byte count matched
    ([10**30], bytes(16)),          # OverflowError in np.prod
    ([1.5], bytes(4)),              # int(1.5) == 1: loaded as shape [1]
    ([True, 4], bytes(16)),         # a bool is not a size
    ([1] * 65, bytes(4)),           # more dimensions than NumPy has
    ("4", bytes(16)),
])
def test_bad_declared_shape(tmp_path, shape, data):
    path = _write_zip(tmp_path / "s.jf", _manifest({"$dict": [["w", {"$tensor": 0}]]},
                                                  [{"dtype": "float32", "shape": shape}]),
                      {"data/0": data})
    _expect_error(path, "tensor 0 (zip entry data/0, at obj['w'])", "shape")


@pytest.mark.parametrize("entry,fragment", [
    ({"dtype": "float128", "shape": [1]}, "unknown dtype 'float128'"),
    ({"dtype": ["float32"], "shape": [1]}, "unknown dtype"),
    ({"dtype": "float32", "shape": [4], "nbytes": 17}, "declares 17 bytes"),
    ({"dtype": "float32", "shape": [4], "nbytes": "16"}, "declares '16' bytes"),
    (["float32", [4]], "manifest entry is"),
])
def test_bad_tensor_entry(tmp_path, entry, fragment):
    path = _write_zip(tmp_path / "e.jf", _manifest({"$tensor": 0}, [entry]),
                      {"data/0": bytes(16)})
    _expect_error(path, "tensor 0 (zip entry data/0, at obj)", fragment)


def test_size_disagrees_with_the_zip_header(tmp_path):
    path = _write_zip(tmp_path / "n.jf", _manifest({"$tensor": 0}, [F32_4]),
                      {"data/0": bytes(12)})
    _expect_error(path, "data/0", "declares 16 bytes, but its zip header says 12")


@pytest.mark.parametrize("obj,fragment", [
    ({"$dtype": "float128"}, "unknown dtype 'float128'"),            # TypeError before
    ({"$dtype": None}, "unknown dtype None"),
    ({"$dict": [[{"$dict": []}, 1]]}, "dict key 0 is an unhashable dict"),   # TypeError
    ({"$dict": [[[1, 2], 1]]}, "dict key 0 is an unhashable list"),
    ({"$dict": [[{"$tuple": [[1]]}, 1]]}, "dict key 0 is an unhashable tuple"),
    ({"$dict": [[1]]}, "dict item 0"),
    ({"$dict": {"a": 1}}, "not a list"),
    ({"$tuple": "abc"}, "not a list"),                  # loaded as ('a', 'b', 'c') before
    ({"$tensor": True}, "reference to tensor True"),    # loaded tensor 1 before
    ({"$tensor": 5}, "reference to tensor 5"),
    ({"$ndarray": [0]}, "reference to tensor [0]"),     # unhashable list before
    ({"x": 1}, "unknown entry"),
    ([[[[{"$set": 1}]]]], "obj[0][0][0][0]"),
])
def test_bad_object_tree(tmp_path, obj, fragment):
    path = _write_zip(tmp_path / "o.jf", _manifest(obj, [F32_4, F32_4]),
                      {"data/0": bytes(16), "data/1": bytes(16)})
    _expect_error(path, "the object at obj", fragment)


@pytest.mark.parametrize("depth", [150, 100_000])
def test_deep_nesting(tmp_path, depth):
    text = b'{"format":"jflow.save","version":1,"tensors":[],"object":' + \
        b"[" * depth + b"]" * depth + b"}"
    path = _write_zip(tmp_path / "d.jf", text)
    _expect_error(path, "nested" if depth < 1000 else "the manifest (jflow.json)")


def test_save_refuses_what_load_would_refuse(tmp_path):
    obj: list[Any] = []
    for _ in range(200):
        obj = [obj]
    with pytest.raises(ValueError, match="nested more than 100 levels"):
        S.save(obj, tmp_path / "deep.jf")
    assert os.listdir(tmp_path) == []


def test_flags_on_an_integer_tensor(tmp_path):
    entry = {"dtype": "int32", "shape": [4], "parameter": True, "requires_grad": True}
    path = _write_zip(tmp_path / "i.jf", _manifest({"$tensor": 0}, [entry]),
                      {"data/0": bytes(16)})
    t = S.load(path)                              # RuntimeError before
    assert isinstance(t, flow.nn.Parameter) and not t.requires_grad


def test_bool_bytes_other_than_0_and_1(tmp_path):
    path = _write_zip(tmp_path / "b.jf", _manifest({"$tensor": 0},
                                                  [{"dtype": "bool", "shape": [2]}]),
                      {"data/0": b"\x01\x02"})
    _expect_error(path, "tensor 0", "bytes other than 0 and 1")


@pytest.mark.parametrize("version", [True, 0, -1, "1", 1.0])
def test_bad_version(tmp_path, version):
    m = _manifest(None, [])
    m["version"] = version
    with pytest.raises(S.SerializationError, match="format version"):
        S.load(_write_zip(tmp_path / "v.jf", m))


@pytest.mark.parametrize("manifest", [b"\xff\xfe{", b"[]", b"null", b'{"format": 1}'])
def test_bad_manifest(tmp_path, manifest):
    with pytest.raises(S.SerializationError, match="corrupted|not a file written"):
        S.load(_write_zip(tmp_path / "m.jf", manifest))


# -- the zip container ------------------------------------------------------------------------
def _small_checkpoint(path: Path) -> dict[str, Any]:
    obj = {"w": flow.arange(4).float(), "n": np.arange(3, dtype=np.int16), "k": [1, "x"]}
    S.save(obj, path)
    return obj


def _central_directory_start(data: bytes) -> int:
    eocd = data.rfind(b"PK\x05\x06")
    (offset,) = struct.unpack_from("<I", data, eocd + 16)
    return offset


def test_every_bit_flip_in_the_zip_directory(tmp_path):
    """Each single-bit flip in the central directory and end record: SerializationError or
    the original values (today: NotImplementedError, RuntimeError, ValueError ...)."""
    path = tmp_path / "c.jf"
    _small_checkpoint(path)
    data = path.read_bytes()
    start = _central_directory_start(data)
    expected = S.load(path)
    flipped = tmp_path / "f.jf"
    outcomes: dict[str, int] = {}
    for i in range(start, len(data)):
        for bit in range(8):
            mutated = bytearray(data)
            mutated[i] ^= 1 << bit
            flipped.write_bytes(bytes(mutated))
            try:
                out = S.load(flipped)
            except S.SerializationError as err:
                assert repr(str(flipped)) in str(err)
                outcomes["error"] = outcomes.get("error", 0) + 1
                continue
            assert out["k"] == expected["k"]
            np.testing.assert_array_equal(out["w"].numpy(), expected["w"].numpy())
            np.testing.assert_array_equal(out["n"], expected["n"])
            outcomes["same"] = outcomes.get("same", 0) + 1
    assert outcomes["error"] > 100


@pytest.mark.parametrize("method,fragment", [
    (zipfile.ZIP_BZIP2, "compression method 12"),
    (zipfile.ZIP_LZMA, "compression method 14"),
])
def test_compression_methods_we_do_not_read(tmp_path, method, fragment):
    path = _write_zip(tmp_path / "z.jf", _manifest({"$tensor": 0}, [F32_4]),
                      {"data/0": bytes(16)}, method=method)
    _expect_error(path, "the manifest (jflow.json)", fragment)


def test_deflated_entries_are_read(tmp_path):
    """A checkpoint re-zipped with compression still loads (within the checks)."""
    data = np.arange(4, dtype=np.float32).tobytes()
    path = _write_zip(tmp_path / "d.jf", _manifest({"$tensor": 0}, [F32_4]),
                      {"data/0": data}, method=zipfile.ZIP_DEFLATED)
    assert S.load(path).numpy().tolist() == [0, 1, 2, 3]


def test_encrypted_entry(tmp_path):
    path = _write_zip(tmp_path / "x.jf", _manifest({"$tensor": 0}, [F32_4]),
                      {"data/0": bytes(16)})
    data = bytearray(path.read_bytes())
    start = _central_directory_start(bytes(data))
    cd = data.find(b"PK\x01\x02", start + 1)               # data/0's directory entry
    data[cd + 8] |= 1                                      # the "encrypted" flag
    path.write_bytes(bytes(data))
    _expect_error(path, "data/0", "encrypted")              # RuntimeError before


# -- zip bombs --------------------------------------------------------------------------------
def _bomb(path: Path, inflated: int, header_size: int | None = None) -> Path:
    """A jflow file declaring float32[4] (16 bytes) whose data/0 deflates ``inflated`` zero
    bytes; ``header_size`` makes the zip headers lie about the inflated size too."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("jflow.json", json.dumps(_manifest({"$tensor": 0}, [F32_4])))
        info = zipfile.ZipInfo("data/0")
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w") as f:
            chunk = bytes(1 << 20)
            for _ in range(inflated >> 20):
                f.write(chunk)
    if header_size is not None:
        data = bytearray(path.read_bytes())
        local = data.find(b"PK\x03\x04", 1)
        struct.pack_into("<I", data, local + 22, header_size)
        cd = data.find(b"PK\x01\x02", local)
        cd = data.find(b"PK\x01\x02", cd + 1)
        struct.pack_into("<I", data, cd + 24, header_size)
        path.write_bytes(bytes(data))
    return path


def _peak_python_memory(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("header_size,fragment", [
    (None, "the manifest declares 16 bytes, but its zip header says 67108864"),
    (16, "cannot be read"),              # the headers lie too: reads 16 bytes, CRC fails
])
def test_zip_bomb_is_refused_before_inflating(tmp_path, header_size, fragment):
    path = _bomb(tmp_path / "bomb.jf", 64 << 20, header_size)
    assert path.stat().st_size < 200_000

    def load():
        _expect_error(path, "tensor 0 (zip entry data/0", fragment)

    assert _peak_python_memory(load) < 4 << 20    # was > 64 MiB: the whole inflated entry


def test_impossible_deflate_ratio_is_refused_before_inflating(tmp_path):
    """Manifest and zip header agree on 1 GiB, but 2 bytes of deflate data cannot hold it."""
    n = 1 << 28
    entry = {"dtype": "float32", "shape": [n], "nbytes": 4 * n}
    path = tmp_path / "r.jf"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("jflow.json", json.dumps(_manifest({"$tensor": 0}, [entry])))
        info = zipfile.ZipInfo("data/0")
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, b"")
    data = bytearray(path.read_bytes())
    cd = data.find(b"PK\x01\x02", data.find(b"PK\x01\x02") + 1)
    struct.pack_into("<I", data, cd + 24, 4 * n)         # uncompressed size: 1 GiB
    path.write_bytes(bytes(data))
    _expect_error(path, "data/0", "more than deflate can")


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is in KiB on Linux")
def test_rss_of_a_bomb_in_a_subprocess(tmp_path):
    """The same bound measured as the OS sees it (peak RSS), for a 256 MiB bomb."""
    path = _bomb(tmp_path / "big.jf", 256 << 20)
    code = textwrap.dedent(f"""
        import resource, jflow
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            jflow.load({str(path)!r})
        except jflow.serialization.SerializationError:
            pass
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print((after - before) // 1024)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert int(out.stdout.strip().splitlines()[-1]) < 32   # MiB; was ~512 (2x the bomb)


# -- temporaries of crashed saves ---------------------------------------------------------------
def test_a_crashed_save_is_cleaned_up_by_the_next(tmp_path):
    path = tmp_path / "model.jf"
    code = textwrap.dedent(f"""
        import os, jflow
        from jflow.serialization import _zipformat as Z
        real = Z._write_array
        def crash(zf, name, a):
            real(zf, name, a)
            os._exit(3)                      # killed mid-save: no cleanup runs
        Z._write_array = crash
        jflow.save({{"w": jflow.zeros(100_000)}}, {str(path)!r})
    """)
    proc = subprocess.run([sys.executable, "-c", code], timeout=120)
    assert proc.returncode == 3
    left = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert len(left) == 1 and left[0].startswith(".model.jf.")
    assert (tmp_path / left[0]).stat().st_size > 400_000
    S.save({"w": flow.ones(2)}, path)
    assert os.listdir(tmp_path) == ["model.jf"]
    assert S.load(path)["w"].numpy().tolist() == [1, 1]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.skipif(os.name != "posix", reason="writer pids are probed on POSIX only")
def test_which_temporaries_are_stale(tmp_path):
    now = time.time()
    live, dead, host = os.getpid(), _dead_pid(), _atomic.HOST_TAG
    names = {
        f".m.jf.{host}-{dead}.abcdefgh.tmp": True,          # its writer is gone
        f".m.jf.{host}-{live}.abcdefgh.tmp": False,         # being written right now
        f".m.jf.0badf00d-{dead}.abcdefgh.tmp": False,       # another host: pid means nothing
        ".m.jf.abcdefgh.tmp": False,                        # an older jflow's, still fresh
        f".other.jf.{host}-{dead}.abcdefgh.tmp": False,     # another target's
        f".m.jf.x.{host}-{dead}.abcdefgh.tmp": False,       # target "m.jf.x"'s
        f"m.jf.{host}-{dead}.abcdefgh.tmp": False,          # not hidden: not ours
        f".m.jf.{host}-{dead}.abcdefgh.tmp.bak": False,
    }
    for n in names:
        (tmp_path / n).write_bytes(b"x")
    os.mkdir(tmp_path / f".m.jf.{host}-{dead}.zzzzzzzz.tmp")  # not a regular file
    removed = _atomic.remove_stale_temps(str(tmp_path), "m.jf", now)
    assert sorted(os.path.basename(p) for p in removed) == [n for n, s in names.items() if s]
    # after STALE_TEMP_SECONDS without a write, any of ours is abandoned, live pid or not
    later = now + _atomic.STALE_TEMP_SECONDS + 1
    removed = _atomic.remove_stale_temps(str(tmp_path), "m.jf", later)
    assert sorted(os.path.basename(p) for p in removed) == sorted([
        f".m.jf.{host}-{live}.abcdefgh.tmp", f".m.jf.0badf00d-{dead}.abcdefgh.tmp",
        ".m.jf.abcdefgh.tmp"])


def test_save_names_its_temporary_with_host_and_pid(tmp_path, monkeypatch):
    seen = []
    real = _atomic.os.replace

    def spy(src, dst):
        seen.append(os.path.basename(src))
        real(src, dst)

    monkeypatch.setattr(_atomic.os, "replace", spy)
    S.save(flow.ones(1), tmp_path / "a.jf")
    assert _atomic._temp_pattern("a.jf").fullmatch(seen[0])
    assert f".a.jf.{_atomic.HOST_TAG}-{os.getpid()}." in seen[0]


# -- PyTorch's format (a pickle): what weights_only=True refuses --------------------------------
from collections import OrderedDict  # noqa: E402

from jflow.serialization import _torchformat  # noqa: E402


class _Pid:
    """A storage record written as its persistent id, with any values."""

    def __init__(self, key: str = "0", numel: int = 4, stype: str = "FloatStorage") -> None:
        self.key, self.numel, self.stype = key, numel, stype


class _Call:
    """Pickles as ``module.name(*args)`` (with ``state``: then a BUILD of it)."""

    def __init__(self, module: str, name: str, *args: Any, state: Any = None) -> None:
        self.module, self.name, self.args, self.state = module, name, args, state


class _Craft(_torchformat._Pickler):
    """jflow's PyTorch-format pickler, able to write any global, call and storage record."""

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is _Pid:
            return ("storage", self.g("torch", obj.stype), obj.key, "cpu", obj.numel)
        return super().persistent_id(obj)

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is _Call:
            rv = (self.g(obj.module, obj.name), obj.args)
            return rv if obj.state is None else (*rv, obj.state)
        return super().reducer_override(obj)


def _torch_file(path: Path, obj: Any = None, storages: dict[str, bytes] | None = None,
                pkl: bytes | None = None, byteorder: str = "little") -> Path:
    """A torch.save-layout zip holding ``obj`` pickled by :class:`_Craft` (or ``pkl``)."""
    if pkl is None:
        buf = io.BytesIO()
        _Craft(buf, 2).dump(obj)
        pkl = buf.getvalue()
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", pkl)
        zf.writestr("archive/byteorder", byteorder)
        for key, data in (storages or {}).items():
            zf.writestr(f"archive/data/{key}", data)
        zf.writestr("archive/version", "3\n")
    return path


def _tensor(pid: _Pid, offset: int = 0, size: tuple = (4,), stride: tuple = (1,)) -> _Call:
    return _Call("torch._utils", "_rebuild_tensor_v2", pid, offset, size, stride, False,
                 OrderedDict())


class _Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_torch_reduce_calling_os_system_is_refused(tmp_path):
    marker = tmp_path / "ran"
    path = _torch_file(tmp_path / "evil.pt", {"w": _tensor(_Pid()), "x": _Evil(marker)},
                       {"0": bytes(16)})
    _expect_error(path, f"{os.system.__module__}.system", "weights_only=True")
    with pytest.raises(S.SerializationError):
        S.load(path, weights_only=True)
    assert not marker.exists()


@pytest.mark.parametrize("obj,fragment", [
    (_Call("datetime", "date", 2020, 1, 1), "the global datetime.date"),      # unknown global
    (_Call("torch", "Tensor", 10**9), "calling"),                            # allowed type, no call
    (_Call("builtins", "bytearray", 10**12), "bytearray"),                   # no size to allocate
    (_Call("_codecs", "encode", "x", "rot13"), "_codecs.encode"),
    (_Call("torch", "Size", (2,), state={"x": 1}), "setting the state of a Size"),
    (_Call("collections", "OrderedDict", state={1: 2}), "OrderedDict state"),
    (_Call("torch", "device", "cpu" * 100), "torch.device"),
    (_Call("torch.nn.modules.linear", "Linear", 2, 2), "torch.nn.modules.linear.Linear"),
    (_Call("torch._utils", "_rebuild_tensor_v2", "not a storage", 0, (1,), (1,), False,
           None), "not a storage"),
    (_Call("torch._utils", "_rebuild_parameter", 1, True, None), "a Parameter of 1"),
])
def test_torch_globals_and_calls_weights_only_refuses(tmp_path, obj, fragment):
    _expect_error(_torch_file(tmp_path / "x.pt", {"x": obj}), fragment)


def test_torch_names_import_nothing_under_weights_only(tmp_path, monkeypatch):
    def importing(*args: Any) -> None:
        pytest.fail(f"weights_only=True looked up {args} by importing")

    monkeypatch.setattr(_torchformat, "_jflow_equivalent", importing)
    path = _torch_file(tmp_path / "x.pt", {"x": _Call("torch.mock_torch._gen_torch_names", "x")})
    _expect_error(path, "the global torch.mock_torch._gen_torch_names.x")
    with S.safe_globals([flow.nn.Linear]):
        path = _torch_file(tmp_path / "l.pt", {"x": _Call("torch.nn.modules.linear", "Linear",
                                                            2, 1)})
        assert isinstance(S.load(path)["x"], flow.nn.Linear)


@pytest.mark.parametrize("pkl,fragment", [
    (b"\x80\x02ctorch\nfloat32\n}X\x04\x00\x00\x00nameX\x01\x00\x00\x00xsb.",
     "setting the state of a dtype"),                                  # BUILD on a shared dtype
    (b"(itorch\nSize\n.", "instance or extension-registry"),           # protocol 0 INST
    (b"\x80\x02\x82\x01.", "instance or extension-registry"),          # EXT1
    (b"\x80\x02X\x01\x00\x00\x00xQ.", "persistent id 'x'"),            # not a storage record
    (b"\x80\x02(l" + b"(" * 10 + b".", "cannot be unpickled"),         # garbage
])
def test_torch_opcodes_weights_only_refuses(tmp_path, pkl, fragment):
    _expect_error(_torch_file(tmp_path / "x.pt", pkl=pkl), fragment)
    assert flow.float32.name == "float32"


@pytest.mark.parametrize("obj,fragment", [
    (_tensor(_Pid(numel=10**12)), "declares 1000000000000 elements"),  # far beyond the file
    (_tensor(_Pid(numel=-1)), "bad storage record"),
    (_tensor(_Pid(key="9")), "zip entry archive/data/9 is missing"),
    (_tensor(_Pid(stype="QInt8Storage")), "torch.QInt8Storage"),
    (_tensor(_Pid(), size=(5,)), "reaches past its 4 elements"),
    (_tensor(_Pid(), offset=3, size=(2, 2), stride=(1, 1)), "reaches past"),
    (_tensor(_Pid(), size=(2, -2), stride=(1, 1)), "non-negative ints"),
    (_tensor(_Pid(), size=(2,), stride=(1, 1)), "bad view"),
    (_tensor(_Pid(), size=[4]), "is not a tuple"),
    (_Call("torch._utils", "_rebuild_tensor_v3", _Pid(stype="UntypedStorage", numel=16), 0,
           (4,), (1,), False, OrderedDict(), "float32"), "untyped storage"),
])
def test_torch_bad_storages_and_views(tmp_path, obj, fragment):
    path = _torch_file(tmp_path / "x.pt", {"w": obj}, {"0": bytes(16)})
    peak = _peak_python_memory(lambda: _expect_error(path, fragment))
    assert peak < 4 << 20                       # refused before anything was allocated


def test_torch_untyped_storages_with_v3_dtypes(tmp_path):
    data = np.array([1.5, -2, 0, 4], np.float32).tobytes()
    v3 = _Call("torch._utils", "_rebuild_tensor_v3", _Pid(stype="UntypedStorage", numel=16), 1,
               (2,), (2,), False, OrderedDict(), flow.float32)
    path = _torch_file(tmp_path / "v3.pt", {"w": v3}, {"0": data})
    assert S.load(path)["w"].numpy().tolist() == [-2, 4]   # offset and stride in float32s


def test_torch_views_materializing_too_much_are_refused(tmp_path, monkeypatch):
    expand = _tensor(_Pid(numel=1), size=(3, 2), stride=(0, 0))
    ok = _torch_file(tmp_path / "ok.pt", {"w": expand}, {"0": bytes(4)})
    assert S.load(ok)["w"].numpy().tolist() == [[0, 0]] * 3          # an expand loads
    monkeypatch.setattr(_torchformat, "MAX_EXPANSION_BYTES", 1 << 10)
    path = _torch_file(tmp_path / "x.pt", {"w": _tensor(_Pid(numel=1), size=(10**6,), stride=(0,))},
                       {"0": bytes(4)})
    _expect_error(path, "materialize more than")


def test_torch_bool_bytes_and_byteorder(tmp_path):
    two = _tensor(_Pid(stype="BoolStorage", numel=2), size=(2,))
    b = _torch_file(tmp_path / "b.pt", {"w": two}, {"0": b"\x01\x02"})
    _expect_error(b, "bytes other than 0 and 1")
    _expect_error(_torch_file(tmp_path / "o.pt", {"w": 1}, byteorder="middle"),
                  "byte order 'middle'")


def test_truncated_torch_files(tmp_path):
    path = tmp_path / "t.pt"
    flow.save({"w": flow.randn(64), "b": flow.arange(10)}, path)
    data = path.read_bytes()
    for cut in (len(data) - 10, len(data) - 200, len(data) // 2, 100, 10):
        path.write_bytes(data[:cut])
        with pytest.raises(S.SerializationError):
            S.load(path)


def test_raw_pickle_is_refused_without_unpickling(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "raw.pt"
    path.write_bytes(pickle.dumps({"x": _Evil(marker)}, protocol=2))
    for wo in (True, False):
        _expect_error(path, "raw pickle")
        with pytest.raises(S.SerializationError, match="weights_only=False does not change"):
            S.load(path, weights_only=wo)
    assert not marker.exists()
