"""``torch.poisson`` / ``torch.binomial`` and the ``*_copy`` functions at top level, against
PyTorch: dtypes, shapes, statistics of many draws, the parameters' fixed points, seeding
(``manual_seed``, a ``Generator``, ``flow.jit``, ``flow.lazy``), gradients and errors."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")


def _name(d: object) -> str:
    return str(d).removeprefix("torch.").removeprefix("flow.")


# -- poisson and binomial ---------------------------------------------------------------------
# (few shapes: each (shape, dtype) of a draw compiles JAX's sampler, ~1 s)

_RATES = np.array([[0.0, 0.5, 3.0], [12.0, 0.0, 40.0]])           # float64
_STATS = np.repeat([[3.0], [40.0]], 4000, axis=1).astype(np.float32)  # Knuth / rejection
_COUNT = np.array([5.0, 10.0, 0.0, -3.0, 4.0, 6.0, 7.0])           # float64
_PROB = np.array([0.0, 1.0, 0.5, 0.5, 1.5, -0.5, np.nan])          # deterministic in PyTorch


def test_poisson_dtype_shape_fixed_points_and_gradient() -> None:
    f, t = flow.tensor(_RATES), torch.tensor(_RATES)
    got, want = flow.poisson(f), torch.poisson(t)
    assert _name(got.dtype) == _name(want.dtype) and tuple(got.shape) == tuple(want.shape)
    x = got.numpy()
    assert (x[_RATES == 0] == 0).all() and (x >= 0).all() and (x == np.round(x)).all()
    # PyTorch: the draw requires grad and its gradient is zero (PoissonBackward0)
    f = flow.tensor(_RATES, requires_grad=True)
    t = torch.tensor(_RATES, requires_grad=True)
    y, ty = flow.poisson(f), torch.poisson(t)
    assert y.requires_grad and ty.requires_grad
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_array_equal(f.grad.numpy(), t.grad.numpy())
    assert not f.grad.numpy().any()


def test_poisson_statistics() -> None:
    flow.manual_seed(0)
    got = flow.poisson(flow.tensor(_STATS))
    assert _name(got.dtype) == _name(torch.poisson(torch.tensor(_STATS[:, :2])).dtype)
    x = got.numpy().astype(np.float64)
    for row, lam in zip(x, (3.0, 40.0)):
        se = np.sqrt(lam / row.size)
        assert abs(row.mean() - lam) < 6 * se, (lam, row.mean())
        assert abs(row.var() / lam - 1) < 0.1, (lam, row.var())


def test_poisson_and_binomial_seeding() -> None:
    r = flow.tensor(_RATES)
    c, p = flow.tensor(_COUNT), flow.tensor(np.full(7, 0.5))
    flow.manual_seed(7)
    a, b1 = flow.poisson(r), flow.binomial(c, p)
    a2, b2 = flow.poisson(r), flow.binomial(c, p)
    assert not np.array_equal(a.numpy(), a2.numpy())      # the generator advanced
    assert not np.array_equal(b1.numpy(), b2.numpy())
    flow.manual_seed(7)
    np.testing.assert_array_equal(flow.poisson(r).numpy(), a.numpy())
    np.testing.assert_array_equal(flow.binomial(c, p).numpy(), b1.numpy())
    g = flow.Generator().manual_seed(3)
    first, bfirst = flow.poisson(r, generator=g), flow.binomial(c, p, generator=g)
    g.manual_seed(3)
    np.testing.assert_array_equal(flow.poisson(r, g).numpy(), first.numpy())  # positional
    np.testing.assert_array_equal(flow.binomial(c, p, g).numpy(), bfirst.numpy())

    @flow.jit
    def draw(r: flow.Tensor) -> flow.Tensor:
        return flow.poisson(r)

    flow.manual_seed(7)
    j1, j2 = draw(r), draw(r)                            # a compiled step draws anew each call
    assert not np.array_equal(j1.numpy(), j2.numpy())
    np.testing.assert_array_equal(j1.numpy(), a.numpy())  # the eager numbers of that seed
    flow.manual_seed(7)
    with flow.lazy():
        lz = flow.poisson(r)
    np.testing.assert_array_equal(lz.numpy(), a.numpy())


def test_poisson_errors_as_pytorch() -> None:
    for bad in ([-1.0, 2.0], [float("nan"), 1.0]):
        with pytest.raises(RuntimeError, match="invalid Poisson rate") as ours:
            flow.poisson(flow.tensor(bad))
        with pytest.raises(RuntimeError) as theirs:
            torch.poisson(torch.tensor(bad))
        assert str(theirs.value) in str(ours.value)
    with pytest.raises(NotImplementedError, match="poisson"):
        flow.poisson(flow.tensor([1, 2]))
    with pytest.raises(NotImplementedError):
        torch.poisson(torch.tensor([1, 2]))
    # jflow refuses an infinite rate (PyTorch returns a meaningless number there)
    with pytest.raises(RuntimeError, match="inf"):
        flow.poisson(flow.tensor([float("inf")]))
    # lazy mode: a pending rate is checked when its segment runs (no flush at the call)
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        with flow.lazy():
            flow.poisson(flow.tensor(_RATES) - 1.0).numpy()


def test_binomial_fixed_points_broadcast_and_dtype_as_pytorch() -> None:
    got = flow.binomial(flow.tensor(_COUNT), flow.tensor(_PROB))
    want = torch.binomial(torch.tensor(_COUNT), torch.tensor(_PROB))
    assert _name(got.dtype) == _name(want.dtype) == "float64"
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    c2, p2 = np.array([[5.0, 3.0]], np.float32), np.array([[0.5], [0.2]], np.float32)
    got = flow.binomial(flow.tensor(c2), flow.tensor(p2))
    with pytest.warns(UserWarning):                      # (PyTorch: a resize warning)
        want = torch.binomial(torch.tensor(c2), torch.tensor(p2))
    assert tuple(got.shape) == tuple(want.shape) == (2, 2)
    assert _name(got.dtype) == _name(want.dtype)
    assert ((got.numpy() >= 0) & (got.numpy() <= c2)).all()


def test_binomial_statistics() -> None:
    flow.manual_seed(1)
    n, p = 30.0, 0.25
    x = flow.binomial(flow.full((4000,), n), flow.full((4000,), p)).numpy().astype(np.float64)
    assert (x == np.round(x)).all() and x.min() >= 0 and x.max() <= n
    mean, var = n * p, n * p * (1 - p)
    assert abs(x.mean() - mean) < 6 * np.sqrt(var / x.size), x.mean()
    assert abs(x.var() / var - 1) < 0.1, x.var()


def test_binomial_errors_and_no_gradient_as_pytorch() -> None:
    counts, probs = np.array([5, 3]), np.array([0.5, 0.2])
    for lib in (flow, torch):
        with pytest.raises(ValueError, match="floating-point dtypes for count, got: Long"):
            lib.binomial(lib.tensor(counts), lib.tensor(probs))
    c32, p64 = np.array([5.0], np.float32), np.array([0.5])
    for lib in (flow, torch):
        with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
            lib.binomial(lib.tensor(c32), lib.tensor(p64))
    with pytest.raises(RuntimeError, match="whole, finite"):   # jflow: no draw for 2.5 trials
        flow.binomial(flow.tensor([2.5]), flow.tensor([0.5]))
    # the outputs require grad; a backward raises, as PyTorch's
    c, tc = flow.tensor(_COUNT, requires_grad=True), torch.tensor(_COUNT, requires_grad=True)
    y = flow.binomial(c, flow.tensor(np.full(7, 0.5)))
    ty = torch.binomial(tc, torch.tensor(np.full(7, 0.5)))
    assert y.requires_grad and ty.requires_grad
    with pytest.raises(NotImplementedError, match="derivative for aten::binomial"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
        ty.sum().backward()


# -- the *_copy functions -------------------------------------------------------------------

_A = np.arange(12.0).reshape(3, 4)


def _check_copy(name: str, args: tuple, *, grad: bool = True, copies: bool = True) -> None:
    """Values (each piece), gradients and aliasing (none for a ``*_copy``; the ``unsafe_``
    splits alias their input, as PyTorch's) as PyTorch's ``torch.<name>``."""
    f = flow.tensor(_A, requires_grad=grad)
    t = torch.tensor(_A, requires_grad=grad)
    got, want = getattr(flow, name)(f, *args), getattr(torch, name)(t, *args)
    gots = got if isinstance(got, tuple) else (got,)
    wants = want if isinstance(want, tuple) else (want,)
    assert len(gots) == len(wants), name
    for g, w in zip(gots, wants):
        np.testing.assert_array_equal(g.detach().numpy(), w.detach().numpy())
    if grad:
        sum(((i + 1) * g).sum() for i, g in enumerate(gots)).backward()
        sum(((i + 1) * w).sum() for i, w in enumerate(wants)).backward()
        np.testing.assert_array_equal(f.grad.numpy(), t.grad.numpy())
    with flow.no_grad():                     # a copy: writing it leaves the input as it was
        gots[0].add_(100.0)
    with torch.no_grad():
        wants[0].add_(100.0)
    np.testing.assert_array_equal(f.detach().numpy(), t.detach().numpy())
    assert np.array_equal(f.detach().numpy(), _A) == copies


def test_copies_match_pytorch() -> None:
    _check_copy("select_copy", (1, -1))
    _check_copy("slice_copy", ())
    _check_copy("slice_copy", (1, 1, None, 2))
    _check_copy("slice_copy", (0, -2))
    _check_copy("slice_copy", (1, -100, 100))
    _check_copy("slice_copy", (1, 3, 1))
    _check_copy("split_copy", (2,))
    _check_copy("split_copy", (3, 1))
    _check_copy("unsafe_split_with_sizes", ([1, 2],), copies=False)
    _check_copy("unsafe_split_with_sizes", ([3, 0, 1], 1), copies=False)
    f = flow.tensor(_A, requires_grad=True)
    d = flow.detach_copy(f)
    assert not d.requires_grad and not torch.detach_copy(torch.tensor(_A)).requires_grad
    np.testing.assert_array_equal(d.numpy(), _A)
    z = np.array([1 + 2j, 3 - 4j])
    np.testing.assert_array_equal(flow.view_as_real_copy(flow.tensor(z)).numpy(),
                                  torch.view_as_real_copy(torch.tensor(z)).numpy())
    pairs = np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(flow.view_as_complex_copy(flow.tensor(pairs)).numpy(),
                                  torch.view_as_complex_copy(torch.tensor(pairs)).numpy())
    fz, tz = flow.tensor(pairs, requires_grad=True), torch.tensor(pairs, requires_grad=True)
    for lib, x in ((flow, fz), (torch, tz)):     # a complex tensor with history, then the copy
        (lib.view_as_real_copy(lib.view_as_complex(x * 3)) * lib.tensor([1.0, 2.0])).sum() \
            .backward()
    np.testing.assert_array_equal(fz.grad.numpy(), tz.grad.numpy())
    # PyTorch gives view_as_complex_copy no derivative: refused on a tensor requiring grad
    fr, tr = flow.tensor(pairs, requires_grad=True), torch.tensor(pairs, requires_grad=True)
    for lib, x in ((flow, fr), (torch, tr)):
        with pytest.raises(RuntimeError, match="does not support automatic differentiation"):
            lib.view_as_complex_copy(x)


def test_copy_errors_as_pytorch() -> None:
    f, t = flow.tensor(_A), torch.tensor(_A)
    cases = [("slice_copy", (1, 0, 4, 0), RuntimeError, "step must be positive"),
             ("split_copy", ([1, 2],), TypeError, "split_size"),
             ("unsafe_split_with_sizes", ([1, 1],), RuntimeError,
              "split_with_sizes expects split_sizes to sum exactly to 3"),
             ("select_copy", (1, 9), IndexError, "out of range"),
             ("view_as_real_copy", (), RuntimeError, "complex"),
             ("view_as_complex_copy", (), RuntimeError, "last dimension of size 2")]
    for name, args, exc, match in cases:
        x, tx = (f, t) if name != "view_as_complex_copy" else (f[:, :3], t[:, :3])
        with pytest.raises(exc, match=match):
            getattr(flow, name)(x, *args)
        with pytest.raises(exc):
            getattr(torch, name)(tx, *args)


def test_every_dense_copy_exists_and_sparse_ones_say_why() -> None:
    missing = [n for n in dir(torch) if n.endswith("_copy") and not n.startswith("_")
               and not hasattr(flow, n)]
    sparse = {"indices_copy", "values_copy", "crow_indices_copy", "col_indices_copy",
              "ccol_indices_copy", "row_indices_copy"}
    assert set(missing) <= sparse, missing
    for name in sorted(sparse | {"smm", "spmm", "hspmm", "sspaddmm", "dsmm", "hsmm", "saddmm",
                                 "resize_as_sparse_"}):
        assert hasattr(torch, name)
        with pytest.raises(AttributeError, match="jflow has no sparse tensors"):
            getattr(flow, name)
