"""Parity with PyTorch of the remaining ``torch.nn.functional`` functions (max_unpool*, pdist,
multilabel_margin_loss, triplet_margin_with_distance_loss, fractional_max_pool*,
multi_head_attention_forward) and their modules, plus regressions of wrong values / refusals:
corrcoef / cov of one variable, softmax's implicit dim, 5-d interpolate, negative non-constant
padding, 0-d multi_margin_loss and empty batch_norm. Values in float32, gradients in float64
(``.backward()`` against torch's)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jflow as flow
import jflow.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _j(t, requires_grad=False):
    x = flow.tensor(t.detach().numpy())
    return x.requires_grad_() if requires_grad else x


def _close(a, b, tol=1e-5):
    a = a.detach().numpy() if isinstance(a, flow.Tensor) else a
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else b
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _grads(jfn, tfn, *tensors, tol=1e-9):
    """Value and input gradients (float64) of jflow's ``jfn`` vs torch's ``tfn``."""
    ts = [t.double().requires_grad_() if t.is_floating_point() else t for t in tensors]
    js = [_j(t, t.requires_grad) for t in ts]
    yt, yj = tfn(*ts), jfn(*js)
    _close(yj, yt, tol)
    g = torch.randn_like(yt)
    yt.backward(g)
    yj.backward(_j(g))
    for a, b in zip(js, ts):
        if b.requires_grad:
            _close(a.grad, b.grad, tol)


# -- max_unpool ------------------------------------------------------------------------------

@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_values_and_grad(nd):
    torch.manual_seed(nd)
    x = torch.randn(2, 3, *([6] * nd), dtype=torch.float64)
    y, idx = getattr(TF, f"max_pool{nd}d")(x, 2, return_indices=True)
    out_size = [7] * nd
    tf = getattr(TF, f"max_unpool{nd}d")
    jf = getattr(F, f"max_unpool{nd}d")
    _close(jf(_j(y.float()), _j(idx), 2), tf(y.float(), idx, 2))
    _grads(lambda a: jf(a, _j(idx), 2, output_size=out_size),
           lambda a: tf(a, idx, 2, output_size=out_size), y)
    m = getattr(flow.nn, f"MaxUnpool{nd}d")(2)
    _close(m(_j(y), _j(idx)), getattr(torch.nn, f"MaxUnpool{nd}d")(2)(y, idx))


def test_max_unpool_unbatched_and_errors():
    x = torch.randn(3, 4, 4)
    y, idx = TF.max_pool2d(x, 2, return_indices=True)
    _close(F.max_unpool2d(_j(y), _j(idx), 2, output_size=[5, 5]),
           TF.max_unpool2d(y, idx, 2, output_size=[5, 5]))
    with pytest.raises(RuntimeError, match="invalid max index"):
        F.max_unpool2d(_j(y), _j(idx + 100), 2)
    with pytest.raises(TypeError, match="int64"):
        F.max_unpool2d(_j(y), _j(idx.int()), 2)
    with pytest.raises(ValueError, match="output_size"):
        F.max_unpool2d(_j(y), _j(idx), 2, output_size=[9, 9])


# -- pdist -----------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, float("inf"), 3.0])
def test_pdist(p):
    torch.manual_seed(0)
    x = torch.randn(5, 4)
    _close(F.pdist(_j(x), p), TF.pdist(x, p))
    _close(flow.pdist(_j(x), p), torch.pdist(x, p))
    if p not in (0.0,):
        _grads(lambda a: F.pdist(a, p), lambda a: TF.pdist(a, p), x)


def test_pdist_edge_and_errors():
    # (host data, not flow.randn: a random draw compiles a program per shape)
    assert tuple(F.pdist(_j(torch.randn(1, 3))).shape) == (0,)
    with pytest.raises(ValueError, match="2D"):
        F.pdist(_j(torch.randn(2, 3, 4)))
    with pytest.raises(ValueError, match="non-negative"):
        F.pdist(_j(torch.randn(3, 4)), -1.0)


# -- multilabel_margin_loss ------------------------------------------------------------------

def test_multilabel_margin_loss():
    torch.manual_seed(1)
    x = torch.randn(4, 5)
    t = torch.tensor([[1, 3, -1, 0, 0], [4, -1, 2, 2, 2], [0, 1, 2, 3, 4], [2, 2, -1, 4, 1]])
    for r in ("none", "mean", "sum"):
        _close(F.multilabel_margin_loss(_j(x), _j(t), reduction=r),
               TF.multilabel_margin_loss(x, t, reduction=r))
    _grads(lambda a: F.multilabel_margin_loss(a, _j(t), reduction="none"),
           lambda a: TF.multilabel_margin_loss(a, t, reduction="none"), x)
    _close(F.multilabel_margin_loss(_j(x[0]), _j(t[0]), reduction="none"),
           TF.multilabel_margin_loss(x[0], t[0], reduction="none"))
    _close(F.multilabel_margin_loss(_j(x[0, 0]), _j(t[0, 4])),
           TF.multilabel_margin_loss(x[0, 0], t[0, 4]))
    _close(flow.nn.MultiLabelMarginLoss(reduction="sum")(_j(x), _j(t)),
           torch.nn.MultiLabelMarginLoss(reduction="sum")(x, t))
    with pytest.raises(RuntimeError, match="out of range"):
        F.multilabel_margin_loss(_j(x), _j(t + 5))
    with pytest.raises(ValueError, match="inconsistent target size"):
        F.multilabel_margin_loss(_j(x), _j(t[:, :3]))


# -- triplet_margin_with_distance_loss -------------------------------------------------------

def test_triplet_margin_with_distance_loss():
    torch.manual_seed(2)
    a, p, n = (torch.randn(6, 4) for _ in range(3))
    _close(F.triplet_margin_with_distance_loss(_j(a), _j(p), _j(n)),
           TF.triplet_margin_with_distance_loss(a, p, n))

    def jdist(u, v):
        return 1.0 - F.cosine_similarity(u, v)

    def tdist(u, v):
        return 1.0 - TF.cosine_similarity(u, v)

    for swap in (False, True):
        _close(F.triplet_margin_with_distance_loss(_j(a), _j(p), _j(n), distance_function=jdist,
                                                   margin=0.5, swap=swap, reduction="none"),
               TF.triplet_margin_with_distance_loss(a, p, n, distance_function=tdist,
                                                    margin=0.5, swap=swap, reduction="none"))
    _grads(lambda u, v, w: F.triplet_margin_with_distance_loss(u, v, w, swap=True,
                                                               reduction="sum"),
           lambda u, v, w: TF.triplet_margin_with_distance_loss(u, v, w, swap=True,
                                                                reduction="sum"), a, p, n)
    m = flow.nn.TripletMarginWithDistanceLoss(distance_function=flow.nn.PairwiseDistance(),
                                              margin=2.0)
    tm = torch.nn.TripletMarginWithDistanceLoss(distance_function=torch.nn.PairwiseDistance(),
                                                margin=2.0)
    _close(m(_j(a), _j(p), _j(n)), tm(a, p, n))
    with pytest.raises(ValueError, match="margin"):
        F.triplet_margin_with_distance_loss(_j(a), _j(p), _j(n), margin=0.0)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        F.triplet_margin_with_distance_loss(_j(a), _j(p), _j(n[0]))


# -- fractional_max_pool ---------------------------------------------------------------------

@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_given_samples_exact(nd):
    torch.manual_seed(3 + nd)
    sizes = (9, 8, 7)[:nd] if nd == 3 else (9, 7)
    x = torch.randn(2, 3, *sizes)
    s = torch.rand(2, 3, nd)
    out = (4, 3, 3)[:nd]
    tf, jf = getattr(TF, f"fractional_max_pool{nd}d"), getattr(F, f"fractional_max_pool{nd}d")
    yt, it = tf(x, 2, output_size=out, return_indices=True, _random_samples=s)
    yj, ij = jf(_j(x), 2, output_size=out, return_indices=True, _random_samples=_j(s))
    np.testing.assert_array_equal(yj.numpy(), yt.numpy())
    np.testing.assert_array_equal(ij.numpy(), it.numpy())
    if nd == 2:   # output_ratio: (9, 7) * 0.5 -> (4, 3), the same windows
        yt = tf(x, 2, output_ratio=(0.5, 0.5), _random_samples=s)
        yj = jf(_j(x), 2, output_ratio=(0.5, 0.5), _random_samples=_j(s))
        np.testing.assert_array_equal(yj.numpy(), yt.numpy())
    if nd == 3:   # unbatched module; no float64 gradient check (the 2-d one covers the code)
        m = flow.nn.FractionalMaxPool3d(2, output_size=out, _random_samples=_j(s[:1]))
        tm = torch.nn.FractionalMaxPool3d(2, output_size=out, _random_samples=s[:1])
        np.testing.assert_array_equal(m(_j(x[0])).numpy(), tm(x[0]).numpy())
        return
    sd = s.double()
    _grads(lambda a: jf(a, 2, output_size=out, _random_samples=_j(sd)),
           lambda a: tf(a, 2, output_size=out, _random_samples=sd), x)


def test_fractional_max_pool_random_and_errors():
    x = _j(torch.randn(2, 3, 9, 7))  # host data: the random draws tested are the samples'
    flow.manual_seed(7)
    a = flow.nn.FractionalMaxPool2d(2, output_size=(4, 3))(x)
    flow.manual_seed(7)
    b = F.fractional_max_pool2d(x, 2, output_size=(4, 3))
    assert tuple(a.shape) == (2, 3, 4, 3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    with pytest.raises(ValueError, match="output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(ValueError, match="too large"):
        F.fractional_max_pool2d(x, 4, output_size=7)
    with pytest.raises(ValueError, match="_random_samples"):
        F.fractional_max_pool2d(x, 2, output_size=4, _random_samples=flow.full((1, 3, 2), 0.5))
    with pytest.raises(ValueError, match="between 0 and 1"):
        flow.nn.FractionalMaxPool2d(2, output_ratio=1.5)


# -- multi_head_attention_forward ------------------------------------------------------------

def _mha_args(e=8, with_bias_kv=False):
    g = torch.Generator().manual_seed(5)
    w = [torch.randn(3 * e, e, generator=g) * 0.3, torch.randn(3 * e, generator=g) * 0.1]
    bk = [torch.randn(1, 1, e, generator=g), torch.randn(1, 1, e, generator=g)] \
        if with_bias_kv else [None, None]
    ow = [torch.randn(e, e, generator=g) * 0.3, torch.randn(e, generator=g) * 0.1]
    return w, bk, ow


@pytest.mark.parametrize("bias_kv,zero_attn", [(False, False), (True, True)])
def test_multi_head_attention_forward(bias_kv, zero_attn):
    torch.manual_seed(6)
    e, h, n, nl, ns = 8, 2, 3, 4, 5
    (w, b), (bk, bv), (ow, ob) = _mha_args(e, bias_kv)
    q, k, v = torch.randn(nl, n, e), torch.randn(ns, n, e), torch.randn(ns, n, e)
    kpm = torch.zeros(n, ns, dtype=torch.bool)
    kpm[1, -2:] = True
    am = torch.randn(nl, ns)
    J = _j

    def jcall(*a, **kw):
        return F.multi_head_attention_forward(
            a[0], a[1], a[2], e, h, J(w), J(b), None if bk is None else J(bk),
            None if bv is None else J(bv), zero_attn, 0.0, J(ow), J(ob), **kw)

    def tcall(*a, **kw):
        return TF.multi_head_attention_forward(a[0], a[1], a[2], e, h, w, b, bk, bv, zero_attn,
                                               0.0, ow, ob, **kw)

    for kw in ({}, {"key_padding_mask": kpm, "attn_mask": am},
               {"need_weights": False, "attn_mask": am < 0},
               {"average_attn_weights": False, "key_padding_mask": kpm}):
        jkw = {key: J(val) if isinstance(val, torch.Tensor) else val for key, val in kw.items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ot, wt = tcall(q, k, v, **kw)
        oj, wj = jcall(J(q), J(k), J(v), **jkw)
        _close(oj, ot, 1e-4)
        assert (wj is None) == (wt is None)
        if wt is not None:
            _close(wj, wt, 1e-5)
    oj, wj = jcall(J(q[:, 0]), J(k[:, 0]), J(v[:, 0]))                 # unbatched
    ot, wt = tcall(q[:, 0], k[:, 0], v[:, 0])
    _close(oj, ot, 1e-4)
    _close(wj, wt, 1e-5)


def test_multi_head_attention_forward_grad_static_and_separate():
    torch.manual_seed(8)
    e, h, n, nl, ns = 4, 2, 2, 3, 3
    (w, b), _, (ow, ob) = _mha_args(e)
    w, b, ow, ob = (t.double() for t in (w, b, ow, ob))
    q, k = torch.randn(nl, n, e), torch.randn(ns, n, e)

    def jf(a, c):
        return F.multi_head_attention_forward(a, c, c, e, h, _j(w), _j(b), None, None, False,
                                              0.0, _j(ow), _j(ob))[0]

    def tf(a, c):
        return TF.multi_head_attention_forward(a, c, c, e, h, w, b, None, None, False, 0.0,
                                               ow, ob)[0]

    _grads(jf, tf, q, k)
    sk, sv = torch.randn(n * h, 6, e // h), torch.randn(n * h, 6, e // h)
    wq, wk, wv = (torch.randn(e, e) for _ in range(3))
    ot, wt = TF.multi_head_attention_forward(
        q.float(), k.float(), k.float(), e, h, None, b.float(), None, None, False, 0.0,
        ow.float(), ob.float(), use_separate_proj_weight=True, q_proj_weight=wq,
        k_proj_weight=wk, v_proj_weight=wv, static_k=sk, static_v=sv)
    oj, wj = F.multi_head_attention_forward(
        _j(q), _j(k), _j(k), e, h, None, _j(b.float()), None, None, False, 0.0,
        _j(ow.float()), _j(ob.float()), use_separate_proj_weight=True, q_proj_weight=_j(wq),
        k_proj_weight=_j(wk), v_proj_weight=_j(wv), static_k=_j(sk), static_v=_j(sv))
    _close(oj, ot, 1e-4)
    _close(wj, wt, 1e-5)
    with pytest.raises(RuntimeError, match="embedding dimension"):
        F.multi_head_attention_forward(_j(q), _j(k), _j(k), e + 1, h, _j(w), _j(b), None,
                                       None, False, 0.0, _j(ow), _j(ob))


def test_multihead_attention_module_bias_kv_zero_attn():
    torch.manual_seed(9)
    tm = torch.nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True,
                                     batch_first=True)
    # built on the meta device, torch's values assigned: jflow's random initialisation (a
    # compiled draw per parameter shape) would be overwritten
    jm = flow.nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True,
                                    batch_first=True, device="meta")
    jm.load_state_dict({k: _j(v) for k, v in tm.state_dict().items()}, assign=True)
    x = torch.randn(2, 4, 8)
    ot, wt = tm(x, x, x)
    oj, wj = jm(_j(x), _j(x), _j(x))
    _close(oj, ot, 1e-4)
    _close(wj, wt, 1e-5)


# -- regressions -----------------------------------------------------------------------------

def test_corrcoef_cov_one_variable_is_0d():
    x = torch.randn(1, 5)
    assert tuple(flow.corrcoef(_j(x)).shape) == ()
    _close(flow.corrcoef(_j(x)), torch.corrcoef(x))
    _close(flow.cov(_j(x)), torch.cov(x))
    aw = torch.rand(5)
    _close(flow.cov(_j(x), correction=0, aweights=_j(aw)), torch.cov(x, correction=0,
                                                                  aweights=aw))
    with pytest.warns(UserWarning, match="degrees of freedom"):
        c = flow.cov(_j(torch.randn(2, 1)))
    assert np.isnan(c.numpy()).all()


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_softmax_implicit_dim(ndim):
    x = torch.randn(*([3] * ndim))
    for name in ("softmax", "log_softmax", "softmin"):
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            yj = getattr(F, name)(_j(x))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yt = getattr(TF, name)(x)
        _close(yj, yt)
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        yj = flow.nn.Softmax()(_j(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(yj, torch.nn.Softmax()(x))
    _close(F.softmax(_j(x), 0, 3, flow.float64), TF.softmax(x, 0, 3, torch.float64))


@pytest.mark.parametrize("mode,kw", [("trilinear", {"align_corners": False}),
                                     ("trilinear", {"align_corners": True}),
                                     ("nearest", {}), ("nearest-exact", {}), ("area", {})])
def test_interpolate_5d(mode, kw):
    torch.manual_seed(10)
    x = torch.randn(2, 2, 3, 4, 5)
    for size in ((5, 3, 7), None):
        sk = {"size": size} if size else {"scale_factor": (1.5, 2.0, 0.6)}
        _close(F.interpolate(_j(x), mode=mode, **sk, **kw),
               TF.interpolate(x, mode=mode, **sk, **kw))
    _grads(lambda a: F.interpolate(a, size=(5, 3, 7), mode=mode, **kw),
           lambda a: TF.interpolate(a, size=(5, 3, 7), mode=mode, **kw), x)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_negative_non_constant(mode):
    torch.manual_seed(11)
    x = torch.randn(2, 3, 5, 6)
    for pad in ((-1, 2, 3, -2), (2, -3, -1, 0), (-2, -1, 0, 0)):
        _close(F.pad(_j(x), pad, mode=mode), TF.pad(x, pad, mode=mode))
    _grads(lambda a: F.pad(a, (-1, 2, 3, -2), mode=mode),
           lambda a: TF.pad(a, (-1, 2, 3, -2), mode=mode), x)
    if mode == "circular":   # a wrap beyond the cropped size: the periodic extension
        _close(F.pad(_j(x), (-4, 5, 0, 0), mode=mode), TF.pad(x, (-4, 5, 0, 0), mode=mode))
        with pytest.raises(ValueError, match="wrapping around"):
            F.pad(_j(x), (-1, 7, 0, 0), mode=mode)


def test_multi_margin_loss_0d_and_batch_norm_empty():
    x, t = torch.tensor(0.7, requires_grad=True), torch.tensor(0)
    xj = _j(x, True)
    lj = F.multi_margin_loss(xj, flow.tensor(0))
    lt = TF.multi_margin_loss(x, t)
    _close(lj, lt)
    lj.backward()
    lt.backward()
    _close(xj.grad, x.grad)
    e = torch.randn(0)
    for training in (True, False):
        _close(F.batch_norm(_j(e), _j(e), _j(e), training=training),
               TF.batch_norm(e, e, e, training=training))


# -- PyTorch's OpInfo samples --------------------------------------------------------------

# The first two float32 samples of every OpInfo variant of these functions (pdist,
# multilabel_margin_loss, triplet_margin_with_distance_loss, multi_head_attention_forward,
# interpolate, pad, softmin, batch_norm, multi_margin_loss, corrcoef, cov), and a float64
# gradient sample, are compared with PyTorch by tests/test_opinfo.py.
