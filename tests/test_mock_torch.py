"""jflow.mock_torch: unmodified PyTorch code — a training script, and a library that does
``import torch`` inside — runs on jflow, in Python (enable / disable / with) and from the
shell (``eval $(python -m jflow.mock_torch)``); lazy placeholders; the real PyTorch back."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import jflow as flow
import jflow.mock_torch as mock

ROOT = Path(__file__).resolve().parent.parent

# a training script in common PyTorch style, not edited for jflow
SCRIPT = textwrap.dedent('''
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset
    from torch.optim.lr_scheduler import StepLR

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 16)
            self.fc2 = nn.Linear(16, 3)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = StepLR(opt, step_size=5, gamma=0.5)
    losses = []
    for epoch in range(8):
        model.train()
        for xb, yb in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
        sched.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(1) == y).float().mean().item()
    assert isinstance(x, torch.Tensor)
    print("RESULT", torch.__version__, getattr(torch, "__jflow__", None), losses[0], losses[-1],
          acc)
''')

LIBRARY = textwrap.dedent('''
    """A third-party-style package: imports torch at its top, checks the version."""
    import torch
    from torch import nn

    if tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (1, 8):
        raise ImportError("mylib needs torch >= 1.8")

    class Scale(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k = nn.Parameter(torch.tensor(float(k)))

        def forward(self, x):
            return x * self.k
''')


def _result(out: str) -> list[str]:
    line = next(x for x in out.splitlines() if x.startswith("RESULT"))
    return line.split()[1:]


def test_unmodified_script_and_library_in_python(tmp_path, capsys, monkeypatch):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "mylib").mkdir()
    (tmp_path / "mylib" / "__init__.py").write_text(LIBRARY)
    monkeypatch.syspath_prepend(str(tmp_path))
    real = sys.modules.get("torch")
    with mock.enable():
        assert mock.is_enabled()
        runpy.run_path(str(tmp_path / "train.py"), run_name="__main__")
        version, jflow_version, first, last, acc = _result(capsys.readouterr().out)
        assert version == mock.TORCH_VERSION and jflow_version == flow.__version__
        assert float(last) < float(first) and float(acc) >= 0.8
        import mylib
        out = mylib.Scale(3)(flow.ones(2))
        assert isinstance(out, flow.Tensor) and out.tolist() == [3.0, 3.0]
        import torch
        assert torch.nn.Linear is flow.nn.Linear and torch.Tensor is flow.Tensor
    sys.modules.pop("mylib", None)
    assert not mock.is_enabled()
    assert sys.modules.get("torch") is real  # the real one (or none) is back


def test_missing_names_strict_and_lazy(capsys):
    with mock.enable():
        import torch
        with pytest.raises(ModuleNotFoundError, match="jflow has no module torch.no_such"):
            import torch.no_such  # noqa: F401
        with pytest.raises(AttributeError, match="jflow has no torch.no_such_fn"):
            torch.no_such_fn  # noqa: B018
        with pytest.raises(AttributeError, match="torch.nn.init.no_such_init_"):
            torch.nn.init.no_such_init_  # noqa: B018
    with mock.enable(lazy=True, verbose=True):
        import torch

        # a module PyTorch has and jflow lacks loads as a placeholder module; its names
        # PyTorch has are placeholders
        from torch.nested import nested_tensor
        assert not isinstance(flow.ones(1), nested_tensor)
        with pytest.raises(NotImplementedError, match="jflow has no torch.nested.nested_tensor"):
            nested_tensor([flow.ones(1)])
        with pytest.raises(NotImplementedError):
            class Sub(nested_tensor):  # subclassing a missing class is a use
                pass
        assert torch.nn.init.sparse_ is flow.nn.init.sparse_
        # lazy mode is the same below the top level: a name PyTorch has and jflow lacks
        # is a placeholder there too
        ph = torch.nn.modules.module.register_module_forward_hook
        with pytest.raises(NotImplementedError):
            ph(print)
    assert any(e.startswith("torch.nested.nested_tensor") for e in mock.touched())
    assert "placeholder torch.nested.nested_tensor used" in capsys.readouterr().err


def test_lazy_mode_refuses_what_pytorch_lacks():
    """A probe PyTorch would refuse fails the same way in lazy mode (no placeholder that
    only fails later); one PyTorch satisfies gets jflow's answer."""
    with mock.enable(lazy=True):
        import torch
        with pytest.raises(ModuleNotFoundError, match="has no module torch.no_such_pkg either"):
            import torch.no_such_pkg  # noqa: F401
        with pytest.raises(AttributeError, match="has no torch.no_such_fn either"):
            torch.no_such_fn  # noqa: B018
        with pytest.raises(ImportError):
            from torch._dynamo import no_such_name  # noqa: F401
        from torch._dynamo import allow_in_graph  # PyTorch has it: jflow's equivalent
        assert allow_in_graph(len) is len
        assert not hasattr(torch.nn.init, "no_such_init_")
        assert mock.torch_has("torch.nn.init.sparse_") and not mock.torch_has("torch.nope")


def test_the_real_torch_is_hidden_then_restored():
    torch = pytest.importorskip("torch")
    with mock.enable():
        import torch as mocked
        assert mocked is not torch and mocked.Tensor is flow.Tensor
        assert all(isinstance(m, mock._TorchModule) for k, m in sys.modules.items()
                   if k == "torch" or k.startswith("torch."))
    import torch as again
    assert again is torch and sys.modules["torch.nn"] is torch.nn


def test_shell_lines_run_an_unmodified_script(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("XLA_FLAGS", None)
    cmd = (f"eval $({sys.executable} -m jflow.mock_torch --lazy) && "
           f"{sys.executable} train.py && eval $({sys.executable} -m jflow.mock_torch disable) "
           f"&& echo PYTHONPATH=$PYTHONPATH LAZY=${{JFLOW_MOCK_TORCH_LAZY:-unset}}")
    out = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    version, jflow_version, first, last, acc = _result(out.stdout)
    assert version == mock.TORCH_VERSION and jflow_version == flow.__version__
    assert float(last) < float(first)
    assert f"PYTHONPATH={ROOT} LAZY=unset" in out.stdout  # disable removed the shim


def mock_torch_fx():
    """``torch.fx`` under the mock (its tracing raises)."""
    import importlib
    return importlib.import_module("jflow.mock_torch.overrides.fx")


def mock_torch_quant():
    """``torch.ao.quantization`` under the mock (every use raises)."""
    import importlib
    return importlib.import_module("jflow.mock_torch.overrides.ao.quantization")


_UNSUPPORTED = {  # docs/porting.md "Not supported": each raises where used
    "complex32": lambda: flow.ones(2).chalf(),
    "complex relu": lambda: flow.relu(flow.tensor([1j])),
    "named tensors": lambda: flow.ones(2).refine_names("a"),
    "sparse tensors": lambda: flow.ones(2).to_sparse(),
    "complex view(dtype)": lambda: flow.ones(2).view(flow.complex64),
    "jit.script": lambda: flow.jit.script(lambda x: x),
    "fx tracing": lambda: mock_torch_fx().symbolic_trace(flow.nn.Linear(1, 1)),
    "quantization": lambda: mock_torch_quant().quantize_dynamic(flow.nn.Linear(1, 1)),
    "vmap different": lambda: flow.func.vmap(lambda t: t, randomness="different")(flow.ones(2)),
    "profiler schedule": lambda: flow.profiler.profile(schedule=object()),
}


@pytest.mark.parametrize("what", sorted(_UNSUPPORTED))
def test_porting_doc_unsupported_list_raises(what):
    with pytest.raises((AttributeError, TypeError, NotImplementedError)):
        _UNSUPPORTED[what]()
    with mock.enable():
        with pytest.raises(ImportError):
            __import__("torch.export")


# -- the torch internals libraries reach for (docs/porting.md "Libraries") --------------------

def test_bare_no_grad_decorator():
    @flow.no_grad
    def f(x):
        return x * 2

    @flow.enable_grad
    def g(x):
        return x * 2

    x = flow.ones(2, requires_grad=True)
    assert not f(x).requires_grad and (x * 2).requires_grad
    with flow.no_grad():
        assert g(x).requires_grad
    with pytest.raises(TypeError, match="no_grad"):
        flow.no_grad(3)


def test_pytree_matches_pytorch():
    torch = pytest.importorskip("torch")
    import collections

    from jflow.utils import _pytree as jp
    tp = torch.utils._pytree
    Pt = collections.namedtuple("Pt", "a b")
    tree = {"z": [1, (2, None)], "a": Pt(3, {"k": 4}),
            "o": collections.OrderedDict(y=5, x=6)}
    leaves, spec = jp.tree_flatten(tree)
    assert leaves == tp.tree_flatten(tree)[0] == [1, 2, None, 3, 4, 5, 6]  # insertion order
    assert jp.tree_unflatten([v and v * 10 for v in leaves], spec) == tp.tree_map(
        lambda v: v and v * 10, tree)
    add = lambda a, b: a and a + b  # noqa: E731
    assert jp.tree_map(add, tree, tree) == tp.tree_map(add, tree, tree)
    assert spec.num_leaves == 7 and jp.tree_structure(tree) == spec
    assert jp.tree_map_only(int, lambda v: -v, [1, "s"]) == [-1, "s"]

    class Box:
        def __init__(self, v):
            self.v = v

    jp.register_pytree_node(Box, lambda b: ([b.v], None), lambda ch, ctx: Box(ch[0]))
    assert jp.tree_map(lambda v: v + 1, [Box(1)])[0].v == 2


def test_jit_fx_dynamo_compiler_equivalents():
    with mock.enable():
        import torch
        import torch.fx
        import torch.jit

        def f(x):
            return x + 1

        assert torch.jit.script(f) is f and torch.jit.trace(f, (flow.ones(1),)) is f
        assert torch.jit.ignore(f) is f and torch.jit.ignore(drop=True)(f) is f
        assert not torch.jit.is_scripting() and not torch.jit.is_tracing()
        assert torch.jit.fork(f, 1).wait() == 2
        with pytest.raises(NotImplementedError, match="TorchScript"):
            torch.jit.save(f, os.devnull)
        assert torch.fx.wrap(f) is f and torch.fx.wrap("name") == "name"
        with pytest.raises(NotImplementedError, match="no FX symbolic tracing"):
            torch.fx.symbolic_trace(flow.nn.Linear(1, 1))
        assert not isinstance(flow.ones(1), torch.fx.Proxy)
        from torch._dynamo import allow_in_graph, mark_dynamic
        assert allow_in_graph(f) is f and mark_dynamic(flow.ones(2), 0) is None
        assert torch.compiler.disable(f) is f and torch.compiler.disable()(f) is f
        assert not torch.compiler.is_compiling()
        seen = []

        @flow.jit
        def step(x):
            seen.append(torch.compiler.is_compiling())
            return x * 2

        step(flow.ones(2))
        assert seen == [True]  # True while jflow traces a compiled step
        assert torch.compiler.compile is flow.compile
        assert mock.torch_has("torch.compiler.is_compiling")
    names = mock.touched()
    assert "torch.jit.script (equivalent)" in names and "torch.fx.wrap (equivalent)" in names


def test_hub_is_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path))
    url = "https://download.pytorch.org/models/resnet18-f37072fd.pth"
    with mock.enable():
        import torch.hub
        from torch.utils import model_zoo
        assert torch.hub._get_torch_home() == str(tmp_path)
        assert torch.hub.get_dir() == str(tmp_path / "hub")
        with pytest.raises(RuntimeError, match="resnet18-f37072fd.pth is not in the hub cache"):
            torch.hub.load_state_dict_from_url(url)
        with pytest.raises(RuntimeError, match="jflow does not download"):
            model_zoo.load_url(url)
    d = tmp_path / "hub" / "checkpoints"
    d.mkdir(parents=True)
    flow.save({"w": flow.ones(2)}, str(d / "resnet18-f37072fd.pth"))
    assert flow.hub.load_state_dict_from_url(url)["w"].tolist() == [1.0, 1.0]


def test_surface_names():
    with mock.enable():
        import torch
        import torch.nn.modules.instancenorm as inorm
        from torch.nn.modules.utils import _pair, _quadruple, _single, _triple
        from torch.nn.utils.rnn import pad_sequence
        assert inorm.InstanceNorm2d is flow.nn.InstanceNorm2d
        assert _pair(3) == (3, 3) and _single(2) == (2,) and _triple((1, 2, 3)) == (1, 2, 3)
        assert _quadruple(0) == (0, 0, 0, 0)
        p = pad_sequence([flow.ones(2), flow.ones(3)], batch_first=True, padding_value=-1)
        assert p.tolist() == [[1, 1, -1], [1, 1, 1]]
        assert torch.version.cuda is None and torch.version.hip is None
        assert torch.pi == __import__("math").pi
        assert torch.LongTensor([1, 2]).dtype is torch.int64
        assert isinstance(torch.ones(2).long(), torch.LongTensor)
        assert not isinstance(torch.ones(2), torch.LongTensor)
        assert torch.FloatTensor(2, 3).shape == (2, 3)
        assert torch.zeros(2, dtype=torch.uint16).dtype is torch.uint16
        x8 = torch.ones(2).to(torch.float8_e4m3fn)
        assert x8.dtype is torch.float8_e4m3fn and x8.float().tolist() == [1.0, 1.0]
        with pytest.raises(TypeError, match="Promotion"):
            torch.promote_types(torch.uint32, torch.int64)
        assert torch.get_default_device().type == "cpu"
        assert not torch.ones(1).is_xpu
        w = torch.empty(10, 4)
        torch.nn.init.sparse_(w, 0.3)
        assert (w == 0).sum(0).tolist() == [3, 3, 3, 3]
        with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH]):
            pass
        from torch.nn.attention.flex_attention import flex_attention
        with pytest.raises(NotImplementedError, match="FlexAttention"):
            flex_attention(None, None, None)
        with torch.autograd.graph.save_on_cpu():
            pass
        with pytest.raises(NotImplementedError, match="pack / unpack"):
            with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
        if not flow.cuda.is_available():
            with pytest.raises(RuntimeError, match="not compiled with CUDA"):
                torch.cuda.Stream()
        with pytest.raises(NotImplementedError, match="no quantization"):
            torch.ao.quantization.quantize_dynamic(flow.nn.Linear(1, 1))
        from torch.onnx import symbolic_opset11
        with pytest.raises(NotImplementedError, match="ONNX"):
            symbolic_opset11.add(None)
        with pytest.raises(OSError, match="libtorch"):
            torch.ops.load_library(__file__)
        with pytest.raises(AttributeError):
            torch.ops.somelib.someop  # noqa: B018
        assert not torch._C._dispatch_has_kernel_for_dispatch_key("x::y", "CPU")
        assert torch._C.DispatchKey.AutocastXPU is not None
        from torch.distributed.tensor import DTensor
        assert torch.distributed.is_available() and not isinstance(torch.ones(1), DTensor)
        from torch.utils.checkpoint import checkpoint
        lin = flow.nn.Linear(3, 2)
        x = flow.randn(4, 3)
        checkpoint(lin, x, use_reentrant=False).sum().backward()
        g1 = lin.weight.grad.clone()
        lin.weight.grad = None
        lin(x).sum().backward()
        assert flow.allclose(g1, lin.weight.grad)


def test_custom_op_runs_eagerly_with_its_backward():
    with mock.enable():
        import torch

        @torch.library.custom_op("mylib::twice", mutates_args=())
        def twice(x: torch.Tensor) -> torch.Tensor:
            return x * 2

        @twice.register_fake
        def _(x):
            return torch.empty_like(x)

        def backward(ctx, g):
            return g * 3  # deliberately not the true derivative: proves it is used

        twice.register_autograd(backward)
        x = torch.ones(2, requires_grad=True)
        y = twice(x)
        assert y.tolist() == [2.0, 2.0]
        y.sum().backward()
        assert x.grad.tolist() == [3.0, 3.0]


def test_distributions_match_pytorch():
    torch = pytest.importorskip("torch")
    from jflow import distributions as D
    g = __import__("numpy").random.default_rng(0)
    loc, scale, v = (g.standard_normal(4).astype("float32") for _ in range(3))
    scale = abs(scale) + 0.5
    n, tn = D.Normal(flow.tensor(loc), flow.tensor(scale)), torch.distributions.Normal(
        torch.tensor(loc), torch.tensor(scale))
    for attr in ("log_prob", "cdf"):
        assert flow.allclose(getattr(n, attr)(flow.tensor(v)),
                             flow.tensor(getattr(tn, attr)(torch.tensor(v)).numpy()), atol=1e-6)
    assert flow.allclose(n.entropy(), flow.tensor(tn.entropy().numpy()))
    logits = g.standard_normal((3, 5)).astype("float32")
    c = D.Categorical(logits=flow.tensor(logits))
    tc = torch.distributions.Categorical(logits=torch.tensor(logits))
    k = [0, 4, 2]
    assert flow.allclose(c.log_prob(flow.tensor(k)), flow.tensor(tc.log_prob(
        torch.tensor(k)).numpy()), atol=1e-6)
    assert flow.allclose(c.entropy(), flow.tensor(tc.entropy().numpy()), atol=1e-6)
    assert flow.allclose(c.probs, flow.tensor(tc.probs.numpy()), atol=1e-6)
    assert tuple(c.sample((7,)).shape) == (7, 3)
    c2 = D.Categorical(probs=flow.tensor([0.2, 0.8]))
    tc2 = torch.distributions.Categorical(probs=torch.tensor([0.2, 0.8]))
    kl = D.kl_divergence(c, D.Categorical(logits=flow.tensor(logits[::-1].copy())))
    tkl = torch.distributions.kl_divergence(tc, torch.distributions.Categorical(
        logits=torch.tensor(logits[::-1].copy())))
    assert flow.allclose(kl, flow.tensor(tkl.numpy()), atol=1e-5)
    assert abs(c2.entropy().item() - tc2.entropy().item()) < 1e-6
    assert D.constraints.positive.check(flow.tensor([1.0, -1.0])).tolist() == [True, False]
    with pytest.raises(ValueError, match="scale"):
        D.Normal(flow.tensor([0.0]), flow.tensor([-1.0]), validate_args=True)
    # reparameterised samples carry gradients to the parameters
    mu = flow.zeros(3, requires_grad=True)
    D.Normal(mu, 1.0).rsample().sum().backward()
    assert mu.grad.tolist() == [1.0, 1.0, 1.0]


def test_meta_device_makes_tensors_without_data():
    """(tests/test_meta.py compares meta tensors with PyTorch's in detail.)"""
    with mock.enable():
        import torch
        meta = torch.device("meta")
        assert meta != torch.device("cpu") and str(meta) == "meta"
        t = torch.zeros(2, device="meta")
        assert t.is_meta and t.device == meta and tuple((t + 1).shape) == (2,)
        with pytest.raises(NotImplementedError, match="meta tensors have no data"):
            t.tolist()


def test_touched_lists_equivalents_and_placeholders():
    mock._TOUCHED.clear()
    mock._TOUCHED_SET.clear()
    with mock.enable(lazy=True):
        import torch
        torch.jit.is_scripting()
        torch.nn.modules.module.register_module_full_backward_hook  # noqa: B018
        torch.ones(1)  # plain jflow: not listed
    got = mock.touched()
    assert "torch.jit (equivalent)" in got and "torch.jit.is_scripting (equivalent)" in got
    assert ("torch.nn.modules.module.register_module_full_backward_hook (placeholder loaded)"
            in got)
    assert not any("torch.ones" in e for e in got)



def test_library_probes_take_strict_modes_branch_in_lazy_mode():
    """Probes libraries make (transformers: ``hasattr(torch, "xpu") and
    torch.xpu.is_available()``, its ``is_tracing()``: stream capture, fake tensors; timm:
    ``from torch import _assert``; torchvision's feature extraction: ``torch.fx.graph_module``
    helpers) get real answers, so lazy mode loads no
    placeholder for them and takes the path strict mode takes."""
    mock._TOUCHED.clear()
    mock._TOUCHED_SET.clear()
    with mock.enable(lazy=True):
        import torch
        assert hasattr(torch, "xpu") and torch.xpu.is_available() is False
        assert torch.xpu.device_count() == 0
        assert torch.xpu.is_current_stream_capturing() is False
        assert torch.cuda.is_current_stream_capturing() is False  # no CUDA graphs in jflow
        assert not isinstance(flow.ones(1), torch._subclasses.FakeTensor)
        with pytest.raises(NotImplementedError, match="no fake tensors"):
            torch._subclasses.fake_tensor.FakeTensorMode()
        with pytest.raises(AssertionError, match="not compiled with XPU"):
            torch.xpu.current_device()
        from torch import _assert
        _assert(flow.tensor(True), "unused")
        with pytest.raises(AssertionError, match="^bad shape$"):
            _assert(flow.tensor(False), "bad shape")
        with pytest.raises(AssertionError, match="^no$"):
            _assert(0, "no")
        from torch.fx.graph_module import (
            _USER_PRESERVED_ATTRIBUTES_KEY,
            _CodeOnlyModule,
            _copy_attr,
        )
        from torch.fx.node import Target  # noqa: F401
        src = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3))
        dst = torch.nn.Module()
        _copy_attr(src, dst, "0.weight")
        _copy_attr(src, dst, "1.running_mean")
        assert dst.get_submodule("0").weight is src[0].weight   # a parameter: the same one
        assert list(dict(dst.named_buffers())) == ["1.running_mean"]  # a tensor: a buffer
        assert type(dst.get_submodule("1")) is torch.nn.Module   # parents made empty
        body = torch.nn.Linear(2, 2).__dict__
        m = _CodeOnlyModule(body)
        assert m.__dict__ is body and isinstance(m, torch.nn.Module)
        assert _USER_PRESERVED_ATTRIBUTES_KEY == "_user_preserved_attributes"
    assert not [e for e in mock.touched() if "placeholder" in e], mock.touched()


# -- what pytorch/examples' word-language-model and DCGAN scripts rely on ------------------------
# Each idiom below is written in our own words, run on real PyTorch and on jflow (with the import
# changed, `T = jflow`, and under the mock), with the same weights and data: equal numbers.

def _lm_data(T, lines, bsz):
    """A corpus as one id stream (`tensor(ids).type(int64)` per line, `cat`), cut into `bsz`
    columns: `narrow` off the remainder, `view(bsz, -1).t().contiguous()`."""
    ids = T.cat([T.tensor(line).type(T.int64) for line in lines])
    n = ids.size(0) // bsz
    return ids.narrow(0, 0, n * bsz).view(bsz, -1).t().contiguous()


def _lm_build(T, ntoken, nhid, nlayers):
    """The model's parts, as attributes a Module subclass sets (see :class:`_WordLM`)."""
    return dict(drop=T.nn.Dropout(0.0), encoder=T.nn.Embedding(ntoken, nhid),
                rnn=T.nn.LSTM(nhid, nhid, nlayers, dropout=0.0), decoder=T.nn.Linear(nhid, ntoken))


def _lm_forward(T, m, ids, state):
    out, state = m.rnn(m.drop(m.encoder(ids)), state)
    logits = m.decoder(m.drop(out)).view(-1, m.decoder.out_features)
    return T.nn.functional.log_softmax(logits, dim=1), state


def _lm_state(m, bsz):
    """Zero LSTM state made from a parameter (`new_zeros` keeps its dtype and device)."""
    w = next(m.parameters())
    return (w.new_zeros(m.rnn.num_layers, bsz, m.rnn.hidden_size),
            w.new_zeros(m.rnn.num_layers, bsz, m.rnn.hidden_size))


class _WordLM(flow.nn.Module):
    """An LSTM language model in the shape of word_language_model's RNNModel, written with
    the import changed (`torch` -> `jflow`): it is pickled whole, so it lives at module level."""

    def __init__(self, ntoken: int, nhid: int, nlayers: int) -> None:
        super().__init__()
        for k, v in _lm_build(flow, ntoken, nhid, nlayers).items():
            setattr(self, k, v)

    def forward(self, ids, state):
        return _lm_forward(flow, self, ids, state)


def _lm_train(T, model, source, bptt, lr, clip, forward):
    """Truncated BPTT by hand: detach the carried state (`isinstance(h, T.Tensor)` over a tuple),
    `clip_grad_norm_`, then SGD as `p.data.add_(p.grad, alpha=-lr)`; the losses."""
    def detach(h):
        return h.detach() if isinstance(h, T.Tensor) else tuple(detach(v) for v in h)

    crit, losses, state = T.nn.NLLLoss(), [], _lm_state(model, source.size(1))
    for i in range(0, source.size(0) - 1, bptt):
        n = min(bptt, len(source) - 1 - i)
        x, y = source[i:i + n], source[i + 1:i + 1 + n].view(-1)
        state = detach(state)
        model.zero_grad()
        out, state = forward(x, state)
        loss = crit(out, y)
        loss.backward()
        T.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        losses.append(loss.item())
    return losses


#: 150 ids: `narrow` drops 2 of them, leaving 37 rows of 4, so truncated BPTT (bptt 6) takes
#: six chunks all of length 6 (`min(bptt, ...)` still runs) and the probe is one chunk long:
#: one sequence length for every forward. (A shorter last chunk or probe runs the same code,
#: but each new length compiles the embedding's, LSTM's and decoder's programs again.)
_LINES = [[0, 1, 2, 3, 4], [5, 2, 6, 4], [7, 1, 8, 3, 9, 4], [0, 6, 2, 4], [5, 1, 9, 3, 4]] * 6 \
    + [[7, 8, 9, 0, 1, 2]]


@pytest.mark.parametrize("mode", ["import", "mock"])
def test_word_language_model_idioms_match_pytorch(mode, tmp_path):
    torch = pytest.importorskip("torch")
    import numpy as np

    torch.manual_seed(0)
    ref = torch.nn.Module()
    for k, v in _lm_build(torch, 10, 8, 2).items():
        setattr(ref, k, v)
    weights = {k: v.detach().numpy().copy() for k, v in ref.state_dict().items()}
    src = _lm_data(torch, _LINES, 4)
    want = _lm_train(torch, ref, src, 6, 2.0, 0.25, lambda x, s: _lm_forward(torch, ref, x, s))
    probe = src[:6]
    ref.eval()
    with torch.no_grad():
        want_out = _lm_forward(torch, ref, probe, _lm_state(ref, 4))[0].numpy()

    def run(T):
        model = _WordLM(10, 8, 2)
        model.load_state_dict({k: T.tensor(v) for k, v in weights.items()})
        data = _lm_data(T, _LINES, 4)
        assert data.tolist() == src.tolist()
        got = _lm_train(T, model, data, 6, 2.0, 0.25, model)
        np.testing.assert_allclose(got, want, rtol=2e-5)
        path = tmp_path / f"lm-{mode}.pt"
        with open(path, "wb") as f:                       # the whole module, to an open file
            T.save(model, f)
        with open(path, "rb") as f, pytest.raises(T.serialization.SerializationError,
                                                  match="_WordLM"):
            T.load(f)                                     # weights_only=True refuses the class
        allowed = [_WordLM, T.nn.modules.dropout.Dropout, T.nn.modules.linear.Linear,
                   T.nn.modules.rnn.LSTM, T.nn.modules.sparse.Embedding,
                   T.nn.modules.linear.NonDynamicallyQuantizableLinear]  # PyTorch's file paths
        with T.serialization.safe_globals(allowed):
            with open(path, "rb") as f:
                back = T.load(f)
        with open(path, "rb") as f:
            again = T.load(f, map_location=T.device("cpu"), weights_only=False)
        for m in (back, again):
            assert type(m) is _WordLM
            m.rnn.flatten_parameters()                    # accepted: nothing to re-lay out
            m.eval()
            with T.no_grad():
                out = m(data[:6], _lm_state(m, 4))[0]
            np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-4, atol=1e-5)
        # sampling one word at a time: multinomial's index fills the input, indexes a list
        words = [f"w{i}" for i in range(10)]
        inp, state, text = T.randint(10, (1, 1), dtype=T.long), _lm_state(back, 1), []
        with T.no_grad():
            for _ in range(5):
                out, state = back(inp, state)
                idx = T.multinomial(out.squeeze().div(0.8).exp().cpu(), 1)[0]
                inp.fill_(idx)
                assert inp.item() == int(idx) and inp.dtype is T.int64
                text.append(words[idx])
        assert len(text) == 5 and all(w in words for w in text)

    if mode == "import":
        run(flow)
    else:
        with mock.enable():
            import torch as T  # jflow under PyTorch's names
            assert T.nn.modules.sparse.Embedding is flow.nn.Embedding
            run(T)


def _gan_parts(T, nz=4, ngf=4, ndf=4):
    """A DCGAN in miniature: G maps (N, nz, 1, 1) noise to (N, 3, 8, 8) images, D to one
    probability each; BatchNorm, in-place LeakyReLU, ConvTranspose2d, as the script has."""
    nn = T.nn
    g = nn.Sequential(nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
                      nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
                      nn.ConvTranspose2d(ngf * 2, 3, 4, 2, 1, bias=False), nn.Tanh())
    d = nn.Sequential(nn.Conv2d(3, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                      nn.Conv2d(ndf, ndf * 2, 2, 2, 0, bias=False), nn.BatchNorm2d(ndf * 2),
                      nn.LeakyReLU(0.2, inplace=True), nn.Conv2d(ndf * 2, 1, 2, 1, 0, bias=False),
                      nn.Sigmoid())
    return g, d


def _gan_init(T, m):
    """Initialisation chosen by class name, applied with `Module.apply`."""
    name = m.__class__.__name__
    if name.find("Conv") != -1:
        T.nn.init.normal_(m.weight, 0.0, 0.02)
    elif name.find("BatchNorm") != -1:
        T.nn.init.normal_(m.weight, 1.0, 0.02)
        T.nn.init.zeros_(m.bias)


def _gan_steps(T, g, d, images, noises, device):
    """Alternating D and G updates with Adam(betas=(0.5, 0.999)) and BCELoss; the labels are
    `full((n,), 1, dtype=x.dtype)` refilled in place; D's output `view(-1, 1).squeeze(1)`."""
    crit = T.nn.BCELoss()
    opt_d = T.optim.Adam(d.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_g = T.optim.Adam(g.parameters(), lr=2e-3, betas=(0.5, 0.999))

    def disc(x):
        assert not (x.is_cuda or x.is_xpu)  # the single-device branch
        return d(x).view(-1, 1).squeeze(1)

    out = []
    for real, z in zip(images, noises):
        real, z = T.tensor(real).to(device), T.tensor(z).to(device)
        d.zero_grad()
        label = T.full((real.size(0),), 1, dtype=real.dtype, device=device)
        o = disc(real)
        err_real = crit(o, label)
        err_real.backward()
        d_x = o.mean().item()
        fake = g(z)
        label.fill_(0)
        o = disc(fake.detach())
        err_fake = crit(o, label)
        err_fake.backward()
        opt_d.step()
        g.zero_grad()
        label.fill_(1)
        o = disc(fake)
        err_g = crit(o, label)
        err_g.backward()
        opt_g.step()
        out.append([(err_real + err_fake).item(), err_g.item(), d_x, o.mean().item()])
    return out, fake


def test_dcgan_idioms_match_pytorch_under_mock(tmp_path):
    torch = pytest.importorskip("torch")
    import numpy as np

    rng = np.random.default_rng(0)
    images = [rng.uniform(-1, 1, (6, 3, 8, 8)).astype(np.float32) for _ in range(3)]
    noises = [rng.standard_normal((6, 4, 1, 1)).astype(np.float32) for _ in range(3)]
    torch.manual_seed(0)
    g_ref, d_ref = _gan_parts(torch)
    g_ref.apply(lambda m: _gan_init(torch, m))
    d_ref.apply(lambda m: _gan_init(torch, m))
    init = [{k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
            for m in (g_ref, d_ref)]
    want, _ = _gan_steps(torch, g_ref, d_ref, images, noises, torch.device("cpu"))

    with mock.enable():
        import torch as T

        device = (T.accelerator.current_accelerator() if T.accelerator.is_available()
                  else T.device("cpu"))
        g, d = _gan_parts(T)
        g.apply(lambda m: _gan_init(T, m))
        d.apply(lambda m: _gan_init(T, m))
        bn = g[1]
        assert bn.bias.abs().sum().item() == 0 and 0.9 < bn.weight.mean().item() < 1.1
        assert 0.005 < g[0].weight.std().item() < 0.04
        for m, sd in zip((g, d), init):
            m.load_state_dict({k: T.tensor(v) for k, v in sd.items()})
        g, d = g.to(device), d.to(device)
        got, fake = _gan_steps(T, g, d, images, noises, device)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
        # torchvision's image saving reads a tensor that may require grad with force=True
        pixels = fake.numpy(force=True)
        assert pixels.shape == (6, 3, 8, 8) and fake.requires_grad
        T.save(g.state_dict(), tmp_path / "netG_epoch_0.pth")  # a .pth name: PyTorch's format
        g2, _ = _gan_parts(T)
        g2.load_state_dict(T.load(tmp_path / "netG_epoch_0.pth"))
        for a, b in zip(g.state_dict().values(), g2.state_dict().values()):
            assert a.tolist() == b.tolist()
    sd = torch.load(tmp_path / "netG_epoch_0.pth", weights_only=True)  # real PyTorch reads it
    g_ref.load_state_dict(sd)
    assert int(sd["1.num_batches_tracked"]) == 3
    np.testing.assert_allclose(sd["0.weight"].numpy(), g2[0].weight.detach().numpy())
