"""Functional-level tests of flow.softmax / flow.log_softmax: values against NumPy and
PyTorch, the default dim (last axis), ``dtype=``, numerical stability, refusal of integer
inputs, bad dims, tracing, SBP. Op-level checks are the checker's
(jflow/testing/op_samples/nn.py).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jflow as flow
from jflow.sharding.sbp import S, Signature, signatures_of

_rng = np.random.default_rng(13)
X = _rng.uniform(-3, 3, (2, 3, 4)).astype(np.float32)


def t(a):
    return flow.tensor(np.asarray(a))


def npv(x):
    return np.asarray(x._value)


def _softmax(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def close(x, want, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(npv(x).astype(np.float64), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_softmax_and_log_softmax_dims(dim):
    close(flow.softmax(t(X), dim), _softmax(X, dim))
    close(flow.log_softmax(t(X), dim=dim), np.log(_softmax(X, dim)))


def test_default_dim_is_the_last_axis():
    close(flow.softmax(t(X)), _softmax(X, -1))
    close(flow.log_softmax(t(X)), np.log(_softmax(X, -1)))


def test_matches_torch():
    torch = pytest.importorskip("torch")
    tx = torch.from_numpy(X)
    close(flow.softmax(t(X), 1), torch.softmax(tx, 1).numpy())
    close(flow.log_softmax(t(X), 0), torch.log_softmax(tx, 0).numpy())
    h = X.astype(np.float16)
    close(flow.softmax(t(h), -1), torch.softmax(torch.from_numpy(h), -1).numpy(),
          rtol=1e-3, atol=1e-3)


def test_numerically_stable_for_large_inputs():
    big = np.array([[1000.0, 1001.0, -1000.0]], np.float32)
    out = npv(flow.softmax(t(big), 1))
    assert np.isfinite(out).all()
    close(flow.softmax(t(big), 1), _softmax(big, 1))
    ls = npv(flow.log_softmax(t(big), 1))
    assert np.isfinite(ls).all()
    np.testing.assert_allclose(ls[0, 2], -2001.0 - np.log1p(np.exp(-1.0)), rtol=1e-6)


def test_dtype_argument_and_low_precision():
    out = flow.softmax(t(X.astype(np.float16)), -1, dtype=flow.float32)
    assert out.dtype == flow.float32
    assert flow.softmax(t(X.astype(np.float16)), -1).dtype == flow.float16
    ints = t(np.arange(6).reshape(2, 3))
    out = flow.log_softmax(ints, 1, dtype=flow.float64)
    assert out.dtype == flow.float64
    close(out, np.log(_softmax(np.arange(6.0).reshape(2, 3), 1)), rtol=1e-12, atol=1e-12)


def test_integer_input_and_bad_arguments():
    ints = t(np.arange(6).reshape(2, 3))
    with pytest.raises(TypeError, match=r"softmax\(\): expected a floating point input, got "
                                        r"flow.int64; pass dtype="):
        flow.softmax(ints, 1)
    with pytest.raises(TypeError, match=r"log_softmax\(\): dtype must be a floating dtype"):
        flow.log_softmax(t(X), 1, dtype=flow.int32)
    with pytest.raises(IndexError, match=r"softmax\(\): dim 3 is out of range for a 3-d"):
        flow.softmax(t(X), 3)
    with pytest.raises(TypeError, match=r"softmax\(\): argument 'dim'"):
        flow.softmax(t(X), 1.5)


def test_edge_shapes():
    assert float(npv(flow.softmax(t(np.float32(4.0))))) == 1.0
    assert float(npv(flow.log_softmax(t(np.float32(4.0)), 0))) == 0.0
    assert tuple(flow.softmax(t(np.zeros((2, 0), np.float32)), 1).shape) == (2, 0)


def test_under_jit_and_vmap():
    close(jax.jit(lambda x: flow.softmax(x, 1))(t(X)), _softmax(X, 1))
    close(jax.vmap(lambda x: flow.log_softmax(x, 0))(t(X)), np.log(_softmax(X, 1)))


def test_sbp_splits_every_axis_but_dim():
    op = flow.ops.get("softmax")
    sigs = signatures_of(op, [(2, 3, 4)], 1, op.normalize_attrs({"dim": 1}))
    assert Signature((S(0),), (S(0),)) in sigs and Signature((S(2),), (S(2),)) in sigs
    assert Signature((S(1),), (S(1),)) not in sigs
