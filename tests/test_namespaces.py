"""PyTorch's namespaces around the core: flow.cuda, flow.backends, flow.accelerator, flow.amp
(autocast that really casts, GradScaler), flow.inference_mode, flow.finfo / iinfo,
flow.compile, flow.onnx, flow.jit.script / trace, and flow.save / load's PyTorch keywords."""

from __future__ import annotations

import pickle
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow
import jflow.nn as nn
import jflow.nn.functional as F

RS = np.random.RandomState(0)
X = RS.randn(4, 8).astype(np.float32)
W = RS.randn(3, 8).astype(np.float32)
B = RS.randn(3).astype(np.float32)
IMG = RS.randn(1, 2, 5, 5).astype(np.float32)
KER = RS.randn(3, 2, 3, 3).astype(np.float32)


def _has_gpu() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


def _close_bf16(got: flow.Tensor, want: np.ndarray) -> None:
    assert got.dtype == flow.bfloat16
    np.testing.assert_allclose(got.float().numpy(), want, rtol=3e-2, atol=6e-2)


# -- flow.cuda, flow.accelerator, flow.backends ---------------------------------------------

def test_cuda_queries_follow_jax():
    gpu = _has_gpu()
    assert flow.cuda.is_available() is gpu
    assert flow.cuda.device_count() == (len(jax.devices("gpu")) if gpu else 0)
    flow.cuda.synchronize()
    if gpu:
        assert flow.cuda.current_device() == 0
        assert isinstance(flow.cuda.get_device_name(), str) and flow.cuda.get_device_name()
        assert flow.cuda.is_bf16_supported()
    else:
        with pytest.raises(RuntimeError, match="no GPU"):
            flow.cuda.current_device()
        with pytest.raises(RuntimeError, match="no GPU"):
            flow.cuda.get_device_name()
    flow.cuda.empty_cache()


def test_cuda_manual_seed_seeds_the_default_generator():
    flow.cuda.manual_seed(123)
    a = flow.rand(5).numpy()
    flow.cuda.manual_seed_all(123)
    b = flow.rand(5).numpy()
    flow.manual_seed(123)
    c = flow.rand(5).numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert flow.cuda.initial_seed() == 123


def test_accelerator():
    avail = jax.default_backend() != "cpu"
    assert flow.accelerator.is_available() is avail
    acc = flow.accelerator.current_accelerator()
    assert (acc is None) if not avail else acc.type in ("cuda", "tpu")
    assert flow.accelerator.device_count() == (len(jax.local_devices()) if avail else 0)


def test_cudnn_flags_are_accepted():
    cudnn = flow.backends.cudnn
    old = (cudnn.benchmark, cudnn.deterministic, cudnn.enabled, cudnn.allow_tf32)
    cudnn.benchmark, cudnn.deterministic = True, True
    cudnn.enabled, cudnn.allow_tf32 = False, False
    assert cudnn.benchmark and cudnn.deterministic and not cudnn.enabled
    with cudnn.flags(enabled=True, benchmark=False):
        assert cudnn.enabled and not cudnn.benchmark
    assert not cudnn.enabled
    cudnn.benchmark, cudnn.deterministic, cudnn.enabled, cudnn.allow_tf32 = old


def test_float32_matmul_precision_maps_to_jax():
    old = jax.config.jax_default_matmul_precision
    try:
        for name, jax_name in [("highest", "float32"), ("high", "tensorfloat32"),
                               ("medium", "bfloat16")]:
            flow.set_float32_matmul_precision(name)
            assert jax.config.jax_default_matmul_precision == jax_name
            assert flow.get_float32_matmul_precision() == name
        flow.backends.cuda.matmul.allow_tf32 = False
        assert flow.get_float32_matmul_precision() == "highest"
        assert flow.backends.cuda.matmul.allow_tf32 is False
        flow.backends.cuda.matmul.allow_tf32 = True
        assert flow.get_float32_matmul_precision() == "high"
        with pytest.raises(RuntimeError, match="invalid precision"):
            flow.set_float32_matmul_precision("fast")
    finally:
        jax.config.update("jax_default_matmul_precision", old)
    if old is None:
        assert flow.get_float32_matmul_precision() == "highest"


def test_float32_matmul_precision_reaches_the_kernels():
    """Unset, the kernels ask XLA for full float32 products (XLA's GPU default would be TF32);
    once set, JAX's setting applies: HIGH for "high" (TF32 on GPUs). Read from the lowered
    program of each kernel kind, forward and backward: every product in it must carry the
    setting (CPU computes the same either way; tests/test_gpu.py checks the values on a GPU;
    a linear layer that always asked for HIGHEST made a GPT step on an H200 spend 26 ms in
    CUDA-core products)."""
    x4 = jnp.ones((1, 2, 4, 8), jnp.float32)
    w = jnp.ones((3, 2, 1, 1), jnp.float32)
    _j = flow.utils.from_jax
    lstm = flow.nn.LSTM(8, 8)
    progs = {
        "matmul": lambda a: flow.matmul(_j(a), _j(a).transpose(-1, -2)),
        "bmm": lambda a: flow.bmm(_j(a)[0], _j(a)[0].transpose(-1, -2)),
        "einsum": lambda a: flow.einsum("bhld,bhmd->bhlm", _j(a), _j(a)),
        "linear": lambda a: F.linear(_j(a), _j(a)[0, 0], _j(a)[0, 0, 0, :4]),
        "conv2d": lambda a: F.conv2d(_j(a), _j(w)),
        "attention": lambda a: F.scaled_dot_product_attention(_j(a), _j(a), _j(a)),
        "lstm": lambda a: lstm(_j(a)[0])[0],
    }

    def lowered(f):
        def loss(a):
            return (f(a) ** 2).sum()._value
        return (jax.jit(lambda a: f(a)._value).lower(x4).as_text()
                + jax.jit(jax.grad(loss)).lower(x4).as_text())

    def products(text):
        return [ln for ln in text.splitlines()
                if "stablehlo.dot_general" in ln or "stablehlo.convolution" in ln]
    old = jax.config.jax_default_matmul_precision
    assert old is None
    try:
        for name, f in progs.items():
            prods = products(lowered(f))
            assert len(prods) >= 2 and all("HIGHEST" in ln for ln in prods), name
        flow.set_float32_matmul_precision("high")
        for name, f in progs.items():
            prods = products(lowered(f))
            assert prods and all("HIGHEST" not in ln and "HIGH" in ln for ln in prods), name
    finally:
        jax.config.update("jax_default_matmul_precision", old)


def test_num_threads_reports_xlas_pool_and_warns_on_another_count(monkeypatch):
    import os
    import warnings

    from jflow import threads
    have = flow.get_num_threads()
    assert have == len(os.sched_getaffinity(0)) >= 1
    monkeypatch.setattr(threads, "_WARNED", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flow.set_num_threads(have)                  # the pool's own count: nothing to say
    with pytest.warns(UserWarning, match=rf"set_num_threads\({have + 1}\): XLA's CPU thread "
                                         rf"pool keeps its {have} threads"):
        flow.set_num_threads(have + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flow.set_num_threads(have + 1)              # once per count
    assert flow.get_num_threads() == have
    with pytest.raises(RuntimeError, match="positive"):
        flow.set_num_threads(0)
    with pytest.raises(TypeError, match="must be int"):
        flow.set_num_threads(2.0)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    assert flow.get_num_threads() == 1


def test_num_threads_under_mock_torch():
    import warnings

    import jflow.mock_torch as mock
    with mock.enable():
        import torch
        n = torch.get_num_threads()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            torch.set_num_threads(n)
    assert n == flow.get_num_threads()

# -- autocast -------------------------------------------------------------------------------

def test_autocast_casts_matrix_products_and_convolutions():
    x, w, b = flow.tensor(X), flow.tensor(W), flow.tensor(B)
    img, ker = flow.tensor(IMG), flow.tensor(KER)
    want_lin = X @ W.T + B
    want_conv = F.conv2d(img, ker).numpy()
    with flow.autocast("cpu"):
        assert flow.is_autocast_enabled()
        _close_bf16(F.linear(x, w, b), want_lin)
        _close_bf16(flow.linear(x, w, b), want_lin)
        _close_bf16(x @ w.T, X @ W.T)
        _close_bf16(flow.matmul(x, w.T), X @ W.T)
        _close_bf16(flow.mm(x, w.T), X @ W.T)
        _close_bf16(flow.bmm(x[None], w.T[None]), (X @ W.T)[None])
        _close_bf16(flow.mv(x, flow.tensor(W[0])), X @ W[0])
        _close_bf16(F.conv2d(img, ker), want_conv)
        _close_bf16(F.conv1d(img[:, :, 0], ker[:, :, 0]),
                    F.conv1d(img[:, :, 0], ker[:, :, 0]).float().numpy())
        assert (x + x).dtype == flow.float32          # not on the list: unchanged
        assert flow.relu(x).dtype == flow.float32
        assert F.softmax(x, dim=-1).dtype == flow.float32
        x64 = flow.tensor(X.astype(np.float64))
        assert (x64 @ x64.T).dtype == flow.float64     # float64 is not cast (as PyTorch)
        with flow.autocast("cpu", enabled=False):     # nested disable
            assert not flow.is_autocast_enabled()
            assert (x @ w.T).dtype == flow.float32
        assert (x @ w.T).dtype == flow.bfloat16
    assert not flow.is_autocast_enabled()
    assert (x @ w.T).dtype == flow.float32


def test_autocast_modules_dtype_and_gradients():
    flow.manual_seed(0)
    lin, conv = nn.Linear(8, 3), nn.Conv2d(2, 3, 3)
    x = flow.tensor(X)
    with flow.amp.autocast("cuda"):
        y = lin(x)
        c = conv(flow.tensor(IMG))
    assert y.dtype == flow.bfloat16 and c.dtype == flow.bfloat16
    (y.float().sum() + c.float().sum()).backward()
    assert lin.weight.grad.dtype == flow.float32            # grads reach the float32 params
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.tile(X.sum(0), (3, 1)),
                               rtol=3e-2, atol=5e-2)
    with flow.autocast("cpu", dtype=flow.float16):
        assert lin(x).dtype == flow.float16
    with flow.cuda.amp.autocast():
        assert lin(x).dtype == flow.bfloat16


def test_autocast_decorator_and_threads():
    x, w = flow.tensor(X), flow.tensor(W)

    @flow.autocast("cpu")
    def f():
        return x @ w.T

    assert f().dtype == flow.bfloat16
    assert not flow.is_autocast_enabled()
    seen = []
    with flow.autocast("cpu"):
        t = threading.Thread(target=lambda: seen.append((x @ w.T).dtype))
        t.start()
        t.join()
    assert seen == [flow.float32]                  # thread-local: other threads unaffected


def test_autocast_arguments():
    with pytest.warns(UserWarning, match="not supported"):
        ac = flow.autocast("cpu", dtype=flow.float32)
    with ac:
        assert not flow.is_autocast_enabled()
    with pytest.raises(RuntimeError, match="device_type"):
        flow.autocast("nope")
    assert flow.amp.get_autocast_dtype("cpu") == flow.bfloat16


# -- GradScaler -----------------------------------------------------------------------------

def _setup():
    flow.manual_seed(0)
    model = nn.Linear(8, 3)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    return model, opt


def test_grad_scaler_steps_on_finite_grads():
    model, opt = _setup()
    ref, ref_opt = _setup()
    scaler = flow.amp.GradScaler(init_scale=1024.0, growth_interval=2)
    x = flow.tensor(X)
    scaler.scale(model(x).sum()).backward()
    np.testing.assert_allclose(model.weight.grad.numpy() / 1024.0,
                               np.tile(X.sum(0), (3, 1)), rtol=1e-5)
    scaler.step(opt)
    scaler.update()
    ref(x).sum().backward()
    ref_opt.step()
    np.testing.assert_allclose(model.weight.detach().numpy(), ref.weight.detach().numpy(),
                               rtol=1e-5)
    assert scaler.get_scale() == 1024.0
    opt.zero_grad()
    scaler.scale(model(x).sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2048.0                 # growth_interval clean steps: grow


def test_grad_scaler_skips_a_step_with_inf_grads():
    model, opt = _setup()
    scaler = flow.cuda.amp.GradScaler(init_scale=8.0)
    before = [p.detach().numpy().copy() for p in model.parameters()]
    bad = flow.tensor(np.where(np.arange(32).reshape(4, 8) == 5, np.inf, X).astype(np.float32))
    scaler.scale(model(bad).sum()).backward()
    assert scaler.step(opt) is None
    scaler.update()
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.detach().numpy(), b)     # unchanged
    assert scaler.get_scale() == 4.0                    # backed off
    opt.zero_grad()
    scaler.scale(model(flow.tensor(X)).sum()).backward()
    scaler.unscale_(opt)                                # e.g. before clipping
    np.testing.assert_allclose(model.weight.grad.numpy(), np.tile(X.sum(0), (3, 1)),
                               rtol=1e-5)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert not np.array_equal(model.weight.detach().numpy(), before[0])


def test_grad_scaler_state_dict_and_disabled():
    scaler = flow.amp.GradScaler(init_scale=16.0)
    sd = scaler.state_dict()
    assert sd == {"scale": 16.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                  "growth_interval": 2000, "_growth_tracker": 0}
    other = flow.amp.GradScaler()
    other.load_state_dict(sd)
    assert other.get_scale() == 16.0
    off = flow.amp.GradScaler(enabled=False)
    model, opt = _setup()
    loss = model(flow.tensor(X)).sum()
    assert off.scale(loss) is loss
    assert off.state_dict() == {} and off.get_scale() == 1.0 and not off.is_enabled()
    loss.backward()
    before = model.weight.detach().numpy().copy()
    off.step(opt)
    off.update()
    assert not np.array_equal(model.weight.detach().numpy(), before)


def test_grad_scaler_with_bfloat16_autocast():
    model, opt = _setup()
    scaler = flow.amp.GradScaler()
    with flow.autocast("cpu"):
        loss = model(flow.tensor(X)).float().sum()
    scaler.scale(loss).backward()
    before = model.weight.detach().numpy().copy()
    scaler.step(opt)
    scaler.update()
    assert not np.array_equal(model.weight.detach().numpy(), before)
    assert np.isfinite(model.weight.detach().numpy()).all()


# -- inference_mode -------------------------------------------------------------------------

def test_inference_mode():
    w = flow.tensor(W, requires_grad=True)
    with flow.inference_mode():
        assert flow.is_inference_mode_enabled() and not flow.is_grad_enabled()
        assert not (w * 2).requires_grad
    assert not flow.is_inference_mode_enabled() and flow.is_grad_enabled()
    with flow.inference_mode(False):
        assert (w * 2).requires_grad

    @flow.inference_mode()
    def f(t):
        return t * 2

    @flow.inference_mode
    def g(t):
        return t * 2

    assert not f(w).requires_grad and not g(w).requires_grad
    assert flow.is_grad_enabled()


# -- finfo / iinfo ---------------------------------------------------------------------------

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


def test_finfo_iinfo_match_torch():
    torch = pytest.importorskip("torch")
    for n in FLOATS:
        a, b = flow.finfo(getattr(flow, n)), torch.finfo(getattr(torch, n))
        for k in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution",
                  "dtype"):
            assert getattr(a, k) == getattr(b, k), (n, k)
    for n in INTS:
        a, b = flow.iinfo(getattr(flow, n)), torch.iinfo(getattr(torch, n))
        for k in ("bits", "max", "min", "dtype"):
            assert getattr(a, k) == getattr(b, k), (n, k)


def test_finfo_iinfo_match_numpy():
    import ml_dtypes
    for n in FLOATS:
        a = flow.finfo(getattr(flow, n))
        ref = ml_dtypes.finfo(getattr(flow, n).np)
        assert (a.bits, a.eps, a.max, a.min, a.tiny) == (
            ref.bits, float(ref.eps), float(ref.max), float(ref.min), float(ref.tiny))
        assert a.resolution == 10.0 ** -int(ref.precision) and a.dtype == n
    for n in INTS:
        a, ref = flow.iinfo(getattr(flow, n)), np.iinfo(n)
        assert (a.bits, a.max, a.min, a.dtype) == (ref.bits, ref.max, ref.min, n)
    assert flow.finfo().dtype == "float32"
    assert flow.finfo(flow.tensor(X).dtype).eps == float(np.finfo(np.float32).eps)
    with pytest.raises(TypeError):
        flow.finfo(flow.int32)
    with pytest.raises(TypeError):
        flow.iinfo(flow.float32)
    with pytest.raises(TypeError):
        flow.iinfo(flow.bool)


# -- flow.compile, flow.jit.script / trace, flow.onnx ----------------------------------------

def _seq():
    flow.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


def test_compile_module_equals_eager_and_forwards_attributes():
    model = _seq()
    compiled = flow.compile(model)
    x = flow.tensor(X)
    np.testing.assert_allclose(compiled(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    assert compiled._orig_mod is model
    assert [p is q for p, q in zip(compiled.parameters(), model.parameters())] == [True] * 4
    assert compiled.state_dict().keys() == model.state_dict().keys()  # no _orig_mod. prefix
    compiled.load_state_dict({k: v * 0 for k, v in model.state_dict().items()})
    assert float(model[0].weight.abs().sum()) == 0.0
    assert compiled.eval() is model and not model.training
    compiled.train()
    assert model.training
    assert compiled[0] is model[0] and len(compiled) == 3
    compiled.tag = "x"
    assert model.tag == "x"


def test_compile_module_trains_like_eager():
    model, ref = _seq(), _seq()
    compiled = flow.compile(model, mode="max-autotune", fullgraph=True, dynamic=False)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = flow.optim.SGD(ref.parameters(), lr=0.1)
    x = flow.tensor(X)
    for _ in range(2):
        for m, o in ((compiled, opt), (ref, ref_opt)):
            o.zero_grad()
            m(x).square().sum().backward()
            o.step()
    np.testing.assert_allclose(model[0].weight.detach().numpy(), ref[0].weight.detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    assert compiled._by_autocast[None].trace_count >= 1      # it ran through flow.jit


def test_compile_function_decorator_disable_and_autocast():
    model = _seq()
    x = flow.tensor(X)

    @flow.compile
    def f(t):
        return model(t) * 2

    np.testing.assert_allclose(f(x).detach().numpy(), model(x).detach().numpy() * 2, rtol=1e-5,
                               atol=1e-6)
    g = flow.compile(backend="inductor")(lambda t: t + 1)
    np.testing.assert_allclose(g(x).numpy(), X + 1)
    assert flow.compile(model, disable=True) is model
    assert flow.compile(f.__wrapped__, disable=True) is f.__wrapped__
    # the autocast state is part of what a compiled call is specialized on
    assert f(x).dtype == flow.float32
    with flow.autocast("cpu"):
        assert f(x).dtype == flow.bfloat16
    assert f(x).dtype == flow.float32
    with pytest.raises(RuntimeError, match="mode"):
        flow.compile(model, mode="fastest")
    with pytest.raises(RuntimeError, match="both"):
        flow.compile(model, mode="default", options={})
    with pytest.raises(NotImplementedError, match="backends"):
        flow.compile(model, backend=lambda gm, inputs: gm)


def test_torchscript_and_onnx_are_refused():
    with pytest.raises(NotImplementedError, match="flow.compile"):
        flow.jit.script(_seq())
    with pytest.raises(NotImplementedError, match="flow.compile"):
        flow.jit.trace(_seq(), flow.tensor(X))
    with pytest.raises(NotImplementedError, match="ONNX"):
        flow.onnx.export(_seq(), flow.tensor(X), "m.onnx")
    assert callable(flow.jit)   # still flow.jit


# -- flow.save / flow.load with PyTorch's keywords --------------------------------------------

def test_save_module_writes_pytorch_format(tmp_path):
    """A whole module (or a container holding one, or an optimizer) is saved in PyTorch's
    zip + pickle format, as torch.save does; loading it back needs weights_only=False (or the
    classes in safe_globals), as in PyTorch 2.6+."""
    model = _seq()
    flow.save({"model": model, "epoch": 3}, tmp_path / "m.flow")
    with pytest.raises(flow.serialization.SerializationError, match="weights_only"):
        flow.load(tmp_path / "m.flow")
    back = flow.load(tmp_path / "m.flow", weights_only=False)
    assert back["epoch"] == 3
    x = flow.randn(2, 8)
    np.testing.assert_allclose(back["model"](x).detach().numpy(), model(x).detach().numpy(),
                               rtol=1e-6)


def test_load_accepts_torch_keywords(tmp_path):
    model = _seq()
    path = tmp_path / "m.flow"
    flow.save(model.state_dict(), path)
    for kw in ({"weights_only": True}, {"weights_only": False}, {"mmap": True},
               {"map_location": "cpu", "weights_only": True, "mmap": False}):
        sd = flow.load(path, **kw)
        assert sd.keys() == model.state_dict().keys()
    model.load_state_dict(flow.load(str(path), weights_only=True))


def test_legacy_pickle_files_are_refused_and_zip_pickles_load_without_pickle_load(
        tmp_path, monkeypatch):
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: pytest.fail("pickle.loads called"))
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("pickle.load called"))
    raw = tmp_path / "p.pt"
    raw.write_bytes(pickle.dumps({"w": [1.0, 2.0]}, protocol=2))
    with pytest.raises(flow.serialization.SerializationError,
                       match="pickle file.*weights_only=False does not change that"):
        flow.load(raw, weights_only=False)
    import zipfile
    zpath = tmp_path / "torch_style.pt"
    with zipfile.ZipFile(zpath, "w") as z:                   # torch.save's layout
        z.writestr("archive/data.pkl", pickle.dumps({"w": 1}, protocol=2))
        z.writestr("archive/version", "3\n")
    assert flow.load(zpath) == {"w": 1}          # a restricted unpickler, not pickle.load
    with pytest.raises(flow.serialization.SerializationError, match="pickle_module"):
        flow.load(raw, pickle_module=pickle)


def test_safe_globals_are_accepted_no_ops(tmp_path):
    ser = flow.serialization
    ser.clear_safe_globals()
    ser.add_safe_globals([np.dtype, dict])
    assert ser.get_safe_globals() == [np.dtype, dict]
    with ser.safe_globals([list]):
        assert list in ser.get_safe_globals()
        flow.save({"a": flow.tensor(B)}, tmp_path / "a.flow")
        np.testing.assert_array_equal(flow.load(tmp_path / "a.flow")["a"].numpy(), B)
    assert ser.get_safe_globals() == [np.dtype, dict]
    ser.clear_safe_globals()
    assert ser.get_safe_globals() == []
