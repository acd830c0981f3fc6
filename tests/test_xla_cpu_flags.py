"""jflow/_xla_cpu_flags.py: convolutions go to XLA's own (multi-threaded) CPU convolution, not
YNNPACK's single-threaded one, while matrix products stay with YNNPACK; the flag is added to
XLA_FLAGS only when the user has not chosen, has not opted out, and the jaxlib is a checked
one."""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jflow import _xla_cpu_flags as F

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu", reason="XLA CPU only")


def _optimized(fn, *args) -> str:
    return jax.jit(fn).lower(*args).compile().as_text()


def test_convolutions_are_xla_s_own_and_products_ynnpack_s() -> None:
    # jflow's value must be in XLA_FLAGS: set by this process's import of jflow, or inherited
    # from the process that started this one (pytest-xdist's workers inherit it from the
    # controlling process, whose import of jflow set it; nothing in the suite changes
    # XLA_FLAGS in-process after the backend started). Only configure()'s own exceptions
    # skip: the user's choice, the opt-out, an unchecked jaxlib.
    flags, ours = os.environ.get("XLA_FLAGS", ""), f"--{F.FLAG}={F.VALUE}"
    if ours not in flags and (F.FLAG in flags or os.environ.get("JFLOW_XLA_CPU_FLAGS") == "0"
                              or not F.jaxlib.__version__.startswith(F.CHECKED)):
        pytest.skip("the user's XLA_FLAGS chose, or opted out, or the jaxlib is not checked")
    assert ours in flags, f"import jflow did not add {ours} to XLA_FLAGS ({flags!r})"
    # (YNNPACK takes a convolution from about this size: 2x8x8x16 stays XLA's by default)
    x = jnp.asarray(np.ones((8, 8, 8, 32), np.float32))
    w = jnp.asarray(np.ones((3, 3, 32, 32), np.float32))
    conv = _optimized(lambda x, w: jax.lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")), x, w)
    assert "convolution(" in conv and "__ynn_fusion" not in conv
    a = jnp.asarray(np.ones((64, 64), np.float32))
    assert "__ynn_fusion" in _optimized(lambda a: a @ a, a)


@pytest.mark.parametrize("env, version, added", [
    ({}, "0.10.2", True),
    ({"XLA_FLAGS": "--xla_force_host_platform_device_count=8"}, "0.10.2", True),
    ({"XLA_FLAGS": "--xla_cpu_experimental_ynn_fusion_type="}, "0.10.2", False),  # the user's
    ({"JFLOW_XLA_CPU_FLAGS": "0"}, "0.10.2", False),
    ({}, "0.11.0", False),  # not checked: an unknown flag would abort the process
])
def test_configure_adds_the_flag_only_when_it_should(monkeypatch: pytest.MonkeyPatch,
                                                     env: dict, version: str,
                                                     added: bool) -> None:
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    monkeypatch.delenv("JFLOW_XLA_CPU_FLAGS", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(F.jaxlib, "__version__", version)
    monkeypatch.setattr(F, "_CHANGED", [])
    before = env.get("XLA_FLAGS", "")
    assert F.configure() is added
    after = os.environ.get("XLA_FLAGS", "")
    if added:
        assert after == f"{before} --{F.FLAG}={F.VALUE}".strip()
    else:
        assert after == before
    # what a launcher hands its processes: XLA_FLAGS as the user had it (unset stays unset)
    assert F.users_environ(dict(os.environ)).get("XLA_FLAGS") == env.get("XLA_FLAGS")
