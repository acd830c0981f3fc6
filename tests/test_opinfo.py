"""PyTorch's own op test database against jflow: every OpInfo whose op jflow has runs its
first value samples through PyTorch and jflow (values in float32, gradients in float64) and
must agree (``jflow/testing/opinfo.py``). An op added to jflow is covered as soon as its name
resolves. Deliberate differences and known gaps are listed, with their reasons, in
``opinfo.ALLOWED``; an entry that starts passing fails here so the list stays true.

The full sweep (more samples per op, the report of what is missing) is
``benchmarks/opinfo_sweep.py``.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("expecttest")  # PyTorch's testing internals import it

from jflow.testing import opinfo  # noqa: E402

#: Samples per OpInfo in the suite (the sweep runs 6 and 3): enough to meet each entry's
#: main cases while keeping the XLA compiles of ~650 ops within the suite's budget. The
#: gradient sample is the first value sample: one float32 run compares both
#: (``check_opinfo(float32_grads=True)``), so no float64 forward compiles.
FORWARD_SAMPLES, GRAD_SAMPLES = 2, 1

_DB = {opinfo.key(i): i for i in opinfo.op_db()}
_PRESENT = sorted(k for k, i in _DB.items() if opinfo.resolve(i) is not None)


@pytest.fixture(scope="module", autouse=True)
def _frozen_heap() -> Iterator[None]:
    """The objects alive when this module's cases start (PyTorch's ~600k-object op database,
    every earlier test's leftovers) are left out of the cyclic garbage collector's full
    passes while they run (``gc.freeze``; restored after): each full pass walked them all,
    ~1.5 s per 120 cases, for garbage the cases make and free themselves."""
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.mark.parametrize("name", _PRESENT)
def test_opinfo_matches_pytorch(name: str) -> None:
    rep = opinfo.check_opinfo(_DB[name], FORWARD_SAMPLES, GRAD_SAMPLES, float32_grads=True)
    failures = rep.failures()
    if name in opinfo.ALLOWED:
        assert failures, (f"{name} now matches PyTorch on the suite's samples: remove it from "
                          f"jflow.testing.opinfo.ALLOWED ({opinfo.ALLOWED[name]})")
        return
    assert not failures, f"{name} differs from PyTorch:\n" + "\n".join(failures)


def test_allowed_entries_name_real_opinfos() -> None:
    stale = sorted(set(opinfo.ALLOWED) - set(_DB))
    assert not stale, f"ALLOWED names OpInfos PyTorch's database does not have: {stale}"
    stale = sorted(set(opinfo.GRAD_FLOAT64) - set(_DB))
    assert not stale, f"GRAD_FLOAT64 names OpInfos PyTorch's database does not have: {stale}"
    stale = sorted(set(opinfo.SEPARATE_GRAD_RUN) - set(_DB))
    assert not stale, f"SEPARATE_GRAD_RUN names OpInfos PyTorch's database does not have: {stale}"


def test_harness_catches_a_wrong_op(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison fails when jflow's result is wrong (values, then gradients)."""
    import jflow as flow

    info = _DB["sin"]
    monkeypatch.setattr(opinfo, "resolve", lambda i: flow.cos)
    rep = opinfo.check_opinfo(info, 1, 1)
    assert any("values differ" in f for f in rep.failures()), rep.failures()
    rep = opinfo.check_opinfo(_DB["exp"], 0, 1)  # cos's gradient is not exp's
    assert any(f.startswith("gradient") for f in rep.failures()), rep.failures()


def test_float32_gradient_sample_compares_values_and_gradients(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``float32_grads``: the first sample's one float32 run still fails on wrong values and
    on wrong gradients; the second value sample runs as before."""
    import jflow as flow

    shared = []
    both = opinfo.run_sample_values_and_grads
    monkeypatch.setattr(opinfo, "run_sample_values_and_grads",
                        lambda *a: shared.append(a[2]) or both(*a))
    right = opinfo.check_opinfo(_DB["sinc"], 2, 1, float32_grads=True)
    assert [o.kind for o in right.forward + right.grads] == ["pass"] * 3, right
    assert len(shared) == 1 and shared[0].input.dtype == torch.float32
    assert shared[0].input.requires_grad
    monkeypatch.setattr(opinfo, "resolve", lambda i: lambda x: 2 * flow.sinc(x))
    wrong = opinfo.check_opinfo(_DB["sinc"], 2, 1, float32_grads=True)
    kinds = [o.kind for o in wrong.forward + wrong.grads]
    assert kinds == ["mismatch", "pass", "mismatch"], wrong  # sample 1 is empty: (1, 0, 3)
    assert "values differ" in wrong.forward[0].detail and "grad[0]" in wrong.grads[0].detail
    # an entry differentiated through a wrapper runs its gradient sample on its own
    info = next(i for i in _DB.values() if opinfo._grad_wrapper(i) is not None
                and opinfo.resolve(i) is not None and i.supports_autograd)
    assert not opinfo._float32_grads_apply(info)


def test_wrapper_entry_gradient_sample_runs_in_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry differentiated through its gradient wrapper (``A + A.mH`` for cholesky) runs
    its first gradient sample in float32 after the value samples (no float64 forward) and
    that run still fails on a wrong gradient; ``GRAD_FLOAT64`` entries keep float64."""
    import jflow as flow

    info = _DB["linalg.cholesky"]
    assert opinfo._grad_wrapper(info) is not None and not opinfo._float32_grads_apply(info)
    runs = []
    run = opinfo.run_sample
    monkeypatch.setattr(opinfo, "run_sample",
                        lambda i, f, s, grad=False, **kw: runs.append((s, grad, kw)) or
                        run(i, f, s, grad, **kw))
    right = opinfo.check_opinfo(info, 2, 2, float32_grads=True)
    assert [o.kind for o in right.forward + right.grads] == ["pass"] * 4, right
    grads = [(s.input.dtype, kw) for s, grad, kw in runs if grad]
    assert grads == [(torch.float32, {"grad_tol": (opinfo.GRAD32_RTOL, opinfo.GRAD32_ATOL)}),
                     (torch.float64, {})], grads
    # a wrong gradient with right values (a correction that is zero forward)
    monkeypatch.setattr(opinfo, "resolve", lambda i: lambda a, **kw: (
        flow.linalg.cholesky(a, **kw) + 0.5 * (a - a.detach()).tril()))
    wrong = opinfo.check_opinfo(info, 1, 1, float32_grads=True)
    assert [o.kind for o in wrong.forward] == ["pass"], wrong
    assert [o.kind for o in wrong.grads] == ["mismatch"], wrong
    runs.clear()
    opinfo.check_opinfo(_DB["logcumsumexp"], 1, 1, float32_grads=True)
    assert [s.input.dtype for s, grad, _ in runs if grad] == [torch.float64]
