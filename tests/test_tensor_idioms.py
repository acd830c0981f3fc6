"""PyTorch idioms on tensors: ``type()``/``is_cuda``, ``new_*`` factories, random sampling
(``randperm``, ``multinomial``, ``bernoulli`` and the in-place fills), ``addcmul``/``addcdiv``/
``lerp`` and a 0-d tensor ``alpha`` for ``add``/``sub`` (an optimizer's traced lr)."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

N = 20000  # large draws for the statistical checks (tolerances are several sigma wide)
RS = np.random.RandomState(0)
A = RS.randn(3, 4).astype(np.float32)
B = RS.randn(3, 4).astype(np.float32)
C = (RS.rand(3, 4) + 0.5).astype(np.float32)


def _gen(seed: int = 0) -> flow.Generator:
    return flow.Generator().manual_seed(seed)


# -- type strings, is_cuda, new_* -----------------------------------------------------------

@pytest.mark.parametrize("name", ["float32", "float64", "float16", "bfloat16", "int64", "int32",
                                  "int16", "int8", "uint8", "bool"])
def test_type_strings_match_torch(name):
    torch = pytest.importorskip("torch")
    t = flow.zeros(2, dtype=getattr(flow, "bool" if name == "bool" else name))
    assert t.type() == torch.zeros(2, dtype=getattr(torch, name)).type()
    assert flow.ones(2).type(t.type()).dtype == t.dtype   # the string round-trips


def test_type_conversions_and_is_cuda():
    x = flow.ones(2, 3)
    assert x.type(flow.float32) is x and x.type("torch.FloatTensor") is x
    assert x.type(flow.int64).dtype == flow.int64
    assert x.type("torch.cuda.HalfTensor").dtype == flow.float16
    assert x.type("torch.LongTensor").dtype == flow.int64
    assert x.type(float).dtype == flow.float64
    with pytest.raises(ValueError, match="invalid type"):
        x.type("torch.NotATensor")
    assert x.is_cuda == (x.device.type == "cuda")
    assert x.cpu().is_cuda is False and x.device.type in ("cpu", "cuda", "rocm", "tpu")


def test_new_factories_match_torch():
    torch = pytest.importorskip("torch")
    for dt in ("float64", "int32"):
        j, t = flow.zeros(2, dtype=getattr(flow, dt)), torch.zeros(2, dtype=getattr(torch, dt))
        pairs = [(j.new_zeros(2, 3), t.new_zeros(2, 3)), (j.new_ones((3,)), t.new_ones((3,))),
                 (j.new_full((2, 2), 7), t.new_full((2, 2), 7)),
                 (j.new_empty(4).zero_(), t.new_empty(4).zero_()),
                 (j.new_tensor([[1.7, -2.2]]), t.new_tensor([[1.7, -2.2]])),
                 (j.new_zeros(2, dtype=flow.int8), t.new_zeros(2, dtype=torch.int8))]
        for a, b in pairs:
            assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    p = flow.nn.Parameter(flow.ones(2, dtype=flow.float64))
    for out in (p.new_zeros(3), p.new_ones(3), p.new_full((3,), 2.0), p.new_tensor([1.0])):
        assert type(out) is flow.Tensor and out.dtype == flow.float64
        assert not out.requires_grad and out.device == p.device
    assert p.new_zeros(2, requires_grad=True).requires_grad


# -- random --------------------------------------------------------------------------------

def test_randperm_is_a_seeded_permutation():
    p = flow.randperm(N, generator=_gen(1))
    assert p.dtype == flow.int64 and tuple(p.shape) == (N,)
    np.testing.assert_array_equal(np.sort(p.numpy()), np.arange(N))
    np.testing.assert_array_equal(p.numpy(), flow.randperm(N, generator=_gen(1)).numpy())
    assert not np.array_equal(p.numpy(), flow.randperm(N, generator=_gen(2)).numpy())
    assert flow.randperm(5, dtype=flow.float32).dtype == flow.float32
    assert flow.randperm(0).numel() == 0
    # each position is uniform over 0..n-1: the mean of position 0 over many permutations
    first = np.array([flow.randperm(10, generator=_gen(s)).numpy()[0] for s in range(400)])
    assert abs(first.mean() - 4.5) < 0.6


def test_multinomial_frequencies_and_distinct_without_replacement():
    w = flow.tensor([1.0, 2.0, 0.0, 5.0])
    s = flow.multinomial(w, N, replacement=True, generator=_gen())
    assert s.dtype == flow.int64 and tuple(s.shape) == (N,)
    freq = np.bincount(s.numpy(), minlength=4) / N
    np.testing.assert_allclose(freq, [0.125, 0.25, 0.0, 0.625], atol=0.015)
    rows = flow.tensor(RS.rand(64, 10).astype(np.float32)).multinomial(10, generator=_gen())
    for r in rows.numpy():
        assert sorted(r) == list(range(10))          # distinct indices, all categories
    two = flow.multinomial(w, 3, generator=_gen(3))   # never the zero-weight category
    assert 2 not in two.numpy().tolist() and len(set(two.numpy().tolist())) == 3
    # the first draw without replacement follows the weights
    first = flow.multinomial(flow.tensor([[1.0, 3.0]] * N), 2, generator=_gen()).numpy()[:, 0]
    assert abs(first.mean() - 0.75) < 0.015
    np.testing.assert_array_equal(s.numpy(), flow.multinomial(w, N, True,
                                                             generator=_gen()).numpy())
    with pytest.raises(RuntimeError, match="not enough"):
        flow.multinomial(w, 4)
    with pytest.raises(RuntimeError, match="n_sample > prob_dist"):
        flow.multinomial(w, 5)
    with pytest.raises(RuntimeError, match="element < 0"):
        flow.multinomial(flow.tensor([1.0, -1.0]), 1)


def test_bernoulli_forms():
    probs = flow.full((N,), 0.3, dtype=flow.float64)
    b = flow.bernoulli(probs, generator=_gen())
    assert b.dtype == flow.float64 and set(np.unique(b.numpy())) <= {0.0, 1.0}
    assert abs(b.numpy().mean() - 0.3) < 0.015
    assert abs(flow.zeros(N).bernoulli(0.8, generator=_gen()).numpy().mean() - 0.8) < 0.015
    np.testing.assert_array_equal(flow.bernoulli(flow.tensor([0.0, 1.0] * 4)).numpy(),
                                  [0.0, 1.0] * 4)
    np.testing.assert_array_equal(b.numpy(), probs.bernoulli(generator=_gen()).numpy())
    x = flow.zeros(N, dtype=flow.int64).bernoulli_(0.25, generator=_gen())
    assert x.dtype == flow.int64 and abs(x.numpy().mean() - 0.25) < 0.015
    y = flow.zeros(2, N).bernoulli_(flow.tensor([[0.0], [1.0]]))
    np.testing.assert_array_equal(y.numpy().mean(axis=1), [0.0, 1.0])
    with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
        flow.bernoulli(flow.tensor([1.5]))


@pytest.mark.parametrize("dtype", [flow.float32, flow.float64])
def test_inplace_fills_statistics(dtype):
    x = flow.empty(N, dtype=dtype)
    v = x.normal_(2.0, 3.0, generator=_gen()).numpy()
    assert x.dtype == dtype and abs(v.mean() - 2.0) < 0.1 and abs(v.std() - 3.0) < 0.1
    v = x.uniform_(-1.0, 3.0, generator=_gen()).numpy()
    assert v.min() >= -1.0 and v.max() < 3.0
    assert abs(v.mean() - 1.0) < 0.05 and abs(v.var() - 16 / 12) < 0.05
    v = x.exponential_(2.0, generator=_gen()).numpy()
    assert v.min() >= 0 and abs(v.mean() - 0.5) < 0.02 and abs(v.var() - 0.25) < 0.03
    v = flow.empty(N, dtype=dtype).uniform_(**{"from": 5.0, "to": 6.0}).numpy()
    assert 5.0 <= v.min() and v.max() < 6.0
    with pytest.raises(RuntimeError):
        flow.zeros(2, dtype=flow.int64).normal_()
    with pytest.raises(RuntimeError, match="std >= 0"):
        x.normal_(0.0, -1.0)


def test_seeded_fills_are_deterministic_and_advance():
    a = flow.empty(3, 4).normal_(generator=_gen(5)).numpy()
    np.testing.assert_array_equal(a, flow.empty(3, 4).normal_(generator=_gen(5)).numpy())
    g = _gen(5)
    first = flow.empty(3, 4).normal_(generator=g).numpy()
    assert not np.array_equal(first, flow.empty(3, 4).normal_(generator=g).numpy())
    flow.manual_seed(7)
    b = flow.empty(3, 4).uniform_().numpy()
    flow.manual_seed(7)
    np.testing.assert_array_equal(b, flow.empty(3, 4).uniform_().numpy())


def test_random_fills_write_through_views():
    for fill in (lambda v: v.normal_(), lambda v: v.uniform_(5.0, 6.0),
                 lambda v: v.exponential_(), lambda v: v.bernoulli_(1.0)):
        x = flow.tensor(A)
        fill(x[0])
        got = x.numpy()
        assert not np.array_equal(got[0], A[0])
        np.testing.assert_array_equal(got[1:], A[1:])
    x = flow.tensor(A)
    x[:, 1].uniform_(10.0, 11.0)                       # a strided column
    assert (x.numpy()[:, 1] >= 10).all()
    np.testing.assert_array_equal(np.delete(x.numpy(), 1, axis=1), np.delete(A, 1, axis=1))


def test_random_fills_under_jit_are_not_frozen():
    @flow.jit
    def fill(t):
        t.normal_()
        return t * 1

    a, b = fill(flow.zeros(3, 4)).numpy(), fill(flow.zeros(3, 4)).numpy()
    assert not np.array_equal(a, b) and np.abs(a).sum() > 0


# -- addcmul, addcdiv, lerp --------------------------------------------------------------------

def test_addcmul_addcdiv_lerp_match_torch():
    torch = pytest.importorskip("torch")
    ja, jb, jc = flow.tensor(A), flow.tensor(B), flow.tensor(C)
    ta, tb, tc = torch.tensor(A), torch.tensor(B), torch.tensor(C)
    cases = [
        (flow.addcmul(ja, jb, jc, value=0.5), torch.addcmul(ta, tb, tc, value=0.5)),
        (ja.addcmul(jb, jc[0]), ta.addcmul(tb, tc[0])),
        (flow.addcdiv(ja, jb, jc, value=-2), torch.addcdiv(ta, tb, tc, value=-2)),
        (flow.lerp(ja, jb, 0.3), torch.lerp(ta, tb, 0.3)),
        (ja.lerp(jb, 0.8), ta.lerp(tb, 0.8)),
        (flow.lerp(ja, jb, jc - 0.5), torch.lerp(ta, tb, tc - 0.5)),
        (flow.addcmul(flow.tensor(A, dtype=flow.float64), jb, jc),
         torch.addcmul(torch.tensor(A, dtype=torch.float64), tb, tc)),
        (flow.addcmul(flow.tensor([1, 2]), flow.tensor([3, 4]), flow.tensor([5, 6]), value=2),
         torch.addcmul(torch.tensor([1, 2]), torch.tensor([3, 4]), torch.tensor([5, 6]),
                       value=2)),
    ]
    for j, t in cases:
        assert str(j.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_allclose(j.numpy(), t.numpy(), rtol=1e-6, atol=1e-6)
    for name, rest, kw in [("addcmul_", (C[1],), {"value": 0.25}),
                           ("addcdiv_", (C[1],), {"value": 0.25}), ("lerp_", (0.7,), {})]:
        j, t = flow.tensor(A), torch.tensor(A)               # row 1 written through a view
        jr = tuple(flow.tensor(r) if isinstance(r, np.ndarray) else r for r in rest)
        tr = tuple(torch.tensor(r) if isinstance(r, np.ndarray) else r for r in rest)
        getattr(j[1], name)(flow.tensor(B[1]), *jr, **kw)
        getattr(t[1], name)(torch.tensor(B[1]), *tr, **kw)
        np.testing.assert_allclose(j.numpy(), t.numpy(), rtol=1e-6, atol=1e-6)
    with pytest.raises(RuntimeError, match="Integer division"):
        flow.addcdiv(ja, flow.tensor([1]), flow.tensor([2]))
    with pytest.raises(RuntimeError, match="integral"):
        flow.addcmul(flow.tensor([1]), flow.tensor([1]), flow.tensor([1]), value=0.5)
    with pytest.raises(RuntimeError, match="expected dtype"):
        flow.lerp(ja, flow.tensor(B, dtype=flow.float64), 0.5)


def test_addcmul_keeps_autograd():
    a = flow.tensor(A, requires_grad=True)
    b = flow.tensor(B, requires_grad=True)
    flow.addcmul(a, b, flow.tensor(C), value=2.0).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.ones_like(A))
    np.testing.assert_allclose(b.grad.numpy(), 2 * C, rtol=1e-6)


# -- a 0-d tensor alpha ----------------------------------------------------------------------

def test_tensor_alpha_matches_number_alpha():
    x, y = flow.tensor(A), flow.tensor(B)
    for fn in ("add", "sub"):
        for alpha in (0.5, -3.0):
            want = getattr(x, fn)(y, alpha=alpha).numpy()
            np.testing.assert_allclose(getattr(x, fn)(y, alpha=flow.tensor(alpha)).numpy(),
                                       want, rtol=1e-6)
            z = flow.tensor(A)
            assert getattr(z, fn + "_")(y, alpha=flow.tensor(alpha)) is z
            np.testing.assert_allclose(z.numpy(), want, rtol=1e-6)
    # alpha takes no part in promotion: a float64 alpha leaves a float32 result
    assert x.add(y, alpha=flow.tensor(0.5, dtype=flow.float64)).dtype == flow.float32
    assert x.add(2.0, alpha=flow.tensor(0.5)).dtype == flow.float32
    i = flow.tensor([1, 2])
    np.testing.assert_array_equal(i.add(i, alpha=flow.tensor(3)).numpy(), [4, 8])
    assert i.add(i, alpha=flow.tensor(3)).dtype == flow.int64
    with pytest.raises(RuntimeError, match="integral"):
        i.add(i, alpha=flow.tensor(0.5))
    with pytest.raises(RuntimeError, match="0-dimensional"):
        x.add(y, alpha=flow.ones(1))
    r = flow.tensor(A)
    r[0].add_(y[0], alpha=flow.tensor(2.0))           # through a view
    np.testing.assert_allclose(r.numpy()[0], A[0] + 2 * B[0], rtol=1e-6)
    np.testing.assert_array_equal(r.numpy()[1:], A[1:])


def test_tensor_alpha_optimizer_step_under_jit_equals_eager():
    """``p.add_(g, alpha=-lr)`` with the lr a 0-d tensor: a traced input under flow.jit."""
    @flow.jit
    def step(p, g, lr):
        p.add_(g, alpha=-lr)
        return p.sum()

    pj, pe = flow.tensor(A), flow.nn.Parameter(flow.tensor(A))
    for lr in (0.1, 0.05, 0.2):
        lr_t = flow.tensor(lr)
        step(pj, flow.tensor(B), lr_t)
        with flow.no_grad():
            pe.add_(flow.tensor(B), alpha=-lr_t)
    np.testing.assert_allclose(pj.numpy(), pe.detach().numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(pe.detach().numpy(), A - 0.35 * B, rtol=1e-5, atol=1e-6)
    assert step.trace_count == 1                      # a new lr value does not retrace
