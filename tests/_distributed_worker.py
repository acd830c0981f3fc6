"""One process of tests/test_distributed.py: ``python _distributed_worker.py PORT NPROC PID
[DIR]``.

Joins the others through ``flow.env.init_distributed`` with 4 CPU devices, then runs global
matmuls on a placement of every process's devices (ranks 0..4*NPROC-1) and checks the logical
values against NumPy; with ``DIR``, then saves and reloads a sharded checkpoint there
(tests/_sharded_ckpt_worker.py's checks: one pair of processes, one start-up, for both).
Prints ``WORKER-OK <pid>`` on success; on a failure, the traceback, and exits 1 at once.
"""

from __future__ import annotations

import os
import sys

# before JAX is imported: CPU only (no accelerator probing), no inherited device-count flags
os.environ["JAX_PLATFORMS"] = "cpu"
os.environ.pop("XLA_FLAGS", None)

import numpy as np  # noqa: E402

import jflow as flow  # noqa: E402  (importing jflow starts no JAX backend)
from jflow import env  # noqa: E402

LOCAL_DEVICES = 4


def main(port: int, nproc: int, pid: int, ckpt_dir: str | None = None) -> None:
    env.init_distributed(f"127.0.0.1:{port}", num_processes=nproc, process_id=pid,
                         local_device_count=LOCAL_DEVICES, timeout_s=60)
    n = nproc * LOCAL_DEVICES
    assert env.is_distributed()
    assert (env.get_rank(), env.get_world_size()) == (pid, nproc)
    assert env.get_local_rank() == pid  # all on this host
    assert env.device_count() == n
    mine = list(range(pid * LOCAL_DEVICES, (pid + 1) * LOCAL_DEVICES))
    assert env.local_ranks() == mine, env.local_ranks()

    S, B = flow.sbp.split, flow.sbp.broadcast
    plc = flow.placement("cpu", list(range(n)))
    assert [env.devices_by_rank()[r] for r in range(n)] == list(plc.mesh.devices.flat)
    rng = np.random.default_rng(0)  # same seed: every process holds the same logical inputs
    a, b = rng.standard_normal((4 * n, 8)), rng.standard_normal((8, 12))
    want = a @ b

    # the case: S(0) x B -> S(0), no data moved; numpy() gathers on every process
    ga = flow.tensor(a).to_global(plc, S(0))
    gb = flow.tensor(b).to_global(plc, B)
    c = ga @ gb
    assert c.sbp == (S(0),), c.sbp
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-12, atol=1e-12)
    rows = a.shape[0] // n  # to_local: this process's first rank's shard
    np.testing.assert_allclose(c.to_local().numpy(), want[mine[0] * rows:(mine[0] + 1) * rows],
                               rtol=1e-12, atol=1e-12)

    # a partial sum across processes (S(1) x S(0) -> P), reduced by numpy()
    p = flow.tensor(a).to_global(plc, S(1)) @ flow.tensor(b).to_global(plc, S(0))
    assert p.sbp == (flow.sbp.partial_sum,), p.sbp
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-12, atol=1e-12)

    # each process supplies only its own rows
    half = a[pid * a.shape[0] // nproc:(pid + 1) * a.shape[0] // nproc]
    gl = env.global_from_process_local(half, plc, S(0))
    assert tuple(gl.shape) == a.shape
    np.testing.assert_allclose((gl @ gb).numpy(), want, rtol=1e-12, atol=1e-12)
    if ckpt_dir is not None:
        # (imported here: only the pair run with DIR needs it)
        from _sharded_ckpt_worker import LOCAL_DEVICES as CKPT_DEVICES
        from _sharded_ckpt_worker import check_checkpoint
        assert CKPT_DEVICES == LOCAL_DEVICES
        check_checkpoint(nproc, pid, ckpt_dir)
    print(f"WORKER-OK {pid}", flush=True)


if __name__ == "__main__":
    try:
        main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:5])
    except BaseException:
        # exit now: a normal exit would wait in jax.distributed's shutdown barrier for the
        # other processes, which may be blocked in a collective with this one
        import traceback
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
