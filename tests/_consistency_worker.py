"""One process of tests/test_launch.py's disagreement tests, started by
``python -m jflow.distributed.launch``: ``_consistency_worker.py CASE``.

Both processes run the same first global op; then process 1 departs from process 0 as
``CASE`` says: ``op`` (another op), ``shape`` (the same op on a weight of another shape),
``order`` (an extra op that both have already run, so the next op is at another call number),
``absent`` (it never reaches the op: it sleeps). The launcher's environment carries the
consistency check's timeout. A worker that gets past the disagreement prints
``NO-ERROR <rank>`` (the test then fails).
"""

from __future__ import annotations

import os
import sys
import time

os.environ["JAX_PLATFORMS"] = "cpu"  # before JAX is imported: no accelerator probing
os.environ.pop("XLA_FLAGS", None)

import numpy as np  # noqa: E402

import jflow as flow  # noqa: E402


def main(case: str) -> None:
    flow.env.init_distributed()  # MASTER_ADDR, ..., JFLOW_LOCAL_DEVICE_COUNT: the launcher's
    rank, n = flow.env.get_rank(), flow.env.device_count()
    plc = flow.placement("cpu", list(range(n)))
    S, B = flow.sbp.split, flow.sbp.broadcast
    # made alike on every process (to_global of a local tensor checks that itself)
    x = flow.tensor(np.ones((4 * n, 8), np.float32)).to_global(plc, S(0))
    w = flow.tensor(np.ones((8, 3), np.float32)).to_global(plc, B)
    w_wide = flow.tensor(np.ones((8, 5), np.float32)).to_global(plc, B)
    y = flow.relu(x)  # the same op on both
    if rank == 1 and case == "op":
        z = flow.sigmoid(y)
    elif rank == 1 and case == "shape":
        z = y @ w_wide
    elif rank == 1 and case == "absent":
        time.sleep(120)
        z = y @ w
    else:
        if rank == 1 and case == "order":
            y = flow.relu(y)  # seen already: not checked, but it advances the call count
        z = y @ w
    print(f"NO-ERROR {rank} {tuple(z.shape)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
