"""What the third library sweep (``benchmarks/library_sweep.py``, 2026-12-04) found: each
fix on its own, against PyTorch (where the comparison needs it) or NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=np.float32)


def _extra_nones(lib):
    """A Function whose backward returns more values than forward took, the extra ones None
    (HF Reformer's ``_ReversibleFunction``: 12 values for 11 arguments)."""

    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None, None, None

    return Scale


def _extra_gradient(lib):
    class Bad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, None, g  # a third value that is not None: an error in PyTorch too

    return Bad


def test_function_backward_trailing_nones_are_dropped() -> None:
    x = flow.tensor(X, requires_grad=True)
    _extra_nones(flow).apply(x, 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(X, 3.0))
    with pytest.raises(RuntimeError, match="returned 3 gradients"):
        _extra_gradient(flow).apply(flow.tensor(X, requires_grad=True), 3.0).sum().backward()


def test_function_backward_trailing_nones_as_pytorch() -> None:
    torch = pytest.importorskip("torch")
    t = torch.tensor(X, requires_grad=True)
    _extra_nones(torch).apply(t, 3.0).sum().backward()
    x = flow.tensor(X, requires_grad=True)
    _extra_nones(flow).apply(x, 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy())
    with pytest.raises(RuntimeError, match="incorrect number of gradients"):
        _extra_gradient(torch).apply(torch.tensor(X, requires_grad=True), 3.0).sum().backward()


def test_cuda_default_generators() -> None:
    """``torch.cuda.default_generators``: one generator per CUDA device, () without one (HF
    Reformer reads its length before seeding); jflow's one generator serves every device."""
    gens = flow.cuda.default_generators
    assert isinstance(gens, tuple)
    assert len(gens) == flow.cuda.device_count()
    assert all(g is flow.default_generator for g in gens)
    if not flow.cuda.is_available():
        assert gens == ()
    with pytest.raises(AttributeError):
        flow.cuda.no_such_name  # noqa: B018  (the module's __getattr__ still refuses others)


def test_cuda_default_generators_as_pytorch_cpu() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() or flow.cuda.is_available():
        pytest.skip("compares the CPU-only answer")
    assert flow.cuda.default_generators == torch.cuda.default_generators == ()


def test_dynamo_mark_static_address() -> None:
    """``torch._dynamo.mark_static_address(t, guard=False)``: a CUDA-graph hint, accepted and
    unrecorded (transformers' hybrid Mamba cache marks its tensors: HF Jamba)."""
    import importlib
    import inspect

    dynamo = importlib.import_module("jflow.mock_torch.overrides._dynamo")
    t = flow.zeros(3)
    assert dynamo.mark_static_address(t) is None
    assert dynamo.mark_static_address(t, guard=True) is None
    np.testing.assert_array_equal(t.numpy(), np.zeros(3, np.float32))
    torch = pytest.importorskip("torch")
    assert (list(inspect.signature(dynamo.mark_static_address).parameters)
            == list(inspect.signature(torch._dynamo.mark_static_address).parameters))


# -- in-place ops keep their original input (torchvision EfficientNetV2: SiLU(inplace=True),
# then ``result += input`` on the same tensor) ------------------------------------------------

A = np.array([0.5, -1.0, 2.0, -0.25], dtype=np.float32)
B = np.array([2.0, 3.0, 4.0, -1.5], dtype=np.float32)


def _sig(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


def _dsilu(x: np.ndarray) -> np.ndarray:
    s = _sig(x)
    return s * (1.0 + x * (1.0 - s))


def _ddsilu(x: np.ndarray) -> np.ndarray:
    s = _sig(x)
    return s * (1.0 - s) * (2.0 + x * (1.0 - 2.0 * s))


def test_inplace_activation_then_written_again() -> None:
    """``F.silu(x, inplace=True)`` then ``x += a``: silu's backward reads x as it was before
    its own write (PyTorch keeps a copy of the original self), so the second write does not
    invalidate it."""
    a = flow.tensor(A, requires_grad=True)
    x = a * 1.0
    flow.nn.functional.silu(x, inplace=True)
    x += a
    x.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), _dsilu(A) + 1.0, rtol=1e-6)
    # the same through a view of x
    a.grad = None
    x = a * 1.0
    flow.nn.functional.hardswish(x.view(2, 2), inplace=True)
    x.add_(1.0)
    x.sum().backward()
    want = np.where(A <= -3, 0.0, np.where(A >= 3, 1.0, (2 * A + 3) / 6))
    np.testing.assert_allclose(a.grad.numpy(), want, rtol=1e-6)


def test_inplace_binary_and_unary_then_written_again() -> None:
    a, b = flow.tensor(A, requires_grad=True), flow.tensor(B, requires_grad=True)
    x = a * 1.0
    x.mul_(b)  # mul_'s gradient for b reads x's value before the write
    x.add_(1.0)
    x.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), B)
    np.testing.assert_allclose(b.grad.numpy(), A)
    a.grad = None
    x = a * 1.0
    x.sin_()
    x.mul_(3.0)
    x.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 3.0 * np.cos(A), rtol=1e-6)


def test_inplace_write_still_invalidates_other_readers() -> None:
    """Only the in-place op's own read is kept: another op that saved x still sees the
    write (PyTorch's error)."""
    a = flow.tensor(A, requires_grad=True)
    x = a * 1.0
    y = x.sin()
    x.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_inplace_activation_create_graph_uses_the_old_value() -> None:
    """Double backward through an in-place silu differentiates at the input's old value (it
    read the written tensor before)."""
    a = flow.tensor(A, requires_grad=True)
    x = a * 1.0
    flow.nn.functional.silu(x, inplace=True)
    (g,) = flow.autograd.grad(x.sum(), a, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), _dsilu(A), rtol=1e-6)
    (h,) = flow.autograd.grad(g.sum(), a)
    np.testing.assert_allclose(h.numpy(), _ddsilu(A), rtol=1e-5)


def test_composite_inplace_mish() -> None:
    """``F.mish(x, inplace=True)`` is several ops written back once: each reads x's original
    value (it raised "modified by an inplace operation" in backward)."""
    a = flow.tensor(A, requires_grad=True)
    x = a * 1.0
    out = flow.nn.functional.mish(x, inplace=True)
    assert out is x
    x.sum().backward()
    sp = np.log1p(np.exp(A.astype(np.float64)))
    t = np.tanh(sp)
    np.testing.assert_allclose(a.grad.numpy(), t + A * (1 - t ** 2) * _sig(A), rtol=1e-6)
    np.testing.assert_allclose(x.detach().numpy(), A * t, rtol=1e-6)


def test_inplace_activation_as_pytorch() -> None:
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (torch, flow):
        a = lib.tensor(A, requires_grad=True)
        x = a * 1.0
        lib.nn.functional.silu(x, inplace=True)
        lib.nn.functional.mish(x, inplace=True)
        x += a
        x.sum().backward()
        grads.append(a.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)
