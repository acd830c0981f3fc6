"""DLPack and PyTorch interop: no copy where promised (the same buffer address on both
sides), values and dtypes kept, clear errors otherwise."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow


def _addr(t: flow.Tensor) -> int:
    return t._value.unsafe_buffer_pointer()


def test_numpy_crosses_without_a_copy():
    x = flow.arange(12.0).reshape(3, 4)
    n = np.from_dlpack(x)
    assert n.ctypes.data == _addr(x)
    np.testing.assert_array_equal(n, np.arange(12.0).reshape(3, 4))
    raw = np.zeros(16 + 16, np.float32)  # JAX shares a 64-byte aligned buffer (else copies)
    off = (-raw.ctypes.data % 64) // 4
    a = raw[off:off + 16]
    a[:] = np.arange(16)
    y = flow.from_dlpack(a)
    assert _addr(y) == a.ctypes.data and y.dtype == flow.float32
    assert x.__dlpack_device__()[1] == 0


def test_torch_crosses_without_a_copy_both_ways():
    torch = pytest.importorskip("torch")
    x = flow.tensor(np.random.RandomState(0).randn(4, 5).astype(np.float32))
    t = flow.utils.to_torch(x)
    assert t.data_ptr() == _addr(x) and t.dtype == torch.float32
    np.testing.assert_array_equal(t.numpy(), x.numpy())
    src = torch.arange(10, dtype=torch.int64)
    y = flow.utils.from_torch(src)
    assert _addr(y) == src.data_ptr() and y.dtype == flow.int64
    z = flow.utils.from_torch(torch.ones(3, requires_grad=True))  # tape not carried over
    assert not z.requires_grad
    for dt in ("float16", "bfloat16", "bool", "uint8", "int32", "float64"):
        v = flow.ones(3, dtype=getattr(flow, dt))
        assert str(flow.utils.to_torch(v).dtype) == f"torch.{dt}"


def test_errors_name_the_function():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="from_torch: expected a torch.Tensor"):
        flow.utils.from_torch(np.ones(3))
    with pytest.raises(TypeError, match="complex"):
        flow.utils.from_torch(torch.ones(3, dtype=torch.complex32))
    g = flow.ones(4).to_global(flow.placement("cpu", [0, 1]), flow.sbp.split(0))
    with pytest.raises(TypeError, match="global tensor has no single buffer"):
        flow.utils.to_torch(g)
    with pytest.raises(TypeError, match="from_dlpack: cannot import"):
        flow.from_dlpack([1, 2, 3])


def test_pytorch_weights_load_into_the_same_architecture(tmp_path):
    """A PyTorch module's weights — as a dict of torch tensors, and as a .safetensors file
    written by PyTorch — load into the jflow module of the same architecture, which then
    computes PyTorch's outputs."""
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")

    def net(lib):
        return lib.nn.Sequential(lib.nn.Conv2d(2, 4, 3), lib.nn.BatchNorm2d(4), lib.nn.ReLU(),
                                 lib.nn.Flatten(), lib.nn.Linear(4 * 4 * 4, 3))

    torch.manual_seed(0)
    ref = net(torch).eval()
    x = np.random.RandomState(1).randn(2, 2, 6, 6).astype(np.float32)
    want = ref(torch.tensor(x)).detach().numpy()
    ours = net(flow).eval()
    ours.load_state_dict(ref.state_dict())  # torch tensors, as they come
    np.testing.assert_allclose(ours(flow.tensor(x)).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    path = tmp_path / "torch_weights.safetensors"
    st.save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(path))
    again = net(flow).eval()
    again.load_state_dict(flow.load(str(path)))
    np.testing.assert_allclose(again(flow.tensor(x)).detach().numpy(), want, rtol=1e-5, atol=1e-6)
