"""A sharded-checkpoint process (``python _sharded_ckpt_worker.py PORT NPROC PID DIR``); its
checks (``check_checkpoint``) also run in tests/_distributed_worker.py, which
tests/test_distributed.py starts.

Joins the others (4 CPU devices each), saves a state dict of global tensors on all 8 ranks
to DIR (every process writes its own file), checks that this process's file holds exactly
the shards owned by its devices, then loads the checkpoint back on both processes in other
layouts and compares with NumPy. Prints ``WORKER-OK <pid>``; on a failure, the traceback,
and exits 1 at once.
"""

from __future__ import annotations

import json
import os
import sys

if __name__ == "__main__":  # a worker process (test_distributed.py also imports reference():
    os.environ["JAX_PLATFORMS"] = "cpu"  # the pytest process's environment stays its own)
    os.environ.pop("XLA_FLAGS", None)

import numpy as np  # noqa: E402

import jflow as flow  # noqa: E402
from jflow import env  # noqa: E402

LOCAL_DEVICES = 4


def reference() -> dict[str, np.ndarray]:
    """The logical values (the pytest process compares its own load with these too)."""
    rng = np.random.default_rng(1)
    return {"w": rng.standard_normal((16, 8)).astype(np.float32),
            "b": rng.standard_normal(8).astype(np.float32),
            "idx": rng.integers(0, 100, (8, 8)).astype(np.int64)}


def main(port: int, nproc: int, pid: int, directory: str) -> None:
    env.init_distributed(f"127.0.0.1:{port}", num_processes=nproc, process_id=pid,
                         local_device_count=LOCAL_DEVICES, timeout_s=60)
    check_checkpoint(nproc, pid, directory)
    print(f"WORKER-OK {pid}", flush=True)


def check_checkpoint(nproc: int, pid: int, directory: str) -> None:
    """Everything after joining (LOCAL_DEVICES per process): tests/_distributed_worker.py
    runs this after its matmuls, so one pair of processes serves both checks."""
    S, B = flow.sbp.split, flow.sbp.broadcast
    n = nproc * LOCAL_DEVICES
    plc = flow.placement("cpu", list(range(n)))
    ref = reference()
    state = {"w": flow.tensor(ref["w"]).to_global(plc, S(0)),
             "b": flow.tensor(ref["b"]).to_global(plc, B),
             "idx": flow.tensor(ref["idx"]).to_global(plc, S(1)),
             "step": 5}
    flow.save(state, directory)

    # this process's file holds exactly the shards its devices own, with their values
    m = json.load(open(os.path.join(directory, "manifest.json")))
    mine = m["files"][pid]
    raw = open(os.path.join(directory, mine), "rb").read()
    hlen = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + hlen])
    header.pop("__metadata__")
    data = raw[8 + hlen:]
    rows = 16 // n
    expected = {}
    for key, g in zip(("w", "b", "idx"), m["globals"]):
        for s in g["shards"]:
            if s["file"] == mine:
                expected[s["name"]] = ref[key][tuple(slice(a, b) for a, b in s["index"])]
    w_shards = [s for s in m["globals"][0]["shards"] if s["file"] == mine]
    assert len(w_shards) == LOCAL_DEVICES, w_shards              # S(0): my 4 ranks' rows
    assert sorted(s["index"][0][0] // rows for s in w_shards) == \
        list(range(pid * LOCAL_DEVICES, (pid + 1) * LOCAL_DEVICES))
    assert len(m["globals"][1]["shards"]) == 1                   # B: written once, overall
    assert set(header) == set(expected), (sorted(header), sorted(expected))
    for name, want in expected.items():
        a, b = header[name]["data_offsets"]
        got = np.frombuffer(data[a:b], dtype=want.dtype).reshape(want.shape)
        np.testing.assert_array_equal(got, want)

    # load on both processes: saved layout, and resharded to other layouts
    out = flow.load(directory)
    assert out["step"] == 5 and out["w"].sbp == (S(0),)
    for k in ("w", "b", "idx"):
        np.testing.assert_array_equal(out[k].numpy(), ref[k])
    half = flow.placement("cpu", [list(range(0, n, 2)), list(range(1, n, 2))])
    out = flow.load(directory, placement=half, sbp={"w": [S(1), S(0)], "b": [B, B],
                                                    "idx": [B, S(0)]})
    assert out["w"]._global == (half, (S(1), S(0)))
    for k in ("w", "b", "idx"):
        np.testing.assert_array_equal(out[k].numpy(), ref[k])
    local = flow.load(directory, map_location="cpu")
    np.testing.assert_array_equal(local["idx"].numpy(), ref["idx"])


if __name__ == "__main__":
    try:
        main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    except BaseException:
        import traceback
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
