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
    with pytest.raises(IndexError, match=r"softmax\(\): Dimension out of range \(expected to be in "
                                         r"range of \[-3, 2\], but got 3\)"):
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


# -- conv_transpose2d, pooling ceil_mode, interpolate (functors/{conv,pool,upsample}.py) ---------

_INTERP = [  # (input shape, kwargs)
    ((2, 3, 4, 5), dict(size=(7, 9))),
    ((2, 3, 4, 5), dict(size=3)),
    ((2, 3, 4, 5), dict(scale_factor=2)),
    ((2, 3, 4, 5), dict(scale_factor=(1.7, 0.6))),
    ((2, 3, 4, 5), dict(size=(7, 9), mode="nearest-exact")),
    ((2, 3, 4, 5), dict(size=(7, 3), mode="bilinear")),
    ((2, 3, 4, 5), dict(size=(7, 9), mode="bilinear", align_corners=True)),
    ((2, 3, 4, 5), dict(size=(1, 1), mode="bilinear", align_corners=True)),
    ((2, 3, 4, 5), dict(scale_factor=(1.3, 2.5), mode="bilinear")),
    ((2, 3, 4, 5), dict(scale_factor=1.3, mode="bilinear", recompute_scale_factor=True)),
    ((2, 3, 6), dict(scale_factor=1.5)),
    ((2, 3, 6), dict(size=4, mode="linear", align_corners=True)),
    ((2, 3, 6), dict(scale_factor=[2.5], mode="linear")),
]


@pytest.mark.parametrize("shape,kw", _INTERP, ids=[str(k) for _, k in _INTERP])
def test_interpolate_matches_torch(shape, kw):
    torch = pytest.importorskip("torch")
    x = _rng.standard_normal(shape).astype(np.float32)
    xm, xt = t(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    ym = flow.nn.functional.interpolate(xm, **kw)
    yt = torch.nn.functional.interpolate(xt, **kw)
    assert tuple(ym.shape) == tuple(yt.shape)
    close(ym, yt.detach().numpy(), rtol=1e-6, atol=1e-6)
    gy = _rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    ym.backward(t(gy))
    yt.backward(torch.tensor(gy))
    close(xm.grad, xt.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_interpolate_errors():
    x = t(X)
    F = flow.nn.functional
    with pytest.raises(ValueError, match="exactly one of size or scale_factor"):
        F.interpolate(x, size=4, scale_factor=2.0)
    with pytest.raises(ValueError, match="exactly one of size or scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, size=4, align_corners=True)
    with pytest.raises(NotImplementedError, match="bilinear"):
        F.interpolate(x, size=4, mode="bilinear")  # a 3-d input
    with pytest.raises(ValueError, match="mode must be one of"):
        F.interpolate(x, size=4, mode="cubic")
    with pytest.raises(ValueError, match="size must be an int or 1 ints"):
        F.interpolate(x, size=(4, 4))
    with pytest.raises(ValueError, match="greater than 0"):
        F.interpolate(x, scale_factor=0.1)
    with pytest.raises(TypeError, match="floating point"):
        F.interpolate(flow.tensor(np.ones((1, 1, 2, 2), np.int64)), size=3)


_CONVT = [  # (x shape, w shape, kwargs)
    ((2, 4, 3, 3), (4, 3, 2, 3), dict()),
    ((2, 4, 3, 4), (4, 3, 3, 2), dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2))),
    ((1, 4, 3, 3), (4, 2, 2, 2), dict(stride=1, output_padding=1, dilation=2, groups=2)),
    ((4, 3, 3), (4, 2, 3, 3), dict(stride=2, padding=1)),  # unbatched
]


@pytest.mark.parametrize("xs,ws,kw", _CONVT)
def test_conv_transpose2d_matches_torch(xs, ws, kw):
    torch = pytest.importorskip("torch")
    x = _rng.standard_normal(xs).astype(np.float32)
    w = _rng.standard_normal(ws).astype(np.float32)
    b = _rng.standard_normal(ws[1] * kw.get("groups", 1)).astype(np.float32)
    args = [(t(a).requires_grad_(), torch.tensor(a, requires_grad=True)) for a in (x, w, b)]
    ym = flow.nn.functional.conv_transpose2d(*[a for a, _ in args], **kw)
    yt = torch.nn.functional.conv_transpose2d(*[a for _, a in args], **kw)
    close(ym, yt.detach().numpy(), rtol=1e-5, atol=1e-5)
    gy = _rng.standard_normal(tuple(yt.shape)).astype(np.float32)
    ym.backward(t(gy))
    yt.backward(torch.tensor(gy))
    for m, th in args:
        close(m.grad, th.grad.numpy(), rtol=1e-5, atol=1e-4)


def test_conv_transpose2d_errors():
    F = flow.nn.functional
    x, w = t(_rng.standard_normal((1, 2, 3, 3)).astype(np.float32)), t(np.ones((2, 3, 2, 2),
                                                                                np.float32))
    with pytest.raises(ValueError, match="conv_transpose2d.*output_padding must be smaller"):
        F.conv_transpose2d(x, w, output_padding=1)
    with pytest.raises(ValueError, match="conv_transpose2d.*channels"):
        F.conv_transpose2d(t(np.ones((1, 3, 3, 3), np.float32)), w)
    with pytest.raises(RuntimeError, match="conv_transpose2d.*bias"):
        F.conv_transpose2d(x, w, t(np.ones(2, np.float32)))


def test_pooling_ceil_mode_matches_torch():
    torch = pytest.importorskip("torch")
    F, TF = flow.nn.functional, torch.nn.functional
    for shape in [(1, 2, 6, 3), (1, 2, 5, 7)]:
        x = _rng.standard_normal(shape).astype(np.float32)
        for k, s, p in [(2, 2, 0), (3, 2, 1), ((3, 2), (2, 3), (1, 1)), (2, 2, 1)]:
            for kw in [dict(), dict(count_include_pad=False), dict(divisor_override=2)]:
                close(F.avg_pool2d(t(x), k, s, p, ceil_mode=True, **kw),
                      TF.avg_pool2d(torch.tensor(x), k, s, p, ceil_mode=True, **kw).numpy())
            ym, im = F.max_pool2d_with_indices(t(x), k, s, p, ceil_mode=True)
            yt, it = TF.max_pool2d(torch.tensor(x), k, s, p, ceil_mode=True, return_indices=True)
            close(ym, yt.numpy())
            np.testing.assert_array_equal(npv(im), it.numpy())
    with pytest.raises(ValueError, match="divisor_override must be non-zero"):
        F.avg_pool2d(t(np.ones((1, 1, 4, 4), np.float32)), 2, divisor_override=0)
