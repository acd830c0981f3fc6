"""Memory stays bounded when eager code meets many shapes: jflow's caches have bounds
(``flow.config.cache_limits``), and JAX's executables are cleared after a budget of compiles
(``flow.config.set_executable_limit``), at the next op call outside any trace."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import jflow as flow
from jflow import executable_budget

_RSS_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import jflow as flow

    def rss_mib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    limit = None if sys.argv[1] == "none" else int(sys.argv[1])
    flow.config.set_executable_limit(limit)
    (flow.tensor(np.ones(1, np.float32)) + 1).numpy()
    start = rss_mib()
    for n in range(2, 2 + int(sys.argv[2])):     # distinct shapes of x + 1
        (flow.tensor(np.ones(n, np.float32)) + 1).numpy()
    print(rss_mib() - start, flow.config.executable_stats()["clears"])
""")


def _grow(limit: str, shapes: int) -> tuple[float, int]:
    out = subprocess.run([sys.executable, "-c", _RSS_SCRIPT, limit, str(shapes)],
                         capture_output=True, text=True, timeout=600, check=True).stdout.split()
    return float(out[0]), int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_200_shapes_stay_under_the_stated_bound():
    """With a budget of 16 executables, 200 shapes grow RSS by less than 100 MiB: measured
    ~20 MiB, where without a budget they take about 1.4 MiB each (~290 MiB on CPU; 600
    shapes ~850 MiB). Each shape is one compile: 200 of them with a small budget clear
    as often (12 times) as 600 with a budget of 64, at a third of the compiles."""
    grown, clears = _grow("16", 200)
    assert clears >= 8
    assert grown < 100, f"RSS grew by {grown:.0f} MiB over 200 shapes"


def test_cache_limits_are_listed_and_settable():
    limits = flow.config.cache_limits()
    assert {"op_executables", "backward_graphs", "scalar_operands"} <= set(limits)
    assert all(isinstance(v, int) and v > 0 for v in limits.values())
    old = flow.config.set_cache_limit("backward_graphs", 7)
    try:
        from jflow.autograd.engine import graph_cache
        assert graph_cache.size == 7 and flow.config.cache_limits()["backward_graphs"] == 7
    finally:
        flow.config.set_cache_limit("backward_graphs", old)
    with pytest.raises(KeyError, match="unknown cache 'nope'"):
        flow.config.set_cache_limit("nope", 3)
    with pytest.raises(ValueError, match="positive int"):
        flow.config.set_cache_limit("boxing", 0)
    with pytest.raises(ValueError, match="set_executable_limit: limit must be"):
        flow.config.set_executable_limit(-1)


def test_the_budget_clears_at_the_next_op_outside_a_trace():
    old = flow.config.set_executable_limit(2)
    try:
        before = flow.config.executable_stats()["clears"]
        x = flow.tensor(np.arange(5, dtype=np.float32))

        def f(v):  # ops traced under jax.jit: no clearing inside the trace
            t = flow.utils.from_jax(v)
            return ((t * 3) + 1)._value

        np.testing.assert_allclose(jax.jit(f)(np.ones(7, np.float32)), 4.0)
        for n in range(3, 7):  # new shapes compile; the next op call outside clears
            flow.tensor(np.ones(n, np.float32)) * 2
        assert flow.config.executable_stats()["clears"] > before
        np.testing.assert_allclose((x + 1).numpy(), np.arange(5) + 1)  # still computes
    finally:
        flow.config.set_executable_limit(old)
        executable_budget._state["armed"] = False
