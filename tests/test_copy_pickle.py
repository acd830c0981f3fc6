"""``copy.deepcopy`` and ``pickle`` of tensors follow PyTorch's rules: a deep copy is for graph
leaves only, copies ``.grad`` and keeps tensors that alias each other aliasing each other's
copies; pickling keeps the value, class and ``requires_grad`` (a result of ops comes back as a
leaf, without ``.grad``); global tensors keep placement and SBP; pending (lazy) values are
computed. Each case is written once and run on jflow and, when installed, on PyTorch."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import jflow as flow

RS = np.random.RandomState(0)


def _libs():
    libs = [flow]
    try:
        import torch
        libs.append(torch)
    except ImportError:
        pass
    return libs


def _deep_copied_alias(lib, base_np, lo, hi, view_first):
    """A base and a view of it deep-copied in one call: a write into the view's copy shows in
    the base's copy, never in the originals."""
    b = lib.tensor(base_np.copy())
    v = b[lo:hi]
    if view_first:
        v2, b2 = copy.deepcopy([v, b])
    else:
        b2, v2 = copy.deepcopy([b, v])
    v2.add_(5.0)
    alone = copy.deepcopy(v)
    alone.mul_(0.0)
    return b2.numpy(), v2.numpy(), b.numpy(), v.numpy(), alone.numpy(), v2._base is None


def _want_alias(base_np, lo, hi):
    b2 = base_np.copy()
    b2[lo:hi] += 5.0
    return b2, b2[lo:hi], base_np, base_np[lo:hi], np.zeros(hi - lo, np.float32), True


@pytest.mark.parametrize("view_first", [False, True])
def test_deepcopy_keeps_tensors_that_alias_each_other_aliasing(view_first):
    for _ in range(3):
        n = RS.randint(3, 9)
        lo = RS.randint(0, n - 1)
        hi = RS.randint(lo + 1, n + 1)
        base_np = RS.randn(n).astype(np.float32)
        want = _want_alias(base_np, lo, hi)
        for lib in _libs():
            got = _deep_copied_alias(lib, base_np, lo, hi, view_first)
            for g, w in zip(got, want):
                np.testing.assert_array_equal(g, w, err_msg=lib.__name__)


def _leaf_rules(lib):
    x = lib.tensor(RS.randn(3).astype(np.float32), requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="deepcopy"):
        copy.deepcopy(y)
    d = copy.deepcopy(y.detach())
    x.grad = lib.ones(3) * 3
    xc = copy.deepcopy(x)
    xc.grad.add_(1.0)  # (the copy's own gradient)
    p = pickle.loads(pickle.dumps(y))
    px = pickle.loads(pickle.dumps(x))
    q = pickle.loads(pickle.dumps(lib.nn.Parameter(lib.ones(2), requires_grad=False)))
    return (np.allclose(d.numpy(), y.detach().numpy()), xc.requires_grad, xc.is_leaf,
            xc.grad.numpy().tolist(), x.grad.numpy().tolist(),
            p.requires_grad, p.is_leaf, p.grad_fn is None, px.grad is None,
            np.allclose(px.detach().numpy(), x.detach().numpy()),
            type(q).__name__, q.requires_grad)


def test_deepcopy_and_pickle_follow_the_leaf_rules():
    want = (True, True, True, [4.0] * 3, [3.0] * 3, True, True, True, True, True,
            "Parameter", False)
    for lib in _libs():
        assert _leaf_rules(lib) == want, lib.__name__


@pytest.mark.parametrize("sbp", ["split", "broadcast", "partial_sum"])
def test_global_tensors_pickle_and_deepcopy_with_placement_and_sbp(sbp):
    """(Before: pickling raised "cannot pickle 'Device' object".)"""
    plc = flow.placement("cpu", ranks=[0, 1, 2, 3])
    nd = flow.sbp.split(0) if sbp == "split" else getattr(flow.sbp, sbp)
    xn = RS.randn(8, 3).astype(np.float32)
    g = flow.tensor(xn).to_global(plc, nd)
    for c in (pickle.loads(pickle.dumps(g)), copy.deepcopy(g)):
        assert c.placement == plc and c.sbp == (nd,)
        np.testing.assert_array_equal(c.numpy(), xn)
    assert pickle.loads(pickle.dumps(plc)) == plc


def test_pending_tensors_pickle_and_deepcopy_as_computed_tensors():
    xn = RS.randn(4).astype(np.float32)
    with flow.lazy():
        y = flow.tensor(xn) * 2.0 + 1.0
        for c in (pickle.loads(pickle.dumps(y)), copy.deepcopy(y)):
            assert type(c) is flow.Tensor  # (not a pending twin holding a copied segment)
            np.testing.assert_allclose(c.numpy(), xn * 2 + 1, rtol=1e-6)


def _shallow(lib):
    x = lib.tensor(RS.randn(3).astype(np.float32))
    before = x.numpy().copy()
    c = copy.copy(x)
    c.add_(1.0)  # (shares x's elements)
    y = lib.tensor(RS.randn(2).astype(np.float32), requires_grad=True)
    y.grad = lib.ones(2)
    cy, cz = copy.copy(y), copy.copy(y * 2)
    return (np.allclose(x.numpy(), before + 1), cy.requires_grad, cy.is_leaf, cy.grad is None,
            cz.requires_grad, cz.is_leaf, cz.grad_fn is None)


def test_copy_copy_shares_elements_as_pytorch():
    for lib in _libs():
        assert _shallow(lib) == (True,) * 7, lib.__name__


class _Tagged(flow.Tensor):
    """A user's tensor subclass with attributes of its own."""


def test_a_user_subclass_keeps_its_class_and_attributes():
    t = _Tagged([1.0, 2.0])
    t.tags = ["a"]
    for c in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t), copy.copy(t)):
        assert type(c) is _Tagged and c.tags == ["a"] and c.tolist() == [1.0, 2.0]
    assert copy.deepcopy(t).tags is not t.tags  # (deep: its attributes are copied too)
    t.me = t  # (an attribute that refers back to the tensor: copied once)
    d = copy.deepcopy(t)
    assert d.me is d
