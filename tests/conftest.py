"""Test session setup: 8 virtual CPU devices for the SBP tests (must precede any JAX work).

``JFLOW_TEST_LAZY=1 python -m pytest tests/...`` runs every test inside a ``flow.lazy()``
block: a tool for finding lazy-mode bugs with the whole suite's code (docs/lazy.md), not a
CI gate — what lazy mode changes by design fails there (a value error raised at the read
instead of the call, ``type(t) is Tensor`` on a pending tensor, the last bit of a fused
computation).

Compilation is most of the suite's time. One JAX persistent compilation cache serves the
whole run (``JFLOW_COMPILATION_CACHE``, made here in the controlling process before
pytest-xdist starts its workers, which inherit it, as do the subprocesses tests start): a
program compiled by one worker or subprocess is read back by the others — the ranks of a
launch, the library cases, the examples compile the same ops. Per run, not the user's
``~/.cache``: a run starts cold, as on CI, and leaves nothing behind; a developer may set
``JFLOW_COMPILATION_CACHE`` to a directory of their own to keep it warm. (XLA's CPU flags
that compile faster — ``--xla_backend_optimization_level=0`` — were tried and rejected: they
change float results enough that lazy mode no longer equals eager to 1e-5, so the suite would
test another program than the users run. So were XLA's older CPU emitters,
``--xla_cpu_use_fusion_emitters=false``: 22:31 -> 17:25 for the suite, but a bfloat16 Adam
run eager vs lazy and generated vs plain code no longer agree bit for bit.)

Where the time goes (measured 2026-12-04, JAX's compile events per test file, -n 2, 19:19):
17,704 XLA compiles take 1,163 s of the workers' 2,252 s in tests (~66 ms each), lowering
284 s, tracing 37 s; the persistent cache answers 2,545 compiles. An XLA CPU compile costs
~20 ms per elementwise fusion (an ``x + 1`` program: HLO passes ~4.5 ms, its MLIR fusion
emitter ~4.6 ms, LLVM ~6.5 ms; a single matrix product, no generated code, ~10 ms), so the
op checker's staged traces (831 of them, 240 s) cost what their fusions cost. Flags that
keep the generated code the same gave nothing (``xla_cpu_parallel_codegen_split_count=1``,
``xla_cpu_emitter_verification_level=0``, ``xla_llvm_disable_expensive_passes``,
``xla_cpu_opt_preset=CPU_OPT_PRESET_FAST_COMPILE``: within noise on 1,040 compiles); the
cache off was slower (439 vs 418 s on three files). pytest-xdist's ``loadgroup`` (one worker
for a module that waits on a shared run) was ~10% slower on ungrouped tests than ``load``.
"""

import atexit
import gc
import os
import shutil
import tempfile

if "JFLOW_COMPILATION_CACHE" not in os.environ:
    _run_cache = tempfile.mkdtemp(prefix="jflow-test-xla-cache-")
    os.environ["JFLOW_COMPILATION_CACHE"] = _run_cache
    atexit.register(shutil.rmtree, _run_cache, ignore_errors=True)

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)

#: the executables a worker keeps before jflow clears JAX's caches (flow.config's default is
#: 2048): a worker compiles ~10,000 programs over the suite, and every clear makes the
#: common ops trace and lower again; with their lowerings dropped (executable_budget) 6144
#: executables hold ~2 GiB at most
EXECUTABLE_LIMIT = 6144


def pytest_configure(config: pytest.Config) -> None:
    import jflow as flow
    flow.config.set_executable_limit(EXECUTABLE_LIMIT)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Objects alive once every test module is imported (PyTorch's op database, the
    modules themselves) live to the end: keep them out of the garbage collector's full
    passes (``gc.freeze``), which otherwise walk them all again and again (measured on the
    OpInfo cases: ~1.5 s per 120)."""
    gc.freeze()

if os.environ.get("JFLOW_TEST_LAZY") == "1":
    @pytest.fixture(autouse=True)
    def _every_test_lazy():
        import jflow as flow
        with flow.lazy():
            yield
