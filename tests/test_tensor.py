"""The Tensor object: metadata, conversions, repr, dtype/device moves, interop with NumPy and
JAX (zero-copy hand-over, pytree under jax.jit / jax.vmap)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow
from jflow.utils import from_jax, to_jax

X = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)


# -- metadata --------------------------------------------------------------------------------

def test_shape_is_a_size():
    t = flow.tensor(X)
    assert isinstance(t.shape, flow.Size) and isinstance(t.shape, tuple)
    assert t.shape == (2, 3) and t.size() == (2, 3)
    assert repr(t.shape) == "flow.Size([2, 3])"
    assert t.shape.numel() == 6 and flow.Size([]).numel() == 1


def test_metadata():
    t = flow.tensor(X)
    assert t.dtype is flow.float32
    assert t.ndim == 2 and t.dim() == 2
    assert t.numel() == 6 and t.nelement() == 6 and t.element_size() == 4
    assert t.size(0) == 2 and t.size(1) == 3 and t.size(-1) == 3 and t.size(-2) == 2
    assert t.device == flow.device("cpu") and str(t.device) == "cpu" and t.device == "cpu"
    assert t.is_floating_point() and not flow.tensor([1]).is_floating_point()
    assert flow.tensor([1.0], dtype=flow.bfloat16).is_floating_point()
    assert t.is_leaf and not t.requires_grad and t.grad is None and t._version == 0
    s = flow.tensor(3.0)
    assert s.shape == () and s.ndim == 0 and s.numel() == 1
    assert flow.zeros(2, 0).numel() == 0


def test_size_errors():
    t = flow.tensor(X)
    with pytest.raises(IndexError, match=r"range of \[-2, 1\], but got 2"):
        t.size(2)
    with pytest.raises(IndexError, match="out of range"):
        t.size(-3)
    with pytest.raises(IndexError, match="no dimensions"):
        flow.tensor(1.0).size(0)
    with pytest.raises(TypeError, match="'dim' must be int"):
        t.size(1.0)


# -- conversion ------------------------------------------------------------------------------

def test_numpy_force_reads_detached_resolved_values():
    """``numpy(force=True)`` (torchvision's ``to_pil_image`` calls it) is PyTorch's
    ``detach().cpu().resolve_conj().numpy()``: same values, also for a tensor needing grad
    or a conjugate view."""
    torch = pytest.importorskip("torch")
    t = flow.tensor(X, requires_grad=True) * 2
    np.testing.assert_array_equal(t.numpy(force=True), X * 2)
    z = np.array([1 + 2j, -3j], dtype=np.complex64)
    want = torch.tensor(z).conj().numpy(force=True)
    np.testing.assert_array_equal(flow.tensor(z).conj().numpy(force=True), want)
    with pytest.raises(TypeError, match="positional"):
        t.numpy(True)  # keyword-only, as in PyTorch
    with pytest.raises(TypeError, match="force must be a bool"):
        t.numpy(force="yes")


def test_numpy_item_tolist():
    t = flow.tensor(X)
    a = t.numpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float32
    np.testing.assert_array_equal(a, X)
    assert t.tolist() == X.tolist()
    assert flow.tensor([[1, 2]]).tolist() == [[1, 2]]
    assert flow.tensor(2.5).tolist() == 2.5
    for value, dtype, kind in [(2.5, flow.float32, float), (2.5, flow.bfloat16, float),
                               (2.5, flow.float16, float), (7, flow.int64, int),
                               (7, flow.uint8, int), (True, flow.bool, bool)]:
        item = flow.tensor(value, dtype=dtype).item()
        assert type(item) is kind and item == value
    assert flow.tensor([[4]]).item() == 4
    assert type(flow.tensor([1.5], dtype=flow.bfloat16).tolist()[0]) is float
    with pytest.raises(ValueError, match="only one-element tensors.*6 elements"):
        t.item()


def test_python_number_protocols():
    assert float(flow.tensor([2.5])) == 2.5
    assert int(flow.tensor(7)) == 7
    assert bool(flow.tensor([True])) is True and bool(flow.tensor(0.0)) is False
    assert [10, 20, 30][flow.tensor(1)] == 20  # __index__
    with pytest.raises(TypeError, match="integer tensors"):
        [1, 2][flow.tensor(1.0)]
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(flow.tensor(X))
    with pytest.raises(ValueError, match="one-element"):
        float(flow.tensor(X))


def test_array_protocol():
    t = flow.tensor(X)
    a = np.asarray(t)
    np.testing.assert_array_equal(a, X)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    c = np.array(t)  # a copy: writable, independent of the tensor
    c[0, 0] = 100
    assert t.numpy()[0, 0] == 1.0
    with pytest.raises(ValueError, match="copy"):
        np.asarray(t, dtype=np.float64, copy=False)
    assert isinstance(np.exp(t), np.ndarray)  # NumPy functions see an array


def test_len_and_iteration():
    t = flow.tensor(X)
    assert len(t) == 2
    with pytest.raises(TypeError, match="len"):
        len(flow.tensor(1.0))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(flow.tensor(1.0))
    rows = list(t)
    assert len(rows) == 2 and all(isinstance(r, flow.Tensor) for r in rows)
    assert [r.tolist() for r in rows] == X.tolist()
    assert [float(v) for v in flow.tensor([1.0, 2.0])] == [1.0, 2.0]


def test_repr():
    assert repr(flow.tensor([1.0, 2.5])) == "tensor([1. , 2.5], dtype=flow.float32)"
    assert repr(flow.tensor([1, 2])) == "tensor([1, 2], dtype=flow.int64)"
    assert repr(flow.tensor(2.5)) == "tensor(2.5, dtype=flow.float32)"
    assert repr(flow.tensor([True, False])) == "tensor([ True, False], dtype=flow.bool)"
    assert repr(flow.tensor([1.5], dtype=flow.bfloat16)) == "tensor([1.5], dtype=flow.bfloat16)"
    assert repr(flow.tensor([[1, 2], [3, 4]], dtype=flow.int32)) == (
        "tensor([[1, 2],\n        [3, 4]], dtype=flow.int32)")
    assert repr(flow.zeros(0)) == "tensor([], dtype=flow.float32)"
    assert repr(flow.zeros(2, 0)) == "tensor([], size=(2, 0), dtype=flow.float32)"
    assert repr(flow.ones(2, requires_grad=True)) == (
        "tensor([1., 1.], dtype=flow.float32, requires_grad=True)")
    assert "..." in repr(flow.zeros(5000))  # large tensors are summarised
    assert str(flow.tensor([1, 2])) == repr(flow.tensor([1, 2]))
    assert f"{flow.tensor(2.5):.3f}" == "2.500" and f"{flow.tensor(7):>3}" == "  7"
    assert f"{flow.tensor([1, 2])}" == repr(flow.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"Tensor.__format__.*shape \[2\]"):  # (as PyTorch;
        f"{flow.tensor([1.5, 2.5]):.2f}"  # before: str's "Unknown format code 'f'")


def test_copy_and_pickle():
    import copy
    import pickle
    t = flow.tensor([1.0, 2.0], requires_grad=True)
    for c in (copy.copy(t), copy.deepcopy(t), pickle.loads(pickle.dumps(t))):
        assert isinstance(c, flow.Tensor) and c is not t
        assert c.tolist() == [1.0, 2.0] and c.dtype is flow.float32 and c.requires_grad


# -- dtype and device moves ------------------------------------------------------------------

@pytest.mark.parametrize("method,dtype", [("float", "float32"), ("double", "float64"),
                                          ("half", "float16"), ("bfloat16", "bfloat16"),
                                          ("long", "int64"), ("int", "int32"),
                                          ("short", "int16"), ("char", "int8"),
                                          ("byte", "uint8"), ("bool", "bool")])
def test_cast_methods(method, dtype):
    src = np.array([0.0, 1.0, 2.75, -3.5], np.float32)
    t = getattr(flow.tensor(src), method)()
    assert t.dtype is getattr(flow, dtype)
    if dtype == "uint8":
        src = src[:3]  # a negative float -> uint8 is undefined (as in C and PyTorch)
        t = getattr(flow.tensor(src), method)()
    want = src.astype(t.numpy().dtype)  # C casts: floats truncate toward zero
    np.testing.assert_array_equal(t.numpy(), want)
    assert t.numpy().dtype == np.dtype(want.dtype)


def test_to():
    t = flow.tensor(X)
    assert t.to(flow.float32) is t and t.float() is t and t.to("cpu") is t
    assert t.to(flow.float64).dtype is flow.float64
    assert t.to(dtype=flow.int32).tolist() == X.astype(np.int32).tolist()
    assert t.to("float16").dtype is flow.float16
    assert t.to(np.float64).dtype is flow.float64
    assert t.to(float).dtype is flow.float64
    assert t.to(flow.device("cpu"), flow.int64).dtype is flow.int64
    assert t.to("cpu", dtype=flow.bool).dtype is flow.bool
    assert t.to(flow.zeros(1, dtype=flow.int8)).dtype is flow.int8
    assert t.type_as(flow.tensor([1])).dtype is flow.int64
    assert t.cpu() is t
    c = t.to(flow.float32, copy=True)
    assert c is not t
    c += 1
    assert t.tolist() == X.tolist()
    with pytest.raises(TypeError, match="cannot interpret 'bogus'"):
        t.to("bogus")
    with pytest.raises(TypeError, match="unexpected keyword"):
        t.to(flow.float64, foo=1)


def test_to_unavailable_device():
    try:
        jax.devices("gpu")
        pytest.skip("a GPU is present")
    except RuntimeError:
        pass
    with pytest.raises(RuntimeError, match="not available"):
        flow.tensor(X).to("cuda")
    with pytest.raises(ValueError, match="unknown device type"):
        flow.device("npu")
    # pinned memory: PyTorch without an accelerator raises the same, is_pinned() is False
    with pytest.raises(RuntimeError, match="pin_memory.*none is available"):
        flow.tensor(X).pin_memory()
    assert flow.tensor(X).is_pinned() is False


def test_to_none_is_no_move():
    """``t.to(None)`` is PyTorch's ``to(device=None)``: HF's rotary embeddings call
    ``inv_freq.to(device)`` with ``device=None``."""
    t = flow.tensor(X)
    assert t.to(None) is t
    assert t.to(None, flow.float64).dtype == flow.float64


# -- JAX interop -------------------------------------------------------------------------------

def test_from_jax_to_jax_zero_copy():
    a = jnp.arange(6.0).reshape(2, 3)
    t = from_jax(a)
    assert isinstance(t, flow.Tensor) and t.dtype is flow.float64
    assert to_jax(t) is a
    b = flow.tensor(X)
    assert to_jax(b) is b._value
    assert from_jax(to_jax(b))._value is b._value
    with pytest.raises(TypeError, match="expected a jax.Array"):
        from_jax(X)
    with pytest.raises(TypeError, match="expected a jflow Tensor"):
        to_jax(a)
    with pytest.raises(TypeError, match="does not support"):
        from_jax(jnp.zeros(2, jnp.int4))


def _f(x: flow.Tensor, y: flow.Tensor) -> flow.Tensor:
    return (x * 2 + y).exp() - x.sin() / (y.abs() + 1)


def test_pytree_jit():
    x, y = flow.tensor(X), flow.tensor(X[::-1].copy())
    out = jax.jit(_f)(x, y)
    assert isinstance(out, flow.Tensor) and out.dtype is flow.float32
    np.testing.assert_allclose(out.numpy(), _f(x, y).numpy(), rtol=1e-6)
    res = jax.jit(lambda a: {"sum": a + a, "cmp": (a > 2, a.double())})(x)
    assert isinstance(res["sum"], flow.Tensor)
    assert res["cmp"][0].dtype is flow.bool and res["cmp"][1].dtype is flow.float64
    leaves, treedef = jax.tree_util.tree_flatten(x)
    assert leaves == [x._value]
    assert jax.tree_util.tree_unflatten(treedef, leaves)._value is x._value


def test_pytree_keeps_requires_grad():
    t = flow.tensor([1.0, 2.0], requires_grad=True)
    assert jax.jit(lambda a: a)(t).requires_grad
    assert not jax.jit(lambda a: a)(flow.tensor([1.0])).requires_grad


def test_pytree_vmap():
    x, y = flow.tensor(X), flow.tensor(X + 1)
    out = jax.vmap(_f)(x, y)
    assert isinstance(out, flow.Tensor)
    np.testing.assert_allclose(out.numpy(), _f(x, y).numpy(), rtol=1e-6)
    out = jax.vmap(_f, in_axes=(0, None))(x, flow.tensor(X[0]))
    np.testing.assert_allclose(out.numpy(), _f(x, flow.tensor(np.stack([X[0]] * 2))).numpy(),
                               rtol=1e-6)


def test_traced_tensor_refuses_concrete_conversion():
    def f(x):
        assert "traced" in repr(x)
        with pytest.raises(RuntimeError, match="being traced"):
            x.numpy()
        with pytest.raises(RuntimeError, match="being traced"):
            x.item()
        return x + 1
    jax.jit(f)(flow.tensor(X))


def test_tensor_is_hashable():
    t = flow.tensor(X)
    assert {t: 1}[t] == 1
    assert t in {t}


def test_new_tensor_fields_are_written_once():
    """The fields of a new tensor have one definition (``tensor._start``); the text generated
    code inlines (``NEW_FIELDS_SRC``) sets the same ones, and every way of making a tensor —
    ``_wrap``, a generated ``apply`` (one and several outputs), lazy mode's fused recorder,
    ``flow.Tensor(...)``, an unpickled parameter — gives a tensor with exactly them."""
    import importlib

    T = importlib.import_module("jflow.tensor")

    ref = T.new_tensor(flow.Tensor, jnp.ones(2))
    want = {k: getattr(ref, k) for k in ("_requires_grad", "_grad", "grad_fn", "_version",
                                          "_global")}
    assert want == {"_requires_grad": False, "_grad": None, "grad_fn": None, "_version": 0,
                    "_global": None}

    class _Obj:
        pass
    o = _Obj()
    exec(T.NEW_FIELDS_SRC.format(t="o"), {"o": o})  # noqa: S102  (the generated code's text)
    assert vars(o) == want

    def fields(t):
        return {k: getattr(t, k) for k in want}
    a = flow.ones(3)
    made = [T._wrap(jnp.ones(2)), a + 1, flow.Tensor(2, 2), *flow.split(a, 1),
            flow.nn.Parameter(a, requires_grad=False)]
    with flow.lazy():
        made.append(a * 2)  # (record_lazy1)
        made.append(a + a)  # (record_lazy2)
        made.append(flow.stack([a, a]))  # (Segment.add)
        assert [fields(t) for t in made] == [want] * len(made)


def test_contains_as_pytorch():
    """``x in t`` is ``(x == t).any()`` (HF's padding check: ``pad_token_id in ids[:, [-1, 0]]``);
    anything but a number or a tensor raises, as PyTorch."""
    t = flow.tensor([[1, 2], [3, 0]])
    assert 0 in t and 3 in t and 5 not in t and 2.0 in t
    assert flow.tensor(3) in t and flow.tensor([9, 0]) in t and flow.tensor([9, 8]) not in t
    for bad in ("a", None):
        with pytest.raises(RuntimeError, match="only supports Tensor or scalar"):
            bad in t  # noqa: B015


def test_one_element_integer_tensors_as_sizes_and_dims():
    """PyTorch's parser reads a one-element integer tensor where an int is expected (HF LED
    computes a view's sizes on tensors); a float or longer tensor is still refused."""
    x = flow.arange(6.0)
    n, one = flow.tensor(2), flow.tensor([2])
    assert x.view(n, 3).shape == x.view((one, 3)).shape == x.reshape(n, -1).shape == (2, 3)
    assert flow.zeros(n, 3).shape == x.new_zeros((n,)).shape + (3,) == (2, 3)
    assert x[:3].expand(n, 3).shape == (2, 3)
    # (and new_* take size= as torch.zeros does: HF LED's x.new_ones(size=...))
    assert x.new_ones(size=(n, 3)).shape == x.new_zeros(size=[2, 3]).shape == (2, 3)
    assert x.new_empty(size=(1,)).dtype == flow.float32
    with pytest.raises(TypeError, match=r"new_ones\(\): the size given both"):
        x.new_ones((2,), size=(3,))
    np.testing.assert_array_equal(x.view(2, 3).sum(dim=flow.tensor(1)).numpy(), [3.0, 12.0])
    assert x.view(2, 3).flatten(flow.tensor(0)).shape == (6,)  # a lone int: 0-dim only
    with pytest.raises(TypeError, match=r"unsqueeze\(\): argument 'dim'"):
        x.unsqueeze(flow.tensor([0]))
    with pytest.raises(TypeError, match=r"view\(\): argument 'shape'"):
        x.view(flow.tensor(2.0), 3)
    with pytest.raises(TypeError, match=r"zeros\(\): size must be a sequence of ints"):
        flow.zeros(flow.tensor([1, 2]))
    # a slice bound takes a one-element integer tensor (PyTorch's __index__), arange's
    # bounds 0-dim tensors (its Scalar parameters), each read as its value
    assert x.view(2, 3)[:, :one].shape == (2, 2)
    with pytest.raises(TypeError, match="slice stop must be an integer"):
        x[:flow.tensor([1, 2])]
    a = flow.arange(flow.tensor(2.5))
    assert a.dtype == flow.float32 and a.tolist() == [0.0, 1.0, 2.0]
    b = flow.arange(flow.tensor(1), flow.tensor(4))
    assert b.dtype == flow.int64 and b.tolist() == [1, 2, 3]
    assert flow.arange(0, 1, flow.tensor(0.25)).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert flow.ones(3).multinomial(one).shape == (2,)  # (PyTorch's SymInt num_samples)
    with pytest.raises(TypeError, match="'num_samples' must be int, not Tensor"):
        flow.ones(3).multinomial(flow.tensor(2.0))
