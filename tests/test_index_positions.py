"""Integer positions in basic indexing are runtime scalars once a second position is seen
(jflow/views/basic_index.py): a ``Dataset.__getitem__`` or a decoding loop does not compile
one executable per position, and the results, views, writes and errors are unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from _compiles import compiles as _compiles

import jflow as flow

A = np.random.RandomState(0).randn(40, 3, 5).astype(np.float32)


def test_reading_every_position_compiles_a_bounded_number_of_times():
    x = flow.tensor(A)
    got = []
    n = _compiles(lambda: got.extend(x[i].numpy() for i in range(40)))
    assert n <= 3  # the first position static, then one dynamic executable (+ its scalar)
    np.testing.assert_array_equal(np.stack(got), A)
    # mixed ints and slices, negative positions: one more pattern, then no compiles
    n = _compiles(lambda: [x[-i - 1, 1:, i % 5] for i in range(3)])
    m = _compiles(lambda: got.__setitem__(slice(None), [x[-i - 1, 1:, i % 5].numpy()
                                                         for i in range(40)]))
    assert n <= 3 and m == 0
    np.testing.assert_array_equal(np.stack(got), [A[-i - 1, 1:, i % 5] for i in range(40)])


def test_writing_every_position_and_views_stay_aliased():
    x = flow.zeros(40, 3)
    for i in range(40):  # warm: a pattern becomes dynamic on its second position
        x[i] = float(i)
    y = flow.zeros(40, 3)
    n = _compiles(lambda: [y.__setitem__(i, float(i)) for i in range(40)])
    assert n == 0
    want = np.repeat(np.arange(40, dtype=np.float32)[:, None], 3, axis=1)
    np.testing.assert_array_equal(y.numpy(), want)
    for i in (3, 7):  # a dynamic read is still a view: writes reach the base
        row = y[i]
        row.mul_(-1)
        want[i] *= -1
    np.testing.assert_array_equal(y.numpy(), want)
    assert y[5]._base is y and y[5].storage_offset() == 15


def test_errors_and_gradients_are_unchanged():
    x = flow.tensor(A[:4, 0], requires_grad=True)
    for i in range(4):
        x[i]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 4"):
        x[4]
    with pytest.raises(IndexError, match="index -5 is out of bounds"):
        x[-5]
    loss = sum((x[i] * (i + 1)).sum() for i in range(4))
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.repeat([[1.0], [2], [3], [4]], 5, axis=1))


def test_traced_and_global_tensors_keep_static_positions():
    f = flow.jit(lambda t, i: t[i] * 2)
    x = flow.tensor(A[:4, 0])
    for i in range(3):  # a Python int is a static argument of flow.jit: one trace each
        np.testing.assert_array_equal(f(x, i).numpy(), A[i, 0] * 2)
    plc = flow.placement("cpu", range(4))
    g = flow.tensor(A[:4, :, :4]).to_global(plc, flow.sbp.split(2))
    for i in range(4):
        np.testing.assert_array_equal(g[i].numpy(), A[i, :, :4])
