"""Pallas kernels (jflow/kernels/pallas) in interpret mode on CPU against the xla kernels:
forward and gradients (flow.autograd) on shapes with partial blocks, float32 and bfloat16;
selection (the pallas kernel is the one lowered, the xla kernel outside the conditions);
and a Pallas kernel running sharded under SBP. Shapes are tiny: interpret mode is slow."""

from __future__ import annotations

from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow
from jflow.kernels import select_kernel
from jflow.kernels.pallas import LAUNCHES, interpret_enabled

F = flow.nn.functional
BF16 = flow.bfloat16
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), "bf16": dict(rtol=2e-2, atol=2e-2)}


@pytest.fixture
def pallas_interpret() -> Iterator[None]:
    """Pallas kernels selectable on CPU (interpret mode) for the test's duration."""
    with flow.config.pallas_interpret():
        yield


def _t(a: np.ndarray, dtype=None, grad: bool = False) -> flow.Tensor:
    t = flow.tensor(a)
    if dtype is not None:
        t = t.to(dtype)
    return t.requires_grad_(grad) if grad else t


def _np(t: flow.Tensor) -> np.ndarray:
    return np.asarray(t.float().detach().numpy() if t.dtype == BF16 else t.detach().numpy(),
                      np.float64)


def _run(fn, arrays, dtype, ws):
    """Outputs and input gradients (of sum(out * w)) of ``fn`` on fresh tensors."""
    ins = [_t(a, dtype, grad=True) for a in arrays]
    out = fn(*ins)
    loss = None
    for o, w in zip(out if isinstance(out, tuple) else (out,), ws):
        term = (o * _t(w, o.dtype)).sum()
        loss = term if loss is None else loss + term
    grads = flow.autograd.grad(loss, ins)
    outs = out if isinstance(out, tuple) else (out,)
    return [_np(o) for o in outs] + [_np(g) for g in grads]


def _compare(fn, arrays, out_shapes, kernels, dtype=None):
    rng = np.random.default_rng(5)
    ws = [rng.standard_normal(s).astype(np.float32) for s in out_shapes]
    want = _run(fn, arrays, dtype, ws)
    before = {k: LAUNCHES[k] for k in kernels}
    with flow.config.pallas_interpret():
        got = _run(fn, arrays, dtype, ws)
    for k in kernels:
        assert LAUNCHES[k] > before[k], f"the Pallas kernel {k} was not lowered"
    tol = TOL["bf16"] if dtype == BF16 else TOL[np.float32]
    for i, (a, b) in enumerate(zip(got, want)):
        np.testing.assert_allclose(a, b, err_msg=f"output/grad {i}", **tol)


_rng = np.random.default_rng(0)


def _x(*shape, scale=1.0):
    return (_rng.standard_normal(shape) * scale).astype(np.float32)


def test_softmax_and_log_softmax() -> None:
    x = _x(3, 5, 37, scale=3.0)                   # 15 rows of 37: partial row and column blocks
    _compare(lambda t: (F.softmax(t, dim=-1), F.log_softmax(t, dim=2)), [x],
             [x.shape, x.shape], ["softmax_pallas", "log_softmax_pallas",
                                  "softmax_grad_pallas", "log_softmax_grad_pallas"])


def test_softmax_bf16() -> None:
    x = _x(9, 37, scale=3.0)
    _compare(lambda t: F.softmax(t, dim=-1), [x], [x.shape],
             ["softmax_pallas", "softmax_grad_pallas"], BF16)


def test_layer_norm_and_rms_norm() -> None:
    x, w, b = _x(10, 37, scale=2.0) + 1.0, _x(37), _x(37)
    _compare(lambda t, wt, bt: (F.layer_norm(t, (37,), wt, bt), F.rms_norm(t, (37,), wt)),
             [x, w, b], [x.shape, x.shape], ["layer_norm_pallas", "rms_norm_pallas",
                                             "layer_norm_grad_pallas", "rms_norm_grad_pallas"])


def test_layer_norm_bf16() -> None:
    x, w, b = _x(10, 37, scale=2.0) + 1.0, _x(37), _x(37)
    _compare(lambda t, wt, bt: F.layer_norm(t, (37,), wt, bt), [x, w, b], [x.shape],
             ["layer_norm_pallas", "layer_norm_grad_pallas"], BF16)


def test_norms_without_affine_and_several_normalised_axes() -> None:
    x = _x(2, 3, 12) + 0.5                        # begin_norm_axis 1: rows of 36
    _compare(lambda t: (F.layer_norm(t, (3, 12)), F.rms_norm(t, (3, 12))), [x],
             [x.shape, x.shape], ["layer_norm_pallas", "rms_norm_pallas",
                                  "layer_norm_grad_pallas", "rms_norm_grad_pallas"])


def test_norm_statistics_match() -> None:
    op = flow.ops.get("layer_norm")
    x = _t(_x(5, 20))
    want = [o.numpy() for o in op(x, None, None, begin_norm_axis=1, eps=1e-5)]
    with flow.config.pallas_interpret():
        got = [o.numpy() for o in op(x, None, None, begin_norm_axis=1, eps=1e-5)]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_fused_bias_add_activation() -> None:
    x, b = _x(9, 37, scale=2.0), _x(37)
    _compare(lambda t, bt: tuple(flow._C.fused_bias_add_activation(t, bt, activation=a)
                                 for a in ("gelu", "gelu_tanh", "silu")),
             [x, b], [x.shape] * 3, ["fused_bias_add_activation_pallas"])


def test_fused_bias_add_activation_bf16() -> None:
    x, b = _x(4, 3, 20, scale=2.0), _x(20)
    _compare(lambda t, bt: flow._C.fused_bias_add_activation(t, bt, activation="gelu"), [x, b],
             [x.shape], ["fused_bias_add_activation_pallas"], BF16)


@pytest.mark.parametrize("dtype", [None, BF16], ids=["f32", "bf16"])
def test_cross_entropy_large_vocab_path(dtype) -> None:
    x = _x(7, 150, scale=2.0)                     # 3 vocabulary blocks of 64, the last partial
    labels = np.array([0, 149, 3, -100, 64, 63, 128])
    cases = (("mean", ()),) if dtype is None else (("none", (7,)),)
    for reduction, shape in cases:
        _compare(lambda t, r=reduction: F.cross_entropy(t, flow.tensor(labels), reduction=r), [x],
                 [shape], ["sparse_softmax_cross_entropy_pallas",
                           "sparse_softmax_cross_entropy_grad_pallas"], dtype)


def test_cross_entropy_matches_the_log_softmax_path() -> None:
    x = _t(_x(6, 40), grad=True)
    labels = flow.tensor(np.array([1, 39, -100, 0, 7, 7]))
    a = F.cross_entropy(x, labels)                 # sparse_softmax_cross_entropy
    (ga,) = flow.autograd.grad(a, [x])
    # the general path (a weight of ones takes it), same value
    b = F.cross_entropy(x, labels, weight=flow.ones(40))
    (gb,) = flow.autograd.grad(b, [x])
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(ga.numpy(), gb.numpy(), rtol=1e-5, atol=1e-7)


def test_second_derivative_through_the_grad_ops() -> None:
    x = _t(_x(4, 37), grad=True)
    with flow.config.pallas_interpret():
        y = F.softmax(x, dim=-1)
        (g,) = flow.autograd.grad((y * y).sum(), [x], create_graph=True)
        (h,) = flow.autograd.grad(g.sum(), [x])
    y0 = F.softmax(x, dim=-1)
    (g0,) = flow.autograd.grad((y0 * y0).sum(), [x], create_graph=True)
    (h0,) = flow.autograd.grad(g0.sum(), [x])
    np.testing.assert_allclose(h.numpy(), h0.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("causal, shapes, dtype", [
    (False, (20, 37, 64), None),       # L != S, partial blocks of 16 on both
    (True, (20, 18, 128), None),
    (True, (24, 24, 64), BF16),
], ids=["noncausal-e64", "causal-e128", "causal-bf16"])
def test_flash_attention(causal, shapes, dtype) -> None:
    n_l, n_s, e = shapes
    q, k, v = _x(1, 2, n_l, e), _x(1, 2, n_s, e), _x(1, 2, n_s, e)
    _compare(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=causal),
             [q, k, v], [(1, 2, n_l, e)], ["scaled_dot_product_attention_pallas",
                                           "scaled_dot_product_attention_grad_pallas"], dtype)


def test_flash_attention_conditions() -> None:
    op = flow.ops.get("scaled_dot_product_attention")
    outs = [_aval((2, 8, 64), np.float32), _aval((2, 8), np.float32)]

    def pick(e, mask=None, dt=np.float16):
        q = _aval((2, 8, e), dt)
        ins = [q, q, q] + ([] if mask is None else [mask])
        lay = None if mask is None else op.layout_of((1, 1, 1, 1))
        return select_kernel(op, "cuda", ins, outs, lay)
    assert pick(64).backend == "pallas" and pick(128).backend == "pallas"
    assert pick(96).backend == "xla"                                   # head dim
    assert pick(64, dt=np.float64).backend == "xla"                    # dtype
    assert pick(64, mask=_aval((8, 8), np.bool_)).backend == "xla"    # a mask


# ---- selection -------------------------------------------------------------------------------

def _aval(shape, dtype):
    return jax.core.ShapedArray(shape, np.dtype(dtype))


def test_selection_on_cuda_follows_the_conditions() -> None:
    op = flow.ops.get("softmax")
    pick = lambda shape, dt: select_kernel(op, "cuda", [_aval(shape, dt)],  # noqa: E731
                                           [_aval(shape, dt)], None)
    assert pick((8, 8192), np.float32).backend == "pallas"
    assert pick((8, 64), jnp.bfloat16).name == "softmax_pallas"
    assert pick((8, 64), np.float64).backend == "xla"      # dtype outside the condition
    assert pick((8, 40000), np.float32).backend == "xla"   # a row wider than one block
    assert pick((0, 64), np.float32).backend == "xla"      # empty
    # on CPU the Pallas twin is chosen only in interpret mode
    cpu = lambda: select_kernel(op, "cpu", [_aval((4, 8), np.float32)],  # noqa: E731
                                [_aval((4, 8), np.float32)], None)
    assert not interpret_enabled() and cpu().backend == "xla"
    with flow.config.pallas_interpret():
        assert cpu().name == "softmax_pallas_interpret"


def test_fallbacks_do_not_launch_pallas(pallas_interpret) -> None:
    before = LAUNCHES.copy()
    x64 = flow.tensor(np.random.default_rng(1).standard_normal((4, 9)))   # float64: xla
    F.softmax(x64, dim=-1).numpy()
    F.layer_norm(x64, (9,)).numpy()
    x = flow.tensor(_x(4, 9))
    np.testing.assert_allclose(F.softmax(x, dim=0).numpy(),        # not the last axis: xla
                               jax.nn.softmax(np.asarray(x.numpy()), axis=0), rtol=1e-6)
    assert LAUNCHES == before
    F.softmax(x, dim=-1).numpy()
    assert LAUNCHES["softmax_pallas"] == before["softmax_pallas"] + 1


def test_switch_clears_compiled_executables() -> None:
    x = flow.tensor(_x(3, 11))
    F.layer_norm(x, (11,)).numpy()                 # compiled with the xla kernel
    n = LAUNCHES["layer_norm_pallas"]
    with flow.config.pallas_interpret():
        F.layer_norm(x, (11,)).numpy()             # same call: lowered again, Pallas now
    assert LAUNCHES["layer_norm_pallas"] == n + 1
    F.layer_norm(x, (11,)).numpy()
    assert LAUNCHES["layer_norm_pallas"] == n + 1  # back on xla
    assert flow.config.enable_pallas_interpret(True) is False   # returns the previous setting
    try:
        assert flow.config.pallas_interpret_enabled()
        F.layer_norm(x, (11,)).numpy()
        assert LAUNCHES["layer_norm_pallas"] == n + 2
    finally:
        assert flow.config.enable_pallas_interpret(False) is True


def test_kernel_under_jit_and_vmap(pallas_interpret) -> None:
    op = flow.ops.get("softmax")
    n = LAUNCHES["softmax_pallas"]
    hlo = jax.jit(lambda v: op.apply(flow.utils.from_jax(v), dim=-1)._value).lower(
        jnp.ones((4, 8), jnp.float32)).as_text()
    assert LAUNCHES["softmax_pallas"] == n + 1
    assert "while" in hlo                          # the interpreter's grid loop
    plain = jax.jit(lambda v: jax.nn.softmax(v)).lower(jnp.ones((4, 8), jnp.float32)).as_text()
    assert "while" not in plain
    x = _x(3, 4, 8)                                 # under vmap: per-example kernel, batched grid
    got = jax.vmap(lambda t: op.apply(t, dim=-1))(_t(x)).numpy()
    np.testing.assert_allclose(got, jax.nn.softmax(x, axis=-1), rtol=1e-6, atol=1e-7)


# ---- the compiled (Triton) path, lowered for cuda without a GPU ---------------------------------

TRITON = "__gpu$xla.gpu.triton"


def _cuda_module(fn, *avals) -> str:
    """StableHLO of ``fn`` exported for cuda: jflow's cuda lowerings pick the kernels, and
    Pallas lowers them to Triton IR (compiling that to PTX needs a GPU)."""
    exp = jax.export.export(jax.jit(fn), platforms=["cuda"], disabled_checks=[
        jax.export.DisabledSafetyCheck.custom_call(TRITON)])(*avals)
    return exp.mlir_module()


def _j(v):
    return flow.utils.from_jax(v)


def _loss_grad(f):
    """jax.grad of sum(f(inputs)^2) over every input (jflow ops inside; squared so that the
    forward output is needed)."""
    def sq(*a):
        y = f(*[_j(x) for x in a])
        return (y * y).sum()._value

    def g(*vs):
        return jax.grad(sq,
                        argnums=tuple(range(len(vs))))(*vs)
    return g


_A = jax.ShapeDtypeStruct
_CUDA_CASES = {
    "softmax": (lambda x: F.softmax(x, dim=-1), [_A((100, 77), jnp.bfloat16)], 2),
    "log_softmax": (lambda x: F.log_softmax(x, dim=-1), [_A((100, 77), jnp.float16)], 2),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (77,), w, b),
                   [_A((100, 77), jnp.bfloat16)] + [_A((77,), jnp.bfloat16)] * 2, 2),
    "rms_norm": (lambda x, w: F.rms_norm(x, (77,), w),
                 [_A((3, 50, 77), jnp.float32), _A((77,), jnp.float32)], 2),
    "bias_gelu": (lambda x, b: flow._C.fused_bias_add_activation(x, b, activation="gelu"),
                  [_A((100, 77), jnp.bfloat16), _A((77,), jnp.bfloat16)], 1),
    "attention": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                  [_A((2, 3, 100, 64), jnp.bfloat16)] * 3, 3),
}


@pytest.mark.parametrize("case", sorted(_CUDA_CASES))
def test_cuda_lowering_selects_triton_kernels_forward_and_backward(case) -> None:
    f, avals, n_grad_calls = _CUDA_CASES[case]
    fwd = _cuda_module(lambda *a: f(*[_j(x) for x in a])._value, *avals)
    assert fwd.count(TRITON) == 1
    bwd = _cuda_module(_loss_grad(f), *avals)
    assert bwd.count(TRITON) == n_grad_calls          # forward + the grad op's kernel(s)
    f64 = [_A(a.shape, jnp.float64) for a in avals]
    assert TRITON not in _cuda_module(lambda *a: f(*[_j(x) for x in a])._value, *f64)


def test_cuda_lowering_of_float32_attention_follows_the_matmul_precision() -> None:
    """Float32 attention on a GPU: exact products (PyTorch's default precision) take the xla
    kernel (Triton's exact float32 dot ran the flash kernels at ~1 TFLOP/s on an H200); once
    TF32 is allowed, the Pallas kernels, forward and backward."""
    f = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
    avals = [_A((2, 3, 100, 64), jnp.float32)] * 3
    fwd = lambda *a: f(*[_j(x) for x in a])._value  # noqa: E731
    assert jax.config.jax_default_matmul_precision is None
    assert TRITON not in _cuda_module(fwd, *avals)
    assert TRITON not in _cuda_module(_loss_grad(f), *avals)
    with jax.default_matmul_precision("tensorfloat32"):
        assert _cuda_module(fwd, *avals).count(TRITON) == 1
        assert _cuda_module(_loss_grad(f), *avals).count(TRITON) == 3
    with jax.default_matmul_precision("float32"):
        assert TRITON not in _cuda_module(fwd, *avals)


def test_cuda_lowering_of_cross_entropy() -> None:
    logits, labels = _A((64, 1000), jnp.bfloat16), _A((64,), jnp.int64)

    def loss(x, t):
        return F.cross_entropy(_j(x), _j(t))._value
    assert _cuda_module(loss, logits, labels).count(TRITON) == 1
    assert _cuda_module(jax.grad(loss), logits, labels).count(TRITON) == 2


# ---- SBP ------------------------------------------------------------------------------------

def test_pallas_kernel_runs_sharded(pallas_interpret) -> None:
    plc = flow.placement("cpu", [0, 1, 2, 3])
    x, w, b = _x(8, 37), _x(37), _x(37)
    want = F.layer_norm(_t(x), (37,), _t(w), _t(b)).numpy()
    n = LAUNCHES["layer_norm_pallas"]
    gx = _t(x).to_global(plc, flow.sbp.split(0))
    gw, gb = (_t(a).to_global(plc, flow.sbp.broadcast) for a in (w, b))
    y = F.layer_norm(gx, (37,), gw, gb)
    assert y.is_global and y.sbp == (flow.sbp.split(0),)
    assert LAUNCHES["layer_norm_pallas"] > n
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-6)
    logits = _t(_x(8, 70)).to_global(plc, flow.sbp.split(0))
    labels = flow.tensor(np.arange(8) * 7).to_global(plc, flow.sbp.split(0))
    loss = F.cross_entropy(logits, labels, reduction="none")
    ref = F.cross_entropy(_t(logits.numpy()), flow.tensor(np.arange(8) * 7), reduction="none")
    np.testing.assert_allclose(loss.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
