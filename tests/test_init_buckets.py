"""Model construction compiles a handful of programs, not a few per parameter shape.

``nn.init``'s random fills draw on a flat bucket shared by many shapes and keep its first
``numel`` values (jflow/nn/init.py:_draw); ``empty`` / ``zeros`` / ``ones`` of a new shape are
made on the host for their first sightings (functional/functors/factory.py:_host_full). The
values must be the ones drawn for the shape itself: checked against ``jax.random`` with the
generator's key on the shape's flat draw (what the random ops compute, see
test_random_flat_draw.py), and the generator must be left where a plain draw leaves it."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import scipy.special
from _compiles import compiles as _compiles

import jflow as flow
from jflow.functional.functors import factory
from jflow.nn import init


def _key(g: flow.Generator) -> jax.Array:
    """The key of ``g``'s next draw (``fold_in(key, counter)``, as the random ops)."""
    return jax.random.fold_in(jnp.asarray(g._key_tensor().numpy()), jnp.uint32(g._counter))


# (5, 7): the smallest bucket; (300, 200): 60000 elements, the same bucket; (3, 5, 70, 70):
# 73500, the next one
SHAPES = [(5, 7), (300, 200), (3, 5, 70, 70)]


@pytest.mark.parametrize("shape", SHAPES)
def test_init_fills_equal_the_shape_drawn_directly(shape):
    g = flow.Generator().manual_seed(11)
    n = math.prod(shape)
    t = flow.empty(*shape)
    bound = 1 / math.sqrt(math.prod(shape[1:]))  # kaiming_uniform_ with a = sqrt(5)
    lo, hi = (1 + math.erf(-0.5 / math.sqrt(2))) / 2, (1 + math.erf(0.5 / math.sqrt(2))) / 2

    def uniform(k):
        return np.asarray(jax.random.uniform(k, (n,), jnp.float32), np.float64)
    cases = [
        (lambda: init.uniform_(t, -0.3, 0.7, generator=g), lambda k: uniform(k) - 0.3),
        (lambda: init.normal_(t, 0.5, 2.0, generator=g),
         lambda k: np.asarray(jax.random.normal(k, (n,), jnp.float32), np.float64) * 2 + 0.5),
        (lambda: init.kaiming_uniform_(t, a=math.sqrt(5), generator=g),
         lambda k: uniform(k) * 2 * bound - bound),
        (lambda: init.trunc_normal_(t, 0.0, 1.0, -0.5, 0.5, generator=g),  # inverse CDF
         lambda k: np.clip(scipy.special.erfinv(uniform(k) * (2 * hi - 2 * lo) + 2 * lo - 1)
                           * math.sqrt(2), -0.5, 0.5)),
    ]
    for fill, want in cases:
        k = _key(g)
        got = fill().numpy()
        assert got.shape == shape
        np.testing.assert_allclose(got.reshape(-1), want(k), rtol=1e-5, atol=2e-6)
    u = jax.random.uniform(_key(g), (4,), jnp.float32)  # the generator moved one draw per fill
    np.testing.assert_array_equal(flow.rand(4, generator=g).numpy(), np.asarray(u))


def test_a_bucket_is_compiled_once_for_every_shape_in_it():
    flow.nn.Linear(3, 2)  # the bucket's programs (uniform and normal draws, scale, shift)
    flow.nn.LayerNorm(11)
    flow.nn.Embedding(3, 2)
    layers = []
    n = _compiles(lambda: layers.extend([flow.nn.Linear(17, 9), flow.nn.Linear(33, 5),
                                         flow.nn.Linear(40, 41), flow.nn.LayerNorm(19),
                                         flow.nn.Embedding(23, 13)]))
    assert n == 0
    assert layers[2].weight.shape == (41, 40)
    assert 0.9 / math.sqrt(40) < float(layers[2].weight.abs().max()) <= 1 / math.sqrt(40)
    np.testing.assert_array_equal(layers[3].weight.detach().numpy(), np.ones(19, np.float32))


def test_the_fallbacks_draw_the_same_numbers(monkeypatch):
    """Over BUCKET_MAX, in lazy mode and on the meta device the shape is drawn as is; off
    the CPU the values are sliced out of the bucket on the device."""
    shape = (5, 7)

    def fill(**kw):
        flow.manual_seed(3)
        return init.uniform_(flow.empty(*shape, **kw), -1.0, 1.0)

    bucketed = fill().numpy()
    with flow.lazy():
        lazy = fill()
    np.testing.assert_array_equal(lazy.numpy(), bucketed)
    monkeypatch.setattr(init, "HOST_PREFIX_PLATFORMS", ())  # an accelerator's path
    np.testing.assert_array_equal(fill().numpy(), bucketed)
    monkeypatch.setattr(init, "BUCKET_MAX", 8)
    np.testing.assert_array_equal(fill().numpy(), bucketed)
    meta = fill(device="meta")
    assert meta.is_meta and tuple(meta.shape) == shape


@pytest.mark.parametrize("dtype, value, np_dtype", [
    (flow.float32, 0.1, np.float32), (flow.float16, 0.1, np.float16),
    (flow.bfloat16, -3.3, ml_dtypes.bfloat16), (flow.int64, 2 ** 40 + 1, np.int64),
    (flow.bool, True, np.bool_), (flow.float64, float("-inf"), np.float64),
    (flow.int32, -2.7, np.int32), (flow.float32, 2 ** 40 + 1, np.float32)])
def test_full_is_made_on_the_host_then_by_its_op(monkeypatch, dtype, value, np_dtype):
    monkeypatch.setattr(factory, "HOST_FULL_SIGHTINGS", 2)
    monkeypatch.setattr(factory, "_FULL_SEEN", type(factory._FULL_SEEN)())
    want = np.full((3, 13), value, np_dtype)
    out: list = []
    for sighting in range(3):
        n = _compiles(lambda: out.append(flow.full((3, 13), value, dtype=dtype)))
        assert out[-1].dtype == dtype
        np.testing.assert_array_equal(out[-1].numpy(), want)
        assert (n == 0) if sighting < 2 else (n <= 1)  # the op, once: (3, 13) is new
    assert factory._FULL_SEEN[((3, 13), np.dtype(np_dtype), factory._full_value_key(value))] == 3


def test_full_under_a_trace_and_the_table_bound(monkeypatch):
    monkeypatch.setattr(factory, "_FULL_SEEN", type(factory._FULL_SEEN)())
    f = flow.jit(lambda x: x + flow.zeros(2, 9))
    np.testing.assert_array_equal(f(flow.tensor(np.ones((2, 9), np.float32))).numpy(),
                                  np.ones((2, 9), np.float32))
    assert factory._FULL_SEEN == {}  # the trace recorded the op, no host constant
    for i in range(factory._FULL_TABLE + 40):
        flow.full((1,), float(i))
    assert len(factory._FULL_SEEN) == factory._FULL_TABLE
    z = flow.zeros(4, 4)
    z.add_(1)  # an in-place write replaces the value; the host array is not written
    np.testing.assert_array_equal(flow.zeros(4, 4).numpy(), np.zeros((4, 4), np.float32))


def test_host_constants_are_not_committed_to_a_device():
    """Placed as an op's result is: a committed array makes every executable it reaches
    commit its outputs, and the next training step, on committed parameters, compiles all
    its programs again."""
    dev = flow.device("cpu")
    for t in (flow.zeros(3, 5, device=dev), flow.arange(7, device=dev),
              flow.full((2,), 1.5, device=dev)):
        assert not t._value.committed


def test_an_eager_lstm_step_compiles_nothing_the_second_time():
    """nn.LSTM makes its zero initial state with device=x.device every step."""
    m, head = flow.nn.LSTM(3, 4), flow.nn.Linear(4, 2)
    opt = flow.optim.Adam(list(m.parameters()) + list(head.parameters()), lr=0.01)
    x = flow.tensor(np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32))

    def step():
        opt.zero_grad()
        out, _ = m(x)
        loss = (head(out) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.item()

    first = step()
    losses = []
    assert _compiles(lambda: losses.append(step())) == 0
    assert losses[0] < first
