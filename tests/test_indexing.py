"""Tensor indexing: ``x[index]`` and ``x[index] = value`` (jflow/tensor_indexing.py).

Results are compared with NumPy references written with PyTorch's semantics (ints and slices
applied before index tensors) and, where PyTorch is installed, with PyTorch itself. Indexing
must also work under ``jax.jit`` and ``jax.vmap`` (it is one op per call), raise IndexError for
out-of-range eager indices, and refuse bool masks inside a trace with a clear message.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow
import jflow.tensor_indexing  # noqa: F401  (attaches __getitem__ / __setitem__)
from jflow.tensor import _wrap

A = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
M_DIM01 = A[:, :, 0, 0] % 3 == 0         # a mask over dims 0-1
M_DIM12 = A[0, :, :, 0] % 2 == 0         # a mask over dims 1-2


def t(a):
    return flow.tensor(np.asarray(a))


def _to_flow(index):
    """NumPy arrays in an index become jflow tensors (lists stay lists)."""
    if isinstance(index, tuple):
        return tuple(_to_flow(e) for e in index)
    if isinstance(index, np.ndarray):
        return t(index)
    return index


# (index, NumPy expression of x[index] with PyTorch semantics)
CASES = [
    (0, lambda x: x[0]),
    (-1, lambda x: x[-1]),
    ((0, 1), lambda x: x[0, 1]),
    ((slice(None), 1), lambda x: x[:, 1]),
    ((Ellipsis, 2), lambda x: x[..., 2]),
    ((None, 0), lambda x: x[None, 0]),
    ((0, None, slice(1, 3)), lambda x: x[0, None, 1:3]),
    ((slice(None, None, 2), Ellipsis, None), lambda x: x[::2, ..., None]),
    ((slice(-3, None), slice(None, -1), slice(1, 100, 3)), lambda x: x[-3:, :-1, 1:100:3]),
    (np.array([0, 1, 1]), lambda x: x[[0, 1, 1]]),
    ((slice(None), np.array([[0, 2], [1, 1]])), lambda x: x[:, [[0, 2], [1, 1]]]),
    ((np.array([0, 1]), slice(None), np.array([1, 3])), lambda x: x[[0, 1], :, [1, 3]]),
    ((np.array([1, 0]), np.array([2, -1])), lambda x: x[[1, 0], [2, -1]]),
    ((Ellipsis, np.array([-1, 0])), lambda x: x[..., [-1, 0]]),
    # PyTorch applies the int first: x[0, :, idx] is x[0][:, idx] (NumPy would give (2, 3))
    ((0, slice(None), np.array([0, 1])), lambda x: x[0][:, [0, 1]]),
    ((np.array(1), slice(None), np.array([0, 2])), lambda x: x[1][:, [0, 2]]),
    ((1, [0, 2], [1, 3], 0), lambda x: x[1][:, :, 0][[0, 2], [1, 3]]),
    ((slice(None), [0, 1], slice(None), [1, 2]), lambda x: x[:, [0, 1], :, [1, 2]]),
    ((None, Ellipsis, np.array([1]), None, np.array([[0], [2]])),
     lambda x: x[None, :, :, [1], None, [[0], [2]]]),
    (([0, 1], [1, 2]), lambda x: x[[0, 1], [1, 2]]),
    ([slice(None), 1], lambda x: x[:, 1]),
    (True, lambda x: x[None]),
    (False, lambda x: x[None][:0]),
    ((True, np.array([0, 1])), lambda x: x[None][[0], [0, 1]]),
    ((slice(None), False), lambda x: x[:, None][:, :0]),
    ((M_DIM01,), lambda x: x[M_DIM01]),
    ((slice(None), M_DIM12), lambda x: x[:, M_DIM12]),
    ((np.array([], dtype=np.int64),), lambda x: x[np.zeros(0, np.int64)]),
    (Ellipsis, lambda x: x),
    ((), lambda x: x),
]
IDS = [f"case{i}" for i in range(len(CASES))]


@pytest.mark.parametrize("index,ref", CASES, ids=IDS)
def test_getitem_matches_reference(index, ref):
    got = t(A)[_to_flow(index)]
    want = ref(A)
    assert tuple(got.shape) == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    assert got.dtype == flow.int64


@pytest.mark.parametrize("index,ref", CASES, ids=IDS)
def test_setitem_matches_reference(index, ref):
    # which flat positions x[index] selects, from the getitem reference on a position array
    sel = ref(np.arange(A.size).reshape(A.shape)).ravel()
    vals = np.arange(sel.size) * 10 + 7
    x = t(A.copy())
    x[_to_flow(index)] = t(vals.reshape(ref(A).shape))
    got = x.numpy().ravel()
    want = A.copy().ravel()
    unique, counts = np.unique(sel, return_counts=True)
    want[sel] = vals
    rest = np.setdiff1d(np.arange(A.size), sel)
    np.testing.assert_array_equal(got[rest], want[rest])  # untouched
    once = unique[counts == 1]
    np.testing.assert_array_equal(got[once], want[once])
    for p in unique[counts > 1]:  # duplicate indices: one of the assigned values wins
        assert got[p] in vals[sel == p]


@pytest.mark.parametrize("index,ref", CASES[:22], ids=IDS[:22])
def test_matches_torch(index, ref):
    torch = pytest.importorskip("torch")

    def to_torch(i):
        if isinstance(i, tuple):
            return tuple(to_torch(e) for e in i)
        if isinstance(i, np.ndarray):
            return torch.tensor(i)
        if isinstance(i, list) and any(isinstance(e, slice) for e in i):
            return tuple(i)
        return i

    want = torch.tensor(A)[to_torch(index)].numpy()
    np.testing.assert_array_equal(t(A)[_to_flow(index)].numpy(), want)
    y = torch.tensor(A.copy())
    y[to_torch(index)] = -3
    x = t(A.copy())
    x[_to_flow(index)] = -3
    np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_getitem_float_and_bool_tensors():
    f = np.linspace(0, 1, 12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(t(f)[1:, [0, 3]].numpy(), f[1:, [0, 3]])
    b = f > 0.5
    np.testing.assert_array_equal(t(b)[:, 1].numpy(), b[:, 1])
    assert t(b)[:, 1].dtype == flow.bool
    # a 0-d tensor indexes with () and Ellipsis
    s = t(np.float32(2.5))
    assert s[()].item() == 2.5 and s[...].shape == flow.Size([])
    assert tuple(s[None].shape) == (1,)


def test_index_tensors_of_int32_and_lists_of_tensors():
    idx = flow.tensor([2, 0], dtype=flow.int32)
    np.testing.assert_array_equal(t(A)[:, idx].numpy(), A[:, [2, 0]])
    np.testing.assert_array_equal(t(A)[flow.tensor(1)].numpy(), A[1])


def test_eager_out_of_bounds_raises_index_error():
    x = t(A)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        x[5]
    with pytest.raises(IndexError, match="index -3 is out of bounds for dimension 0"):
        x[-3]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 1 with size 3"):
        x[:, [0, 4]]
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 2 with size 4"):
        x[..., flow.tensor([-5]), 0]
    with pytest.raises(IndexError, match="index 9 is out of bounds for dimension 0"):
        x[np.array([9])]
    with pytest.raises(IndexError, match="out of bounds"):
        x[7] = 1
    with pytest.raises(IndexError, match="out of bounds"):
        x[flow.tensor([0, 2])] = 1


def test_bad_indices():
    x = t(A)
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 4"):
        x[0, 0, 0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::0]
    with pytest.raises(IndexError, match="long, int or bool"):
        x[flow.tensor([0.5])]
    with pytest.raises(IndexError, match="long, int or bool"):
        x[[0.5, 1.0]]
    with pytest.raises(IndexError, match="uint8"):
        x[flow.tensor([1, 0], dtype=flow.uint8)]
    with pytest.raises(TypeError, match="valid indices"):
        x["a"]
    with pytest.raises(TypeError, match="slice start must be an integer"):
        x[1.5:]
    with pytest.raises(IndexError, match="the shape of the mask \\[3\\] at index 0 does not match"):
        x[flow.tensor([True, False, True])]
    with pytest.raises(IndexError, match="could not be broadcast"):
        x[[0, 1], [0, 1, 2]]


def test_jax_arrays_as_index_and_value():
    x = t(A.copy())
    np.testing.assert_array_equal(x[jnp.array([1, 0])].numpy(), A[[1, 0]])
    x[0, jnp.array([0, 2])] = jnp.zeros((2, 4, 5), jnp.int32)
    want = A.copy()
    want[0, [0, 2]] = 0
    np.testing.assert_array_equal(x.numpy(), want)


def test_tensor_slice_bounds():
    x = t(A)
    np.testing.assert_array_equal(x[flow.tensor(1):, :flow.tensor(2)].numpy(), A[1:, :2])


def test_setitem_is_functional_and_bumps_version():
    x = t(A.copy())
    old = x._value
    v0 = x._version
    x[0, 1] = 100
    assert x._version == v0 + 1
    assert np.asarray(old)[0, 1, 0, 0] == A[0, 1, 0, 0]  # the old value is untouched
    assert (x.numpy()[0, 1] == 100).all()
    y = x[1]  # a view: it sees a later write into its base, as in PyTorch
    c = x[1].clone()  # a copy does not
    x[1] = 0
    np.testing.assert_array_equal(y.numpy(), np.zeros_like(A[1]))
    np.testing.assert_array_equal(c.numpy(), A[1])


def test_setitem_value_conversion():
    x = flow.zeros(3, dtype=flow.int64)
    x[0] = 1.7  # PyTorch truncates a float assigned into an integer tensor
    x[1] = True
    x[2] = flow.tensor(2.9)
    np.testing.assert_array_equal(x.numpy(), [1, 1, 2])
    f = flow.zeros(2, 3)
    f[:, 1] = [5, 6]
    f[1] = np.array([1.5, 2.5, 3.5])
    np.testing.assert_array_equal(f.numpy(), [[0, 5, 0], [1.5, 2.5, 3.5]])
    f[0] = flow.ones(1, 3, dtype=flow.float64)  # leading size-1 dims of the value are dropped
    assert f.dtype == flow.float32
    np.testing.assert_array_equal(f.numpy()[0], [1, 1, 1])
    with pytest.raises(ValueError, match="shape mismatch: value tensor of shape \\[2\\] cannot "
                                         "be broadcast to indexing result of shape \\[3\\]"):
        f[0] = flow.ones(2)
    with pytest.raises(TypeError, match="can't assign a str"):
        f[0] = "x"
    with pytest.raises(OverflowError):
        flow.zeros(2, dtype=flow.uint8)[0] = 300


def test_mask_setitem_and_where_path():
    x = t(np.arange(12.0).reshape(3, 4))
    x[x > 5] = 0.0
    np.testing.assert_array_equal(x.numpy(), np.where(np.arange(12.0).reshape(3, 4) > 5, 0,
                                                      np.arange(12.0).reshape(3, 4)))
    # a mask over dim 0 with a row value broadcast over the masked rows
    y = flow.zeros(3, 4)
    y[flow.tensor([True, False, True])] = flow.tensor([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(y.numpy()[[0, 2]], [[1, 2, 3, 4]] * 2)
    # a value with one entry per True element (eager: goes through nonzero)
    z = flow.zeros(2, 3)
    m = np.array([[True, False, True], [False, True, False]])
    z[m] = flow.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(z.numpy(), [[1, 0, 2], [0, 3, 0]])


def test_jit_of_getitem_and_setitem():
    idx = jnp.array([2, 0])

    def f(v, i):
        x, ti = _wrap(v), _wrap(i)
        y = x[0, :, ti]          # int first, then index tensor
        x[1, ti] = -1
        x[x > 100] = 7           # traceable: a mask with a broadcastable value
        return y._value, x._value

    got_y, got_x = jax.jit(f)(jnp.asarray(A), idx)
    np.testing.assert_array_equal(np.asarray(got_y), A[0][:, [2, 0]])
    want = A.copy()
    want[1, [2, 0]] = -1
    want[want > 100] = 7
    np.testing.assert_array_equal(np.asarray(got_x), want)


def test_vmap_of_indexing():
    xs = np.arange(3 * 4 * 5).reshape(3, 4, 5)
    ids = np.array([[0, 1], [3, 3], [2, 0]])

    def f(v, i):
        x = _wrap(v)
        out = x[_wrap(i), 1:]
        x[:, 0] = 0
        return out._value, x._value

    got, setv = jax.vmap(f)(jnp.asarray(xs), jnp.asarray(ids))
    for b in range(3):
        np.testing.assert_array_equal(np.asarray(got[b]), xs[b][ids[b], 1:])
        want = xs[b].copy()
        want[:, 0] = 0
        np.testing.assert_array_equal(np.asarray(setv[b]), want)


def test_bool_mask_under_jit_is_a_clear_error():
    def f(v):
        x = _wrap(v)
        return x[x > 3]._value

    with pytest.raises(TypeError, match="boolean mask indexing has a data-dependent result shape"):
        jax.jit(f)(jnp.arange(6))

    def g(v):
        x = _wrap(v)
        x[x > 3] = _wrap(jnp.arange(2))  # one value per True element: data-dependent
        return x._value

    with pytest.raises(TypeError, match="data-dependent"):
        jax.jit(g)(jnp.arange(6))


def test_iteration_uses_getitem():
    rows = list(t(A[0]))
    assert len(rows) == 3
    np.testing.assert_array_equal(rows[2].numpy(), A[0, 2])


def test_T_and_mT():
    x = t(A)
    np.testing.assert_array_equal(x.T.numpy(), A.transpose(3, 2, 1, 0))
    np.testing.assert_array_equal(x.mT.numpy(), A.swapaxes(-1, -2))
    with pytest.raises(ValueError, match="mT"):
        _ = t(np.arange(3)).mT
