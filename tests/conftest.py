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
test another program than the users run.)
"""

import atexit
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

if os.environ.get("JFLOW_TEST_LAZY") == "1":
    @pytest.fixture(autouse=True)
    def _every_test_lazy():
        import jflow as flow
        with flow.lazy():
            yield
