"""flow.fft, flow.stft / istft and flow.signal.windows against PyTorch on random inputs:
values (float32 / complex64), gradients (float64 / complex128, through a real loss
``(out.real * w1 + out.imag * w2).sum()``), n / s / dim / norm variants, dtypes and errors."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")
# torch warns about a missing stft window and about return_complex=False (deprecated)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

_rng = np.random.default_rng(7)


def _rand(*shape, dtype=np.float64):
    x = _rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * _rng.standard_normal(shape)
    return x.astype(dtype)


def _np(t):
    return t.detach().resolve_conj().numpy() if isinstance(t, torch.Tensor) else t.numpy()


def _dtype_name(t) -> str:
    return str(t.dtype).split(".")[-1]


def _leaf_f(a, grad=False):
    t = flow.tensor(a)
    if grad:
        t.requires_grad_(True)
    return t


def _leaf_t(a, grad=False):
    return torch.tensor(a, requires_grad=grad)


def _check_value(ft, ff, x, **kw):
    exp, got = ft(_leaf_t(x), **kw), ff(_leaf_f(x), **kw)
    assert tuple(got.shape) == tuple(exp.shape)
    assert _dtype_name(got) == _dtype_name(exp)
    e = _np(exp)
    tol = 1e-4 * max(1.0, float(np.abs(e).max())) * max(1.0, np.sqrt(e.size) / 4)
    np.testing.assert_allclose(_np(got), e, rtol=1e-4, atol=tol)


def _check_grad(ft, ff, x, **kw):
    xt, xf = _leaf_t(x, True), _leaf_f(x, True)
    ot, of = ft(xt, **kw), ff(xf, **kw)
    w1, w2 = _rng.standard_normal(tuple(ot.shape)), _rng.standard_normal(tuple(ot.shape))
    # d sum(out.real * w1 + out.imag * w2) (d sum(out * w1) for a real out): backward from
    # the output with gradient w1 + i w2 (PyTorch's convention for a real loss of a complex
    # value), one compiled backward without the real / imag / mul / sum programs per shape
    g = w1 + 1j * w2 if ot.is_complex() else w1
    ot.backward(torch.tensor(g, dtype=ot.dtype))
    of.backward(flow.tensor(g, dtype=of.dtype))
    np.testing.assert_allclose(_np(xf.grad), _np(xt.grad), rtol=1e-7, atol=1e-9)


_ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
_REAL_IN = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}
_R = _rand(4, 6)
_C = _rand(4, 6, dtype=np.complex128)


def _inputs(name: str, dtype_real=np.float64, dtype_c=np.complex128):
    r, c = _R.astype(dtype_real), _C.astype(dtype_c)
    return [r] if name in _REAL_IN else [r, c]


@pytest.mark.parametrize("name", _ONE_D)
def test_one_dimensional(name):
    ft, ff = getattr(torch.fft, name), getattr(flow.fft, name)
    for x in _inputs(name, np.float32, np.complex64):
        _check_value(ft, ff, x)
        _check_value(ft, ff, x, n=9, dim=0, norm="ortho")
    for x in _inputs(name):
        _check_grad(ft, ff, x, n=5, dim=0, norm="forward")


@pytest.mark.parametrize("name", ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn",
                                  "irfftn", "hfft2", "ihfft2", "hfftn", "ihfftn"])
def test_multi_dimensional(name):
    ft, ff = getattr(torch.fft, name), getattr(flow.fft, name)
    for x in _inputs(name, np.float32, np.complex64):
        _check_value(ft, ff, x)
        _check_value(ft, ff, x, s=(3, -1), dim=(1, 0), norm="forward")
    for x in _inputs(name):
        _check_grad(ft, ff, x, s=(5, 4), dim=(1, 0), norm="ortho")
    if name.endswith("n"):  # one transformed dim of a 3-d input
        _check_value(ft, ff, _rand(2, 3, 4).astype(np.float32), dim=(1,))


def test_integer_and_dtype_promotion():
    xi = np.arange(8, dtype=np.int64).reshape(2, 4)
    for name in ("fft", "rfft", "fftn", "ihfft", "irfft"):
        _check_value(getattr(torch.fft, name), getattr(flow.fft, name), xi)
    assert flow.fft.fft(flow.tensor(_R)).dtype == flow.complex128
    assert flow.fft.irfft(flow.tensor(_C.astype(np.complex64))).dtype == flow.float32
    # fftn over no dims: the input as complex, untransformed
    out = flow.fft.fftn(flow.tensor(_R.astype(np.float32)), dim=())
    assert out.dtype == flow.complex64
    np.testing.assert_allclose(out.numpy(), _R.astype(np.float32))


@pytest.mark.parametrize("call, exc, match", [
    (lambda x: flow.fft.fft(x, norm="bad"), ValueError, "Invalid normalization mode"),
    (lambda x: flow.fft.fft(x, dim=2), IndexError, "Dimension out of range"),
    (lambda x: flow.fft.fft(x, n=0), ValueError, r"Invalid number of data points \(0\)"),
    (lambda x: flow.fft.irfft(x, n=-1), ValueError, "Invalid number of data points"),
    (lambda x: flow.fft.rfft(flow.fft.fft(x)), TypeError, "expects a real"),
    (lambda x: flow.fft.rfftn(flow.fft.fft(x)), TypeError, "expects a real"),
    (lambda x: flow.fft.fftn(x, s=(2, 2), dim=(0,)), RuntimeError, "same length"),
    (lambda x: flow.fft.fftn(x, dim=(0, -2)), RuntimeError, "unique"),
    (lambda x: flow.fft.fftn(x, s=(2, 2, 2)), RuntimeError, "only has 2 dimensions"),
    (lambda x: flow.fft.irfftn(x, dim=()), RuntimeError, "at least one axis"),
    (lambda x: flow.fft.fft(x.half()), TypeError, "Unsupported dtype Half"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call(flow.tensor(_R.astype(np.float32)))


def test_shifts_and_frequencies():
    x = _rand(5, 4).astype(np.float32)
    for name in ("fftshift", "ifftshift"):
        for kw in ({}, {"dim": 0}, {"dim": (1, 0)}):
            _check_value(getattr(torch.fft, name), getattr(flow.fft, name), x, **kw)
    for name in ("fftfreq", "rfftfreq"):
        for n, d in ((7, 1.0), (8, 0.25), (1, 2.0)):
            exp = getattr(torch.fft, name)(n, d)
            got = getattr(flow.fft, name)(n, d)
            assert got.dtype == flow.float32
            np.testing.assert_allclose(got.numpy(), exp.numpy(), rtol=1e-6)
        got = getattr(flow.fft, name)(6, dtype=flow.float64, requires_grad=True)
        assert got.dtype == flow.float64 and got.requires_grad


# -- stft / istft -----------------------------------------------------------------------------

_SIG = _rand(2, 40)


@pytest.mark.parametrize("kw", [
    {"n_fft": 8, "return_complex": True},
    {"n_fft": 8, "hop_length": 3, "win_length": 6, "window": "hann", "center": False,
     "normalized": True, "return_complex": True},
    {"n_fft": 10, "window": "hann", "pad_mode": "constant", "onesided": False,
     "return_complex": True},
    {"n_fft": 8, "return_complex": False},
])
def test_stft(kw):
    def args(lib, window):
        out = dict(kw)
        if kw.get("window") == "hann":
            w = np.hanning(kw.get("win_length", kw["n_fft"]) + 2)[1:-1]
            out["window"] = window(w)
        return out
    for x, cplx in ((_SIG.astype(np.float32), False), (_SIG[0].astype(np.float32), False),
                    (_rand(40, dtype=np.complex64), True)):
        if cplx and kw.get("onesided") is not False:
            continue
        _check_value(lambda t, **k: torch.stft(t, **args(torch, torch.tensor), **k),
                     lambda t, **k: flow.stft(t, **args(flow, flow.tensor), **k), x)
    _check_grad(lambda t: torch.stft(t, **args(torch, torch.tensor)),
                lambda t: t.stft(**args(flow, flow.tensor)), _SIG)


def test_stft_errors():
    x = flow.tensor(_SIG.astype(np.float32))
    with pytest.raises(RuntimeError, match="return_complex parameter be given"):
        flow.stft(x, 8)
    with pytest.raises(RuntimeError, match="1D or 2D"):
        flow.stft(flow.tensor(_rand(2, 2, 40)), 8, return_complex=True)
    with pytest.raises(RuntimeError, match="win_length"):
        flow.stft(x, 8, win_length=9, return_complex=True)


@pytest.mark.parametrize("kw", [
    {"n_fft": 8, "win_length": 6},
    {"n_fft": 8, "hop_length": 3, "center": False, "normalized": True, "length": 30},
    {"n_fft": 8, "hop_length": 2, "length": 50},
    {"n_fft": 10, "onesided": False, "return_complex": True, "length": 45},
])
def test_istft(kw):
    n_fft, win = kw["n_fft"], kw.get("win_length", kw["n_fft"])
    w = np.hanning(win + 2)[1:-1]
    skw = {k: kw[k] for k in ("n_fft", "hop_length", "win_length", "center", "normalized",
                              "onesided") if k in kw}
    spec = torch.stft(torch.tensor(_SIG), window=torch.tensor(w), return_complex=True,
                      **skw).numpy()
    assert spec.shape[-2] == (n_fft if kw.get("onesided") is False else n_fft // 2 + 1)
    _check_value(lambda t: torch.istft(t, window=torch.tensor(w), **kw),
                 lambda t: flow.istft(t, window=flow.tensor(w), **kw),
                 spec.astype(np.complex64))
    _check_grad(lambda t: torch.istft(t, window=torch.tensor(w), **kw),
                lambda t: t.istft(window=flow.tensor(w), **kw), spec)


def test_istft_errors():
    spec = flow.tensor(_rand(5, 7, dtype=np.complex64))
    with pytest.raises(RuntimeError, match="complex-valued input"):
        flow.istft(flow.tensor(_rand(5, 7).astype(np.float32)), 8)
    with pytest.raises(RuntimeError, match="n_fft / 2 \\+ 1"):
        flow.istft(spec, 10, onesided=True)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        flow.istft(spec, 8, window=flow.zeros(8))


# -- signal.windows ---------------------------------------------------------------------------

_WINDOWS = [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {"tau": 2.0}),
            ("gaussian", {"std": 1.5}), ("general_cosine", {"a": [0.5, 0.3, 0.2]}),
            ("general_hamming", {"alpha": 0.6}), ("hamming", {}), ("hann", {}),
            ("kaiser", {"beta": 5.0}), ("nuttall", {})]


@pytest.mark.parametrize("name, kw", _WINDOWS)
def test_windows(name, kw):
    ft, ff = getattr(torch.signal.windows, name), getattr(flow.signal.windows, name)
    for m in (0, 1, 7, 8):
        for sym in (True, False):
            exp, got = ft(m, sym=sym, **kw), ff(m, sym=sym, **kw)
            assert got.dtype == flow.float32 and tuple(got.shape) == tuple(exp.shape)
            np.testing.assert_allclose(got.numpy(), exp.numpy(), rtol=1e-5, atol=1e-6)
    got = ff(5, dtype=flow.float64, requires_grad=True, **kw)
    assert got.dtype == flow.float64 and got.requires_grad
    np.testing.assert_allclose(got.detach().numpy(), ft(5, dtype=torch.float64, **kw).numpy(),
                               rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="non-negative"):
        ff(-1, **kw)
    with pytest.raises(ValueError, match="float32 or float64"):
        ff(4, dtype=flow.int64, **kw)


def test_window_argument_errors():
    w = flow.signal.windows
    with pytest.raises(ValueError, match="Center must be None"):
        w.exponential(5, center=1.0)
    with pytest.raises(ValueError, match="Tau must be positive"):
        w.exponential(5, tau=0.0)
    with pytest.raises(ValueError, match="Standard deviation must be positive"):
        w.gaussian(5, std=0.0)
    with pytest.raises(ValueError, match="beta must be non-negative"):
        w.kaiser(5, beta=-1.0)
    with pytest.raises(TypeError, match="list/tuple"):
        w.general_cosine(5, a=0.5)
    np.testing.assert_allclose(w.exponential(6, center=1.0, sym=False).numpy(),
                               torch.signal.windows.exponential(6, center=1.0,
                                                                sym=False).numpy(), rtol=1e-6)
