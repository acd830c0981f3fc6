"""Multi-process global tensors: two processes on localhost, 4 CPU devices each, joined by
``flow.env.init_distributed`` (``jax.distributed`` + gloo CPU collectives), run global matmuls
on a placement of all 8 devices (tests/_distributed_worker.py) and check the logical values
against NumPy on both. The pytest process itself never initialises ``jax.distributed``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import jflow as flow
import jflow.env  # noqa: F401  (flow.env, until jflow/__init__.py imports it)

HERE = Path(__file__).resolve().parent
WORKER = HERE / "_distributed_worker.py"
NPROC = 2
TIMEOUT_S = 120


def _gloo_available() -> bool:
    from jax._src.lib import _jax
    return hasattr(_jax, "make_gloo_tcp_collectives")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(not _gloo_available(),
                    reason="this jaxlib has no gloo CPU collectives "
                           "(jax._src.lib._jax.make_gloo_tcp_collectives), so CPU devices of "
                           "different processes cannot communicate")
def test_two_processes_global_matmul(tmp_path: Path) -> None:
    port = _free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(HERE.parent), *filter(None, [os.environ.get("PYTHONPATH")])]))
    env.pop("XLA_FLAGS", None)
    logs = [(tmp_path / f"out{i}.txt", tmp_path / f"err{i}.txt") for i in range(NPROC)]
    procs = []
    for i, (out, err) in enumerate(logs):  # files, not pipes: nothing blocks on a full pipe
        with open(out, "w") as fo, open(err, "w") as fe:
            procs.append(subprocess.Popen(
                [sys.executable, str(WORKER), str(port), str(NPROC), str(i)],
                stdout=fo, stderr=fe, env=env, cwd=str(HERE.parent)))
    deadline = time.monotonic() + TIMEOUT_S
    try:
        # a worker that dies leaves the others blocked in a collective: stop them all then
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
    assert not timed_out, f"workers did not finish within {TIMEOUT_S} s\n{report}"
    failed = [i for i, (p, (out, _)) in enumerate(zip(procs, outs))
              if p.returncode != 0 or f"WORKER-OK {i}" not in out]
    assert not failed, (f"workers {failed} failed (return codes "
                        f"{[p.returncode for p in procs]}; -9: stopped after another failed)"
                        f"\n{report}")


def test_init_after_backend_started_says_what_to_do() -> None:
    flow.zeros(1)  # this (pytest) process's backend is running now
    with pytest.raises(RuntimeError, match="before JAX starts its backend"):
        flow.env.init_distributed("127.0.0.1:1", num_processes=1, process_id=0)


def test_single_process_defaults() -> None:
    import jax
    assert not flow.env.is_distributed()
    assert (flow.env.get_rank(), flow.env.get_world_size(), flow.env.get_local_rank()) == (0, 1, 0)
    n = flow.env.device_count()
    assert n == len(jax.devices("cpu")) and flow.env.local_ranks() == list(range(n))
    assert [d.id for d in flow.env.devices_by_rank()] == list(range(n))  # rank == device id
