"""user_relu: NumPy forward/backward loaded from this folder, checked against NumPy.

    python examples/custom_ops/user_relu/run.py

Loads the folder with ``flow.experimental.custom_op_module`` (OneFlow's convention:
user_relu_op.py, user_relu_py_api.py, user_relu_py_kernel.py), then runs the wrapper
eagerly, under jax.jit and jax.vmap, and differentiates it with the tape and jax.grad.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import jflow as flow
from jflow.experimental import custom_op_module

HERE = Path(__file__).resolve().parent
T = flow.utils.from_jax
J = flow.utils.to_jax   # a Tensor's jax.Array: what jax.jit / grad / vmap return
X = np.array([-2.0, -1.0, 0.5, 1.0, 2.0], np.float32)
W = np.array([1.0, -2.0, 3.0, 0.5, -1.5], np.float32)


def close(got, want, what: str) -> None:
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-7, err_msg=what)
    print(f"ok  {what}")


def main() -> None:
    # the seed: user_relu_op.py_api().cpp_def().py_kernel().build_load(); in jflow
    # custom_op_module loads all three parts at once (the chain is accepted and checks them)
    user_relu_op = custom_op_module("user_relu", HERE)
    user_relu_op.py_api().cpp_def().py_kernel().build_load()
    assert user_relu_op.ops == ["user_relu_backward", "user_relu_forward"], user_relu_op.ops
    relu = user_relu_op.api.user_relu_forward

    y = relu(flow.tensor(X))
    assert y.dtype == flow.float32
    close(y.numpy(), np.maximum(X, 0), "eager")
    close(relu(flow.tensor(X.astype(np.float64))).numpy(), np.maximum(X, 0), "eager float64")
    close(jax.jit(lambda v: J(relu(T(v))))(jnp.asarray(X)), np.maximum(X, 0), "jax.jit")
    xs = np.stack([X, -X, 2 * X])
    close(jax.vmap(lambda v: J(relu(T(v))))(jnp.asarray(xs)), np.maximum(xs, 0), "jax.vmap")

    # gradients: the NumPy backward runs as the op's backward rule
    want = (X > 0) * W
    x = flow.tensor(X, requires_grad=True)
    (relu(x) * flow.tensor(W)).sum().backward()
    close(x.grad.numpy(), want, "tape: backward()")

    def loss(v):
        return J((relu(T(v)) * T(jnp.asarray(W))).sum())

    close(jax.grad(loss)(jnp.asarray(X)), want, "jax.grad")
    close(jax.jit(jax.grad(loss))(jnp.asarray(X)), want, "jax.jit(jax.grad)")
    gs = jax.vmap(jax.grad(loss))(jnp.asarray(xs))
    close(gs, (xs > 0) * W, "jax.vmap(jax.grad)")


if __name__ == "__main__":
    main()
