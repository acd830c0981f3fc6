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
