"""PyTorch parity of the ``torch.Tensor`` methods jflow added for breadth: memory and storage
(``data_ptr``, ``untyped_storage``, ``storage``, ``resize_``, ``set_``, ``is_set_to``), the
legacy constructor ``new``, ``apply_`` / ``map_`` / ``map2_``,
``register_post_accumulate_grad_hook``, the in-place and ``unsafe_`` shape methods, method
forms of top-level functions, metadata, and the clear errors for what jflow has not (sparse,
quantized, removed functions, other devices). Each is compared with PyTorch on the same
inputs: values, dtypes, the returned object, what views see, gradients."""
# ruff: noqa: B023  (the loops' lambdas are called at once, inside the loop)

from __future__ import annotations

import copy
import ctypes
import importlib.util
import warnings

import numpy as np
import pytest

import jflow as flow
from jflow import storage as flow_storage

torch = pytest.importorskip("torch")

_RNG = np.random.default_rng(2013)


def _pair(shape=(2, 3, 4), dtype=np.float32):
    a = _RNG.standard_normal(shape).astype(dtype)
    return flow.tensor(a), torch.tensor(a)


def _same(got, want) -> None:
    g = got.detach().numpy() if isinstance(got, flow.Tensor) else np.asarray(got)
    w = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    assert g.shape == w.shape, (g.shape, w.shape)
    np.testing.assert_array_equal(g, w)


def _raises_like(f_flow, f_torch):
    """Both raise, the same exception type; returns jflow's message."""
    with pytest.raises(Exception) as want:
        f_torch()
    with pytest.raises(want.type) as got:
        f_flow()
    return str(got.value)


# -- data_ptr and storages ---------------------------------------------------------------------

def _views(x, lib):
    """The same views in either library (x: a (2, 3, 4) float32 tensor)."""
    return [x, x[1], x[:, 1:], x[..., 2], x.transpose(0, 1)[1], x.reshape(6, 4)[3:],
            x.view(lib.int16)[1], x.detach(), x[1:, 2:, 3:]]


def test_data_ptr_offsets_and_sharing_match_pytorch():
    fx, tx = _pair()
    fv, tv = _views(fx, flow), _views(tx, torch)
    base_f, base_t = fx.data_ptr(), tx.data_ptr()
    assert base_f != 0
    for a, b in zip(fv, tv):  # each view's first element, in bytes from its base's
        assert a.data_ptr() - base_f == b.data_ptr() - base_t
        assert a.untyped_storage().data_ptr() == base_f
        assert a.untyped_storage().nbytes() == b.untyped_storage().nbytes() == 96
        assert a.const_data_ptr() == a.data_ptr()
    # what shares memory (equal addresses) and what does not, as in PyTorch
    cases = [lambda x, lib: x.clone(), lambda x, lib: lib.tensor(x.detach().numpy()),
             lambda x, lib: x + 0, lambda x, lib: copy.deepcopy(x), lambda x, lib: x.view(-1),
             lambda x, lib: x.detach(), lambda x, lib: x]
    for make in cases:
        assert (make(fx, flow).data_ptr() == base_f) == (make(tx, torch).data_ptr() == base_t)
    # complex parts: a float element inside the complex one
    fc = flow.ones(2, 3, dtype=flow.complex64)
    tc = torch.ones(2, 3, dtype=torch.complex64)
    assert fc[1].imag.data_ptr() - fc.data_ptr() == tc[1].imag.data_ptr() - tc.data_ptr() == 28
    assert (flow.view_as_real(fc)[1, 2].data_ptr() - fc.data_ptr()
            == torch.view_as_real(tc)[1, 2].data_ptr() - tc.data_ptr())
    # no elements: 0; meta: the storage starts at 0 and a view adds its offset
    assert fx[2:].data_ptr() == tx[2:].data_ptr() == 0
    assert flow.empty(0).data_ptr() == 0
    fm, tm = flow.empty(3, 4, device="meta"), torch.empty(3, 4, device="meta")
    assert fm[1:].data_ptr() == tm[1:].data_ptr() == 16
    assert fm.untyped_storage().data_ptr() == tm.untyped_storage().data_ptr() == 0
    assert fm[1].untyped_storage().nbytes() == tm[1].untyped_storage().nbytes() == 48


def _read(ptr: int, n: int) -> np.ndarray:
    return np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), (n,)).copy()


def test_data_ptr_is_where_the_elements_are():
    """The address is honest: reading memory there gives the elements (what safetensors'
    save does), for a tensor, a contiguous view of it, and after an in-place op."""
    fx, _ = _pair()
    np.testing.assert_array_equal(_read(fx.data_ptr(), 24), fx.numpy().reshape(-1))
    row = fx[1]
    np.testing.assert_array_equal(_read(row.data_ptr(), 12), row.numpy().reshape(-1))
    fx.mul_(3)  # (a new array: the address follows it)
    np.testing.assert_array_equal(_read(row.data_ptr(), 12), fx[1].numpy().reshape(-1))


def test_data_ptr_waits_for_the_elements_to_be_written():
    """The address of a result still computing (dispatch is asynchronous), or of the copy a
    tensor sharing another's array is given, holds the elements when ``data_ptr`` returns:
    it waits for them (it returned the buffer's address at once, and a read there saw
    uninitialized memory: safetensors' save under mock_torch, intermittently)."""
    a = flow.randn(1200, 1200)
    for _ in range(3):
        b = a @ a  # (pending: ~10-100 ms of work)
        np.testing.assert_array_equal(_read(b.data_ptr(), b.numel()), b.numpy().reshape(-1))
        lin = flow.nn.Linear(1200, 1200)
        twin = copy.deepcopy(lin)  # (shares the weight's array: its address is a copy's)
        lin.weight.data_ptr()
        w = twin.weight
        np.testing.assert_array_equal(_read(w.data_ptr(), w.numel()),
                                      w.detach().numpy().reshape(-1))


def test_tensors_holding_one_array_get_their_own_buffers():
    """jflow tensors that hold the same immutable array without aliasing each other
    (``flow.tensor(a)``, ``copy_``, ``Parameter(a)``) report different addresses: one of them
    is given a copy of its own, values, versions and views unchanged."""
    a = flow.randn(3, 4)
    b = flow.tensor(a)
    p = flow.nn.Parameter(a)
    c = flow.zeros(3, 4).copy_(a)
    assert b._value is a._value or b._value.unsafe_buffer_pointer() == \
        a._value.unsafe_buffer_pointer()
    view = a[1]
    versions = [t._version for t in (a, b, p, c)]
    ptrs = [t.data_ptr() for t in (a, b, p, c)]
    assert len(set(ptrs)) == 4
    assert [t.data_ptr() for t in (a, b, p, c)] == ptrs  # stable while nothing is written
    assert [t._version for t in (a, b, p, c)] == versions
    for t in (b, p, c):
        np.testing.assert_array_equal(t.detach().numpy(), a.numpy())
    np.testing.assert_array_equal(view.numpy(), a.numpy()[1])
    b.add_(1)  # (and they still do not alias)
    np.testing.assert_array_equal(a.numpy() + 1, b.numpy())


def test_storage_objects_match_pytorch():
    fx, tx = _pair((2, 3), np.float64)
    fs, ts = fx[1].untyped_storage(), tx[1].untyped_storage()
    assert fs.nbytes() == ts.nbytes() == len(fs) == fs.size() == 48
    assert fs.tolist() == ts.tolist() and fs[9] == ts[9]
    assert fs.device == flow.device("cpu") and not fs.is_shared()
    assert flow.asarray(fs, dtype=flow.float64).tolist() == fx.reshape(-1).tolist()
    flow_storage._TYPED_WARNED[0] = False
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        fts = fx[1].storage()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tts = tx[1].storage()
    assert fts.size() == tts.size() == len(fts) == 6 and fts.nbytes() == 48
    assert fts.dtype == flow.float64 and fts.element_size() == 8
    assert fts.tolist() == tts.tolist() and fts[4] == tts[4]
    assert fts.data_ptr() == fx.data_ptr() and fts.untyped().nbytes() == 48
    for fd, td in ((flow.float32, torch.float32), (flow.bfloat16, torch.bfloat16),
                   (flow.bool, torch.bool), (flow.complex64, torch.complex64),
                   (flow.int8, torch.int8)):
        fcls = flow.ones(1, dtype=fd).storage_type()
        assert fcls.__name__ == torch.ones(1, dtype=td).storage_type().__name__
        assert fcls.dtype == fd and issubclass(fcls, flow_storage.TypedStorage)
    assert fx._typed_storage().tolist() == tx._typed_storage().tolist()
    assert not fx.is_shared() and not tx.is_shared()
    assert fx.share_memory_() is fx and not fx.is_shared()  # (nothing moves in jflow)
    assert fx.record_stream(object()) is None


def test_data_ptr_of_a_traced_tensor_raises():
    import jax

    with pytest.raises(RuntimeError, match=r"data_ptr\(\).*traced"):
        jax.jit(lambda t: t.data_ptr())(flow.ones(2))


def test_safetensors_save_finds_what_jflow_aliases(tmp_path):
    """safetensors' own ``save`` under jflow.mock_torch: it groups tensors by
    ``untyped_storage().data_ptr()`` and reads each through ``data_ptr()``."""
    real = pytest.importorskip("safetensors.torch")
    safetensors = pytest.importorskip("safetensors")
    import jflow.mock_torch as mock

    with mock.enable():  # (a private copy of safetensors.torch whose `torch` is jflow)
        spec = importlib.util.spec_from_file_location("_st_on_jflow", real.__file__)
        st = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(st)
    lin = flow.nn.Linear(3, 4)
    layers = [copy.deepcopy(lin) for _ in range(2)]  # (same arrays, not aliased)
    w = flow.randn(4, 3)
    sd = {"a": layers[0].weight.detach(), "b": layers[1].weight.detach(), "w": w,
          "w2": flow.tensor(w), "row": w[1].clone()}
    assert sorted(map(sorted, st._find_shared_tensors(sd))) == [["a"], ["b"], ["row"], ["w"],
                                                                ["w2"]]
    for name, info in safetensors.deserialize(st.save(sd)):
        arr = np.frombuffer(bytes(info["data"]), np.float32).reshape(info["shape"])
        np.testing.assert_array_equal(arr, sd[name].numpy())
    with pytest.raises(RuntimeError, match="share memory"):
        st.save_file({"x": w, "y": w}, str(tmp_path / "tied.safetensors"))
    assert dict(st._remove_duplicate_names({"x": w, "y": w, "z": w[1]})) == {"x": ["y", "z"]}


# -- resize_ / set_ / is_set_to ----------------------------------------------------------------

def test_resize_matches_pytorch():
    for sizes in [(3, 2), (2, 2), (5,), (4, 2), (0,), (2, 3)]:
        fx, tx = _pair((2, 3))
        out = fx.resize_(*sizes)
        tx.resize_(*sizes)
        assert out is fx and tuple(fx.shape) == sizes
        keep = min(6, int(np.prod(sizes)))
        _same(fx.reshape(-1)[:keep], tx.reshape(-1)[:keep])
        assert not fx.reshape(-1)[keep:].numpy().any()  # (new elements: zeros)
        assert fx._version == tx._version  # (bumped only when the shape changes)
    fm, tm = flow.ones(2, device="meta"), torch.ones(2, device="meta")
    assert fm.resize_(5).shape == tm.resize_(5).shape and fm.is_meta
    fx, tx = _pair((2, 3))
    assert fx.resize_([6]).shape == tx.resize_([6]).shape
    assert fx.resize_(flow.Size([3, 2])).shape == tx.resize_(torch.Size([3, 2])).shape
    fy, ty = _pair((2, 3))
    assert tuple(fx.resize_as_(fy).shape) == tuple(tx.resize_as_(ty).shape) == (2, 3)
    msg = _raises_like(lambda: flow.ones(3, requires_grad=True).resize_(2),
                       lambda: torch.ones(3, requires_grad=True).resize_(2))
    assert "cannot resize variables that require grad" in msg
    with flow.no_grad():
        with pytest.raises(RuntimeError, match="require grad"):
            flow.ones(3, requires_grad=True).resize_(2)
    with pytest.raises(RuntimeError, match=r"resize_\(\).*non-negative"):
        flow.ones(3).resize_(-1)
    with pytest.raises(TypeError, match=r"resize_\(\).*size"):
        flow.ones(3).resize_(2.5)


def test_resize_of_a_view_reslices_its_base_as_pytorch():
    fx, tx = _pair((2, 3))
    fv, tv = fx[1], tx[1]
    fv.resize_(2)
    tv.resize_(2)
    _same(fv, tv)
    assert fv.storage_offset() == tv.storage_offset() == 3
    _same(fx, tx)  # (the base is unchanged)
    fv.add_(10)
    tv.add_(10)
    _same(fx, tx)  # (and still aliased)
    assert fv.data_ptr() - fx.data_ptr() == tv.data_ptr() - tx.data_ptr()
    # x.data.resize_(n) leaves x as it is
    fp, tp = _pair((2, 3))
    fp.data.resize_(4)
    tp.data.resize_(4)
    _same(fp, tp)
    with pytest.raises(RuntimeError, match="cannot grow to 4 elements"):
        fx[1].resize_(4)  # (PyTorch enlarges the shared storage; jflow's views cannot)


def test_deprecated_resize_and_resize_as():
    fx, tx = _pair((2, 3))
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        fr = fx.resize(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = tx.resize(3, 2)
        _same(fr, tr)
        with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
            fr2 = fx.resize_as(flow.ones(6))
        _same(fr2, tx.resize_as(torch.ones(6)))
        msg = _raises_like(lambda: fx.resize(4), lambda: tx.resize(4))
    assert "requested resize to 4 (4 elements in total)" in msg


def test_set_matches_pytorch():
    fy, ty = _pair((2, 3))
    fx, tx = flow.zeros(2), torch.zeros(2)
    assert fx.set_(fy) is fx
    tx.set_(ty)
    _same(fx, tx)
    assert fx.is_set_to(fy) and fy.is_set_to(fx) and tx.is_set_to(ty)
    assert fx.data_ptr() == fy.data_ptr()
    fx.add_(1)  # writes reach the source ...
    tx.add_(1)
    _same(fy, ty)
    fy.mul_(2)  # ... and the other way
    ty.mul_(2)
    _same(fx, tx)
    # a view as the source: its offset
    fz, tz = flow.zeros(2), torch.zeros(2)
    fz.set_(fy[1])
    tz.set_(ty[1])
    _same(fz, tz)
    assert fz.storage_offset() == tz.storage_offset() == 3
    assert fz.is_set_to(fy[1]) == tz.is_set_to(ty[1]) is True
    assert fz.is_set_to(fy) == tz.is_set_to(ty) is False
    # set_(): empty
    fe, te = _pair((2,))
    _same(fe.set_(), te.set_())
    assert not fe.is_set_to(fy)
    # a storage with offset, sizes and strides: a view of the storage's tensor
    fs, ts = flow.zeros(2), torch.zeros(2)
    fs.set_(fy.untyped_storage(), 2, (2, 2), (1, 2))
    ts.set_(ty.untyped_storage(), 2, (2, 2), (1, 2))
    _same(fs, ts)
    fs.zero_()
    ts.zero_()
    _same(fy, ty)
    fw, tw = flow.zeros(2), torch.zeros(2)
    _same(fw.set_(fy.untyped_storage()), tw.set_(ty.untyped_storage()))
    # x.data.set_(y) re-points the .data view only: x keeps its elements
    fp, tp = flow.zeros(2), torch.zeros(2)
    fp.data.set_(fy)
    tp.data.set_(ty)
    _same(fp, tp)


def test_set_errors_and_parameters():
    fy, ty = _pair((2, 3))
    msg = _raises_like(lambda: flow.zeros(2, dtype=flow.int64).set_(fy),
                       lambda: torch.zeros(2, dtype=torch.int64).set_(ty))
    assert "set_()" in msg and "int64" in msg
    msg = _raises_like(lambda: flow.zeros(2, requires_grad=True).set_(fy),
                       lambda: torch.zeros(2, requires_grad=True).set_(ty))
    assert "leaf Variable that requires grad" in msg
    with pytest.raises(RuntimeError, match="source that requires grad"):
        flow.zeros(2).set_(flow.ones(3, requires_grad=True))
    with pytest.raises(TypeError, match="must be Tensor or Storage"):
        flow.zeros(2).set_(3)
    with pytest.raises(NotImplementedError, match="view of this tensor"):
        fy.set_(fy[1])
    # a Parameter takes the value (it cannot become a view: see set_'s docstring)
    fp, tp = flow.nn.Parameter(flow.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    with flow.no_grad():
        assert fp.set_(fy.clone()) is fp
    with torch.no_grad():
        tp.set_(ty.clone())
    assert type(fp) is flow.nn.Parameter and fp.requires_grad
    _same(fp, tp)


def test_set_from_a_file_storage(tmp_path):
    data = np.arange(8, dtype=np.float32)
    f = tmp_path / "x.bin"
    f.write_bytes(data.tobytes())
    fs = flow.UntypedStorage.from_file(str(f), shared=False, nbytes=32)
    ts = torch.UntypedStorage.from_file(str(f), shared=False, nbytes=32)
    fx, tx = flow.zeros(1), torch.zeros(1)
    fx.set_(fs, 1, (3,), (2,))
    tx.set_(ts, 1, (3,), (2,))
    _same(fx, tx)


def test_is_set_to_matches_pytorch():
    fx, tx = _pair((2, 3))
    pairs = [lambda x: x, lambda x: x.detach(), lambda x: x.clone(), lambda x: x.view(6),
             lambda x: x[:], lambda x: x.t().t(), lambda x: x.data]
    for make in pairs:
        assert fx.is_set_to(make(fx)) == tx.is_set_to(make(tx))
    _raises_like(lambda: fx.is_set_to(3), lambda: tx.is_set_to(3))


# -- new ---------------------------------------------------------------------------------------

def test_new_matches_pytorch():
    fx, tx = _pair((2, 3))
    for args in [(), (2, 3), (0,), (4,)]:
        f, t = fx.new(*args), tx.new(*args)
        assert tuple(f.shape) == tuple(t.shape) and f.dtype == flow.float32
    assert tuple(fx.new(flow.Size([2, 1])).shape) == (2, 1)
    for data in ([1, 2], (2, 3), [[1.5, 2.5]], np.array([3, 4])):
        _same(fx.new(data), tx.new(data))
    fi, ti = flow.tensor([1, 2]), torch.tensor([1, 2])
    _same(fi.new([1.7, -2.7]), ti.new([1.7, -2.7]))  # (self's dtype: truncated)
    assert fi.new([1.7]).dtype == flow.int64
    _same(fx.new(fx.untyped_storage()), tx.new(tx.untyped_storage()))
    assert fx.new(2, device="cpu").shape == (2,)
    # new(other): an alias of other, with its history
    fw, tw = _pair((3,))
    fa, ta = fx.new(fw), tx.new(tw)
    fa.add_(1)
    ta.add_(1)
    _same(fw, tw)
    fg = flow.tensor([1.0, 2.0], requires_grad=True)
    tg = torch.tensor([1.0, 2.0], requires_grad=True)
    (fx.new(fg) * flow.tensor([3.0, 4.0])).sum().backward()
    (tx.new(tg) * torch.tensor([3.0, 4.0])).sum().backward()
    _same(fg.grad, tg.grad)
    for bad in [lambda x, lib: x.new(lib.tensor([1, 2])), lambda x, lib: x.new(2.0),
                lambda x, lib: x.new(True), lambda x, lib: x.new(2, dtype=lib.int64),
                lambda x, lib: x.new(2, requires_grad=True), lambda x, lib: x.new([1], 2)]:
        _raises_like(lambda: bad(fx, flow), lambda: bad(tx, torch))
    msg = _raises_like(lambda: fx.new(-1), lambda: tx.new(-1))
    assert "negative dimension -1" in msg


# -- apply_ / map_ / map2_ ---------------------------------------------------------------------

def test_apply_map_map2_match_pytorch():
    for dt in (np.float32, np.float64, np.int64, np.int32, np.bool_):
        a = (_RNG.standard_normal((2, 3)) * 5).astype(dt)
        fx, tx = flow.tensor(a), torch.tensor(a)
        assert fx.apply_(lambda v: v * 3 - 1) is fx
        tx.apply_(lambda v: v * 3 - 1)
        _same(fx, tx)
    for fd, td in ((flow.float16, torch.float16), (flow.bfloat16, torch.bfloat16)):
        f, t = flow.ones(3, dtype=fd), torch.ones(3, dtype=td)
        f.apply_(lambda v: v / 3)
        t.apply_(lambda v: v / 3)
        assert f.to(flow.float32).tolist() == t.float().tolist()
    fx, tx = _pair((2, 3))
    fo, to = _pair((3,))
    fx.map_(fo, lambda p, q: p * q + 1)
    tx.map_(to, lambda p, q: p * q + 1)
    _same(fx, tx)
    fy, ty = _pair((2, 1))
    assert fx.map2_(fo, fy, lambda p, q, r: p - q * r) is fx
    tx.map2_(to, ty, lambda p, q, r: p - q * r)
    _same(fx, tx)
    # through a view: its base sees the write
    fb, tb = flow.zeros(2, 2), torch.zeros(2, 2)
    fb[0].map_(flow.tensor([5.0, 6.0]), lambda p, q: q)
    tb[0].map_(torch.tensor([5.0, 6.0]), lambda p, q: q)
    _same(fb, tb)
    # the callable sees Python numbers, in row-major order
    seen: list = []
    flow.tensor([[1, 2], [3, 4]]).apply_(lambda v: seen.append(v) or v)
    assert seen == [1, 2, 3, 4] and all(type(v) is int for v in seen)
    seen.clear()
    flow.tensor([0.5]).apply_(lambda v: seen.append(v) or v)
    assert type(seen[0]) is float
    assert flow.ones(2, device="meta").apply_(lambda v: 1 / 0).is_meta


def test_apply_conversions_match_pytorch():
    dtypes = [("uint8", flow.uint8, torch.uint8), ("int8", flow.int8, torch.int8),
              ("int16", flow.int16, torch.int16), ("int64", flow.int64, torch.int64),
              ("bool", flow.bool, torch.bool), ("float32", flow.float32, torch.float32),
              ("complex64", flow.complex64, torch.complex64)]
    for _, fd, td in dtypes:
        for value in (300, -3, 70000, 2**40, 1e300, 2.5, -2.7, True, 1 + 2j, float("nan"),
                      None, "a", [1], -255, -256, 255.9, -0.5, 127.5, float("inf"), 0j):
            f, t = flow.ones(2, dtype=fd), torch.ones(2, dtype=td)
            try:
                t.apply_(lambda _: value)
            except Exception as e:  # noqa: BLE001
                with pytest.raises(type(e)):
                    f.apply_(lambda _: value)
                continue
            f.apply_(lambda _: value)
            np.testing.assert_array_equal(f.numpy(), t.numpy(), err_msg=f"{fd} {value!r}")


def test_apply_map_errors():
    for lib in (flow, torch):
        g = lib.ones(2, requires_grad=True)
        msg = _raises_like(lambda: g.apply_(lambda v: v),
                           lambda: torch.ones(2, requires_grad=True).apply_(lambda v: v))
        assert "Can't call apply_() on Variable that requires grad" in msg
    fx, tx = _pair((2, 3))
    msg = _raises_like(lambda: fx.map_(flow.tensor([1, 2, 3]), lambda p, q: p),
                       lambda: tx.map_(torch.tensor([1, 2, 3]), lambda p, q: p))
    assert msg == "map_: expected torch.FloatTensor for 'other' (got torch.LongTensor)"
    msg = _raises_like(lambda: fx.map2_(flow.tensor([1, 2, 3]), fx, lambda p, q, r: p),
                       lambda: tx.map2_(torch.tensor([1, 2, 3]), tx, lambda p, q, r: p))
    assert "argument 'x'" in msg
    _raises_like(lambda: fx.map_(3, lambda p, q: p), lambda: tx.map_(3, lambda p, q: p))
    _raises_like(lambda: fx.map_(flow.ones(2, requires_grad=True)[0].expand(3), lambda p, q: p),
                 lambda: tx.map_(torch.ones(2, requires_grad=True)[0].expand(3),
                                 lambda p, q: p))
    _raises_like(lambda: flow.ones(3).map_(fx, lambda p, q: p),
                 lambda: torch.ones(3).map_(tx, lambda p, q: p))
    _raises_like(lambda: fx.apply_(3), lambda: tx.apply_(3))
    _raises_like(lambda: fx.apply_(lambda v: 1 / 0), lambda: tx.apply_(lambda v: 1 / 0))


# -- register_post_accumulate_grad_hook --------------------------------------------------------

def _hooked_run(lib):
    w = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    b = lib.tensor([0.5, 0.25], requires_grad=True)
    log = []
    h1 = w.register_post_accumulate_grad_hook(lambda p: log.append(("w", p.grad.tolist())))
    w.register_hook(lambda g: g * 10)  # (a tensor hook registered after: runs before)

    def step(p):  # optimizer in backward: update, free the gradient
        log.append(("b", p.grad.tolist()))
        with lib.no_grad():
            p.sub_(0.1 * p.grad)
        p.grad = None
    b.register_post_accumulate_grad_hook(step)
    for k in range(2):
        ((w * w).sum() * (k + 1) + (b * w[:2]).sum() + (b ** 2).sum()).backward()
    h1.remove()
    (w.sum() + b.sum()).backward()
    return log, w.grad, b.grad, b


def test_post_accumulate_grad_hooks_match_pytorch():
    flog, fwg, fbg, fb = _hooked_run(flow)
    tlog, twg, tbg, tb = _hooked_run(torch)
    assert len(flog) == len(tlog) == 5
    for (fn, fv), (tn, tv) in zip(sorted(flog[:4]), sorted(tlog[:4])):
        assert fn == tn
        np.testing.assert_allclose(fv, tv, rtol=1e-6)
    assert flog[4][0] == tlog[4][0] == "b"
    _same(fwg, twg)
    assert fbg is None and tbg is None
    _same(fb, tb)


def test_post_accumulate_grad_hook_errors_and_handle():
    for lib in (flow, torch):
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="non-leaf"):
            (x * 2).register_post_accumulate_grad_hook(lambda p: None)
        with pytest.raises(RuntimeError, match="doesn't require gradient"):
            lib.ones(2).register_post_accumulate_grad_hook(lambda p: None)
    x = flow.ones(2, requires_grad=True)
    calls = []
    with x.register_post_accumulate_grad_hook(lambda p: calls.append(1)):
        x.sum().backward()
    x.sum().backward()
    assert calls == [1] and x.grad.tolist() == [2.0, 2.0]
    with pytest.raises(TypeError, match="callable"):
        x.register_post_accumulate_grad_hook(3)


# -- shape methods -----------------------------------------------------------------------------

def test_swapaxes_swapdims_inplace():
    for name in ("swapaxes_", "swapdims_"):
        fx, tx = _pair((2, 3, 4))
        assert getattr(fx, name)(0, 2) is fx
        getattr(tx, name)(0, 2)
        _same(fx, tx)
        assert fx._version == tx._version == 1
        with pytest.raises(RuntimeError, match=f"{name}.*view"):
            getattr(fx[0], name)(0, 1)


def test_unsafe_splits_match_pytorch():
    fx, tx = _pair((4, 3), np.float64)
    for f, t in ((fx.unsafe_chunk(2), tx.unsafe_chunk(2)),
                 (fx.unsafe_split(3, 1), tx.unsafe_split(3, 1)),
                 (fx.unsafe_split_with_sizes([1, 3]), tx.unsafe_split_with_sizes([1, 3]))):
        assert len(f) == len(t)
        for a, b in zip(f, t):
            _same(a, b)
            assert a._base is None and b._base is None
    _raises_like(lambda: fx.unsafe_split_with_sizes([1, 2]),
                 lambda: tx.unsafe_split_with_sizes([1, 2]))
    # a recorded in-place write into a piece: allowed (chunk's pieces refuse it)
    grads = []
    for a in (fx, tx):
        leaf = a.clone().requires_grad_(True)
        y = leaf * 2
        p, _ = y.unsafe_chunk(2)
        p.mul_(3)
        (p * p).sum().backward()
        grads.append(leaf.grad)
        with pytest.raises(RuntimeError):
            q, _ = (leaf * 2).chunk(2)
            q.mul_(3)
    np.testing.assert_allclose(grads[0].numpy(), grads[1].numpy())


def test_reversed_complex_and_python2_names():
    fx, tx = _pair((3, 2))
    _same(reversed(fx), reversed(tx))
    _same(fx.__div__(2.0), tx.__div__(2.0))
    fy, ty = fx.clone(), tx.clone()
    _same(fy.__idiv__(4.0), ty.__idiv__(4.0))
    _same(fy, ty)
    assert flow.tensor([2]).__long__() == torch.tensor([2]).__long__() == 2
    assert flow.tensor(0.0).__nonzero__() is torch.tensor(0.0).__nonzero__() is False
    f0 = flow.tensor(2.5)
    assert reversed(f0) is f0
    assert complex(flow.tensor(1 + 2j)) == complex(torch.tensor(1 + 2j)) == 1 + 2j
    assert complex(flow.tensor([3])) == complex(torch.tensor([3]))


# -- metadata, layouts, dim_order, subclasses --------------------------------------------------

def test_metadata_matches_pytorch():
    fx, tx = _pair((2, 3))
    for name in ("layout", "itemsize", "is_cpu", "is_sparse", "is_sparse_csr", "is_quantized",
                 "is_nested", "is_mkldnn", "is_mps", "is_xla", "is_vulkan", "is_ipu",
                 "is_maia", "is_mtia", "output_nr", "name"):
        fv, tv = getattr(fx, name), getattr(tx, name)
        assert str(fv).split(".")[-1] == str(tv).split(".")[-1], name
    assert fx.layout is flow.strided
    for fd, td in ((flow.float64, torch.float64), (flow.bfloat16, torch.bfloat16),
                   (flow.bool, torch.bool)):
        assert flow.ones(1, dtype=fd).itemsize == torch.ones(1, dtype=td).itemsize
    assert flow.ones(1, device="meta").is_cpu is torch.ones(1, device="meta").is_cpu is False
    for f, t in ((fx, tx), (fx[0], tx[0]), (flow.tensor(1.0), torch.tensor(1.0))):
        assert (f.dense_dim(), f.sparse_dim()) == (t.dense_dim(), t.sparse_dim())
        assert f.is_distributed() is t.is_distributed() is False
        assert f.is_inference() is t.is_inference() is False
    with flow.inference_mode():
        assert not flow.ones(2).is_inference()  # (jflow has no inference tensors)
    fr, tr = flow.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    assert fr.unbind()[0].output_nr == tr.unbind()[0].output_nr == 0
    assert fx.to_dense() is fx and tx.to_dense() is tx
    _same(fx.to_dense(flow.float64), tx.to_dense(torch.float64))
    assert fx.to_dense(flow.float64).dtype == flow.float64
    assert fx.dequantize() is fx and tx.dequantize() is tx
    fi, ti = flow.tensor([1, 2]), torch.tensor([1, 2])
    _same(fi.dequantize(), ti.dequantize())
    assert fi.dequantize().dtype == flow.float32


def test_dim_order_matches_pytorch():
    cases = [lambda lib: lib.empty(2, 3, 4), lambda lib: lib.empty(2, 3, 4).permute(2, 0, 1),
             lambda lib: lib.empty(2, 3, 4, 5).permute(0, 2, 3, 1),
             lambda lib: lib.empty(2, 1, 4), lambda lib: lib.empty(3, 1).expand(3, 4),
             lambda lib: lib.empty(1, 1), lambda lib: lib.tensor(1.0), lambda lib: lib.empty(5),
             lambda lib: lib.empty(2, 3, 4).transpose(0, 1)[:, 1:]]
    checks = [False, True, lambda lib: [lib.contiguous_format, lib.channels_last]]
    for make in cases:
        for check in checks:
            def run(lib):
                c = check(lib) if callable(check) else check
                return make(lib).dim_order(ambiguity_check=c)
            try:
                want = run(torch)
            except RuntimeError:
                with pytest.raises(RuntimeError, match="unique dim order"):
                    run(flow)
                continue
            assert run(flow) == want
    _raises_like(lambda: flow.empty(2).dim_order(ambiguity_check="x"),
                 lambda: torch.empty(2).dim_order(ambiguity_check="x"))


class _FlowSub(flow.Tensor):
    pass


class _TorchSub(torch.Tensor):
    pass


def test_as_subclass_and_module_load():
    fx, tx = _pair((2, 3))
    fs, ts = fx.as_subclass(_FlowSub), tx.as_subclass(_TorchSub)
    assert type(fs) is _FlowSub and type(ts) is _TorchSub
    _same(fs, ts)
    assert fs.requires_grad is ts.requires_grad is False
    fg = flow.tensor([1.0, 2.0], requires_grad=True)
    tg = torch.tensor([1.0, 2.0], requires_grad=True)
    for g, cls in ((fg, _FlowSub), (tg, _TorchSub)):
        s = g.as_subclass(cls)
        assert s.grad_fn is not None and s.requires_grad
        (s * s).sum().backward()
    _same(fg.grad, tg.grad)
    _raises_like(lambda: fx.as_subclass(int), lambda: tx.as_subclass(int))
    # module_load: copy_ then detach, or other.detach() with assign
    fz, tz = flow.zeros(2, 3), torch.zeros(2, 3)
    fo, to = fz.module_load(fx), tz.module_load(tx)
    _same(fo, to)
    _same(fz, tz)
    assert not fo.requires_grad
    fa = fz.module_load(fg, assign=True)
    assert not fa.requires_grad and fa.data_ptr() == fg.data_ptr()
    _raises_like(lambda: flow.nn.Parameter(flow.zeros(2, 3)).module_load(fx),
                 lambda: torch.nn.Parameter(torch.zeros(2, 3)).module_load(tx))


# -- method forms of top-level functions -------------------------------------------------------

def test_method_forms_match_pytorch():
    a = np.array([[0, 1, 0], [2, 0, 3]])
    fx, tx = flow.tensor(a), torch.tensor(a)
    for size, fill in ((2, -1), (5, 7), (0, -1)):
        _same(fx.nonzero_static(size=size, fill_value=fill),
              tx.nonzero_static(size=size, fill_value=fill))
    _raises_like(lambda: fx.nonzero_static(size=2, fill_value=1.5),
                 lambda: tx.nonzero_static(size=2, fill_value=1.5))
    fh, th = _pair((2, 3), np.float64)
    for fr, tr in ((fh.histogram(3), th.histogram(3)),
                   (fh.histogram(flow.tensor([-1.0, 0.0, 2.0], dtype=flow.float64),
                                 weight=fh.abs()),
                    th.histogram(torch.tensor([-1.0, 0.0, 2.0], dtype=torch.float64),
                                 weight=th.abs()))):
        np.testing.assert_allclose(fr.hist.numpy(), tr.hist.numpy(), rtol=1e-12)
        np.testing.assert_allclose(fr.bin_edges.numpy(), tr.bin_edges.numpy(), rtol=1e-12)
    fs, ts = flow.zeros(2, 3), torch.zeros(2, 3)
    src = np.array([1.0, 2.0], np.float32)
    _same(fs.as_strided_scatter(flow.tensor(src), (2,), (3,), 1),
          ts.as_strided_scatter(torch.tensor(src), (2,), (3,), 1))


def test_orgqr_ormqr_match_pytorch():
    a = _RNG.standard_normal((4, 3))
    ta = torch.tensor(a)
    qr, tau = torch.geqrf(ta)
    fq, ftau = flow.tensor(qr.numpy()), flow.tensor(tau.numpy())
    np.testing.assert_allclose(fq.orgqr(ftau).numpy(), qr.orgqr(tau).numpy(), atol=1e-12)
    c = _RNG.standard_normal((4, 2))
    c2 = _RNG.standard_normal((2, 4))
    for other, left, transpose in ((c, True, False), (c, True, True), (c2, False, False),
                                   (c2, False, True)):
        tc = torch.tensor(other, requires_grad=True)
        fc = flow.tensor(other, requires_grad=True)
        tq = qr.clone().requires_grad_(True)
        fqq = fq.clone().requires_grad_(True)
        want = tq.ormqr(tau, tc, left, transpose)
        got = fqq.ormqr(ftau, fc, left, transpose)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-12)
        (want * want).sum().backward()
        (got * got).sum().backward()
        np.testing.assert_allclose(fc.grad.numpy(), tc.grad.numpy(), atol=1e-10)
        np.testing.assert_allclose(fqq.grad.numpy(), tq.grad.numpy(), atol=1e-10)
    with pytest.raises(RuntimeError, match=r"ormqr\(\)"):
        fq.ormqr(ftau, flow.ones(3, 2, dtype=flow.float64))


# -- what jflow has not: clear errors ----------------------------------------------------------

def test_sparse_quantized_and_device_methods_raise_clearly():
    fx, tx = _pair((2, 3))
    from jflow.tensor_methods import unsupported as u

    for name in u.SPARSE_INPUT:
        with pytest.raises(RuntimeError, match=rf"Tensor\.{name}\(\).*no sparse layouts"):
            getattr(fx, name)()
    for name, what in u.TO_LAYOUT.items():
        with pytest.raises(NotImplementedError, match=rf"Tensor\.{name}\(\).*no {what}"):
            getattr(fx, name)()
    for name in u.QUANTIZED:
        with pytest.raises(NotImplementedError, match=rf"Tensor\.{name}\(\).*no quantized"):
            getattr(fx, name)()
        with pytest.raises(NotImplementedError):  # (PyTorch's type for a dense tensor)
            getattr(tx, name)()
    for name in ("indices", "values", "coalesce", "crow_indices", "is_coalesced"):
        with pytest.raises(RuntimeError):  # (PyTorch's type for a dense tensor)
            getattr(tx, name)()
    for name in ("xpu", "mtia", "ipu"):
        with pytest.raises(Exception) as want:
            getattr(tx, name)()
        with pytest.raises(want.type, match=rf"Tensor\.{name}\(\).*jflow has no"):
            getattr(fx, name)()
    for name, replacement in (("eig", "linalg.eig"), ("symeig", "linalg.eigh"),
                              ("lstsq", "linalg.lstsq"), ("solve", "linalg.solve")):
        args = (fx,) if name in ("lstsq", "solve") else ()
        msg = _raises_like(lambda: getattr(fx, name)(*args),
                           lambda: getattr(tx, name)(*args))
        assert "removed" in msg and replacement in msg
    msg = _raises_like(lambda: fx.reinforce(1), lambda: tx.reinforce(1))
    assert msg == str(pytest.raises(RuntimeError, tx.reinforce, 1).value)
    for t in (fx, tx):
        with pytest.warns(UserWarning, match="volatile was removed"):
            assert t.volatile is False
    missing = [n for n in dir(torch.Tensor) if not hasattr(flow.Tensor, n)]
    for name in ("data_ptr", "untyped_storage", "new", "apply_", "resize_", "set_",
                 "register_post_accumulate_grad_hook", "to_sparse", "q_scale", "layout"):
        assert name not in missing
