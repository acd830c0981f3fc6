"""The kernel registry: backends (xla, python, custom), selection by platform / dtypes /
condition / priority, and the errors of bad registrations and bad kernels. Op names are
unique (``test_kreg_``) since one process defines each name once."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow
from jflow.kernels import (
    DEFAULT,
    FALLBACK,
    OPTIMIZED,
    KernelNotFoundError,
    kernels_for,
    register_backend,
    register_kernel,
    select_kernel,
)
from jflow.ops import Attr, Input, define_op
from jflow.ops.infer import desc

_ids = itertools.count()


def _same(x, **attrs):
    return desc(x.shape, x.dtype)


def _op(stem: str, **kw):
    kw.setdefault("inputs", ["x"])
    kw.setdefault("infer", _same)
    return define_op(f"test_kreg_{stem}_{next(_ids)}", **kw)


def _t(a, dtype=None) -> flow.Tensor:
    return flow.tensor(np.asarray(a, dtype=dtype))


X = np.array([1.0, -2.0, 3.0], np.float32)


# ---- python backend ------------------------------------------------------------------------

def test_python_kernel_eager_jit_and_vmap():
    calls = []
    op = _op("py", attrs=[Attr("k", "double", 2.0), Attr("dt", "dtype", None)])

    @register_kernel(op.name, backend="python", name="numpy_scale")
    def kernel(x, k, dt):
        assert isinstance(x, np.ndarray)  # NumPy in ...
        calls.append(x.shape)
        return (x * k).astype(x.dtype)  # ... NumPy out

    np.testing.assert_allclose(op(_t(X), k=3.0).numpy(), X * 3)
    assert calls == [(3,)]
    got = jax.jit(lambda t: op.apply(t, k=0.5))(_t(X))
    np.testing.assert_allclose(got.numpy(), X * 0.5)
    xs = np.arange(12, dtype=np.float64).reshape(4, 3)
    calls.clear()
    got = jax.vmap(lambda t: op.apply(t, k=-1.0))(_t(xs))
    np.testing.assert_allclose(got.numpy(), -xs)
    assert calls == [(3,)] * 4  # run once per example
    assert [k.name for k in kernels_for(op.name)] == ["numpy_scale"]
    assert kernels_for(op.name)[0].backend == "python"


def test_python_kernel_with_optional_input_and_several_outputs():
    op = _op("py2", inputs=["x", Input("y", optional=True)], outputs=["s", "n"],
             infer=lambda x, y: (desc(x.shape, x.dtype), desc((), np.int64)))

    @register_kernel(op.name, backend="python")
    def kernel(x, y):
        return (x if y is None else x + y), np.int64(x.size)

    s, n = op(_t(X), _t(X))
    np.testing.assert_allclose(s.numpy(), 2 * X)
    assert int(n.numpy()) == 3
    s, n = jax.jit(lambda t: op.apply(t, None))(_t(X))
    np.testing.assert_allclose(s.numpy(), X)


@pytest.mark.parametrize("bad, exc, detail", [
    (lambda x: np.zeros(5, x.dtype), ValueError,
     r"returned output 0 with shape \(5,\) dtype float32; the op's inference says shape "
     r"\(3,\) dtype float32"),
    (lambda x: x.astype(np.int32), ValueError,
     r"returned output 0 with shape \(3,\) dtype int32; the op's inference says shape "
     r"\(3,\) dtype float32"),
    (lambda x: (x, x), ValueError, r"returned 2 outputs, the op's inference gives 1"),
    (lambda x: 1 / 0, RuntimeError, r"raised ZeroDivisionError: division by zero"),
])
def test_bad_python_kernel_errors_name_op_and_kernel(bad, exc, detail):
    op = _op("pybad")
    register_kernel(op.name, bad, backend="python", name="bad_numpy")
    pattern = rf"op '{op.name}': python kernel 'bad_numpy' .*{detail}"
    # eager: the kernel's own error, not JAX's runtime-error wrapper
    with pytest.raises(exc, match=pattern) as info:
        op(_t(X))
    assert not isinstance(info.value, jax.errors.JaxRuntimeError)
    # under the user's jax.jit JAX's wrapper surfaces, and its message carries ours
    with pytest.raises(jax.errors.JaxRuntimeError, match=pattern):
        jax.jit(lambda v: op(flow.utils.from_jax(v))._value)(jnp.asarray(X))


# ---- selection -----------------------------------------------------------------------------

def test_higher_priority_wins_and_dtype_restrictions_fall_back():
    op = _op("prio")
    register_kernel(op.name, lambda x: x + 1, name="generic", priority=FALLBACK)
    register_kernel(op.name, lambda x: x + 2, name="f32_only", priority=OPTIMIZED,
                    dtypes={"x": [flow.float32], "out": ["float32"]})
    register_kernel(op.name, lambda x: x + 3, name="ints", dtypes={"x": [np.int32, np.int64]})
    np.testing.assert_allclose(op(_t(X)).numpy(), X + 2)
    np.testing.assert_allclose(op(_t(X, np.float64)).numpy(), X + 1)  # float32 kernel refuses
    np.testing.assert_array_equal(op(_t([1, 2], np.int32)).numpy(), [4, 5])
    sel = select_kernel(op, "cpu", [jax.core.ShapedArray((3,), np.float16)],
                        [jax.core.ShapedArray((3,), np.float16)], None)
    assert sel.name == "generic"


def test_equal_priority_later_registration_wins():
    op = _op("tie")
    register_kernel(op.name, lambda x: x + 1, name="first")
    register_kernel(op.name, lambda x: x + 2, name="second", priority=DEFAULT)
    np.testing.assert_allclose(op(_t(X)).numpy(), X + 2)


def test_condition_predicate():
    op = _op("cond")
    seen = []

    def even_length(x):
        seen.append(x.shape)
        return x.shape[-1] % 2 == 0

    register_kernel(op.name, lambda x: x * 10, name="plain")
    register_kernel(op.name, lambda x: x * 20, name="even", priority=OPTIMIZED,
                    condition=even_length)
    np.testing.assert_allclose(op(_t(X)).numpy(), X * 10)
    np.testing.assert_allclose(op(_t(X[:2])).numpy(), X[:2] * 20)
    assert (3,) in seen and (2,) in seen
    # under vmap the condition sees per-example avals
    xs = np.ones((5, 2), np.float32)
    np.testing.assert_allclose(jax.vmap(op.apply)(_t(xs)).numpy(), xs * 20)
    assert seen[-1] == (2,)


def test_failing_condition_names_op_and_kernel():
    op = _op("condfail")
    register_kernel(op.name, lambda x: x, name="picky", condition=lambda x: x.shape[5] > 0)
    with pytest.raises(RuntimeError, match=rf"^op '{op.name}': the condition of xla kernel "
                                           r"'picky' .* raised IndexError"):
        op(_t(X))


def test_kernel_registered_after_first_use_is_selected():
    op = _op("late")
    register_kernel(op.name, lambda x: x + 1, name="early")
    f = jax.jit(lambda t: op.apply(t))
    np.testing.assert_allclose(op(_t(X)).numpy(), X + 1)
    np.testing.assert_allclose(f(_t(X)).numpy(), X + 1)
    register_kernel(op.name, lambda x: x + 5, name="late", priority=OPTIMIZED)
    np.testing.assert_allclose(op(_t(X)).numpy(), X + 5)
    np.testing.assert_allclose(f(_t(X)).numpy(), X + 5)


def test_no_matching_kernel_lists_what_is_registered():
    op = _op("nomatch", inputs=["x", "y"], infer=lambda x, y: desc(x.shape, x.dtype))
    register_kernel(op.name, lambda x, y: x + y, name="f64_add", dtypes={"x": ["float64"]})
    register_kernel(op.name, lambda x, y: x + y, name="gpu_add", platforms=["cuda", "rocm"],
                    priority=OPTIMIZED, condition=lambda x, y: True)
    with pytest.raises(KernelNotFoundError) as info:
        op(_t(X), _t(X))
    msg = str(info.value)
    assert msg.startswith(f"op '{op.name}': no kernel for platform 'cpu' and dtypes (x: float32, "
                          f"y: float32, out: float32); registered kernels:\n")
    assert "xla kernel 'f64_add' (platforms cpu,cuda,rocm,tpu; x in {float64}; priority " \
           "default)" in msg
    assert "xla kernel 'gpu_add' (platforms cuda,rocm; priority optimized; with a condition)" \
           in msg


def test_cuda_only_kernel_fails_on_cpu_naming_the_platform():
    op = _op("cuda")
    register_kernel(op.name, lambda x: x, platforms="cuda", name="cuda_copy")
    with pytest.raises(KernelNotFoundError, match=rf"^op '{op.name}': no kernel for platform "
                                                  r"'cpu'.*\n  xla kernel 'cuda_copy' "
                                                  r"\(platforms cuda;"):
        op(_t(X))
    with pytest.raises(KernelNotFoundError, match=r"platform 'cpu'"):
        jax.jit(lambda t: op.apply(t))(_t(X))


def test_cpu_only_ops_only_take_cpu_kernels():
    op = _op("cpuonly", traits=("NoSideEffect", "CpuOnly"))
    with pytest.raises(ValueError, match=rf"kernel for op '{op.name}': the op is CpuOnly but the "
                                         r"kernel's platforms \['cuda'\] do not include 'cpu'"):
        register_kernel(op.name, lambda x: x, platforms=["cuda"])
    register_kernel(op.name, lambda x: x * 2)
    assert kernels_for(op.name)[0].platforms == frozenset({"cpu"})
    np.testing.assert_allclose(op(_t(X)).numpy(), X * 2)


# ---- registration errors -------------------------------------------------------------------

def test_registration_errors():
    op = _op("regerr")
    with pytest.raises(KeyError, match=r"cannot register a kernel for unknown op "
                                       r"'test_kreg_nope': no jflow op named 'test_kreg_nope'"):
        register_kernel("test_kreg_nope", lambda x: x)
    with pytest.raises(ValueError, match=rf"^kernel for op '{op.name}': unknown backend "
                                         r"'triton'; known backends are \[.*'python', .*'xla'"):
        register_kernel(op.name, lambda x: x, backend="triton")
    with pytest.raises(ValueError, match=rf"^kernel for op '{op.name}': unknown platform\(s\) "
                                         r"\['gpu'\]; known platforms are \['cpu', 'cuda', "
                                         r"'rocm', 'tpu'\]$"):
        register_kernel(op.name, lambda x: x, platforms=["cpu", "gpu"])
    with pytest.raises(ValueError, match=rf"^kernel for op '{op.name}': platforms is empty"):
        register_kernel(op.name, lambda x: x, platforms=[])
    with pytest.raises(ValueError, match=rf"^kernel for op '{op.name}': dtypes names 'y', which "
                                         r"is not an input or output of the op \(\['out', 'x'\]\)"):
        register_kernel(op.name, lambda x: x, dtypes={"y": ["float32"]})
    with pytest.raises(TypeError, match=rf"^kernel for op '{op.name}': dtypes of 'x': "
                                        r"unsupported dtype 'complex32'"):
        register_kernel(op.name, lambda x: x, dtypes={"x": ["complex32"]})
    with pytest.raises(TypeError, match=rf"^kernel for op '{op.name}': fn must be callable"):
        register_kernel(op.name, "x + 1")
    with pytest.raises(TypeError, match=rf"^kernel for op '{op.name}': priority must be an int"):
        register_kernel(op.name, lambda x: x, priority="high")
    with pytest.raises(TypeError, match=rf"^kernel for op '{op.name}': condition must be "
                                        r"callable"):
        register_kernel(op.name, lambda x: x, condition=True)
    assert kernels_for(op.name) == []  # failed registrations leave nothing behind


def test_xla_kernel_disagreeing_with_inference():
    op = _op("xlabad")
    register_kernel(op.name, lambda x: jnp.sum(x), name="bad_sum")
    with pytest.raises(ValueError, match=rf"^op '{op.name}': xla kernel 'bad_sum' \(.*\) "
                                         r"returned output 0 with shape \(\) dtype float32; the "
                                         r"op's inference says shape \(3,\) dtype float32"):
        op(_t(X))
    op2 = _op("xlabad_dtype")
    register_kernel(op2.name, lambda x: x.astype(jnp.float64), name="upcast")
    with pytest.raises(ValueError, match=rf"^op '{op2.name}': xla kernel 'upcast' .* dtype "
                                         r"float64; the op's inference says .* dtype float32"):
        jax.jit(lambda t: op2.apply(t))(_t(X))


# ---- custom backends -----------------------------------------------------------------------

def _negating_backend(kernel, op, attrs, out_avals, layout):
    """A toy backend: runs the kernel with jnp and negates each output."""
    def run(*flat):
        outs = kernel.fn(*op.unflatten(flat, layout), **attrs)
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        return [-o for o in outs]
    return run


register_backend("test_negating", _negating_backend)


def test_custom_backend():
    op = _op("custom", attrs=[Attr("k", "double", 1.0)])
    register_kernel(op.name, lambda x, k: x * k, backend="test_negating", name="neg_scale")
    np.testing.assert_allclose(op(_t(X), k=2.0).numpy(), -2 * X)
    xs = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(jax.jit(jax.vmap(lambda t: op.apply(t)))(_t(xs)).numpy(), -xs)
    assert kernels_for(op.name)[0].describe().startswith("test_negating kernel 'neg_scale'")


def test_register_backend_errors():
    register_backend("test_negating", _negating_backend)  # same builder again: fine
    with pytest.raises(ValueError, match=r"a backend named 'xla' is already registered"):
        register_backend("xla", _negating_backend)
    with pytest.raises(TypeError, match=r"builder must be callable"):
        register_backend("test_other", None)
    with pytest.raises(TypeError, match=r"name must be a non-empty string"):
        register_backend("", _negating_backend)
