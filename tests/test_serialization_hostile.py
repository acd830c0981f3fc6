"""flow.load on hostile jflow files: every one is a SerializationError naming the file and the
entry, no other exception leaks, a zip bomb is refused before it inflates, and a crashed
save's temporary is cleaned up by the next save."""

from __future__ import annotations

import json
import os
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
