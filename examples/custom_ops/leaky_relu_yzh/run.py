"""Run leaky_relu_yzh everywhere a built-in op runs, against NumPy.

    python examples/custom_ops/leaky_relu_yzh/run.py

Eager, jax.jit, jax.vmap, the tape (``backward()``), jax.grad / jax.jvp, per-dtype kernel
choice, the SBP signatures and global (sharded) tensors on 4 virtual CPU devices, OneFlow's
builder, and jflow's op checker on both ops.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax

# 4 virtual CPU devices for the sharded part; must precede any JAX computation
jax.config.update("jax_num_cpu_devices", 4)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jflow as flow  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import leaky_relu_yzh_op as yzh  # noqa: E402  (defines the op: user code, not jflow's)

from jflow.kernels import select_kernel  # noqa: E402
from jflow.sharding.sbp import signatures_of  # noqa: E402
from jflow.testing import check_op  # noqa: E402
from jflow.user_op_builder import user_op_builder  # noqa: E402

T = flow.utils.from_jax
J = flow.utils.to_jax   # a Tensor's jax.Array: what jax.jit / grad / vmap return
ALPHA = 0.1
X = np.array([[-2.0, -0.5, 0.3], [1.5, -1.2, 0.8]], np.float32)
W = np.array([[1.0, 2.0, -1.0], [0.5, -3.0, 4.0]], np.float32)


def ref(x: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    return np.where(x > 0, x, alpha * x)


def ref_grad(x: np.ndarray, dy: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    return np.where(x > 0, dy, alpha * dy)


def close(got, want, what: str) -> None:
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=1e-7, err_msg=what)
    print(f"ok  {what}")


def f(v: jax.Array) -> jax.Array:
    """A JAX function calling the user op: the weighted sum of leaky_relu_yzh(v)."""
    return J((yzh.leaky_relu_yzh(T(v), alpha=ALPHA) * T(jnp.asarray(W, v.dtype))).sum())


def main() -> None:
    x = flow.tensor(X)
    # eager, through the functional binding of our yaml
    y = yzh.leaky_relu_yzh(x, alpha=ALPHA)
    assert y.dtype == flow.float32 and tuple(y.shape) == X.shape
    close(y.numpy(), ref(X), "eager (functional binding)")
    close(yzh.leaky_relu_yzh(x).numpy(), ref(X, 0.01), "eager, default alpha from the yaml")
    # the op itself, and OneFlow's builder
    close(yzh.LEAKY_RELU_YZH(x, alpha=ALPHA).numpy(), ref(X), "op(...)")
    out = (user_op_builder("op_leaky_relu_yzh").Op("leaky_relu_yzh").Input("x", [x])
           .Output("y").Attr("alpha", ALPHA).Build().InferAndTryRun().SoleOutputBlob())
    close(out.numpy(), ref(X), "user_op_builder")

    # per-dtype kernels: float64 picks the OPTIMIZED float64-only kernel
    op = yzh.LEAKY_RELU_YZH
    for dt, want in ((np.float32, "leaky_relu_yzh_xla"), (np.float64, "leaky_relu_yzh_f64")):
        aval = jax.core.ShapedArray(X.shape, dt)
        got = select_kernel(op, "cpu", [aval], [aval], None).name
        assert got == want, (dt, got)
        close(yzh.leaky_relu_yzh(flow.tensor(X.astype(dt)), alpha=ALPHA).numpy(),
              ref(X.astype(dt)), f"{np.dtype(dt).name} runs kernel {got}")

    # jax.jit and jax.vmap
    jitted = jax.jit(lambda v: J(yzh.leaky_relu_yzh(T(v), alpha=ALPHA)))
    close(jitted(jnp.asarray(X)), ref(X), "jax.jit")
    batched = jax.vmap(lambda v: J(yzh.leaky_relu_yzh(T(v), alpha=ALPHA)))
    close(batched(jnp.asarray(np.stack([X, -X]))), np.stack([ref(X), ref(-X)]), "jax.vmap")

    # the tape
    xt = flow.tensor(X, requires_grad=True)
    (yzh.leaky_relu_yzh(xt, alpha=ALPHA) * flow.tensor(W)).sum().backward()
    close(xt.grad.numpy(), ref_grad(X, W), "tape: backward()")

    # JAX's transformations: grad (also under jit), jvp, and a second derivative
    xv = jnp.asarray(X)
    close(jax.grad(f)(xv), ref_grad(X, W), "jax.grad")
    close(jax.jit(jax.grad(f))(xv), ref_grad(X, W), "jax.jit(jax.grad)")
    t = jnp.asarray(np.linspace(-1, 1, X.size, dtype=np.float32).reshape(X.shape))
    _, tangent = jax.jvp(f, (xv,), (t,))
    close(tangent, np.sum(ref_grad(X, W) * np.asarray(t)), "jax.jvp")
    # f is piecewise linear: its Hessian-vector product is 0 (the grad op's own rule runs)
    _, hvp = jax.jvp(jax.grad(f), (xv,), (t,))
    close(hvp, np.zeros_like(X), "jax.jvp(jax.grad) (second order)")

    # SBP signatures (used by global tensors): splits for each axis, B always; grad: (B, P)->P
    sigs = [repr(s) for s in signatures_of(op, [X.shape], 1, {"alpha": ALPHA})]
    assert sigs == ["(S(0)) -> (S(0))", "(S(1)) -> (S(1))", "(B) -> (B)"], sigs
    gsigs = [repr(s) for s in signatures_of(yzh.LEAKY_RELU_YZH_GRAD, [X.shape, X.shape], 1,
                                            {"alpha": ALPHA})]
    assert "(B, P) -> (P)" in gsigs, gsigs
    print(f"ok  sbp signatures {sigs}; grad op {gsigs}")

    # global tensors: a split input stays split (the S(i) -> S(i) signature, no transfer)
    plc = flow.placement("cpu", [0, 1, 2, 3])
    x4 = np.linspace(-3, 3, 16).reshape(4, 4)
    for axis in (0, 1):
        xg = flow.tensor(x4).to_global(placement=plc, sbp=flow.sbp.split(axis))
        yg = yzh.leaky_relu_yzh(xg, alpha=ALPHA)
        assert yg.sbp == (flow.sbp.split(axis),), yg.sbp
        close(yg.numpy(), ref(x4), f"global tensor split({axis}) -> {yg.sbp}")
    xg = flow.tensor(x4).to_global(placement=plc, sbp=flow.sbp.split(0))
    xg.requires_grad_(True)
    yzh.leaky_relu_yzh(xg, alpha=ALPHA).sum().backward()
    close(xg.grad.numpy(), ref_grad(x4, np.ones_like(x4)), f"global tape gradient {xg.grad.sbp}")

    # the op checker: abstract eval, NumPy reference, jit, vmap, error samples, and the
    # gradient check (tape and jax.grad vs finite differences, jvp vs vjp)
    for name in ("leaky_relu_yzh", "leaky_relu_yzh_grad"):
        check_op(name)
        print(f"ok  check_op('{name}')")


if __name__ == "__main__":
    main()
