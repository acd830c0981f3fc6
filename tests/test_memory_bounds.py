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
from jflow import executable_budget, nn

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


_LOWERING_SCRIPT = textwrap.dedent("""
    import numpy as np
    import jflow as flow

    def rss_mib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    (flow.tensor(np.ones(1, np.float32)) + 1).numpy()
    grown = []
    for keep, op in ((True, lambda t: t * 2), (False, lambda t: t + 1)):  # kept first: see test
        flow.config.set_release_lowerings(not keep)
        start = rss_mib()
        for n in range(2, 42):     # 40 distinct shapes: 40 executables
            op(flow.tensor(np.ones(n, np.float32))).numpy()
        grown.append(rss_mib() - start)
    print(*grown)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_dropping_lowerings_cuts_what_each_executable_keeps():
    """40 new executables with JAX's lowered modules kept grow RSS by about 1.5 MiB each;
    with them dropped after each compile (the default), by about 0.2. The kept phase runs
    first so that the second cannot reuse memory the first freed."""
    out = subprocess.run([sys.executable, "-c", _LOWERING_SCRIPT], capture_output=True,
                         text=True, timeout=600, check=True).stdout.split()
    kept, dropped = (float(v) for v in out)
    assert kept > 35, f"40 executables with their lowerings grew RSS by only {kept:.0f} MiB"
    assert dropped < kept / 2, f"dropped {dropped:.0f} MiB vs kept {kept:.0f} MiB"


def test_lowerings_are_dropped_after_each_compile_and_executables_kept():
    from jflow import _jax_compat
    caches = _jax_compat._lowering_caches()
    assert len(caches) == 3  # this JAX keeps lowerings where release_lowerings looks
    compiles: list[str] = []

    def count(event: str, duration: float, **_: object) -> None:
        compiles.append(event)

    jax.monitoring.register_event_duration_secs_listener(count)
    old = flow.config.set_release_lowerings(True)
    try:
        xs = [flow.tensor(np.arange(n, dtype=np.float32)) for n in (91, 92, 93)]
        for x in xs:  # new shapes: each compiles, and its lowering is dropped after
            np.testing.assert_allclose((x * 5).numpy(), np.arange(x.shape[0]) * 5)
        assert all(c.cache_info().currsize == 0 for c in caches)
        n = len(compiles)
        for x in xs:  # the executables stay: no compile, no lowering
            np.testing.assert_allclose((x * 5).numpy(), np.arange(x.shape[0]) * 5)
        assert len(compiles) == n, compiles[n:]
        flow.config.set_release_lowerings(False)
        (flow.tensor(np.ones(94, np.float32)) * 5).numpy()
        assert caches[0].cache_info().currsize >= 1  # kept: JAX's own behaviour
        with pytest.raises(TypeError, match="set_release_lowerings: flag must be a bool"):
            flow.config.set_release_lowerings("yes")
    finally:
        flow.config.set_release_lowerings(old)
        jax.monitoring.unregister_event_duration_listener(count)


def test_the_c_heap_is_trimmed_after_a_large_compile(monkeypatch):
    """A compile event (JAX's, with its duration) of ``TRIM_AFTER_S`` or more gives the C
    heap's free memory back to the OS; shorter ones (small ops, persistent-cache loads) do
    not. Off with the lowerings switch. (The trim itself: the next test.)"""
    from jflow import _malloc_trim
    from jflow import executable_budget as eb
    calls: list[int] = []
    monkeypatch.setattr(_malloc_trim, "trim", lambda: calls.append(1) or True)
    monkeypatch.setattr(_malloc_trim, "available", lambda: True)
    old = flow.config.set_release_lowerings(True)
    try:
        before = flow.config.executable_stats()["trims"]
        for _ in range(20):
            eb._on_compile(eb._COMPILE_EVENT, eb.TRIM_AFTER_S / 2)
        eb._on_compile("/jax/some/other/event", 5.0)  # (not a compile)
        assert calls == []
        eb._on_compile(eb._COMPILE_EVENT, eb.TRIM_AFTER_S)
        assert calls == [1] and flow.config.executable_stats()["trims"] == before + 1
        flow.config.set_release_lowerings(False)
        eb._on_compile(eb._COMPILE_EVENT, 1.0)
        assert calls == [1]
    finally:
        flow.config.set_release_lowerings(old)


def test_a_compile_leaves_trims_for_the_next_two_items(monkeypatch):
    """Any compile (or persistent-cache load) leaves two trims pending, which the next two
    ``Tensor.item()`` calls run after their read (the losses of the step that compiled and
    of the next one: their freed buffers go back to the OS); a third read, with no compile
    between, trims nothing. Off with the lowerings switch."""
    from jflow import _malloc_trim
    from jflow import executable_budget as eb
    calls: list[int] = []
    monkeypatch.setattr(_malloc_trim, "trim", lambda: calls.append(1) or True)
    monkeypatch.setattr(_malloc_trim, "available", lambda: True)
    loss = flow.tensor(np.float32(2.5))
    old = flow.config.set_release_lowerings(True)
    try:
        loss.item()  # (whatever this process compiled before)
        loss.item()
        calls.clear()
        eb._on_compile(eb._COMPILE_EVENT, eb.TRIM_AFTER_S / 2)  # (small: no trim now)
        assert calls == [] and _malloc_trim.PENDING[0] == 2
        assert loss.item() == 2.5 and calls == [1] and _malloc_trim.PENDING[0] == 1
        assert loss.item() == 2.5 and calls == [1, 1] and not _malloc_trim.PENDING[0]
        assert loss.item() == 2.5 and calls == [1, 1]
        flow.config.set_release_lowerings(False)
        eb._on_compile(eb._COMPILE_EVENT, eb.TRIM_AFTER_S / 2)
        assert not _malloc_trim.PENDING[0]
    finally:
        flow.config.set_release_lowerings(old)


def test_large_first_compiles_trim_before(monkeypatch):
    """The C heap is trimmed right before the first call of a large program: an eager
    backward graph of ``LARGE`` nodes or more (not a small one, not the same graph again)
    and a fused optimizer step of ``LARGE`` tensors or more (its first call only). Off with
    the lowerings switch."""
    from jflow import _malloc_trim
    from jflow.lazy_mode import optimizer_step
    calls: list[int] = []
    monkeypatch.setattr(_malloc_trim, "trim", lambda: calls.append(1) or True)
    # (a slow compile's own trim after it, executable_budget's, is another test's)
    monkeypatch.setattr(executable_budget, "TRIM_AFTER_S", float("inf"))
    x = flow.tensor(np.linspace(-1, 1, 5, dtype=np.float32), requires_grad=True)

    def chain(n: int) -> None:
        y = x
        for _ in range(n):
            y = (y * 1.01).tanh()
        y.sum().backward()

    chain(3)  # ~7 nodes
    assert calls == []
    n = _malloc_trim.LARGE // 2 + 1  # (two nodes a link)
    chain(n)
    assert calls == [1]
    chain(n)  # (the same graph: compiled already)
    assert calls == [1] and x.grad is not None

    ps = [nn.Parameter(flow.tensor(np.full(3, 0.5, np.float32)))
          for _ in range(_malloc_trim.LARGE // 4 + 1)]  # (4 tensors a parameter, + steps)
    opt = flow.optim.Adam(ps, lr=0.01)
    monkeypatch.setattr(optimizer_step, "EAGER", [True])  # (Adam's eager steps fused too)
    calls.clear()
    for _ in range(optimizer_step.EAGER_AFTER + 2):
        for p in ps:
            p.grad = flow.tensor(np.ones(3, np.float32))
        opt.step()
    assert calls == [1]  # (the fused step's first call, at the EAGER_AFTER + 1-th step)
    old = flow.config.set_release_lowerings(False)
    try:
        chain(n + 1)
        assert calls == [1]
    finally:
        flow.config.set_release_lowerings(old)


_TRIM_SCRIPT = textwrap.dedent("""
    import ctypes
    from jflow import _malloc_trim

    def rss_mib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = []
    for _ in range(4000):  # 4000 x 32 KiB (below glibc's mmap threshold: heap memory)
        p = libc.malloc(32768)
        ctypes.memset(p, 1, 32768)
        blocks.append(p)
    keep = libc.malloc(64)  # (on top of the heap: the free space below is not at its end)
    for p in blocks:
        libc.free(p)
    held = rss_mib()
    print(_malloc_trim.trim(), held - rss_mib())
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_trim_gives_freed_heap_memory_back():
    """125 MiB malloc'ed in small blocks and freed stay resident (glibc keeps them for
    reuse); :func:`jflow._malloc_trim.trim` gives them back."""
    from jflow import _malloc_trim
    if not _malloc_trim.available():
        pytest.skip("this C library has no malloc_trim")
    out = subprocess.run([sys.executable, "-c", _TRIM_SCRIPT], capture_output=True,
                         text=True, timeout=300, check=True).stdout.split()
    assert out[0] == "True" and float(out[1]) > 100, out
