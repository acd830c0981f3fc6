"""``torch.*`` functions a script calls at top level that jflow keeps elsewhere or had not
(jflow/composites.py, removed.py, introspection.py, global_settings.py), against PyTorch on
the same inputs: values, gradients, dtypes, warnings and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(0)


def _x(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape).astype(np.float32)


def _close(got: flow.Tensor, want: torch.Tensor, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=tol, atol=tol)


def test_views_shuffles_and_norms_match_pytorch() -> None:
    a = _x(3, 4, 5)
    f, t = flow.tensor(a), torch.tensor(a)
    for args in [(), (1,), (-1, 1, 2), (2, 0, 2)]:
        _close(flow.diagonal(f, *args), torch.diagonal(t, *args))
    for args in [((2, 3), (3, 1), 1), ((4, 2), (1, 5))]:
        _close(flow.as_strided(f, *args), torch.as_strided(t, *args))
    for shape in [(2, 5), (4, 7)]:                     # fewer, then more elements
        fr, tr = flow.tensor(a), torch.tensor(a)
        assert flow.resize_as_(fr, flow.zeros(shape)) is fr
        torch.resize_as_(tr, torch.zeros(shape))
        assert fr.shape == tuple(tr.shape) == shape
        n = min(a.size, int(np.prod(shape)))
        np.testing.assert_array_equal(fr.numpy().ravel()[:n], tr.numpy().ravel()[:n])
    img = _x(2, 8, 3, 3)
    fi, ti = flow.tensor(img), torch.tensor(img)
    _close(flow.pixel_shuffle(fi, 2), torch.pixel_shuffle(ti, 2))
    _close(flow.pixel_unshuffle(flow.pixel_shuffle(fi, 2), 2), ti)
    _close(flow.pixel_unshuffle(fi[:, :, :2, :2], 2), torch.pixel_unshuffle(ti[:, :, :2, :2], 2))
    for fn in ("channel_shuffle", "native_channel_shuffle"):
        _close(getattr(flow, fn)(fi, 4), getattr(torch, fn)(ti, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                # PyTorch's deprecation warnings
        _close(flow.frobenius_norm(f, (1, 2)), torch.frobenius_norm(t, (1, 2)))
        _close(flow.frobenius_norm(f, (0,), True), torch.frobenius_norm(t, (0,), True))
        _close(flow.nuclear_norm(f[0]), torch.nuclear_norm(t[0]), 1e-4)
        _close(flow.nuclear_norm(f, (1, 2), True), torch.nuclear_norm(t, (1, 2), True), 1e-4)
        _close(flow.nuclear_norm(f[0], True), torch.nuclear_norm(t[0], True), 1e-4)
    m = _x(5, 3).astype(np.float64)
    qa, tau = torch.geqrf(torch.tensor(m))
    _close(flow.orgqr(flow.tensor(qa.numpy()), flow.tensor(tau.numpy())), torch.orgqr(qa, tau))
    c = _x(5, 2).astype(np.float64)
    _close(flow.ormqr(flow.tensor(qa.numpy()), flow.tensor(tau.numpy()), flow.tensor(c)),
           torch.ormqr(qa, tau, torch.tensor(c)))


def test_range_is_pytorchs_inclusive_deprecated_range() -> None:
    for args, kw in [((1, 4), {}), ((0, 1, 0.3), {}), ((1, 4), {"dtype": torch.int64}),
                     ((5, 1, -1.5), {}), ((2, 2), {})]:
        fkw = {"dtype": flow.int64} if kw else {}
        with pytest.warns(UserWarning, match="torch.range is deprecated"):
            got = flow.range(*args, **fkw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = torch.range(*args, **kw)
        assert got.dtype.name == str(want.dtype).removeprefix("torch."), args
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="range"):
        flow.range(4, 1)


def test_aten_dropout_forms() -> None:
    x = flow.ones(64, 32)
    out, mask = flow.native_dropout(x, 0.25, True)
    assert mask.dtype == flow.bool and out.shape == x.shape
    np.testing.assert_allclose(out.numpy(), mask.numpy() / 0.75, rtol=1e-6)
    assert 0.65 < mask.float().mean().item() < 0.85          # keeps ~75% of 2048 draws
    same, ones = flow.native_dropout(x, 0.25, False)
    assert same is x and ones.dtype == flow.bool and bool(ones.all())
    y = flow.ones(16, 8, 3)
    z = flow.feature_dropout(y, 0.5, True).numpy()
    assert (z == z[:, :, :1]).all() and set(np.unique(z)) <= {0.0, 2.0}   # whole channels
    assert flow.feature_dropout(y, 0.5, False) is y
    with pytest.raises(RuntimeError, match="at least 2 dims"):
        flow.feature_dropout(flow.ones(4), 0.5, True)
    for fn in (flow.dropout_, flow.alpha_dropout_, flow.feature_alpha_dropout_,
               flow.feature_dropout_):
        w = flow.ones(16, 8, 3)
        assert fn(w, 0.5, True) is w
        assert not np.array_equal(w.numpy(), np.ones((16, 8, 3), np.float32)), fn.__name__
        assert fn(w, 0.5, False) is w


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_rnn_cells_match_pytorch_values_and_gradients(kind) -> None:
    gates = {"lstm": 4, "gru": 3}.get(kind, 1)
    arrays = [_x(3, 4), _x(3, 5), _x(3, 5), _x(5 * gates, 4), _x(5 * gates, 5), _x(5 * gates),
              _x(5 * gates)]
    fts = [flow.tensor(a, requires_grad=True) for a in arrays]
    tts = [torch.tensor(a, requires_grad=True) for a in arrays]

    def run(lib, ts):
        x, h, c, wi, wh, bi, bh = ts
        if kind == "lstm":
            h2, c2 = lib.lstm_cell(x, (h, c), wi, wh, bi, bh)
            return h2 * 2 + c2
        return getattr(lib, f"{kind}_cell")(x, h, wi, wh, bi, bh)
    fo, to = run(flow, fts), run(torch, tts)
    _close(fo, to)
    fo.sum().backward()
    to.sum().backward()
    for f, t in zip(fts, tts):
        if t.grad is not None:
            _close(f.grad, t.grad)
    if kind == "lstm":
        with pytest.raises(RuntimeError, match="two hidden states"):
            flow.lstm_cell(fts[0], (fts[1],), *fts[3:5])


def test_convolution_entry_points_match_pytorch() -> None:
    x, w, b = _x(2, 3, 6, 6), _x(4, 3, 3, 3), _x(4)
    fx, fw, fb = (flow.tensor(a) for a in (x, w, b))
    tx, tw, tb = (torch.tensor(a) for a in (x, w, b))
    _close(flow.convolution(fx, fw, fb, [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
           torch.convolution(tx, tw, tb, [1, 1], [1, 1], [1, 1], False, [0, 0], 1), 1e-4)
    wt = _x(3, 4, 3, 3)
    _close(flow.convolution(fx, flow.tensor(wt), None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1),
           torch.convolution(tx, torch.tensor(wt), None, [2, 2], [1, 1], [1, 1], True, [1, 1],
                             1), 1e-4)
    _close(flow.convolution(fx[:, :, 0], fw[:, :, 0], fb, [1], [0], [1], False, [0], 1),
           torch.convolution(tx[:, :, 0], tw[:, :, 0], tb, [1], [0], [1], False, [0], 1), 1e-4)
    seq, k, bias = _x(7, 2, 3), _x(3, 3, 4), _x(4)
    fs = flow.tensor(seq, requires_grad=True)
    ts = torch.tensor(seq, requires_grad=True)
    for pad in (0, 1):
        fo = flow.conv_tbc(fs, flow.tensor(k), flow.tensor(bias), pad)
        to = torch.conv_tbc(ts, torch.tensor(k), torch.tensor(bias), pad)
        _close(fo, to, 1e-4)
    (fo * fo).sum().backward()
    (to * to).sum().backward()
    _close(fs.grad, ts.grad, 1e-4)
    tfn = torch.nn.functional
    _close(flow.nn.functional.conv_tbc(fs, flow.tensor(k), flow.tensor(bias), 2),
           tfn.conv_tbc(ts, torch.tensor(k), torch.tensor(bias), 2), 1e-4)
    img = flow.tensor(x)
    _close(flow.nn.functional.native_channel_shuffle(img, 3), tfn.native_channel_shuffle(
        torch.tensor(x), 3))
    with pytest.raises(RuntimeError, match="conv_tbc\\(\\): weight must have 3 dims"):
        flow.conv_tbc(fs, flow.tensor(k[0]), flow.tensor(bias))


def test_removed_functions_raise_naming_the_replacement() -> None:
    a = flow.eye(2)
    for name, replacement in [("solve", "linalg.solve"), ("lstsq", "linalg.lstsq"),
                              ("eig", "linalg.eig"), ("symeig", "linalg.eigh"),
                              ("matrix_rank", "linalg.matrix_rank")]:
        with pytest.raises(RuntimeError, match=f"torch.{name} was deprecated.*{replacement}"):
            getattr(flow, name)(a, a) if name in ("solve", "lstsq") else getattr(flow, name)(a)
        with pytest.raises(RuntimeError, match="removed"):
            getattr(torch, name)(torch.eye(2), torch.eye(2)) if name in ("solve", "lstsq") \
                else getattr(torch, name)(torch.eye(2))


def test_introspection_and_sym_helpers_answer_as_pytorch() -> None:
    f, t = flow.ones(2), torch.ones(2)
    assert flow.typename(f) == torch.typename(t) == "torch.FloatTensor"
    assert flow.typename(flow.ones(2, dtype=flow.int64)) == "torch.LongTensor"
    for obj in (3, 2.5, None, "s", object(), len):
        assert flow.typename(obj) == torch.typename(obj), obj
    assert flow.typename(flow.nn.Linear) == "jflow.nn.modules.linear.Linear"
    assert flow.is_storage(flow.UntypedStorage(4)) and not flow.is_storage(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                # storage() is deprecated in both
        for lib, x in ((flow, f), (torch, t)):
            assert lib.is_storage(x.untyped_storage()) and lib.is_storage(x.storage())
    assert flow.get_device(f) == torch.get_device(t) == -1
    assert flow.is_neg(f) is torch.is_neg(t) is False
    assert flow.is_inference(f) is torch.is_inference(t) is False
    for fn in (flow.get_device, flow.is_neg, flow.is_inference):
        with pytest.raises(TypeError, match="must be Tensor, not int"):
            fn(1)
    for name, args in [("sym_int", (3.7,)), ("sym_int", (-3.7,)), ("sym_float", (3,)),
                       ("sym_max", (2, 3.0)), ("sym_max", (3, 2.0)), ("sym_min", (2, 3)),
                       ("sym_not", (0,)), ("sym_ite", (False, 1, 2)), ("sym_sum", ([1, 2.5],)),
                       ("sym_sqrt", (4,))]:
        got, want = getattr(flow, name)(*args), getattr(torch, name)(*args)
        assert got == want and type(got) is type(want), (name, args, got, want)
    assert flow.vmap is flow.func.vmap


def test_global_switches_read_back_and_check_as_pytorch(monkeypatch) -> None:
    from jflow import global_settings as gs
    monkeypatch.setattr(gs, "_DETERMINISTIC", [False, False])
    monkeypatch.setattr(gs, "_INTEROP", [None])
    monkeypatch.setattr(gs, "_WARN_ALWAYS", [False])
    assert flow.get_deterministic_debug_mode() == 0
    flow.use_deterministic_algorithms(True, warn_only=True)
    assert flow.are_deterministic_algorithms_enabled()
    assert flow.is_deterministic_algorithms_warn_only_enabled()
    assert flow.get_deterministic_debug_mode() == 1
    flow.set_deterministic_debug_mode("error")
    assert flow.get_deterministic_debug_mode() == 2
    assert not flow.is_deterministic_algorithms_warn_only_enabled()
    flow.set_deterministic_debug_mode(0)
    assert not flow.are_deterministic_algorithms_enabled()
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
        flow.set_deterministic_debug_mode("x")
    with pytest.raises(RuntimeError, match="expected 0, 1, or 2, but got 3"):
        flow.set_deterministic_debug_mode(3)
    with pytest.raises(TypeError, match="'mode' \\(position 1\\) must be bool, not str"):
        flow.use_deterministic_algorithms("yes")
    assert flow.get_num_interop_threads() >= 1
    flow.set_num_interop_threads(3)
    assert flow.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
        flow.set_num_interop_threads(2)
    flow.set_warn_always(True)
    assert flow.is_warn_always_enabled()
    assert flow.set_flush_denormal(True) is False
    assert flow.is_vulkan_available() is False and flow.compiled_with_cxx11_abi() is True
    flow.init_num_threads()


def test_set_default_tensor_type() -> None:
    old = flow.get_default_dtype()
    try:
        for t, want in [(flow.DoubleTensor, flow.float64), ("torch.HalfTensor", flow.float16),
                        ("torch.FloatTensor", flow.float32)]:
            with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
                flow.set_default_tensor_type(t)
            assert flow.get_default_dtype() is want and flow.zeros(1).dtype is want
        for bad, err in [("torch.Foo", "invalid type"), ("numpy.FloatTensor", "invalid type"),
                         (flow.LongTensor, "only floating-point"), (3, "invalid type")]:
            with pytest.warns(UserWarning), pytest.raises(TypeError, match=err):
                flow.set_default_tensor_type(bad)
    finally:
        flow.set_default_dtype(old)


def test_unsupported_families_say_so_and_hasattr_stays_false() -> None:
    for name, what in [("sparse_coo_tensor", "sparse tensors"),
                       ("quantize_per_tensor", "quantized tensors"),
                       ("mkldnn_convolution", "oneDNN"), ("cudnn_convolution", "cuDNN")]:
        assert not hasattr(flow, name)
        with pytest.raises(AttributeError, match=f"no attribute '{name}': jflow has no {what}"):
            getattr(flow, name)
    with pytest.raises(AttributeError, match="^module 'jflow' has no attribute 'nonsense'$"):
        flow.nonsense  # noqa: B018


def test_frombuffer_matches_pytorch_and_its_checks() -> None:
    import array
    b = bytearray(range(16))
    for kw in [dict(dtype="int32"), dict(dtype="int16", count=3, offset=2),
               dict(dtype="uint8", offset=15), dict(dtype="float32", count=-2)]:
        fk = {**kw, "dtype": getattr(flow, kw["dtype"])}
        tk = {**kw, "dtype": getattr(torch, kw["dtype"])}
        np.testing.assert_array_equal(flow.frombuffer(b, **fk).numpy(),
                                      torch.frombuffer(b, **tk).numpy())
    f = flow.frombuffer(array.array("f", [1.5, 2.5]), dtype=flow.float32, requires_grad=True)
    assert f.requires_grad and f.dtype == flow.float32 and f.tolist() == [1.5, 2.5]
    for kw, msg in [(dict(offset=16), "offset \\(16 bytes\\) must be non-negative"),
                    (dict(offset=-1), "offset \\(-1 bytes\\)"),
                    (dict(count=0), "both buffer length \\(16\\) and count \\(0\\)"),
                    (dict(count=5), "requested buffer length \\(5 \\* 4 bytes\\)"),
                    (dict(offset=2), "must be a multiple of element size \\(4\\)")]:
        with pytest.raises(ValueError, match=msg):
            flow.frombuffer(b, dtype=flow.int32, **kw)
        with pytest.raises(ValueError, match=msg):
            torch.frombuffer(b, dtype=torch.int32, **kw)
    with pytest.raises(ValueError, match="both buffer length \\(0\\)"):
        flow.frombuffer(bytearray(), dtype=flow.int32)


def test_set_printoptions_prints_pytorchs_digits() -> None:
    """The numbers a repr shows follow the options as PyTorch's do (the layout is NumPy's:
    spacing and the dtype suffix differ, so the printed numbers are compared)."""
    import re

    from jflow.tensor import PRINT_OPTIONS
    saved, tsaved = dict(PRINT_OPTIONS), torch._tensor_str.PRINT_OPTS.__dict__.copy()
    a = np.array([1.123456789, 2e-5, 3000.5], np.float32)

    def numbers(r: str) -> list[str]:
        return re.findall(r"-?\d+\.\d*(?:e[+-]\d+)?|\.\.\.", r.split("dtype")[0])
    try:
        for kw in [dict(precision=2), dict(precision=3, sci_mode=False),
                   dict(precision=1, sci_mode=True), dict(profile="short"),
                   dict(profile="default")]:
            flow.set_printoptions(**kw)
            torch.set_printoptions(**kw)
            assert numbers(repr(flow.tensor(a))) == numbers(repr(torch.tensor(a))), kw
        flow.set_printoptions(threshold=5, edgeitems=2)
        torch.set_printoptions(threshold=5, edgeitems=2)
        assert numbers(repr(flow.arange(10.0))) == numbers(repr(torch.arange(10.0)))
        assert "..." in repr(flow.arange(10.0))
        flow.set_printoptions(profile="full")
        assert "..." not in repr(flow.arange(1200.0))
    finally:
        PRINT_OPTIONS.update(saved)
        torch._tensor_str.PRINT_OPTS.__dict__.update(tsaved)


def test_nn_utils_rnn_padding_matches_pytorch() -> None:
    from torch.nn.utils import rnn as trnn
    seqs = [_x(3, 2), _x(1, 2), _x(4, 2)]
    for kw in [{}, {"batch_first": True, "padding_value": -1.0},
               {"batch_first": True, "padding_side": "left"}]:
        fs = [flow.tensor(s, requires_grad=True) for s in seqs]
        ts = [torch.tensor(s, requires_grad=True) for s in seqs]
        fo, to = flow.nn.utils.rnn.pad_sequence(fs, **kw), trnn.pad_sequence(ts, **kw)
        _close(fo, to)
        (fo * fo).sum().backward()
        (to * to).sum().backward()
        for f, t in zip(fs, ts):
            _close(f.grad, t.grad)
    lengths = [3, 1, 4]
    back = flow.nn.utils.rnn.unpad_sequence(flow.nn.utils.rnn.pad_sequence(
        [flow.tensor(s) for s in seqs]), lengths)
    for got, want in zip(back, seqs):
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(ValueError, match="padding_side"):
        flow.nn.utils.rnn.pad_sequence([flow.tensor(seqs[0])], padding_side="middle")
