"""benchmarks/real_models.py in its quick mode (tiny models, 1-2 steps): every mode — PyTorch
eager, jflow eager, lazy, ``nn.Graph``, ``flow.jit`` — runs the model code written once
against the PyTorch API and computes the same losses, and the benchmark's loss check fails
when a mode computes something else. No timing is asserted. Run in-process through the
script's ``main(argv)`` (a subprocess would pay the imports and every compilation again),
except the fresh-process first-steps measurement, which is a subprocess by design."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


def _load() -> ModuleType:
    mod = sys.modules.get("_bench_real_models")
    if mod is None:
        if str(BENCH) not in sys.path:  # the script imports its sibling _timing
            sys.path.insert(0, str(BENCH))
        spec = importlib.util.spec_from_file_location("_bench_real_models",
                                                      BENCH / "real_models.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def rm() -> ModuleType:
    pytest.importorskip("torch")
    import torch
    threads = torch.get_num_threads()
    yield _load()
    torch.set_num_threads(threads)  # main() sets one thread, as the benchmark runs


def test_quick_mode_every_mode_same_losses(rm: ModuleType) -> None:
    lines: list[str] = []
    # the GPT only: the ResNet and LSTM shapes of every mode are tests/compat's (eager,
    # flow.jit, nn.Graph and lazy against PyTorch); compiling them here too doubles the time
    rm.main(["--quick", "--models", "gpt"], out=lines.append)
    text = "\n".join(lines)
    assert "PyTorch runs at 1 thread in 'torch eager'" in text
    assert "and at its default" in text
    modes = [m for m in rm.MODES if m != rm.TORCH_COMPILE]
    header = next(ln for ln in lines if ln.startswith("model"))
    assert [header[64 + 15 * i:78 + 15 * i].strip() for i in range(len(modes))] == modes
    for kind in ["gpt"]:
        rows = {ln[37:63].strip(): ln[64:].split() for ln in lines
                if ln.startswith(f"{kind} (tiny, --quick)")}
        assert set(rows) >= {"ms per step", "x torch eager (per round)", "step-1 loss",
                             "max rel. diff, steps 1-2"}, rows
        losses = [float(v) for v in rows["step-1 loss"]]
        assert len(losses) == len(modes) and np.isfinite(losses).all()
        assert max(losses) - min(losses) <= 1e-4 * abs(losses[0]), (kind, losses)
        assert all(float(v) <= 1e-3 for v in rows["max rel. diff, steps 1-2"]), rows
        assert all(float(v) > 0 for v in rows["ms per step"]), rows
        assert rows["x torch eager (per round)"][0] == "1.00x"
        assert rows["x torch mt (per round)"][1] == "1.00x"  # torch eager mt's own column


def test_each_pytorch_column_runs_at_its_own_thread_count(rm: ModuleType) -> None:
    """The PyTorch modes take turns in one process: each step sets its mode's count (one
    thread for torch eager, PyTorch's default for torch eager mt), whatever ran before."""
    import torch
    rm.main(["--quick", "--models", "gpt", "--modes", "torch eager mt"], out=lambda s: None)
    default = rm._DEFAULT_THREADS[0]
    assert rm.TORCH_THREADS == {rm.TORCH_EAGER: 1, rm.TORCH_COMPILE: 1, rm.TORCH_MT: default}
    cfg = rm.MODELS["gpt"][2]
    init, data = rm.initial_state("gpt", cfg), rm.batches("gpt", cfg)
    one, mt = (rm.make_runner(m, "gpt", cfg, init, data) for m in (rm.TORCH_EAGER, rm.TORCH_MT))
    torch.set_num_threads(3)
    mt.step()
    assert torch.get_num_threads() == default
    one.step()
    assert torch.get_num_threads() == 1


def test_loss_check_names_the_mode_that_differs(rm: ModuleType) -> None:
    ok = {rm.TORCH_EAGER: [2.5, 2.4, 2.3], rm.LAZY: [2.5000001, 2.4001, 2.3]}
    rm.check_losses("gpt", ok, rtol=1e-4, rtol_later=1e-3)
    with pytest.raises(AssertionError, match=r"gpt: step-1 loss of jflow lazy = 2\.5003"):
        rm.check_losses("gpt", {rm.TORCH_EAGER: [2.5], rm.LAZY: [2.5003]}, 1e-4, 1e-3)
    with pytest.raises(AssertionError, match="step-2 loss of jflow lazy"):  # later: looser
        rm.check_losses("gpt", {rm.TORCH_EAGER: [2.5, 2.4], rm.LAZY: [2.5, 2.41]}, 1e-4, 1e-3)
    with pytest.raises(AssertionError, match="step-1 loss of flow.jit = nan"):
        rm.check_losses("gpt", {rm.TORCH_EAGER: [2.5], rm.JIT: [float("nan")]}, 1e-4, 1e-3)


def test_loss_check_catches_a_mode_with_other_weights(rm: ModuleType) -> None:
    """Real runners: one jflow mode starts from weights that differ by 1% in one tensor; the
    benchmark's check must stop the run naming that mode (and pass without the change)."""
    cfg = rm.MODELS["gpt"][2]

    def perturb(mode: str, init: dict) -> dict:
        if mode != rm.EAGER:
            return init
        return {k: (v * 1.01 if k.endswith("head.weight") else v) for k, v in init.items()}

    _, losses, _ = rm.first_losses("gpt", cfg, [rm.TORCH_EAGER, rm.EAGER], 1, 1e-4, 1e-3)
    assert losses[rm.EAGER][0] == pytest.approx(losses[rm.TORCH_EAGER][0], rel=1e-5)
    with pytest.raises(AssertionError, match="gpt: step-1 loss of jflow eager"):
        rm.first_losses("gpt", cfg, [rm.TORCH_EAGER, rm.EAGER], 1, 1e-4, 1e-3,
                        init_for=perturb)


def test_first_steps_in_a_fresh_process(rm: ModuleType, tmp_path: Path) -> None:
    """A cold run in a fresh process: its seconds, memory, losses and setup, and its compile
    events (a cold run traces, lowers and compiles; that a warm run reads the executables
    back is tests/test_compilation_cache.py's)."""
    res = rm.first_steps("gpt", rm.EAGER, True, str(tmp_path), 1)
    assert "error" not in res, res
    ev = res["events"]
    assert set(ev) == set(rm.COMPILE_EVENTS) and all(v > 0 for v in ev.values()), ev
    assert res["seconds"] > 0 and res["rss_mib"] >= 0 and len(res["losses"]) == 3
    assert 0 < res["setup"] < 60  # model, weights, optimizer and batches, before the steps
    cfg = rm.MODELS["gpt"][2]
    _, losses, _ = rm.first_losses("gpt", cfg, [rm.TORCH_EAGER], 3, 1e-4, 1e-3)
    rm.check_losses("gpt", {rm.TORCH_EAGER: losses[rm.TORCH_EAGER], rm.EAGER: res["losses"]},
                    1e-4, 1e-3)


def test_the_compile_floor_compiles_the_whole_step(rm: ModuleType) -> None:
    """The results file's memory floor: XLA's compile of flow.jit's whole-step program, the
    tracing and lowering done before the measurement; the compiled program does the step's
    work (its FLOPs: at least the forward and backward of the tiny GPT's vocabulary head)."""
    res = rm.xla_compile_child("gpt", True)
    c = rm.MODELS["gpt"][2]
    assert res["seconds"] > 0 and res["rss_mib"] >= 0
    assert res["flops"] >= 3 * 2 * c["batch"] * c["block"] * c["d"] * c["vocab"], (res, c)


@pytest.fixture(scope="module")
def floors(rm: ModuleType) -> ModuleType:
    """benchmarks/real_models_floors.py, loaded as a module."""
    spec = importlib.util.spec_from_file_location("_bench_real_models_floors",
                                                  BENCH / "real_models_floors.py")
    floors = importlib.util.module_from_spec(spec)
    sys.modules["real_models"] = rm  # (the script imports its sibling by that name)
    spec.loader.exec_module(floors)
    return floors


def test_floors_quick_mode_measures_its_parts(floors: ModuleType) -> None:
    """benchmarks/real_models_floors.py (what bounds the eager-ResNet, lazy-GPT and memory
    targets): the conv and lazy parts run and print their sums, and each library-convolution
    flag its verdict, read from the compiled program: a custom fusion, as XLA CPU calls a
    library, is recognised; the saved part finds each library's saved activations."""
    lines: list[str] = []
    floors.main(["--quick", "--parts", "conv,lazy"], out=lines.append)
    text = "\n".join(lines)
    assert "conv: 6 convolutions of the ResNet step" in text, text
    assert "XLA's convolutions + PyTorch's other work =" in text, text
    custom = "%f = f32[2] fusion(%a), kind=kCustom, calls=%xnn_fusion"
    assert floors.library_kernels(type("C", (), {"as_text": lambda self: custom})()) == [custom]
    flags = next(ln for ln in lines if "XLA_FLAGS=" in ln)
    assert all(f"--{flag}=" in flags for flag in floors.LIBRARY_CONV_FLAGS), text
    assert "refused" not in flags and "library kernel" in text, text
    assert "lazy: the GPT (quick config)" in text and "nn.Graph + that =" in text
    assert "(nothing ran meanwhile)" in text, text
    # the saved part: both libraries' saved activations found (the tape walked to its end:
    # the same activations within a quarter, in bytes), and printed
    saved = floors.saved_bytes(True, lines.append)
    assert set(saved) == {"gpt", "resnet"}
    for kind, (t, f) in saved.items():
        assert t > 0 and 0.8 < f / t < 1.25, (kind, t, f)
    assert "saved: activations kept for the backward" in "\n".join(lines)
    with pytest.raises(SystemExit, match="unknown --parts"):
        floors.main(["--parts", "bogus"], out=lines.append)


def test_floors_warm_part_prints_each_runs_split(floors: ModuleType, rm: ModuleType,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The warm part runs each model cold, then warm, in one cache directory
    (real_models.first_steps, measured in test_first_steps_in_a_fresh_process) and prints
    each run's seconds with its compile events and what is left of them."""
    calls = []

    def fake(kind, mode, quick, d, threads):
        calls.append((kind, mode, d))
        cold = len(calls) % 2
        return {"seconds": 3.0 if cold else 1.0,
                "events": {"tracing": 0.25, "lowering": 0.5,
                           "compile or load": 2.0 if cold else 0.25}}

    monkeypatch.setattr(rm, "first_steps", fake)
    lines: list[str] = []
    res = floors.warm_split(True, lines.append)
    assert [c[:2] for c in calls] == [("gpt", rm.EAGER)] * 2 + [("resnet", rm.EAGER)] * 2
    assert calls[0][2] == calls[1][2] != calls[2][2] == calls[3][2]  # one directory a model
    assert list(res) == ["gpt", "resnet"] and len(lines) == 5
    assert lines[1].endswith("cold: 3.00 s (tracing 0.25, lowering 0.50, compile or load "
                             "2.00; the rest 0.25)"), lines
    assert lines[2].endswith("warm: 1.00 s (tracing 0.25, lowering 0.50, compile or load "
                             "0.25; the rest 0.00)"), lines
    monkeypatch.setattr(rm, "first_steps", lambda *a: {"error": "boom"})
    with pytest.raises(RuntimeError, match="gpt cold: boom"):
        floors.warm_split(True, lines.append)
