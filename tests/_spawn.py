"""Run a multi-process test: start one worker process per rank, wait for all (stopping the
rest when one fails: the others would block in a collective), and fail with every worker's
output unless each exited 0 and printed ``WORKER-OK <rank>``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def gloo_available() -> bool:
    from jax._src.lib import _jax  # no public query for the gloo CPU collectives
    return hasattr(_jax, "make_gloo_tcp_collectives")


needs_gloo = pytest.mark.skipif(
    not gloo_available(), reason="this jaxlib has no gloo CPU collectives "
    "(jax._src.lib._jax.make_gloo_tcp_collectives), so CPU devices of different processes "
    "cannot communicate")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_workers(argvs: list[list[str]], envs: list[dict[str, str]], tmp_path: Path,
                timeout_s: float = 120) -> None:
    """Run ``python <argv>`` per rank with ``envs[rank]`` added to this environment (the
    repository on PYTHONPATH, XLA_FLAGS dropped: each worker sets its own device count)."""
    base = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    base.pop("XLA_FLAGS", None)
    logs = [(tmp_path / f"out{i}.txt", tmp_path / f"err{i}.txt") for i in range(len(argvs))]
    procs = []
    for argv, env, (out, err) in zip(argvs, envs, logs):  # files, not pipes: nothing blocks
        with open(out, "w") as fo, open(err, "w") as fe:
            procs.append(subprocess.Popen([sys.executable, *argv], stdout=fo, stderr=fe,
                                          env=dict(base, **env), cwd=str(ROOT)))
    deadline = time.monotonic() + timeout_s
    try:
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            if any(p.poll() not in (None, 0) for p in procs):
                break
            time.sleep(0.2)
    finally:
        timed_out = time.monotonic() >= deadline and any(p.poll() is None for p in procs)
        for p in procs:
            if p.poll() is None:
                p.kill()
        for p in procs:
            p.wait()
    outs = [(out.read_text(), err.read_text()) for out, err in logs]
    report = "\n".join(f"--- worker {i} (rc {p.returncode}) stdout:\n{o[-3000:]}\n"
                       f"--- worker {i} stderr:\n{e[-6000:]}"
                       for i, (p, (o, e)) in enumerate(zip(procs, outs)))
    assert not timed_out, f"workers did not finish within {timeout_s} s\n{report}"
    failed = [i for i, (p, (out, _)) in enumerate(zip(procs, outs))
              if p.returncode != 0 or f"WORKER-OK {i}" not in out]
    assert not failed, (f"workers {failed} failed (return codes "
                        f"{[p.returncode for p in procs]}; -9: stopped after another failed)"
                        f"\n{report}")
