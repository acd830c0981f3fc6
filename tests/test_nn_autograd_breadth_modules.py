"""PyTorch modules jflow lacked, against PyTorch with the same weights: the lazy modules
(``UninitializedParameter`` / ``UninitializedBuffer``, ``LazyLinear``, ``LazyConv*``,
``LazyConvTranspose*``, ``LazyBatchNorm*``, ``LazyInstanceNorm*``), ``AdaptiveLogSoftmaxWithLoss``,
``NLLLoss2d``, ``CrossMapLRN2d``, ``Container``, ``DataParallel`` / ``data_parallel`` and
``optim.Muon``.
"""

from __future__ import annotations

import copy
import re
import warnings

import numpy as np
import pytest

import jflow as flow
from jflow.optim.muon import Muon

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:Lazy modules are a new feature")


def _np(t):
    return t.detach().numpy()


def _load_from_torch(mf, mt):
    mf.load_state_dict({k: flow.tensor(v.numpy()) for k, v in mt.state_dict().items()})


def _repr(m):
    return re.sub(r"\btorch\.|\bflow\.", "", repr(m))


# -- lazy modules ----------------------------------------------------------------------------------

def test_lazy_linear_as_pytorch():
    x = np.random.default_rng(0).standard_normal((2, 5))
    mods = {}
    for lib in (flow, torch):
        nn = lib.nn
        m = nn.LazyLinear(3)
        assert _repr(m) == "LazyLinear(in_features=0, out_features=3, bias=True)"
        assert isinstance(m.weight, nn.UninitializedParameter)
        assert isinstance(m.weight, nn.Parameter) and m.has_uninitialized_params()
        assert repr(m.weight) == "<UninitializedParameter>"
        sd = m.state_dict()
        assert list(sd) == ["weight", "bias"] and sd["weight"] is m.weight
        with pytest.raises(RuntimeError, match=re.escape(
                "Can't access the shape of an uninitialized parameter or buffer. This error "
                "usually happens in `load_state_dict`")):
            m.weight.shape  # noqa: B018
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
            m.weight + 1
        assert tuple(m.weight.size()) == (0,)
        opt = lib.optim.SGD(m.parameters(), lr=0.5)  # (before the dry run: works in both)
        w = m.weight
        m.double()  # (before the first call: dtype conversions keep it uninitialized)
        assert isinstance(m.weight, nn.UninitializedParameter) and m.weight.dtype == lib.float64
        y = m(lib.tensor(x))
        assert type(m) is nn.Linear
        assert type(m.weight) is nn.Parameter and m.weight is w  # materialized in place
        assert tuple(m.weight.shape) == (3, 5) and m.in_features == 5
        assert m.weight.dtype == lib.float64 and y.dtype == lib.float64
        assert _repr(m) == "Linear(in_features=5, out_features=3, bias=True)"
        assert not hasattr(m, "_initialize_hook") and not hasattr(m, "_load_hook")
        mods[lib] = (m, opt)
    # the same weights: the same outputs, and the optimizer built before the call steps them
    (mf, of), (mt, ot) = mods[flow], mods[torch]
    _load_from_torch(mf, mt)
    for m, o, lib in ((mf, of, flow), (mt, ot, torch)):
        (m(lib.tensor(x)) ** 2).sum().backward()
        o.step()
    for k in ("weight", "bias"):
        np.testing.assert_allclose(_np(getattr(mf, k)), _np(getattr(mt, k)), rtol=1e-12)


def test_lazy_state_dict_loading_as_pytorch():
    for lib in (flow, torch):
        nn = lib.nn
        full = nn.LazyLinear(3)
        full(lib.ones(2, 4))
        lazy = nn.LazyLinear(3)
        lazy.load_state_dict(full.state_dict())  # materializes with the checkpoint's shapes
        assert type(lazy) is nn.LazyLinear and not lazy.has_uninitialized_params()
        np.testing.assert_array_equal(_np(lazy.weight), _np(full.weight))
        lazy(lib.ones(1, 4))
        assert type(lazy) is nn.Linear
        np.testing.assert_array_equal(_np(lazy.weight), _np(full.weight))  # not re-drawn
        nn.LazyLinear(3).load_state_dict(nn.LazyLinear(3).state_dict())  # both uninitialized
        with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
            nn.Linear(4, 3).load_state_dict(nn.LazyLinear(3).state_dict())
        c = copy.deepcopy(nn.LazyLinear(3, dtype=lib.float64))
        assert isinstance(c.weight, nn.UninitializedParameter) and c.weight.dtype == lib.float64


_CONVS = [("LazyConv1d", (2, 4, 7), dict(out_channels=4, kernel_size=3, groups=2)),
          ("LazyConv2d", (1, 3, 5, 5), dict(out_channels=2, kernel_size=3, padding=1)),
          ("LazyConv3d", (3, 4, 4, 4), dict(out_channels=2, kernel_size=2)),  # unbatched
          ("LazyConvTranspose1d", (2, 4, 5), dict(out_channels=6, kernel_size=3, groups=2)),
          ("LazyConvTranspose2d", (1, 3, 4, 4), dict(out_channels=2, kernel_size=3, stride=2)),
          ("LazyConvTranspose3d", (1, 2, 3, 3, 3), dict(out_channels=2, kernel_size=2))]


@pytest.mark.parametrize("name,shape,kw", _CONVS, ids=[c[0] for c in _CONVS])
def test_lazy_convolutions_as_pytorch(name, shape, kw):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    got = {}
    for lib in (flow, torch):
        m = getattr(lib.nn, name)(**kw)
        assert m.in_channels == 0 and m.has_uninitialized_params()
        before = _repr(m)
        m(lib.tensor(x))
        assert type(m) is getattr(lib.nn, name[4:])
        got[lib] = (m, before, _repr(m), tuple(m.weight.shape), tuple(m.bias.shape))
    (mf, *rf), (mt, *rt) = got[flow], got[torch]
    assert rf == rt
    _load_from_torch(mf, mt)
    np.testing.assert_allclose(_np(mf(flow.tensor(x))), _np(mt(torch.tensor(x))), rtol=1e-5,
                               atol=1e-6)


def test_lazy_conv_errors_as_pytorch():
    for lib in (flow, torch):
        with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
            lib.nn.LazyConv2d(4, 3, groups=2)(lib.ones(1, 3, 5, 5))
        with pytest.raises(RuntimeError, match=re.escape(
                "Expected 3D (unbatched) or 4D (batched) input to LazyConv2d, but got input of "
                "size: ")):
            lib.nn.LazyConv2d(4, 3)(lib.ones(5, 5))


@pytest.mark.parametrize("name,shape", [("LazyBatchNorm1d", (4, 3)),
                                        ("LazyBatchNorm2d", (2, 3, 2, 2)),
                                        ("LazyInstanceNorm1d", (2, 3, 4)),
                                        ("LazyInstanceNorm2d", (2, 3, 2, 3))])
def test_lazy_norms_as_pytorch(name, shape):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    got = {}
    for lib in (flow, torch):
        m = getattr(lib.nn, name)(momentum=0.3)
        sd = m.state_dict()
        assert list(sd) == ["weight", "bias", "running_mean", "running_var",
                            "num_batches_tracked"]
        assert [repr(v) for v in list(sd.values())[:4]] == ["<UninitializedParameter>"] * 2 \
            + ["<UninitializedBuffer>"] * 2
        assert isinstance(m.running_mean, lib.nn.UninitializedBuffer)
        assert m.affine and m.track_running_stats  # (PyTorch's lazy defaults, both families)
        y = m(lib.tensor(x))
        assert type(m) is getattr(lib.nn, name[4:])
        assert type(m.running_mean) is lib.Tensor
        got[lib] = (_np(y), {k: v.numpy() for k, v in m.state_dict().items()})
    assert got[flow][1].keys() == got[torch][1].keys()
    for k in got[flow][1]:
        np.testing.assert_allclose(got[flow][1][k], got[torch][1][k], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[flow][0], got[torch][0], rtol=1e-5, atol=1e-5)


def test_lazy_module_inside_a_trace_asks_for_a_dry_run():
    m = flow.nn.LazyLinear(3)
    with pytest.raises(RuntimeError, match="call it once eagerly"):
        flow.func.grad(lambda x: m(x).sum())(flow.ones(2, 4))

    @flow.jit
    def step(x):
        return m(x).sum()
    with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
        step(flow.ones(2, 4))
    m(flow.ones(2, 4))  # the dry run
    assert step(flow.ones(2, 4)).item() == pytest.approx(m(flow.ones(2, 4)).sum().item())


def test_uninitialized_buffer_registers_as_pytorch():
    for lib in (flow, torch):
        m = lib.nn.Module()
        m.b = lib.nn.UninitializedBuffer()
        assert "b" in dict(m.named_buffers())
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
            m.state_dict()  # (a plain module detaches it: only lazy modules keep it)
        m.b.materialize((2, 3))
        assert type(m.b) is lib.Tensor and tuple(m.b.shape) == (2, 3)
        p = lib.nn.UninitializedParameter(dtype=lib.float64)
        p.materialize((4,))
        assert type(p) is lib.nn.Parameter and p.dtype == lib.float64 and p.requires_grad


# -- AdaptiveLogSoftmaxWithLoss --------------------------------------------------------------------

def _asm_pair(**kw):
    torch.manual_seed(0)
    mt = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 12], **kw)
    mf = flow.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 12], **kw)
    assert list(mf.state_dict()) == list(mt.state_dict())
    _load_from_torch(mf, mt)
    return mf, mt


def test_adaptive_log_softmax_as_pytorch():
    mf, mt = _asm_pair(div_value=2.0, head_bias=True)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 8)).astype(np.float32)
    tgt = np.array([0, 4, 5, 11, 12, 19])
    xf, xt = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    of, ot = mf(xf, flow.tensor(tgt)), mt(xt, torch.tensor(tgt))
    assert of._fields == ot._fields == ("output", "loss")
    np.testing.assert_allclose(_np(of.output), _np(ot.output), rtol=1e-5, atol=1e-6)
    assert of.loss.item() == pytest.approx(ot.loss.item(), rel=1e-6)
    of.loss.backward()
    ot.loss.backward()
    np.testing.assert_allclose(xf.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-7)
    for n, p in mt.named_parameters():
        np.testing.assert_allclose(dict(mf.named_parameters())[n].grad.numpy(), p.grad.numpy(),
                                   rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(_np(mf.log_prob(xf)), _np(mt.log_prob(xt)), rtol=1e-5, atol=1e-6)
    # predict: push some rows' head choice into a cluster so both of PyTorch's branches run
    with torch.no_grad():
        mt.head.bias[5] += 1.5
    _load_from_torch(mf, mt)
    pt, pf = mt.predict(xt).numpy(), mf.predict(xf).numpy()
    assert pf.tolist() == pt.tolist() and (pt >= 5).any() and (pt < 5).any()
    # unbatched
    o1f, o1t = mf(xf[0], flow.tensor(tgt[3])), mt(xt[0], torch.tensor(tgt[3]))
    assert o1f.output.shape == () and o1f.output.item() == pytest.approx(o1t.output.item(),
                                                                         rel=1e-5)
    # static shapes: it traces (flow.jit), one program for any targets
    step = flow.jit(lambda a, b: mf(a, b).loss)
    for t in (tgt, tgt[::-1].copy()):
        assert step(flow.tensor(x), flow.tensor(t)).item() == pytest.approx(
            mt(torch.tensor(x), torch.tensor(t)).loss.item(), rel=1e-5)


def test_adaptive_log_softmax_errors_as_pytorch():
    mf, mt = _asm_pair(div_value=2.0)
    for m, lib in ((mf, flow), (mt, torch)):
        x = lib.ones(3, 8)
        with pytest.raises(RuntimeError, match=re.escape(
                "Target values should be in [0, 19], but values in range [0, 20] were found.")):
            m(x, lib.tensor([0, 1, 20]))
        with pytest.raises(RuntimeError, match="Input and target should have the same size"):
            m(x, lib.tensor([0, 1]))
        with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
            m(x, lib.zeros(3, 1, dtype=lib.int64))
        with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 5])
        with pytest.raises(ValueError, match="cutoffs should be a sequence of length larger"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [])
        with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
            lib.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 12])  # (8 // 4**2 == 0 features)


# -- NLLLoss2d, CrossMapLRN2d, Container ----------------------------------------------------------

def test_nll_loss_2d_as_pytorch():
    rng = np.random.default_rng(4)
    x = np.log(rng.random((2, 3, 2, 2)).astype(np.float32))
    t = rng.integers(0, 3, (2, 2, 2))
    w = np.array([1.0, 2.0, 0.5], np.float32)
    vals = []
    for lib in (flow, torch):
        with pytest.warns(FutureWarning, match=re.escape(
                "`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in "
                "replacement")):
            m = lib.nn.NLLLoss2d(lib.tensor(w))
        assert isinstance(m, lib.nn.NLLLoss)
        vals.append(m(lib.tensor(x), lib.tensor(t)).item())
        with pytest.warns(UserWarning, match=re.escape(
                "size_average and reduce args will be deprecated, please use reduction='sum' "
                "instead.")), pytest.warns(FutureWarning):
            s = lib.nn.NLLLoss2d(size_average=False)
        assert s.reduction == "sum"
        vals.append(s(lib.tensor(x), lib.tensor(t)).item())
    assert vals[:2] == pytest.approx(vals[2:], rel=1e-6)


@pytest.mark.parametrize("size", [3, 4])
def test_cross_map_lrn2d_as_pytorch(size):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 7, 3, 4)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    out = []
    for lib in (flow, torch):
        m = lib.nn.CrossMapLRN2d(size, alpha=1e-2, beta=0.75, k=2)
        assert repr(m) == f"CrossMapLRN2d({size}, alpha=0.01, beta=0.75, k=2)"
        xt = lib.tensor(x, requires_grad=True)
        y = m(xt)
        y.backward(lib.tensor(g))
        out.append((_np(y), xt.grad.numpy()))
        with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D "
                                             "instead."):
            m(lib.ones(2, 3, 4))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-5, atol=1e-6)
    assert np.abs(out[0][0] - x / 2 ** 0.75).max() > 1e-3  # (the normalisation did something)


def test_container_registers_its_keywords_and_warns():
    msg = re.escape("`nn.Container` is deprecated. All of its functionality is now implemented "
                    "in `nn.Module`. Subclass that instead.")
    for lib in (flow, torch):
        with pytest.warns(FutureWarning, match=msg):
            c = lib.nn.Container(a=lib.nn.Linear(2, 3), b=lib.nn.ReLU())
        assert list(dict(c.named_children())) == ["a", "b"]
        assert list(c.state_dict()) == ["a.weight", "a.bias"]
        with pytest.warns(FutureWarning, match=msg):
            class Sub(lib.nn.Container):
                pass
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            Sub()  # (only the subclassing warns, as PyTorch's)


# -- DataParallel ----------------------------------------------------------------------------------

@pytest.mark.skipif(flow.cuda.is_available(), reason="the CPU-only behaviour")
def test_data_parallel_without_gpu_is_a_pass_through():
    x = np.random.default_rng(6).standard_normal((2, 3)).astype(np.float32)
    outs = []
    for lib in (flow, torch):
        inner = lib.nn.Linear(3, 2)
        dp = lib.nn.DataParallel(inner)
        assert dp.module is inner and dp.device_ids == []
        assert not hasattr(dp, "dim") and not hasattr(dp, "output_device")
        assert list(dp.state_dict()) == ["module.weight", "module.bias"]
        assert isinstance(dp, lib.nn.parallel.DataParallel)
        outs.append(dp)
        with pytest.raises(RuntimeError, match="device type could not be determined"):
            lib.nn.parallel.data_parallel(inner, lib.tensor(x))
    dpf, dpt = outs
    dpf.load_state_dict({k: flow.tensor(v.numpy()) for k, v in dpt.state_dict().items()})
    np.testing.assert_allclose(_np(dpf(flow.tensor(x))), _np(dpt(torch.tensor(x))), rtol=1e-6)


# -- Muon ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(lr=0.02),
                                dict(lr=0.05, nesterov=False, weight_decay=0.0,
                                     adjust_lr_fn="match_rms_adamw", momentum=0.9)])
def test_muon_steps_as_pytorch(kw):
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((6, 4)).astype(np.float32)  # tall: transposed inside
    w2 = rng.standard_normal((3, 6)).astype(np.float32)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    params, opts = {}, {}
    for lib, cls in ((flow, Muon), (torch, torch.optim.Muon)):
        params[lib] = [lib.nn.Parameter(lib.tensor(w1)), lib.nn.Parameter(lib.tensor(w2))]
        opts[lib] = cls(params[lib], **kw)
    for _ in range(3):
        for lib in (flow, torch):
            p1, p2 = params[lib]
            loss = ((lib.tanh(lib.tensor(x) @ p1.T) @ p2.T) ** 2).sum()
            opts[lib].zero_grad()
            loss.backward()
            opts[lib].step()
    for pf, pt, w in zip(params[flow], params[torch], (w1, w2)):
        moved = np.abs(_np(pt) - w).max()
        assert moved > 1e-2  # (a wrong update would show far above the tolerance)
        np.testing.assert_allclose(_np(pf), _np(pt), rtol=0, atol=1e-6)
    bf = opts[flow].state[params[flow][0]]["momentum_buffer"]
    bt = opts[torch].state[params[torch][0]]["momentum_buffer"]
    np.testing.assert_allclose(_np(bf), _np(bt), rtol=1e-5, atol=1e-6)


def test_muon_errors_as_pytorch():
    for lib, cls in ((flow, Muon), (torch, torch.optim.Muon)):
        with pytest.raises(ValueError, match=r"Muon only supports 2D parameters whereas we found "
                                             r"a parameter with size"):
            cls([lib.nn.Parameter(lib.ones(3))])
        with pytest.raises(ValueError, match="Adjust learning rate function x is not supported"):
            cls([lib.nn.Parameter(lib.ones(2, 2))], adjust_lr_fn="x")
        with pytest.raises(ValueError, match="momentum should be >= 0 but is: -1"):
            cls([lib.nn.Parameter(lib.ones(2, 2))], momentum=-1)
