"""The op checker over every built-in op: inference vs the kernel, NumPy reference, jit,
vmap, error samples and the SBP check in one test per op (the SBP check compares with the
forward check's single-device results: no executable of its own for them), the gradient
check in another. An op registered without samples, a differentiable op without a backward
rule or without a sample whose gradient is really checked, or a declared SBP signature that
no sample runs, fails here."""

from __future__ import annotations

import pytest

import jflow
from jflow.testing import check_op, check_op_grad, samples_registered
from jflow.testing.op_samples import load_builtin

load_builtin()
BUILTIN = sorted(n for n in jflow.ops.list_ops() if jflow.ops.get(n).builtin)


def test_every_builtin_op_has_samples() -> None:
    missing = sorted(set(BUILTIN) - set(samples_registered()))
    assert not missing, f"ops registered without checker samples: {missing}"


def test_samples_name_real_ops() -> None:
    unknown = sorted(set(samples_registered()) - set(jflow.ops.list_ops()))
    assert not unknown, f"samples registered for unknown ops: {unknown}"


def test_every_builtin_op_is_nograd_or_has_a_rule() -> None:
    missing = sorted(n for n in BUILTIN if jflow.ops.get(n).grad_rule is None
                     and not jflow.ops.get(n).has_trait("NoGrad"))
    assert not missing, f"differentiable ops without a backward rule: {missing}"


@pytest.mark.parametrize("op_name", [n for n in BUILTIN if n in samples_registered()])
def test_op(op_name: str) -> None:
    """The forward checks, and for an op with inputs the SBP check: every SBP signature, on
    global inputs laid out as it says (4, 3 or 2 devices), gives the single-device result
    (the forward check's own, already compared with the reference) and the declared output
    SBP; and every signature the op declares for some sample's shapes runs on some sample
    (none left unchecked by uneven splits or by an earlier signature with the same
    inputs)."""
    has_inputs = bool(jflow.ops.get(op_name).inputs)
    report = check_op(op_name, grad=False, sbp=has_inputs)
    assert not report.sbp_missing, "declared SBP signatures no sample runs:\n" + \
        report.sbp_missing


@pytest.mark.parametrize("op_name", [n for n in BUILTIN if n in samples_registered()
                                     and not jflow.ops.get(n).has_trait("NoGrad")])
def test_op_grad(op_name: str) -> None:
    """The backward rule is checked against finite differences on at least one sample
    (samples whose outputs are not float64, e.g. a cast to int, do not count)."""
    checked, _skipped = check_op_grad(op_name)
    assert checked > 0


def test_sbp_signatures_share_device_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SBP check runs an op's signatures on the fewest device counts that split each
    evenly (one executable per count), the largest where that is free: abs's samples are
    (2, 4), so S(0) needs 2 devices and S(1), which 4 also splits, joins it on 2;
    adam_update's first sample is (4, 8), split evenly by 4 on either axis, so 4."""
    from jflow.testing import sbp_check

    counts: list[list[int]] = []
    run = sbp_check._run_staged

    def record(op: object, runs: list) -> None:
        counts.append(sorted({r.n for r in runs}))
        run(op, runs)

    monkeypatch.setattr(sbp_check, "_run_staged", record)
    cov = sbp_check.sbp_coverage("abs")
    assert {"(S(0)) -> (S(0))", "(S(1)) -> (S(1))"} <= set(cov.exercised)
    assert counts == [[2]]
    counts.clear()
    cov = sbp_check.sbp_coverage("adam_update")
    assert any("S(1)" in sig for sig in cov.exercised) and not cov.missing
    assert counts == [[4]]
