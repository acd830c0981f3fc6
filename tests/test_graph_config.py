"""``nn.Graph.config`` (OneFlow's GraphConfig) and ``Graph.debug``: each honoured option equals
its eager equivalent — AMP against ``flow.autocast`` (and the grad scaler against
``flow.amp.GradScaler``), gradient accumulation against eager micro-steps, ZeRO stages 1 and 2
against the unsharded data-parallel step on 8 virtual CPU devices — and every option jflow
cannot honour raises naming it (docs/compile.md "nn.Graph config")."""

import numpy as np
import pytest

import jflow as flow
import jflow.nn as nn
import jflow.nn.functional as F
from jflow.compiler import graph as graph_mod
from jflow.compiler.graph_config import PERFORMANCE_HINTS, UNSUPPORTED

RS = np.random.RandomState(0)
X = RS.randn(8, 6).astype(np.float32)
Y = RS.randn(8, 3).astype(np.float32)


def _model() -> nn.Module:
    flow.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))


def _w(m: nn.Module) -> list[np.ndarray]:
    return [p.detach().numpy() for p in m.parameters()]


class Step(nn.Graph):
    def __init__(self, model, opt, *, amp=None, acc=1, scaler=None, zero=0, outputs=False):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)
        self.outputs = outputs
        if amp is not None:
            self.config.enable_amp(True, dtype=amp)
        if acc > 1:
            self.config.set_gradient_accumulation_steps(acc)
        if scaler is not None:
            self.set_grad_scaler(scaler)
        if zero:
            self.config.enable_zero(True, stage=zero, shard_min_size=8)

    def build(self, x, y):
        pred = self.model(x)
        loss = F.mse_loss(pred, y)
        loss.backward()
        return (loss, pred) if self.outputs else loss


def test_graph_lives_in_compiler_and_nn_reexports_it() -> None:
    assert nn.Graph is graph_mod.Graph is flow.nn.graph.Graph
    g = Step(_model(), flow.optim.SGD(_model().parameters(), lr=0.1))
    assert isinstance(g.config, flow.nn.graph.GraphConfig) and g.config.training


def test_config_refuses_what_it_cannot_honour() -> None:
    m = _model()
    g = Step(m, flow.optim.SGD(m.parameters(), lr=0.1))
    for name in UNSUPPORTED:
        with pytest.raises(NotImplementedError, match=rf"Step\.config\.{name}\(\)"):
            getattr(g.config, name)(True)
    for name in PERFORMANCE_HINTS:  # no effect on any value: recorded only
        getattr(g.config, name)(True)
    assert set(g.config.hints) == set(PERFORMANCE_HINTS)
    with pytest.raises(NotImplementedError, match=r"Step\.config\.enable_zero\(\): stage=3"):
        g.config.enable_zero(True, stage=3)
    with pytest.raises(NotImplementedError, match="shard_restore_level=2"):
        g.config.enable_zero(True, shard_restore_level=2)
    with pytest.raises(ValueError, match="stage must be 1, 2 or 3"):
        g.config.enable_zero(True, stage=0)
    with pytest.raises(ValueError, match=r"Step\.config\.enable_amp\(\): dtype must be"):
        g.config.enable_amp(True, dtype=flow.float32)
    with pytest.raises(TypeError, match="mode must be a bool"):
        g.config.enable_amp(1)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match=r"Step\.config\.set_gradient_accumulation_steps"
                                             r"\(\): value must be a positive int"):
            g.config.set_gradient_accumulation_steps(bad)
    with pytest.raises(TypeError, match=r"Step\.set_grad_scaler\(\)"):
        g.set_grad_scaler(2.0 ** 16)
    with pytest.raises(ValueError, match=r"Step\.debug\(\): v_level"):
        g.debug(-3)
    class Runtime(nn.Graph):
        def __init__(self, **kw):
            super().__init__(**kw)

        def build(self, x):
            return x
    with pytest.raises(NotImplementedError, match=r"Runtime\.__init__\(\): "
                                                  r"enable_get_runtime_state_dict=True"):
        Runtime(enable_get_runtime_state_dict=True)
    assert Runtime(debug_v_level=1, debug_ranks=0)._debug == 1
    # ZeRO needs a data-parallel (global) step
    g.config.enable_zero(True, stage=1)
    with pytest.raises(RuntimeError, match=r"Step\.config\.enable_zero\(\).*local tensors"):
        g(flow.tensor(X), flow.tensor(Y))
    assert g.trace_count == 0


def _eager_amp(dtype, steps, scaler=None):
    m = _model()
    opt = flow.optim.Adam(m.parameters(), lr=1e-2)
    losses, scales = [], []
    for _ in range(steps):
        with flow.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            loss = F.mse_loss(m(flow.tensor(X)), flow.tensor(Y))
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            scales.append(scaler.get_scale())
        opt.zero_grad()
        losses.append(float(loss.detach().numpy()))
    return losses, _w(m), scales


@pytest.mark.parametrize("dtype", [flow.float16, flow.bfloat16])
def test_amp_equals_eager_autocast(dtype) -> None:
    m = _model()
    g = Step(m, flow.optim.Adam(m.parameters(), lr=1e-2), amp=dtype)
    losses = [float(g(flow.tensor(X), flow.tensor(Y)).numpy()) for _ in range(3)]
    ref, ref_w, _ = _eager_amp(dtype, 3)
    fp32, fp32_w, _ = _eager_amp(None, 3)
    np.testing.assert_allclose(losses, ref, rtol=1e-6)
    # the step rounds each low-precision result as eager ops do (no excess precision)
    for a, b in zip(_w(m), ref_w):
        np.testing.assert_allclose(a, b, atol=1e-7)
    # and it is not the float32 step
    assert max(abs(a - b) for a, b in zip(losses, fp32)) > 1e-4
    assert max(np.abs(a - b).max() for a, b in zip(_w(m), fp32_w)) > 1e-5
    assert g.trace_count == 1


# (the eager reference's float16 loss times 2**18 overflows in NumPy's cast: that is the point)
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_grad_scaler_equals_eager_grad_scaler() -> None:
    # 2**18 overflows float16 gradients: the first steps are skipped and the scale backs off,
    # then grows every 2 finite steps, exactly as the eager scaler does
    kw = dict(init_scale=2.0 ** 18, growth_interval=2)
    m = _model()
    g = Step(m, flow.optim.Adam(m.parameters(), lr=1e-2), amp=flow.float16,
             scaler=flow.amp.GradScaler(**kw))
    losses, scales = [], []
    for _ in range(8):
        losses.append(float(g(flow.tensor(X), flow.tensor(Y)).numpy()))
        scales.append(g.grad_scale)
    ref, ref_w, ref_scales = _eager_amp(flow.float16, 8, flow.amp.GradScaler(**kw))
    assert scales == ref_scales
    assert scales[0] < 2.0 ** 18 and max(scales[2:]) > min(scales)  # skipped, then grew
    assert losses[0] == losses[1] and losses[-1] < losses[0]  # skipped steps changed nothing
    np.testing.assert_allclose(losses, ref, rtol=1e-6)
    for a, b in zip(_w(m), ref_w):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert g.trace_count == 1  # the scale is state: changing it never recompiles


def test_gradient_accumulation_equals_eager_micro_steps(capsys) -> None:
    n = 4
    m = _model()
    opt = flow.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    g = Step(m, opt, acc=n, outputs=True)
    got = [g(flow.tensor(X), flow.tensor(Y)) for _ in range(2)]
    # the eager reference: OneFlow scales each micro-batch's loss by 1/n, sums the
    # gradients and steps once per call
    r = _model()
    ropt = flow.optim.SGD(r.parameters(), lr=0.1, momentum=0.9)
    ref_losses, ref_preds = [], []
    for _ in range(2):
        for i in range(n):
            xs, ys = flow.tensor(X[2 * i:2 * i + 2]), flow.tensor(Y[2 * i:2 * i + 2])
            pred = r(xs)
            loss = F.mse_loss(pred, ys)
            (loss * (1.0 / n)).backward()
            ref_losses.append(float(loss.detach().numpy()))
            ref_preds.append(pred.detach().numpy())
        ropt.step()
        ropt.zero_grad()
    for k, (loss, pred) in enumerate(got):
        assert list(loss.shape) == [n]  # one loss per micro-batch, packed as OneFlow does
        assert list(pred.shape) == [8, 3]  # other outputs concatenated along dim 0
        np.testing.assert_allclose(loss.numpy(), ref_losses[k * n:(k + 1) * n], rtol=1e-6)
        np.testing.assert_allclose(pred.numpy(), np.concatenate(ref_preds[k * n:(k + 1) * n]),
                                   rtol=1e-6, atol=1e-6)
    for a, b in zip(_w(m), _w(r)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    # not one big-batch step either: differs from the unaccumulated step's weights
    assert g.trace_count == 1
    with pytest.raises(ValueError, match=r"Step\(\): argument 0 has 6 rows along dim 0, not "
                                         r"divisible by config\.set_gradient_accumulation_"
                                         r"steps\(4\)"):
        g(flow.tensor(X[:6]), flow.tensor(Y[:6]))
    with pytest.raises(ValueError, match=r"Step\(\): argument 1 is 0-d"):
        g(flow.tensor(X), flow.tensor(1.0))
    # debug(1): the next compile prints its reason and the traced ops
    g.debug(1)
    g(flow.tensor(X[:4]), flow.tensor(Y[:4]))
    out = capsys.readouterr().out
    assert "[Step] compiled (trace 2)" in out
    assert "recompile reason: argument leaf 0 changed: Tensor[8, 6] float32 -> Tensor[4, 6]" \
        in out
    assert "gradient accumulation steps=4" in out
    assert "jflow.linear x8" in out  # 2 layers x 4 micro-batches
    g(flow.tensor(X[:4]), flow.tensor(Y[:4]))
    assert capsys.readouterr().out == ""  # no compile, nothing printed
    g.debug(-1)


P8 = flow.placement("cpu", list(range(8)))
BIG = RS.randn(64, 16).astype(np.float32), RS.randn(64, 8).astype(np.float32)


def _dp_model() -> tuple[nn.Module, flow.optim.Optimizer]:
    flow.manual_seed(0)
    m = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 8))
    for mod in m.modules():
        for k, p in list(mod._parameters.items()):
            mod._parameters[k] = nn.Parameter(p.to_global(P8, flow.sbp.broadcast))
    return m, flow.optim.AdamW(m.parameters(), lr=1e-2)


def test_zero_stages_equal_the_unsharded_step(capsys) -> None:
    x = flow.tensor(BIG[0]).to_global(P8, flow.sbp.split(0))
    y = flow.tensor(BIG[1]).to_global(P8, flow.sbp.split(0))
    runs = {}
    for stage in (0, 1, 2):
        m, opt = _dp_model()
        g = Step(m, opt, zero=stage)
        if stage == 2:
            g.debug(1)
        losses = [float(g(x, y).numpy()) for _ in range(3)]
        runs[stage] = (losses, _w(m), g.optimizer_state_bytes(), opt, g)
        assert g.trace_count == 1
    base_losses, base_w, base_bytes, base_opt, _ = runs[0]
    for stage in (1, 2):
        losses, w, nbytes, opt, _ = runs[stage]
        np.testing.assert_allclose(losses, base_losses, rtol=1e-5)
        for a, b in zip(w, base_w):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        # moments split(0) across the 8 ranks; the last layer's 8-element bias would
        # leave 1 element per shard, under shard_min_size=8: kept whole
        sbps = {(tuple(p.shape), k): v._global[1] for p, st in opt.state.items()
                for k, v in st.items() if v._global is not None}
        S0, B = (flow.sbp.split(0),), (flow.sbp.broadcast,)
        assert sbps == {(shape, k): B if shape == (8,) else S0
                        for shape in ((64, 16), (64,), (8, 64), (8,))
                        for k in ("exp_avg", "exp_avg_sq")}
        assert nbytes < base_bytes / 4  # each device holds ~1/8 of the moments
    assert all(v._global[1] == (flow.sbp.broadcast,) for st in base_opt.state.values()
               for v in st.values() if v._global is not None)
    out = capsys.readouterr().out
    assert "zero stage=2" in out and "SBP plan:" in out
    # stage 2's collectives: the weight gradients are reduce-scattered and the new
    # weights all-gathered (no all-reduce of a whole weight gradient)
    assert "reduce-scatter f32[8,16]" in out and "all-gather f32[64,16]" in out
    assert "all-reduce f32[64,16]" not in out


# (the float16 loss times 2**17 overflows in the scaled backward: the first steps are skipped)
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_everything_at_once_on_8_devices_zero_changes_nothing() -> None:
    """AMP + grad scaler + gradient accumulation on a data-parallel step: ZeRO stage 2 gives
    the unsharded step's losses, scales and weights, with a fraction of the state bytes."""
    x = flow.tensor(BIG[0]).to_global(P8, flow.sbp.split(0))
    y = flow.tensor(BIG[1]).to_global(P8, flow.sbp.split(0))
    runs = []
    for zero in (0, 2):
        m, opt = _dp_model()
        g = Step(m, opt, amp=flow.float16, acc=2, zero=zero,
                 scaler=flow.amp.GradScaler(init_scale=2.0 ** 17, growth_interval=2))
        out = []
        for _ in range(5):
            loss = g(x, y)
            out.append((loss.numpy().tolist(), g.grad_scale))
        runs.append((out, _w(m), g.optimizer_state_bytes()))
        assert g.trace_count == 1
    (a, wa, ba), (b, wb, bb) = runs
    assert [s for _, s in a] == [s for _, s in b]  # the same skips and scales
    # float16 losses: the sharded update rounds its float32 weights a few ulps apart
    np.testing.assert_allclose([v for v, _ in a], [v for v, _ in b], rtol=2e-3)
    assert [s for _, s in a] == [65536.0, 32768.0, 32768.0, 65536.0, 32768.0]
    assert len(a[0][0]) == 2 and a[0][0] == a[1][0] != a[3][0]  # skipped, then stepped
    for u, v in zip(wa, wb):
        np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-7)
    assert bb < ba / 4


def test_zero_refuses_a_2d_placement_instead_of_doing_nothing() -> None:
    lin = nn.Linear(4, 4)
    P24 = flow.placement("cpu", [[0, 1, 2, 3], [4, 5, 6, 7]])
    for k, p in list(lin._parameters.items()):
        lin._parameters[k] = nn.Parameter(p.to_global(P24, (flow.sbp.broadcast,) * 2))
    g = Step(lin, flow.optim.Adam(lin.parameters()), zero=1)
    with pytest.raises(NotImplementedError, match=r"Step\.config\.enable_zero\(\): jflow shards "
                                                  r"optimizer state across a 1-D"):
        g(flow.tensor(X), flow.tensor(Y))
    assert g.trace_count == 0
