"""What only a GPU can check: the Pallas kernels compiled by Triton, end to end through jflow,
against the same calls on CPU (the xla kernels: an independent reference computed by another
compiler on another device), and the float32 matmul precision (TF32 or not). Skipped without
a GPU (CI has none); ``tests/test_pallas_kernels.py`` checks the same kernels' numerics on CPU
in interpret mode and their cuda lowering without a GPU.

Shapes mix partial blocks (row lengths, sequence lengths, vocabularies that no block size
divides) with a model's sizes (rows of 768, a vocabulary of 50257, sequences of 256). Each
case checks that the compiled Pallas kernel was the one lowered (``LAUNCHES``) for the
forward and its grad op, and compares outputs and input gradients of ``sum(out * w)``.

Run it on a GPU machine with ``python -m pytest tests/test_gpu.py`` (or
``benchmarks/gpu_check.sh``);
``JFLOW_GPU_TEST_ON_CPU=1`` runs the same cases on CPU in interpret mode (a check of
this file itself, slow).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator

import jax
import numpy as np
import pytest

import jflow as flow
from jflow.kernels.pallas import LAUNCHES


def _gpus() -> list[jax.Device]:
    try:
        return jax.devices("gpu")
    except RuntimeError:  # a jaxlib without a GPU backend, or no GPU
        return []


_ON_CPU = os.environ.get("JFLOW_GPU_TEST_ON_CPU") == "1"
DEVICE = "cpu" if _ON_CPU else "cuda"
pytestmark = pytest.mark.skipif(not _ON_CPU and not _gpus(),
                                reason="no GPU: the compiled Pallas kernels need one")

F = flow.nn.functional
BF16 = flow.bfloat16


@contextlib.contextmanager
def _under_test() -> Iterator[None]:
    """On a GPU the Pallas kernels are selected by default; the CPU self-check turns on
    interpret mode instead."""
    if _ON_CPU:
        with flow.config.pallas_interpret():
            yield
    else:
        yield


def _np(t: flow.Tensor) -> np.ndarray:
    return np.asarray(t.detach().float().cpu().numpy(), np.float64)


def _run(fn: Callable, arrays: list[np.ndarray], dtype, ws: list[np.ndarray], device: str,
         const: tuple = ()) -> list[np.ndarray]:
    """Outputs and input gradients (of sum(out * w)) of ``fn`` on ``device``."""
    ins = []
    for a in arrays:
        t = flow.tensor(a, device=device)
        ins.append((t.to(dtype) if dtype is not None else t).requires_grad_(True))
    consts = [flow.tensor(c, device=device) for c in const]
    out = fn(*ins, *consts)
    outs = out if isinstance(out, tuple) else (out,)
    loss = None
    for o, w in zip(outs, ws):
        term = (o * flow.tensor(w, device=device).to(o.dtype)).float().sum()
        loss = term if loss is None else loss + term
    grads = flow.autograd.grad(loss, ins)
    return [_np(o) for o in outs] + [_np(g) for g in grads]


def _close(got: np.ndarray, want: np.ndarray, rel: float, what: str) -> None:
    """``max |got - want| <= rel * max |want|`` (plus a floor): a relative error of the whole
    array, which is what reduced-precision rounding and reordered sums perturb."""
    assert got.shape == want.shape, what
    assert np.isfinite(got).all() == np.isfinite(want).all(), f"{what}: non-finite values differ"
    scale = max(float(np.abs(want).max(initial=0.0)), 1e-6)
    err = float(np.abs(got - want).max(initial=0.0))
    assert err <= rel * scale, f"{what}: max|diff| {err:.3e} > {rel} * {scale:.3e}"


def _compare(fn: Callable, arrays: list[np.ndarray], out_shapes: list[tuple], kernels: list[str],
             dtype=None, rel: float | None = None, const: tuple = ()) -> None:
    rng = np.random.default_rng(7)
    ws = [rng.standard_normal(s).astype(np.float32) for s in out_shapes]
    want = _run(fn, arrays, dtype, ws, "cpu", const)           # xla kernels on CPU
    before = {k: LAUNCHES[k] for k in kernels}
    with _under_test():
        got = _run(fn, arrays, dtype, ws, DEVICE, const)
    for k in kernels:
        assert LAUNCHES[k] > before[k], f"the Pallas kernel {k} was not lowered"
    if rel is None:
        rel = 2e-2 if dtype == BF16 else 1e-4
    for i, (a, b) in enumerate(zip(got, want)):
        _close(a, b, rel, f"output/grad {i}")


_rng = np.random.default_rng(0)


def _x(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (_rng.standard_normal(shape) * scale).astype(np.float32)


DTYPES = pytest.mark.parametrize("dtype", [None, BF16], ids=["f32", "bf16"])


@DTYPES
@pytest.mark.parametrize("shape", [(3, 5, 37), (64, 1000)], ids=["ragged", "rows1000"])
def test_softmax_and_log_softmax(shape, dtype) -> None:
    x = _x(*shape, scale=3.0)
    _compare(lambda t: (F.softmax(t, dim=-1), F.log_softmax(t, dim=-1)), [x], [shape, shape],
             ["softmax_pallas", "log_softmax_pallas", "softmax_grad_pallas",
              "log_softmax_grad_pallas"], dtype)


@DTYPES
@pytest.mark.parametrize("shape", [(10, 37), (4, 128, 768)], ids=["ragged", "d768"])
def test_layer_norm_and_rms_norm(shape, dtype) -> None:
    d = shape[-1]
    x, w, b = _x(*shape, scale=2.0) + 1.0, _x(d), _x(d)
    _compare(lambda t, wt, bt: (F.layer_norm(t, (d,), wt, bt), F.rms_norm(t, (d,), wt)),
             [x, w, b], [shape, shape], ["layer_norm_pallas", "rms_norm_pallas",
                                         "layer_norm_grad_pallas", "rms_norm_grad_pallas"], dtype)


def test_norms_without_affine_over_two_axes() -> None:
    x = _x(2, 3, 12) + 0.5
    _compare(lambda t: (F.layer_norm(t, (3, 12)), F.rms_norm(t, (3, 12))), [x],
             [x.shape, x.shape], ["layer_norm_pallas", "rms_norm_pallas",
                                  "layer_norm_grad_pallas", "rms_norm_grad_pallas"])


@DTYPES
def test_fused_bias_add_activation(dtype) -> None:
    x, b = _x(4, 33, 300, scale=2.0), _x(300)
    _compare(lambda t, bt: tuple(flow._C.fused_bias_add_activation(t, bt, activation=a)
                                 for a in ("gelu", "gelu_tanh", "silu")),
             [x, b], [x.shape] * 3, ["fused_bias_add_activation_pallas"], dtype)


@DTYPES
@pytest.mark.parametrize("n, v", [(7, 150), (64, 50257)], ids=["ragged", "gpt2vocab"])
def test_cross_entropy(n, v, dtype) -> None:
    x = _x(n, v, scale=2.0)
    labels = np.random.default_rng(3).integers(0, v, n)
    labels[1] = -100                              # ignored
    labels[0], labels[2] = 0, v - 1               # first and last class
    # the reductions share the kernels' executables (same shapes): lowered by the first
    for reduction, shape, kernels in (("mean", (), CE_KERNELS), ("none", (n,), [])):
        _compare(lambda t, lab, r=reduction: F.cross_entropy(t, lab, reduction=r), [x],
                 [shape], kernels, dtype, const=(labels,))


CE_KERNELS = ["sparse_softmax_cross_entropy_pallas", "sparse_softmax_cross_entropy_grad_pallas"]


@pytest.mark.parametrize("causal, shapes, dtype", [
    (False, (2, 4, 100, 77, 64), None),           # L != S, partial blocks
    (True, (2, 4, 256, 256, 64), None),
    (True, (1, 3, 130, 130, 128), None),
    (False, (2, 4, 256, 200, 128), BF16),
    (True, (2, 4, 256, 256, 64), BF16),
], ids=["full-e64-ragged", "causal-e64", "causal-e128-ragged", "full-e128-bf16",
        "causal-e64-bf16"])
def test_flash_attention(causal, shapes, dtype) -> None:
    b, h, n_l, n_s, e = shapes
    q, k, v = _x(b, h, n_l, e), _x(b, h, n_s, e), _x(b, h, n_s, e)
    # float32 takes the Pallas kernels only where TF32 is allowed (exact float32 runs the xla
    # kernel on a GPU: tests/test_pallas_kernels.py checks that choice); TF32's 10-bit
    # mantissa shows as ~1e-3 relative error
    with jax.default_matmul_precision("tensorfloat32" if dtype is None else "float32"):
        _compare(lambda a, c, d: F.scaled_dot_product_attention(a, c, d, is_causal=causal),
                 [q, k, v], [(b, h, n_l, e)], ["scaled_dot_product_attention_pallas",
                                               "scaled_dot_product_attention_grad_pallas"],
                 dtype, rel=2e-2 if dtype == BF16 else 5e-3)


class _Block(flow.nn.Module):
    """A pre-norm transformer block and LM head: every Pallas kernel in one model."""

    def __init__(self, vocab: int = 300, d: int = 128, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.emb = flow.nn.Embedding(vocab, d)
        self.ln1 = flow.nn.LayerNorm(d)
        self.qkv = flow.nn.Linear(d, 3 * d)
        self.ln2 = flow.nn.RMSNorm(d)
        self.up = flow.nn.Linear(d, 2 * d)
        self.down = flow.nn.Linear(2 * d, d)
        self.head = flow.nn.Linear(d, vocab)

    def forward(self, idx: flow.Tensor) -> flow.Tensor:
        x = self.emb(idx)
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + a.transpose(1, 2).reshape(b, t, d)
        x = x + self.down(F.gelu(self.up(self.ln2(x))))
        return self.head(x)


def _train(device: str, compiled: bool, steps: int = 3) -> list[float]:
    flow.manual_seed(0)
    model = _Block().to(device)
    opt = flow.optim.AdamW(model.parameters(), lr=1e-3)
    batch = np.random.default_rng(11).integers(0, 300, (4, 65))   # one batch: the loss falls

    def step(idx: flow.Tensor, tgt: flow.Tensor) -> flow.Tensor:
        loss = F.cross_entropy(model(idx).reshape(-1, 300), tgt.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    fn = flow.jit(step) if compiled else step
    out = []
    for _ in range(steps):
        t = flow.tensor(batch, device=device)
        out.append(float(fn(t[:, :-1], t[:, 1:]).item()))
    return out


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "flow.jit"])
def test_training_steps_equal_cpu(compiled) -> None:
    want = _train("cpu", compiled=False)
    names = ["scaled_dot_product_attention_pallas", "scaled_dot_product_attention_grad_pallas",
             "layer_norm_pallas", "rms_norm_grad_pallas", "sparse_softmax_cross_entropy_pallas"]
    before = {k: LAUNCHES[k] for k in names}
    with _under_test(), jax.default_matmul_precision("tensorfloat32"):  # Pallas attention
        got = _train(DEVICE, compiled)
    for k in names:
        assert LAUNCHES[k] > before[k], f"the Pallas kernel {k} was not lowered"
    # TF32 products on the GPU and reordered sums: losses agree to ~1e-3 relative
    np.testing.assert_allclose(got, want, rtol=2e-3)
    assert want[-1] < want[0]


def test_float32_matmul_precision_on_the_gpu() -> None:
    """Unset, float32 products are full float32 (PyTorch's default; XLA's own GPU default would
    be TF32); ``set_float32_matmul_precision("high")`` allows TF32, whose 10-bit mantissa shows
    as a ~1e-3 relative error; setting "highest" back restores full float32."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((256, 512)), rng.standard_normal((512, 384))
    want = a @ b                                   # float64 on the host

    def rel_err() -> float:
        got = flow.matmul(flow.tensor(a, dtype=flow.float32, device=DEVICE),
                          flow.tensor(b, dtype=flow.float32, device=DEVICE)).cpu().numpy()
        return float(np.abs(got - want).max() / np.abs(want).max())
    old = jax.config.jax_default_matmul_precision
    assert old is None
    try:
        assert rel_err() < 1e-5
        flow.set_float32_matmul_precision("high")
        if not _ON_CPU:                             # XLA's CPU products are float32 always
            assert rel_err() > 1e-4
        flow.set_float32_matmul_precision("highest")
        assert rel_err() < 1e-5
    finally:
        jax.config.update("jax_default_matmul_precision", old)


@pytest.mark.skipif(_ON_CPU, reason="CPU arrays never note their bounds (nothing to save there)")
def test_index_bounds_from_the_host_on_the_gpu() -> None:
    """Indices made from host data on the GPU carry their bounds (jflow/value_bounds.py), so
    the embedding's and cross-entropy's checks read no array back; wrong indices still raise."""
    from jflow import value_bounds
    ids = np.array([[3, 1], [0, 7]])
    t = flow.tensor(ids, device=DEVICE)
    assert value_bounds.known(t._value) == (0, 7)
    assert value_bounds.known(flow.tensor(ids).to(DEVICE)._value) == (0, 7)
    assert value_bounds.known(flow.arange(5, device=DEVICE)._value) == (0, 4)
    w = flow.randn(8, 4, device=DEVICE)
    np.testing.assert_allclose(F.embedding(t, w).cpu().numpy(), w.cpu().numpy()[ids])
    with pytest.raises(IndexError, match="out of bounds"):
        F.embedding(flow.tensor(ids + 5, device=DEVICE), w)
    with pytest.raises(IndexError, match="out of bounds"):
        F.embedding(flow.arange(9, device=DEVICE), w)
