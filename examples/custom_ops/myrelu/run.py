"""myrelu: a C++ op (CPU kernel, plus a CUDA kernel when nvcc exists) used from jflow.

Builds myrelu.cpp (and myrelu.cu) with jflow.utils.cpp_extension.load, then runs the op
eagerly, under jax.jit and jax.vmap, gives it a backward rule written in Python with jflow
ops, checks gradients (tape and jax.grad) against NumPy, binds it into the functional layer
with a user yaml, and runs jflow's op checker on it, sharded runs (SBP) included.
Run: python examples/custom_ops/myrelu/run.py [--cflags=-O0]  (-O0: a quicker build)
"""

from __future__ import annotations

import argparse
import os
import shlex

# several CPU devices, for the sharded (SBP) check at the end (before JAX starts)
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import jax
import jax.numpy as jnp
import numpy as np

import jflow as flow
from jflow.autograd import register_backward
from jflow.functional import load_api
from jflow.testing import ErrorSample, Sample, check_op, register_samples
from jflow.utils import cpp_extension, from_jax, to_jax

HERE = os.path.dirname(os.path.abspath(__file__))


def myrelu_ref(x: np.ndarray, alpha: float = 0.1) -> np.ndarray:
    # alpha is a C++ float attr: the kernel sees float32(alpha), for float64 inputs too
    x = np.asarray(x)
    return np.where(x > 0, x, x.dtype.type(np.float32(alpha)) * x)


def build(cflags: list[str] | None = None) -> object:
    """Compile (cached) and load the library; ``cflags`` go to both compilers."""
    sources = [os.path.join(HERE, "myrelu.cpp")]
    if cpp_extension.find_nvcc():  # the CUDA kernel compiles only where nvcc is installed
        sources.append(os.path.join(HERE, "myrelu.cu"))
    return cpp_extension.load("myrelu", sources, extra_cflags=cflags, extra_cuda_cflags=cflags)


def parse_cflags(argv: list[str] | None) -> list[str] | None:
    """``--cflags``: extra compiler flags (e.g. ``-O0``: a quicker build than the default
    ``-O2``, the same checks), or None."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cflags", default=None, help="extra compiler flags, e.g. --cflags=-O0")
    args = ap.parse_args(argv)
    return shlex.split(args.cflags) if args.cflags else None


def gpu_available() -> bool:
    try:
        return bool(jax.devices("gpu"))
    except RuntimeError:
        return False


def main(argv: list[str] | None = None) -> None:
    lib = build(parse_cflags(argv))
    print(lib)
    assert lib.ops == ("myrelu",)
    platforms = sorted(k.platform for k in lib.kernels)
    assert platforms == (["cpu", "cuda"] if cpp_extension.find_nvcc() else ["cpu"]), platforms
    myrelu = flow.ops.get("myrelu")
    print(myrelu.signature())

    rng = np.random.default_rng(0)
    xs = rng.uniform(-2, 2, (3, 4)).astype(np.float32)
    xs[np.abs(xs) < 0.05] = 0.5  # keep away from the kink at 0 (finite differences)

    # eager (float32 and float64), default and given alpha
    x = flow.tensor(xs)
    np.testing.assert_allclose(myrelu(x).numpy(), myrelu_ref(xs), rtol=1e-6)
    np.testing.assert_allclose(myrelu(x, alpha=0.3).numpy(), myrelu_ref(xs, 0.3), rtol=1e-6)
    x64 = flow.tensor(xs.astype(np.float64))
    np.testing.assert_allclose(myrelu(x64, alpha=0.3).numpy(),
                               myrelu_ref(xs.astype(np.float64), 0.3), rtol=1e-12)

    # under jax.jit and jax.vmap
    def f(a: jax.Array, alpha: float = 0.2) -> jax.Array:
        return to_jax(myrelu(from_jax(a), alpha=alpha))

    np.testing.assert_allclose(jax.jit(f)(jnp.asarray(xs)), myrelu_ref(xs, 0.2), rtol=1e-6)
    batch = np.stack([xs, -xs, 2 * xs])
    np.testing.assert_allclose(jax.vmap(f)(jnp.asarray(batch)), myrelu_ref(batch, 0.2),
                               rtol=1e-6)
    np.testing.assert_allclose(jax.jit(jax.vmap(f))(jnp.asarray(batch)), myrelu_ref(batch, 0.2),
                               rtol=1e-6)

    # the backward rule, in Python, from existing jflow ops: dx = dy if x > 0 else alpha * dy
    # (the slope the kernel used: alpha rounded to a C++ float)
    @register_backward("myrelu", save=["x"])
    def myrelu_backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return flow.where(x > 0, dy, dy * float(np.float32(ctx.alpha)))

    def grad_ref(a: np.ndarray, alpha: float) -> np.ndarray:
        return np.where(a > 0, 1.0, np.float32(alpha)).astype(a.dtype)

    xt = flow.tensor(xs, requires_grad=True)  # the tape
    myrelu(xt, alpha=0.25).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), grad_ref(xs, 0.25), rtol=1e-6)
    g = jax.grad(lambda a: f(a, 0.25).sum())(jnp.asarray(xs))  # JAX's autodiff
    np.testing.assert_allclose(g, grad_ref(xs, 0.25), rtol=1e-6)
    g = jax.jit(jax.grad(lambda a: (f(a, 0.25) ** 2).sum()))(jnp.asarray(xs))
    np.testing.assert_allclose(g, 2 * myrelu_ref(xs, 0.25) * grad_ref(xs, 0.25), rtol=1e-5)

    # the functional layer: the user's own yaml, with a functor calling the op
    api = load_api(os.path.join(HERE, "myrelu_api.yaml"),
                   functors={"MyRelu": lambda x, alpha: myrelu.apply(x, alpha=alpha)})
    np.testing.assert_allclose(api.myrelu(x).numpy(), myrelu_ref(xs), rtol=1e-6)
    np.testing.assert_allclose(api.myrelu(x, 0.5).numpy(), myrelu_ref(xs, 0.5), rtol=1e-6)
    np.testing.assert_allclose(api.myrelu(x, alpha=2).numpy(), myrelu_ref(xs, 2.0), rtol=1e-6)

    # the op checker: NumPy reference, abstract eval, jit, vmap, gradients (in float64), errors
    register_samples("myrelu", [
        Sample([xs], {"alpha": 0.2}),
        Sample([xs.astype(np.float64)], {}),
        Sample([np.float32(-1.5)], {"alpha": 0.5}, name="0-d"),
    ], reference=myrelu_ref, errors=[
        ErrorSample([np.arange(3, dtype=np.int32)], {}, flow.kernels.KernelNotFoundError,
                    r"no kernel for platform 'cpu' and dtypes \(x: int32"),
        ErrorSample([xs], {"alpha": 1e39}, ValueError, r"attr 'alpha' .*does not fit"),
        ErrorSample([xs], {"alpha": "big"}, TypeError, r"attr 'alpha' \(float\)"),
    ])
    check_op("myrelu")

    # sharded: every SBP signature the op declares (.Sbp("elementwise")), run on global
    # tensors split over several devices, matches the single-device result
    try:
        from jflow.testing.sbp_check import check_op_sbp
    except ImportError:  # a jflow without sharded execution
        check_op_sbp = None
    if check_op_sbp is not None and len(jax.devices()) >= 2:
        ran, skipped = check_op_sbp("myrelu")
        assert ran >= 2, (ran, skipped)  # split on axis 0 and on axis 1 of the (3, 4) sample
        print(f"myrelu: {ran} SBP signatures checked on {len(jax.devices())} devices")

    if gpu_available():  # the CUDA kernel, where there is a GPU
        on_gpu = jax.device_put(jnp.asarray(xs), jax.devices("gpu")[0])
        np.testing.assert_allclose(jax.jit(f)(on_gpu), myrelu_ref(xs, 0.2), rtol=1e-6)
        print("myrelu: the CUDA kernel ran on", jax.devices("gpu")[0])
    else:
        print("myrelu: no GPU here, the CUDA kernel (if built) was registered but not run")
    print("myrelu: all checks passed")


if __name__ == "__main__":
    main()
