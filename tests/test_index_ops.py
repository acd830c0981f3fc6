"""Functional-level tests of the index ops and sorting: flow.gather, scatter, scatter_add,
index_select, masked_fill, one_hot, sort, argsort, topk.

Values against NumPy (and PyTorch where installed); eager out-of-range indices raise an error
that is both an IndexError and a RuntimeError; under jit the documented results (fill value,
dropped entry, zero row) appear instead; named-tuple returns; bad arguments. Op-level checks
are the checker's (jflow/testing/op_samples/index.py).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jflow as flow
from jflow.functional.functors.index import IndexOutOfRangeError
from jflow.sharding.sbp import B, P, S, Signature, signatures_of

_rng = np.random.default_rng(12)
X = _rng.uniform(-2, 2, (3, 4)).astype(np.float32)
IDX = np.array([[0, 3], [2, 2], [1, 0]])


def t(a):
    return flow.tensor(np.asarray(a))


def npv(x):
    return np.asarray(x._value if isinstance(x, flow.Tensor) else x)


def eq(x, want):
    np.testing.assert_array_equal(npv(x), np.asarray(want))


# -- gather ------------------------------------------------------------------------------------

def test_gather_matches_take_along_axis():
    eq(flow.gather(t(X), 1, t(IDX)), np.take_along_axis(X, IDX, 1))
    eq(flow.gather(t(X), -1, t(IDX.astype(np.int32))), np.take_along_axis(X, IDX, 1))
    i0 = np.array([[2, 0, 1, 1]])
    eq(flow.gather(t(X), 0, index=t(i0)), np.take_along_axis(X, i0, 0))
    # index smaller than input on the other dim reads the leading slice
    eq(flow.gather(t(X), 1, t(IDX[:2])), np.take_along_axis(X[:2], IDX[:2], 1))


def test_gather_matches_torch():
    torch = pytest.importorskip("torch")
    x3 = _rng.uniform(size=(2, 3, 4)).astype(np.float32)
    i3 = _rng.integers(0, 3, (2, 5, 4))
    want = torch.gather(torch.from_numpy(x3), 1, torch.from_numpy(i3)).numpy()
    eq(flow.gather(t(x3), 1, t(i3)), want)


@pytest.mark.parametrize("bad", [4, -1])
def test_gather_out_of_range_raises_eagerly(bad):
    idx = IDX.copy()
    idx[1, 0] = bad
    with pytest.raises(IndexError, match=rf"gather\(\): index {bad} is out of bounds for "
                                         r"dimension 1 with size 4"):
        flow.gather(t(X), 1, t(idx))
    with pytest.raises(RuntimeError):  # PyTorch raises RuntimeError here: both work
        flow.gather(t(X), 1, t(idx))


def test_gather_out_of_range_under_jit_reads_fill_value():
    idx = IDX.copy()
    idx[1, 0] = 9
    out = npv(jax.jit(lambda x, i: flow.gather(x, 1, i))(t(X), t(idx)))
    assert np.isnan(out[1, 0])
    want = np.take_along_axis(X, np.clip(idx, 0, 3), 1)
    np.testing.assert_array_equal(np.delete(out.ravel(), 2), np.delete(want.ravel(), 2))


def test_gather_bad_arguments():
    with pytest.raises(TypeError, match=r"gather\(\): argument 'index' must be an integer"):
        flow.gather(t(X), 1, t(IDX.astype(np.float32)))
    with pytest.raises(IndexError, match=r"gather\(\): Dimension out of range .*but got 2"):
        flow.gather(t(X), 2, t(IDX))
    with pytest.raises(ValueError, match="op 'dim_gather'.*number of dimensions"):
        flow.gather(t(X), 1, t(IDX[0]))
    with pytest.raises(ValueError, match="op 'dim_gather'.*no larger"):
        flow.gather(t(X), 1, t(np.zeros((4, 1), np.int64)))
    with pytest.raises(ValueError, match="sparse_grad"):
        flow.gather(t(X), 1, t(IDX), sparse_grad=True)


# -- scatter / scatter_add ---------------------------------------------------------------------

@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter:UserWarning")
def test_scatter_src_value_and_reduce_match_torch():
    torch = pytest.importorskip("torch")
    x = np.zeros((3, 5), np.float32)
    src = _rng.uniform(size=(2, 5)).astype(np.float32)
    idx = np.array([[0, 1, 2, 0, 1], [2, 0, 1, 1, 0]])
    tx, ti, ts = (torch.from_numpy(a) for a in (x, idx, src))
    eq(flow.scatter(t(x), 0, t(idx), t(src)), torch.scatter(tx, 0, ti, ts).numpy())
    eq(flow.scatter(t(x), 0, t(idx), src=t(src)), torch.scatter(tx, 0, ti, ts).numpy())
    eq(flow.scatter(t(x), 0, t(idx), 2.5), torch.scatter(tx, 0, ti, 2.5).numpy())
    eq(flow.scatter(t(x), 0, t(idx), value=-1), torch.scatter(tx, 0, ti, value=-1).numpy())
    dup = np.array([[0, 0, 0, 1, 2], [0, 0, 1, 1, 2]])
    td = torch.from_numpy(dup)
    np.testing.assert_allclose(npv(flow.scatter(t(x), 0, t(dup), t(src), reduce="add")),
                               torch.scatter(tx, 0, td, ts, reduce="add").numpy(), rtol=1e-6)
    np.testing.assert_allclose(npv(flow.scatter_add(t(x), 0, t(dup), t(src))),
                               torch.scatter_add(tx, 0, td, ts).numpy(), rtol=1e-6)
    ones = np.ones((3, 5), np.float32)
    np.testing.assert_allclose(
        npv(flow.scatter(t(ones), 0, t(dup), 3.0, reduce="multiply")),
        torch.scatter(torch.from_numpy(ones), 0, td, 3.0, reduce="multiply").numpy())


def test_scatter_scalar_is_converted_to_the_input_dtype():
    x = np.zeros(4, np.int64)
    out = flow.scatter(t(x), 0, t(np.array([1, 3])), 2.7)  # truncates, as PyTorch
    assert out.dtype == flow.int64
    eq(out, [0, 2, 0, 2])
    with pytest.raises(OverflowError, match="scatter"):
        flow.scatter(t(np.zeros(3, np.int8)), 0, t(np.array([0])), 300)


def test_scatter_does_not_modify_its_input():
    x = t(np.zeros(3, np.float32))
    flow.scatter(x, 0, t(np.array([1])), 5.0)
    eq(x, [0, 0, 0])


def test_scatter_out_of_range_eager_and_jit():
    idx = np.array([[0, 3, 1, 1, 2]])
    with pytest.raises(IndexOutOfRangeError, match=r"scatter\(\): index 3 is out of bounds "
                                                   r"for dimension 0 with size 3"):
        flow.scatter(t(np.zeros((3, 5), np.float32)), 0, t(idx), 1.0)
    with pytest.raises(IndexError, match="scatter_add"):
        flow.scatter_add(t(np.zeros((3, 5), np.float32)), 0, t(-idx),
                         t(np.ones((1, 5), np.float32)))
    out = npv(jax.jit(lambda x, i: flow.scatter(x, 0, i, 1.0))(
        t(np.zeros((3, 5), np.float32)), t(idx)))
    want = np.zeros((3, 5), np.float32)
    for j, r in enumerate(idx[0]):
        if r < 3:
            want[r, j] = 1.0
    eq(out, want)  # the out-of-range entry was dropped


def test_scatter_bad_arguments():
    x, idx = t(np.zeros((3, 5), np.float32)), t(np.zeros((1, 5), np.int64))
    with pytest.raises(TypeError, match=r"scatter\(\): expected src to have the dtype"):
        flow.scatter(x, 0, idx, t(np.ones((1, 5), np.float64)))
    with pytest.raises(ValueError, match=r"scatter\(\): reduce must be None, 'add' or "
                                         r"'multiply', got 'max'"):
        flow.scatter(x, 0, idx, 1.0, reduce="max")
    with pytest.raises(ValueError, match="op 'dim_scatter'.*no larger than src"):
        flow.scatter(x, 0, t(np.zeros((2, 5), np.int64)), t(np.ones((1, 5), np.float32)))
    with pytest.raises(TypeError, match="invalid combination of arguments"):
        flow.scatter(x, 0, idx, "1")


# -- index_select ------------------------------------------------------------------------------

def test_index_select():
    eq(flow.index_select(t(X), 0, t(np.array([2, 0, 2]))), X[[2, 0, 2]])
    eq(flow.index_select(t(X), -1, t(np.array([3], np.int32))), X[:, [3]])
    out = flow.index_select(t(X), 1, t(np.int64(1)))  # a 0-d index keeps the dim
    assert tuple(out.shape) == (3, 1)
    eq(out, X[:, [1]])
    with pytest.raises(IndexError, match=r"index_select\(\): index 4 is out of bounds"):
        flow.index_select(t(X), 1, t(np.array([0, 4])))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds"):
        flow.index_select(t(X), 1, t(np.array([-1])))
    with pytest.raises(ValueError, match="0-d or 1-D"):
        flow.index_select(t(X), 1, t(np.zeros((1, 1), np.int64)))
    nan = npv(jax.jit(lambda i: flow.index_select(t(X), 1, i))(t(np.array([0, 4]))))
    assert np.isnan(nan[:, 1]).all() and (nan[:, 0] == X[:, 0]).all()


# -- masked_fill -------------------------------------------------------------------------------

def test_masked_fill_scalar_and_tensor_values():
    mask = X > 0
    eq(flow.masked_fill(t(X), t(mask), -1.0), np.where(mask, np.float32(-1.0), X))
    out = flow.masked_fill(t(X), t(mask), t(np.float64(2.5)))  # 0-d value is cast
    assert out.dtype == flow.float32
    eq(out, np.where(mask, np.float32(2.5), X))
    big = flow.masked_fill(t(X), t(np.ones((2, 3, 4), bool)), 0.0)  # mask enlarges the result
    assert tuple(big.shape) == (2, 3, 4)
    ints = flow.masked_fill(t(np.zeros(3, np.int64)), t(np.array([True, False, True])), 1.7)
    assert ints.dtype == flow.int64
    eq(ints, [1, 0, 1])


def test_masked_fill_matches_torch():
    torch = pytest.importorskip("torch")
    mask = _rng.uniform(size=(4,)) > 0.5
    want = torch.from_numpy(X).masked_fill(torch.from_numpy(mask), float("-inf")).numpy()
    eq(flow.masked_fill(t(X), t(mask), float("-inf")), want)


def test_masked_fill_bad_arguments():
    with pytest.raises(TypeError, match=r"masked_fill\(\): mask must be a bool tensor"):
        flow.masked_fill(t(X), t(np.ones((3, 4), np.int64)), 0.0)
    with pytest.raises(ValueError, match="0-d tensor"):
        flow.masked_fill(t(X), t(X > 0), t(np.ones(1, np.float32)))
    with pytest.raises(OverflowError, match="masked_fill"):
        flow.masked_fill(t(np.zeros(3, np.int8)), t(np.ones(3, bool)), 300)
    with pytest.raises(ValueError, match="op 'masked_fill'.*broadcast"):
        flow.masked_fill(t(X), t(np.ones((2, 4), bool)), 0.0)


# -- one_hot -----------------------------------------------------------------------------------

def test_one_hot():
    idx = np.array([[0, 2], [1, 2]])
    out = flow.one_hot(t(idx))
    assert out.dtype == flow.int64 and tuple(out.shape) == (2, 2, 3)
    eq(out, np.eye(3, dtype=np.int64)[idx])
    eq(flow.one_hot(t(idx), 5), np.eye(5, dtype=np.int64)[idx])
    eq(flow.one_hot(t(idx.astype(np.int32)), num_classes=4), np.eye(4, dtype=np.int64)[idx])
    assert tuple(flow.one_hot(t(np.zeros(0, np.int64)), 3).shape) == (0, 3)


def test_one_hot_errors():
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        flow.one_hot(t(np.array([0, 3])), 3)
    with pytest.raises(IndexError, match="non-negative"):
        flow.one_hot(t(np.array([0, -1])))
    with pytest.raises(ValueError, match="empty tensor"):
        flow.one_hot(t(np.zeros(0, np.int64)))
    with pytest.raises(TypeError, match="integer tensor"):
        flow.one_hot(t(np.array([0.0, 1.0])), 2)
    with pytest.raises(ValueError, match="num_classes must be -1"):
        flow.one_hot(t(np.array([0])), -2)


def test_one_hot_under_jit_needs_num_classes():
    with pytest.raises(ValueError, match="pass num_classes explicitly"):
        jax.jit(lambda i: flow.one_hot(i))(t(np.array([0, 1])))
    out = jax.jit(lambda i: flow.one_hot(i, 3))(t(np.array([0, 5, -1, 2])))
    eq(out, [[1, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 1]])  # out of range: zero rows


# -- sort / argsort / topk ---------------------------------------------------------------------

def test_sort_named_tuple_and_values():
    x = _rng.permutation(12).reshape(3, 4).astype(np.float32)
    res = flow.sort(t(x))
    values, indices = res
    assert res.values is values and res.indices is indices
    assert indices.dtype == flow.int64
    eq(values, np.sort(x, -1))
    eq(indices, np.argsort(x, -1))
    v, i = flow.sort(t(x), 0, descending=True)
    eq(v, -np.sort(-x, 0))
    eq(i, np.argsort(-x, 0))
    eq(flow.argsort(t(x), dim=-1, descending=True), np.argsort(-x, -1))


def test_sort_is_stable_with_nan_and_ties_like_torch():
    torch = pytest.importorskip("torch")
    x = np.array([[1.0, np.nan, 2.0, 1.0, -0.0, 0.0, np.nan, 2.0]], np.float32)
    for desc in (False, True):
        tv, ti = torch.sort(torch.from_numpy(x), descending=desc, stable=True)
        v, i = flow.sort(t(x), descending=desc, stable=True)
        np.testing.assert_array_equal(npv(v), tv.numpy())
        eq(i, ti.numpy())
        eq(flow.argsort(t(x), descending=desc), ti.numpy())


def test_topk():
    x = _rng.permutation(20).reshape(4, 5).astype(np.float32)
    res = flow.topk(t(x), 2)
    assert tuple(res.values.shape) == (4, 2) and res.indices.dtype == flow.int64
    eq(res.values, -np.sort(-x, -1)[:, :2])
    eq(res.indices, np.argsort(-x, -1)[:, :2])
    v, i = flow.topk(t(x), 3, dim=0, largest=False)
    eq(v, np.sort(x, 0)[:3])
    eq(i, np.argsort(x, 0)[:3])
    torch = pytest.importorskip("torch")
    tv, ti = torch.topk(torch.from_numpy(x), 3, dim=1, largest=True, sorted=True)
    v, i = flow.topk(t(x), 3, 1, True, True)
    eq(v, tv.numpy())
    eq(i, ti.numpy())


def test_sort_topk_bad_arguments():
    with pytest.raises(IndexError, match=r"sort\(\): Dimension out of range .*but got 2"):
        flow.sort(t(X), 2)
    with pytest.raises(IndexError, match=r"argsort\(\): Dimension out of range .*but got -3"):
        flow.argsort(t(X), -3)
    with pytest.raises(ValueError, match=r"topk\(\): k \(5\) is out of range for dimension 1 "
                                         r"of size 4"):
        flow.topk(t(X), 5)
    with pytest.raises(ValueError, match=r"topk\(\): k \(-1\)"):
        flow.topk(t(X), -1)
    with pytest.raises(TypeError, match="op 'topk'.*numeric"):
        flow.topk(t(X > 0), 1)
    with pytest.raises(TypeError, match=r"sort\(\): argument 'descending'"):
        flow.sort(t(X), -1, "yes")


def test_sort_and_topk_under_vmap_and_jit():
    xs = _rng.uniform(size=(3, 2, 5)).astype(np.float32)
    v, i = jax.vmap(lambda x: tuple(flow.sort(x, descending=True)))(t(xs))
    eq(v, -np.sort(-xs, -1))
    eq(i, np.argsort(-xs, -1))
    v, i = jax.jit(lambda x: tuple(flow.topk(x, 2, dim=0)))(t(xs))
    eq(v, -np.sort(-xs, 0)[:2])


# -- SBP signatures ----------------------------------------------------------------------------

def _sigs(op, shapes, n_out=1, **attrs):
    op = flow.ops.get(op)
    return signatures_of(op, shapes, n_out, op.normalize_attrs(attrs))


def test_index_sbp_signatures():
    g = _sigs("dim_gather", [(3, 4), (3, 2)], dim=1)
    assert Signature((S(0), S(0)), (S(0),)) in g       # same size on a non-gather axis
    assert Signature((B, S(1)), (S(1),)) in g          # index split along the gather axis
    assert Signature((B, S(0)), (S(0),)) not in g      # rows would read the wrong input rows
    assert Signature((P, B), (P,)) not in g            # the fill of out-of-range is not linear
    assert Signature((S(1), S(1)), (S(1),)) not in g  # the gather axis of input: no
    sc = _sigs("dim_scatter", [(3, 5), (2, 5), (2, 5)], dim=0, reduce="add")
    assert Signature((S(1), S(1), S(1)), (S(1),)) in sc
    assert Signature((P, B, P), (P,)) in sc
    assert Signature((P, B, P), (P,)) not in _sigs("dim_scatter", [(3, 5), (2, 5), (2, 5)],
                                                   dim=0)
    sel = _sigs("index_select", [(3, 4), (2,)], dim=1)
    assert Signature((S(0), B), (S(0),)) in sel and Signature((B, S(0)), (S(1),)) in sel
    mf = _sigs("masked_fill", [(3, 4), (4,), ()])
    assert Signature((S(0), B, B), (S(0),)) in mf and Signature((S(1), S(0), B), (S(1),)) in mf
    srt = _sigs("sort", [(3, 4)], 2, dim=1)
    assert srt == [Signature((S(0),), (S(0), S(0))), Signature((B,), (B, B))]
    assert Signature((S(1),), (S(1),)) in _sigs("one_hot", [(3, 4)], num_classes=5)


def test_concrete_index_made_inside_jit() -> None:
    # an index tensor created while tracing is concrete: its range check runs eagerly
    import jax
    import jax.numpy as jnp

    import jflow as flow

    f = jax.jit(lambda a: flow.gather(flow.utils.from_jax(a), 1,
                                      flow.tensor([[0, 0], [1, 0]]))._value)
    np.testing.assert_array_equal(f(jnp.arange(4.0).reshape(2, 2)), [[0.0, 0.0], [3.0, 2.0]])
