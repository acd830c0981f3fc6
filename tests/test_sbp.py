"""Global tensors on 8 virtual CPU devices (tests/conftest.py): placement and SBP API, boxing
round trips on 1-d and 2x4 placements, ops under SBP inference, gradients (tape and jax.grad)
and data-/tensor-parallel training against single-device references, bad input."""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

import jflow as flow
from jflow.sharding import SbpInferenceError

S, B, P = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum
P8 = flow.placement("cpu", list(range(8)))
P24 = flow.placement("cpu", [[0, 1, 2, 3], [4, 5, 6, 7]])
X = np.arange(16 * 8, dtype=np.float64).reshape(16, 8) / 10.0


def test_placement_and_sbp_api() -> None:
    assert P24.hierarchy == (2, 4) and P24.ranks == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert flow.placement.all("cpu") == P8 and P8.type == "cpu"
    t = flow.tensor(X).to_global(P24, [S(0), B])
    assert t.is_global and not t.is_local and t.placement == P24 and t.sbp == (S(0), B)
    assert "placement=oneflow.placement" in repr(t) and "split(dim=0)" in repr(t)
    np.testing.assert_array_equal(t.numpy(), X)
    local = t.to_local()  # rank 0's shard: rows 0..7
    assert local.is_local
    np.testing.assert_array_equal(local.numpy(), X[:8])
    assert flow.tensor(X).to_local().is_local
    with pytest.raises(RuntimeError, match="local tensor has no placement"):
        _ = flow.tensor(X).placement


@pytest.mark.parametrize("plc", [P8], ids=["1d"])
def test_boxing_round_trips_every_pair(plc) -> None:
    """(The 2x4 placement's 256 pairs, values exact in float64, are test_nd_boxing's: the
    same to_global on the same placement, there with each pair's bytes checked too.)"""
    kinds = [S(0), S(1), B, P]
    nds = list(itertools.product(kinds, repeat=len(plc.hierarchy)))
    base = flow.tensor(X)
    for src in nds:
        a = base.to_global(plc, src)
        np.testing.assert_allclose(a.numpy(), X, err_msg=f"to_global {src}")
        for dst in nds:
            b = a.to_global(sbp=dst)
            assert b.sbp == dst
            np.testing.assert_allclose(b.numpy(), X, rtol=1e-12, err_msg=f"{src} -> {dst}")


def test_ops_pick_signatures_without_transfer_when_they_can() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((16, 8)), rng.standard_normal((8, 16))
    cases = [((S(0), B), S(0)), ((B, S(1)), S(1)), ((S(1), S(0)), P), ((B, B), B)]
    for (sa, sb), want in cases:
        ga = flow.tensor(a).to_global(P8, sa)
        gb = flow.tensor(b).to_global(P8, sb)
        ex = flow.sharding.explain(lambda x, y: x @ y, ga, gb)
        assert ex.collectives() == [], f"{sa},{sb} moved data: {ex}"
        c = ga @ gb
        assert c.sbp == (want,)
        np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-12)
    # a reduction over a split axis gives a partial sum; elementwise ops broadcast
    g = flow.tensor(a).to_global(P24, [S(0), S(1)])
    s = g.sum(dim=0)
    assert s.sbp == (P, S(0))
    np.testing.assert_allclose(s.numpy(), a.sum(0), rtol=1e-12)
    bias = flow.tensor(b[:, 0]).to_global(P24, [B, S(0)])
    np.testing.assert_allclose((g + bias).tanh().numpy(), np.tanh(a + b[:, 0]), rtol=1e-12)
    np.testing.assert_allclose((g * 2.0 - 1.0).numpy(), a * 2 - 1, rtol=1e-12)


def _mlp(x, w1, w2):
    return (((x @ w1).tanh() @ w2) ** 2).mean()


def _data():
    rng = np.random.default_rng(1)
    return (rng.standard_normal((16, 8)), rng.standard_normal((8, 16)) * 0.3,
            rng.standard_normal((16, 4)) * 0.3)


def _train(x, w1, w2, steps, lr=0.1):
    losses = []
    for _ in range(steps):
        loss = _mlp(x, w1, w2)
        w1.grad = w2.grad = None
        loss.backward()
        with flow.no_grad():
            w1 -= w1.grad * lr
            w2 -= w2.grad * lr
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("layout", ["data_parallel", "tensor_parallel"])
def test_parallel_training_matches_single_device(layout) -> None:
    x, w1, w2 = _data()
    ref1 = flow.tensor(w1, requires_grad=True)
    ref2 = flow.tensor(w2, requires_grad=True)
    want = _train(flow.tensor(x), ref1, ref2, 3)
    if layout == "data_parallel":
        gx = flow.tensor(x).to_global(P8, S(0))
        g1 = flow.tensor(w1).to_global(P8, B).requires_grad_()
        g2 = flow.tensor(w2).to_global(P8, B).requires_grad_()
    else:  # Megatron: first weight split by columns, second by rows, partial sum reduced
        gx = flow.tensor(x).to_global(P8, B)
        g1 = flow.tensor(w1).to_global(P8, S(1)).requires_grad_()
        g2 = flow.tensor(w2).to_global(P8, S(0)).requires_grad_()
    got = _train(gx, g1, g2, 3)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    np.testing.assert_allclose(g1.detach().numpy(), ref1.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(g2.detach().numpy(), ref2.detach().numpy(), rtol=1e-10)
    ex = flow.sharding.explain(_mlp, gx, g1, g2)
    moved = ex.collectives()
    if layout == "tensor_parallel":  # the weights are never gathered
        assert not any(c[2] == "all-gather" for c in moved), str(ex)
        assert [c for c in ex if c.op == "matmul"][0].boxing == ("none", "none")


def test_jax_grad_and_jit_through_global_ops() -> None:
    x, w1, w2 = _data()
    gx = flow.tensor(x).to_global(P8, B)
    g1 = flow.tensor(w1).to_global(P8, S(1))
    g2 = flow.tensor(w2).to_global(P8, S(0))

    def loss(a, b):
        return _mlp(gx, a, b)._value

    ref = jax.grad(lambda a, b: _mlp(flow.tensor(x), flow.utils.from_jax(a),
                                     flow.utils.from_jax(b))._value, argnums=(0, 1))(w1, w2)
    with jax.set_mesh(P8.mesh):
        ga, gb = jax.grad(loss, argnums=(0, 1))(g1, g2)
    np.testing.assert_allclose(_logical(ga), ref[0], rtol=1e-10)
    np.testing.assert_allclose(_logical(gb), ref[1], rtol=1e-10)
    jitted = jax.jit(lambda a, b: _mlp(gx, a, b))
    np.testing.assert_allclose(jitted(g1, g2).item(), _mlp(flow.tensor(x), flow.tensor(w1),
                                                            flow.tensor(w2)).item(), rtol=1e-12)


def _logical(t) -> np.ndarray:
    sh = jax.sharding.NamedSharding(P8.mesh, jax.sharding.PartitionSpec())
    return np.asarray(jax.reshard(t._value, sh))


def test_bad_input_gives_clear_errors() -> None:
    t = flow.tensor(X)
    with pytest.raises(ValueError, match=r"split\(dim=2\) is out of range"):
        t.to_global(P8, S(2))
    with pytest.raises(ValueError, match="needs 2 entries"):
        t.to_global(P24, S(0))
    with pytest.raises(ValueError, match="cannot be split evenly"):
        flow.tensor(np.ones((6, 8))).to_global(P8, S(0))
    with pytest.raises(ValueError, match="needs both placement= and sbp="):
        t.to_global(P8)
    with pytest.raises(TypeError, match="sbp must be a flow.sbp value"):
        t.to_global(P8, "split")
    a = t.to_global(P8, B)
    b = t.to_global(flow.placement("cpu", [0, 1, 2, 3]), B)
    with pytest.raises(ValueError, match="op 'add': inputs are on different placements"):
        _ = a + b
    with pytest.raises(ValueError, match="op 'add': input 1 is a local tensor"):
        _ = a + t
    with pytest.raises(SbpInferenceError, match="op 'matmul'"):
        from jflow.sharding.execute import choose_signature
        choose_signature(flow.ops.get("matmul"), [], [(B,), (B,)],
                         [jax.core.ShapedArray((2, 2), np.float64)] * 2, P8)


def test_factories_with_placement_and_sbp() -> None:
    flow.manual_seed(3)
    want = flow.randn(8, 4).numpy()
    flow.manual_seed(3)
    g = flow.randn(8, 4, placement=P8, sbp=S(0))  # the same logical draw as a local one
    assert g.sbp == (S(0),) and g.placement == P8
    np.testing.assert_array_equal(g.numpy(), want)
    z = flow.zeros(4, 8, placement=P24, sbp=[B, S(1)], requires_grad=True)
    assert z.requires_grad and z.is_leaf and z.sbp == (B, S(1))
    o = flow.ones_like(z)  # keeps placement and sbp
    assert o.sbp == (B, S(1)) and o.numpy().sum() == 32
    a = flow.arange(16, placement=P8, sbp=S(0))
    np.testing.assert_array_equal(a.numpy(), np.arange(16))
    t = flow.tensor([[1.0, 2.0]] * 8, placement=P8, sbp=P)
    np.testing.assert_array_equal(t.numpy(), [[1.0, 2.0]] * 8)
    with pytest.raises(ValueError, match="flow.zeros: a global tensor needs both"):
        flow.zeros(8, placement=P8)


def test_regressions_found_by_the_benchmark() -> None:
    # to_global of a tensor that requires grad stays global (and differentiable)
    x = flow.tensor(X, requires_grad=True)
    g = x.to_global(P8, S(0))
    assert g.is_global and g.grad_fn is not None
    (g * g).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * X)
    # backward on a 2-d placement through saved partial sums
    rng = np.random.default_rng(2)
    a, w1, w2 = (rng.standard_normal((8, 8)) for _ in range(3))
    ga = flow.tensor(a).to_global(P24, [S(0), B])
    g1 = flow.tensor(w1).to_global(P24, [B, S(1)]).requires_grad_()
    g2 = flow.tensor(w2).to_global(P24, [B, S(0)]).requires_grad_()
    ((ga @ g1 @ g2) ** 2).sum().backward()
    np.testing.assert_allclose(g1.grad.numpy(), 2 * a.T @ (a @ w1 @ w2) @ w2.T, rtol=1e-10)
    # a scalar operand first seen under jax.jit is not cached as a tracer
    gx = flow.tensor(X).to_global(P8, S(0))
    jax.jit(lambda t: t * 0.25)(gx)
    np.testing.assert_allclose((gx * 0.25).numpy(), X * 0.25)


def test_partial_sum_of_a_bool_tensor_is_refused_by_jflow() -> None:
    """A bool partial sum has no meaning (JAX's own error was 'add does not accept bool')."""
    flags = flow.tensor([True, False, True, True, False, True, True, False])
    with pytest.raises(TypeError, match="to_global: sbp partial_sum is not defined for a bool"):
        flags.to_global(P8, flow.sbp.partial_sum)
    split = flags.to_global(P8, flow.sbp.split(0))
    with pytest.raises(TypeError, match="partial_sum is not defined for a bool"):
        split.to_global(sbp=flow.sbp.partial_sum)
    ints = flags.to(flow.int64).to_global(P8, flow.sbp.partial_sum)  # the suggested way works
    assert int(ints.sum().numpy()) == 5  # the logical value is kept
