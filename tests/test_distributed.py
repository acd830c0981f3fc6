"""Multi-process global tensors: two processes on localhost, 4 CPU devices each, joined by
``flow.env.init_distributed`` (``jax.distributed`` + gloo CPU collectives), run global matmuls
on a placement of all 8 devices (tests/_distributed_worker.py) and check the logical values
against NumPy on both. The pytest process itself never initialises ``jax.distributed``.

The same two processes then write a sharded checkpoint (8 ranks, S(0)): each writes only its
own shards to its own file and both load it back resharded (tests/_sharded_ckpt_worker.py's
checks); then this single process loads it on 4 devices as B, as S(1) and as local tensors,
compared with the NumPy values. (One pair of processes for both: each start costs an import of
JAX and jflow and a gloo connection.)
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from _sharded_ckpt_worker import reference
from _spawn import free_port, needs_gloo, run_workers

import jflow as flow
import jflow.env  # noqa: F401  (flow.env, until jflow/__init__.py imports it)

HERE = Path(__file__).resolve().parent
WORKER = HERE / "_distributed_worker.py"
NPROC = 2
TIMEOUT_S = 120


@needs_gloo
def test_two_processes_global_matmul_and_a_sharded_checkpoint(tmp_path: Path) -> None:
    d = tmp_path / "ckpt"
    port = free_port()
    run_workers([[str(WORKER), str(port), str(NPROC), str(i), str(d)] for i in range(NPROC)],
                [{}] * NPROC, tmp_path, TIMEOUT_S)
    # the checkpoint the two processes wrote, loaded by this one process in other layouts
    files = sorted(os.listdir(d))
    assert files[0] == "manifest.json" and len(files) == 1 + NPROC
    ref = reference()
    p4 = flow.placement("cpu", [0, 1, 2, 3])
    S, B = flow.sbp.split, flow.sbp.broadcast
    for sbp in (B, S(1)):
        out = flow.load(d, placement=p4, sbp={"w": sbp, "idx": sbp})  # b: saved B
        assert out["step"] == 5 and out["w"]._global == (p4, (sbp,))
        for k in ("w", "b", "idx"):
            np.testing.assert_array_equal(out[k].numpy(), ref[k])
    local = flow.load(d, map_location="cpu")
    for k in ("w", "b", "idx"):
        assert local[k]._global is None
        np.testing.assert_array_equal(local[k].numpy(), ref[k])


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
