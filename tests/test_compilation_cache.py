"""JAX's persistent compilation cache as jflow configures it (jflow/compilation_cache.py): on
at import in the directory ``JFLOW_COMPILATION_CACHE`` names, a second process reads back
what the first compiled, off by the variable or ``flow.config``, and the user's own JAX
setting left alone. Each environment case needs a fresh process (the cache is set at
import)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

import jflow as flow
from jflow import compilation_cache

# runs an op chain, reports JAX's cache hits (public monitoring events) and the settings
_PROBE = r"""
import json, jax
hits = []
jax.monitoring.register_event_listener(
    lambda e, **kw: hits.append(e) if e == "/jax/compilation_cache/cache_hits" else None)
import jflow as flow
x = flow.arange(12, dtype=flow.float32).reshape(3, 4)
y = ((x * 2.5).sin() + x.T.sum(1)).numpy().tolist()
print(json.dumps({"dir": jax.config.jax_compilation_cache_dir, "hits": len(hits), "y": y,
                  "min_s": jax.config.jax_persistent_cache_min_compile_time_secs,
                  "max": jax.config.jax_compilation_cache_max_size}))
"""


def _probe(tmp_path, **env: str) -> dict:
    full = {k: v for k, v in os.environ.items()
            if k not in ("JFLOW_COMPILATION_CACHE", "JAX_COMPILATION_CACHE_DIR")}
    full.update(env, XDG_CACHE_HOME=str(tmp_path / "xdg"))
    r = subprocess.run([sys.executable, "-c", _PROBE], env=full, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_second_process_reads_back_what_the_first_compiled(tmp_path) -> None:
    """The first process sets no variable: the per-user directory under XDG_CACHE_HOME; the
    second names that directory with ``JFLOW_COMPILATION_CACHE`` and reads back what the
    first wrote (one probe fewer than a default-directory case of its own)."""
    first = _probe(tmp_path, JFLOW_COMPILATION_CACHE_MAX_MB="64")
    cache = tmp_path / "xdg" / "jflow" / "xla"
    assert first["dir"] == str(cache) and first["hits"] == 0
    assert first["min_s"] == 0.0 and first["max"] == -1  # JAX's own eviction stays off
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700  # JAX runs what it loads from there
    entries = os.listdir(cache)
    assert entries, "nothing was written to the cache"
    second = _probe(tmp_path, JFLOW_COMPILATION_CACHE=str(cache))
    assert second["dir"] == str(cache)
    assert second["hits"] >= len([e for e in entries if e.endswith("-cache")]) > 0
    assert second["y"] == first["y"]


def test_off_switch_and_the_users_jax_setting(tmp_path) -> None:
    assert _probe(tmp_path, JFLOW_COMPILATION_CACHE="0")["dir"] is None
    mine = tmp_path / "mine"
    users = _probe(tmp_path, JAX_COMPILATION_CACHE_DIR=str(mine))
    assert users["dir"] == str(mine) and users["min_s"] == 1.0  # JAX's defaults, untouched


def test_malformed_size_names_the_variable(tmp_path) -> None:
    env = dict(os.environ, JFLOW_COMPILATION_CACHE=str(tmp_path / "c"),
               JFLOW_COMPILATION_CACHE_MAX_MB="lots")
    r = subprocess.run([sys.executable, "-c", "import jflow"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode != 0
    assert "JFLOW_COMPILATION_CACHE_MAX_MB must be a whole number of MiB, got 'lots'" in r.stderr


def test_set_compilation_cache_moves_disables_and_restores(tmp_path) -> None:
    old = flow.config.compilation_cache_dir()
    target = tmp_path / "moved"
    try:
        assert flow.config.set_compilation_cache(target, max_mb=8) == old
        assert flow.config.compilation_cache_dir() == str(target)
        flow.tensor([1.0, 2.0]).exp().numpy()  # compiles (or hits) through the moved cache
        assert flow.config.set_compilation_cache(None) == str(target)
        assert flow.config.compilation_cache_dir() is None
    finally:
        flow.config.set_compilation_cache(old)
    assert flow.config.compilation_cache_dir() == old


def test_set_compilation_cache_bad_arguments() -> None:
    with pytest.raises(TypeError, match=r"set_compilation_cache: path must be a directory "
                                        r"path or None, got int"):
        flow.config.set_compilation_cache(3)
    with pytest.raises(ValueError, match=r"set_compilation_cache: max_mb must be a positive "
                                         r"int, got 0"):
        flow.config.set_compilation_cache("/tmp/x", max_mb=0)


def test_default_dir_follows_xdg(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compilation_cache.default_dir() == str(tmp_path / "jflow" / "xla")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert compilation_cache.default_dir() == os.path.expanduser("~/.cache/jflow/xla")


def test_prune_removes_the_oldest_entries_beyond_the_bound(tmp_path) -> None:
    for i in range(10):  # ten 1000-byte entries, entry 0 the oldest
        f = tmp_path / f"jit_f-{i:02d}-cache"
        f.write_bytes(b"x" * 1000)
        os.utime(f, (1_000_000 + i, 1_000_000 + i))
    (tmp_path / "not-an-entry.txt").write_bytes(b"y" * 5000)
    assert compilation_cache.prune(str(tmp_path), 20_000) == 0  # fits: nothing removed
    assert compilation_cache.prune(str(tmp_path), 5_000) == 6  # down to 80% of the bound
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["jit_f-06-cache", "jit_f-07-cache", "jit_f-08-cache", "jit_f-09-cache",
                    "not-an-entry.txt"]
    assert compilation_cache.prune(str(tmp_path / "missing"), 1) == 0
