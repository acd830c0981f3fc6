"""jflow/value_bounds.py: integer device arrays made from host data off the CPU remember their
(min, max), and index bounds checks read them instead of reading the array back (on a GPU that
read waits for every queued computation). CPU arrays are never noted, so these tests make the
table treat CPU arrays as an accelerator's (``_off_cpu``); tests/test_gpu.py runs the real path."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import jflow as flow
from jflow import value_bounds
from jflow.functional.functors.index import IndexOutOfRangeError

F = flow.nn.functional


@pytest.fixture
def accelerator(monkeypatch):
    monkeypatch.setattr(value_bounds, "_off_cpu", lambda v: True)
    monkeypatch.setattr(value_bounds, "_TABLE", {})


def test_cpu_arrays_are_not_noted(monkeypatch) -> None:
    monkeypatch.setattr(value_bounds, "_TABLE", {})
    t = flow.tensor(np.array([3, 1, 4]))
    assert value_bounds.known(t._value) is None and not value_bounds._TABLE


def test_new_integer_tensors_and_ranges_are_noted(accelerator) -> None:
    rng = np.random.default_rng(0)
    for dtype in (np.int64, np.int32, np.uint8):
        a = rng.integers(0, 200, (4, 7)).astype(dtype)
        t = flow.tensor(a)
        assert value_bounds.known(t._value) == (a.min(), a.max())
    assert value_bounds.known(flow.tensor(np.ones(3, np.float32))._value) is None
    assert value_bounds.known(flow.tensor(np.zeros(0, np.int64))._value) is None
    for args in [(9,), (5, 17, 3), (10, 0, -3), (-4, 4, 5)]:
        r = flow.arange(*args)
        want = np.arange(*args)
        assert value_bounds.known(r._value) == (want.min(), want.max()), args
        np.testing.assert_array_equal(r.numpy(), want)
    assert value_bounds.known(flow.arange(0.0, 3.0)._value) is None
    cpu_ids = flow.tensor(np.array([5, -2, 8]))
    value_bounds._TABLE.clear()
    moved = cpu_ids.to("cpu:1")                      # a batch moved to another device
    assert value_bounds.known(moved._value) == (-2, 8)
    assert value_bounds.known(flow.randn(3).to("cpu:1")._value) is None


def test_bounds_checks_read_the_table(accelerator) -> None:
    """The check believes the table (a wrong entry shows), and an in-place change gives the
    tensor a new array, whose bounds are read afresh."""
    w = flow.randn(10, 4)
    ids = flow.tensor(np.array([[1, 2], [3, 9]]))
    np.testing.assert_allclose(F.embedding(ids, w).numpy(), w.numpy()[ids.numpy()])
    value_bounds.note(ids._value, 0, 10)            # a (false) entry: the check reads it
    with pytest.raises(IndexOutOfRangeError, match="index 10 is out of bounds"):
        F.embedding(ids, w)
    ids.add_(20)                                     # a new array: not in the table
    assert value_bounds.known(ids._value) is None
    with pytest.raises(IndexOutOfRangeError, match="out of bounds"):
        F.embedding(ids, w)
    tgt = flow.tensor(np.array([0, 3, 7]))
    with pytest.raises(IndexError, match="out of bounds|Target"):
        F.cross_entropy(flow.randn(3, 5), tgt)      # 7 >= 5 classes, from the table
    pos = flow.arange(6)
    np.testing.assert_allclose(F.embedding(pos, w).numpy(), w.numpy()[:6])
    with pytest.raises(IndexOutOfRangeError, match="index 11 is out of bounds"):
        F.embedding(flow.arange(12), w)


def test_table_is_weak_and_bounded(accelerator) -> None:
    t = flow.tensor(np.array([1, 2]))
    assert len(value_bounds._TABLE) == 1
    del t
    gc.collect()
    assert not value_bounds._TABLE
    keep = [flow.tensor(np.array([i])) for i in range(value_bounds.SIZE + 10)]
    assert len(value_bounds._TABLE) == value_bounds.SIZE
    assert value_bounds.known(keep[-1]._value) == (value_bounds.SIZE + 9,) * 2
    assert value_bounds.known(keep[0]._value) is None   # the oldest went first


def test_integer_tensor_with_a_device_inside_flow_jit() -> None:
    """``flow.tensor(ints, device=...)`` inside a compiled function is traced: nothing to
    remember, and no concrete read of the traced array (it raised ConcretizationTypeError)."""
    @flow.jit
    def f(x):
        return x + flow.tensor([1, 2, 3], device=x.device)

    np.testing.assert_array_equal(f(flow.ones(3)).numpy(), [2.0, 3.0, 4.0])


def _causal_lm_targets(labels, value=-100):
    """HF's causal-LM loss: the labels padded with the ignore index, shifted, flattened."""
    return F.pad(labels, (0, 1), value=value)[..., 1:].contiguous().view(-1)


def test_padded_labels_are_checked_from_their_bounds(monkeypatch) -> None:
    """Labels padded with the ignore index and sliced (HF's causal-LM loss) carry the labels'
    bounds and the pad value: the target check passes without reading the computed targets
    (the read would wait for every queued computation), and the loss is PyTorch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 7, (3, 5))
    logits = rng.standard_normal((15, 7)).astype(np.float32)
    labels = flow.tensor(a)
    tgt = _causal_lm_targets(labels)
    assert value_bounds.within(F.pad(labels, (0, 1), value=-100)._value) == \
        (a.min(), a.max(), -100)
    from jflow.functional.functors import index

    def no_read(t):
        raise AssertionError("the target check read the targets")

    monkeypatch.setattr(index, "host_min_max", no_read)
    got = F.cross_entropy(flow.tensor(logits), tgt)
    ttgt = torch.nn.functional.pad(torch.tensor(a), (0, 1), value=-100)[..., 1:].reshape(-1)
    want = torch.nn.functional.cross_entropy(torch.tensor(logits), ttgt)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)


@pytest.mark.parametrize("case", ["label out of range", "pad value not ignored",
                                  "negative label"])
def test_padded_labels_with_a_bad_value_still_raise(case: str) -> None:
    """Bounds that do not pass the check leave it to read the targets: a bad value raises as
    before, whatever the bounds say."""
    a = np.array([[1, 2, 3], [4, 0, 2]])
    if case == "label out of range":
        a[1, 2] = 9
    if case == "negative label":
        a[0, 2] = -3
    value = -1 if case == "pad value not ignored" else -100
    tgt = _causal_lm_targets(flow.tensor(a), value)
    with pytest.raises(IndexError, match="out of bounds"):
        F.cross_entropy(flow.randn(6, 5), tgt)


def test_bounds_follow_only_value_keeping_steps() -> None:
    """A padded tensor's bounds hold for its slices made contiguous; not for a tensor of
    another dtype, a pad value the dtype cannot hold, or a changed array."""
    from jflow.views.bounds import bounds_within

    t = flow.tensor(np.array([[5, 6], [7, 8]], np.int64))
    p = F.pad(t, (1, 0), value=6)
    assert bounds_within(p) == (5, 8, None)          # (the pad value inside the range)
    assert bounds_within(p[:, 1:].contiguous()) == (5, 8, None)
    assert bounds_within(F.pad(t, (1, 0), value=3)) == (5, 8, 3)
    q = F.pad(t, (0, 2), value=-100)
    assert bounds_within(q.t().contiguous()) == (5, 8, -100)
    assert bounds_within(F.pad(q, (0, 1), value=50)) == (-100, 8, 50)  # one exception kept
    assert bounds_within(q.view(flow.int32)) is None  # (another dtype's view: other values)
    u = F.pad(flow.tensor(np.array([1, 2], np.uint8)), (0, 1), value=-1)
    assert value_bounds.within(u._value) is None     # (-1 is 255 in uint8: not noted)
    q.add_(1000)                                     # a new array: nothing known of it
    assert value_bounds.within(q._value) is None


@pytest.mark.parametrize("value", [-100, 0, 3])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_padded_label_losses_match_pytorch(value: int, reduction: str) -> None:
    """The loss of padded, shifted labels, decided from their bounds (the ignore index as the
    pad value, or a class: then every target counts in the mean), is PyTorch's on random
    labels and logits, and so is its gradient."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(abs(value) + 7)
    a = rng.integers(0, 6, (4, 9))
    logits = rng.standard_normal((36, 6)).astype(np.float32)
    x = flow.tensor(logits, requires_grad=True)
    got = F.cross_entropy(x, _causal_lm_targets(flow.tensor(a), value), reduction=reduction)
    got.sum().backward()
    tx = torch.tensor(logits, requires_grad=True)
    ttgt = torch.nn.functional.pad(torch.tensor(a), (0, 1), value=value)[..., 1:].reshape(-1)
    want = torch.nn.functional.cross_entropy(tx, ttgt, reduction=reduction)
    want.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)
