"""JAX's persistent compilation cache, on by default: compiled executables kept on disk so a
second run of the same script does not compile again.

Start-up is what a user of an eager library notices first: every op, lazy segment and
compiled step jflow runs is an XLA executable, and each new one costs 20–40 ms (seconds for a
whole training step). PyTorch starts in a fraction of a second because it has nothing to
compile. JAX can keep executables on disk (its *persistent compilation cache*); JAX leaves it
off, and when on, caches only compiles slower than a second. jflow turns it on at import, in a
per-user directory, for every compile (an eager op's 30 ms is the start-up cost too):

- **where**: ``$JFLOW_COMPILATION_CACHE`` if set (a directory), else
  ``$XDG_CACHE_HOME/jflow/xla`` (``~/.cache/jflow/xla``), created private to the user (mode
  0700: JAX runs what it loads from there — never point it at a directory others can write);
- **off**: ``JFLOW_COMPILATION_CACHE=0`` (or ``off``/``false``/``no``/empty) before import, or
  ``flow.config.set_compilation_cache(None)``;
- **bounded**: ``JFLOW_COMPILATION_CACHE_MAX_MB`` (default 1024). When a process sets the
  cache up, a background thread removes the least recently written entries beyond that size
  (down to 80% of it). JAX's own size limit is left off: with it, JAX rescans the whole
  directory (and takes a lock shared by every process) on each compile, which made a run of
  thousands of compiles quadratic — 3x slower on the test suite;
- **the user's JAX setting wins**: when ``jax_compilation_cache_dir`` is already set (by
  ``jax.config.update`` or JAX's own environment variable) jflow leaves the cache alone.

Cost: a compile that misses writes its executable (kilobytes to a few MB) and hashes the
program for the key (well under a millisecond for an op); a hit reads it back instead of
compiling (a few ms against 20–40 ms for an op, seconds for a step). Executables with host
callbacks (NumPy/Python kernels) are never cached by JAX. Results never change: a cached
executable is the same program (the key covers the program, the compile options, the devices
and the jax/jaxlib versions).

Only JAX's public configuration is used (``jax_compilation_cache_dir`` and friends, and
``jax.experimental.compilation_cache.compilation_cache.reset_cache`` so that a change of
directory takes effect for the next compile).
"""

from __future__ import annotations

import os
import threading
import warnings

import jax
from jax.experimental.compilation_cache import compilation_cache as _jax_cache

__all__ = ["set_compilation_cache", "compilation_cache_dir", "default_dir", "configure_from_env",
           "prune"]

ENV_DIR = "JFLOW_COMPILATION_CACHE"
ENV_MAX_MB = "JFLOW_COMPILATION_CACHE_MAX_MB"
DEFAULT_MAX_MB = 1024
_OFF = ("", "0", "off", "false", "no")


def default_dir() -> str:
    """The per-user directory used when ``JFLOW_COMPILATION_CACHE`` names none."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jflow", "xla")


def _max_bytes(max_mb: int | None) -> int:
    if max_mb is None:
        raw = os.environ.get(ENV_MAX_MB, str(DEFAULT_MAX_MB))
        try:
            max_mb = int(raw)
        except ValueError:
            raise ValueError(f"{ENV_MAX_MB} must be a whole number of MiB, got {raw!r}") from None
    if isinstance(max_mb, bool) or not isinstance(max_mb, int) or max_mb < 1:
        raise ValueError(f"flow.config.set_compilation_cache: max_mb must be a positive int, "
                         f"got {max_mb!r}")
    return max_mb * 2**20


def set_compilation_cache(path: str | os.PathLike[str] | None, *,
                          max_mb: int | None = None) -> str | None:
    """Keep compiled executables in ``path`` (created, private to the user) from the next
    compile on, at most ``max_mb`` MiB (default ``JFLOW_COMPILATION_CACHE_MAX_MB`` or 1024);
    ``None`` turns the cache off. Returns the previous directory (None when off)."""
    old = compilation_cache_dir()
    if path is None:
        jax.config.update("jax_compilation_cache_dir", None)
    else:
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"flow.config.set_compilation_cache: path must be a directory path "
                            f"or None, got {type(path).__name__}")
        path = os.fspath(path)
        limit = _max_bytes(max_mb)
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError as e:
            raise OSError(f"flow.config.set_compilation_cache: cannot create the cache "
                          f"directory {path!r}: {e.strerror}") from e
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        threading.Thread(target=prune, args=(path, limit), name="jflow-cache-prune",
                         daemon=True).start()
    _jax_cache.reset_cache()  # JAX opens its cache once: make the change take effect
    return old


def prune(path: str, max_bytes: int) -> int:
    """Remove the least recently written executables in ``path`` until its entries take at
    most 80% of ``max_bytes`` (nothing when they fit); returns how many were removed. One
    scan of the directory; an entry another process removes or reads meanwhile is only a
    cache miss for it."""
    entries = []
    total = 0
    try:
        with os.scandir(path) as it:
            for e in it:
                if e.name.endswith("-cache") and e.is_file(follow_symlinks=False):
                    st = e.stat(follow_symlinks=False)
                    entries.append((st.st_mtime, e.path, st.st_size))
                    total += st.st_size
    except OSError:
        return 0
    if total <= max_bytes:
        return 0
    removed = 0
    for _, p, size in sorted(entries):
        if total <= 0.8 * max_bytes:
            break
        try:
            os.remove(p)
        except OSError:
            continue
        total -= size
        removed += 1
    return removed


def compilation_cache_dir() -> str | None:
    """The directory executables are cached in, or None when the cache is off."""
    return jax.config.jax_compilation_cache_dir


def configure_from_env() -> None:
    """At import: the cache per ``JFLOW_COMPILATION_CACHE`` (see the module docstring), unless
    the user configured JAX's cache already. A directory that cannot be created leaves the
    cache off with a warning (importing jflow never fails for want of a cache directory); a
    malformed ``JFLOW_COMPILATION_CACHE_MAX_MB`` raises, naming the variable."""
    if compilation_cache_dir() is not None:
        return
    raw = os.environ.get(ENV_DIR)
    if raw is not None and raw.strip().lower() in _OFF:
        return
    try:
        set_compilation_cache(raw or default_dir())
    except OSError as e:
        jax.config.update("jax_compilation_cache_dir", None)
        warnings.warn(f"jflow: compilation cache off: {e} (set {ENV_DIR}=0 to silence this)",
                      RuntimeWarning, stacklevel=2)
