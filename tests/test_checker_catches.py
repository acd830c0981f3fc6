"""The checker must fail on wrong ops: a kernel that disagrees with its reference, an
inference that disagrees with its kernel, a batching bug, a missing error, a missing or wrong
backward rule."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from jflow.autograd import register_backward
from jflow.kernels import register_kernel
from jflow.ops import Attr, define_op
from jflow.ops.infer import desc, same_as_input
from jflow.testing import (
    CheckFailure,
    ErrorSample,
    GradCheckFailure,
    Sample,
    check_op,
    register_samples,
)

X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)


def test_wrong_values_are_caught() -> None:
    define_op("test_chk_wrong", inputs=["x"], infer=same_as_input())
    register_kernel("test_chk_wrong", lambda x: x * 2)
    register_samples("test_chk_wrong", [Sample([X])], lambda x: x * 3)
    with pytest.raises(CheckFailure, match="NumPy reference"):
        check_op("test_chk_wrong")


def test_wrong_inference_is_caught() -> None:
    # the inference claims float64 but the sample's reference agrees with the kernel: the
    # kernel-vs-inference check inside lowering reports the disagreement first
    define_op("test_chk_infer", inputs=["x"], infer=lambda x: desc(x.shape, np.float64))
    register_kernel("test_chk_infer", lambda x: x)
    register_samples("test_chk_infer", [Sample([X])], lambda x: x)
    with pytest.raises(ValueError, match="inference says"):
        check_op("test_chk_infer")


def test_row_dependent_kernel_batches_exactly() -> None:
    # a kernel that treats dim 0 specially: the generic _vmap rule keeps it exact
    define_op("test_chk_vmap", inputs=["x"], infer=same_as_input())
    register_kernel("test_chk_vmap", lambda x: x - x[0:1])
    register_samples("test_chk_vmap", [Sample([X])], lambda x: x - x[0:1])
    check_op("test_chk_vmap", grad=False)


def test_naive_batching_rule_is_caught() -> None:
    # replace the generic rule by a naive one (binds on the batched array as if unbatched)
    from jax.interpreters import batching
    op = define_op("test_chk_badvmap", inputs=["x"], infer=same_as_input())
    register_kernel("test_chk_badvmap", lambda x: x - x[0:1])
    register_samples("test_chk_badvmap", [Sample([X])], lambda x: x - x[0:1])

    def naive(args, dims, **params):
        return op.primitive.bind(*args, **params), [dims[0]]

    batching.primitive_batchers[op.primitive] = naive
    with pytest.raises(CheckFailure, match="vmap"):
        check_op("test_chk_badvmap")


def test_missing_error_is_caught() -> None:
    define_op("test_chk_err", inputs=["x"], attrs=[Attr("k", "int64", 1)],
              infer=same_as_input())
    register_kernel("test_chk_err", lambda x, k: x * k)
    register_samples("test_chk_err", [Sample([X], {"k": 2})], lambda x, k: x * k,
                     errors=[ErrorSample([X], {"k": -1}, ValueError, "k")])
    with pytest.raises(CheckFailure, match="expected ValueError"):
        check_op("test_chk_err")


def test_jnp_kernel_passes() -> None:
    define_op("test_chk_ok", inputs=["x", "y"], infer=lambda x, y: desc(
        np.broadcast_shapes(x.shape, y.shape), x.dtype))
    register_kernel("test_chk_ok", jnp.add)
    register_samples("test_chk_ok", [Sample([X, X[:1]])], np.add)
    check_op("test_chk_ok", grad=False)
    with pytest.raises(CheckFailure, match="neither NoGrad nor has a backward rule"):
        check_op("test_chk_ok")


def test_wrong_backward_rule_is_caught() -> None:
    define_op("test_chk_badgrad", inputs=["x"], infer=same_as_input())
    register_kernel("test_chk_badgrad", jnp.sin)
    register_samples("test_chk_badgrad", [Sample([X])], np.sin)

    @register_backward("test_chk_badgrad", save=["x"])
    def _(ctx, dy):  # d sin = cos, not -cos
        (x,) = ctx.saved_tensors
        return -(dy * x.cos())

    check_op("test_chk_badgrad", grad=False)
    with pytest.raises(GradCheckFailure, match="eager tape.*finite differences"):
        check_op("test_chk_badgrad")

