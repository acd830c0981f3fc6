"""nn modules that need no new primitive, against PyTorch on random inputs: ParameterList /
ParameterDict, the padding layers, pixel/channel shuffle, Softmax2d, the deprecated upsampling
layers and functions, SyncBatchNorm, nn.Buffer, full backward hooks and the Module methods
get_buffer / set_submodule / named_modules. Values and gradients with identical weights,
state_dict keys (a torch state_dict loads), reprs and error types/messages.

Small shapes and shared inputs: every check is a handful of tiny ops.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
import pytest
from _pairwise import pairwise

import jflow as flow
import jflow.nn as nn
import jflow.nn.functional as F

torch = pytest.importorskip("torch")
tnn, TF = torch.nn, torch.nn.functional

RS = np.random.RandomState(0)
X3 = RS.randn(2, 3, 5).astype(np.float32)          # (N, C, W)
X4 = RS.randn(2, 3, 4, 5).astype(np.float32)       # (N, C, H, W)
X5 = RS.randn(1, 2, 3, 4, 5).astype(np.float32)    # (N, C, D, H, W)
X_SHUF = RS.randn(2, 8, 2, 3).astype(np.float32)   # 8 channels: r=2 and groups=2/4


def _both(x: np.ndarray) -> tuple:
    return flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)


def _check_fwd_bwd(fn_flow, fn_torch, x: np.ndarray, atol: float = 1e-5) -> None:
    """Same values and the same input gradient for a random output cotangent."""
    fx, tx = _both(x)
    fy, ty = fn_flow(fx), fn_torch(tx)
    assert tuple(fy.shape) == tuple(ty.shape)
    np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=atol)
    g = np.random.RandomState(1).randn(*ty.shape).astype(np.float32)
    fy.backward(flow.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=atol)


def _same_error(fn_flow, fn_torch) -> None:
    """Both raise, with the same exception type and PyTorch's first message line."""
    with pytest.raises(Exception) as te:
        fn_torch()
    with pytest.raises(type(te.value)) as fe:
        fn_flow()
    assert str(te.value).splitlines()[0] in str(fe.value)


def _repr(m) -> str:
    return repr(m).replace("torch.", "").replace("flow.", "")


# -- ParameterList / ParameterDict -----------------------------------------------------------------

P = [RS.randn(3, 2).astype(np.float32), RS.randn(2).astype(np.float32),
     RS.randn(2, 2).astype(np.float32)]


def test_parameter_list_api_names_and_repr_match_torch() -> None:
    fl = nn.ParameterList([flow.tensor(P[0]), nn.Parameter(flow.tensor(P[1]))])
    tl = tnn.ParameterList([torch.tensor(P[0]), tnn.Parameter(torch.tensor(P[1]))])
    fl.append(flow.tensor(P[2]))
    tl.append(torch.tensor(P[2]))
    assert all(isinstance(p, nn.Parameter) for p in fl)   # tensors became Parameters
    assert len(fl) == len(tl) == 3
    assert list(fl.state_dict()) == list(tl.state_dict()) == ["0", "1", "2"]
    assert [n for n, _ in fl.named_parameters()] == [n for n, _ in tl.named_parameters()]
    assert _repr(fl) == _repr(tl)
    assert fl[-1] is fl[2] and fl[0] is list(fl)[0]
    sl = fl[1:]
    assert isinstance(sl, nn.ParameterList) and len(sl) == 2 and sl[0] is fl[1]
    assert [tuple(p.shape) for p in fl[::2]] == [tuple(p.shape) for p in tl[::2]]
    fl[1] = flow.zeros(4)                                  # assignment converts too
    assert isinstance(fl[1], nn.Parameter) and tuple(fl[1].shape) == (4,)
    fl += [flow.ones(1)]
    fl.extend((flow.ones(2),))
    assert len(fl) == 5 and list(fl.state_dict())[-1] == "4"
    fl.append("not a tensor")                              # kept, not state (as torch)
    assert fl[5] == "not a tensor" and "5" not in fl.state_dict()
    assert "(5): Object of type: str" in repr(fl)
    fl.insert(0, flow.full((7,), 2.0))                     # jflow extra: renumbers
    assert tuple(fl[0].shape) == (7,) and len(fl) == 7
    assert list(fl.state_dict()) == ["0", "1", "2", "3", "4", "5"]
    with pytest.raises(IndexError, match="out of range"):
        fl[7]
    with pytest.raises(TypeError, match="should be called with an iterable"):
        fl.extend(flow.ones(2))
    with pytest.raises(RuntimeError, match="should not be called"):
        fl(1)


def test_parameter_list_loads_torch_state_dict() -> None:
    tl = tnn.ParameterList([torch.tensor(p) for p in P])
    fl = nn.ParameterList([flow.zeros(*p.shape) for p in P])
    fl.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tl.state_dict().items()})
    for a, b in zip(fl, tl):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_parameter_dict_api_order_and_errors_match_torch() -> None:
    src = {"b": P[0], "a": P[1]}
    fd = nn.ParameterDict({k: flow.tensor(v) for k, v in src.items()})
    td = tnn.ParameterDict({k: torch.tensor(v) for k, v in src.items()})
    assert list(fd) == list(td) == ["a", "b"]          # a plain dict merges sorted (torch)
    fd.update(OrderedDict([("z", flow.tensor(P[2])), ("c", flow.ones(1))]))
    td.update(OrderedDict([("z", torch.tensor(P[2])), ("c", torch.ones(1))]))
    fd.update([("y", flow.ones(2))])
    td.update([("y", torch.ones(2))])
    assert list(fd.keys()) == list(td.keys()) == ["a", "b", "z", "c", "y"]
    assert list(fd.state_dict()) == list(td.state_dict())
    assert [n for n, _ in fd.named_parameters()] == [n for n, _ in td.named_parameters()]
    assert _repr(fd).replace("FloatTensor", "float32") == _repr(td).replace("FloatTensor",
                                                                            "float32")
    assert isinstance(fd["a"], nn.Parameter) and "a" in fd and "q" not in fd
    assert fd.get("q") is None and fd.get("q", 3) == 3
    assert [k for k, _ in fd.items()] == list(fd) and len(list(fd.values())) == 5
    k, v = fd.popitem()
    assert k == "y" and tuple(v.shape) == (2,) and "y" not in fd.state_dict()
    assert fd.pop("c") is not None and list(fd) == ["a", "b", "z"]
    assert fd.setdefault("a") is fd["a"]
    assert tuple(fd.setdefault("n", flow.ones(3)).shape) == (3,)
    merged = fd | nn.ParameterDict({"m": flow.ones(1)})
    assert list(merged) == ["a", "b", "z", "n", "m"] and merged["a"] is fd["a"]
    assert list(reversed(fd)) == ["n", "z", "b", "a"]
    cp = fd.copy()
    assert cp["b"] is fd["b"]
    del fd["b"]
    assert "b" not in fd and "b" not in fd.state_dict() and "b" in cp
    with pytest.raises(KeyError):
        fd["missing"]
    with pytest.raises(TypeError, match="not a string"):
        fd[1]
    with pytest.raises(TypeError, match="iterable of key/value pairs"):
        fd.update(3)
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        fd.update([("a", 1, 2)])
    with pytest.raises(RuntimeError, match="should not be called"):
        fd(1)
    fd.clear()
    assert len(fd) == 0 and not list(fd.parameters())


def _holder(lib):
    """The same model in either library: weights in a ParameterList and a ParameterDict."""
    lnn = nn if lib is flow else tnn

    class Holder(lnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ws = lnn.ParameterList([lib.tensor(P[0]), lib.tensor(P[2][:, :1])])
            self.pd = lnn.ParameterDict({"scale": lib.tensor(P[1])})

        def forward(self, x):
            return ((x @ self.ws[0]) * self.pd["scale"]) @ self.ws[1]

    return Holder()


def test_parameter_containers_train_with_optimizer_state_dict_and_jit() -> None:
    fm, tm = _holder(flow), _holder(torch)
    assert list(fm.state_dict()) == list(tm.state_dict()) == ["ws.0", "ws.1", "pd.scale"]
    x = RS.randn(4, 3).astype(np.float32)
    fopt = flow.optim.SGD(fm.parameters(), lr=0.1)
    topt = torch.optim.SGD(tm.parameters(), lr=0.1)
    for _ in range(2):
        fopt.zero_grad()
        topt.zero_grad()
        fm(flow.tensor(x)).pow(2).sum().backward()
        tm(torch.tensor(x)).pow(2).sum().backward()
        for (n, a), (_, b) in zip(fm.named_parameters(), tm.named_parameters()):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, err_msg=n)
        fopt.step()
        topt.step()
    for a, b in zip(fm.parameters(), tm.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5)

    twin = _holder(flow)
    twin.load_state_dict({k: flow.tensor(v.numpy()) for k, v in tm.state_dict().items()})

    @flow.jit
    def step(x):
        loss = twin(x).pow(2).sum()
        loss.backward()
        return loss

    eager = _holder(flow)
    eager.load_state_dict(twin.state_dict())
    lc = step(flow.tensor(x))
    le = eager(flow.tensor(x)).pow(2).sum()
    le.backward()
    np.testing.assert_allclose(float(lc), float(le), rtol=1e-5)
    for a, b in zip(twin.parameters(), eager.parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5)


# -- padding ---------------------------------------------------------------------------------------

PAD_CASES = [  # (name, n, padding, x)
    ("ZeroPad", 1, (1, 2), X3), ("ZeroPad", 2, (1, 0, 2, 1), X4), ("ZeroPad", 3, 1, X5),
    ("ConstantPad", 1, 2, X3), ("ConstantPad", 2, (0, 1, 1, -1), X4),
    ("ConstantPad", 3, (1, 0, 0, 1, 1, 0), X5),
    ("ReflectionPad", 1, (2, 3), X3), ("ReflectionPad", 2, (1, 2, 3, 0), X4),
    ("ReflectionPad", 3, (1, 1, 2, 0, 0, 2), X5),
    ("ReplicationPad", 1, 3, X3), ("ReplicationPad", 2, (2, 0, 1, 3), X4),
    ("ReplicationPad", 3, (0, 1, 2, 1, 1, 0), X5),
    ("CircularPad", 1, (2, 1), X3), ("CircularPad", 2, (1, 2, 2, 1), X4),
    ("CircularPad", 3, 1, X5),
]


def _pad_layers(name: str, n: int, padding):
    cls_f, cls_t = getattr(nn, f"{name}{n}d"), getattr(tnn, f"{name}{n}d")
    args = (padding, 1.5) if name == "ConstantPad" else (padding,)
    return cls_f(*args), cls_t(*args)


# each layer batched or unbatched (C, *spatial): pairwise (tests/_pairwise.py) over the layer
# family, its rank and the two forms (each form a program of its own), so every family and
# every rank runs both forms
_PAD_ROWS = [(*next(c for c in PAD_CASES if c[:2] == (name, n)), batched)
             for name, n, batched in pairwise(["ZeroPad", "ConstantPad", "ReflectionPad",
                                               "ReplicationPad", "CircularPad"], [1, 2, 3],
                                              [True, False])]


@pytest.mark.parametrize("name,n,padding,x,batched", _PAD_ROWS,
                         ids=[f"{c[0]}{c[1]}d-{'batched' if c[4] else 'unbatched'}"
                              for c in _PAD_ROWS])
def test_padding_layers_match_torch_batched_and_unbatched(name, n, padding, x,
                                                          batched) -> None:
    fm, tm = _pad_layers(name, n, padding)
    assert repr(fm) == repr(tm)
    assert fm.padding == tm.padding
    _check_fwd_bwd(fm, tm, x if batched else x[0])


@pytest.mark.parametrize("name", ["ReflectionPad", "ReplicationPad", "CircularPad"])
def test_non_constant_padding_rejects_wrong_rank_as_torch(name) -> None:
    fm, tm = _pad_layers(name, 1, 1)
    x = X4  # 4-D input to a 1-d layer
    with pytest.raises(Exception) as te:
        tm(torch.tensor(x))
    with pytest.raises(type(te.value), match="4D"):
        fm(flow.tensor(x))


def test_padding_bad_arguments() -> None:
    with pytest.raises(TypeError, match="padding must be an int"):
        nn.ZeroPad2d(1.5)
    with pytest.raises(TypeError, match="padding must be an int"):
        nn.ReflectionPad1d((1, "a"))
    # PyTorch raises RuntimeError; jflow's pad op checks this in shape inference (ValueError)
    with pytest.raises(ValueError, match="should be less than the corresponding input dim"):
        nn.ReflectionPad1d(5)(flow.tensor(X3))


@pytest.mark.parametrize("mode,k,batched", pairwise(
    ["constant", "reflect", "replicate", "circular"], [1, 2, 3], [True, False]))
def test_functional_pad_matches_torch(mode, k, batched) -> None:
    """F.pad itself, each mode, batched and unbatched (the layers' foundation): pairwise
    over mode, spatial rank and the two forms."""
    x = {1: X3, 2: X4, 3: X5}[k]
    pad = (2, 1, 0, 1, 1, 2)[:2 * k]
    kw = {"value": -0.5} if mode == "constant" else {}
    _check_fwd_bwd(lambda t: F.pad(t, pad, mode=mode, **kw),
                   lambda t: TF.pad(t, pad, mode=mode, **kw), x if batched else x[0])


# -- pixel / channel shuffle -----------------------------------------------------------------------

@pytest.mark.parametrize("r", [1, 2])
def test_pixel_shuffle_unshuffle_match_torch(r) -> None:
    _check_fwd_bwd(lambda t: F.pixel_shuffle(t, r), lambda t: TF.pixel_shuffle(t, r), X_SHUF)
    _check_fwd_bwd(nn.PixelShuffle(r), tnn.PixelShuffle(r), X_SHUF[0])     # 3-D input
    x = X_SHUF.reshape(2, 2, 4, 6)
    _check_fwd_bwd(lambda t: F.pixel_unshuffle(t, r), lambda t: TF.pixel_unshuffle(t, r), x)
    _check_fwd_bwd(nn.PixelUnshuffle(r), tnn.PixelUnshuffle(r), x[None])   # 5-D input
    y = F.pixel_unshuffle(F.pixel_shuffle(flow.tensor(X_SHUF), 2), 2)
    np.testing.assert_array_equal(y.numpy(), X_SHUF)
    assert repr(nn.PixelShuffle(r)) == repr(tnn.PixelShuffle(r))
    assert repr(nn.PixelUnshuffle(r)) == repr(tnn.PixelUnshuffle(r))


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_channel_shuffle_matches_torch(groups) -> None:
    _check_fwd_bwd(nn.ChannelShuffle(groups), tnn.ChannelShuffle(groups), X_SHUF)
    _check_fwd_bwd(lambda t: F.channel_shuffle(t, groups),
                   lambda t: TF.channel_shuffle(t, groups), X_SHUF[:, :, 0])   # 3-D
    assert repr(nn.ChannelShuffle(groups)) == repr(tnn.ChannelShuffle(groups))


SHUFFLE_ERRORS = [
    ("pixel_shuffle", (1, 5, 2, 2), 2), ("pixel_shuffle", (5, 2), 2),
    ("pixel_shuffle", (1, 4, 2, 2), 0), ("pixel_unshuffle", (1, 1, 3, 4), 2),
    ("pixel_unshuffle", (1, 1, 4, 3), 2), ("pixel_unshuffle", (4, 3), 2),
    ("pixel_unshuffle", (1, 1, 4, 4), -1), ("channel_shuffle", (1, 5, 2, 2), 2),
    ("channel_shuffle", (1, 4, 2, 2), 0), ("channel_shuffle", (1, 4), 2),
]


@pytest.mark.parametrize("fname,shape,arg", SHUFFLE_ERRORS)
def test_shuffle_errors_match_torch(fname, shape, arg) -> None:
    _same_error(lambda: getattr(F, fname)(flow.zeros(*shape), arg),
                lambda: getattr(TF, fname)(torch.zeros(*shape), arg))


# -- Softmax2d, upsampling -------------------------------------------------------------------------

def test_softmax2d_matches_torch() -> None:
    _check_fwd_bwd(nn.Softmax2d(), tnn.Softmax2d(), X4)
    _check_fwd_bwd(nn.Softmax2d(), tnn.Softmax2d(), X4[0])
    assert repr(nn.Softmax2d()) == repr(tnn.Softmax2d())
    _same_error(lambda: nn.Softmax2d()(flow.tensor(X3[0])),
                lambda: tnn.Softmax2d()(torch.tensor(X3[0])))


@pytest.mark.parametrize("kw", [{"scale_factor": 2}, {"size": (3, 7)}])
def test_upsampling_layers_match_torch(kw) -> None:
    for name in ("UpsamplingNearest2d", "UpsamplingBilinear2d"):
        fm, tm = getattr(nn, name)(**kw), getattr(tnn, name)(**kw)
        assert repr(fm) == repr(tm)
        assert fm.align_corners == tm.align_corners
        _check_fwd_bwd(fm, tm, X4)


def test_deprecated_upsample_functions_warn_and_match_torch() -> None:
    cases = [("upsample", {"scale_factor": 2, "mode": "bilinear", "align_corners": False}),
             ("upsample", {"size": (5, 6)}), ("upsample_nearest", {"scale_factor": 2}),
             ("upsample_bilinear", {"size": (3, 7)})]
    for fname, kw in cases:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            _check_fwd_bwd(lambda t, f=fname, k=kw: getattr(F, f)(t, **k),
                           lambda t, f=fname, k=kw: getattr(TF, f)(t, **k), X4)
        assert any("deprecated" in str(m.message) for m in w), fname


# -- SyncBatchNorm, BatchNorm3d --------------------------------------------------------------------

def test_sync_batchnorm_is_batchnorm_and_convert_keeps_state() -> None:
    fseq = nn.Sequential(nn.Conv2d(3, 3, 1), nn.BatchNorm2d(3),
                         nn.Sequential(nn.BatchNorm1d(3, affine=False)))
    bn = fseq[1]
    bn(flow.tensor(X4))                                    # running stats move
    bn.eval()
    conv = nn.SyncBatchNorm.convert_sync_batchnorm(fseq)
    assert conv is fseq and isinstance(fseq[1], nn.SyncBatchNorm)
    assert isinstance(fseq[2][0], nn.SyncBatchNorm) and fseq[2][0].weight is None
    s = fseq[1]
    assert s.weight is bn.weight and s.bias is bn.bias and s.running_mean is bn.running_mean
    assert int(s.num_batches_tracked) == 1 and not s.training
    top = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(2))
    assert type(top) is nn.SyncBatchNorm

    tseq = tnn.SyncBatchNorm.convert_sync_batchnorm(
        tnn.Sequential(tnn.Conv2d(3, 3, 1), tnn.BatchNorm2d(3),
                       tnn.Sequential(tnn.BatchNorm1d(3, affine=False))))
    assert list(fseq.state_dict()) == list(tseq.state_dict())
    # PyTorch 2.13 added BatchNorm's keyword ``bias`` (and "bias=True" in its repr)
    assert repr(fseq[1]) == repr(tseq[1]).replace("bias=True, ", "")

    fs, ts = nn.SyncBatchNorm(2), tnn.SyncBatchNorm(2)       # training, no process group
    _check_fwd_bwd(fs, ts, X5, atol=1e-4)                    # any (N, C, *) input
    np.testing.assert_allclose(fs.running_var.numpy(), ts.running_var.numpy(), rtol=1e-5)
    _same_error(lambda: fs(flow.zeros(3)), lambda: ts(torch.zeros(3)))


def test_batchnorm3d_matches_torch() -> None:
    _check_fwd_bwd(nn.BatchNorm3d(2), tnn.BatchNorm3d(2), X5, atol=1e-4)
    with pytest.raises(ValueError, match="5D"):
        nn.BatchNorm3d(2)(flow.tensor(X4))


# -- Module methods --------------------------------------------------------------------------------

class _Net:
    """The same small tree in both libraries: a shared child and a buffer."""

    @staticmethod
    def build(lib_nn, lib):
        m = lib_nn.Module()
        shared = lib_nn.Linear(2, 2)
        m.a = lib_nn.Sequential(shared, lib_nn.ReLU())
        m.b = shared
        m.register_buffer("stat", lib.zeros(2))
        m.a[0].register_buffer("inner", lib.ones(1), persistent=False)
        m.w = lib_nn.Parameter(lib.zeros(1))
        return m


def test_named_modules_children_match_torch() -> None:
    fm, tm = _Net.build(nn, flow), _Net.build(tnn, torch)

    def names(it):
        return [n for n, _ in it]

    assert names(fm.named_modules()) == names(tm.named_modules())
    assert names(fm.named_modules(remove_duplicate=False)) == \
        names(tm.named_modules(remove_duplicate=False))
    assert names(fm.named_modules(prefix="root")) == names(tm.named_modules(prefix="root"))
    assert names(fm.named_children()) == names(tm.named_children())
    assert len(list(fm.children())) == len(list(tm.children()))
    assert len(list(fm.modules())) == len(list(tm.modules()))
    memo_f, memo_t = {fm.b}, {tm.b}                        # a caller's memo of modules
    assert names(fm.named_modules(memo=memo_f)) == names(tm.named_modules(memo=memo_t))
    assert fm.b in memo_f and fm.a in memo_f


def test_get_buffer_and_set_submodule_match_torch() -> None:
    fm, tm = _Net.build(nn, flow), _Net.build(tnn, torch)
    assert fm.get_buffer("stat") is fm.stat
    assert fm.get_buffer("a.0.inner") is fm.a[0].inner
    for target in ("w", "a.0.weight", "nope"):
        _same_error(lambda t=target: fm.get_buffer(t), lambda t=target: tm.get_buffer(t))

    fm.set_submodule("a.1", nn.Tanh())
    tm.set_submodule("a.1", tnn.Tanh())
    fm.set_submodule("a.extra", nn.Identity())
    tm.set_submodule("a.extra", tnn.Identity())
    assert repr(fm.a) == repr(tm.a)
    for target, mod, strict in (("", nn.ReLU(), False), ("a.new", nn.ReLU(), True),
                                ("stat", nn.ReLU(), False), ("a", 3, False)):
        tmod = tnn.ReLU() if isinstance(mod, nn.Module) else mod
        _same_error(lambda t=target, m=mod, s=strict: fm.set_submodule(t, m, s),
                    lambda t=target, m=tmod, s=strict: tm.set_submodule(t, m, s))


def test_buffer_assignment_registers_a_buffer() -> None:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.keep = nn.Buffer(flow.ones(2))
            self.temp = nn.Buffer(flow.zeros(3), persistent=False)

    class T(tnn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.keep = tnn.Buffer(torch.ones(2))
            self.temp = tnn.Buffer(torch.zeros(3), persistent=False)

    m, t = M(), T()
    assert list(m.state_dict()) == list(t.state_dict()) == ["keep"]
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert type(m.keep) is flow.Tensor                     # stored as a plain tensor
    m.temp = nn.Buffer(flow.ones(1))                       # re-assign: persistent again
    assert list(m.state_dict()) == ["keep", "temp"]
    m.keep = flow.full((2,), 3.0)                          # plain tensor on a buffer name
    assert m.get_buffer("keep").numpy().tolist() == [3.0, 3.0]
    m.to(flow.float64)
    assert m.keep.dtype == flow.float64
    with pytest.raises(TypeError, match="must be a Tensor"):
        nn.Buffer([1.0])


def test_multiline_extra_repr_matches_torch_layout() -> None:
    class F_(nn.Module):
        def extra_repr(self) -> str:
            return "a=1\nb=2"

    class T_(tnn.Module):
        def extra_repr(self) -> str:
            return "a=1\nb=2"

    assert repr(F_()).replace("F_", "X") == repr(T_()).replace("T_", "X")


# -- full backward hooks ---------------------------------------------------------------------------

def _linear_pair():
    fl, tl = nn.Linear(3, 2), tnn.Linear(3, 2)
    fl.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tl.state_dict().items()})
    return fl, tl


def test_full_backward_hooks_see_and_replace_grads_as_torch() -> None:
    x = RS.randn(4, 3).astype(np.float32)
    seen = {"flow": [], "torch": []}

    def run(lin, lib, key, tensor):
        log = seen[key]

        def pre(mod, gout):
            log.append(("pre", [g.detach().numpy() for g in gout]))
            return (gout[0] * 2,)

        def hook(mod, gin, gout):
            log.append(("hook", [g.detach().numpy() for g in gin],
                        [g.detach().numpy() for g in gout]))
            return (gin[0] + 1,)

        h1 = lin.register_full_backward_pre_hook(pre)
        h2 = lin.register_full_backward_hook(hook)
        xt = tensor(x, requires_grad=True)
        (lin(xt) ** 2).sum().backward()
        h1.remove()
        h2.remove()
        (lin(xt) ** 2).sum().backward()                     # removed: no more calls
        return xt.grad.numpy(), lin.weight.grad.numpy()

    fl, tl = _linear_pair()
    fx, fw = run(fl, flow, "flow", flow.tensor)
    tx, tw = run(tl, torch, "torch", torch.tensor)
    np.testing.assert_allclose(fx, tx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fw, tw, rtol=1e-5, atol=1e-5)
    assert [e[0] for e in seen["flow"]] == [e[0] for e in seen["torch"]] == ["pre", "hook"]
    for a, b in zip(seen["flow"], seen["torch"]):
        for ga, gb in zip(a[1:], b[1:]):
            for u, v in zip(ga, gb):
                np.testing.assert_allclose(u, v, rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore:Full backward hook")
def test_full_backward_hook_without_input_grad_gets_none() -> None:
    got = {}
    for lib_nn, lib, key in ((nn, flow, "flow"), (tnn, torch, "torch")):
        lin = lib_nn.Linear(3, 2)
        calls = []
        lin.register_full_backward_hook(lambda m, gi, go, c=calls: c.append((gi, len(go))))
        lin(lib.ones(2, 3)).sum().backward()
        got[key] = calls
    assert got["flow"][0][0] == got["torch"][0][0] == (None,)
    assert got["flow"][0][1] == got["torch"][0][1] == 1


def test_full_backward_hook_errors_and_prepend() -> None:
    lin = nn.Linear(3, 2)
    order = []
    lin.register_full_backward_pre_hook(lambda m, g: order.append("second"))
    lin.register_full_backward_pre_hook(lambda m, g: order.append("first"), prepend=True)
    h = lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
    x = flow.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="invalid number of grad_input"):
        lin(x).sum().backward()
    assert order == ["first", "second"]
    h.remove()
    lin.register_full_backward_hook(lambda m, gi, go: (flow.ones(2, 3),))
    with pytest.raises(RuntimeError, match="no input requires gradient"):
        lin(flow.ones(2, 3)).sum().backward()


# -- import paths ----------------------------------------------------------------------------------

def test_torch_module_paths_resolve() -> None:
    from jflow.nn.modules.batchnorm import SyncBatchNorm
    from jflow.nn.modules.channelshuffle import ChannelShuffle
    from jflow.nn.modules.container import ParameterDict, ParameterList
    from jflow.nn.modules.padding import ReflectionPad2d, ZeroPad1d
    from jflow.nn.modules.pixelshuffle import PixelShuffle
    from jflow.nn.modules.upsampling import Upsample, UpsamplingBilinear2d

    assert SyncBatchNorm is nn.SyncBatchNorm and ChannelShuffle is nn.ChannelShuffle
    assert ParameterDict is nn.ParameterDict and ParameterList is nn.ParameterList
    assert ReflectionPad2d is nn.ReflectionPad2d and ZeroPad1d is nn.ZeroPad1d
    assert PixelShuffle is nn.PixelShuffle and Upsample is nn.Upsample
    assert UpsamplingBilinear2d is nn.UpsamplingBilinear2d
    for name in ("pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "upsample",
                 "upsample_nearest", "upsample_bilinear"):
        assert name in F.__all__


def test_state_dict_metadata_versions_and_format_upgrades_as_pytorch() -> None:
    """state_dict()._metadata holds each module's _version by name (BatchNorm's is 2), as
    PyTorch's; a library module's override of _load_from_state_dict, with PyTorch's signature,
    gets its local_metadata (torchvision's MNASNet and ViT read the version) and may edit the
    state dict (a copy: the caller's is untouched); a BatchNorm checkpoint older than version 2
    (no num_batches_tracked) loads, as in PyTorch."""
    class Renamed(flow.nn.Module):
        _version = 2

        def __init__(self):
            super().__init__()
            self.weight = flow.nn.Parameter(flow.zeros(3))

        def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                  missing_keys, unexpected_keys, error_msgs):
            if local_metadata.get("version", 1) < 2:      # version 1 called it "w"
                state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
            super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                          missing_keys, unexpected_keys, error_msgs)

    net = flow.nn.Sequential(Renamed(), flow.nn.BatchNorm1d(3))
    tnet = torch.nn.Sequential(torch.nn.Linear(1, 1), torch.nn.BatchNorm1d(3))
    sd, tsd = net.state_dict(), tnet.state_dict()
    assert sd._metadata == {"": {"version": 1}, "0": {"version": 2}, "1": {"version": 2}}
    assert sd._metadata["1"] == tsd._metadata["1"] and sd._metadata[""] == tsd._metadata[""]
    old = OrderedDict(w=flow.tensor([1.0, 2.0, 3.0]))
    old.update({k: v for k, v in sd.items() if k.startswith("1.") and "tracked" not in k})
    old._metadata = {"0": {"version": 1}, "1": {"version": 1}}
    net2 = flow.nn.Sequential(Renamed(), flow.nn.BatchNorm1d(3))
    old["0.w"] = old.pop("w")
    keys = list(old)
    net2.load_state_dict(old)                             # strict: every key accounted for
    np.testing.assert_array_equal(net2[0].weight.detach().numpy(), [1.0, 2.0, 3.0])
    assert int(net2[1].num_batches_tracked) == 0 and list(old) == keys
    with pytest.raises(RuntimeError, match="Missing key"):  # version 2 keeps the new name
        old._metadata = {"0": {"version": 2}, "1": {"version": 2}}
        net2.load_state_dict(old)


def test_load_state_dict_pre_hooks_as_pytorch() -> None:
    """register_load_state_dict_pre_hook (module first) and the private form libraries call
    (HF Mamba: ``_register_load_state_dict_pre_hook(hook)``) run before the module's own
    entries load, may rename keys, and are removable."""
    seen = []

    def public(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        seen.append((type(module).__name__, prefix))

    def private(state_dict, prefix, *rest):
        if prefix + "old_weight" in state_dict:
            state_dict[prefix + "weight"] = state_dict.pop(prefix + "old_weight")

    net = flow.nn.Sequential(flow.nn.Linear(2, 2, bias=False))
    h1 = net[0].register_load_state_dict_pre_hook(public)
    net[0]._register_load_state_dict_pre_hook(private)
    net.load_state_dict({"0.old_weight": flow.ones(2, 2)})
    np.testing.assert_array_equal(net[0].weight.detach().numpy(), np.ones((2, 2)))
    assert seen == [("Linear", "0.")]
    h1.remove()
    net.load_state_dict({"0.weight": flow.zeros(2, 2)})
    assert len(seen) == 1


def test_size_and_axis_keywords_as_pytorch() -> None:
    """torch.zeros / ones / empty take size=, torch.cat / concat take axis= (HF BEiT, Funnel)."""
    for name in ("zeros", "ones", "empty"):
        assert tuple(getattr(flow, name)(size=(2, 3)).shape) == tuple(
            getattr(torch, name)(size=(2, 3)).shape) == (2, 3)
    a, b = np.ones((1, 2), np.float32), np.zeros((1, 2), np.float32)
    for name in ("cat", "concat"):
        np.testing.assert_array_equal(
            getattr(flow, name)([flow.tensor(a), flow.tensor(b)], axis=1).numpy(),
            getattr(torch, name)([torch.tensor(a), torch.tensor(b)], axis=1).numpy())
    with pytest.raises(TypeError, match="both positionally"):
        flow.zeros(2, size=(3,))
