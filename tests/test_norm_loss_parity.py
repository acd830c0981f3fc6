"""instance_norm, local_response_norm, ctc_loss, embedding (max_norm), embedding_bag,
scaled_dot_product_attention(enable_gqa=True), bilinear against PyTorch on random inputs
(forward and gradients); the random dropout variants by their statistics; error messages."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow
import jflow.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

_rng = np.random.default_rng(2024)


def _pair(*shape, dtype=np.float64, scale=1.0, shift=0.0):
    """The same random values as a jflow and a torch leaf requiring grad."""
    a = (_rng.standard_normal(shape) * scale + shift).astype(dtype)
    return flow.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _close(a, b, rtol=1e-6, atol=1e-8):
    a = a.detach().numpy() if hasattr(a, "numpy") and not isinstance(a, torch.Tensor) else a
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else b
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def _backward(out_f, out_t):
    g = _rng.standard_normal(tuple(out_t.shape))
    out_f.backward(flow.tensor(g.astype(np.float64)))
    out_t.backward(torch.tensor(g))


# -- instance_norm --------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,affine,stats", [((2, 3, 5), True, True), ((3, 2, 4, 3), False,
                                                                          True),
                                                ((2, 4, 2, 2, 3), True, False)])
def test_instance_norm_matches_torch(shape, affine, stats):
    c = shape[1]
    xf, xt = _pair(*shape, scale=2.0, shift=0.5)
    wf, wt = _pair(c) if affine else (None, None)
    bf, bt = _pair(c) if affine else (None, None)
    rm = _rng.standard_normal(c)
    rv = _rng.uniform(0.5, 2.0, c)
    rmf, rvf = flow.tensor(rm), flow.tensor(rv)
    rmt, rvt = torch.tensor(rm), torch.tensor(rv)
    yf = F.instance_norm(xf, rmf, rvf, wf, bf, use_input_stats=stats, momentum=0.3, eps=1e-3)
    yt = TF.instance_norm(xt, rmt, rvt, wt, bt, use_input_stats=stats, momentum=0.3, eps=1e-3)
    _close(yf, yt)
    _close(rmf, rmt)
    _close(rvf, rvt)
    _backward(yf, yt)
    _close(xf.grad, xt.grad)
    if affine:
        _close(wf.grad, wt.grad)
        _close(bf.grad, bt.grad)


@pytest.mark.parametrize("dtype, tol", [("bfloat16", 4e-3), ("float16", 2.5e-4)])
@pytest.mark.parametrize("kind", ["batch_norm", "group_norm", "instance_norm"])
def test_half_precision_norm_gradients_as_pytorch(kind, dtype, tol):
    """Batch, group and instance norm in bfloat16 / float16 on random inputs: the input's
    gradient within about an ulp of PyTorch's (relative to its largest value), which computes
    it in float32 — as jflow's rules do for half-precision inputs (computed in the input's
    dtype, bfloat16 batch norm was 6.8e-3 off and float16 instance norm 8.8e-4)."""
    rng = np.random.default_rng(5)
    x0 = (rng.standard_normal((4, 6, 5, 3)) * 2 + 0.5).astype(np.float32)
    w0, b0 = rng.standard_normal(6).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    cy = rng.standard_normal(x0.shape).astype(np.float32)
    grads = []
    for lib in (flow, torch):
        dt = getattr(lib, dtype)
        x, w, b = (lib.tensor(a).to(dt).requires_grad_(True) for a in (x0, w0, b0))
        fn = lib.nn.functional
        if kind == "batch_norm":
            y = fn.batch_norm(x, None, None, w, b, training=True)
        elif kind == "group_norm":
            y = fn.group_norm(x, 3, w, b)
        else:
            y = fn.instance_norm(x, weight=w, bias=b)
        (y * lib.tensor(cy).to(dt)).sum().backward()
        assert all(t.grad.dtype == dt for t in (x, w, b))  # (the inputs' dtype)
        grads.append(x.grad.detach().to(lib.float32).numpy())
    got, want = grads
    assert np.abs(got - want).max() <= tol * np.abs(want).max()


def test_instance_norm_modules():
    for cls_f, cls_t, shape in ((flow.nn.InstanceNorm1d, torch.nn.InstanceNorm1d, (3, 5)),
                                (flow.nn.InstanceNorm2d, torch.nn.InstanceNorm2d, (2, 3, 4, 4)),
                                (flow.nn.InstanceNorm3d, torch.nn.InstanceNorm3d,
                                 (1, 3, 2, 3, 2))):
        mf = cls_f(3, affine=True, track_running_stats=True, momentum=0.2, dtype=flow.float64)
        mt = cls_t(3, affine=True, track_running_stats=True, momentum=0.2).double()
        assert not cls_f(3).affine and not cls_f(3).track_running_stats
        x = _rng.standard_normal(shape)
        _close(mf(flow.tensor(x)), mt(torch.tensor(x)))
        _close(mf.running_var, mt.running_var)
        mf.eval()
        mt.eval()
        _close(mf(flow.tensor(x)), mt(torch.tensor(x)))   # running statistics
    with pytest.raises(ValueError, match="InstanceNorm2d: expected 3D .* or 4D input"):
        flow.nn.InstanceNorm2d(3)(flow.zeros(2, 3))
    with pytest.raises(ValueError, match="instance_norm.*more than 1 spatial element"):
        F.instance_norm(flow.zeros(2, 3, 1))
    with pytest.raises(RuntimeError, match="instance_norm.*weight should contain 3"):
        F.instance_norm(flow.zeros(2, 3, 4), weight=flow.ones(4))


# -- local_response_norm --------------------------------------------------------------------------

@pytest.mark.parametrize("shape,size,k", [((2, 5, 4), 3, 1.0), ((1, 6, 3, 2), 4, 2.0),
                                          ((2, 3, 2, 2, 2), 7, 0.5)])
def test_local_response_norm_matches_torch(shape, size, k):
    xf, xt = _pair(*shape)
    yf = F.local_response_norm(xf, size, alpha=0.3, beta=0.6, k=k)
    yt = TF.local_response_norm(xt, size, alpha=0.3, beta=0.6, k=k)
    _close(yf, yt)
    _backward(yf, yt)
    _close(xf.grad, xt.grad)
    m = flow.nn.LocalResponseNorm(size, alpha=0.3, beta=0.6, k=k)
    _close(m(xf), yt)
    with pytest.raises(ValueError, match="local_response_norm.*at least 3 dims"):
        F.local_response_norm(flow.zeros(2, 3), 2)


# -- ctc_loss -------------------------------------------------------------------------------------

def _ctc_case(t, n, c, s, blank=0, blank_boost=0.0, min_target=1):
    logits = _rng.standard_normal((t, n, c))
    logits[:, :, blank] += blank_boost
    labels = [i for i in range(c) if i != blank]
    tl = _rng.integers(min_target, s + 1, n)
    il = np.array([_rng.integers(max(1, 2 * int(k) + 1), t + 1) for k in tl])
    tg = _rng.choice(labels, (n, s))
    return logits, tg, il, tl


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("case", [dict(t=12, n=3, c=5, s=4), dict(t=10, n=4, c=4, s=3, blank=2,
                                                                  blank_boost=3.0, min_target=0)])
def test_ctc_loss_matches_torch(reduction, case):
    """Random lengths (blank-heavy inputs and empty targets included); gradients through
    log_softmax of leaf logits, as CTC is used."""
    logits, tg, il, tl = _ctc_case(**case)
    blank = case.get("blank", 0)
    lf = flow.tensor(logits, requires_grad=True)
    lt = torch.tensor(logits, requires_grad=True)
    out_f = F.ctc_loss(F.log_softmax(lf, dim=2), flow.tensor(tg), flow.tensor(il),
                       flow.tensor(tl), blank=blank, reduction=reduction)
    out_t = TF.ctc_loss(TF.log_softmax(lt, dim=2), torch.tensor(tg), torch.tensor(il),
                        torch.tensor(tl), blank=blank, reduction=reduction)
    _close(out_f, out_t, rtol=1e-9)
    _backward(out_f, out_t)
    _close(lf.grad, lt.grad, atol=1e-9)


def test_ctc_loss_concatenated_targets_lists_and_module():
    logits, tg, il, tl = _ctc_case(t=9, n=3, c=6, s=3)
    cat = np.concatenate([tg[i, :tl[i]] for i in range(3)])
    lp = torch.tensor(logits).log_softmax(2)
    ref = TF.ctc_loss(lp, torch.tensor(cat), tuple(il.tolist()), tuple(tl.tolist()))
    lpf = flow.tensor(lp.numpy())
    _close(F.ctc_loss(lpf, flow.tensor(cat), flow.tensor(il), flow.tensor(tl)), ref, rtol=1e-9)
    _close(flow.ctc_loss(lpf, flow.tensor(cat), tuple(il.tolist()), tuple(tl.tolist())), ref,
           rtol=1e-9)
    _close(flow.nn.CTCLoss(reduction="sum")(lpf, flow.tensor(tg), flow.tensor(il),
                                             flow.tensor(tl)),
           TF.ctc_loss(lp, torch.tensor(tg), torch.tensor(il), torch.tensor(tl),
                       reduction="sum"), rtol=1e-9)
    # unbatched: the target cut to its length (PyTorch reads a 1-d target with tuple lengths
    # as concatenated targets, so padding would make its call fail whenever tl[0] < s)
    t0 = tg[0, :tl[0]]
    _close(F.ctc_loss(lpf[:, 0], flow.tensor(t0), (int(il[0]),), (int(tl[0]),),
                      reduction="none"),
           TF.ctc_loss(lp[:, 0], torch.tensor(t0), (int(il[0]),), (int(tl[0]),),
                       reduction="none"), rtol=1e-9)


def test_ctc_loss_zero_infinity_and_infeasible():
    """A target longer than its input has no alignment: +inf, or 0 (and a zero gradient)
    with zero_infinity; the feasible samples keep torch's values and gradients."""
    logits = _rng.standard_normal((4, 3, 4))
    tg = np.array([[1, 2, 3, 1], [1, 1, 2, 2], [2, 3, 0, 0]])
    il, tl = np.array([4, 4, 3]), np.array([4, 2, 1])   # sample 0 needs 4 steps... and fits;
    tl[0], il[0] = 4, 3                                   # now it does not
    for zi in (False, True):
        lf = flow.tensor(logits, requires_grad=True)
        lt = torch.tensor(logits, requires_grad=True)
        of = F.ctc_loss(F.log_softmax(lf, dim=2), flow.tensor(tg), flow.tensor(il),
                        flow.tensor(tl), reduction="none", zero_infinity=zi)
        ot = TF.ctc_loss(TF.log_softmax(lt, dim=2), torch.tensor(tg), torch.tensor(il),
                         torch.tensor(tl), reduction="none", zero_infinity=zi)
        _close(of, ot, rtol=1e-9)
        assert np.isinf(of.detach().numpy()[0]) != zi
        if zi:
            of.sum().backward()
            ot.sum().backward()
            _close(lf.grad, lt.grad, atol=1e-9)
            assert np.all(lf.grad.numpy()[:, 0] == 0)


def test_ctc_loss_gradient_in_log_probs_is_the_derivative():
    """jflow's gradient in log_probs is the derivative of the loss; PyTorch's adds
    exp(log_probs) on the steps inside input_lengths (its backward assumes log_softmax
    outputs). Through log_softmax both agree (tested above); here the difference is pinned."""
    logits, tg, il, tl = _ctc_case(t=7, n=2, c=4, s=2)
    lp = torch.tensor(logits).log_softmax(2)
    lpf = flow.tensor(lp.numpy(), requires_grad=True)
    lpt = lp.clone().requires_grad_()
    F.ctc_loss(lpf, flow.tensor(tg), flow.tensor(il), flow.tensor(tl), reduction="sum").backward()
    TF.ctc_loss(lpt, torch.tensor(tg), torch.tensor(il), torch.tensor(tl),
                reduction="sum").backward()
    valid = (np.arange(7)[:, None] < il[None, :])[..., None]
    _close(lpf.grad, lpt.grad.numpy() - np.exp(lp.numpy()) * valid, atol=1e-9)
    # and it is the derivative: a finite difference in one entry
    h, idx = 1e-6, (2, 1, 3)
    up, dn = lp.numpy().copy(), lp.numpy().copy()
    up[idx] += h
    dn[idx] -= h

    def loss(a):
        return F.ctc_loss(flow.tensor(a), flow.tensor(tg), flow.tensor(il), flow.tensor(tl),
                          reduction="sum").item()
    assert abs((loss(up) - loss(dn)) / (2 * h) - lpf.grad.numpy()[idx]) < 1e-6


def test_ctc_loss_errors():
    lp = flow.zeros(5, 2, 4)
    tg, il, tl = flow.tensor([[1, 2], [1, 1]]), flow.tensor([5, 5]), flow.tensor([2, 2])
    with pytest.raises(ValueError, match="ctc_loss.*reduction"):
        F.ctc_loss(lp, tg, il, tl, reduction="avg")
    with pytest.raises(ValueError, match="ctc_loss.*input_lengths must be in \\[0, 5\\]"):
        F.ctc_loss(lp, tg, flow.tensor([6, 5]), tl)
    with pytest.raises(ValueError, match="ctc_loss.*target_lengths must not exceed"):
        F.ctc_loss(lp, tg, il, flow.tensor([3, 1]))
    with pytest.raises(ValueError, match="ctc_loss.*blank must be in \\[0, 4\\)"):
        F.ctc_loss(lp, tg, il, tl, blank=4)
    with pytest.raises(ValueError, match="ctc_loss.*input_lengths must have one entry"):
        F.ctc_loss(lp, tg, flow.tensor([5]), tl)
    with pytest.raises(TypeError, match="ctc_loss.*targets must be integers"):
        F.ctc_loss(lp, tg.float(), il, tl)
    with pytest.raises(ValueError, match="ctc_loss.*sum\\(target_lengths\\)"):
        F.ctc_loss(lp, flow.tensor([1, 2, 3]), il, tl)


# -- embedding max_norm, embedding_bag ------------------------------------------------------------

@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalises_in_place(norm_type):
    w = _rng.standard_normal((6, 4)) * 2
    wf, wt = flow.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    idx = np.array([[0, 2, 2], [5, 0, 1]])
    yf = F.embedding(flow.tensor(idx), wf, max_norm=1.5, norm_type=norm_type)
    yt = TF.embedding(torch.tensor(idx), wt, max_norm=1.5, norm_type=norm_type)
    _close(yf, yt)
    _close(wf, wt)            # rows 0, 1, 2, 5 renormalised; 3, 4 untouched
    _backward(yf, yt)
    _close(wf.grad, wt.grad)
    m = flow.nn.Embedding(6, 4, max_norm=1.0)
    m(flow.tensor([1, 3]))
    norms = np.linalg.norm(m.weight.detach().numpy(), axis=1)
    assert np.all(norms[[1, 3]] <= 1.0 + 1e-6)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_matches_torch(mode):
    w = _rng.standard_normal((10, 3))
    # 1-d input with offsets (an empty bag included), padding_idx, include_last_offset
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0])
    offsets = np.array([0, 2, 2, 6])
    for last, pad in ((False, None), (True, 4)):
        wf, wt = flow.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
        offs = np.append(offsets, len(idx)) if last else offsets
        psw = _rng.uniform(0.5, 1.5, len(idx)) if mode == "sum" else None
        yf = F.embedding_bag(flow.tensor(idx), wf, flow.tensor(offs), mode=mode,
                             include_last_offset=last, padding_idx=pad,
                             per_sample_weights=None if psw is None else flow.tensor(psw))
        yt = TF.embedding_bag(torch.tensor(idx), wt, torch.tensor(offs), mode=mode,
                              include_last_offset=last, padding_idx=pad,
                              per_sample_weights=None if psw is None else torch.tensor(psw))
        _close(yf, yt)
        _backward(yf, yt)
        _close(wf.grad, wt.grad)
    # 2-d input: one bag per row
    idx2 = _rng.integers(0, 10, (4, 3))
    wf, wt = flow.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    yf = flow.embedding_bag(flow.tensor(idx2), wf, mode=mode, padding_idx=0)
    yt = TF.embedding_bag(torch.tensor(idx2), wt, mode=mode, padding_idx=0)
    _close(yf, yt)
    _backward(yf, yt)
    _close(wf.grad, wt.grad)


def test_embedding_bag_module_and_errors():
    m = flow.nn.EmbeddingBag(7, 2, mode="sum")
    mt = torch.nn.EmbeddingBag(7, 2, mode="sum").double()
    with torch.no_grad():
        mt.weight.copy_(torch.tensor(m.weight.detach().numpy()))
    idx, offs = np.array([1, 6, 0, 2]), np.array([0, 3])
    _close(m(flow.tensor(idx), flow.tensor(offs)).double(), mt(torch.tensor(idx),
                                                            torch.tensor(offs)), rtol=1e-6)
    w = flow.zeros(5, 2)
    with pytest.raises(NotImplementedError, match="embedding_bag.*per_sample_weights.*'sum'"):
        F.embedding_bag(flow.tensor([1, 2]), w, flow.tensor([0]), mode="mean",
                        per_sample_weights=flow.ones(2))
    with pytest.raises(ValueError, match="embedding_bag.*offsets has to be None"):
        F.embedding_bag(flow.tensor([[1, 2]]), w, flow.tensor([0]))
    with pytest.raises(ValueError, match="embedding_bag.*offsets\\[0\\] has to be 0"):
        F.embedding_bag(flow.tensor([1, 2]), w, flow.tensor([1]))
    with pytest.raises(ValueError, match="embedding_bag.*mode has to be one of"):
        F.embedding_bag(flow.tensor([[1, 2]]), w, mode="min")
    with pytest.raises(IndexError, match="embedding_bag.*index 5 is out of bounds"):
        F.embedding_bag(flow.tensor([[1, 5]]), w)


# -- scaled_dot_product_attention(enable_gqa=True) ------------------------------------------------

@pytest.mark.parametrize("hq,hk,causal", [(4, 2, False), (6, 1, True), (3, 3, False)])
def test_sdpa_enable_gqa_matches_torch(hq, hk, causal):
    qf, qt = _pair(2, hq, 5, 4)
    kf, kt = _pair(2, hk, 6, 4)
    vf, vt = _pair(2, hk, 6, 3)
    of = F.scaled_dot_product_attention(qf, kf, vf, is_causal=causal, enable_gqa=True)
    ot = TF.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, enable_gqa=True)
    _close(of, ot)
    _backward(of, ot)
    for a, b in ((qf, qt), (kf, kt), (vf, vt)):
        _close(a.grad, b.grad)
    with pytest.raises(ValueError, match="scaled_dot_product_attention.*enable_gqa.*multiple"):
        F.scaled_dot_product_attention(flow.zeros(1, 3, 2, 4), flow.zeros(1, 2, 2, 4),
                                       flow.zeros(1, 2, 2, 4), enable_gqa=True)


# -- bilinear -------------------------------------------------------------------------------------

@pytest.mark.parametrize("lead,bias", [((4,), True), ((2, 3), False), ((), True)])
def test_bilinear_matches_torch(lead, bias):
    x1f, x1t = _pair(*lead, 3)
    x2f, x2t = _pair(*lead, 5)
    wf, wt = _pair(2, 3, 5)
    bf, bt = _pair(2) if bias else (None, None)
    yf, yt = F.bilinear(x1f, x2f, wf, bf), TF.bilinear(x1t, x2t, wt, bt)
    _close(yf, yt)
    _backward(yf, yt)
    for a, b in ((x1f, x1t), (x2f, x2t), (wf, wt)) + (((bf, bt),) if bias else ()):
        _close(a.grad, b.grad)
    m = flow.nn.Bilinear(3, 5, 2)
    assert tuple(m(x1f.float(), x2f.float()).shape) == lead + (2,)
    with pytest.raises(ValueError, match="bilinear.*must match weight's dims"):
        F.bilinear(flow.zeros(2, 4), flow.zeros(2, 5), flow.zeros(2, 3, 5))


# -- dropout variants (random: statistics) --------------------------------------------------------

def test_channel_dropout_zeroes_whole_channels():
    flow.manual_seed(0)
    for fn, shape, nd in ((F.dropout1d, (8, 16, 5), 1), (F.dropout2d, (8, 16, 3, 4), 2),
                          (F.dropout3d, (4, 16, 2, 2, 3), 3), (F.dropout1d, (16, 5), 1)):
        x = flow.ones(*shape)
        y = fn(x, p=0.4).numpy()
        per_channel = y.reshape(int(np.prod(shape[:-nd])), -1)
        assert np.all((per_channel == 0).all(1) | np.isclose(per_channel, 1 / 0.6).all(1))
        frac = (per_channel == 0).all(1).mean()
        assert 0.15 < frac < 0.65
        assert np.array_equal(fn(x, p=0.4, training=False).numpy(), x.numpy())
    x = flow.tensor(_rng.standard_normal((4, 6, 3)), requires_grad=True)
    y = F.dropout1d(x, p=0.5)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (y.detach().numpy() != 0) * 2.0)
    m = flow.nn.Dropout2d(0.5)
    m.eval()
    assert m(x) is x
    with pytest.raises(RuntimeError, match="dropout3d.*Expected 4D .* or 5D input"):
        F.dropout3d(flow.zeros(2, 3, 4), 0.5)
    with pytest.raises(ValueError, match="dropout1d.*between 0 and 1"):
        F.dropout1d(flow.zeros(2, 3), 1.5)


def test_alpha_dropout_keeps_mean_and_variance():
    flow.manual_seed(1)
    x = flow.tensor(_rng.standard_normal((200, 500)))
    for p in (0.2, 0.5):
        y = F.alpha_dropout(x, p=p, training=True).numpy()
        assert abs(y.mean()) < 0.02 and abs(y.std() - 1.0) < 0.02
        sat = -1.0507009873554805 * 1.6732632423543772
        a = ((1 - p) * (1 + p * sat ** 2)) ** -0.5
        dropped = np.isclose(y, a * sat - a * sat * p)
        assert abs(dropped.mean() - p) < 0.01
        yf = F.feature_alpha_dropout(flow.tensor(_rng.standard_normal((400, 300, 4))), p=p,
                                     training=True).numpy()
        assert abs(yf.mean()) < 0.02 and abs(yf.std() - 1.0) < 0.02
        chan = np.isclose(yf, a * sat - a * sat * p).all(2)
        assert abs(chan.mean() - p) < 0.01
    assert F.alpha_dropout(x, p=0.5) is x             # training=False by default (as torch)
    m = flow.nn.AlphaDropout(0.3)
    assert m(x) is not x
    m.eval()
    assert m(x) is x
    xg = flow.tensor(_rng.standard_normal((5, 7)), requires_grad=True)
    flow.nn.FeatureAlphaDropout(0.5)(xg).sum().backward()
    assert np.all(np.isin(np.round(xg.grad.numpy(), 12),
                          np.round([0.0, ((0.5) * (1 + 0.5 * sat ** 2)) ** -0.5], 12)))
    with pytest.raises(ValueError, match="alpha_dropout.*between 0 and 1"):
        F.alpha_dropout(x, p=-0.1, training=True)


# -- cross_entropy / nll_loss "mean": by the count of targets, or of the non-ignored ones ------

@pytest.mark.parametrize("fname", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("shape", [(6, 5), (3, 5, 4)])
def test_loss_mean_over_targets_matches_torch(fname, shape):
    """The mean's denominator: the number of targets when the targets' known values hold no
    ``ignore_index`` (one reduce_mean), else the count of the others (nan when all are
    ignored), with an in-range ignore_index (a padding class) too; values and gradients
    against PyTorch on random inputs."""
    c = shape[1]
    tshape = shape[:1] + shape[2:]
    cases = [(-100, None), (-100, 0.5), (0, None), (0, 0.4), (2, 1.0)]  # (ignore_index, share)
    for ignore_index, share in cases:
        t = _rng.integers(1 if ignore_index == 0 else 0, c, tshape)
        if share is not None:
            t = np.where(_rng.random(tshape) < share, ignore_index, t)
            t.flat[0] = ignore_index
        lf, lt = _pair(*shape)
        ff, ft = getattr(F, fname), getattr(TF, fname)
        xf, xt = lf, lt
        if fname == "nll_loss":
            xf, xt = F.log_softmax(lf, dim=1), TF.log_softmax(lt, dim=1)
        yf = ff(xf, flow.tensor(t), ignore_index=ignore_index)
        yt = ft(xt, torch.tensor(t), ignore_index=ignore_index)
        _close(yf, yt)
        if share == 1.0:  # every target ignored: 0 / 0
            assert np.isnan(yf.item())
            continue
        yf.backward()
        yt.backward()
        _close(lf.grad, lt.grad)


def test_cross_entropy_mean_with_no_target_ignored_counts_nothing_on_the_device():
    """With the targets' values known and none ignored, the "mean" is one reduce_mean: no
    ``ne`` / ``cast`` / ``div`` programs count the targets (4 compiles a cold start paid)."""
    from _compiles import compiled

    x = flow.tensor(_rng.standard_normal((7, 13)).astype(np.float32), requires_grad=True)
    t = flow.tensor(_rng.integers(0, 13, 7))
    with compiled() as names:
        y = F.cross_entropy(x, t)
        y.backward()
    assert not [n for n in names if n in ("jit(ne)", "jit(cast)", "jit(div)")], names
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    yt = TF.cross_entropy(xt, torch.tensor(t.numpy()))
    yt.backward()
    _close(y, yt, rtol=1e-6)
    _close(x.grad, xt.grad, rtol=1e-5, atol=1e-7)
