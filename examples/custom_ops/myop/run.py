"""myop: y = 3·x² in C++, its gradient 6·x·dy built in Python from existing jflow ops.

Builds myop.cpp with jflow.utils.cpp_extension.load; runs the op eagerly, under jax.jit and
jax.vmap; registers the backward rule; checks tape, jax.grad and second derivatives
against NumPy; binds it with a user yaml and runs the op checker.
Run: python examples/custom_ops/myop/run.py [--cflags=-O0]  (-O0: a quicker build)
"""

from __future__ import annotations

import argparse
import os
import shlex

import jax
import jax.numpy as jnp
import numpy as np

import jflow as flow
from jflow.autograd import register_backward
from jflow.functional import load_api
from jflow.testing import ErrorSample, Sample, check_op, register_samples
from jflow.utils import cpp_extension, from_jax, to_jax

HERE = os.path.dirname(os.path.abspath(__file__))


def myop_ref(x: np.ndarray) -> np.ndarray:
    return 3 * np.asarray(x) ** 2


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cflags", default="", help="extra compiler flags (-O0: a quicker build)")
    flags = shlex.split(ap.parse_args(argv).cflags) or None
    lib = cpp_extension.load("myop", [os.path.join(HERE, "myop.cpp")], extra_cflags=flags)
    print(lib)
    myop = lib.myop  # the op itself (flow.ops.get("myop"))
    print(myop.signature())

    xs = np.linspace(-1.5, 2.0, 12).reshape(3, 4)
    for dt in (np.float32, np.float64):  # one kernel per dtype, chosen by jflow's registry
        np.testing.assert_allclose(myop(flow.tensor(xs.astype(dt))).numpy(),
                                   myop_ref(xs.astype(dt)), rtol=1e-6)

    def f(a: jax.Array) -> jax.Array:
        return to_jax(myop(from_jax(a)))

    np.testing.assert_allclose(jax.jit(f)(jnp.asarray(xs)), myop_ref(xs), rtol=1e-12)
    np.testing.assert_allclose(jax.vmap(f)(jnp.asarray(xs)), myop_ref(xs), rtol=1e-12)

    # the C++ inference function refuses integer inputs, naming the op
    try:
        myop(flow.tensor([1, 2]))
    except TypeError as e:
        assert str(e).startswith("op 'myop': myop takes a float32 or float64 input"), e
    else:
        raise AssertionError("myop accepted an integer input")

    # gradient 6·x·dy from existing ops (differentiable themselves: 2nd derivatives work)
    @register_backward("myop", save=["x"])
    def myop_backward(ctx, dy):
        (x,) = ctx.saved_tensors
        return flow.mul(flow.mul(x, dy), 6.0)

    xt = flow.tensor(xs, requires_grad=True)
    myop(xt).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), 6 * xs, rtol=1e-12)
    np.testing.assert_allclose(jax.grad(lambda a: f(a).sum())(jnp.asarray(xs)), 6 * xs,
                               rtol=1e-12)
    second = jax.grad(lambda a: jax.grad(lambda b: f(b).sum())(a).sum())(jnp.asarray(xs))
    np.testing.assert_allclose(second, np.full_like(xs, 6.0), rtol=1e-12)

    # the functional layer, from the user's yaml
    api = load_api(os.path.join(HERE, "myop_api.yaml"), functors={"MyOp": myop.apply})
    np.testing.assert_allclose(api.myop(flow.tensor(xs)).numpy(), myop_ref(xs), rtol=1e-12)

    register_samples("myop", [Sample([xs]), Sample([xs.astype(np.float32)]),
                              Sample([np.float64(0.75)], name="0-d")],
                     reference=myop_ref,
                     errors=[ErrorSample([np.arange(3)], {}, TypeError, "float32 or float64")])
    check_op("myop")
    print("myop: all checks passed")


if __name__ == "__main__":
    main()
