"""Every check of the op checker must fail on a wrong op: each test here defines an op that is
wrong in exactly one way and asserts that the check meant for it reports it (a check that no
wrong op can trip would be a check of the code against itself)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.interpreters import ad, batching

from jflow.autograd import register_backward
from jflow.kernels import register_kernel
from jflow.ops import Attr, define_op
from jflow.ops.infer import desc, same_as_input
from jflow.sharding.sbp import B, P, S, Signature
from jflow.tensor import _wrap
from jflow.testing import (
    CheckFailure,
    ErrorSample,
    GradCheckFailure,
    Sample,
    check_op,
    register_samples,
)
from jflow.testing.sbp_check import SbpCheckFailure, sbp_coverage

X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)


def _sin_op(name: str) -> Any:
    """An op computing sin, with a correct backward rule and sample (tests then break one
    piece of it)."""
    op = define_op(name, inputs=["x"], infer=same_as_input())
    register_kernel(name, jnp.sin)
    register_samples(name, [Sample([X])], np.sin)

    @register_backward(name, save=["x"])
    def _(ctx: Any, dy: Any) -> Any:
        (x,) = ctx.saved_tensors
        return dy * x.cos()

    return op


# -- forward checks ------------------------------------------------------------------------


def test_wrong_values_are_caught() -> None:
    define_op("test_chk_wrong", inputs=["x"], infer=same_as_input())
    register_kernel("test_chk_wrong", lambda x: x * 2)
    register_samples("test_chk_wrong", [Sample([X])], lambda x: x * 3)
    with pytest.raises(CheckFailure, match="eager vs NumPy reference"):
        check_op("test_chk_wrong")


def test_failed_verify_is_caught() -> None:
    # ops without a predictable value (random draws) give verify= instead of a reference
    def verify(outs: list[np.ndarray], x: np.ndarray) -> None:
        assert np.all(outs[0] >= 0), "a draw of |x| is negative"

    define_op("test_chk_verify", inputs=["x"], infer=same_as_input())
    register_kernel("test_chk_verify", lambda x: -jnp.abs(x))
    register_samples("test_chk_verify", [Sample([X])], verify=verify)
    with pytest.raises(CheckFailure, match="eager fails the sample's verify"):
        check_op("test_chk_verify", grad=False)


@pytest.mark.parametrize("backend", ["xla", "python"])
def test_wrong_inference_is_caught(backend: str) -> None:
    # the inference claims float64, the kernel gives float32: the checker compares the
    # abstract eval with the kernel called directly, before any eager call (whose lowering
    # has a check of its own, part of the code under test)
    name = f"test_chk_infer_{backend}"
    define_op(name, inputs=["x"], infer=lambda x: desc(x.shape, np.float64))
    register_kernel(name, (lambda x: x) if backend == "xla" else np.copy, backend=backend)
    register_samples(name, [Sample([X])], lambda x: x)
    with pytest.raises(CheckFailure, match="abstract eval says float64.*kernel gives float32"):
        check_op(name)


def test_wrong_inferred_shape_is_caught() -> None:
    define_op("test_chk_infer_shape", inputs=["x"], infer=lambda x: desc(x.shape[::-1],
                                                                       x.dtype))
    register_kernel("test_chk_infer_shape", lambda x: x)
    register_samples("test_chk_infer_shape", [Sample([X])], lambda x: x)
    with pytest.raises(CheckFailure, match=r"abstract eval says float32\[4, 3\]"):
        check_op("test_chk_infer_shape")


def test_jit_disagreeing_with_eager_is_caught() -> None:
    # a kernel reading Python state when traced: the eager executable was compiled before
    # the state changed, so eager still matches the reference; a fresh jax.jit does not
    state = {"scale": 2.0}
    define_op("test_chk_jit", inputs=["x"], infer=same_as_input())
    register_kernel("test_chk_jit", lambda x: x * state["scale"])
    register_samples("test_chk_jit", [Sample([X], vmap=False)], lambda x: x * 2)
    check_op("test_chk_jit", grad=False)
    state["scale"] = 3.0
    with pytest.raises(CheckFailure, match="under jax.jit vs NumPy reference"):
        check_op("test_chk_jit", grad=False)


def test_jit_bug_of_a_second_kernel_is_caught() -> None:
    # jax.jit runs on one sample per kernel: the float64 kernel reads Python state when
    # traced; its sample is not the op's first, yet its fresh trace is what shows the change
    state = {"scale": 2.0}
    name = "test_chk_jit_kernel"
    define_op(name, inputs=["x"], infer=same_as_input())
    register_kernel(name, lambda x: x * 2)
    register_kernel(name, lambda x: x * state["scale"], dtypes={"x": [np.float64]},
                    priority=10, name="stateful_f64")
    register_samples(name, [Sample([X], vmap=False), Sample([X.astype(np.float64)],
                                                            vmap=False)], lambda x: x * 2)
    assert check_op(name, grad=False).jit == 2
    state["scale"] = 3.0
    with pytest.raises(CheckFailure, match="under jax.jit vs NumPy reference"):
        check_op(name, grad=False)


def test_row_dependent_kernel_batches_exactly() -> None:
    # a kernel that treats dim 0 specially: the generic _vmap rule keeps it exact
    define_op("test_chk_vmap", inputs=["x"], infer=same_as_input())
    register_kernel("test_chk_vmap", lambda x: x - x[0:1])
    register_samples("test_chk_vmap", [Sample([X])], lambda x: x - x[0:1])
    check_op("test_chk_vmap", grad=False)


def test_naive_batching_rule_is_caught() -> None:
    # replace the generic rule by a naive one (binds on the batched array as if unbatched)
    op = define_op("test_chk_badvmap", inputs=["x"], infer=same_as_input())
    register_kernel("test_chk_badvmap", lambda x: x - x[0:1])
    register_samples("test_chk_badvmap", [Sample([X])], lambda x: x - x[0:1])

    def naive(args: Any, dims: Any, **params: Any) -> Any:
        return op.primitive.bind(*args, **params), [dims[0]]

    batching.primitive_batchers[op.primitive] = naive
    with pytest.raises(CheckFailure, match="vmap"):
        check_op("test_chk_badvmap")


def test_batching_rule_wrong_for_unbatched_inputs_is_caught() -> None:
    # a rule right when every input is batched but naive when one is not: only the check
    # with the first input batched and the rest shared (in_axes=[0, None]) can see it
    op = define_op("test_chk_vmap_first", inputs=["x", "y"], infer=lambda x, y: desc(
        x.shape, x.dtype))
    register_kernel("test_chk_vmap_first", lambda x, y: x - x[0:1] + y)
    register_samples("test_chk_vmap_first", [Sample([X, X * 2])], lambda x, y: x - x[0:1] + y)
    generic = batching.fancy_primitive_batchers.get(op.primitive)

    def half_right(axis_data: Any, args: Any, dims: Any, **params: Any) -> Any:
        if all(d is not None for d in dims):
            return generic(axis_data, args, dims, **params)
        return op.primitive.bind(*args, **params), [0]

    assert generic is not None
    batching.fancy_primitive_batchers[op.primitive] = half_right
    with pytest.raises(CheckFailure, match=r"in_axes=\[0, None\]"):
        check_op("test_chk_vmap_first", grad=False)


def test_batching_bug_of_a_second_kernel_is_caught() -> None:
    # vmap runs on one sample per kernel the registry picks: a float64-only kernel whose
    # host callback claims to batch (vmap_method="expand_dims") but subtracts row 0 of the
    # whole batch is wrong only under vmap, and only its float64 sample can show it, though
    # a float32 sample (the generic kernel, batched right) comes first
    name = "test_chk_vmap_kernel"
    define_op(name, inputs=["x"], infer=same_as_input())
    register_kernel(name, lambda x: x - x[0:1])

    def by_host(x: Any) -> Any:
        return jax.pure_callback(lambda a: a - a[0:1], jax.ShapeDtypeStruct(x.shape, x.dtype),
                                 x, vmap_method="expand_dims")

    register_kernel(name, by_host, dtypes={"x": [np.float64]},
                    priority=10, name="host_f64")
    register_samples(name, [Sample([X]), Sample([X.astype(np.float64)])],
                     lambda x: x - x[0:1])
    with pytest.raises(CheckFailure, match=r"sample \{\}: output 0 under jax.vmap"):
        check_op(name, grad=False)


# -- error samples -------------------------------------------------------------------------


def _checked_scale_op(name: str, errors: list[ErrorSample]) -> None:
    """x * k, for k >= 0 only (the kernel raises at trace time otherwise)."""
    def kernel(x: Any, k: int) -> Any:
        if k < 0:
            raise ValueError("k must be >= 0")
        return x * k

    define_op(name, inputs=["x"], attrs=[Attr("k", "int64", 1)], infer=same_as_input())
    register_kernel(name, kernel)
    register_samples(name, [Sample([X], {"k": 2})], lambda x, k: x * k, errors=errors)


def test_missing_error_is_caught() -> None:
    _checked_scale_op("test_chk_err", [ErrorSample([X], {"k": 3}, ValueError, "k")])
    with pytest.raises(CheckFailure, match="expected ValueError"):
        check_op("test_chk_err", grad=False)


def test_wrong_error_message_is_caught() -> None:
    _checked_scale_op("test_chk_errmsg",
                      [ErrorSample([X], {"k": -1}, ValueError, "k must be positive")])
    with pytest.raises(CheckFailure, match="does not match"):
        check_op("test_chk_errmsg", grad=False)


def test_error_not_naming_the_op_is_caught() -> None:
    _checked_scale_op("test_chk_errname", [ErrorSample([X], {"k": -1}, ValueError, "k must")])
    with pytest.raises(CheckFailure, match="does not name the op"):
        check_op("test_chk_errname", grad=False)


# -- gradient checks -------------------------------------------------------------------------


def test_jnp_kernel_passes() -> None:
    define_op("test_chk_ok", inputs=["x", "y"], infer=lambda x, y: desc(
        np.broadcast_shapes(x.shape, y.shape), x.dtype))
    register_kernel("test_chk_ok", jnp.add)
    register_samples("test_chk_ok", [Sample([X, X[:1]])], np.add)
    check_op("test_chk_ok", grad=False)
    with pytest.raises(CheckFailure, match="neither NoGrad nor has a backward rule"):
        check_op("test_chk_ok")


def test_correct_rule_passes() -> None:
    _sin_op("test_chk_goodgrad")
    check_op("test_chk_goodgrad")


def test_wrong_backward_rule_is_caught() -> None:
    define_op("test_chk_badgrad", inputs=["x"], infer=same_as_input())
    register_kernel("test_chk_badgrad", jnp.sin)
    register_samples("test_chk_badgrad", [Sample([X])], np.sin)

    @register_backward("test_chk_badgrad", save=["x"])
    def _(ctx: Any, dy: Any) -> Any:  # d sin = cos, not -cos
        (x,) = ctx.saved_tensors
        return -(dy * x.cos())

    check_op("test_chk_badgrad", grad=False)
    with pytest.raises(GradCheckFailure, match="eager tape.*finite differences"):
        check_op("test_chk_badgrad")


def test_wrong_jax_rule_is_caught() -> None:
    # the tape runs the (right) rule; a wrong JVP rule for the primitive only misleads JAX
    op = _sin_op("test_chk_badjvp")

    def wrong_jvp(primals: Any, tangents: Any, **params: Any) -> Any:
        (x,), (t,) = primals, tangents
        return op.primitive.bind(x, **params), [ad.instantiate_zeros(t) * -jnp.cos(x)]

    ad.primitive_jvps[op.primitive] = wrong_jvp
    with pytest.raises(GradCheckFailure, match=r"\(jax.grad\).*finite differences"):
        check_op("test_chk_badjvp")


def test_wrong_jax_rule_for_complex_inputs_is_caught() -> None:
    # jax.grad runs on one sample per kind of inputs (real, complex): a JVP rule wrong only
    # for complex inputs is caught on the complex sample though a real one comes first
    op = define_op("test_chk_badjvp_c", inputs=["x"], infer=lambda x: desc(x.shape, x.dtype))
    register_kernel("test_chk_badjvp_c", jnp.sin)
    register_samples("test_chk_badjvp_c", [Sample([X]), Sample([X + 0.5j * X[::-1]])],
                     np.sin)

    @register_backward("test_chk_badjvp_c", save=["x"])
    def _(ctx: Any, dy: Any) -> Any:
        (x,) = ctx.saved_tensors
        return dy * x.cos()

    check_op("test_chk_badjvp_c")
    right = ad.primitive_jvps[op.primitive]

    def wrong_for_complex(primals: Any, tangents: Any, **params: Any) -> Any:
        (x,), (t,) = primals, tangents
        if not jnp.iscomplexobj(x):
            return right(primals, tangents, **params)
        return op.primitive.bind(x, **params), [ad.instantiate_zeros(t) * -jnp.cos(x)]

    ad.primitive_jvps[op.primitive] = wrong_for_complex
    with pytest.raises(GradCheckFailure, match=r"\(jax.grad\).*finite differences"):
        check_op("test_chk_badjvp_c")


def test_rule_not_linear_in_its_cotangent_is_caught() -> None:
    # dy + (dy - stop_gradient(dy)) equals dy, so tape and jax.grad are right; but forward
    # mode differentiates the rule in dy, where it is 2 * dy: jvp and vjp disagree
    define_op("test_chk_nonlinear", inputs=["x"], infer=same_as_input())
    register_kernel("test_chk_nonlinear", jnp.sin)
    register_samples("test_chk_nonlinear", [Sample([X])], np.sin)

    @register_backward("test_chk_nonlinear", save=["x"])
    def _(ctx: Any, dy: Any) -> Any:
        (x,) = ctx.saved_tensors
        stopped = _wrap(jax.lax.stop_gradient(dy._value))
        return (dy + (dy - stopped)) * x.cos()

    with pytest.raises(GradCheckFailure, match="jax.jvp disagrees with jax.vjp"):
        check_op("test_chk_nonlinear")


def test_untaped_op_is_caught() -> None:
    # an apply path that drops the tape record: outputs never require grad
    op = _sin_op("test_chk_untaped")
    taped = op.apply
    op.apply = lambda *a, **k: taped(*a, **k).detach()
    with pytest.raises(GradCheckFailure, match="did not record"):
        check_op("test_chk_untaped")


def test_op_without_a_checkable_gradient_sample_is_caught() -> None:
    # a float32 output even for float64 inputs: the gradient check cannot run at float64
    # precision, skips the sample, and the op is left with no gradient really checked
    define_op("test_chk_f32out", inputs=["x"], infer=lambda x: desc(x.shape, np.float32))
    register_kernel("test_chk_f32out", lambda x: x.astype(jnp.float32))
    register_samples("test_chk_f32out", [Sample([X])], lambda x: x)

    @register_backward("test_chk_f32out")
    def _(ctx: Any, dy: Any) -> Any:
        return dy

    check_op("test_chk_f32out", grad=False)
    with pytest.raises(CheckFailure, match="no sample whose gradient is checked"):
        check_op("test_chk_f32out")


def test_declared_missing_derivative_that_runs_is_caught() -> None:
    # grad_error (geqrf: no derivative, as PyTorch) declares that the backward raises; a rule
    # that computes something instead, or raises an error not naming the op, is caught
    for name, msg in [("test_chk_noderiv", None), ("test_chk_noderiv_msg", "not implemented")]:
        define_op(name, inputs=["x"], infer=same_as_input())
        register_kernel(name, jnp.sin)
        register_samples(name, [Sample([X])], np.sin, grad_error=ErrorSample(
            [X.astype(np.float64)], {}, NotImplementedError, "not implemented"))

        @register_backward(name)
        def _(ctx: Any, dy: Any, msg: Any = msg) -> Any:
            if msg:
                raise NotImplementedError(msg)
            return dy

        with pytest.raises(GradCheckFailure, match="but it ran" if msg is None else
                           "does not name the op"):
            check_op(name)


# -- SBP check -------------------------------------------------------------------------------


def _row_sum_op(name: str, split_cols_gives: Any, sample: np.ndarray) -> None:
    """y = x.sum(1) declaring (S(0)) -> S(0) and (S(1)) -> ``split_cols_gives`` (right: P)."""
    def sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
        return [Signature((S(0),), (S(0),)), Signature((S(1),), (split_cols_gives,))]

    define_op(name, inputs=["x"], infer=lambda x: desc(x.shape[:1], x.dtype), sbp=sbp)
    register_kernel(name, lambda x: x.sum(axis=1))
    register_samples(name, [Sample([sample])], lambda x: x.sum(axis=1))


def test_wrong_sbp_signature_is_caught() -> None:
    # a sum over the split axis is a partial sum on each rank, not a broadcast value
    _row_sum_op("test_chk_badsbp", B, X)
    with pytest.raises(SbpCheckFailure, match=r"signature \(S\(1\)\) -> \(B\)"):
        sbp_coverage("test_chk_badsbp")


def test_unexercised_sbp_signature_is_reported() -> None:
    # 5 rows: no placement of 4, 3 or 2 devices splits them, so (S(0)) -> S(0) never runs
    _row_sum_op("test_chk_uncovered", P, np.ones((5, 4), np.float32))
    cov = sbp_coverage("test_chk_uncovered")
    assert "(S(1)) -> (P)" in cov.exercised
    assert cov.missing == ["(S(0)) -> (S(0))"]
    assert "splits it evenly" in cov.explain_missing()
