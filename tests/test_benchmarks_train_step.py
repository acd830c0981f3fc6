"""benchmarks/train_step.py's checks, on its small cases, in-process: every mode's first
training step of the digits MLP computes the pure-JAX step's loss (the script raises
otherwise), and the Graph-call-overhead case's nn.Graph equals its hand-written jax.jit step
and does not retrace while timed. No timing is asserted: the benchmark's own runs are in
benchmarks/results_train_step_cpu.txt."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def ts() -> ModuleType:
    if str(BENCH) not in sys.path:  # the script imports its sibling _timing
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("_bench_train_step", BENCH / "train_step.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_mode_of_the_mlp_step_computes_the_jax_loss(ts: ModuleType) -> None:
    ts.USE_TORCH = False  # PyTorch's column is the real-model test's (torch is optional)
    times = ts.run_case("mlp", 1, 1)
    assert set(times) == {"jflow graph", "jax", "jflow eager", "jflow lazy"}
    assert all(t > 0 for t in times.values())


def test_graph_call_overhead_case_runs(ts: ModuleType) -> None:
    jax_us, graph_us, _ = ts.graph_overhead(calls=20)
    assert jax_us > 0 and graph_us > 0
