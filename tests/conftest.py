"""Test session setup: 8 virtual CPU devices for the SBP tests (must precede any JAX work).

``JFLOW_TEST_LAZY=1 python -m pytest tests/...`` runs every test inside a ``flow.lazy()``
block: a tool for finding lazy-mode bugs with the whole suite's code (docs/lazy.md), not a
CI gate — what lazy mode changes by design fails there (a value error raised at the read
instead of the call, ``type(t) is Tensor`` on a pending tensor, the last bit of a fused
computation)."""

import os

import jax
import pytest

jax.config.update("jax_num_cpu_devices", 8)

if os.environ.get("JFLOW_TEST_LAZY") == "1":
    @pytest.fixture(autouse=True)
    def _every_test_lazy():
        import jflow as flow
        with flow.lazy():
            yield
