"""Parity with PyTorch of the issue-14 activations, losses and distances (values, dtypes, edge
values, reductions, gradients, modules, errors). Skipped without torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import jflow as flow
from jflow import nn
from jflow.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

_rng = np.random.default_rng(14)
_A = _rng.standard_normal((4, 6)) * 2.5      # crosses every kink (+-3, +-0.5, ...)
_B = _rng.standard_normal((4, 6))
_EDGE = np.array([0.0, -0.0, 1.0, -1.0, 3.0, -3.0, 0.5, -0.5, np.inf, -np.inf, np.nan, 50.0,
                  -50.0])


def _pair(a: np.ndarray, dtype: str = "float32", grad: bool = True) -> tuple[Any, Any]:
    j = flow.tensor(a.astype(dtype), requires_grad=grad)
    t = torch.tensor(a.astype(dtype), requires_grad=grad)
    return j, t


def _np(t: Any) -> np.ndarray:
    return t.detach().numpy()


def _close(got: Any, want: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(_np(got).astype(np.float64), _np(want).astype(np.float64),
                               rtol=rtol, atol=atol, equal_nan=True)


def _check(fj: Callable, ft: Callable, *arrays: np.ndarray, dtype: str = "float32",
           grad: bool = True, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Forward values and (float inputs) the gradient of sum(out) w.r.t. every input."""
    pairs = [_pair(a, dtype, grad) for a in arrays]
    yj = fj(*[p[0] for p in pairs])
    yt = ft(*[p[1] for p in pairs])
    assert yj.dtype == getattr(flow, str(yt.dtype).replace("torch.", ""))
    assert tuple(yj.shape) == tuple(yt.shape)
    _close(yj, yt, rtol, atol)
    if grad:
        yj.sum().backward()
        yt.sum().backward()
        for j, t in pairs:
            _close(j.grad, t.grad, rtol, atol)


# -- activations ---------------------------------------------------------------------------------

ACTIVATIONS = {
    "selu": ({}, {}),
    "celu": ({"alpha": 0.7}, {"alpha": 0.7}),
    "hardswish": ({}, {}),
    "hardsigmoid": ({}, {}),
    "hardshrink": ({"lambd": 0.7}, {"lambd": 0.7}),
    "softshrink": ({"lambd": 0.7}, {"lambd": 0.7}),
    "tanhshrink": ({}, {}),
    "softsign": ({}, {}),
    "threshold": ({"threshold": 0.1, "value": 20.0}, {"threshold": 0.1, "value": 20.0}),
    "mish": ({}, {}),
    "logsigmoid": ({}, {}),
    "softmin": ({"dim": 1}, {"dim": 1}),
    "glu": ({"dim": 1}, {"dim": 1}),
    "rrelu": ({}, {}),        # eval mode (training=False): leaky_relu((lower + upper) / 2)
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_activation_values_and_grad(name: str, dtype: str) -> None:
    kj, kt = ACTIVATIONS[name]
    _check(lambda x: getattr(F, name)(x, **kj), lambda x: getattr(TF, name)(x, **kt), _A,
           dtype=dtype)


@pytest.mark.parametrize("name", sorted(set(ACTIVATIONS) - {"glu", "softmin"}))
def test_activation_edge_values(name: str) -> None:
    """0, -0, kinks, +-inf and nan, as PyTorch (forward; the gradient where finite)."""
    kj, kt = ACTIVATIONS[name]
    x = _EDGE.astype(np.float32)
    _close(getattr(F, name)(flow.tensor(x), **kj), getattr(TF, name)(torch.tensor(x), **kt))
    fin = np.array([0.0, 1.0, -1.0, 3.0, -3.0, 0.5, -0.5, 0.7, -0.7, 0.1, 20.0, -20.0])
    _check(lambda t: getattr(F, name)(t, **kj), lambda t: getattr(TF, name)(t, **kt), fin)


@pytest.mark.parametrize("name", ["selu", "celu", "hardswish", "hardsigmoid", "hardshrink",
                                  "softshrink", "tanhshrink", "softsign"])
def test_activation_half_dtypes(name: str) -> None:
    kj, kt = ACTIVATIONS[name]
    for dt in ("float16", "bfloat16"):
        x = flow.tensor(_A.astype(np.float32)).to(getattr(flow, dt))
        y = getattr(F, name)(x, **kj)
        want = getattr(TF, name)(torch.tensor(_A.astype(np.float32)).to(getattr(torch, dt)),
                                 **kt)
        assert y.dtype == getattr(flow, dt)
        _close(y.float(), want.float(), rtol=2e-2, atol=2e-2)


def test_activation_inplace_and_top_level() -> None:
    for name in ("selu", "celu", "hardswish", "hardsigmoid"):
        x = flow.tensor(_A.astype(np.float32))
        want = getattr(F, name)(x)
        out = getattr(F, name)(x, inplace=True)
        assert out is x
        _close(x, want)
    x = flow.tensor(_A.astype(np.float32))
    F.threshold(x, 0.0, -1.0, inplace=True)
    _close(x, TF.threshold(torch.tensor(_A.astype(np.float32)), 0.0, -1.0))
    # flow.* where torch.* has one, and the Tensor methods torch.Tensor has
    xt = torch.tensor(_A.astype(np.float32))
    x = flow.tensor(_A.astype(np.float32))
    _close(flow.selu(x), torch.selu(xt))
    _close(flow.celu(x, 0.5), torch.celu(xt, 0.5))
    _close(flow.threshold(x, 0.2, 1.0), torch.threshold(xt, 0.2, 1.0))
    _close(x.hardshrink(0.3), xt.hardshrink(0.3))
    _close(x.prelu(flow.tensor([0.2])), xt.prelu(torch.tensor([0.2])))


@pytest.mark.parametrize("shape,n", [((4, 6), 6), ((2, 3, 4), 3), ((2, 3, 4), 1), ((5,), 1)])
def test_prelu(shape: tuple[int, ...], n: int) -> None:
    a = _rng.standard_normal(shape)
    w = _rng.uniform(0.0, 0.5, n)
    _check(F.prelu, TF.prelu, a, w)
    with pytest.raises(ValueError, match="prelu.*channel"):
        F.prelu(flow.tensor(a.astype(np.float32)), flow.ones(n + 1))
    if len(shape) == 1:   # a 1-d input has one channel (PyTorch)
        with pytest.raises(ValueError, match="prelu.*channel"):
            F.prelu(flow.tensor(a.astype(np.float32)), flow.ones(shape[0]))


def test_prelu_module_learns() -> None:
    m, mt = nn.PReLU(6, init=0.1), torch.nn.PReLU(6, init=0.1)
    assert list(m.state_dict()) == list(mt.state_dict()) == ["weight"]
    x, xt = _pair(_A)
    m(x).sum().backward()
    mt(xt).sum().backward()
    _close(m.weight.grad, mt.weight.grad)
    _close(x.grad, xt.grad)


def test_rrelu_training() -> None:
    """Training mode: x where x >= 0, x * a with a ~ U(lower, upper) per element below 0; the
    gradient is that slope (PyTorch's numbers differ: another generator)."""
    flow.manual_seed(0)
    x = flow.tensor(_A.astype(np.float32), requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    y.sum().backward()
    a, yv, g = _A.astype(np.float32), y.detach().numpy(), x.grad.numpy()
    neg = a < 0
    np.testing.assert_array_equal(yv[~neg], a[~neg])
    slope = yv[neg] / a[neg]
    assert np.all((slope >= 0.1 - 1e-6) & (slope <= 0.3 + 1e-6))
    np.testing.assert_allclose(g[neg], slope, rtol=1e-5)
    np.testing.assert_array_equal(g[~neg], 1.0)
    flow.manual_seed(0)
    np.testing.assert_array_equal(F.rrelu(flow.tensor(a), 0.1, 0.3, training=True).numpy(), yv)
    m = nn.RReLU(0.1, 0.3)
    m.eval()
    _close(m(flow.tensor(a)), torch.nn.RReLU(0.1, 0.3).eval()(torch.tensor(a)))


def test_activation_modules() -> None:
    x = _A.astype(np.float32)
    cases = [(nn.SELU(), torch.nn.SELU()), (nn.CELU(0.5), torch.nn.CELU(0.5)),
             (nn.GLU(0), torch.nn.GLU(0)), (nn.Hardswish(), torch.nn.Hardswish()),
             (nn.Hardsigmoid(), torch.nn.Hardsigmoid()), (nn.Hardshrink(0.2),
                                                          torch.nn.Hardshrink(0.2)),
             (nn.Softshrink(0.2), torch.nn.Softshrink(0.2)), (nn.Tanhshrink(),
                                                              torch.nn.Tanhshrink()),
             (nn.Softsign(), torch.nn.Softsign()), (nn.Threshold(0.1, 2.0),
                                                    torch.nn.Threshold(0.1, 2.0)),
             (nn.Mish(), torch.nn.Mish()), (nn.LogSigmoid(), torch.nn.LogSigmoid()),
             (nn.Softmin(1), torch.nn.Softmin(1))]
    for mj, mt in cases:
        _close(mj(flow.tensor(x)), mt(torch.tensor(x)))


def test_activation_errors() -> None:
    x = flow.tensor(_A.astype(np.float32))
    with pytest.raises(ValueError, match="softshrink.*lambd"):
        F.softshrink(x, -1.0)
    with pytest.raises(ValueError, match="celu.*alpha"):
        F.celu(x, 0.0)
    with pytest.raises(ValueError, match="glu.*even"):
        F.glu(flow.ones(2, 3), 1)
    with pytest.raises(ValueError, match="rrelu.*lower"):
        F.rrelu(x, 0.5, 0.1)
    with pytest.raises(TypeError, match="input"):
        F.hardswish(flow.ones(3, dtype=flow.int64))


def test_dynamic_float_attrs_share_one_executable() -> None:
    """lambd / alpha / threshold are runtime scalars: new values give the right results."""
    x = flow.tensor(_A.astype(np.float32))
    xt = torch.tensor(_A.astype(np.float32))
    for lam in (0.1, 0.9, 2.0):
        _close(F.softshrink(x, lam), TF.softshrink(xt, lam))
        _close(F.hardshrink(x, lam), TF.hardshrink(xt, lam))
        _close(F.celu(x, lam), TF.celu(xt, lam))
        _close(F.threshold(x, lam, -lam), TF.threshold(xt, lam, -lam))


# -- losses --------------------------------------------------------------------------------------

_T01 = np.abs(_B) + 0.05                    # positive targets (zero: test_zero_target)
_SIGN = np.where(_B > 0, 1.0, -1.0)
_V = np.abs(_B) + 0.1
_CLS = np.array([0, 5, 2, 3])
_W6 = _rng.uniform(0.5, 1.5, 6)
_ROWS = np.array([1.0, -1.0, 1.0, -1.0])

# name -> (jflow call, torch call, arrays differentiated, dict of reductions to test)
LOSSES: dict[str, tuple[Callable, Callable, tuple[np.ndarray, ...]]] = {
    "smooth_l1_loss": (lambda x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.5),
                       lambda x, y, r: TF.smooth_l1_loss(x, y, reduction=r, beta=0.5),
                       (_A, _B)),
    "smooth_l1_loss_beta0": (lambda x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.0),
                             lambda x, y, r: TF.smooth_l1_loss(x, y, reduction=r, beta=0.0),
                             (_A, _B)),
    "huber_loss": (lambda x, y, r: F.huber_loss(x, y, reduction=r, delta=0.7),
                   lambda x, y, r: TF.huber_loss(x, y, reduction=r, delta=0.7), (_A, _B)),
    "kl_div": (lambda x, y, r: F.kl_div(x, y, reduction=r),
               lambda x, y, r: TF.kl_div(x, y, reduction=r), (_A, _T01)),
    "kl_div_log_target": (lambda x, y, r: F.kl_div(x, y, reduction=r, log_target=True),
                          lambda x, y, r: TF.kl_div(x, y, reduction=r, log_target=True),
                          (_A, _B)),
    "soft_margin_loss": (lambda x, r: F.soft_margin_loss(x, flow.tensor(_SIGN), reduction=r),
                         lambda x, r: TF.soft_margin_loss(x, torch.tensor(_SIGN).float()
                                                          .to(x.dtype), reduction=r), (_A,)),
    "margin_ranking_loss": (
        lambda x, y, r: F.margin_ranking_loss(x, y, flow.tensor(_SIGN), 0.3, reduction=r),
        lambda x, y, r: TF.margin_ranking_loss(x, y, torch.tensor(_SIGN).to(x.dtype), 0.3,
                                               reduction=r), (_A, _B)),
    "hinge_embedding_loss": (
        lambda x, r: F.hinge_embedding_loss(x, flow.tensor(_SIGN), 0.5, reduction=r),
        lambda x, r: TF.hinge_embedding_loss(x, torch.tensor(_SIGN).to(x.dtype), 0.5,
                                             reduction=r), (_A,)),
    "cosine_embedding_loss": (
        lambda x, y, r: F.cosine_embedding_loss(x, y, flow.tensor(_ROWS), 0.1, reduction=r),
        lambda x, y, r: TF.cosine_embedding_loss(x, y, torch.tensor(_ROWS).to(x.dtype), 0.1,
                                                 reduction=r), (_A, _B)),
    "poisson_nll_loss": (
        lambda x, y, r: F.poisson_nll_loss(x, y * 3, full=True, reduction=r),
        lambda x, y, r: TF.poisson_nll_loss(x, y * 3, full=True, reduction=r), (_A, _T01)),
    "poisson_nll_loss_rate": (
        lambda x, y, r: F.poisson_nll_loss(x, y, log_input=False, reduction=r),
        lambda x, y, r: TF.poisson_nll_loss(x, y, log_input=False, reduction=r), (_V, _T01)),
    "gaussian_nll_loss": (
        lambda x, y, v, r: F.gaussian_nll_loss(x, y, v, full=True, reduction=r),
        lambda x, y, v, r: TF.gaussian_nll_loss(x, y, v, full=True, reduction=r),
        (_A, _B, _V)),
    "gaussian_nll_loss_var_clamped": (
        lambda x, y, v, r: F.gaussian_nll_loss(x, y, v * 0, eps=0.05, reduction=r),
        lambda x, y, v, r: TF.gaussian_nll_loss(x, y, v * 0, eps=0.05, reduction=r),
        (_A, _B, _V)),
    "multi_margin_loss": (
        lambda x, r: F.multi_margin_loss(x, flow.tensor(_CLS), reduction=r),
        lambda x, r: TF.multi_margin_loss(x, torch.tensor(_CLS), reduction=r), (_A,)),
    "multi_margin_loss_p2_weight": (
        lambda x, r: F.multi_margin_loss(x, flow.tensor(_CLS), 2, 0.5,
                                         flow.tensor(_W6).to(x.dtype), reduction=r),
        lambda x, r: TF.multi_margin_loss(x, torch.tensor(_CLS), 2, 0.5,
                                          torch.tensor(_W6).to(x.dtype), reduction=r), (_A,)),
    "triplet_margin_loss": (
        lambda a, p, r: F.triplet_margin_loss(a, p, p * 0.5 + 1, swap=True, reduction=r),
        lambda a, p, r: TF.triplet_margin_loss(a, p, p * 0.5 + 1, swap=True, reduction=r),
        (_A, _B)),
    "triplet_margin_loss_p1": (
        lambda a, p, r: F.triplet_margin_loss(a, p, -p, 2.0, 1.0, reduction=r),
        lambda a, p, r: TF.triplet_margin_loss(a, p, -p, 2.0, 1.0, reduction=r), (_A, _B)),
    "multilabel_soft_margin_loss": (
        lambda x, r: F.multilabel_soft_margin_loss(x, flow.tensor(_T01 > 0.5),
                                                   flow.tensor(_W6), reduction=r),
        lambda x, r: TF.multilabel_soft_margin_loss(
            x, torch.tensor(_T01 > 0.5).to(x.dtype), torch.tensor(_W6).to(x.dtype),
            reduction=r), (_A,)),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_loss_values_reductions_and_grad(name: str, reduction: str) -> None:
    fj, ft, arrays = LOSSES[name]
    _check(lambda *a: fj(*a, reduction), lambda *a: ft(*a, reduction), *arrays, rtol=1e-5,
           atol=1e-5)


@pytest.mark.parametrize("name", ["smooth_l1_loss", "kl_div", "multi_margin_loss",
                                  "cosine_embedding_loss", "gaussian_nll_loss"])
def test_loss_float64(name: str) -> None:
    fj, ft, arrays = LOSSES[name]
    _check(lambda *a: fj(*a, "mean"), lambda *a: ft(*a, "mean"), *arrays, dtype="float64",
           rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["kl_div", "poisson_nll_loss"])
def test_zero_target(name: str) -> None:
    """A zero target: values and the input's gradient as PyTorch (0 log 0 = 0). The target's
    gradient there is finite in jflow (the log is taken of a safe 1 where t == 0); PyTorch's
    xlogy / masked log give NaN (the one-sided derivative is -inf: no value is right)."""
    fj, ft, (a, t) = LOSSES[name]
    t = t.copy()
    t[0, 0] = t[1, 2] = 0.0
    x, xt = _pair(a)
    y, yt = flow.tensor(t.astype(np.float32), requires_grad=True), torch.tensor(
        t.astype(np.float32))
    out, want = fj(x, y, "sum"), ft(xt, yt, "sum")
    _close(out, want, atol=1e-5)
    out.backward()
    want.backward()
    _close(x.grad, xt.grad)
    assert np.isfinite(y.grad.numpy()).all()


def test_kl_div_batchmean_and_edges() -> None:
    for log_target in (False, True):
        t = _B if log_target else _T01
        _check(lambda x, y, lt=log_target: F.kl_div(x, y, reduction="batchmean", log_target=lt),
               lambda x, y, lt=log_target: TF.kl_div(x, y, reduction="batchmean",
                                                     log_target=lt), _A, t)
    # inf / nan inputs propagate as PyTorch
    x = np.array([0.0, -np.inf, np.nan, 1.0], np.float32)
    t = np.array([0.0, 0.5, 0.5, 0.0], np.float32)
    _close(F.kl_div(flow.tensor(x), flow.tensor(t), reduction="none"),
           TF.kl_div(torch.tensor(x), torch.tensor(t), reduction="none"))


def test_loss_edge_values() -> None:
    x = _EDGE.astype(np.float32)
    y = np.zeros_like(x)
    for name in ("smooth_l1_loss", "huber_loss"):
        _close(getattr(F, name)(flow.tensor(x), flow.tensor(y), reduction="none"),
               getattr(TF, name)(torch.tensor(x), torch.tensor(y), reduction="none"))
    s = np.ones_like(x)
    _close(F.hinge_embedding_loss(flow.tensor(x), flow.tensor(-s), reduction="none"),
           TF.hinge_embedding_loss(torch.tensor(x), torch.tensor(-s), reduction="none"))
    fin = np.clip(np.nan_to_num(x), -50, 50)
    _close(F.soft_margin_loss(flow.tensor(fin), flow.tensor(s), reduction="none"),
           TF.soft_margin_loss(torch.tensor(fin), torch.tensor(s), reduction="none"))


def test_loss_modules() -> None:
    a, b = flow.tensor(_A.astype(np.float32)), flow.tensor(_B.astype(np.float32))
    at, bt = torch.tensor(_A.astype(np.float32)), torch.tensor(_B.astype(np.float32))
    sj, st = flow.tensor(_SIGN.astype(np.float32)), torch.tensor(_SIGN.astype(np.float32))
    rj, rt = flow.tensor(_ROWS.astype(np.float32)), torch.tensor(_ROWS.astype(np.float32))
    vj, vt = flow.tensor(_V.astype(np.float32)), torch.tensor(_V.astype(np.float32))
    pj, pt = flow.tensor(_T01.astype(np.float32)), torch.tensor(_T01.astype(np.float32))
    cj, ct = flow.tensor(_CLS), torch.tensor(_CLS)
    cases = [
        (nn.SmoothL1Loss(beta=0.5), torch.nn.SmoothL1Loss(beta=0.5), (a, b), (at, bt)),
        (nn.HuberLoss("sum", 0.5), torch.nn.HuberLoss("sum", 0.5), (a, b), (at, bt)),
        (nn.KLDivLoss(reduction="batchmean"), torch.nn.KLDivLoss(reduction="batchmean"),
         (a, pj), (at, pt)),
        (nn.SoftMarginLoss(), torch.nn.SoftMarginLoss(), (a, sj), (at, st)),
        (nn.MarginRankingLoss(0.2), torch.nn.MarginRankingLoss(0.2), (a, b, sj), (at, bt, st)),
        (nn.HingeEmbeddingLoss(0.5), torch.nn.HingeEmbeddingLoss(0.5), (a, sj), (at, st)),
        (nn.CosineEmbeddingLoss(0.1), torch.nn.CosineEmbeddingLoss(0.1), (a, b, rj),
         (at, bt, rt)),
        (nn.PoissonNLLLoss(), torch.nn.PoissonNLLLoss(), (a, pj), (at, pt)),
        (nn.GaussianNLLLoss(), torch.nn.GaussianNLLLoss(), (a, b, vj), (at, bt, vt)),
        (nn.MultiMarginLoss(), torch.nn.MultiMarginLoss(), (a, cj), (at, ct)),
        (nn.TripletMarginLoss(), torch.nn.TripletMarginLoss(), (a, b, -b), (at, bt, -bt)),
        (nn.MultiLabelSoftMarginLoss(), torch.nn.MultiLabelSoftMarginLoss(), (a, pj > 0.5),
         (at, (pt > 0.5).float())),
        (nn.PairwiseDistance(), torch.nn.PairwiseDistance(), (a, b), (at, bt)),
        (nn.CosineSimilarity(), torch.nn.CosineSimilarity(), (a, b), (at, bt)),
    ]
    for mj, mt, ij, it in cases:
        _close(mj(*ij), mt(*it), rtol=1e-5, atol=1e-5)


def test_gaussian_nll_var_shapes() -> None:
    """var of input's shape without the last dim, or with it 1 (a homoscedastic var), and a
    float var."""
    for v in (_V[:, 0], _V[:, :1]):
        _check(lambda x, y, vv: F.gaussian_nll_loss(x, y, vv),
               lambda x, y, vv: TF.gaussian_nll_loss(x, y, vv), _A, _B, v)
    x, y = flow.tensor(_A.astype(np.float32)), flow.tensor(_B.astype(np.float32))
    _close(F.gaussian_nll_loss(x, y, 0.5),
           TF.gaussian_nll_loss(torch.tensor(_A).float(), torch.tensor(_B).float(),
                                torch.full((4, 6), 0.5)))


def test_loss_errors() -> None:
    a, b = flow.tensor(_A.astype(np.float32)), flow.tensor(_B.astype(np.float32))
    with pytest.raises(ValueError, match="smooth_l1_loss.*reduction"):
        F.smooth_l1_loss(a, b, reduction="avg")
    with pytest.raises(ValueError, match="kl_div.*reduction"):
        F.kl_div(a, b, reduction="avg")
    with pytest.raises(ValueError, match="smooth_l1_loss.*beta"):
        F.smooth_l1_loss(a, b, beta=-1.0)
    with pytest.raises(ValueError, match="huber_loss.*delta"):
        F.huber_loss(a, b, delta=0.0)
    with pytest.raises(ValueError, match="gaussian_nll_loss.*negative"):
        F.gaussian_nll_loss(a, b, -flow.ones(4, 6))
    with pytest.raises(ValueError, match="gaussian_nll_loss.*var"):
        F.gaussian_nll_loss(a, b, flow.ones(3))
    with pytest.raises(ValueError, match="multi_margin_loss.*p"):
        F.multi_margin_loss(a, flow.tensor(_CLS), 3)
    with pytest.raises(IndexError, match="multi_margin_loss.*out of bounds"):
        F.multi_margin_loss(a, flow.tensor([0, 1, 2, 9]))
    with pytest.raises(ValueError, match="cosine_embedding_loss.*input2"):
        F.cosine_embedding_loss(a, b[:, :3], flow.ones(4))
    with pytest.raises(ValueError, match="triplet_margin_loss.*margin"):
        F.triplet_margin_loss(a, b, b, margin=0.0)
    with pytest.raises(ValueError, match="multilabel_soft_margin_loss.*target"):
        F.multilabel_soft_margin_loss(a, b[:, :3])
    with pytest.raises(TypeError, match="kl_div.*floating"):
        F.kl_div(flow.ones(3, dtype=flow.int64), flow.ones(3))


# -- distances and normalize -----------------------------------------------------------------------

@pytest.mark.parametrize("p", [1.0, 2.0, 3.0])
def test_pairwise_distance(p: float) -> None:
    _check(lambda x, y: F.pairwise_distance(x, y, p), lambda x, y: TF.pairwise_distance(x, y, p),
           _A, _B)
    _check(lambda x, y: F.pairwise_distance(x, y, p, keepdim=True),
           lambda x, y: TF.pairwise_distance(x, y, p, keepdim=True), _A, _B[:1])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cosine_similarity_and_normalize(dim: int) -> None:
    _check(lambda x, y: F.cosine_similarity(x, y, dim), lambda x, y: TF.cosine_similarity(
        x, y, dim), _A, _B)
    _check(lambda x: F.normalize(x, dim=dim), lambda x: TF.normalize(x, dim=dim), _A)
    _check(lambda x: F.normalize(x, 1.0, dim), lambda x: TF.normalize(x, 1.0, dim), _A)
    # a zero row: the norm is clamped to eps (no NaN), as PyTorch
    z = _A.copy()
    z[0] = 0.0
    _close(F.cosine_similarity(flow.tensor(z), flow.tensor(_B)),
           TF.cosine_similarity(torch.tensor(z), torch.tensor(_B)))
    _close(F.normalize(flow.tensor(z)), TF.normalize(torch.tensor(z)))
    _check(lambda x, y: F.cosine_similarity(x, y, dim), lambda x, y: TF.cosine_similarity(
        x, y, dim), _A, _B, dtype="float64", rtol=1e-10, atol=1e-12)


def test_unbatched_inputs() -> None:
    """1-d inputs (one sample) of the losses that take them, as PyTorch."""
    a, b = _A[0], _B[0]
    _check(lambda x: F.multi_margin_loss(x, flow.tensor(2), reduction="none"),
           lambda x: TF.multi_margin_loss(x, torch.tensor(2), reduction="none"), a)
    _check(lambda x, y: F.cosine_embedding_loss(x, y, flow.tensor(-1.0)),
           lambda x, y: TF.cosine_embedding_loss(x, y, torch.tensor(-1.0)), a, b)
    _check(lambda x, y: F.triplet_margin_loss(x, y, -y), lambda x, y: TF.triplet_margin_loss(
        x, y, -y), a, b)
    _check(lambda x: F.multilabel_soft_margin_loss(x, flow.tensor(b > 0)),
           lambda x: TF.multilabel_soft_margin_loss(x, torch.tensor(b > 0).float()), a)
