"""One process of tests/test_distributed_torch_api.py's two-process test, started as torchrun
starts one: ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE``, ``RANK`` in the environment.

``flow.distributed.init_process_group("gloo")`` joins the processes (4 CPU devices each); then
rank-dependent collectives are checked against their known results, and one
``DistributedDataParallel`` step against a plain (local) module run on the concatenated
batch, which is what PyTorch DDP's averaged gradient equals. Prints ``WORKER-OK <rank>`` on
success; on a failure, the traceback, and exits 1 at once.
"""

from __future__ import annotations

import os
import sys

# before JAX is imported: CPU only (no accelerator probing), no inherited device-count flags
os.environ["JAX_PLATFORMS"] = "cpu"
os.environ.pop("XLA_FLAGS", None)

import jax  # noqa: E402
import numpy as np  # noqa: E402

import jflow as flow  # noqa: E402  (importing jflow starts no JAX backend)
import jflow.distributed as dist  # noqa: E402
import jflow.nn.functional as F  # noqa: E402
from jflow.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

LOCAL_DEVICES = 4
TOL = dict(rtol=1e-5, atol=1e-6)


def _model(seed: int) -> flow.nn.Module:
    flow.manual_seed(seed)
    return flow.nn.Sequential(flow.nn.Linear(5, 7), flow.nn.Tanh(), flow.nn.Linear(7, 3))


def main() -> None:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    jax.config.update("jax_num_cpu_devices", LOCAL_DEVICES)  # init_process_group has no knob
    assert not dist.is_initialized()
    dist.init_process_group("gloo")
    assert dist.is_initialized() and flow.env.is_distributed()
    assert (dist.get_rank(), dist.get_world_size()) == (rank, world)
    assert dist.get_backend() == "gloo"

    # -- collectives on rank-dependent values ------------------------------------------------
    vals = [np.array([r + 1.0, -2.0 * (r + 1), 0.5 + r], np.float32) for r in range(world)]
    mine = vals[rank]
    expect = {dist.ReduceOp.SUM: sum(vals), dist.ReduceOp.AVG: sum(vals) / world,
              dist.ReduceOp.MAX: np.max(vals, 0), dist.ReduceOp.MIN: np.min(vals, 0),
              dist.ReduceOp.PRODUCT: np.prod(vals, 0)}
    for op, want in expect.items():
        t = flow.tensor(mine)
        assert dist.all_reduce(t, op=op) is None
        np.testing.assert_allclose(t.detach().numpy(), want, rtol=1e-6, err_msg=str(op))
    leaf = flow.tensor(mine, requires_grad=True)  # not differentiable: the data is written
    work = dist.all_reduce(leaf, async_op=True)
    assert work.wait() and work.is_completed()
    np.testing.assert_allclose(leaf.detach().numpy(), sum(vals), rtol=1e-6)
    assert leaf.requires_grad and leaf.grad_fn is None
    ti = flow.tensor([rank + 1, 7], dtype=flow.int64)
    dist.all_reduce(ti)
    assert ti.detach().numpy().tolist() == [world * (world + 1) // 2, 7 * world]
    assert ti.dtype == flow.int64

    tb = flow.tensor(mine)
    dist.broadcast(tb, src=world - 1)
    np.testing.assert_array_equal(tb.detach().numpy(), vals[world - 1])

    gathered = [flow.zeros(3) for _ in range(world)]
    dist.all_gather(gathered, flow.tensor(mine))
    for r in range(world):
        np.testing.assert_array_equal(gathered[r].detach().numpy(), vals[r])

    tr = flow.tensor(mine)
    dist.reduce(tr, dst=0)
    np.testing.assert_allclose(tr.detach().numpy(), sum(vals) if rank == 0 else mine, rtol=1e-6)
    dist.barrier()

    # -- DDP: processes start from different weights; process 0's win ------------------------
    model = _model(seed=rank)
    ddp = DDP(model)
    ref = _model(seed=0)  # a plain local module with process 0's weights
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        assert p.placement.ranks == list(range(world * LOCAL_DEVICES)), name
        assert p.sbp == (flow.sbp.broadcast,), (name, p.sbp)
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)

    rng = np.random.default_rng(0)  # the same global batch on every process
    n_local = 2 * LOCAL_DEVICES
    x = rng.standard_normal((world * n_local, 5)).astype(np.float32)
    y = rng.integers(0, 3, world * n_local)
    rows = slice(rank * n_local, (rank + 1) * n_local)

    opt = flow.optim.SGD(ddp.parameters(), lr=0.5)
    out = ddp(flow.tensor(x[rows]))
    assert out._global is None and tuple(out.shape) == (n_local, 3), (out._global, out.shape)
    ref_out = ref(flow.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), ref_out.detach().numpy()[rows], **TOL)
    F.cross_entropy(out, flow.tensor(y[rows])).backward()
    # PyTorch DDP: mean over ranks of each rank's mean loss's gradient = the gradient of the
    # mean loss over the concatenated batch (equal local batch sizes)
    F.cross_entropy(ref_out, flow.tensor(y)).backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        assert p.grad.sbp == (flow.sbp.broadcast,), (name, p.grad.sbp)
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), err_msg=name, **TOL)
    opt.step()
    with flow.no_grad():
        for q in ref.parameters():
            q -= 0.5 * q.grad
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), err_msg=name, **TOL)

    dist.destroy_process_group()
    assert not dist.is_initialized()
    print(f"WORKER-OK {rank}", flush=True)


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        # exit now: a normal exit would wait in jax.distributed's shutdown barrier for the
        # other processes, which may be blocked in a collective with this one
        import traceback
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
