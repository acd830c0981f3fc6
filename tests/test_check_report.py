"""``check_op`` returns a report of what it checked (docs/custom_ops.md, step 6): each count
is the number of samples a check really ran on, and what did not run says why. Failures
still raise (tests/test_checker_catches.py). Op names are unique (``tcr_``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jflow.autograd import register_backward
from jflow.kernels import register_kernel
from jflow.ops import define_op
from jflow.ops.infer import same_as_input
from jflow.sharding.sbp import elementwise
from jflow.testing import CheckFailure, CheckReport, ErrorSample, Sample, check_op, register_samples

ROOT = Path(__file__).resolve().parent.parent
X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)


def _sin(name: str, samples: list[Sample], **kw: Any) -> None:
    define_op(name, inputs=["x"], infer=same_as_input(), **kw)
    register_kernel(name, jnp.sin)
    register_samples(name, samples, np.sin)

    if "NoGrad" not in kw.get("traits", ()):
        @register_backward(name, save=["x"])
        def _(ctx: Any, dy: Any) -> Any:
            (x,) = ctx.saved_tensors
            return dy * x.cos()


def _float_only(x: Any) -> Any:
    if not jnp.issubdtype(x.dtype, jnp.floating):
        raise TypeError(f"x must be floating, got {x.dtype}")
    return jax.ShapeDtypeStruct(x.shape, x.dtype)


def test_report_counts_what_ran() -> None:
    name = "tcr_sin_err"
    define_op(name, inputs=["x"], infer=_float_only)
    register_kernel(name, jnp.sin)

    @register_backward(name, save=["x"])
    def _(ctx: Any, dy: Any) -> Any:
        (x,) = ctx.saved_tensors
        return dy * x.cos()

    register_samples(name, [
        Sample([X]),
        Sample([X.astype(np.float64)], vmap=False),
        # vmap runs on the first sample per kernel; vmap=True adds this one
        Sample([X], grad=False, rtol=1e-3, atol=1e-4, name="loose", vmap=True),
    ], np.sin, errors=[ErrorSample([np.arange(3)], {}, TypeError, "must be floating")])
    rep = check_op(name)
    assert isinstance(rep, CheckReport)
    assert (rep.samples, rep.inference, rep.vmap, rep.errors) == (3, 3, 2, 1)
    # jax.jit on every sample; eager on the kernel's first sample and the vmap=True one
    # (their loop of eager calls is the vmap reference), not the second
    assert (rep.jit, rep.eager) == (3, 2)
    assert rep.grad == (2, 0)  # the grad=False sample is not applicable
    assert rep.grad_jax == 1  # both gradient samples are real in, real out (in float64)
    assert rep.input_dtypes == ["float32", "float64"]
    assert rep.tolerances == ["float32 rtol=2e-05 atol=2e-06", "float64 rtol=1e-09 atol=1e-12",
                              "float32 rtol=0.001 atol=0.0001"]
    text = str(rep)
    assert text.splitlines()[0] == f"check_op('{name}'): passed"
    assert "samples: 3 (input dtypes: float32, float64), error samples: 1" in text
    assert "vmap: jax.vmap vs a loop of eager calls on 2 of 3 sample(s)" in text
    assert "values: vs the NumPy reference on 3 sample(s): jax.jit on 3, eager on 2" in text
    assert "in float64 on 2 sample(s), jax.grad vs the same and jax.jvp vs jax.vjp on 1 of " \
           "them" in text
    assert "; 0 skipped (no float64 output); 1 not applicable" in text
    assert "SBP: not checked" in text


def test_report_says_what_was_not_checked() -> None:
    _sin("tcr_sin_nograd", [Sample([X])], traits=["NoGrad"])
    assert "gradients: not checked (a NoGrad op)" in str(check_op("tcr_sin_nograd"))
    _sin("tcr_sin_plain", [Sample([X])])
    rep = check_op("tcr_sin_plain", grad=False)
    assert rep.grad is None and "gradients: not checked (grad=False)" in str(rep)


def test_failures_still_raise() -> None:
    define_op("tcr_wrong", inputs=["x"], infer=same_as_input())
    register_kernel("tcr_wrong", lambda x: x * 2)
    register_samples("tcr_wrong", [Sample([X])], lambda x: x * 3)
    with pytest.raises(CheckFailure, match="eager vs NumPy reference"):
        check_op("tcr_wrong")


@pytest.mark.skipif(len(jax.devices("cpu")) < 4, reason="needs 4 (virtual) CPU devices")
def test_sbp_check_on_request() -> None:
    _sin("tcr_sin_sbp", [Sample([X])], sbp=elementwise("none"))
    rep = check_op("tcr_sin_sbp", sbp=True)
    assert rep.sbp_exercised == ["(B) -> (B)", "(S(0)) -> (S(0))", "(S(1)) -> (S(1))"]
    assert "SBP: 3 declared signature(s) run on global tensors" in str(rep)


def test_sbp_check_needs_several_devices() -> None:
    code = ("import jax, numpy as np, jax.numpy as jnp\n"
            "from jflow.ops import define_op\nfrom jflow.ops.infer import same_as_input\n"
            "from jflow.kernels import register_kernel\n"
            "from jflow.testing import Sample, check_op, register_samples\n"
            "define_op('one_dev', inputs=['x'], infer=same_as_input())\n"
            "register_kernel('one_dev', jnp.sin)\n"
            "register_samples('one_dev', [Sample([np.ones(4, np.float32)])], np.sin)\n"
            "print(check_op('one_dev', grad=False))\n"
            "check_op('one_dev', grad=False, sbp=True)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES")}
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=600, env={**env, "JAX_PLATFORMS": "cpu"})
    assert run.returncode == 1 and "check_op('one_dev'): passed" in run.stdout
    assert "RuntimeError: check_op('one_dev', sbp=True): the SBP check needs 2 or more CPU " \
           "devices, this process has 1" in run.stderr, run.stderr[-2000:]
