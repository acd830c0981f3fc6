"""Dynamic attrs: a float attr reaches the cached executable as a runtime scalar, so a new value
compiles nothing (eagerly, on the tape, under jax.jit / flow.jit), with the values and dtypes
a static Python float gave; a static attr still compiles per value."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow
from jflow import dispatch
from jflow.kernels.registry import register_kernel
from jflow.ops import Attr, define_op, define_python_op, get
from jflow.ops.infer import same_as_input
from jflow.tensor import _wrap as _T

ALPHAS = [0.01 + 0.037 * k for k in range(20)]
X = np.array([-2.5, -1.0, -0.3, 0.0, 0.4, 1.7, 3.0, -0.05], np.float64)
_names = itertools.count()


def _name(base: str) -> str:
    return f"test_dyn_{base}_{next(_names)}"


class _Compiles:
    """Counts XLA backend compilations (JAX's monitoring event) inside the block."""

    def __enter__(self) -> _Compiles:
        self.n = 0

        def listener(event: str, *_: object, **__: object) -> None:
            if event == "/jax/core/compile/backend_compile_duration":
                self.n += 1

        self._listener = listener
        jax.monitoring.register_event_duration_secs_listener(listener)
        return self

    def __exit__(self, *exc: object) -> None:
        jax.monitoring.unregister_event_duration_listener(self._listener)


# op name -> (attrs for value a, NumPy reference, NumPy derivative)
def _softplus_ref(x, a):
    return np.where(a * x > 20.0, x, np.log1p(np.exp(a * x)) / a)


CASES = {
    "leaky_relu": (lambda a: {"alpha": a}, lambda x, a: np.where(x > 0, x, a * x),
                   lambda x, a: np.where(x > 0, 1.0, a)),
    "clamp": (lambda a: {"min": -a, "max": 2 * a}, lambda x, a: np.clip(x, -a, 2 * a),
              lambda x, a: ((x >= -a) & (x <= 2 * a)).astype(float)),
    "elu": (lambda a: {"alpha": a}, lambda x, a: np.where(x > 0, x, a * np.expm1(x)),
            lambda x, a: np.where(x > 0, 1.0, a * np.exp(x))),
    "softplus": (lambda a: {"beta": a, "threshold": 20.0}, _softplus_ref,
                 lambda x, a: np.where(a * x > 20.0, 1.0, 1 / (1 + np.exp(-a * x)))),
    "hardtanh": (lambda a: {"min_val": -a, "max_val": a}, lambda x, a: np.clip(x, -a, a),
                 lambda x, a: ((x > -a) & (x < a)).astype(float)),
}


def _scale_fwd(args, k):
    (x,) = args
    return (x * k).astype(x.dtype)


def _scale_bwd(args, k):
    _, dy = args
    return (dy * k).astype(dy.dtype)


SCALE = define_python_op(_name("py_scale"), _scale_fwd, _scale_bwd, attrs=[Attr("k", "double")],
                         save=["x"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_executable_for_twenty_values(name):
    op = get(name)
    attrs_of, ref, _ = CASES[name]
    x = flow.tensor(X)
    op.apply(x, **attrs_of(0.5))  # warm: the first value is static, the second goes dynamic
    op.apply(x, **attrs_of(0.625))
    before = dispatch.executables(op)
    with _Compiles() as c:
        for a in ALPHAS:
            y = op.apply(x, **attrs_of(a))
            np.testing.assert_allclose(y.numpy(), ref(X, a), rtol=1e-12, atol=1e-12)
    assert c.n == 0
    assert dispatch.executables(op) == before


def test_python_op_float_attr_is_dynamic():
    x = flow.tensor(X)
    SCALE(x, k=0.5)
    SCALE(x, k=0.625)
    with _Compiles() as c:
        for a in ALPHAS:
            np.testing.assert_array_equal(SCALE(x, k=a).numpy(), X * a)
    assert c.n == 0
    assert dispatch.executables(SCALE) == 2  # the first value's static one, then one for all


def test_a_fixed_value_keeps_a_static_executable_until_a_second_value():
    """Automatic dynamic: nn.LeakyReLU(0.2) in a model passes no scalar operand per call."""
    op = define_op(_name("auto_scale"), inputs=["x"], outputs=["y"],
                   attrs=[Attr("k", "double", 1.0)], infer=same_as_input("float"))
    register_kernel(op.name, lambda x, k: x * k)
    x = flow.tensor(X)
    cache, _ = op.apply._caches
    for _ in range(3):
        np.testing.assert_array_equal(op.apply(x, k=0.5).numpy(), X * 0.5)
    assert dispatch.executables(op) == 1 and cache[0.5][2] == ()  # no operands: static
    for k in (0.25, 0.75, 0.5):
        np.testing.assert_array_equal(op.apply(x, k=k).numpy(), X * k)
    assert dispatch.executables(op) == 2
    assert cache[0.25][2] == (0.25,) and cache[0.75][2] == (0.75,)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_for_several_values_compile_once(name):
    op = get(name)
    attrs_of, _, dref = CASES[name]
    vals = ALPHAS[::4]
    grads = []
    with _Compiles() as c:
        for a in vals:
            x = flow.tensor(X, requires_grad=True)
            op.apply(x, **attrs_of(a)).sum().backward()
            grads.append(x.grad.numpy())
    n_first = c.n
    with _Compiles() as c:
        for a in [v + 0.011 for v in vals]:
            x = flow.tensor(X, requires_grad=True)
            op.apply(x, **attrs_of(a)).sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), dref(X, a), rtol=1e-12, atol=1e-12)
    assert c.n == 0, f"new values compiled {c.n} backward executables (first run: {n_first})"
    for a, g in zip(vals, grads):
        np.testing.assert_allclose(g, dref(X, a), rtol=1e-12, atol=1e-12)


def test_python_op_gradient_and_jax_grad():
    for a in (0.25, -1.5, 3.0):
        x = flow.tensor(X, requires_grad=True)
        SCALE(x, k=a).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full_like(X, a))
        g = jax.grad(lambda v, a=a: get("leaky_relu").apply(_T(v), alpha=a)._value.sum())(
            jnp.asarray(X))
        np.testing.assert_allclose(g, np.where(X > 0, 1.0, a))


def test_traced_attr_value_under_jax_jit_and_grad():
    op = get("leaky_relu")
    f = jax.jit(lambda v, a: op.apply(_T(v), alpha=a)._value)
    for a in (0.1, 0.7):
        np.testing.assert_allclose(f(jnp.asarray(X), a), np.where(X > 0, X, a * X))
    g = jax.jit(jax.grad(lambda v, a: op.apply(_T(v), alpha=a)._value.sum()))
    np.testing.assert_allclose(g(jnp.asarray(X), 0.3), np.where(X > 0, 1.0, 0.3))
    with pytest.raises(TypeError, match="cannot differentiate with respect to attr 'alpha'"):
        jax.grad(lambda a: op.apply(_T(jnp.asarray(X)), alpha=a)._value.sum())(0.3)
    py = jax.jit(lambda v, a: SCALE.apply(_T(v), k=a)._value)
    np.testing.assert_array_equal(py(jnp.asarray(X), 2.5), X * 2.5)


def test_flow_jit_with_changed_python_float():
    @flow.jit
    def step(x, alpha):
        return flow.nn.functional.leaky_relu(x, alpha) * 2

    x = flow.tensor(X)
    for a in (0.1, 0.2, 0.9):
        np.testing.assert_allclose(step(x, a).numpy(), 2 * np.where(X > 0, X, a * X))


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
@pytest.mark.parametrize("name", sorted(CASES))
def test_half_precision_keeps_dtype_and_rounds_like_a_python_float(name, dtype):
    op = get(name)
    attrs_of = CASES[name][0]
    # values whose float16 rounding differs between one rounding and two (via float32)
    for a in (0.002079963788165319, 0.029869079084082005, 0.6066894569407423, 0.2):
        x = _T(jnp.asarray(X * 3, dtype))
        y = op.apply(x, **attrs_of(a))
        assert y._value.dtype == dtype
        # the static reference: the same kernel with the attr as a Python float
        kernel = next(k.fn for k in flow.kernels.kernels_for(name) if k.backend == "xla")
        ref = jax.jit(lambda v, kernel=kernel, a=a: kernel(v, **attrs_of(a)))(x._value)
        np.testing.assert_array_equal(np.asarray(y._value.astype(jnp.float32)),
                                      np.asarray(ref.astype(jnp.float32)))


def test_static_attr_still_compiles_per_value():
    op = define_op(_name("static_scale"), inputs=["x"], outputs=["y"],
                   attrs=[Attr("k", "double", 1.0, static=True)], infer=same_as_input("float"))
    register_kernel(op.name, lambda x, k: x * k if k != 0 else jnp.zeros_like(x))
    x = flow.tensor(X)
    for k in (0.0, 1.0, 2.0, 3.0):
        np.testing.assert_array_equal(op.apply(x, k=k).numpy(), X * k)
    assert dispatch.executables(op) == 4
    assert not op.attrs[0].dynamic and op.dynamic_attrs == ()


def test_int_attr_opt_in_and_bad_declarations():
    op = define_op(_name("shift"), inputs=["x"], outputs=["y"],
                   attrs=[Attr("n", "int64", 0, static=False)], infer=same_as_input("float"))
    register_kernel(op.name, lambda x, n: x + n)
    x = flow.tensor(X)
    for n in range(5):
        np.testing.assert_array_equal(op.apply(x, n=n).numpy(), X + n)
    assert dispatch.executables(op) == 2 and op.dynamic_attrs == ("n",)
    with pytest.raises(flow.ops.OpDefinitionError, match="cannot be dynamic"):
        define_op(_name("bad"), inputs=["x"], attrs=[Attr("s", "string", "a", static=False)],
                  infer=same_as_input("float"))


def test_validation_runs_for_every_new_value():
    x = flow.tensor(X)
    with pytest.raises(ValueError, match="must not exceed"):
        get("hardtanh").apply(x, min_val=2.0, max_val=1.0)
    with pytest.raises(TypeError, match="expected a float"):
        get("leaky_relu").apply(x, alpha="0.1")
    # None stays static: clamp with min only, max only, both
    c = get("clamp")
    np.testing.assert_array_equal(c.apply(x, min=0.5).numpy(), np.maximum(X, 0.5))
    np.testing.assert_array_equal(c.apply(x, max=0.5).numpy(), np.minimum(X, 0.5))
    np.testing.assert_array_equal(c.apply(x, min=-0.5, max=0.5).numpy(), np.clip(X, -.5, .5))


def test_global_tensor_with_dynamic_attr():
    """Split over 4 devices: values and gradients right for every alpha, and the sharded
    executables (jflow.sharding.execute's cache) do not grow per value."""
    from jflow.sharding import execute
    plc = flow.placement("cpu", range(4))
    xg = flow.tensor(X).to_global(plc, flow.sbp.split(0)).requires_grad_()
    op = get("leaky_relu")
    before = None
    for a in (0.1, 0.4, *ALPHAS[:6]):  # warm: the first value static, then dynamic
        if a == ALPHAS[0]:
            before = len(execute._CACHE)
        y = op.apply(xg, alpha=a)
        assert y.sbp == (flow.sbp.split(0),)
        np.testing.assert_allclose(y.detach().numpy(), np.where(X > 0, X, a * X))
        y.sum().backward()
        np.testing.assert_allclose(xg.grad.numpy(), np.where(X > 0, 1.0, a))
        xg.grad = None
    assert len(execute._CACHE) == before
