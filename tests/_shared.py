"""Work done once per pytest run, shared by pytest-xdist's workers.

A module-scoped fixture runs once per *worker*: with ``-n 2`` the tests of one module are
dealt out to both workers, so both would build the same C++ libraries or run the same
reference subprocesses. ``shared_dir`` gives every worker of the run the same directory,
held under an exclusive lock while the block runs: the first worker does the work there and
the others find it done (a C++ build is found in ``cpp_extension``'s build cache, a result
file by the marker the block checks).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

try:
    import fcntl
except ImportError:  # not POSIX: each worker works in its own directory
    fcntl = None  # type: ignore[assignment]


def _run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's directory, above each worker's own
    return root


@contextlib.contextmanager
def run_lock(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[None]:
    """An exclusive lock named ``name``, the same for every worker of the run, held for the
    block's duration (nothing without ``fcntl``: each worker then works on its own)."""
    if fcntl is None:
        yield
        return
    with open(_run_root(tmp_path_factory) / f"shared_{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


@contextlib.contextmanager
def shared_dir(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Path]:
    """``<run's temporary directory>/shared_<name>``, locked for the block's duration."""
    if fcntl is None:
        yield tmp_path_factory.mktemp(name)
        return
    d = _run_root(tmp_path_factory) / f"shared_{name}"
    with run_lock(tmp_path_factory, name):
        d.mkdir(exist_ok=True)
        yield d


def worker_order(items: list) -> list:
    """``items`` in this worker's order: reversed on every other pytest-xdist worker, so that
    two workers doing the same list of locked jobs (:func:`run_lock`) start at its two ends
    and each does about half, instead of one waiting while the other does all."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    odd = worker[2:].isdigit() and int(worker[2:]) % 2 == 1
    return items[::-1] if odd else list(items)


def build_once(tmp_path_factory: pytest.TempPathFactory, name: str, source: str) -> str:
    """The path of C++ library ``name`` built from ``source`` (one file, ``-O0``) once per
    run in a shared directory (``cpp_extension``'s build cache finds it for later workers)."""
    from jflow.utils import cpp_extension  # (a test helper: jflow only when a test needs it)

    with shared_dir(tmp_path_factory, name) as d:
        src = d / f"{name}.cpp"
        write_if_changed(src, source)
        return cpp_extension.build(name, [str(src)], extra_cflags=["-O0"],
                                   build_directory=str(d))


def write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` unless the file already holds it (another worker wrote it)."""
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
