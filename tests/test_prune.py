"""flow.nn.utils.prune against torch.nn.utils.prune on the same weights.

Deterministic methods give PyTorch's masks and pruned weights exactly (l1_unstructured with
int / float amounts and importance scores, ln_structured with n = 1, 2, inf along several
dims, global_unstructured, custom_from_mask, identity), as do iterative pruning (a
PruningContainer) and remove(); the state dicts have PyTorch's keys (weight_orig,
weight_mask) and a PyTorch one loads. Random methods prune the right number of entries or
channels and repeat under flow.manual_seed. The gradient through a pruned Linear (the mask
applied) is PyTorch's. PyTorch's errors.

Every case prunes the same (4, 3, 2) Conv1d weight (or the Linear's (4, 3) one): the mask
programs are shared.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")
TP = pytest.importorskip("torch.nn.utils.prune")
FP = flow.nn.utils.prune
RS = np.random.RandomState(0)
W = RS.randn(4, 3, 2).astype(np.float32)          # conv weight: 24 distinct magnitudes
B = RS.randn(4).astype(np.float32)
X = RS.randn(2, 3, 5).astype(np.float32)
XL = RS.randn(2, 3).astype(np.float32)
MASK = (RS.rand(4, 3, 2) > 0.4).astype(np.float32)
SCORES = RS.rand(4, 3, 2).astype(np.float32)


def _pair():
    """A Conv1d(3, 4, 2) with weights W and B in both libraries."""
    t, f = torch.nn.Conv1d(3, 4, 2), flow.nn.Conv1d(3, 4, 2)
    with torch.no_grad():
        t.weight.copy_(torch.tensor(W))
        t.bias.copy_(torch.tensor(B))
    f.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return t, f


def _same(t, f, name: str = "weight") -> None:
    """Same state-dict keys and values (masks included), and the same pruned tensor."""
    ts, fs = t.state_dict(), f.state_dict()
    assert list(fs) == list(ts)
    for k in ts:
        np.testing.assert_array_equal(fs[k].numpy(), ts[k].numpy(), err_msg=k)
    np.testing.assert_array_equal(getattr(f, name).detach().numpy(),
                                  getattr(t, name).detach().numpy())


def _both(fn_name: str, *args, **kwargs):
    t, f = _pair()
    getattr(TP, fn_name)(t, "weight", *args, **kwargs)
    getattr(FP, fn_name)(f, "weight", *args, **kwargs)
    return t, f


@pytest.mark.parametrize("amount", [0, 5, 0.3, 1.0])
def test_l1_unstructured_matches_torch(amount) -> None:
    t, f = _both("l1_unstructured", amount)
    _same(t, f)
    assert list(f.state_dict()) == ["bias", "weight_orig", "weight_mask"]
    assert "weight" not in f._parameters and isinstance(f.weight_orig, flow.nn.Parameter)
    assert FP.is_pruned(f) and not FP.is_pruned(flow.nn.Linear(2, 2))
    # the forward pre-hook recomputes weight from weight_orig
    np.testing.assert_allclose(f(flow.tensor(X)).detach().numpy(),
                               t(torch.tensor(X)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_l1_unstructured_importance_scores_and_identity() -> None:
    t, f = _pair()
    TP.l1_unstructured(t, "weight", 7, importance_scores=torch.tensor(SCORES))
    FP.l1_unstructured(f, "weight", 7, importance_scores=flow.tensor(SCORES))
    _same(t, f)
    t, f = _both("identity")
    _same(t, f)
    assert float(f.weight_mask.sum()) == W.size


@pytest.mark.parametrize("n,dim,amount", [(1, 0, 2), (2, 1, 0.34), (float("inf"), -1, 1),
                                          (2, -1, 0), ("fro", 0, 0.5)])
def test_ln_structured_matches_torch(n, dim, amount) -> None:
    t, f = _both("ln_structured", amount, n=n, dim=dim)
    _same(t, f)


def test_iterative_pruning_and_remove_match_torch() -> None:
    t, f = _pair()
    steps = [("l1_unstructured", (4,), {}), ("ln_structured", (1,), {"n": 2, "dim": 0}),
             ("l1_unstructured", (0.25,), {}), ("ln_structured", (1,), {"n": 1, "dim": -1}),
             ("custom_from_mask", (), {"mask": MASK})]
    for name, args, kw in steps:
        kt = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        kf = {k: flow.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        getattr(TP, name)(t, "weight", *args, **kt)
        getattr(FP, name)(f, "weight", *args, **kf)
        _same(t, f)
    hooks = [h for h in f._forward_pre_hooks.values() if isinstance(h, FP.BasePruningMethod)]
    assert len(hooks) == 1 and isinstance(hooks[0], FP.PruningContainer)
    assert [type(m).__name__ for m in hooks[0]] == ["L1Unstructured", "LnStructured",
                                                    "L1Unstructured", "LnStructured",
                                                    "CustomFromMask"]
    # a PyTorch state dict of the pruned module loads
    f2 = _pair()[1]
    FP.identity(f2, "weight")
    f2.load_state_dict({k: flow.tensor(v.numpy()) for k, v in t.state_dict().items()})
    f2(flow.tensor(X))    # the hook recomputes weight from the loaded tensors
    np.testing.assert_array_equal(f2.weight.detach().numpy(), t.weight.detach().numpy())
    # remove: weight is a parameter again (the weight_orig object), holding the pruned values
    orig = f.weight_orig
    TP.remove(t, "weight")
    FP.remove(f, "weight")
    _same(t, f)
    assert f.weight is orig and isinstance(f.weight, flow.nn.Parameter)
    assert list(f.state_dict()) == ["bias", "weight"] and not FP.is_pruned(f)


def test_global_unstructured_matches_torch() -> None:
    (t1, f1), (t2, f2) = _pair(), _pair()
    TP.l1_unstructured(t2, "weight", 3)        # one tensor already pruned: its mask counts
    FP.l1_unstructured(f2, "weight", 3)
    for P, a, b in ((TP, t1, t2), (FP, f1, f2)):
        P.global_unstructured([(a, "weight"), (b, "weight"), (b, "bias")], P.L1Unstructured,
                              amount=0.4)
    _same(t1, f1)
    _same(t2, f2)
    _same(t2, f2, "bias")
    # importance scores by (module, name)
    (t1, f1), (t2, f2) = _pair(), _pair()
    TP.global_unstructured([(t1, "weight"), (t2, "bias")], TP.L1Unstructured, amount=9,
                           importance_scores={(t1, "weight"): torch.tensor(SCORES)})
    FP.global_unstructured([(f1, "weight"), (f2, "bias")], FP.L1Unstructured, amount=9,
                           importance_scores={(f1, "weight"): flow.tensor(SCORES)})
    _same(t1, f1)
    _same(t2, f2, "bias")


def test_custom_from_mask_and_prune_method_match_torch() -> None:
    t, f = _pair()
    TP.custom_from_mask(t, "weight", torch.tensor(MASK))
    FP.custom_from_mask(f, "weight", flow.tensor(MASK))
    _same(t, f)
    tp = TP.L1Unstructured(6).prune(torch.tensor(W))
    fp = FP.L1Unstructured(6).prune(flow.tensor(W))
    np.testing.assert_array_equal(fp.numpy(), tp.numpy())


def test_random_pruning_counts_and_reproducibility() -> None:
    def run(seed: int):
        flow.manual_seed(seed)
        f = _pair()[1]
        FP.random_unstructured(f, "weight", 7)
        m1 = f.weight_mask.numpy().copy()
        FP.random_structured(f, "weight", 2, dim=0)
        return m1, f.weight_mask.numpy().copy()

    m1, m2 = run(0)
    assert (m1 == 0).sum() == 7 and set(np.unique(m1)) <= {0.0, 1.0}
    kept = m2.reshape(4, -1).sum(1)
    assert (kept == 0).sum() >= 2                 # two whole output channels pruned
    assert ((m2 == 1) <= (m1 == 1)).all()          # on top of the first mask
    a1, a2 = run(0)
    np.testing.assert_array_equal(a1, m1)
    np.testing.assert_array_equal(a2, m2)
    b1, _ = run(1)
    assert (b1 == 0).sum() == 7 and not np.array_equal(b1, m1)
    f = _pair()[1]
    FP.random_structured(f, "weight", 0.5, dim=1)   # round(0.5 * 3) = 2 input channels
    assert (f.weight_mask.numpy().sum(axis=(0, 2)) == 0).sum() == 2


def test_gradient_through_pruned_linear_matches_torch() -> None:
    tl, fl = torch.nn.Linear(3, 4), flow.nn.Linear(3, 4)
    fl.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tl.state_dict().items()})
    TP.l1_unstructured(tl, "weight", 5)
    FP.l1_unstructured(fl, "weight", 5)
    tx, fx = torch.tensor(XL, requires_grad=True), flow.tensor(XL, requires_grad=True)
    (tl(tx) ** 2).sum().backward()
    (fl(fx) ** 2).sum().backward()
    for a, b in ((fl.weight_orig, tl.weight_orig), (fl.bias, tl.bias), (fx, tx)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert (fl.weight_orig.grad.numpy()[fl.weight_mask.numpy() == 0] == 0).all()
    assert fl.weight_mask.grad is None


def _same_error(fn) -> None:
    """PyTorch and jflow raise the same exception type with PyTorch's first line."""
    with pytest.raises(Exception) as te:
        fn(TP, torch)
    with pytest.raises(type(te.value)) as fe:
        fn(FP, flow)
    assert _plain(str(te.value).splitlines()[0]) in _plain(str(fe.value))


def _plain(msg: str) -> str:
    """A message without library names (``torch.Size`` / ``flow.Size``, class paths)."""
    return re.sub(r"\b(torch|jflow|flow)\.", "", msg)


def test_errors_match_torch() -> None:
    lin = {torch: torch.nn.Linear(3, 4), flow: flow.nn.Linear(3, 4)}
    _same_error(lambda P, lib: P.l1_unstructured(lin[lib], "weight", "a"))
    _same_error(lambda P, lib: P.l1_unstructured(lin[lib], "weight", 1.5))
    _same_error(lambda P, lib: P.l1_unstructured(lin[lib], "weight", -1))
    _same_error(lambda P, lib: P.l1_unstructured(lin[lib], "weight", 13))
    _same_error(lambda P, lib: P.ln_structured(lin[lib], "bias", 1, n=2, dim=0))
    _same_error(lambda P, lib: P.ln_structured(lin[lib], "weight", 1, n=2, dim=2))
    _same_error(lambda P, lib: P.remove(lin[lib], "weight"))
    _same_error(lambda P, lib: P.global_unstructured([(lin[lib], "weight")],
                                                     P.LnStructured, amount=1, n=2, dim=0))
    _same_error(lambda P, lib: P.global_unstructured([(lin[lib], "weight")],
                                                     P.L1Unstructured, importance_scores=[1],
                                                     amount=1))
    # a failed pruning leaves the parameter where it was
    f = flow.nn.Linear(3, 4)
    with pytest.raises(ValueError):
        FP.l1_unstructured(f, "weight", 13)
    assert "weight" in f._parameters and "weight_orig" not in f._parameters
    with pytest.raises(TypeError, match="is not a BasePruningMethod subclass"):
        FP.PruningContainer().add_pruning_method("x")
