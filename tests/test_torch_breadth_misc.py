"""``torch.*`` names added at top level, against PyTorch on the same calls: the autocast state
functions (the same sequence of calls on both libraries gives the same answers, and the ops
follow them), ``conj_physical_`` / ``as_strided_`` / ``embedding_renorm_``, ``native_norm``,
the ATen grid samplers, ``is_distributed``, ``get_device_module`` (and ``flow.cpu``),
``to_dlpack``, ``segment_reduce`` and ``cond`` (eager, and under ``flow.jit`` with a traced
predicate)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")


def _name(d: object) -> str:
    return str(d).removeprefix("torch.").removeprefix("flow.")


# -- autocast state --------------------------------------------------------------------------

_DEFAULTS = {"cpu": "bfloat16", "cuda": "float16", "ipu": "float16", "xla": "bfloat16"}


def _reset(lib: object) -> None:
    for dev, dt in _DEFAULTS.items():
        lib.set_autocast_enabled(dev, False)
        lib.set_autocast_dtype(dev, getattr(lib, dt))
    lib.set_autocast_cache_enabled(True)


@pytest.fixture
def autocast_state() -> Iterator[None]:
    """Both libraries' autocast state at PyTorch's defaults (CUDA float16 too: jflow's own
    default there is bfloat16); afterwards PyTorch's defaults again, and jflow's state as it
    was (its own defaults, for the tests that follow)."""
    st = flow.amp.autocast_mode.state
    saved = (dict(st.enabled), dict(st.dtypes), st.dtype, st.device, st.cache_enabled,
             st.nesting)
    _reset(torch)
    _reset(flow)
    try:
        yield
    finally:
        _reset(torch)
        enabled, dtypes, st.dtype, st.device, st.cache_enabled, st.nesting = saved
        st.enabled.clear()
        st.enabled.update(enabled)
        st.dtypes.clear()
        st.dtypes.update(dtypes)


def _run_sequence(lib: object) -> list:
    """One sequence of autocast calls; what each query answered, as strings."""
    seen: list = []

    def q(tag: str) -> None:
        seen.append((tag, _name(lib.get_autocast_dtype("cpu")),
                     _name(lib.get_autocast_dtype("cuda")), lib.is_autocast_enabled("cpu"),
                     lib.is_autocast_enabled("cuda"), lib.is_autocast_cache_enabled()))

    a = lib.ones(2, 2)
    q("start")
    with lib.autocast("cpu", dtype=lib.bfloat16):
        q("in cpu bf16")
        seen.append(("matmul", _name((a @ a).dtype)))
        with lib.autocast("cpu", enabled=False):
            q("nested off")
            seen.append(("matmul off", _name((a @ a).dtype)))
        q("back")
    with lib.autocast("cpu", dtype=lib.float16, cache_enabled=False):
        q("in cpu f16, no cache")
        seen.append(("matmul f16", _name((a @ a).dtype)))
    q("after")
    lib.set_autocast_dtype("cuda", lib.bfloat16)
    lib.set_autocast_enabled("cpu", True)
    lib.set_autocast_dtype("cpu", lib.float16)
    q("switched on")
    seen.append(("matmul switched", _name((a @ a).dtype)))
    lib.set_autocast_enabled("cpu", False)
    q("switched off")
    seen.append(("matmul plain", _name((a @ a).dtype)))
    lib.set_autocast_enabled(True)                      # PyTorch's older form: CUDA
    q("cuda on")
    lib.set_autocast_enabled(False)
    lib.set_autocast_cache_enabled(False)
    q("cache off")
    lib.set_autocast_cache_enabled(True)
    seen.append(("nesting", lib.autocast_increment_nesting(), lib.autocast_increment_nesting(),
                 lib.autocast_decrement_nesting(), lib.autocast_decrement_nesting()))
    seen.append(("clear", lib.clear_autocast_cache()))
    return seen


def test_autocast_state_sequence_matches_pytorch(autocast_state: None) -> None:
    assert _run_sequence(flow) == _run_sequence(torch)


def test_deprecated_per_device_forms_match_pytorch(autocast_state: None) -> None:
    def run(lib: object) -> list:
        out = []
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.set_autocast_cpu_dtype(lib.float16)
            lib.set_autocast_gpu_dtype(lib.bfloat16)
            lib.set_autocast_ipu_dtype(lib.bfloat16)
            lib.set_autocast_xla_dtype(lib.float16)
            lib.set_autocast_cpu_enabled(True)
            lib.set_autocast_ipu_enabled(True)
            lib.set_autocast_xla_enabled(True)
            out.append([_name(d) for d in (
                lib.get_autocast_cpu_dtype(), lib.get_autocast_gpu_dtype(),
                lib.get_autocast_ipu_dtype(), lib.get_autocast_xla_dtype(),
                lib.get_autocast_dtype("cpu"), lib.get_autocast_dtype("cuda"),
                lib.get_autocast_dtype("ipu"), lib.get_autocast_dtype("xla"))])
            out.append([lib.is_autocast_cpu_enabled(), lib.is_autocast_ipu_enabled(),
                        lib.is_autocast_xla_enabled(), lib.is_autocast_enabled("ipu"),
                        lib.is_autocast_enabled("xla"), lib.is_autocast_enabled("cuda")])
            lib.set_autocast_cpu_enabled(False)
            lib.set_autocast_ipu_enabled(False)
            lib.set_autocast_xla_enabled(False)
            out.append(lib.is_autocast_cpu_enabled())
        out.append(len(w) == 17 and all(x.category is DeprecationWarning for x in w))
        out.append(sorted({str(x.message).split(" is deprecated")[0] for x in w}))
        return out

    assert run(flow) == run(torch)


def test_autocast_state_errors_as_pytorch(autocast_state: None) -> None:
    for lib in (flow, torch):
        with pytest.raises(TypeError, match="argument 'enabled' \\(position 2\\) must be bool"):
            lib.set_autocast_enabled("cpu", 1)
        with pytest.raises(TypeError, match="argument 'enabled' \\(position 1\\) must be bool"):
            lib.set_autocast_enabled(1)
        with pytest.raises(TypeError, match="enabled must be a bool"):
            lib.set_autocast_cache_enabled(1)
        with pytest.raises(RuntimeError, match="nope"):
            lib.get_autocast_dtype("nope")
        with pytest.raises(RuntimeError, match="nope"):
            lib.is_autocast_enabled("nope")
    # jflow casts to float16 / bfloat16 / float32 only (PyTorch records any dtype)
    with pytest.raises(ValueError, match="float16, bfloat16 or float32"):
        flow.set_autocast_dtype("cpu", flow.float64)


def test_autocast_jflow_defaults(autocast_state: None) -> None:
    """jflow's documented differences: bfloat16 by default on every device type, and
    ``is_autocast_enabled()`` says whether the ops autocast now, whatever the device type."""
    flow.set_autocast_dtype("cuda", flow.bfloat16)
    with flow.autocast("cuda"):
        assert flow.get_autocast_dtype("cuda") == flow.bfloat16
        assert (flow.ones(2, 2) @ flow.ones(2, 2)).dtype == flow.bfloat16
    with flow.autocast("cpu"):
        assert flow.is_autocast_enabled() and not flow.is_autocast_enabled("cuda")
        assert flow.amp.is_autocast_enabled()


# -- small ones --------------------------------------------------------------------------------

def test_conj_physical_and_as_strided_in_place() -> None:
    z = np.array([1 + 2j, 3 - 1j])
    f, t = flow.tensor(z), torch.tensor(z)
    assert flow.conj_physical_(f) is f and torch.conj_physical_(t) is t
    np.testing.assert_array_equal(f.numpy(), t.numpy())
    r = flow.tensor([1.0, 2.0])
    assert flow.conj_physical_(r) is r
    for args in [((2, 2), (1, 2)), ((2,), (2,), 1)]:
        f, t = flow.arange(6.0), torch.arange(6.0)
        assert flow.as_strided_(f, *args) is f and torch.as_strided_(t, *args) is t
        assert f.shape == tuple(t.shape)
        np.testing.assert_array_equal(f.numpy(), t.numpy())
    # through a non-leaf the gradient is the strided read's; a leaf requiring grad is refused
    a, ta = flow.arange(6.0, requires_grad=True), torch.arange(6.0, requires_grad=True)
    for lib, x in ((flow, a), (torch, ta)):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            lib.as_strided_(x, (2, 2), (1, 2))
        y = x * 2
        y.as_strided_((2, 2), (1, 2))
        y.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())
    with pytest.raises(RuntimeError, match="outside"):
        flow.as_strided_(flow.arange(6.0), (4,), (2,))


def test_embedding_renorm_() -> None:
    w = np.array([[3.0, 4.0], [1.0, 0.0], [6.0, 8.0]], np.float32)
    for idx, max_norm, p in [([0, 2, 0], 1.0, 2.0), ([[0], [1]], 1.0, 1.0)]:
        f, t = flow.tensor(w), torch.tensor(w)
        assert flow.embedding_renorm_(f, flow.tensor(idx), max_norm, p) is f
        torch.embedding_renorm_(t, torch.tensor(idx), max_norm, p)
        np.testing.assert_allclose(f.numpy(), t.numpy(), rtol=1e-6)
    cases = [((np.ones(3, np.float32), [0]), RuntimeError, "Expected 2-dimensional tensor"),
             ((w, [0.0]), RuntimeError, "Long, Int"),
             ((w, [5]), IndexError, "5")]
    for (weight, idx), exc, match in cases:
        for lib in (flow, torch):
            with pytest.raises(exc, match=match):
                lib.embedding_renorm_(lib.tensor(weight), lib.tensor(idx), 1.0, 2.0)
    for lib in (flow, torch):
        with pytest.raises(RuntimeError, match="leaf Variable"):
            lib.embedding_renorm_(lib.tensor(w, requires_grad=True), lib.tensor([0]), 1.0, 2.0)
    leaf = flow.tensor(w, requires_grad=True)
    with flow.no_grad():                                   # allowed without grad, as PyTorch
        flow.embedding_renorm_(leaf, flow.tensor([1, 2]), 1.0, 2.0)
    np.testing.assert_allclose(np.linalg.norm(leaf.detach().numpy()[2]), 1.0, rtol=1e-5)


def test_native_norm_is_pytorchs_sparse_value() -> None:
    x = np.array([[3.0, 4.0], [1.0, 2.0]], np.float32)
    f, s = flow.tensor(x), torch.tensor(x).to_sparse()  # (PyTorch's kernels: sparse only)
    for p in (2, 1, float("inf")):
        np.testing.assert_allclose(flow.native_norm(f, p).numpy(),
                                   torch.native_norm(s, p).numpy(), rtol=1e-6)
    np.testing.assert_allclose(flow.native_norm(f).numpy(), torch.native_norm(s).numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(flow.native_norm(f, 2, (1,), True, flow.float64).numpy(),
                               np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True))


def test_grid_samplers_with_pytorchs_enums() -> None:
    rng = np.random.default_rng(0)
    img = rng.standard_normal((1, 2, 3, 3)).astype(np.float32)
    grid = rng.uniform(-1.1, 1.1, (1, 2, 2, 2)).astype(np.float32)
    for fn in ("grid_sampler", "grid_sampler_2d"):
        for args in [(0, 0, False), (1, 1, True), (2, 2, False)]:
            got = getattr(flow, fn)(flow.tensor(img), flow.tensor(grid), *args)
            want = getattr(torch, fn)(torch.tensor(img), torch.tensor(grid), *args)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    vol = rng.standard_normal((1, 1, 2, 3, 2)).astype(np.float32)
    g3 = rng.uniform(-1, 1, (1, 2, 1, 2, 3)).astype(np.float32)
    got = flow.grid_sampler_3d(flow.tensor(vol), flow.tensor(g3), 0, 1, True)
    want = torch.grid_sampler_3d(torch.tensor(vol), torch.tensor(g3), 0, 1, True)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    fi, ti = flow.tensor(img, requires_grad=True), torch.tensor(img, requires_grad=True)
    fg, tg = flow.tensor(grid, requires_grad=True), torch.tensor(grid, requires_grad=True)
    flow.grid_sampler(fi, fg, 0, 2, False).sum().backward()
    torch.grid_sampler(ti, tg, 0, 2, False).sum().backward()
    np.testing.assert_allclose(fi.grad.numpy(), ti.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fg.grad.numpy(), tg.grad.numpy(), rtol=1e-4, atol=1e-5)
    errors = [("grid_sampler_2d", (vol, g3, 0, 0, False), RuntimeError, "expected 4D input"),
              ("grid_sampler_3d", (img, grid, 0, 0, False), RuntimeError, "expected 5D input"),
              ("grid_sampler_3d", (vol, g3, 2, 0, False), RuntimeError, "bicubic"),
              ("grid_sampler", (img, grid, 0, 0, None), TypeError, "align_corners")]
    for fn, (x, g, *rest), exc, match in errors:
        for lib in (flow, torch):
            with pytest.raises(exc, match=match):
                getattr(lib, fn)(lib.tensor(x), lib.tensor(g), *rest)
    with pytest.raises(ValueError, match="interpolation_mode must be one of"):  # PyTorch: UB
        flow.grid_sampler(flow.tensor(img), flow.tensor(grid), 3, 0, False)
    theta = rng.standard_normal((1, 2, 3)).astype(np.float32)
    for align in (False, True):
        np.testing.assert_allclose(
            flow.affine_grid_generator(flow.tensor(theta), [1, 1, 2, 3], align).numpy(),
            torch.affine_grid_generator(torch.tensor(theta), [1, 1, 2, 3], align).numpy(),
            rtol=1e-5, atol=1e-6)
    for lib in (flow, torch):
        with pytest.raises(TypeError, match="align_corners"):
            lib.affine_grid_generator(lib.tensor(theta), [1, 1, 2, 3], None)


def test_is_distributed_device_modules_and_dlpack() -> None:
    assert flow.is_distributed(flow.ones(2)) is torch.is_distributed(torch.ones(2)) is False
    assert flow.get_device_module("cpu") is flow.cpu
    assert flow.get_device_module(flow.device("cuda:1")) is flow.cuda
    assert flow.get_device_module("cuda") is flow.cuda
    if not flow.accelerator.is_available():
        assert flow.get_device_module() is flow.cpu
        assert torch.get_device_module() is torch.cpu
    for name in ("is_available", "device_count", "current_device", "is_initialized"):
        assert getattr(flow.cpu, name)() == getattr(torch.cpu, name)()
    for lib in (flow, torch):
        with pytest.raises(RuntimeError, match="Invalid value of device"):
            lib.get_device_module(5)
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        flow.get_device_module("tpu")
    x = flow.tensor([[1.0, 2.0], [3.0, 4.0]])
    cap = flow.to_dlpack(x)
    assert type(cap).__name__ == type(torch.to_dlpack(torch.ones(1))).__name__ == "PyCapsule"
    np.testing.assert_array_equal(torch.from_dlpack(cap).numpy(), x.numpy())
    for make in (flow.to_dlpack, lambda t: torch.to_dlpack(torch.tensor(t.numpy()))):
        cap = make(x)      # a capsule in: jflow's own and PyTorch's, consumed once
        np.testing.assert_array_equal(flow.from_dlpack(cap).numpy(), x.numpy())
        with pytest.raises(TypeError, match="consumed only once"):
            flow.from_dlpack(cap)


_SEG = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0]], np.float32)
_LENGTHS = np.array([2, 0, 3])


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_segment_reduce_values_and_gradients(reduce: str) -> None:
    for initial in (None, 2.0):
        f = flow.tensor(_SEG, requires_grad=True)
        t = torch.tensor(_SEG, requires_grad=True)
        got = flow.segment_reduce(f, reduce, lengths=flow.tensor(_LENGTHS), initial=initial)
        want = torch.segment_reduce(t, reduce, lengths=torch.tensor(_LENGTHS), initial=initial)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
        got.sum().backward()
        want.sum().backward()
        np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=1e-6)


def test_segment_reduce_axes_offsets_and_errors() -> None:
    d = np.arange(24.0, dtype=np.float32).reshape(2, 6, 2)
    lens = np.array([[1, 5], [3, 3]])
    for reduce in ("sum", "max"):
        np.testing.assert_allclose(
            flow.segment_reduce(flow.tensor(d), reduce, lengths=flow.tensor(lens),
                                axis=1).numpy(),
            torch.segment_reduce(torch.tensor(d), reduce, lengths=torch.tensor(lens),
                                 axis=1).numpy())
    offsets = np.array([0, 2, 2, 5])
    np.testing.assert_array_equal(
        flow.segment_reduce(flow.tensor(_SEG), "sum", offsets=flow.tensor(offsets)).numpy(),
        torch.segment_reduce(torch.tensor(_SEG), "sum", offsets=torch.tensor(offsets)).numpy())
    short = np.array([2, 2])                       # unsafe: the last row is left out
    np.testing.assert_array_equal(
        flow.segment_reduce(flow.tensor(_SEG), "sum", lengths=flow.tensor(short),
                            unsafe=True).numpy(),
        torch.segment_reduce(torch.tensor(_SEG), "sum", lengths=torch.tensor(short),
                             unsafe=True).numpy())
    cases = [(("sum",), {"lengths": [2, 2]}, RuntimeError, "sum to data.size"),
             (("sum",), {"lengths": [2, -1, 4]}, RuntimeError, "negative"),
             (("sum",), {}, RuntimeError, "Either lengths or offsets"),
             (("sum",), {"indices": [0]}, RuntimeError, "indices based reduction"),
             (("avg",), {"lengths": [5]}, RuntimeError, "reduce argument must be"),
             (("sum",), {"lengths": [[2, 3]]}, RuntimeError, "last dimension of lengths")]
    for args, kw, exc, match in cases:
        for lib in (flow, torch):
            with pytest.raises(exc, match=match):
                lib.segment_reduce(lib.tensor(_SEG), *args,
                                   **{k: lib.tensor(v) for k, v in kw.items()})
    for lib in (flow, torch):
        with pytest.raises(NotImplementedError):
            lib.segment_reduce(lib.tensor([1, 2, 3]), "sum", lengths=lib.tensor([1, 2]))


def test_cond_eager_as_pytorch() -> None:
    x = np.array([1.0, 2.0], np.float32)
    for pred in (True, False, 1, 0.0):
        for lib in (flow, torch):
            out = lib.cond(pred, lambda v: v * 2, lambda v: v - 1, (lib.tensor(x),))
            want = x * 2 if pred else x - 1
            np.testing.assert_array_equal(out.numpy(), want)
    for lib in (flow, torch):     # (PyTorch traces a tensor pred's branches: no aliasing)
        p = lib.tensor(True)
        a = lib.tensor(x, requires_grad=True)
        out = lib.cond(p, lambda v: (v.sin(), v * 2), lambda v: (v.cos(), v * 2), [a])
        out[0].sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), np.cos(x), rtol=1e-6)
        with pytest.raises(RuntimeError, match="single-element tensor"):
            lib.cond(lib.tensor([True, False]), lambda v: v + 1, lambda v: v - 1, (a,))
    with pytest.raises(TypeError, match="operands must be a tuple or list"):
        flow.cond(True, lambda v: v, lambda v: v, flow.ones(2))
    with pytest.raises(TypeError, match="true_fn must be callable"):
        flow.cond(True, 1, lambda v: v, (flow.ones(2),))


def test_cond_traced_pred_under_jit() -> None:
    calls: list[str] = []

    def true_fn(v: flow.Tensor) -> flow.Tensor:
        calls.append("true")
        return v.sin()

    def false_fn(v: flow.Tensor) -> flow.Tensor:
        calls.append("false")
        return v.cos()

    @flow.jit
    def step(v: flow.Tensor) -> flow.Tensor:
        return flow.cond(v.sum() > 0, true_fn, false_fn, (v,))

    x = np.array([1.0, 2.0], np.float32)
    for sign in (1.0, -1.0):
        a = flow.tensor(sign * x, requires_grad=True)
        out = step(a)
        want = np.sin(sign * x) if sign > 0 else np.cos(sign * x)
        np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-6)
        out.sum().backward()
        dwant = np.cos(sign * x) if sign > 0 else -np.sin(sign * x)
        np.testing.assert_allclose(a.grad.numpy(), dwant, rtol=1e-6)
    assert {"true", "false"} <= set(calls)          # both branches ran while tracing

    @flow.jit
    def mismatched(v: flow.Tensor) -> flow.Tensor:
        return flow.cond(v.sum() > 0, lambda u: u, lambda u: u[:1], (v,))

    with pytest.raises(RuntimeError, match="cond\\(\\): output 0 .* same shape and dtype"):
        mismatched(flow.tensor(x))

    @flow.jit
    def writes(v: flow.Tensor) -> flow.Tensor:
        return flow.cond(v.sum() > 0, lambda u: u.add_(1), lambda u: u * 1, (v,))

    with pytest.raises(RuntimeError, match="wrote operand tensor 0 in place"):
        writes(flow.tensor(x))
