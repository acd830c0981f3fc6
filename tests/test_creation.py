"""Creation: flow.tensor / flow.Tensor / from_numpy and the factories (sizes as varargs or a
sequence, dtypes, devices), and random numbers (seeding, generators, distributions)."""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import jflow as flow

# -- flow.tensor ----------------------------------------------------------------------------


def test_tensor_from_python_data():
    t = flow.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.dtype is flow.float32 and t.shape == (2, 2)
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert flow.tensor([1, 2, 3]).dtype is flow.int64
    assert flow.tensor([True, False]).dtype is flow.bool
    assert flow.tensor([True, 2]).dtype is flow.int64
    assert flow.tensor([1, 2.5]).dtype is flow.float32
    assert flow.tensor(3).shape == () and flow.tensor(3).item() == 3
    assert flow.tensor([]).shape == (0,) and flow.tensor([]).dtype is flow.float32
    assert flow.tensor([[1, 2]], dtype=flow.float16).dtype is flow.float16
    assert flow.tensor([1.7, -1.7], dtype=flow.int32).tolist() == [1, -1]
    assert flow.tensor([flow.tensor(1.0), flow.tensor(2.0)]).tolist() == [1.0, 2.0]


def test_tensor_from_arrays_keeps_dtype():
    for dt in (np.float64, np.float16, np.int32, np.uint8, np.bool_, ml_dtypes.bfloat16):
        a = np.arange(4).astype(dt)
        t = flow.tensor(a)
        assert t.numpy().dtype == np.dtype(dt)
        np.testing.assert_array_equal(t.numpy(), a)
    assert flow.tensor(np.float64(2.0)).dtype is flow.float64
    assert flow.tensor(jnp.arange(3, dtype=jnp.int16)).dtype is flow.int16
    assert flow.tensor(np.ones(2), dtype=flow.int8).dtype is flow.int8


def test_tensor_copies():
    a = np.arange(4.0)
    t = flow.tensor(a)
    a[0] = 100.0
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    src = flow.tensor([1.0, 2.0])
    dst = flow.tensor(src)
    src.add_(1)
    assert dst.tolist() == [1.0, 2.0] and src.tolist() == [2.0, 3.0]


def test_tensor_integer_overflow_is_an_error():
    # NumPy would wrap 2**63 to int64's minimum or turn [2**63, 1] into floats; PyTorch refuses
    for data in (2**63, [2**63, 1], [[1, 2**70]], 2**64):
        with pytest.raises(OverflowError, match="out of range for flow.int64"):
            flow.tensor(data)
    with pytest.raises(OverflowError, match="300 cannot be converted to flow.uint8"):
        flow.tensor([300, 2], dtype=flow.uint8)
    with pytest.raises(OverflowError, match="flow.int32"):
        flow.tensor([2**40], dtype=flow.int32)
    assert flow.tensor(-(2**63)).item() == -(2**63)
    assert flow.tensor([2**63, 1.5]).dtype is flow.float32  # a float in the data: floating
    assert flow.tensor([2**64], dtype=flow.float64).item() == 2.0**64
    assert flow.tensor([1, 255], dtype=flow.uint8).tolist() == [1, 255]


def test_tensor_requires_grad():
    t = flow.tensor([1.0, 2.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf
    with pytest.raises(RuntimeError, match="floating point"):
        flow.tensor([1, 2], requires_grad=True)


@pytest.mark.parametrize("bad,match", [
    ("abc", "could not convert"), ([[1, 2], [3]], "could not convert"),
    ([object()], "could not convert"), ({"a": 1}, "could not convert"),
    (np.array([1, 2], np.longdouble), "does not support"),
    (jnp.zeros(2, jnp.int4), "does not support")])
def test_tensor_bad_data(bad, match):
    with pytest.raises(TypeError, match=match):
        flow.tensor(bad)


def test_Tensor_constructor():
    t = flow.Tensor(np.array([1, 2]))
    assert t.dtype is flow.float32 and t.tolist() == [1.0, 2.0]  # default float dtype
    assert flow.Tensor([1, 2]).dtype is flow.float32
    assert flow.Tensor((2, 3)).tolist() == [2.0, 3.0]  # a tuple is data, as in torch
    for t in (flow.Tensor(2, 3), flow.Tensor(flow.Size([2, 3]))):
        assert t.shape == (2, 3) and t.dtype is flow.float32
        assert t.tolist() == [[0.0] * 3] * 2
    assert flow.Tensor().shape == (0,)
    assert flow.Tensor(np.int64(3)).shape == (3,)
    assert isinstance(flow.Tensor(2), flow.Tensor) and flow.Tensor(2).shape == (2,)
    with pytest.raises(TypeError, match="data must be a sequence"):
        flow.Tensor(2.5)
    with pytest.raises(ValueError, match="non-negative"):
        flow.Tensor(2, -1)


def test_from_numpy():
    for dt in (np.float32, np.float64, np.int64, np.int8, np.uint8, np.bool_, np.float16):
        a = np.arange(6).reshape(2, 3).astype(dt)
        t = flow.from_numpy(a)
        assert t.numpy().dtype == np.dtype(dt) and t.shape == (2, 3)
        np.testing.assert_array_equal(t.numpy(), a)
    with pytest.raises(TypeError, match="expected np.ndarray"):
        flow.from_numpy([1, 2])
    with pytest.raises(TypeError, match="does not support"):
        flow.from_numpy(np.zeros(2, np.longdouble))


def test_as_tensor():
    t = flow.tensor([1.0])
    assert flow.as_tensor(t) is t
    assert flow.as_tensor(t, dtype=flow.float64).dtype is flow.float64
    assert flow.as_tensor([1, 2]).dtype is flow.int64


# -- factories ------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,value", [(flow.zeros, 0), (flow.ones, 1), (flow.empty, None)])
def test_zeros_ones_empty(fn, value):
    for t in (fn(2, 3), fn((2, 3)), fn([2, 3]), fn(flow.Size([2, 3]))):
        assert t.shape == (2, 3) and t.dtype is flow.float32
        if value is not None:
            assert (t.numpy() == value).all()
    assert fn().shape == () and fn(0).shape == (0,) and fn(2, 0, 3).shape == (2, 0, 3)
    assert fn(2, dtype=flow.int8).dtype is flow.int8
    assert fn(2, dtype=flow.bool).dtype is flow.bool
    assert fn(2, requires_grad=True).requires_grad
    assert fn(2, device="cpu").device == "cpu"
    with pytest.raises(TypeError, match="sequence of ints"):
        fn(2.0)
    with pytest.raises(TypeError, match="sequence of ints"):
        fn((2, "3"))
    with pytest.raises(ValueError, match="non-negative"):
        fn(2, -1)


def test_full():
    t = flow.full((2, 2), 1.5)
    assert t.dtype is flow.float32 and t.tolist() == [[1.5, 1.5]] * 2
    assert flow.full((2,), 7).dtype is flow.int64
    assert flow.full((2,), True).dtype is flow.bool
    assert flow.full((3,), 2, dtype=flow.float16).tolist() == [2.0] * 3
    assert flow.full([2], -1, dtype=flow.int8).tolist() == [-1, -1]
    # integers a double cannot hold are exact
    assert flow.full((2,), 2**60 + 1).tolist() == [2**60 + 1] * 2
    assert flow.full((1,), -(2**62) - 3, dtype=flow.int64).item() == -(2**62) - 3
    with pytest.raises(OverflowError, match="300 cannot be converted to flow.uint8"):
        flow.full((2,), 300, dtype=flow.uint8)
    with pytest.raises(ValueError, match="non-negative"):
        flow.full((-1,), 0.0)


def test_arange():
    cases = [((5,), {}, np.arange(5)), ((1, 4), {}, np.arange(1, 4)),
             ((0, 1, 0.25), {}, np.arange(0, 1, 0.25, dtype=np.float32)),
             ((5.0,), {}, np.arange(5, dtype=np.float32)),
             ((10, 0, -3), {}, np.arange(10, 0, -3)),
             ((-2, 3), {"dtype": flow.float64}, np.arange(-2, 3, dtype=np.float64)),
             ((0, 3, 0.5), {"dtype": flow.int64}, np.array([0, 0, 1, 1, 2, 2])),
             ((3, 3), {}, np.arange(3, 3))]
    for args, kw, want in cases:
        t = flow.arange(*args, **kw)
        assert t.numpy().dtype == want.dtype, args
        np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)
    assert flow.arange(5).dtype is flow.int64 and flow.arange(0, 1, 0.5).dtype is flow.float32
    with pytest.raises(ValueError, match="step must be nonzero"):
        flow.arange(0, 5, 0)
    with pytest.raises(ValueError, match="inconsistent with step sign"):
        flow.arange(0, 5, -1)


def test_arange_integers_beyond_double_precision_are_exact():
    big = 2**60
    assert flow.arange(big, big + 3).tolist() == [big, big + 1, big + 2]
    assert flow.arange(big + 7, big, -3).tolist() == list(range(big + 7, big, -3))
    assert flow.arange(-big, -big + 1).tolist() == [-big]
    with pytest.raises(ValueError, match="step must be nonzero"):
        flow.arange(big, big + 5, 0)
    with pytest.raises(ValueError, match="inconsistent with step sign"):
        flow.arange(big, big + 5, -1)
    with pytest.raises(OverflowError, match="int32"):
        flow.arange(big, big + 5, dtype=flow.int32)


def test_arange_matches_torch():
    torch = pytest.importorskip("torch")
    for args in [(7,), (2, 11, 3), (0.5, 3.2, 0.7), (5, -5, -1.5), (0, 1, 0.1)]:
        got, want = flow.arange(*args), torch.arange(*args)
        assert got.dtype.name == str(want.dtype).replace("torch.", "")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_linspace():
    np.testing.assert_allclose(flow.linspace(0, 1, 5).numpy(), np.linspace(0, 1, 5))
    assert flow.linspace(0, 1, 5).dtype is flow.float32
    assert flow.linspace(-1, 1, 3, dtype=flow.float64).tolist() == [-1.0, 0.0, 1.0]
    assert flow.linspace(0, 10, 5, dtype=flow.int64).tolist() == [0, 2, 5, 7, 10]  # as torch
    assert flow.linspace(3, 9, 1).tolist() == [3.0]
    assert flow.linspace(3, 9, 0).shape == (0,)
    with pytest.raises(ValueError, match="non-negative"):
        flow.linspace(0, 1, -1)


def test_eye():
    np.testing.assert_array_equal(flow.eye(3).numpy(), np.eye(3, dtype=np.float32))
    assert flow.eye(3).dtype is flow.float32
    np.testing.assert_array_equal(flow.eye(2, 4).numpy(), np.eye(2, 4))
    assert flow.eye(3, 2, dtype=flow.bool).tolist() == np.eye(3, 2, dtype=bool).tolist()
    assert flow.eye(0).shape == (0, 0)
    with pytest.raises(ValueError, match="non-negative"):
        flow.eye(-1)


def test_like_factories():
    x = flow.ones(2, 3, dtype=flow.float64)
    for fn, value in [(flow.zeros_like, 0), (flow.ones_like, 1), (flow.empty_like, None)]:
        t = fn(x)
        assert t.shape == (2, 3) and t.dtype is flow.float64
        if value is not None:
            assert (t.numpy() == value).all()
        assert fn(x, dtype=flow.int32).dtype is flow.int32
    t = flow.full_like(x, 7)
    assert t.dtype is flow.float64 and (t.numpy() == 7).all()
    assert flow.rand_like(x).dtype is flow.float64 and flow.rand_like(x).shape == (2, 3)
    assert flow.randn_like(x, dtype=flow.float32).dtype is flow.float32
    i = flow.zeros(4, 5, dtype=flow.int32)
    r = flow.randint_like(i, 3)
    assert r.dtype is flow.int32 and r.shape == (4, 5) and 0 <= r.numpy().min()
    assert r.numpy().max() < 3
    r = flow.randint_like(i, 10, 12)
    assert set(np.unique(r.numpy())) <= {10, 11}
    with pytest.raises(TypeError, match="floating"):
        flow.rand_like(i)  # as torch: uniform draws are floating only
    with pytest.raises(TypeError, match="expected a Tensor"):
        flow.zeros_like(np.zeros(2))


def test_factory_device_argument():
    assert flow.zeros(2, device=flow.device("cpu")).device == "cpu"
    assert flow.arange(3, device="cpu").device == "cpu"
    assert flow.tensor([1.0], device="cpu").device == "cpu"


# -- random ---------------------------------------------------------------------------------

def test_rand_range_and_shapes():
    flow.manual_seed(1)
    r = flow.rand(4000)
    assert r.dtype is flow.float32 and r.shape == (4000,)
    x = r.numpy()
    assert x.min() >= 0 and x.max() < 1 and abs(x.mean() - 0.5) < 0.03
    assert flow.rand(2, 3).shape == (2, 3) and flow.rand((2, 3)).shape == (2, 3)
    assert flow.rand(2, dtype=flow.float64).dtype is flow.float64
    assert flow.rand(2, dtype=flow.bfloat16).dtype is flow.bfloat16
    assert flow.rand(3, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match="floating"):
        flow.rand(2, dtype=flow.int64)


def test_randn_is_standard_normal():
    flow.manual_seed(2)
    x = flow.randn(10000).numpy().astype(np.float64)
    assert abs(x.mean()) < 0.06 and abs(x.std() - 1) < 0.05
    assert abs(np.mean(np.abs(x) < 1) - 0.6827) < 0.03
    assert flow.randn(2, 2, dtype=flow.float16).dtype is flow.float16


def test_randint():
    flow.manual_seed(3)
    r = flow.randint(-3, 4, (3000,))
    assert r.dtype is flow.int64
    assert set(np.unique(r.numpy()).tolist()) == set(range(-3, 4))
    r = flow.randint(5, (2, 2))  # randint(high, size)
    assert flow.randint(5, size=(7,)).numpy().max() < 5
    assert r.shape == (2, 2) and r.numpy().min() >= 0 and r.numpy().max() < 5
    assert flow.randint(0, 256, (10,), dtype=flow.uint8).dtype is flow.uint8
    assert flow.randint(low=1, high=3, size=(2,)).shape == (2,)
    with pytest.raises(ValueError, match="low .* must be less than high"):
        flow.randint(3, 3, (2,))
    with pytest.raises(OverflowError, match="uint8"):
        flow.randint(0, 300, (2,), dtype=flow.uint8)
    with pytest.raises(TypeError, match="integer dtype"):
        flow.randint(0, 3, (2,), dtype=flow.float32)
    with pytest.raises(TypeError, match="size"):
        flow.randint(3)


def test_manual_seed_reproduces():
    def draws():
        return [flow.rand(5).numpy(), flow.randn(5).numpy(), flow.randint(0, 1000, (5,)).numpy()]
    flow.manual_seed(1234)
    a = draws()
    flow.manual_seed(1234)
    b = draws()
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a[0], flow.rand(5).numpy())  # the sequence advances
    flow.manual_seed(1235)
    assert not np.array_equal(a[0], flow.rand(5).numpy())  # another seed, other numbers
    assert flow.initial_seed() == 1235
    assert flow.manual_seed(7) is flow.default_generator


def test_generator_objects():
    g1, g2 = flow.Generator(), flow.Generator()
    g1.manual_seed(42)
    g2.manual_seed(42)
    flow.manual_seed(0)
    ref = flow.rand(4).numpy()
    flow.manual_seed(0)
    a = flow.rand(4, generator=g1).numpy()
    b = flow.rand(4, generator=g2).numpy()
    np.testing.assert_array_equal(a, b)
    # drawing from g1 did not advance the default generator
    np.testing.assert_array_equal(flow.rand(4).numpy(), ref)
    assert not np.array_equal(flow.rand(4, generator=g1).numpy(), a)
    assert flow.randn(3, generator=g1).shape == (3,)
    assert flow.randint(0, 9, (3,), generator=g1).shape == (3,)
    with pytest.raises(TypeError, match="generator"):
        flow.rand(2, generator="g")


def test_generator_state_round_trip():
    g = flow.Generator().manual_seed(2**63 + 5)
    flow.rand(3, generator=g)
    state = g.get_state()
    assert state.dtype is flow.uint8 and state.shape == (16,)
    a = flow.rand(3, generator=g).numpy()
    g.set_state(state)
    np.testing.assert_array_equal(flow.rand(3, generator=g).numpy(), a)
    assert g.initial_seed() == 2**63 + 5
    flow.manual_seed(9)
    s = flow.get_rng_state()
    x = flow.randn(3).numpy()
    flow.set_rng_state(s)
    np.testing.assert_array_equal(flow.randn(3).numpy(), x)
    with pytest.raises(ValueError, match="16 bytes"):
        g.set_state(flow.zeros(3))
    with pytest.raises(TypeError, match="seed must be an int"):
        g.manual_seed(1.5)
    with pytest.raises(ValueError, match="seed must be within"):
        g.manual_seed(2**64)
    flow.manual_seed(-1)  # negative seeds wrap, as in PyTorch
    assert flow.initial_seed() == 2**64 - 1
    s = flow.seed()
    assert flow.initial_seed() == s


def test_tensor_from_ndarray_compiles_nothing_per_shape(monkeypatch):
    """Host -> device transfer is not a computation: new shapes must not compile. (The
    sightings table starts empty: a shape earlier tests of this worker made hot would take
    host_transfer's jitted identity, compiled once at its 9th sighting.)"""
    from collections import OrderedDict

    from jflow import host_transfer
    monkeypatch.setattr(host_transfer, "_SEEN", OrderedDict())
    flow.tensor(np.ones((1, 3), np.float32))  # warm any one-time setup
    with jax.log_compiles(True):
        records = []
        handler = logging.Handler()
        handler.emit = records.append
        logger = logging.getLogger("jax")
        logger.addHandler(handler)
        try:
            for n in range(2, 8):
                a = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
                t = flow.tensor(a)
                a[0, 0] = -1.0  # the tensor holds a copy
                assert t.numpy()[0, 0] == 0.0
        finally:
            logger.removeHandler(handler)
    compiles = [r for r in records if "Compiling" in r.getMessage()]
    assert not compiles, [r.getMessage() for r in compiles]


def test_small_integer_ranges_are_made_on_the_host_and_equal_the_op(monkeypatch):
    """Integer ranges on CPU are NumPy's, placed (ready at once: position ids are read by the
    next op's bounds check, which would otherwise wait for the computations queued before
    the range's executable); long ranges and wrapping dtypes take the op, with the same
    values (both compared with torch)."""
    torch = pytest.importorskip("torch")
    from jflow.functional.functors import factory
    from jflow.lazy_values import LazyTensor

    rng = np.random.default_rng(7)
    cases = [(int(a), int(a + n * s), int(s)) for a, n, s in zip(
        rng.integers(-50, 50, 6), rng.integers(0, 30, 6), [1, 2, -1, -3, 5, 1])]
    cases += [(0, 300, 1, flow.uint8), (5, -5, -2, flow.int8), (2**60, 2**60 + 3, 1)]
    real = factory._arange
    for use_op in (False, True):
        monkeypatch.setattr(factory, "HOST_ARANGE_MAX", -1 if use_op else 1 << 16)
        for case in cases:
            *args, dt = case if len(case) == 4 else (*case, flow.int64)
            got = flow.arange(*args, dtype=dt)
            want = torch.arange(*args, dtype=getattr(torch, str(dt).split(".")[1]))
            assert got.dtype.name == str(want.dtype).replace("torch.", "")
            np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=str(case))
    monkeypatch.setattr(factory, "HOST_ARANGE_MAX", 1 << 16)

    def no_op(**kw):
        raise AssertionError(f"the arange op ran for {kw}")

    monkeypatch.setattr(factory, "_arange", no_op)
    assert flow.arange(64).tolist() == list(range(64))  # the host path: the op never runs
    with flow.lazy():  # (factories run at the call in lazy mode too: a concrete range)
        t = flow.arange(6) * 2
        assert isinstance(t, LazyTensor)
    assert t.tolist() == list(range(0, 12, 2))
    monkeypatch.setattr(factory, "_arange", real)
