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
    with mock.enable(lazy=True, verbose=True):
        import torch
        from torch.no_such_pkg import Thing  # loads: a placeholder
        assert not isinstance(flow.ones(1), Thing)
        with pytest.raises(NotImplementedError, match="jflow has no torch.no_such_pkg.Thing"):
            Thing(3)
        with pytest.raises(NotImplementedError):
            class Sub(Thing):  # subclassing a missing class is a use
                pass
        fn = torch.some_missing_fn
        with pytest.raises(NotImplementedError, match="torch.some_missing_fn"):
            fn(1)
    assert "torch.some_missing_fn" in mock.touched()
    assert "placeholder torch.some_missing_fn used" in capsys.readouterr().err


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


_UNSUPPORTED = {  # docs/porting.md "Not supported": each raises where used
    "torch.fft": lambda: flow.fft,
    "complex32": lambda: flow.ones(2).chalf(),
    "complex relu": lambda: flow.relu(flow.tensor([1j])),
    "LSTM proj_size": lambda: flow.nn.LSTM(4, 8, proj_size=2),
    "packed sequences": lambda: flow.nn.utils.rnn.pack_padded_sequence,
    "named tensors": lambda: flow.ones(2).refine_names("a"),
    "sparse tensors": lambda: flow.ones(2).to_sparse(),
    "storage": lambda: flow.ones(2).storage(),
    "view(dtype)": lambda: flow.ones(2).view(flow.int32),
    "module pickling": lambda: flow.save(flow.nn.Linear(1, 1), os.devnull),
    "jit.script": lambda: flow.jit.script(lambda x: x),
    "vmap different": lambda: flow.func.vmap(lambda t: t, randomness="different")(flow.ones(2)),
    "profiler schedule": lambda: flow.profiler.profile(schedule=object()),
}


@pytest.mark.parametrize("what", sorted(_UNSUPPORTED))
def test_porting_doc_unsupported_list_raises(what):
    with pytest.raises((AttributeError, TypeError, NotImplementedError)):
        _UNSUPPORTED[what]()
    with mock.enable():
        for name in ("torch.fx", "torch.export", "torch.ao.quantization"):
            with pytest.raises(ImportError):
                __import__(name)
