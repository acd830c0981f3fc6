"""Functional-level tests of the matrix products (flow.matmul, mm, bmm, dot, mv, outer, ``@``).

torch.matmul's rank rules, OneFlow's transpose/alpha keywords, dtype strictness, PyTorch's
error cases, jit/vmap through the functional layer, and the SBP signatures the ops declare.
Op-level checks (inference vs kernel, jit, vmap, NumPy references) are the checker's
(jflow/testing/op_samples/matmul.py).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jflow as flow
from jflow.sharding.sbp import B, P, S, Signature, signatures_of

_rng = np.random.default_rng(11)


def t(a):
    return flow.tensor(np.asarray(a))


def npv(x):
    return np.asarray(x._value)


def f32(*shape):
    return _rng.uniform(-2, 2, shape).astype(np.float32)


def close(x, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(npv(x).astype(np.float64), np.asarray(want, np.float64),
                               rtol=rtol, atol=atol)


# -- torch.matmul's cases --------------------------------------------------------------------

@pytest.mark.parametrize("sa,sb", [
    ((4,), (4,)),            # dot -> 0-d
    ((3, 4), (4,)),          # matrix-vector
    ((2, 3, 4), (4,)),       # batched matrix-vector
    ((4,), (4, 5)),          # vector-matrix
    ((4,), (2, 4, 5)),       # vector-batched matrix
    ((3, 4), (4, 5)),        # 2-D
    ((2, 3, 4), (2, 4, 5)),  # batched
    ((2, 1, 3, 4), (5, 4, 2)),  # broadcast batch dims
    ((3, 4), (2, 4, 5)),     # 2-D broadcast against a batch
])
def test_matmul_rank_rules_match_numpy(sa, sb):
    a, b = f32(*sa), f32(*sb)
    out = flow.matmul(t(a), t(b))
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert tuple(out.shape) == want.shape
    assert out.dtype == flow.float32
    close(out, want)
    close(t(a) @ t(b), want)  # the operator is the same function


def test_matmul_matches_torch():
    torch = pytest.importorskip("torch")
    for sa, sb in [((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 5)), ((2, 3, 4), (4,))]:
        a, b = f32(*sa), f32(*sb)
        want = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
        close(flow.matmul(t(a), t(b)), want)


def test_matmul_integer_is_exact():
    a = _rng.integers(-100, 100, (3, 4))
    b = _rng.integers(-100, 100, (4, 2))
    out = flow.matmul(t(a), t(b))
    assert out.dtype == flow.int64
    np.testing.assert_array_equal(npv(out), a @ b)


def test_matmul_transpose_and_alpha_keywords():
    a, b = f32(4, 3), f32(5, 4)
    want = 2.0 * (a.T.astype(np.float64) @ b.T)
    close(flow.matmul(t(a), t(b), transpose_a=True, transpose_b=True, alpha=2.0), want)
    a3, b3 = f32(2, 4, 3), f32(2, 4, 5)
    close(flow.matmul(t(a3), t(b3), transpose_a=True),
          np.swapaxes(a3, -1, -2).astype(np.float64) @ b3)
    # transposes with a vector operand: only the matrix side may be transposed
    v = f32(4)
    close(flow.matmul(t(a), t(v), transpose_a=True), a.T.astype(np.float64) @ v)
    close(flow.matmul(t(v), t(b), transpose_b=True, alpha=-1.0), -(v.astype(np.float64) @ b.T))
    close(flow.matmul(t(v), t(v), alpha=0.5), 0.5 * float(v.astype(np.float64) @ v))
    with pytest.raises(ValueError, match="1-D operand"):
        flow.matmul(t(v), t(b), transpose_a=True)
    with pytest.raises(TypeError, match="alpha"):
        flow.matmul(t(np.ones((2, 2), np.int64)), t(np.ones((2, 2), np.int64)), alpha=2.0)


def test_matmul_does_not_promote():
    with pytest.raises(TypeError, match=r"matmul\(\).*same dtype.*float32.*float64"):
        flow.matmul(t(f32(2, 3)), t(np.ones((3, 2))))
    with pytest.raises(TypeError, match="same dtype"):
        t(f32(3)) @ t(np.ones(3, np.int64))


def test_matmul_shape_errors_name_the_op():
    with pytest.raises(ValueError, match="at least 1-D"):
        flow.matmul(t(np.float32(1.0)), t(f32(2, 2)))
    with pytest.raises(ValueError, match=r"op 'matmul'.*cannot be multiplied \(a is 2x3, b is 4x5"):
        flow.matmul(t(f32(2, 3)), t(f32(4, 5)))
    with pytest.raises(ValueError, match=r"op 'batch_matmul'.*batch dimensions"):
        flow.matmul(t(f32(2, 3, 4)), t(f32(3, 4, 5)))
    with pytest.raises(ValueError, match="op 'dot'.*same number of elements"):
        flow.matmul(t(f32(3)), t(f32(4)))
    with pytest.raises(TypeError, match=r"argument 'other'.*must be Tensor"):
        flow.matmul(t(f32(3)), [1.0, 2.0, 3.0])


def test_matmul_operator():
    a, b = f32(2, 3), f32(3, 2)
    close(t(a) @ t(b), a.astype(np.float64) @ b)
    close(t(a) @ b, a.astype(np.float64) @ b)  # an ndarray operand becomes a tensor
    with pytest.raises(TypeError):
        t(a) @ [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]


# -- mm / bmm / dot / mv / outer -------------------------------------------------------------

def test_mm_bmm_dot_mv():
    a, b = f32(3, 4), f32(4, 2)
    close(flow.mm(t(a), t(b)), a.astype(np.float64) @ b)
    a3, b3 = f32(2, 3, 4), f32(2, 4, 5)
    close(flow.bmm(t(a3), t(b3)), a3.astype(np.float64) @ b3)
    v, w = f32(4), f32(4)
    d = flow.dot(t(v), t(w))
    assert tuple(d.shape) == ()
    close(d, float(v.astype(np.float64) @ w))
    close(flow.mv(t(a), t(v)), a.astype(np.float64) @ v)
    close(flow.dot(t(np.zeros(0, np.float32)), t(np.zeros(0, np.float32))), 0.0)


@pytest.mark.parametrize("fn,args,match", [
    (flow.mm, ((3,), (3, 2)), r"mm\(\): argument 'input' must be a 2-D tensor"),
    (flow.mm, ((2, 3), (2, 3, 4)), r"mm\(\): argument 'mat2' must be a 2-D tensor"),
    (flow.bmm, ((2, 3), (3, 4)), r"bmm\(\): argument 'input' must be a 3-D"),
    (flow.bmm, ((2, 3, 4), (1, 4, 5)), r"bmm\(\): batch sizes must match, got 2"),
    (flow.dot, ((2, 2), (4,)), r"dot\(\): argument 'input' must be a 1-D"),
    (flow.mv, ((3, 4), (4, 1)), r"mv\(\): argument 'vec' must be a 1-D"),
    (flow.outer, ((3, 1), (2,)), r"outer\(\): argument 'input' must be a 1-D"),
])
def test_fixed_rank_products_reject_other_ranks(fn, args, match):
    with pytest.raises(ValueError, match=match):
        fn(*(t(f32(*s)) for s in args))


def test_mm_inner_size_error():
    with pytest.raises(ValueError, match="cannot be multiplied"):
        flow.mm(t(f32(2, 3)), t(f32(4, 2)))


def test_outer_promotes_like_multiplication():
    a = np.arange(3)
    b = np.array([0.5, -1.0], np.float32)
    out = flow.outer(t(a), t(b))
    assert out.dtype == flow.float32
    close(out, np.outer(a, b))
    bo = flow.outer(t(np.array([True, False])), t(np.array([True, True])))
    assert bo.dtype == flow.bool
    np.testing.assert_array_equal(npv(bo), [[True, True], [False, False]])


# -- tracing -----------------------------------------------------------------------------------

def test_matmul_under_jit_and_vmap():
    a, b = f32(5, 3, 4), f32(4, 2)
    out = jax.jit(lambda x, y: (x @ y))(t(a), t(b))
    close(out, a.astype(np.float64) @ b)
    out = jax.vmap(lambda x: flow.matmul(x, t(b)))(t(a))
    close(out, a.astype(np.float64) @ b)
    out = jax.vmap(lambda x: flow.mv(x, t(b[:, 0])))(t(a))
    close(out, a.astype(np.float64) @ b[:, 0])


# -- SBP signatures ----------------------------------------------------------------------------

def _sigs(op, shapes, **attrs):
    op = flow.ops.get(op)
    full = op.normalize_attrs(attrs)
    return signatures_of(op, shapes, 1, full)


def test_matmul_sbp_signatures_are_oneflows():
    sigs = _sigs("matmul", [(4, 3), (3, 5)])
    for s in [Signature((S(0), B), (S(0),)), Signature((B, S(1)), (S(1),)),
              Signature((S(1), S(0)), (P,)), Signature((P, B), (P,)),
              Signature((B, P), (P,)), Signature((B, B), (B,))]:
        assert s in sigs
    # with transposes, the m / k / n axes move: a is (k, m), b is (n, k)
    sigs = _sigs("matmul", [(3, 4), (5, 3)], transpose_a=True, transpose_b=True)
    assert Signature((S(1), B), (S(0),)) in sigs
    assert Signature((B, S(0)), (S(1),)) in sigs
    assert Signature((S(0), S(1)), (P,)) in sigs


def test_batch_matmul_sbp_signatures():
    sigs = _sigs("batch_matmul", [(2, 1, 3, 4), (5, 4, 6)])
    assert Signature((S(0), B), (S(0),)) in sigs      # only a has batch axis 0
    assert Signature((B, S(0)), (S(1),)) in sigs      # a broadcasts on axis 1 (size 1)
    assert Signature((S(2), B), (S(2),)) in sigs      # m
    assert Signature((B, S(2)), (S(3),)) in sigs      # n
    assert Signature((S(3), S(1)), (P,)) in sigs      # k
    same = _sigs("batch_matmul", [(2, 3, 4), (2, 4, 5)])
    assert Signature((S(0), S(0)), (S(0),)) in same


def test_vector_product_sbp_signatures():
    assert Signature((S(0), S(0)), (P,)) in _sigs("dot", [(4,), (4,)])
    mv = _sigs("matrix_vector_product", [(2, 3, 4), (4,)])
    assert Signature((S(0), B), (S(0),)) in mv and Signature((S(1), B), (S(1),)) in mv
    assert Signature((S(2), S(0)), (P,)) in mv
    vm = _sigs("vector_matrix_product", [(4,), (4, 5)])
    assert Signature((B, S(1)), (S(0),)) in vm and Signature((S(0), S(0)), (P,)) in vm
    outer = _sigs("outer", [(3,), (4,)])
    assert Signature((S(0), B), (S(0),)) in outer and Signature((B, S(0)), (S(1),)) in outer
