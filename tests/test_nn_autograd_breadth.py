"""PyTorch APIs of torch.autograd, torch.nn.init, torch.nn.utils and torch.func that jflow
lacked, each against PyTorch on the same inputs: ``Variable``, anomaly mode (NaN checks per
backward node), ``gradcheck`` / ``gradgradcheck``, the multithreading / view-replay queries,
``nn.init``'s deprecated names, ``get_total_norm`` / ``clip_grads_with_norm_`` /
``clip_grad_norm``, BatchNorm fusion, ``skip_init``, the conv weight memory-format converters,
``stateless.functional_call``, ``func.linearize`` / ``functionalize`` /
``replace_all_batch_norm_modules_``. (Modules and Muon: test_nn_autograd_breadth_modules.py.)
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import jflow as flow
import jflow.autograd.engine as engine
from jflow.autograd.gradcheck import GradcheckError

torch = pytest.importorskip("torch")
from torch.autograd.gradcheck import GradcheckError as TorchGradcheckError  # noqa: E402


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _both(a):
    return flow.tensor(a), torch.tensor(a)


# -- Variable --------------------------------------------------------------------------------------

def test_variable_is_a_detached_leaf_sharing_data():
    for lib in (flow, torch):
        V = lib.autograd.Variable
        t = lib.ones(3)
        v = V(t, requires_grad=True)
        assert isinstance(v, lib.Tensor) and v.requires_grad and v.is_leaf and v is not t
        assert not t.requires_grad
        t.add_(1)  # (shares t's data: the write shows in v)
        assert _np(v).tolist() == [2.0, 2.0, 2.0]
        y = v * 2
        z = V(y)
        assert z.grad_fn is None and not z.requires_grad and z.is_leaf
        assert isinstance(t, V) and isinstance(lib.nn.Parameter(lib.ones(1)), V)
        assert not isinstance(3, V) and not issubclass(lib.Tensor, V)
        assert tuple(V().shape) == (0,)
        with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
            V([1.0])
        with pytest.warns(UserWarning, match="volatile was removed and now has no effect"):
            V(lib.ones(1), volatile=True)
        with pytest.raises(RuntimeError, match=re.escape(
                "torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")):
            lib.autograd.variable(t)


def test_autograd_switches_as_pytorch():
    for lib in (flow, torch):
        ag = lib.autograd
        assert ag.inference_mode is lib.inference_mode
        assert ag.is_multithreading_enabled()
        ag.set_multithreading_enabled(False)
        assert not ag.is_multithreading_enabled()
        ag.set_multithreading_enabled(True)
        with ag.set_multithreading_enabled(False):
            assert not ag.is_multithreading_enabled()
        assert ag.is_multithreading_enabled()

        @ag.set_multithreading_enabled(False)
        def f(ag=ag):
            return ag.is_multithreading_enabled()
        # (PyTorch's quirk, kept: building the decorator sets the flag)
        assert not ag.is_multithreading_enabled() and f() is False
        ag.set_multithreading_enabled(True)
        assert f() is False and ag.is_multithreading_enabled()
    # jflow's views always replay their own steps (PyTorch's switch defaults to False)
    assert flow.autograd.is_view_replay_enabled() is True


# -- anomaly mode ----------------------------------------------------------------------------------

def _anomaly_state(lib):
    from jflow.autograd import anomaly_mode
    if lib is flow:
        return anomaly_mode.is_anomaly_enabled(), anomaly_mode.is_anomaly_check_nan_enabled()
    return torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()


def test_anomaly_switches_as_pytorch():
    for lib in (flow, torch):
        ag = lib.autograd
        assert _anomaly_state(lib) == (False, True)
        with pytest.warns(UserWarning, match="Anomaly Detection has been enabled. This mode will "
                                             "increase the runtime and should only be enabled "
                                             "for debugging."):
            cm = ag.detect_anomaly(check_nan=False)
        assert _anomaly_state(lib) == (False, True)  # (on at __enter__ only)
        with cm:
            assert _anomaly_state(lib) == (True, False)
            with ag.set_detect_anomaly(False):
                assert _anomaly_state(lib) == (False, True)
            assert _anomaly_state(lib) == (True, False)
        assert _anomaly_state(lib) == (False, True)
        ag.set_detect_anomaly(True)  # (as a function: stays on)
        assert _anomaly_state(lib) == (True, True)
        ag.set_detect_anomaly(False)
        assert _anomaly_state(lib) == (False, True)
        with pytest.raises(TypeError), warnings.catch_warnings():  # not a decorator
            warnings.simplefilter("ignore")
            ag.detect_anomaly()(lambda: None)


def _nan_cases(lib):
    """(what, run) pairs whose backward gives NaN in one node."""
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    def sqrt_of_zero():  # sqrt's inf times mul's 0
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        (x * 0).sqrt().sum().backward()

    def div_by_itself():  # autograd.grad: the divisor's gradient is NaN
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        lib.autograd.grad((x / x).sum(), x)

    def function():
        F.apply(lib.ones(2, requires_grad=True)).sum().backward()
    return [sqrt_of_zero, div_by_itself, function]


def test_detect_anomaly_raises_on_nan_naming_the_node():
    names = {}
    for lib in (flow, torch):
        got = []
        for case in _nan_cases(lib):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with lib.autograd.detect_anomaly():
                    with pytest.raises(RuntimeError, match="returned nan values in its") as e:
                        case()
            m = re.fullmatch(r"Function '(\w+)' returned nan values in its (\d+)th output\.",
                             str(e.value))
            assert m, str(e.value)
            got.append((m.group(1), int(m.group(2))))
        names[lib.__name__] = got
    # the same node and output index; jflow names its nodes <op>_backward
    assert [i for _, i in names["jflow"]] == [i for _, i in names["torch"]] == [0, 1, 0]
    assert [n for n, _ in names["jflow"]] == ["mul_backward", "div_backward", "F_backward"]
    assert [n for n, _ in names["torch"]] == ["MulBackward0", "DivBackward0", "FBackward"]
    # off again: no node check, so the engine's whole-graph path is back
    assert engine._NODE_CHECK[0] is None


def test_anomaly_without_check_nan_and_off_gives_the_nan_gradient():
    for lib in (flow, torch):
        for mode in (lib.autograd.set_detect_anomaly(True, check_nan=False),
                     lib.autograd.set_detect_anomaly(False)):
            with mode:
                x = lib.tensor([0.0, 1.0], requires_grad=True)
                (g,) = lib.autograd.grad((x / x).sum(), x)
            assert np.isnan(_np(g)[0]) and _np(g)[1] == 0


def test_anomaly_mode_keeps_gradients():
    x = np.random.default_rng(0).standard_normal((3, 4))
    grads = []
    for on in (False, True):
        with flow.autograd.set_detect_anomaly(on):
            t = flow.tensor(x, requires_grad=True)
            (t.tanh() * t).sum().backward()
        grads.append(_np(t.grad))
    np.testing.assert_array_equal(grads[0], grads[1])


# -- gradcheck ------------------------------------------------------------------------------------

def _functions(lib):
    """(name, func, inputs) cases: correct, and wrong in the ways gradcheck catches."""
    class Square(lib.autograd.Function):  # backward forgets the factor 2
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * a

    class SumOnes(lib.autograd.Function):  # backward ignores grad_output
        @staticmethod
        def forward(ctx, a):
            ctx.shape = a.shape
            return a.sum()

        @staticmethod
        def backward(ctx, g):
            return lib.ones(ctx.shape, dtype=lib.float64)

    class DetachedSquare(lib.autograd.Function):  # first derivative right, second wrong
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * 2 * a.detach()

    rng = np.random.default_rng(1)
    a = lib.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    b = lib.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    return [("matmul_tanh", lambda x, y: (x @ y).tanh(), (a, b)),
            ("two_outputs", lambda x, y: (x.sin(), (x @ y).sum()), (a, b)),
            ("square_wrong", Square.apply, (a,)),
            ("sum_ignores_grad", SumOnes.apply, (a,)),
            ("detached_square", DetachedSquare.apply, (a,))]


def _check(lib, check, func, inputs):
    err = GradcheckError if lib is flow else TorchGradcheckError
    try:
        return check(func, inputs), ""
    except err as e:
        return False, str(e).split(",")[0].split("\n")[0]


def test_gradcheck_and_gradgradcheck_agree_with_pytorch():
    results = {}
    for lib in (flow, torch):
        ag = lib.autograd
        out = []
        for name, func, inputs in _functions(lib):
            out.append((name, "grad", *_check(lib, ag.gradcheck, func, inputs)))
            if name in ("matmul_tanh", "detached_square"):
                out.append((name, "gradgrad", *_check(lib, ag.gradgradcheck, func, inputs)))
            assert ag.gradcheck(func, inputs, raise_exception=False) == out[-1][2] or \
                out[-1][1] == "gradgrad"
        results[lib.__name__] = out
    assert results["jflow"] == results["torch"]
    got = {(n, k): (ok, msg) for n, k, ok, msg in results["jflow"]}
    assert got["matmul_tanh", "grad"] == (True, "")
    assert got["matmul_tanh", "gradgrad"] == (True, "")
    assert got["two_outputs", "grad"] == (True, "")
    assert got["square_wrong", "grad"] == (False, "Jacobian mismatch for output 0 with respect "
                                                  "to input 0")
    assert got["sum_ignores_grad", "grad"] == (False, "backward not multiplied by grad_output")
    assert got["detached_square", "grad"] == (True, "")
    assert got["detached_square", "gradgrad"][0] is False


def test_gradcheck_input_checks_as_pytorch():
    for lib in (flow, torch):
        x32 = lib.ones(3, requires_grad=True)
        with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double "
                                             "precision floating point or complex"):
            assert lib.autograd.gradcheck(lambda t: t * 2, (x32,), atol=1e-2, eps=1e-3)
        with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to "
                                             "require gradient"):
            lib.autograd.gradcheck(lambda t: t * 2, (lib.ones(3, dtype=lib.float64),))
        with pytest.raises(AssertionError, match="Expected at least one of check_forward_ad or "
                                                 "check_backward_ad to be True"):
            lib.autograd.gradcheck(lambda t: t, (x32,), check_backward_ad=False)
    with pytest.raises(NotImplementedError, match="check_forward_ad"):
        flow.autograd.gradcheck(lambda t: t, (flow.ones(2, dtype=flow.float64,
                                                        requires_grad=True),),
                                check_forward_ad=True)


# -- nn.init's deprecated names --------------------------------------------------------------------

@pytest.mark.parametrize("name,args", [("constant", (0.5,)), ("normal", ()), ("eye", ()),
                                       ("xavier_uniform", ()), ("kaiming_normal", ()),
                                       ("orthogonal", ()), ("dirac", ()), ("sparse", (0.5,)),
                                       ("uniform", ()), ("xavier_normal", ()),
                                       ("kaiming_uniform", ())])
def test_init_deprecated_names_warn_and_call_the_underscore_form(name, args):
    shape = (4, 2, 3) if name == "dirac" else (4, 3)
    for lib in (flow, torch):
        init = lib.nn.init
        msg = f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`."
        lib.manual_seed(3)
        t = lib.zeros(shape)
        with pytest.warns(FutureWarning, match=re.escape(msg)):
            out = getattr(init, name)(t, *args)
        assert out is t and getattr(init, name).__name__ == name
        lib.manual_seed(3)
        u = getattr(init, name + "_")(lib.zeros(shape), *args)
        np.testing.assert_array_equal(_np(t), _np(u))
        assert np.any(_np(t) != 0)


# -- nn.utils --------------------------------------------------------------------------------------

def _grads(lib, arrays):
    ps = []
    for a in arrays:
        p = lib.nn.Parameter(lib.tensor(a))
        p.grad = lib.tensor(a * 3)
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, float("inf"), 1.0])
def test_total_norm_and_clip_with_norm_as_pytorch(norm_type):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(5)
              .astype(np.float32)]
    out = {}
    for lib in (flow, torch):
        u = lib.nn.utils
        ps = _grads(lib, arrays)
        total = u.get_total_norm([p.grad for p in ps], norm_type)
        u.clip_grads_with_norm_(ps, 1.5, total)
        out[lib.__name__] = (float(total), [_np(p.grad) for p in ps])
        assert float(u.get_total_norm([])) == 0.0
    assert out["jflow"][0] == pytest.approx(out["torch"][0], rel=1e-6)
    for a, b in zip(out["jflow"][1], out["torch"][1]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert out["jflow"][0] > 1.5  # (so clipping did scale)


def test_clip_grad_norm_deprecated_and_generator_warnings():
    arrays = [np.arange(4, dtype=np.float32)]
    totals = []
    for lib in (flow, torch):
        u = lib.nn.utils
        ps = _grads(lib, arrays)
        with pytest.warns(FutureWarning, match=re.escape(
                "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                "`torch.nn.utils.clip_grad_norm_`.")):
            totals.append(float(u.clip_grad_norm(ps, 1.0)))
        assert np.linalg.norm(_np(ps[0].grad)) == pytest.approx(1.0, rel=1e-5)
        with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient "
                                             "clipping will occur."):
            u.clip_grad_norm_((p for p in []), 1.0)
    assert totals[0] == pytest.approx(totals[1])


def _conv_bn(lib, transpose):
    lib.manual_seed(0)
    conv = (lib.nn.ConvTranspose2d if transpose else lib.nn.Conv2d)(3, 4, 3)
    bn = lib.nn.BatchNorm2d(4)
    return conv, bn


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_as_pytorch(transpose):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    sd = {k: rng.standard_normal(v.shape).astype(np.float32)
          for k, v in torch.nn.Conv2d(3, 4, 3).state_dict().items()}
    if transpose:
        sd["weight"] = rng.standard_normal((3, 4, 3, 3)).astype(np.float32)
    bn_sd = {"weight": rng.standard_normal(4), "bias": rng.standard_normal(4),
             "running_mean": rng.standard_normal(4), "running_var": rng.random(4) + 0.5}
    outs = []
    for lib in (flow, torch):
        conv, bn = _conv_bn(lib, transpose)
        conv.load_state_dict({k: lib.tensor(v) for k, v in sd.items()})
        bn.load_state_dict({**{k: lib.tensor(v.astype(np.float32)) for k, v in bn_sd.items()},
                            "num_batches_tracked": lib.tensor(0)})
        with pytest.raises(AssertionError, match="Fusion only for eval!"):
            lib.nn.utils.fuse_conv_bn_eval(conv, bn, transpose)
        conv.eval()
        bn.eval()
        fused = lib.nn.utils.fuse_conv_bn_eval(conv, bn, transpose)
        assert type(fused) is type(conv) and fused is not conv
        assert isinstance(fused.weight, lib.nn.Parameter) and fused.weight.requires_grad
        y = fused(lib.tensor(x))
        np.testing.assert_allclose(_np(y), _np(bn(conv(lib.tensor(x)))), rtol=1e-4, atol=1e-5)
        outs.append(_np(y))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-5)


def test_fuse_linear_bn_as_pytorch():
    rng = np.random.default_rng(4)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    rm, rv = rng.standard_normal(4), rng.random(4) + 0.5
    bw, bb = rng.standard_normal(4), rng.standard_normal(4)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    outs = []
    for lib in (flow, torch):
        f32 = lambda a, lib=lib: lib.tensor(np.asarray(a, np.float32))  # noqa: E731
        fw, fb = lib.nn.utils.fuse_linear_bn_weights(f32(w), None, f32(rm), f32(rv), 1e-5,
                                                     f32(bw), f32(bb))
        assert isinstance(fw, lib.nn.Parameter) and fw.requires_grad is False
        outs.append(_np(lib.tensor(x) @ fw.T + fb))
        lin, bn = lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(5)
        lin.eval()
        bn.eval()
        with pytest.raises(AssertionError, match="To fuse, linear.out_features == "
                                                 "bn.num_features or bn.num_features == 1"):
            lib.nn.utils.fuse_linear_bn_eval(lin, bn)
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)
    scale = bw / np.sqrt(rv + 1e-5)
    np.testing.assert_allclose(outs[0], (x @ w.T - rm) * scale + bb, rtol=1e-4, atol=1e-5)


def test_skip_init_builds_without_drawing():
    flow.manual_seed(5)
    m = flow.nn.utils.skip_init(flow.nn.Linear, 3, 4)
    after = flow.rand(2)
    flow.manual_seed(5)
    np.testing.assert_array_equal(_np(after), _np(flow.rand(2)))  # nothing was drawn
    assert type(m) is flow.nn.Linear and tuple(m.weight.shape) == (4, 3)
    assert m.weight.device == flow.device("cpu") and not m.weight.is_meta
    np.testing.assert_array_equal(_np(m.weight), 0)  # (PyTorch: uninitialised memory)
    for lib in (flow, torch):
        with pytest.raises(RuntimeError, match="Expected a Module; got"):
            lib.nn.utils.skip_init(int)

        class NoDevice(lib.nn.Module):
            def __init__(self, n):
                super().__init__()
        with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip "
                                               "initialization"):
            lib.nn.utils.skip_init(NoDevice, 3)


def test_convert_conv_weight_memory_format():
    models = {}
    for lib in (flow, torch):
        u = lib.nn.utils
        m = models[lib] = lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3), lib.nn.Linear(3, 3),
                                            lib.nn.Conv3d(2, 2, 1))
        w = _np(m[0].weight).copy()
        p = m[0].weight
        assert u.convert_conv2d_weight_memory_format(m, lib.channels_last) is m
        np.testing.assert_array_equal(_np(m[0].weight), w)
        assert m[0].weight is p and isinstance(p, lib.nn.Parameter)
        with pytest.raises(RuntimeError, match="channels_last_3d"):
            u.convert_conv2d_weight_memory_format(m, lib.channels_last_3d)
        assert u.convert_conv3d_weight_memory_format(m, lib.channels_last_3d) is m
    # jflow keeps row-major strides (docs/porting.md: memory formats are accepted, not applied)
    assert models[flow][0].weight.stride() == (18, 9, 3, 1)
    assert models[torch][0].weight.stride() == (18, 1, 6, 2)


def test_stateless_functional_call_warns_and_calls():
    x = np.ones((2, 3), np.float32)
    for lib in (flow, torch):
        lin = lib.nn.Linear(3, 2)
        params = {"weight": lib.ones(2, 3), "bias": lib.zeros(2)}
        with pytest.warns(FutureWarning, match="`torch.nn.utils.stateless.functional_call` is "
                                               "deprecated as of PyTorch 2.0"):
            y = lib.nn.utils.stateless.functional_call(lin, params, (lib.tensor(x),))
        np.testing.assert_array_equal(_np(y), np.full((2, 2), 3.0))


# -- torch.func ------------------------------------------------------------------------------------

def test_linearize_as_pytorch():
    rng = np.random.default_rng(6)
    x, t1, t2 = (rng.standard_normal(4) for _ in range(3))
    res = []
    for lib in (flow, torch):
        def f(a):
            return a.sin() * a.sum()
        out, jvp_fn = lib.func.linearize(f, lib.tensor(x))
        res.append((_np(out), _np(jvp_fn(lib.tensor(t1))), _np(jvp_fn(lib.tensor(t2)))))
        with pytest.raises(RuntimeError, match=r"tangent:0 with shape .* in flattened pytree "
                                               r"doesn't match the shape"):
            jvp_fn(lib.ones(3, dtype=lib.float64))
        with pytest.raises(RuntimeError, match=r"tangent:0 with dtype .* doesn't match the dtype"):
            jvp_fn(lib.ones(4, dtype=lib.float32))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res[0][1], np.cos(x) * x.sum() * t1 + np.sin(x) * t1.sum())


def test_functionalize_as_pytorch():
    for lib in (flow, torch):
        def f(a):
            a.add_(1)
            return a * 2
        x = lib.ones(3)
        out = lib.func.functionalize(f)(x)
        assert _np(x).tolist() == [2.0] * 3 and _np(out).tolist() == [4.0] * 3
        base = lib.arange(6.0)
        v = lib.func.functionalize(lambda a: a.view(2, 3))(base)
        c = lib.func.functionalize(lambda a: a.view(2, 3), remove="mutations_and_views")(base)
        base.mul_(10)
        assert _np(v)[1, 2] == 50.0  # a view of the input
        assert _np(c)[1, 2] == 5.0  # a copy
        with pytest.raises(RuntimeError, match=re.escape(
                "functionalize(f, remove='mutations'): received invalid argument for remove=x. "
                "Valid options are:\n     remove='mutations': all inplace")):
            lib.func.functionalize(f, remove="x")


def test_replace_all_batch_norm_modules():
    for lib in (flow, torch):
        nn = lib.nn
        m = nn.Sequential(nn.BatchNorm1d(3), nn.InstanceNorm1d(3, track_running_stats=True),
                          nn.Sequential(nn.BatchNorm2d(2)), nn.BatchNorm1d(2,
                                                                        track_running_stats=False))
        assert lib.func.replace_all_batch_norm_modules_(m) is m
        for bn in (m[0], m[2][0]):
            assert bn.running_mean is None and bn.running_var is None
            assert bn.num_batches_tracked is None and bn.track_running_stats is False
            assert "running_mean" not in bn.state_dict()
        assert m[1].track_running_stats and m[1].running_mean is not None  # not a BatchNorm
        y = m[0](lib.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3)))
        assert tuple(y.shape) == (2, 3)
