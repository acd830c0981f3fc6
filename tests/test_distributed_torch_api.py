"""``flow.distributed`` (torch.distributed's process-group API) and
``flow.nn.parallel.DistributedDataParallel`` (data parallelism over global tensors).

One process: the world of one process, its identity collectives, PyTorch's errors before
``init_process_group`` and on bad arguments; DDP on the 8 virtual CPU devices against the
same module without DDP (NumPy comparisons), eager, with optimizers and under ``flow.jit``.
Two processes (tests/_ddp_worker.py, started as torchrun would): collectives on
rank-dependent values and a DDP step against a plain module on the concatenated batch.
"""

from __future__ import annotations

import copy
import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from _spawn import free_port, needs_gloo, run_workers

import jflow as flow
import jflow.distributed as dist
import jflow.nn.functional as F
from jflow.nn.parallel import DistributedDataParallel as DDP

HERE = Path(__file__).resolve().parent
NOT_INIT = ("Default process group has not been initialized, please make sure to call "
            "init_process_group.")
TORCHRUN_VARS = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")
TOL = dict(rtol=1e-5, atol=1e-6)
B, S = flow.sbp.broadcast, flow.sbp.split


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No default group and no torchrun variables before; the group destroyed after (tests
    in one xdist worker share the process)."""
    for k in TORCHRUN_VARS:
        monkeypatch.delenv(k, raising=False)
    if dist.is_initialized():
        dist.destroy_process_group()
    try:
        yield
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


@pytest.fixture
def world(clean: None) -> Iterator[None]:
    dist.init_process_group("gloo")
    yield


# -- flow.distributed in one process ----------------------------------------------------------

def test_before_init_every_call_raises_pytorchs_error(clean: None) -> None:
    assert dist.is_available() and not dist.is_initialized()
    t = flow.ones(2)
    calls = {"get_rank": lambda: dist.get_rank(), "get_world_size": dist.get_world_size,
             "get_backend": dist.get_backend, "barrier": dist.barrier,
             "all_reduce": lambda: dist.all_reduce(t),
             "broadcast": lambda: dist.broadcast(t, 0),
             "all_gather": lambda: dist.all_gather([flow.ones(2)], t),
             "reduce": lambda: dist.reduce(t, 0), "new_group": dist.new_group}
    for name, call in calls.items():
        with pytest.raises(ValueError) as e:
            call()
        assert str(e.value) == f"flow.distributed.{name}: {NOT_INIT}"
    assert t.detach().numpy().tolist() == [1.0, 1.0]


def test_one_process_world_and_destroy(clean: None) -> None:
    flow.zeros(1)  # PyTorch allows tensors before init_process_group; so does a world of one
    assert dist.init_process_group("gloo") is None
    assert dist.is_initialized()
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "gloo")
    assert dist.group.WORLD is not None and dist.get_rank(dist.group.WORLD) == 0
    assert not flow.env.is_distributed()  # no jax.distributed for one process
    assert dist.barrier() is None
    assert dist.new_group() is dist.group.WORLD and dist.new_group([0]) is dist.group.WORLD
    with pytest.raises(ValueError, match="twice"):
        dist.init_process_group("gloo")
    dist.destroy_process_group()
    assert not dist.is_initialized() and dist.group.WORLD is None
    with pytest.raises(ValueError, match=f"flow.distributed.get_rank: {NOT_INIT}"):
        dist.get_rank()
    dist.init_process_group()  # again, default backend
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "gloo")


def test_torchrun_variables_for_one_process(clean: None, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "0")
    dist.init_process_group(backend="gloo", init_method="env://")
    assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
    assert not flow.env.is_distributed()


@pytest.mark.parametrize("op", ["SUM", "PRODUCT", "MIN", "MAX", "AVG"])
def test_one_process_all_reduce_is_identity(world: None, op: str) -> None:
    vals = np.array([[1.5, -2.0], [3.0, 0.25]], np.float32)
    t = flow.tensor(vals)
    assert dist.all_reduce(t, op=getattr(dist.ReduceOp, op)) is None
    np.testing.assert_array_equal(t.detach().numpy(), vals)
    assert t.dtype == flow.float32


def test_one_process_collectives(world: None) -> None:
    vals = np.array([1.0, 2.0, 3.0], np.float32)
    leaf = flow.tensor(vals, requires_grad=True)  # collectives act on the data, as c10d
    work = dist.all_reduce(leaf, async_op=True)
    assert work.wait() and work.is_completed() and work.result() == [leaf]
    assert leaf.requires_grad and leaf.grad_fn is None
    np.testing.assert_array_equal(leaf.detach().numpy(), vals)
    ti = flow.tensor([3, 4], dtype=flow.int64)
    dist.all_reduce(ti, dist.ReduceOp.SUM)
    dist.all_reduce(ti, dist.ReduceOp.BOR)
    assert ti.detach().numpy().tolist() == [3, 4]
    dist.broadcast(leaf, src=0)
    np.testing.assert_array_equal(leaf.detach().numpy(), vals)
    out = [flow.zeros(3)]
    dist.all_gather(out, flow.tensor(vals))  # written in place into the list's tensor
    np.testing.assert_array_equal(out[0].numpy(), vals)
    tr = flow.tensor(vals)
    dist.reduce(tr, dst=0, op=dist.ReduceOp.MAX)
    np.testing.assert_array_equal(tr.detach().numpy(), vals)
    assert dist.barrier(async_op=True).is_completed()


def test_collective_argument_errors(world: None) -> None:
    t = flow.ones(3)
    with pytest.raises(TypeError, match=r"flow\.distributed\.all_reduce: .*`tensor`.*list"):
        dist.all_reduce([1.0, 2.0])
    with pytest.raises(TypeError, match=r"all_reduce: op must be a flow\.distributed\.ReduceOp"):
        dist.all_reduce(t, op="sum")
    with pytest.raises(TypeError, match=r"all_reduce: ReduceOp\.AVG needs a floating"):
        dist.all_reduce(flow.tensor([1, 2]), op=dist.ReduceOp.AVG)
    with pytest.raises(ValueError, match=r"broadcast: src=1 is out of range .* 1 processes"):
        dist.broadcast(t, 1)
    with pytest.raises(ValueError, match=r"broadcast: src=-1 is out of range"):
        dist.broadcast(t, -1)
    with pytest.raises(TypeError, match=r"broadcast: src must be an int"):
        dist.broadcast(t, "0")
    with pytest.raises(ValueError, match=r"reduce: dst=2 is out of range"):
        dist.reduce(t, 2)
    with pytest.raises(ValueError, match=r"all_gather: tensor_list must hold world_size \(1\)"):
        dist.all_gather([flow.ones(3), flow.ones(3)], t)
    with pytest.raises(ValueError, match=r"all_gather: tensor_list\[0\] has shape \[2\]"):
        dist.all_gather([flow.ones(2)], t)
    with pytest.raises(ValueError, match=r"all_reduce: group must be None or the default"):
        dist.all_reduce(t, group=object())
    g = flow.ones(8).to_global(flow.placement("cpu", list(range(8))), B)
    with pytest.raises(ValueError, match=r"all_reduce: `tensor` is a global tensor"):
        dist.all_reduce(g)
    with pytest.raises(NotImplementedError, match=r"new_group: subgroups are not supported"):
        dist.new_group([0, 1])


def test_init_argument_errors(clean: None, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"unknown backend 'foo'"):
        dist.init_process_group("foo")
    with pytest.raises(ValueError, match=r"rank 3 is out of range for world_size 2"):
        dist.init_process_group("gloo", world_size=2, rank=3)
    with pytest.raises(ValueError, match=r"world_size=2 needs the coordinator's address"):
        dist.init_process_group("gloo", world_size=2, rank=0)
    with pytest.raises(NotImplementedError, match=r"store= is not supported"):
        dist.init_process_group("gloo", store=object(), world_size=1, rank=0)
    with pytest.raises(ValueError, match=r"init_method 'file:///tmp/x' is not supported"):
        dist.init_process_group("gloo", init_method="file:///tmp/x", world_size=2, rank=0)
    # a real multi-process world in a process whose JAX backend runs: flow.env's error
    flow.zeros(1)
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(RuntimeError, match="before JAX starts its backend"):
        dist.init_process_group("gloo")
    assert not dist.is_initialized()


# -- DistributedDataParallel in one process, 8 devices ----------------------------------------

def _model(seed: int = 0) -> flow.nn.Module:
    flow.manual_seed(seed)
    return flow.nn.Sequential(flow.nn.Linear(6, 16), flow.nn.Tanh(), flow.nn.Linear(16, 4))


def _batch(n: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 6)).astype(np.float32), rng.integers(0, 4, n)


def test_ddp_layout_forward_and_gradients_equal_the_plain_module() -> None:
    model = _model()
    ref = copy.deepcopy(model)  # independent parameters, identical values
    ddp = DDP(model)
    assert ddp.module is model
    seen = []
    model.register_forward_pre_hook(lambda m, args: seen.append(args[0]))
    x, y = _batch()
    out = ddp(flow.tensor(x))
    (gx,) = seen
    assert gx.sbp == (S(0),) and gx.placement.ranks == list(range(8))
    assert tuple(gx.shape) == (16, 6)
    assert out._global is None and tuple(out.shape) == (16, 4)  # local: this process's rows
    ref_out = ref(flow.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), ref_out.detach().numpy(), **TOL)
    F.cross_entropy(out, flow.tensor(y)).backward()
    F.cross_entropy(ref_out, flow.tensor(y)).backward()
    names = [n for n, _ in ref.named_parameters()]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias"]
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        assert p.placement.ranks == list(range(8)) and p.sbp == (B,), name
        assert p.grad.sbp == (B,), (name, p.grad.sbp)  # reduced, as PyTorch's all-reduce
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), err_msg=name, **TOL)
        assert np.abs(q.grad.numpy()).max() > 0
    keys = list(ddp.state_dict())
    assert keys == ["module." + k for k in ref.state_dict()]


def test_ddp_input_gradient_equals_the_plain_module() -> None:
    model = _model()
    ref = copy.deepcopy(model)
    ddp = DDP(model)
    x, y = _batch()
    xd, xr = flow.tensor(x, requires_grad=True), flow.tensor(x, requires_grad=True)
    F.cross_entropy(ddp(xd), flow.tensor(y)).backward()
    F.cross_entropy(ref(xr), flow.tensor(y)).backward()
    assert xd.grad._global is None
    np.testing.assert_allclose(xd.grad.numpy(), xr.grad.numpy(), **TOL)


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_ddp_optimizer_steps_equal_the_plain_module(opt_name: str) -> None:
    model = _model()
    ref = copy.deepcopy(model)
    ddp = DDP(model)
    kw = {"lr": 0.1, "momentum": 0.9} if opt_name == "SGD" else {"lr": 0.01}
    opt_d = getattr(flow.optim, opt_name)(ddp.parameters(), **kw)
    opt_r = getattr(flow.optim, opt_name)(ref.parameters(), **kw)
    for step in range(3):
        x, y = _batch(seed=step)
        for mod, opt in ((ddp, opt_d), (ref, opt_r)):
            opt.zero_grad()
            F.cross_entropy(mod(flow.tensor(x)), flow.tensor(y)).backward()
            opt.step()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        assert p.sbp == (B,) and p.placement.ranks == list(range(8)), name
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), err_msg=name, **TOL)
    assert not np.allclose(ref[0].weight.detach().numpy(),
                           _model()[0].weight.detach().numpy())  # it trained


def test_ddp_compiled_training_step_equals_eager_plain_steps() -> None:
    model = _model()
    ref = copy.deepcopy(model)
    ddp = DDP(model)
    opt_d = flow.optim.SGD(ddp.parameters(), lr=0.1)
    opt_r = flow.optim.SGD(ref.parameters(), lr=0.1)

    @flow.jit
    def step(x: flow.Tensor, y: flow.Tensor) -> flow.Tensor:
        opt_d.zero_grad()
        loss = F.cross_entropy(ddp(x), y)
        loss.backward()
        opt_d.step()
        return loss

    for k in range(3):
        x, y = _batch(seed=k)
        loss = step(flow.tensor(x), flow.tensor(y))
        opt_r.zero_grad()
        ref_loss = F.cross_entropy(ref(flow.tensor(x)), flow.tensor(y))
        ref_loss.backward()
        opt_r.step()
        np.testing.assert_allclose(loss.detach().numpy(), ref_loss.detach().numpy(), **TOL)
    # one trace, and one more once the .grad tensors exist (as for any module): not one per call
    assert step.trace_count <= 2, step.recompile_reasons
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        assert p.sbp == (B,), name
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), err_msg=name, **TOL)


def test_ddp_no_sync_accumulates_the_same_gradient() -> None:
    model = _model()
    ref = copy.deepcopy(model)
    ddp = DDP(model)
    (x1, y1), (x2, y2) = _batch(seed=1), _batch(seed=2)
    with ddp.no_sync():
        F.cross_entropy(ddp(flow.tensor(x1)), flow.tensor(y1)).backward()
    assert model[0].weight.grad.sbp == (flow.sbp.partial_sum,)  # not reduced inside no_sync
    F.cross_entropy(ddp(flow.tensor(x2)), flow.tensor(y2)).backward()
    for x, y in ((x1, y1), (x2, y2)):
        F.cross_entropy(ref(flow.tensor(x)), flow.tensor(y)).backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), err_msg=name, **TOL)


def test_ddp_constructor_and_batch_errors() -> None:
    model = _model()
    ddp = DDP(model, device_ids=[0], output_device=0, broadcast_buffers=False,
              find_unused_parameters=True, bucket_cap_mb=25, gradient_as_bucket_view=True,
              static_graph=True)
    x, _ = _batch(n=12)
    with pytest.raises(ValueError, match=r"DistributedDataParallel: the batch size of input 0 "
                                         r"\(12, .*divisible by this process's 8 devices"):
        ddp(flow.tensor(x))
    with pytest.raises(ValueError, match=r"batch size of input 'x' \(4,"):
        ddp(x=flow.tensor(x[:4]))
    with pytest.raises(TypeError, match="DistributedDataParallel: module must be"):
        DDP(lambda v: v)
    with pytest.raises(NotImplementedError, match="only dim=0"):
        DDP(_model(), dim=1)
    frozen = _model().requires_grad_(False)
    with pytest.raises(RuntimeError, match="DistributedDataParallel is not needed"):
        DDP(frozen)


def test_ddp_gradient_equals_torch_ddp_on_a_group_of_one() -> None:
    torch = pytest.importorskip("torch")
    import torch.distributed as tdist

    if tdist.is_initialized():
        pytest.skip("a torch process group is already initialized in this process")
    model = _model()
    ddp = DDP(model)
    tmodel = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    with torch.no_grad():
        for tp, p in zip(tmodel.parameters(), model.parameters()):
            tp.copy_(torch.from_numpy(np.array(p.detach().numpy())))
    x, y = _batch()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", world_size=1,
                             rank=0)
    try:
        tddp = torch.nn.parallel.DistributedDataParallel(tmodel)
        torch.nn.functional.cross_entropy(tddp(torch.from_numpy(x)),
                                          torch.from_numpy(y)).backward()
    finally:
        tdist.destroy_process_group()
    F.cross_entropy(ddp(flow.tensor(x)), flow.tensor(y)).backward()
    for (name, p), tp in zip(model.named_parameters(), tmodel.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), err_msg=name, **TOL)


# -- two processes ------------------------------------------------------------------------------

@needs_gloo
def test_two_processes_torchrun_style_collectives_and_ddp(tmp_path: Path) -> None:
    nproc = 2
    base = dict(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE=str(nproc))
    run_workers([[str(HERE / "_ddp_worker.py")]] * nproc,
                [dict(base, RANK=str(i), LOCAL_RANK=str(i)) for i in range(nproc)], tmp_path)
