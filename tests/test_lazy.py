"""Lazy eager (``flow.lazy()``, jflow/lazy_mode): op calls record and run later, fused. Every
test runs the same code eagerly and lazily and compares (values, gradients, versions,
errors), and checks what the mode promises: shapes without a flush, one flush where a value
is needed, the backward fused into the forward's segment, a compile on the second sighting
only, bounded segments, per-thread modes."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import jflow as flow
from jflow import lazy_values as lv
from jflow.compiler import RecompileWarning
from jflow.lazy_mode import compile_cache as cc
from jflow.lazy_mode import segment as seg

F = flow.nn.functional
RS = np.random.RandomState(0)
XN = RS.randn(8, 5).astype(np.float32)


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def _program(x, c):
    """A mixed program: scalar and tensor arithmetic, unary math, reductions, matmul."""
    y = x * 1.5 + c
    y = flow.tanh(y) - y.sigmoid() * 2.0
    z = y @ y.T
    return z.sum(1).exp().mean() + (y * y).sum() / 3.0


def test_values_and_gradients_equal_eager():
    c = flow.tensor(RS.randn(5).astype(np.float32))
    x = flow.tensor(XN, requires_grad=True)
    ref = _program(x, c)
    ref.backward()
    gref = x.grad.numpy()
    for _ in range(3):  # first sighting node by node, then compiled
        x = flow.tensor(XN, requires_grad=True)
        with flow.lazy():
            out = _program(x, c)
            assert isinstance(out, lv.LazyTensor)
            out.backward()
            g = x.grad
        _close(out.item(), ref.item())
        _close(g.numpy(), gref)


def test_metadata_does_not_flush_and_a_value_read_does():
    x = flow.tensor(XN)
    with flow.lazy():
        before = seg.stats()["flushes"]
        y = (x * 2.0).sum(0)
        assert y.shape == (5,) and y.dtype == flow.float32 and y.ndim == 1
        assert seg.stats()["flushes"] == before
        v = y.numpy()  # a value: the segment runs
        assert seg.stats()["flushes"] == before + 1
    _close(v, (XN * 2).sum(0))


def test_contiguous_of_a_pending_view_does_not_flush():
    """``q, k, v = qkv.split(d, -1)`` then ``.contiguous()`` (attention code does it in every
    layer): the copy of a pending view stays pending, with its gradient; before, each one
    ran the segment recorded so far (the GPT benchmark's step ran in 6 pieces instead of 2)."""
    xn = XN[:, :4].copy()
    x = flow.tensor(xn, requires_grad=True)
    with flow.lazy():
        before = seg.stats()["flushes"]
        a, b = (x * 2.0).exp().split(2, dim=1)
        c = a.T.contiguous()
        assert isinstance(c, lv.LazyTensor) and not c._aliases
        loss = (c * 3.0).sum() + b.sum()
        assert seg.stats()["flushes"] == before
        loss.backward()
        g = x.grad.numpy()
    e = np.exp(xn * 2.0)
    _close(loss.item(), 3 * e[:, :2].sum() + e[:, 2:].sum())
    _close(g, np.concatenate([6 * e[:, :2], 2 * e[:, 2:]], axis=1))


def test_device_of_a_pending_tensor_does_not_flush():
    """``.device`` is metadata (libraries read it mid-forward: ``torch.tensor([],
    device=h.device)``): a pending tensor answers where its inputs are, without running the
    segment, and the answer is where the value lands; a parameter made pending by an
    in-place update and a view of a pending value too."""
    import jax

    devs = jax.devices()
    w = flow.nn.Parameter(flow.tensor(XN[:, :2].copy()))
    for dev in [None] + ([devs[-1]] if len(devs) > 1 else []):
        x = flow.tensor(XN) if dev is None else flow.tensor(XN).to(f"cpu:{dev.id}")
        with flow.lazy():
            before = seg.stats()["flushes"]
            y = (x * 2.0).sum(0)
            z = flow.tensor([1.0, 2.0]) * 3.0  # from host data: the default device
            with flow.no_grad():
                w.add_(1.0)  # a pending Parameter (its lazy twin class)
            v = (x + 1.0).T[1:]  # a pending view
            got = (y.device, z.device, w.device, v.device)
            assert seg.stats()["flushes"] == before
            assert isinstance(y, lv.LazyTensor) and isinstance(w, flow.nn.Parameter)
            flow.sync()
            assert got == (y.device, z.device, w.device, v.device) == (
                x.device, flow.ones(1).device, w.device, x.device)
        _close(y.numpy(), (XN * 2).sum(0))


def test_leaving_the_block_and_sync_flush():
    x = flow.tensor(XN)
    with flow.lazy():
        y = x + 1.0
        flow.sync()
        assert seg.active().nodes == []
        z = y * 3.0
    assert not seg.segment().nodes  # (left: run)
    _close(z.numpy(), (XN + 1) * 3)
    assert type(z) is flow.Tensor  # a read makes it a plain tensor


def test_backward_is_recorded_into_the_forward_segment():
    x = flow.tensor(XN, requires_grad=True)
    with flow.lazy():
        before = seg.stats()["flushes"]
        loss = (flow.tanh(x) * 2.0).sum()
        loss.backward()
        assert seg.stats()["flushes"] == before  # forward + backward: still pending
        g = x.grad.numpy()
        assert seg.stats()["flushes"] == before + 1
    _close(g, 2 * (1 - np.tanh(XN) ** 2))


def test_second_sighting_compiles_once(monkeypatch):
    monkeypatch.setattr(cc, "COMPILE_ON_SIGHTING", 2)
    x = flow.tensor(XN)
    before = seg.stats()

    def run():
        with flow.lazy():
            return ((x * 0.5).exp() - 1.0).sum().item()

    vals = [run() for _ in range(4)]
    after = seg.stats()
    assert after["eager_flushes"] - before["eager_flushes"] == 1
    assert after["compiles"] - before["compiles"] == 1
    _close(vals, [np.sum(np.exp(XN * 0.5) - 1)] * 4)


def test_mlp_training_steps_match_eager():
    def build():
        flow.manual_seed(0)
        m = flow.nn.Sequential(flow.nn.Linear(5, 16), flow.nn.ReLU(), flow.nn.Linear(16, 3))
        return m, flow.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    y = flow.tensor(RS.randint(0, 3, 8))
    x = flow.tensor(XN)
    me, oe = build()
    ml, ol = build()
    for _ in range(4):
        oe.zero_grad()
        le = F.cross_entropy(me(x), y)
        le.backward()
        oe.step()
        with flow.lazy():
            ol.zero_grad()
            ll = F.cross_entropy(ml(x), y)
            ll.backward()
            ol.step()
        _close(ll.item(), le.item())
    for (_, a), (_, b) in zip(me.named_parameters(), ml.named_parameters()):
        _close(a.detach().numpy(), b.detach().numpy())


def _mlp_steps(width, batch, steps, lazy):
    """``steps`` SGD steps (momentum) of a width-``width`` MLP; (losses, parameters, flushes
    of the lazy segments per step)."""
    flow.manual_seed(0)
    m = flow.nn.Sequential(flow.nn.Linear(width, width), flow.nn.ReLU(),
                           flow.nn.Linear(width, width))
    opt = flow.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    rs = np.random.RandomState(1)
    x = flow.tensor(rs.randn(batch, width).astype(np.float32))
    t = flow.tensor(rs.randn(batch, width).astype(np.float32))
    losses, flushes = [], []
    for _ in range(steps):
        before = seg.stats()["flushes"]
        with flow.lazy(lazy):
            opt.zero_grad()
            loss = F.mse_loss(m(x), t)
            loss.backward()
            opt.step()
        flushes.append(seg.stats()["flushes"] - before)
        losses.append(loss.item())
    return losses, [p.detach().numpy() for p in m.parameters()], flushes


def test_a_heavy_forward_runs_before_its_backward_is_recorded():
    # width 32, batch 32: 2 x 32*32*32 = 65536 multiply-adds >= SPLIT_FLOPS: backward() runs
    # the forward (one flush), the backward and the step run at step() (a second one)
    assert 2 * 32 ** 3 >= seg.SPLIT_FLOPS > 2 * 8 * 8 * 8
    le, pe, _ = _mlp_steps(32, 32, 4, lazy=False)
    ll, pl, flushes = _mlp_steps(32, 32, 4, lazy=True)
    assert flushes == [2, 2, 2, 2]
    _close(ll, le)
    for a, b in zip(pe, pl):
        _close(a, b)
    # below the threshold the whole step stays one run
    le, pe, _ = _mlp_steps(8, 8, 3, lazy=False)
    ll, pl, flushes = _mlp_steps(8, 8, 3, lazy=True)
    assert flushes == [1, 1, 1]
    _close(ll, le)
    for a, b in zip(pe, pl):
        _close(a, b)


def test_split_forward_with_autograd_grad_retained_graphs_and_versions():
    # a heavy forward (2 x 32^3 multiply-adds) runs at the first backward; autograd.grad,
    # a retained graph backpropagated twice and the saved-tensor version check hold
    xn = RS.randn(32, 32).astype(np.float32)

    def run(lazy):
        flow.manual_seed(0)
        m = flow.nn.Sequential(flow.nn.Linear(32, 32), flow.nn.Tanh(), flow.nn.Linear(32, 32))
        x = flow.tensor(xn)
        with flow.lazy(lazy):
            before = seg.stats()["flushes"]
            loss = (m(x) ** 2).mean()
            g = flow.autograd.grad(loss, list(m.parameters()), retain_graph=True)
            loss.backward(retain_graph=True)
            (loss * 3.0).backward()
            flushes = seg.stats()["flushes"] - before
            h = m[1](m[0](x))
            out = (h @ m[0].weight).sum()
            h.add_(1.0)
            with pytest.raises(RuntimeError, match="modified by an inplace"):
                out.backward()
        return [t.numpy() for t in g], [p.grad.numpy() for p in m.parameters()], flushes

    ge, pe, _ = run(False)
    gl, pl, flushes = run(True)
    assert flushes >= 1  # (the forward ran inside the block, at the first backward)
    for a, b in zip(ge + pe, gl + pl):
        _close(a, b)
    _close(pe[0], 4 * ge[0])


def test_no_split_with_synchronous_cpu_dispatch():
    # a synchronous run computes on the calling thread: splitting would overlap nothing
    import subprocess
    import sys
    code = (
        "import jax; jax.config.update('jax_cpu_enable_async_dispatch', False)\n"
        "import sys; sys.path.insert(0, {here!r})\n"
        "import test_lazy as t; from jflow.lazy_mode import segment as seg\n"
        "assert not seg.split_forward(10 ** 9)\n"
        "_, _, flushes = t._mlp_steps(32, 32, 2, lazy=True)\n"
        "assert flushes == [1, 1], flushes\n")
    import os
    here = os.path.dirname(__file__)
    r = subprocess.run([sys.executable, "-c", code.format(here=here)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


def test_ops_declare_the_flops_lazy_mode_weighs():
    import jax

    from jflow.ops.registry import get

    def a(*shape):
        return jax.core.ShapedArray(shape, np.float32)

    def flops(name, ins, outs):
        return get(name).flops(ins, outs)

    assert flops("matmul", (a(4, 5), a(5, 6)), (a(4, 6),)) == 4 * 5 * 6
    # a batched input against a shared weight (x @ w.T): exact too
    assert flops("linear", (a(3, 4, 5), a(6, 5), a(6)), (a(3, 4, 6),)) == 3 * 4 * 5 * 6
    # each output element reads in_channels/groups x kh x kw weights
    assert flops("conv2d", (a(2, 3, 8, 8), a(4, 3, 3, 3)), (a(2, 4, 6, 6),)) == \
        2 * 4 * 6 * 6 * 3 * 3 * 3
    # each input element scatters out_channels/groups x kh x kw weights
    assert flops("conv_transpose2d", (a(2, 3, 6, 6), a(3, 4, 3, 3)), (a(2, 4, 8, 8),)) == \
        2 * 3 * 6 * 6 * 4 * 3 * 3
    assert flops("scaled_dot_product_attention",
                 (a(2, 4, 10, 8), a(2, 4, 12, 8), a(2, 4, 12, 8)),
                 (a(2, 4, 10, 8), a(2, 4, 10))) == 2 * (2 * 4 * 10 * 8) * 12
    assert get("add").flops is None  # elementwise work is not weighed
    with pytest.raises(ValueError, match="flops= must be a function"):
        flow.ops.registry.declare_op("bad_flops", inputs=["x"], infer=lambda x: x, flops=3)


def test_in_place_and_views_keep_their_semantics():
    base = flow.tensor(XN.copy())
    ref = XN.copy()
    with flow.lazy():
        v = base[1:4]
        v.mul_(2.0)
        base.add_(1.0)
        w = v * 1.0
    ref[1:4] *= 2
    ref += 1
    _close(base.numpy(), ref)
    _close(w.numpy(), ref[1:4])
    _close(v.numpy(), ref[1:4])


def test_saved_tensor_modified_in_place_still_raises():
    for lazy in (False, True):  # (the same error, eager and lazy)
        x = flow.tensor(XN, requires_grad=True)
        with flow.lazy(lazy):
            y = x * 2.0
            z = y.sin()  # sin saves its input
            y.add_(1.0)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                z.sum().backward()


def test_no_grad_and_errors_at_the_call():
    x = flow.tensor(XN)
    with flow.lazy(), flow.no_grad():
        y = flow.relu(x - 0.5)
        with pytest.raises(ValueError, match="shapes cannot be multiplied"):
            _ = y @ flow.ones(3, 3)  # checked where the op is called, as in eager mode
        assert y.requires_grad is False
    _close(y.numpy(), np.maximum(XN - 0.5, 0))


def test_random_draws_differ_and_follow_the_seed():
    flow.manual_seed(3)
    e = [flow.rand(4).numpy() for _ in range(2)]
    flow.manual_seed(3)
    with flow.lazy():
        lz = [flow.rand(4) for _ in range(2)]
    _close(lz[0].numpy(), e[0])
    _close(lz[1].numpy(), e[1])
    assert not np.allclose(e[0], e[1])


def test_segments_are_bounded():
    x = flow.tensor(XN)
    old = seg.MAX_NODES
    seg.MAX_NODES = 64
    try:
        with flow.lazy():
            y = x
            for _ in range(1000):
                y = y + 0.001
                assert len(seg.active().nodes) < 64
    finally:
        seg.MAX_NODES = old
    _close(y.numpy(), XN + 1.0, tol=1e-4)


def test_lazy_mode_is_per_thread():
    out = {}

    def worker():
        out["lazy"] = flow.lazy_mode.is_lazy()
        out["value"] = (flow.tensor(XN) * 2.0).numpy()

    with flow.lazy():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert flow.lazy_mode.is_lazy()
    assert out["lazy"] is False
    _close(out["value"], XN * 2)


def test_a_pending_value_read_from_another_thread_while_its_owner_runs_the_segment():
    """Reader B reads a value of owner A's segment while A is running it: B computes it
    itself (before: B's flush saw the run in progress, returned, and B got None)."""
    x = flow.tensor(XN)
    started, go, box = threading.Event(), threading.Event(), {}

    def owner():
        with flow.lazy():
            z = (x * 2.0) + 1.0
            s = seg.active()
            f, *rest = s.nodes[-1]
            me = threading.current_thread()

            def held(*a):  # (the owner's run waits here until the reader has its value)
                if threading.current_thread() is me:
                    started.set()
                    go.wait(30)
                return f(*a)
            s.nodes[-1] = (held, *rest)
            box["z"] = z
            box["owner"] = z.numpy()

    w = threading.Thread(target=owner)
    w.start()
    try:
        assert started.wait(30)
        box["reader"] = box["z"].numpy()
    finally:
        go.set()
        w.join()
    _close(box["reader"], XN * 2 + 1)
    _close(box["owner"], XN * 2 + 1)


def test_pending_values_read_by_another_thread_while_the_owner_records():
    """A logging thread reads the values an owner thread records in lazy mode, concurrently
    (before: its flush reset the segment under the owner's feet; most reads were wrong)."""
    import queue
    xn = RS.randn(64).astype(np.float32)
    q: queue.Queue = queue.Queue()
    bad: list = []

    def owner():
        with flow.lazy():
            x = flow.tensor(xn)
            for k in range(400):
                q.put((k, (x * 0.5 + float(k % 7)).tanh() * 2.0 - float(k % 5)))
        q.put(None)

    def reader():
        while (item := q.get()) is not None:
            k, y = item
            try:
                v = y.numpy()
                ok = v.shape == xn.shape and np.allclose(
                    v, np.tanh(xn * 0.5 + k % 7) * 2.0 - k % 5, atol=1e-5)
            except Exception as e:  # noqa: BLE001
                ok = repr(e)
            if ok is not True:
                bad.append((k, ok))

    ts = [threading.Thread(target=owner), threading.Thread(target=reader)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad, bad[:3]


def test_a_failing_check_raises_for_a_reader_on_another_thread():
    """A value check of the owner's pending segment fails for a reader on another thread as
    it fails for the owner: the functor's error, with the line that recorded it."""
    recorded, done, box = threading.Event(), threading.Event(), {}
    with pytest.raises(IndexError) as eager:
        flow.tensor(XN)[flow.tensor(np.array([0, 9]))]

    def owner():
        try:
            with flow.lazy():
                idx = flow.tensor(np.array([0, 9])) + 0  # (pending: the check is deferred)
                box["y"] = flow.tensor(XN)[idx] * 1.0
                recorded.set()
                done.wait(30)  # (the segment stays pending until the reader has read)
        except IndexError as e:
            box["owner"] = e

    w = threading.Thread(target=owner)
    w.start()
    try:
        assert recorded.wait(30)
        with pytest.raises(IndexError) as reader:
            box["y"].numpy()
    finally:
        done.set()
        w.join()
    assert str(eager.value) in str(reader.value)
    assert "test_lazy.py" in "".join(getattr(reader.value, "__notes__", []))
    assert isinstance(box.get("owner"), IndexError)


def test_low_precision_values_are_rounded_as_eagerly():
    """A fused segment rounds every bfloat16 result to bfloat16, as the eager ops do: the
    float32 copy of a bfloat16 matmul is that matmul's value (before: XLA kept it in float32
    inside the fused program, "excess precision", and the loss differed from eager's)."""
    rs = np.random.RandomState(2)
    xn, wn = rs.randn(16, 8).astype(np.float32), rs.randn(8, 8).astype(np.float32)

    def program(x, w):
        h = (x.bfloat16() @ w.bfloat16()).tanh()
        return ((h * h + 1.0).float() * 3.0).sum()
    eager = program(flow.tensor(xn), flow.tensor(wn)).numpy()
    with flow.lazy():
        for _ in range(2):  # (node by node, then compiled)
            np.testing.assert_array_equal(program(flow.tensor(xn), flow.tensor(wn)).numpy(),
                                          eager)


def test_threads_training_their_own_models_lazily_at_once_match_eager():
    """Four threads, each training its own model lazily (forward, backward, fused Adam
    step) at the same time, through the shared caches of segments, backward graphs and
    optimizer steps: each gets its eager losses."""
    def train(seed, out, lazy):
        g = np.random.RandomState(seed)
        m = flow.nn.Sequential(flow.nn.Linear(8, 16), flow.nn.Tanh(), flow.nn.Linear(16, 1))
        with flow.no_grad():
            for p in m.parameters():
                p.copy_(flow.tensor(g.randn(*p.shape).astype(np.float32) * 0.3))
        opt = flow.optim.Adam(m.parameters(), lr=1e-2)
        x = flow.tensor(g.randn(32, 8).astype(np.float32))
        y = flow.tensor(g.randn(32, 1).astype(np.float32))
        losses = []
        for _ in range(15):
            with flow.lazy(lazy):
                opt.zero_grad()
                loss = F.mse_loss(m(x), y)
                loss.backward()
                opt.step()
            losses.append(loss.item())
        out[seed] = losses
    want, got = {}, {}
    for s in range(4):
        train(s, want, False)
    ts = [threading.Thread(target=train, args=(s, got, True)) for s in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for s in range(4):
        _close(got[s], want[s])


def test_compiled_function_inside_lazy_block_traces_as_usual():
    flow.manual_seed(0)
    m = flow.nn.Linear(5, 2)
    f = flow.jit(lambda x: m(x).relu())
    x = flow.tensor(XN)
    ref = f(x).detach().numpy()
    with flow.lazy():
        y = f(x) * 2.0
    _close(y.detach().numpy(), ref * 2)


def test_a_failing_segment_raises_on_every_read():
    x = flow.tensor(XN)
    with flow.lazy():
        y = x * 2.0
        node = seg.active().nodes[-1]
        seg.active().nodes[-1] = (lambda *a: (_ for _ in ()).throw(ValueError("boom")),
                                  *node[1:])
        with pytest.raises(ValueError, match="boom"):
            y.numpy()
        with pytest.raises(RuntimeError, match="never computed"):
            y.numpy()


def test_views_of_pending_results():
    x = flow.tensor(XN)
    with flow.lazy():
        y = (x * 2.0).reshape(-1)  # a view of a value still pending
        z = y[3:9]
        w = z + 1.0
        y.mul_(0.5)  # (written through to its base)
    _close(w.numpy(), (XN * 2).reshape(-1)[3:9] + 1)
    _close(y.numpy(), XN.reshape(-1))


def test_pending_tensors_cross_into_jax():
    import jax
    x = flow.tensor(XN)
    with flow.lazy():
        y = x * 2.0
        out = jax.jit(lambda t: t * 3.0)(y)  # a jflow tensor argument of a jax.jit
        leaves = jax.tree_util.tree_leaves(x + 1.0)
    _close(out.numpy(), XN * 6)
    assert len(leaves) == 1
    _close(np.asarray(leaves[0]), XN + 1)


def test_compiled_segments_are_bounded_by_the_cache_limit():
    x = flow.tensor(XN)
    old = flow.config.set_cache_limit("lazy_segments", 2)
    try:
        for k in range(5):
            for _ in range(2):  # (the second sighting compiles)
                with flow.lazy():
                    y = x
                    for _ in range(k + 2):  # (two ops at least: one op never compiles)
                        y = y * 1.5
                _close(y.numpy(), XN * 1.5 ** (k + 2), tol=1e-4)
            assert len(cc._CACHE) <= 2
    finally:
        flow.config.set_cache_limit("lazy_segments", old)


def _scaled_sum(n: int, explain: bool = False) -> float:
    with flow.lazy(explain=explain):
        y = (flow.tensor(np.ones(n, np.float32)) * 2.0).sum()
    return y.item()


def test_compile_on_the_second_sighting(monkeypatch):
    """Policy 2: a shape seen once runs op by op (no compile); a shape seen twice compiles,
    and the reason says what changed since the last compiled segment."""
    monkeypatch.setattr(cc, "COMPILE_ON_SIGHTING", 2)
    before = seg.stats()["compiles"]
    for n in range(3, 9):  # a new shape every step: nothing compiles
        assert _scaled_sum(n) == 2.0 * n
    assert seg.stats()["compiles"] == before
    with pytest.warns(RecompileWarning, match=r"input 0: float32\[4\] \(was float32\[3\]\)"):
        for n in (3, 3, 4, 4):
            assert _scaled_sum(n, explain=True) == 2.0 * n
    assert seg.stats()["compiles"] == before + 2
    assert "ran a second time" in flow.lazy_mode.recompile_reasons()[-1]


def test_adaptive_policy_compiles_new_shapes_at_once_and_new_arrangements_later():
    """The default: a segment with ops on shapes never seen compiles on its first sighting
    (op by op would compile each op); known ops on known shapes in a new arrangement run
    op by op first."""
    assert cc.COMPILE_ON_SIGHTING == "adaptive"
    x = flow.tensor(RS.randn(7, 13).astype(np.float32))  # (shapes no other test uses)
    before = seg.stats()
    with flow.lazy():
        a = (x * 3.0).tanh()
    _close(a.numpy(), np.tanh(x.numpy() * 3.0), 1e-5)
    mid = seg.stats()
    assert mid["compiles"] - before["compiles"] == 1 and mid["eager_flushes"] == \
        before["eager_flushes"]
    assert "has ops on new shapes" in flow.lazy_mode.recompile_reasons()[-1]
    with flow.lazy():  # the same ops and shapes, another arrangement: op by op
        b = (x.tanh() * 3.0).tanh()
    _close(b.numpy(), np.tanh(np.tanh(x.numpy()) * 3.0), 1e-5)
    after = seg.stats()
    assert after["compiles"] == mid["compiles"]
    assert after["eager_flushes"] == mid["eager_flushes"] + 1


def test_global_tensors_record_and_match_eager():
    """Ops on global tensors record their sharded executables: the segment runs as one jit
    over them; values, SBP and gradients are eager's."""
    plc = flow.placement("cpu", ranks=list(range(8)))
    xn, wn = RS.randn(16, 8).astype(np.float32), RS.randn(8, 4).astype(np.float32)

    def run(lazy):
        gx = flow.tensor(xn).to_global(plc, flow.sbp.split(0))
        gw = flow.tensor(wn).to_global(plc, flow.sbp.broadcast).requires_grad_()
        with flow.lazy(lazy):
            y = (gx @ gw).tanh()
            s = (y * y).sum()
            if lazy:
                assert lv.raw(y).__class__ is lv.LazyRef  # recorded, not run
            s.backward()
        return y, s, gw.grad

    for a, b in zip(run(True), run(False)):
        assert a.sbp == b.sbp and a.placement == b.placement
        _close(a.detach().numpy(), b.detach().numpy(), tol=1e-4)


def test_hooks_run_and_match_eager():
    """Tensor and module hooks see the same values in lazy mode (a hook that reads a value
    runs the pending ops; one that only transforms records too)."""
    def run(lazy):
        flow.manual_seed(0)
        lin = flow.nn.Linear(5, 3)
        seen = []
        lin.register_forward_hook(lambda m, i, o: seen.append(float(o.sum())))
        x = flow.tensor(XN, requires_grad=True)
        with flow.lazy(lazy):
            h = lin(x)
            h.register_hook(lambda g: g * 2.0)
            (h * h).sum().backward()
        return seen, x.grad.numpy(), lin.weight.grad.numpy()

    (s1, g1, w1), (s2, g2, w2) = run(True), run(False)
    _close(s1, s2)
    _close(g1, g2)
    _close(w1, w2)


@pytest.mark.parametrize("name", ["hardshrink", "softshrink"])
def test_a_backward_whose_rule_computes_on_constants(name):
    """The shrink rules compute ``neg(lambd)`` on a constant while the compiled backward is
    traced: that op runs, it is not recorded into the segment the backward is being added
    to (a later read in the same trace would flush the segment halfway through the call)."""
    def run(lazy):
        x = flow.tensor(XN, requires_grad=True)
        with flow.lazy(lazy):
            y = getattr(F, name)(x, lambd=0.7)
            first = y.detach().numpy()  # (a flush: the backward starts a new segment)
            (y * y).sum().backward()
        return first, x.grad.numpy()

    for a, b in zip(run(True), run(False)):
        _close(a, b)


def test_host_data_and_single_ops_never_compile_a_segment():
    """A transfer is not a computation, and a segment of one op has nothing to fuse: new
    tensors of varying shapes read at once, and one op read at once, compile nothing, on
    the first sighting or any later one (a compile per shape would be a storm)."""
    x = flow.tensor(XN)
    before = seg.stats()["compiles"]
    for _ in range(2):
        for n in range(2, 6):
            with flow.lazy():
                a = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
                t = flow.tensor(a)
                a[0, 0] = -1.0  # (the tensor holds a copy)
                assert t.numpy()[0, 0] == 0.0
                _close((x * float(n)).numpy(), XN * n)
    assert seg.stats()["compiles"] == before


@pytest.mark.parametrize("ops", [1, 3])
def test_a_pending_value_read_inside_a_compiled_function(ops):
    """A pending tensor captured by ``flow.jit`` is read while the function is traced: the
    segment runs (node by node or compiled) as computation, not staged into that trace."""
    x = flow.tensor(XN)
    with flow.lazy():
        c = flow.tensor(np.ones(5, np.float32))
        for _ in range(ops):
            c = c * 2.0
        f = flow.jit(lambda t: t + c)
        out = f(x)
        _close(out.numpy(), XN + 2.0 ** ops)
        _close(c.numpy(), np.full(5, 2.0 ** ops))


def test_an_eager_backward_pays_nothing_for_lazy_mode(monkeypatch):
    """After lazy mode was used, an eager backward walks its graph for values saved while
    pending only when a node of it was recorded in a lazy window
    (jflow.lazy_mode.backward.prepare); a graph recorded in lazy mode and differentiated
    after it still gets its saved values computed."""
    from jflow.lazy_mode import backward as lb

    x = flow.tensor(np.arange(4.0, dtype=np.float32), requires_grad=True)
    with flow.lazy():
        y = (x * x).sin()  # (saves its input while pending)
    walked = []
    real = lb.resolve_saved
    monkeypatch.setattr(lb, "resolve_saved", lambda order: (walked.append(len(order)),
                                                             real(order)))
    y.sum().backward()  # (nodes from the window: walked, values computed)
    assert walked and np.allclose(x.grad.numpy(), np.cos(np.arange(4.0) ** 2) * 2 *
                                  np.arange(4.0), rtol=1e-5)
    walked.clear()
    x.grad = None
    ((x * 0.3).tanh()).sum().backward()  # (a graph recorded after the window: not walked)
    assert walked == []
    assert np.allclose(x.grad.numpy(), 0.3 / np.cosh(0.3 * np.arange(4.0)) ** 2, rtol=1e-5)


def test_every_bounded_lazy_cache_is_listed_and_bounds():
    """flow.config.cache_limits() lists the caches lazy mode and host transfer keep, and a
    lowered bound holds: recorded calls' avals, backward templates, device scalars."""
    import importlib

    from jflow.lazy_mode import backward as lb

    dev = importlib.import_module("jflow.device")  # (the module, not the class)
    limits = flow.config.cache_limits()
    assert {"lazy_segments", "lazy_avals", "lazy_backward_templates", "host_transfer_shapes",
            "device_scalars"} <= set(limits)
    olds = {n: flow.config.set_cache_limit(n, 3) for n in
            ("lazy_avals", "lazy_backward_templates", "device_scalars")}
    try:
        for n in range(1, 7):
            x = flow.ones(n, requires_grad=True)
            with flow.lazy():
                (x * 2.5).sum().backward()  # (a new shape: new avals, a new template)
            dev.device_scalar(float(n), np.float32)
            assert len(seg._AVALS) <= 3 and len(lb.TEMPLATES) <= 3 and len(dev._SCALARS) <= 3
    finally:
        for n, v in olds.items():
            flow.config.set_cache_limit(n, v)
