"""jflow/host_transfer.py: a small array's shape seen HOT_AFTER times takes the jitted identity
(JAX's C++ argument transfer); the tensor never shares the caller's memory, not even while
the transfer is queued, equals the data for every dtype,
and under a trace the data still becomes a constant. The sightings table is bounded."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow
from jflow import host_transfer

_ARRAYS = [
    np.arange(12, dtype=np.float32).reshape(3, 4),
    np.arange(5, dtype=np.int64) - 2,
    np.array([True, False, True]),
    np.array([1 + 2j, -3j], dtype=np.complex64),
    np.float64(2.5) * np.ones((2, 2)),
    np.array(7, dtype=np.int32),                        # 0-d
    np.zeros((0, 3), dtype=np.float32),                 # empty
    np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2],  # not contiguous
]


@pytest.fixture
def counted(monkeypatch):
    """Counts calls of the jitted identity (the fast path)."""
    calls = []
    ident = host_transfer._IDENTITY

    def counting(x):
        calls.append(x.shape)
        return ident(x)
    monkeypatch.setattr(host_transfer, "_IDENTITY", counting)
    monkeypatch.setattr(host_transfer, "_SEEN", type(host_transfer._SEEN)())
    return calls


@pytest.mark.parametrize("i", range(len(_ARRAYS)))
def test_every_sighting_gives_the_data(counted, i) -> None:
    a = _ARRAYS[i]
    for _ in range(host_transfer.HOT_AFTER + 2):
        t = flow.tensor(a)
        got = t.numpy()
        assert got.dtype == a.dtype and got.shape == a.shape
        np.testing.assert_array_equal(got, a)
    assert len(counted) == 2  # the third and fourth sightings took the fast path


def test_fast_path_does_not_share_the_callers_memory(counted) -> None:
    a = np.ones(16, dtype=np.float32)
    ts = [flow.tensor(a) for _ in range(host_transfer.HOT_AFTER + 1)]
    assert counted == [(16,)]
    a[:] = 5.0  # writing the source afterwards changes no tensor, as in PyTorch
    for t in ts:
        np.testing.assert_array_equal(t.numpy(), np.ones(16, np.float32))


@pytest.mark.parametrize("shape", [(64,), (256, 256), (1 << 20,)], ids=["64", "256k", "4m"])
def test_writes_right_after_the_call_never_show(shape) -> None:
    """Writing the source just after ``flow.tensor`` returns, while the transfer may still be
    queued (the jitted identity runs asynchronously, and JAX may alias a NumPy argument on
    CPU): before the host copy, arrays of 256 KiB and 4 MiB showed the write once hot."""
    for i in range(host_transfer.HOT_AFTER + 24):
        a = np.full(shape, float(i), np.float32)
        t = flow.tensor(a)
        a[...] = -1.0
        got = t.numpy()
        assert got.min() == got.max() == float(i), (i, got.min(), got.max())


def test_large_arrays_keep_device_put(counted) -> None:
    """Above FAST_MAX_BYTES the identity would copy a second time: device_put, however hot."""
    n = host_transfer.FAST_MAX_BYTES // 4
    for a in (np.ones(n, np.float32), np.ones(n + 1, np.float32)):
        for _ in range(host_transfer.HOT_AFTER + 2):
            np.testing.assert_array_equal(flow.tensor(a).numpy(), a)
    assert counted == [(n,), (n,)]


def test_inside_a_trace_the_data_is_a_constant(counted) -> None:
    a = np.arange(4, dtype=np.float32)
    for _ in range(host_transfer.HOT_AFTER + 1):
        flow.tensor(a)  # hot at top level
    n = len(counted)

    @flow.jit
    def f(x):
        return x * flow.tensor(a)
    np.testing.assert_array_equal(f(flow.ones(4)).numpy(), a)
    assert len(counted) == n  # the trace took device_put, not the jitted identity


def test_sightings_table_is_bounded(counted) -> None:
    for n in range(host_transfer.TABLE_SIZE + 20):
        host_transfer.to_device(np.zeros((1, n + 1), dtype=np.int8))
    assert len(host_transfer._SEEN) == host_transfer.TABLE_SIZE
    assert not counted


def test_requires_grad_and_dtype_argument_on_the_fast_path(counted) -> None:
    a = np.linspace(0, 1, 6).reshape(2, 3)
    for _ in range(host_transfer.HOT_AFTER + 1):
        t = flow.tensor(a, dtype=flow.float32, requires_grad=True)
    assert counted and t.dtype == flow.float32 and t.requires_grad
    (t * t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 2 * a.astype(np.float32), rtol=1e-6)
