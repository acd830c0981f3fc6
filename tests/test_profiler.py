"""flow.profiler: eager ops (name, shapes, kernel, time), compiled steps and their retraces,
ranges, a Chrome trace and a jax.profiler trace; nothing left switched on afterwards."""

from __future__ import annotations

import json
import os

import pytest

import jflow as flow
from jflow.ops import get


def test_eager_ops_compiled_steps_and_ranges(tmp_path):
    m = flow.nn.Linear(8, 4)
    x = flow.randn(16, 8)
    step = flow.jit(lambda a: m(a).relu().sum())
    with flow.profiler.profile(record_shapes=True) as prof:
        with flow.profiler.record_function("my forward"):
            for _ in range(3):
                m(x).relu()
        step(x)
        step(x)
        step(flow.randn(4, 8))  # a new shape: retraced, with the reason
    rows = {r.key: r for r in prof.key_averages()}
    assert rows["linear"].count == 3 and rows["relu"].count == 3
    assert rows["linear"].kernel == "linear_xla"
    assert rows["my forward"].count == 1
    name = step.name  # the function's qualified name
    assert rows[f"compiled {name}"].count == 3 and rows[f"trace {name}"].count == 2
    assert rows["linear (traced)"].count == 2  # staged while tracing, kept apart
    by_shape = {(r.key, str(r.input_shapes)): r for r in
                prof.key_averages(group_by_input_shape=True)}
    assert by_shape[("linear", "[[16, 8], [4, 8], [4]]")].count == 3
    retrace = [e for e in prof.events() if e.kind == "retrace"][-1]
    assert "argument leaf 0 changed: Tensor[16, 8] float32 -> Tensor[4, 8]" in retrace.detail
    rng = next(e for e in prof.events() if e.name == "my forward")
    ops = [e for e in prof.events() if e.name == "linear"]
    assert all(rng.start_us <= e.start_us and e.start_us + e.duration_us
               <= rng.start_us + rng.duration_us + 1e-3 and e.depth == rng.depth + 1
               for e in ops)
    # compilation is reported apart: the step's first call traced and compiled, its second
    # ran the cached executable (JAX's compile events, summed per recorded call)
    first, second = [e for e in prof.events() if e.name == f"compiled {name}"][:2]
    assert 0 < first.compile_us <= first.duration_us and second.compile_us == 0
    assert first.cpu_time_total == pytest.approx(first.duration_us - first.compile_us)
    assert rows[f"compiled {name}"].compile_time_total >= first.compile_us
    total = sum(e.cpu_time_total for e in prof.events())
    compiling = sum(e.compile_us for e in prof.events())
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=5)
    assert table.splitlines()[0].startswith("Name") and len(table.splitlines()) == 2 + 5 + 1
    assert "Compile us" in table.splitlines()[0]
    assert f"Total: {total:.1f} us in" in table and f"and {compiling:.1f} us compiling" in table
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert len(events) == len(prof.events())
    assert {"name", "ph", "ts", "dur", "pid", "tid"} <= set(events[0])
    assert any(e["args"].get("kernel") == "linear_xla" for e in events)


def test_off_means_the_plain_code_and_nothing_recorded():
    op = get("add")
    plain, profiled = op.apply._codes
    assert op.apply.__code__ is plain
    with flow.profiler.profile() as prof:
        assert op.apply.__code__ is profiled
        flow.ones(2) + 1
    assert op.apply.__code__ is plain
    n = len(prof.events())
    flow.ones(2) + 1
    with flow.profiler.record_function("free"):  # no profiler: a no-op
        pass
    assert len(prof.events()) == n


def test_errors_and_the_jax_trace(tmp_path):
    with flow.profiler.profile():
        with pytest.raises(RuntimeError, match="another profiler is already running"):
            flow.profiler.profile().start()
    with pytest.raises(NotImplementedError, match="schedule"):
        flow.profiler.profile(schedule=object())
    with pytest.raises(TypeError, match="ProfilerActivity"):
        flow.profiler.profile(activities=["cpu"])
    d = tmp_path / "tb"
    with flow.profiler.profile(activities=[flow.profiler.ProfilerActivity.CPU],
                               on_trace_ready=flow.profiler.tensorboard_trace_handler(str(d))):
        flow.ones(3).exp()
    written = [f for _, _, fs in os.walk(d) for f in fs]
    assert any(f.endswith(".xplane.pb") for f in written), written
