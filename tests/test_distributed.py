"""Multi-process global tensors: two processes on localhost, 4 CPU devices each, joined by
``flow.env.init_distributed`` (``jax.distributed`` + gloo CPU collectives), run global matmuls
on a placement of all 8 devices (tests/_distributed_worker.py) and check the logical values
against NumPy on both. The pytest process itself never initialises ``jax.distributed``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _spawn import free_port, needs_gloo, run_workers

import jflow as flow
import jflow.env  # noqa: F401  (flow.env, until jflow/__init__.py imports it)

HERE = Path(__file__).resolve().parent
WORKER = HERE / "_distributed_worker.py"
NPROC = 2
TIMEOUT_S = 120


@needs_gloo
def test_two_processes_global_matmul(tmp_path: Path) -> None:
    port = free_port()
    run_workers([[str(WORKER), str(port), str(NPROC), str(i)] for i in range(NPROC)],
                [{}] * NPROC, tmp_path, TIMEOUT_S)


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
