"""Data-parallel training of the digits MLP (examples/digits.py) over several processes,
started by jflow's launcher:

    python -m jflow.distributed.launch --nproc_per_node 2 --local_device_count 4 \\
        examples/digits_multiprocess.py --steps 8

Each process joins the program with ``flow.env.init_distributed()`` (no arguments: the
launcher's ``MASTER_ADDR``/``MASTER_PORT``, ``WORLD_SIZE``, ``RANK`` and
``JFLOW_LOCAL_DEVICE_COUNT``), wraps the model in ``DistributedDataParallel`` (weights
broadcast over all 8 devices of both processes) and feeds its half of every global batch of
64 rows, which DDP splits ``S(0)`` over its 4 devices. Gradients are reduced over all 8
devices, so every step is the step of one model on the whole batch. Only process 0 prints:
each step's loss on the global batch (the processes' mean losses averaged), then the test
accuracy. (The optimizer is SGD with momentum: the MLP is digits.py's, the optimizer not.)

``--local-loss`` prints rank 0's own loss instead, so the training loop has no
cross-process sync at all, and the global-batch losses of all steps after the loop (one
all-reduce).

Run without the launcher, the script is its own reference: one process trains the same model
on the same global batches with plain local tensors (no DDP, no global tensors), and the
printed losses agree with the launched run's to float rounding (tests/test_launch.py checks
this, on a launched ``--local-loss`` run).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

import jflow as flow  # importing jflow starts no JAX backend: init_distributed can follow
import jflow.distributed as dist
import jflow.nn.functional as F
from jflow.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, str(Path(__file__).resolve().parent))
from digits import build_model, load_data  # noqa: E402  (the MLP and data of digits.py)


def main(argv: Sequence[str] | None = None) -> list[float]:
    """Train; returns the per-step global-batch losses (on every process)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=64, help="global batch (all processes)")
    ap.add_argument("--lr", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--local-loss", action="store_true",
                    help="print rank 0's own loss each step: no cross-process sync in the loop "
                         "at all (the global-batch losses follow the loop, one sync for all)")
    args = ap.parse_args(argv)

    launched = "WORLD_SIZE" in os.environ
    if launched:
        flow.env.init_distributed()  # before the first tensor: devices and collectives
    dist.init_process_group("gloo")  # adopts those processes (one process: a world of one)
    rank, world = flow.env.get_rank(), flow.env.get_world_size()
    if args.batch_size % world:
        raise SystemExit(f"--batch-size {args.batch_size} must be divisible by the "
                         f"{world} processes")
    rows = args.batch_size // world

    xtr, ytr, xte, yte = load_data(args.seed)
    flow.manual_seed(args.seed)  # the same initial weights everywhere (DDP broadcasts rank 0's)
    model = build_model("mlp")
    net = DDP(model) if launched else model
    # SGD, not digits.py's Adam: Adam's step hardly changes when a gradient is scaled, so a
    # sum over processes where the mean belongs would not show in the losses
    opt = flow.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9)
    rng = np.random.default_rng(args.seed + 1)  # the same global batches on every process
    mine = slice(rank * rows, (rank + 1) * rows)  # this process's rows of each batch

    losses = []
    for step in range(1, args.steps + 1):
        idx = rng.choice(len(ytr), args.batch_size, replace=False)[mine]
        opt.zero_grad()
        loss = F.cross_entropy(net(flow.tensor(xtr[idx])), flow.tensor(ytr[idx]))
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        if not args.local_loss:
            dist.all_reduce(mean, op=dist.ReduceOp.AVG)  # the global batch's mean loss
        losses.append(float(mean.item()))
        if rank == 0:
            print(f"step {step:3d}  loss {losses[-1]:.7f}", flush=True)
    if args.local_loss:
        # the global batch's loss of every step, averaged over the processes after the loop
        # (one collective for all steps; float32 as the per-step average is)
        mean = flow.tensor(np.array(losses, np.float32))
        dist.all_reduce(mean, op=dist.ReduceOp.AVG)
        losses = [float(v) for v in mean.numpy()]
        if rank == 0:
            for step, v in enumerate(losses, 1):
                print(f"step {step:3d}  global-batch loss {v:.7f}", flush=True)

    # a multiple of 32 test images (the same with or without the launcher) that splits evenly
    # over every device
    n_test = len(yte) - len(yte) % math.lcm(32, flow.env.device_count())
    share = slice(rank * n_test // world, (rank + 1) * n_test // world)
    with flow.no_grad():
        pred = net(flow.tensor(xte[share])).numpy().argmax(1)
    correct = flow.tensor(np.array([(pred == yte[share]).sum()], np.int64))
    dist.all_reduce(correct)
    if rank == 0:
        print(f"test accuracy {int(correct.item()) / n_test:.4f} ({n_test} images, "
              f"{world} process{'es' if world > 1 else ''}, "
              f"{flow.env.device_count()} devices)", flush=True)
    return losses


if __name__ == "__main__":
    main()
