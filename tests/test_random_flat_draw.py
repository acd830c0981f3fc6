"""The random kernels draw a flat vector and reshape it (jflow/ops/factory.py:flat_draw): XLA
compiles a 1-d threefry draw several times faster than an n-d one. The numbers must stay
the ones JAX draws for the n-d shape directly, so a seed gives the same tensors as before the
change: checked here against ``jax.random`` on a 3-d shape with the generator's key, bit for
bit for integers and masks, floats to 1 ulp (the rounding XLA's fusion of ``mean + std * z``
may move, in the kernels as they were too); another element order would differ by O(1).
One shape: each draw and each reference compiles (about a second each on CPU)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jflow as flow

SHAPE = (2, 3, 4)


def _key(g: flow.Generator) -> jax.Array:
    """The key of ``g``'s next draw (what the random ops fold in: ``fold_in(key, counter)``)."""
    key, counter = g._key_tensor(), g._counter
    return jax.random.fold_in(jnp.asarray(key.numpy()), jnp.uint32(counter))


def test_draws_equal_jax_on_the_nd_shape() -> None:
    g = flow.Generator().manual_seed(5)
    x = flow.ones(*SHAPE)
    cases = [
        (lambda: flow.rand(*SHAPE, generator=g),
         lambda k: jax.random.uniform(k, SHAPE, jnp.float32)),
        (lambda: flow.randn(*SHAPE, generator=g),
         lambda k: jax.random.normal(k, SHAPE, jnp.float32)),
        (lambda: flow.randint(-3, 9, SHAPE, generator=g),
         lambda k: jax.random.randint(k, SHAPE, -3, 9, jnp.int64)),
        (lambda: flow.nn.functional.dropout(x, 0.25, training=True, generator=g),
         lambda k: jnp.where(jax.random.bernoulli(k, 0.75, SHAPE), np.float32(1 / 0.75), 0)),
    ]
    for draw, want in cases:
        k = _key(g)
        got, ref = draw().numpy(), np.asarray(jax.jit(want)(k))
        assert got.shape == SHAPE and got.dtype == ref.dtype
        if got.dtype.kind == "f":
            np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)
        else:
            np.testing.assert_array_equal(got, ref)
