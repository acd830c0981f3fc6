"""A sharded checkpoint written by two processes (4 CPU devices each, 8 ranks, S(0)): each
writes only its own shards to its own file and both load it back resharded
(tests/_sharded_ckpt_worker.py); then this single process loads it on 4 devices as B, as
S(1) and as local tensors, compared with the NumPy values."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from _sharded_ckpt_worker import reference
from _spawn import free_port, needs_gloo, run_workers

import jflow as flow

HERE = Path(__file__).resolve().parent
WORKER = HERE / "_sharded_ckpt_worker.py"
NPROC = 2


@needs_gloo
def test_two_processes_save_their_shards_and_any_layout_loads(tmp_path: Path) -> None:
    d = tmp_path / "ckpt"
    port = free_port()
    run_workers([[str(WORKER), str(port), str(NPROC), str(i), str(d)] for i in range(NPROC)],
                [{}] * NPROC, tmp_path, 90)
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
