"""nn.utils.parametrizations.orthogonal and the op under it, geqrf, against PyTorch.

geqrf: values (tall, wide, square, batched, float32 / float64 / complex), Q through
householder_product as linalg.qr's, no derivative (a backward raises naming it), errors.
orthogonal: every map on square / tall / wide / batched weights in both dtypes (the weight
at registration, outputs with a moved original, checkpoints both ways, orthogonality checked
with NumPy), gradients and an optimizer step, assignment through right_inverse,
use_trivialization=False, and PyTorch's errors.

Compile count (most of the time): the cases share two families of programs, float64 on
5x5, 5x3 and 3x5 matrices and float32 on 2x5x3 / 2x5x5 batches (a tall weight pads to a
square one for matrix_exp / cayley and is completed to one by right_inverse, a wide one is a
transposed tall one); backward graphs (one executable each) only where gradients are
compared.
"""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow
import jflow.nn as nn
from jflow.nn.utils import parametrize

torch = pytest.importorskip("torch")

PT = torch.nn.utils.parametrizations
PF = nn.utils.parametrizations
RS = np.random.RandomState(11)
N, K = 5, 3
SHAPES = {"square": (N, N), "tall": (N, K), "wide": (K, N), "batched": (2, N, K),
          "batched square": (2, N, N)}
MAPS = ("matrix_exp", "cayley", "householder")
#: each map on every shape class: float64 for the unbatched ones (which share the map's
#: programs), float32 for the batched ones, so each map meets both dtypes
CASES = ([(m, kind, np.float64) for m in MAPS for kind in ("square", "tall", "wide")]
         + [(m, "batched", np.float32) for m in MAPS])
TOL = {np.float64: 1e-12, np.float32: 2e-6}


def _np(t) -> np.ndarray:
    return t.detach().numpy()


def _close(got, want, dtype, scale: float = 1.0) -> float:
    got, want = np.asarray(got), np.asarray(want)
    tol = TOL[dtype] * scale
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    return float(np.abs(got - want).max())


def _check_orthogonal(q: np.ndarray, dtype) -> None:
    """Orthonormal columns (rows for a wide matrix), computed in float64 by NumPy."""
    q = q.astype(np.float64)
    if q.shape[-2] < q.shape[-1]:
        q = np.swapaxes(q, -1, -2)
    gram = np.swapaxes(q, -1, -2) @ q
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(q.shape[-1]), gram.shape),
                               atol=50 * TOL[dtype])


class _FlowStack(nn.Module):
    """``x @ weight`` for a batch of matrices (the batched weight's module)."""

    def __init__(self, w: np.ndarray) -> None:
        super().__init__()
        self.weight = nn.Parameter(flow.tensor(w))

    def forward(self, x):
        return flow.matmul(x, self.weight)


class _TorchStack(torch.nn.Module):
    def __init__(self, w: np.ndarray) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.tensor(w))

    def forward(self, x):
        return torch.matmul(x, self.weight)


def _pair(w: np.ndarray):
    """(PyTorch's module, jflow's) holding the weight ``w``: a Linear with a bias for a
    matrix (weight (out, in)), a stack of products for a batch of matrices."""
    if w.ndim == 3:
        return _TorchStack(w), _FlowStack(w)
    out, inp = w.shape
    b = RS.randn(out).astype(w.dtype)
    tm = torch.nn.Linear(inp, out, dtype=torch.float64 if w.dtype == np.float64 else None)
    fm = nn.Linear(inp, out, dtype=flow.float64 if w.dtype == np.float64 else None)
    tm.load_state_dict({"weight": torch.tensor(w), "bias": torch.tensor(b)})
    fm.load_state_dict({"weight": flow.tensor(w), "bias": flow.tensor(b)})
    return tm, fm


def _input(w: np.ndarray) -> np.ndarray:
    shape = (w.shape[0], 4, w.shape[1]) if w.ndim == 3 else (4, w.shape[1])
    return RS.randn(*shape).astype(w.dtype)


def _moved_original(mp: str, shape: tuple, dtype) -> np.ndarray:
    """An original away from registration's -I. For householder the diagonal holds the
    columns' signs through its integer part: -1.7 / 1.3 (truncated to -1 / 1, as PyTorch's
    ``.int()``; rounding would give -2)."""
    o = RS.randn(*shape) * 0.5
    if mp == "householder":
        i = np.arange(min(shape[-2:]))
        o[..., i, i] = np.where(RS.rand(*shape[:-2], i.size) < 0.5, -1.7, 1.3)
    return o.astype(dtype)


def _sd_to(lib, sd: dict) -> dict:
    return {k: lib.tensor(np.asarray(v)) for k, v in sd.items()}


def _sd_np(m) -> dict:
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


# -- geqrf ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,dtype", [((N, K), np.float64), ((K, N), np.float64),
                                         ((N, N), np.float64), ((2, N, N), np.float32),
                                         ((N, K), np.complex128)])
def test_geqrf_matches_pytorch_and_gives_qr_through_householder_product(shape, dtype):
    x = RS.randn(*shape) + (1j * RS.randn(*shape) if np.dtype(dtype).kind == "c" else 0)
    x = x.astype(dtype)
    a, tau = flow.geqrf(flow.tensor(x))
    ta, ttau = torch.geqrf(torch.tensor(x))
    assert a.shape == ta.shape and tau.shape == ttau.shape and a.dtype == flow.tensor(x).dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(a.numpy(), ta.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(tau.numpy(), ttau.numpy(), rtol=tol, atol=tol)
    named = flow.tensor(x).geqrf()       # the method, and PyTorch's field names
    np.testing.assert_array_equal(named.a.numpy(), a.numpy())
    np.testing.assert_array_equal(named.tau.numpy(), tau.numpy())
    if np.dtype(dtype).kind == "c" or shape[-2] < shape[-1]:
        return   # (householder_product: real, tall or square)
    q = flow.linalg.householder_product(a, tau)
    qr_q, qr_r = flow.linalg.qr(flow.tensor(x))
    np.testing.assert_allclose(q.numpy(), qr_q.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(np.triu(a.numpy())[..., :shape[-1], :], qr_r.numpy(), rtol=tol,
                               atol=tol)


def test_geqrf_has_no_derivative_and_refuses_what_pytorch_refuses():
    x = RS.randn(N, K)
    t, tt = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    a, tau = flow.geqrf(t)
    ta, ttau = torch.geqrf(tt)
    assert a.requires_grad and tau.requires_grad and ta.requires_grad   # as PyTorch's
    for loss, tloss in [(a.sum(), ta.sum()), (tau.sum(), ttau.sum())]:
        with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not "
                           "implemented") as got:
            loss.backward()
        with pytest.raises(NotImplementedError) as want:
            tloss.backward()
        assert str(got.value) == str(want.value)
    with flow.no_grad():
        assert not flow.geqrf(t)[0].requires_grad
    # (the error types are jflow's linalg ones; PyTorch raises RuntimeError /
    # NotImplementedError for the same calls)
    with pytest.raises(ValueError, match="geqrf: argument 'input' must have at least 2"):
        flow.geqrf(flow.tensor(x[0]))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        torch.geqrf(torch.tensor(x[0]))
    for dt, tdt in ((flow.int64, torch.int64), (flow.float16, torch.float16)):
        with pytest.raises(TypeError, match="geqrf: Expected a float32, float64, complex64 "):
            flow.geqrf(flow.ones(3, 3, dtype=dt))
        with pytest.raises(NotImplementedError, match="geqrf"):
            torch.geqrf(torch.ones(3, 3, dtype=tdt))


# -- orthogonal: values -----------------------------------------------------------------------

@pytest.mark.parametrize("mp,kind,dtype", CASES,
                         ids=[f"{m}-{k}-{np.dtype(d).name}" for m, k, d in CASES])
def test_orthogonal_matches_pytorch(mp, kind, dtype):
    shape = SHAPES[kind]
    w = RS.randn(*shape).astype(dtype)          # not orthogonal: QR-orthogonalized
    tm, fm = _pair(w)
    PT.orthogonal(tm, orthogonal_map=mp)
    assert PF.orthogonal(fm, orthogonal_map=mp) is fm
    assert type(fm).__name__ == "Parametrized" + type(fm).__bases__[0].__name__
    assert list(fm.state_dict()) == list(tm.state_dict())
    assert "parametrizations.weight.0.base" in fm.state_dict()
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    # at registration: Q of w's QR with R's diagonal positive, deterministic even for a
    # non-square w (the random completion fills only the other columns of base)
    _close(_np(fm.weight), _np(tm.weight), dtype, 10)
    _check_orthogonal(_np(fm.weight), dtype)
    eye = np.broadcast_to(np.eye(*shape[-2:]), shape)
    np.testing.assert_array_equal(_np(fm.parametrizations.weight.original), -eye)
    base = _np(fm.parametrizations.weight[0].base)   # n x n, random columns completed
    assert base.shape == shape[:-2] + (max(shape[-2:]),) * 2
    _check_orthogonal(base, dtype)
    if kind == "square":
        _close(base, _np(tm.parametrizations.weight[0].base), dtype, 10)
    # a PyTorch checkpoint (its random base) with a moved original: the same weight and
    # outputs, and orthogonal
    sd = _sd_np(tm)
    sd["parametrizations.weight.original"] = _moved_original(mp, shape, dtype)
    tm.load_state_dict(_sd_to(torch, sd))
    fm.load_state_dict(_sd_to(flow, sd))
    fw = _np(fm.weight)
    assert np.abs(fw - eye).max() > 0.1           # (moved off the identity)
    _close(fw, _np(tm.weight), dtype, 10)
    _check_orthogonal(fw, dtype)
    x = _input(w)
    _close(_np(fm(flow.tensor(x))), _np(tm(torch.tensor(x))), dtype, 50)
    # and back: a jflow checkpoint loads into PyTorch's module
    sd["parametrizations.weight.original"] = _moved_original(mp, shape, dtype)
    fm.load_state_dict(_sd_to(flow, sd))
    tm.load_state_dict(_sd_to(torch, _sd_np(fm)))
    _close(_np(fm.weight), _np(tm.weight), dtype, 10)


#: gradients and a training step: each map, each shape class and both dtypes once (a
#: backward graph is one executable per structure)
GRAD_CASES = [("matrix_exp", "tall", np.float64), ("cayley", "wide", np.float64),
              ("householder", "square", np.float64), ("householder", "batched", np.float32)]


@pytest.mark.parametrize("mp,kind,dtype", GRAD_CASES,
                         ids=[f"{m}-{k}-{np.dtype(d).name}" for m, k, d in GRAD_CASES])
def test_orthogonal_gradients_and_optimizer_step_match_pytorch(mp, kind, dtype):
    shape = SHAPES[kind]
    w = RS.randn(*shape).astype(dtype)
    tm, fm = _pair(w)
    PT.orthogonal(tm, orthogonal_map=mp)
    PF.orthogonal(fm, orthogonal_map=mp)
    sd = _sd_np(tm)
    sd["parametrizations.weight.original"] = _moved_original(mp, shape, dtype)
    tm.load_state_dict(_sd_to(torch, sd))
    fm.load_state_dict(_sd_to(flow, sd))
    x = _input(w)
    topt = torch.optim.Adam(tm.parameters(), lr=0.05)
    fopt = flow.optim.Adam(fm.parameters(), lr=0.05)
    ty, fy = tm(torch.tensor(x)), fm(flow.tensor(x))
    c = RS.randn(*tuple(ty.shape)).astype(dtype)
    tloss, floss = ((ty - torch.tensor(c)) ** 2).sum(), ((fy - flow.tensor(c)) ** 2).sum()
    tloss.backward()
    floss.backward()
    _close(floss.item(), tloss.item(), dtype, 100)
    tg = tm.parametrizations.weight.original.grad.numpy()
    fg = fm.parametrizations.weight.original.grad.numpy()
    assert np.abs(tg).max() > 0.1
    _close(fg / np.abs(tg).max(), tg / np.abs(tg).max(), dtype, 100)
    if mp == "householder":   # no gradient on and above the diagonal (signs, ignored part)
        assert not np.triu(fg).any()
    topt.step()
    fopt.step()
    _close(_np(fm.parametrizations.weight.original),
           _np(tm.parametrizations.weight.original), dtype, 100)
    _close(_np(fm.weight), _np(tm.weight), dtype, 100)
    _check_orthogonal(_np(fm.weight), dtype)


# -- orthogonal: assignment, use_trivialization=False ---------------------------------------

def _orthogonal_like(shape, dtype) -> np.ndarray:
    """A random matrix (batch) with orthonormal columns (rows when wide)."""
    wide = shape[-2] < shape[-1]
    tall = shape[:-2] + ((shape[-1], shape[-2]) if wide else shape[-2:])
    q = np.linalg.qr(RS.randn(*tall))[0]
    return (np.swapaxes(q, -1, -2) if wide else q).astype(dtype)


@pytest.mark.parametrize("kind,dtype,mp", [("square", np.float64, None),
                                           ("batched square", np.float32, "cayley"),
                                           ("tall", np.float64, None), ("wide", np.float64, None),
                                           ("batched", np.float32, None)])
def test_assignment_goes_through_right_inverse(kind, dtype, mp):
    shape = SHAPES[kind]
    tm, fm = _pair(RS.randn(*shape).astype(dtype))
    PT.orthogonal(tm, orthogonal_map=mp)   # None: matrix_exp when square, else householder
    PF.orthogonal(fm, orthogonal_map=mp)
    original = fm.parametrizations.weight.original
    eye = np.broadcast_to(np.eye(*shape[-2:]), shape)
    q = _orthogonal_like(shape, dtype)
    # orthogonal; nearly (off by far more than PyTorch's 10 n eps: orthogonalized, and
    # not orthogonal to _check_orthogonal's tolerance if kept); not at all
    near = q + (3e-4 if dtype == np.float32 else 1e-8) * RS.randn(*shape)
    for value in (q, near.astype(dtype), RS.randn(*shape).astype(dtype)):
        fm.weight = flow.tensor(value)
        tm.weight = torch.tensor(value)
        assert fm.parametrizations.weight.original is original   # an optimizer keeps it
        np.testing.assert_array_equal(_np(original), -eye)
        _close(_np(fm.weight), _np(tm.weight), dtype, 10)
        _check_orthogonal(_np(fm.weight), dtype)
        if "square" in kind:   # base: the value itself (a copy), or the Q of its QR
            fb = _np(fm.parametrizations.weight[0].base)
            tb = _np(tm.parametrizations.weight[0].base)
            if value is q:
                np.testing.assert_array_equal(fb, q)
                np.testing.assert_array_equal(tb, q)
            _close(fb, tb, dtype, 10)
    fm.weight = flow.tensor(q)
    _close(_np(fm.weight), q, dtype, 10)    # an orthogonal value comes back as it is
    # the map (default: matrix_exp when square, householder otherwise) away from -I
    sd = _sd_np(tm)
    sd["parametrizations.weight.original"] = _moved_original(
        mp or ("matrix_exp" if "square" in kind else "householder"), shape, dtype)
    tm.load_state_dict(_sd_to(torch, sd))
    fm.load_state_dict(_sd_to(flow, sd))
    moved = _np(fm.weight)
    _close(moved, _np(tm.weight), dtype, 10)
    parametrize.remove_parametrizations(fm, "weight")   # the weight as it is now
    assert not parametrize.is_parametrized(fm) and isinstance(fm.weight, nn.Parameter)
    np.testing.assert_array_equal(_np(fm.weight), moved)


@pytest.mark.parametrize("kind", ["tall", "wide", "identity"])
def test_householder_without_trivialization_matches_pytorch(kind):
    shape = SHAPES.get(kind, (N, K))
    # the identity: geqrf makes no reflection (tau == 0), whose sign right_inverse flips
    w = np.eye(N, K) if kind == "identity" else RS.randn(*shape)
    tm, fm = _pair(w)
    PT.orthogonal(tm, orthogonal_map="householder", use_trivialization=False)
    PF.orthogonal(fm, orthogonal_map="householder", use_trivialization=False)
    assert list(fm.state_dict()) == list(tm.state_dict()) == \
        ["bias", "parametrizations.weight.original"]
    _close(_np(fm.parametrizations.weight.original),
           _np(tm.parametrizations.weight.original), np.float64, 10)
    if kind == "identity":
        np.testing.assert_array_equal(np.diagonal(_np(fm.parametrizations.weight.original)),
                                      -np.ones(K))
    _close(_np(fm.weight), _np(tm.weight), np.float64, 10)
    _check_orthogonal(_np(fm.weight), np.float64)
    q = _orthogonal_like(shape, np.float64)
    fm.weight, tm.weight = flow.tensor(q), torch.tensor(q)
    _close(_np(fm.parametrizations.weight.original),
           _np(tm.parametrizations.weight.original), np.float64, 10)
    _close(_np(fm.weight), q, np.float64, 10)


@pytest.mark.parametrize("mp", ["matrix_exp", "cayley"])
def test_exp_and_cayley_without_trivialization_match_pytorch(mp):
    w = RS.randn(N, N) * 0.5
    tm, fm = _pair(w)
    PT.orthogonal(tm, orthogonal_map=mp, use_trivialization=False)
    PF.orthogonal(fm, orthogonal_map=mp, use_trivialization=False)
    # no right_inverse (NotImplementedError at registration): the weight stays the original
    np.testing.assert_array_equal(_np(fm.parametrizations.weight.original), w)
    assert list(fm.state_dict()) == list(tm.state_dict())
    _close(_np(fm.weight), _np(tm.weight), np.float64, 10)
    _check_orthogonal(_np(fm.weight), np.float64)
    msg = "not possible to assign to the matrix exponential or the Cayley"
    with pytest.raises(NotImplementedError, match=msg):
        tm.weight = torch.eye(N, dtype=torch.float64)
    with pytest.raises(NotImplementedError, match=msg):
        fm.weight = flow.eye(N, dtype=flow.float64)


# -- orthogonal: errors -----------------------------------------------------------------------

def test_orthogonal_errors_are_pytorchs():
    def both(make, call, exc, match):
        for lib, P in ((torch, PT), (flow, PF)):
            with pytest.raises(exc, match=match):
                call(make(lib), P)

    def lin(lib):
        return (torch.nn if lib is torch else nn).Linear(K, N, dtype=lib.float64)

    both(lin, lambda m, P: P.orthogonal(m, "bias"), ValueError,
         "Expected a matrix or batch of matrices. Got a tensor of 1 dimensions")
    both(lin, lambda m, P: P.orthogonal(m, "nope"), ValueError, "has no parameter or buffer "
         "with name 'nope'")
    both(lin, lambda m, P: P.orthogonal(m, orthogonal_map="qr"), ValueError,
         'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: qr')

    def complex_lin(lib):
        m = lin(lib)
        m.weight = (torch.nn if lib is torch else nn).Parameter(
            lib.tensor(RS.randn(N, K) + 1j * RS.randn(N, K)))
        return m

    both(complex_lin, lambda m, P: P.orthogonal(m, orthogonal_map="householder"), ValueError,
         "householder parametrization does not support complex tensors")
    # (jflow: no complex maps; PyTorch makes them unitary)
    with pytest.raises(NotImplementedError, match="complex"):
        PF.orthogonal(complex_lin(flow))

    def registered(lib):
        m = lin(lib)
        (PT if lib is torch else PF).orthogonal(m)
        return m

    both(registered, lambda m, P: setattr(m, "weight", m.weight.detach().mT), ValueError,
         "Expected a matrix or batch of matrices of shape")
