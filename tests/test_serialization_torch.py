"""PyTorch's checkpoint format both ways, against real PyTorch: torch.save -> flow.load,
flow.save -> torch.load(weights_only=True), whole modules, the weights_only policy and its
allow-list, map_location, byte order, and the format choice of flow.save."""

from __future__ import annotations

import io
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import jflow as flow
from jflow import serialization as S
from jflow.serialization import _formats

torch = pytest.importorskip("torch")


def _np(t):
    """Values of a torch or jflow tensor as a NumPy array (bfloat16 through float32)."""
    if isinstance(t, torch.Tensor):
        t = t.detach().resolve_conj().resolve_neg()
        if t.dtype == torch.bfloat16:
            t = t.float()
        return t.numpy()
    if t.dtype == flow.bfloat16:
        t = t.float()
    return np.asarray(t.detach().numpy())


def _same(a, b):
    """jflow value ``a`` equals torch value ``b`` (dtypes by name, tensors exactly)."""
    if isinstance(b, torch.Tensor):
        assert isinstance(a, flow.Tensor), type(a)
        assert str(b.dtype).replace("torch.", "") == a.dtype.name
        assert tuple(a.shape) == tuple(b.shape)
        assert a.requires_grad == b.requires_grad
        assert isinstance(a, flow.nn.Parameter) == isinstance(b, torch.nn.Parameter)
        np.testing.assert_array_equal(_np(a), _np(b))
    elif isinstance(b, torch.device):
        assert isinstance(a, flow.device) and str(a) == str(b)
    elif isinstance(b, torch.dtype):
        assert a is getattr(flow, str(b).replace("torch.", ""))
    elif isinstance(b, dict):
        assert type(a) is type(b) and list(a) == list(b)
        for k in b:
            _same(a[k], b[k])
    elif isinstance(b, (list, tuple)):
        assert type(a) is type(b) or (isinstance(b, torch.Size) and isinstance(a, flow.Size))
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a == b and type(a) is type(b)


def _torch_bytes(obj, **kw) -> io.BytesIO:
    buf = io.BytesIO()
    torch.save(obj, buf, **kw)
    buf.seek(0)
    return buf


def _flow_bytes(obj, **kw) -> io.BytesIO:
    buf = io.BytesIO()
    flow.save(obj, buf, **kw)
    buf.seek(0)
    return buf


# -- torch.save -> flow.load --------------------------------------------------------------------
def test_torch_state_dicts_and_containers_load_equal():
    torch.manual_seed(0)
    base = torch.randn(4, 6)
    obj = {
        "f32": base, "f16": base.half(), "bf16": base.bfloat16(), "f64": base.double(),
        "i64": torch.arange(-5, 5), "i32": torch.arange(3, dtype=torch.int32),
        "i16": torch.tensor([1, -2], dtype=torch.int16), "i8": torch.tensor([-3], dtype=torch.int8),
        "u8": torch.tensor([255, 0], dtype=torch.uint8), "bool": torch.tensor([True, False, True]),
        "c64": torch.randn(3, dtype=torch.complex64),
        "c128": torch.randn(2, dtype=torch.complex128), "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3), "empty_i": torch.zeros(2, 0, dtype=torch.int64),
        # views sharing one storage, non-contiguous strides, offsets
        "row": base[1], "col": base[:, 2], "t": base.t(), "step": base[::2, 1::3],
        "expand": torch.ones(1, 3).expand(4, 3), "conj": torch.tensor([1 + 2j]).conj(),
        "param": torch.nn.Parameter(torch.ones(2)),
        "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False),
        "grad": torch.ones(2, requires_grad=True),
        "nested": OrderedDict(a=[1, 2.5, "x", None, True, (3, b"by")], b={"deep": [base[0, :2]]}),
        "dtype": torch.bfloat16, "size": torch.Size([2, 3]), "set": {1, 2}, "complex": 1 - 2j,
    }
    out = flow.load(_torch_bytes(obj))
    _same(out, obj)
    assert isinstance(out["size"], flow.Size) and out["set"] == {1, 2}


def test_state_dict_metadata_and_tied_weights():
    m = torch.nn.Sequential(torch.nn.Embedding(5, 3), torch.nn.Linear(3, 5, bias=False))
    m[1].weight = m[0].weight                       # tied: one storage, two keys
    sd = m.state_dict()
    out = flow.load(_torch_bytes(sd))
    assert isinstance(out, OrderedDict) and out._metadata == sd._metadata
    _same(out, sd)
    net = flow.nn.Sequential(flow.nn.Embedding(5, 3), flow.nn.Linear(3, 5, bias=False))
    net.load_state_dict(out)
    np.testing.assert_array_equal(_np(net[1].weight), _np(m[1].weight))


def test_hf_style_pytorch_model_bin(tmp_path):
    torch.manual_seed(1)
    layer = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    path = tmp_path / "pytorch_model.bin"
    torch.save(layer.state_dict(), path)
    out = flow.load(path, map_location="cpu")               # weights_only by default
    _same(out, layer.state_dict())
    assert _formats.detect(str(path)) is _formats.TORCH


def test_map_location_forms():
    buf = _torch_bytes({"w": torch.ones(2)}).getvalue()
    for loc in ("cpu", flow.device("cpu"), {"cpu": "cpu"}, {"cuda:0": "cpu"}):
        assert flow.load(io.BytesIO(buf), map_location=loc)["w"].numpy().tolist() == [1, 1]
    seen = []
    out = flow.load(io.BytesIO(buf), map_location=lambda t, loc: seen.append(loc) or t)
    assert seen == ["cpu"] and out["w"].numpy().tolist() == [1, 1]
    assert flow.load(io.BytesIO(buf), mmap=True)["w"].shape == (2,)


def test_big_endian_files_load():
    obj = {"f": torch.arange(4, dtype=torch.float32) / 3, "i": torch.arange(3) - 1,
           "c": torch.tensor([1 + 2j, -3j], dtype=torch.complex64),
           "h": torch.tensor([1.5, -2], dtype=torch.bfloat16), "b": torch.tensor([True, False])}
    src = zipfile.ZipFile(_torch_bytes(obj))
    # torch numbers the storages 0, 1, ... in the order it meets them: obj's order
    parts = [v.element_size() // (2 if v.is_complex() else 1) for v in obj.values()]
    prefix = src.namelist()[0].split("/")[0]
    assert sum("/data/" in n for n in src.namelist()) == len(obj)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:
        for n in src.namelist():
            raw = src.read(n)
            if n == f"{prefix}/byteorder":
                raw = b"big"
            elif "/data/" in n:
                size = parts[int(n.rsplit("/", 1)[1])]
                if size > 1:
                    raw = np.frombuffer(raw, dtype=f"<u{size}").byteswap().tobytes()
            out.writestr(n, raw)
    buf.seek(0)
    _same(flow.load(buf), obj)


def test_legacy_non_zip_format_is_refused_clearly(tmp_path):
    path = tmp_path / "old.pt"
    torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=False)
    with pytest.raises(S.SerializationError, match="legacy format"):
        flow.load(path)


# -- flow.save -> torch.load --------------------------------------------------------------------
def test_flow_files_load_in_torch_with_weights_only(tmp_path):
    flow.manual_seed(0)
    t = flow.randn(3, 4)
    obj = {"t": t, "alias": t, "p": flow.nn.Parameter(flow.ones(2)), "bf": t.to(flow.bfloat16),
           "h": t.half(), "i": flow.arange(5), "b": flow.tensor([True, False]),
           "c": flow.tensor([1 + 2j, 3j], dtype=flow.complex64), "z": flow.tensor(7.0),
           "e": flow.zeros(0, 2), "nc": t.t(), "grad": flow.ones(2, requires_grad=True),
           "meta": OrderedDict(epoch=3, dtype=flow.float16, size=flow.Size([1, 2]),
                               dev=flow.device("cpu"), xs=[1.5, "s", None, (True, b"b")])}
    path = tmp_path / "ckpt.pt"                          # .pt: PyTorch's format
    flow.save(obj, path)
    with zipfile.ZipFile(path) as z:
        assert "archive/data.pkl" in z.namelist()
        for info in z.infolist():                        # storages 64-byte aligned
            if "/data/" in info.filename:
                assert (info.header_offset + 30 + len(info.filename) + len(info.extra)) % 64 == 0
    back = torch.load(path, weights_only=True)
    assert back["alias"] is back["t"]
    assert back["meta"]["dtype"] is torch.float16 and back["meta"]["size"] == torch.Size([1, 2])
    assert back["meta"]["dev"] == torch.device("cpu")
    _same(obj, back)
    _same(flow.load(path), back)                          # and back into jflow
    buf = _flow_bytes(flow.nn.Linear(3, 2).state_dict(), format="torch")
    sd = torch.load(buf, weights_only=True)
    torch.nn.Linear(3, 2).load_state_dict(sd)             # a real module takes it


def test_allow_list_by_name_and_safetensors_to_a_file_object():
    data = _torch_bytes(torch.nn.Linear(2, 1)).getvalue()
    S.clear_safe_globals()
    S.add_safe_globals([(flow.nn.Linear, "torch.nn.modules.linear.Linear")])
    try:
        assert S.get_safe_globals() == [(flow.nn.Linear, "torch.nn.modules.linear.Linear")]
        assert type(flow.load(io.BytesIO(data))) is flow.nn.Linear
    finally:
        S.clear_safe_globals()
    with pytest.raises(S.SerializationError, match="torch.nn.modules.linear.Linear"):
        flow.load(io.BytesIO(data))
    with pytest.raises(TypeError, match="module.name"):
        S.add_safe_globals([(flow.nn.Linear, 3)])
    pytest.importorskip("safetensors")
    buf = _flow_bytes({"w": flow.ones(2)}, format="safetensors")
    assert _formats.detect(buf) is _formats.SAFETENSORS
    assert flow.load(buf)["w"].numpy().tolist() == [1, 1]


def test_format_choice(tmp_path):
    sd = {"w": flow.ones(2)}
    for name, fmt in (("a.jf", "jflow"), ("a.pt", "torch"), ("a.pth", "torch"),
                      ("a.bin", "torch"), ("a.safetensors", "safetensors")):
        flow.save(sd, tmp_path / name)
        assert _formats.detect(str(tmp_path / name)).name == fmt, name
        assert flow.load(tmp_path / name)["w"].numpy().tolist() == [1, 1]
    flow.save(sd, tmp_path / "b.pt", format="jflow")
    assert _formats.detect(str(tmp_path / "b.pt")) is _formats.JFLOW
    flow.save(sd, tmp_path / "b.jf", format="torch")
    assert _formats.detect(str(tmp_path / "b.jf")) is _formats.TORCH
    with pytest.raises(ValueError, match="format must be"):
        flow.save(sd, tmp_path / "c", format="pickle")
    with pytest.raises(TypeError, match="format='torch'"):   # arbitrary objects: opt in
        flow.save({"x": object()}, tmp_path / "d.jf")
    assert not (tmp_path / "d.jf").exists()


# -- whole modules --------------------------------------------------------------------------------
def _torch_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Embedding(7, 4), torch.nn.LSTM(4, 5, batch_first=True))


def test_torch_whole_module_loads_with_weights_only_false_or_an_allow_list():
    m = _torch_model()
    data = _torch_bytes(m).getvalue()
    with pytest.raises(S.SerializationError, match=r"torch\.nn\.modules\.container\.Sequential"):
        flow.load(io.BytesIO(data))                       # weights_only=True by default
    ids = np.array([[1, 2, 3, 6]])
    want = m[1](m[0](torch.tensor(ids)))[0].detach().numpy()
    net = flow.load(io.BytesIO(data), weights_only=False)
    assert isinstance(net, flow.nn.Sequential) and isinstance(net[1], flow.nn.LSTM)
    np.testing.assert_allclose(net[1](net[0](flow.tensor(ids)))[0].detach().numpy(), want,
                               rtol=1e-5, atol=1e-6)
    assert list(net.state_dict()) == list(m.state_dict())
    S.clear_safe_globals()
    with S.safe_globals([flow.nn.Sequential, flow.nn.Embedding, flow.nn.LSTM]):
        net2 = flow.load(io.BytesIO(data))
    assert S.get_safe_globals() == []
    np.testing.assert_allclose(net2[1](net2[0](flow.tensor(ids)))[0].detach().numpy(), want,
                               rtol=1e-5, atol=1e-6)


class TinyLM(flow.nn.Module):
    """A user's model class, as word-language-model's RNNModel."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = flow.nn.Embedding(6, 4)
        self.hidden = flow.nn.Linear(4, 4)
        self.decoder = flow.nn.Linear(4, 6)
        self.nhid = 4

    def forward(self, x):
        return self.decoder(self.hidden(self.encoder(x)).tanh())


def test_flow_whole_module_round_trip(tmp_path):
    flow.manual_seed(0)
    model = TinyLM()
    x = flow.tensor([[1, 2], [3, 4]])
    want = model(x).detach().numpy()
    path = str(tmp_path / "model.flow")
    with open(path, "wb") as f:            # as word-language-model does: torch.save(model, f)
        flow.save(model, f)
    assert _formats.detect(path) is _formats.TORCH
    with open(path, "rb") as f:
        back = flow.load(f, weights_only=False)
    assert type(back) is TinyLM and back.nhid == 4
    np.testing.assert_array_equal(back(x).detach().numpy(), want)
    with pytest.raises(S.SerializationError, match="TinyLM"):
        flow.load(path)
    with S.safe_globals([TinyLM, flow.nn.Embedding, flow.nn.Linear]):
        np.testing.assert_array_equal(flow.load(path)(x).detach().numpy(), want)
    assert all(isinstance(p, flow.nn.Parameter) and p.requires_grad for p in back.parameters())
    flow.save({"model": model, "epoch": 3}, tmp_path / "ck.flow")  # holds a module: torch format
    ck = flow.load(tmp_path / "ck.flow", weights_only=False)
    assert ck["epoch"] == 3 and type(ck["model"]) is TinyLM
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    flow.save(opt.state_dict(), tmp_path / "opt.pt")
    assert flow.load(tmp_path / "opt.pt")["param_groups"][0]["lr"] == 0.1


def test_hostile_reduce_never_runs(tmp_path):
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "evil.pt"
    torch.save({"w": torch.ones(2), "x": Evil()}, path)
    with pytest.raises(S.SerializationError, match=r"posix\.system|nt\.system") as info:
        flow.load(path)
    assert repr(str(path)) in str(info.value)
    assert not marker.exists()
    monkey = pickle.Unpickler
    try:  # the C unpickler is never used
        pickle.Unpickler = None
        with pytest.raises(S.SerializationError):
            flow.load(path)
    finally:
        pickle.Unpickler = monkey
    assert not marker.exists()


def test_torch_modules_become_jflow_modules_computing_the_same():
    torch.manual_seed(2)
    m = torch.nn.Sequential(torch.nn.Conv2d(2, 8, 3), torch.nn.BatchNorm2d(8),
                            torch.nn.Flatten(2), torch.nn.GELU(),
                            torch.nn.TransformerEncoderLayer(9, 3, 16, dropout=0.0,
                                                             batch_first=True)).eval()
    net = flow.load(_torch_bytes(m), weights_only=False).eval()
    assert type(net[4].self_attn.out_proj) is flow.nn.Linear   # (torch: a Linear subclass)
    x = np.random.default_rng(0).random((2, 2, 5, 5), dtype=np.float32)
    np.testing.assert_allclose(net(flow.tensor(x)).detach().numpy(),
                               m(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_torch_names_jflow_lacks_are_refused_naming_them():
    src = zipfile.ZipFile(_torch_bytes(torch.nn.Sequential(torch.nn.GELU())))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as out:       # a class PyTorch might have and jflow lacks
        for n in src.namelist():
            data = src.read(n)
            if n.endswith("data.pkl"):
                assert b"torch.nn.modules.activation\nGELU\n" in data
                data = data.replace(b"activation\nGELU\n", b"activation\nGELX\n")
            out.writestr(n, data)
    buf.seek(0)
    with pytest.raises(S.SerializationError, match=r"torch\.nn\.modules\.activation\.GELX"):
        flow.load(buf, weights_only=False)


def test_saving_to_dev_null_keeps_the_device():
    flow.save(flow.nn.Linear(1, 1), os.devnull)
    flow.save({"w": flow.ones(1)}, os.devnull)
    assert not os.path.isfile(os.devnull)


def test_word_language_model_idiom_under_mock_torch(tmp_path):
    """pytorch/examples' word_language_model: torch.save(model, f), then torch.load(f,
    weights_only=False) or torch.load(f) inside safe_globals([...]), run on jflow."""
    import jflow.mock_torch as mock

    flow.manual_seed(0)
    model = TinyLM()
    x = flow.tensor([[1, 2], [3, 4]])
    want = model(x).detach().numpy()
    path = tmp_path / "model.pt"
    with mock.enable():
        import torch as T  # jflow, under PyTorch's names

        with open(path, "wb") as f:
            T.save(model, f)
        with open(path, "rb") as f:
            a = T.load(f, weights_only=False)
        with open(path, "rb") as f, pytest.raises(T.serialization.SerializationError):
            T.load(f)
        with T.serialization.safe_globals([TinyLM, T.nn.Embedding, T.nn.Linear]):
            with open(path, "rb") as f:
                b = T.load(f)
    for m in (a, b):
        assert type(m) is TinyLM
        np.testing.assert_array_equal(m(x).detach().numpy(), want)


def test_weights_only_refusals_are_unpickling_errors_as_in_pytorch(tmp_path):
    """PyTorch raises ``pickle.UnpicklingError`` for what ``weights_only=True`` refuses, and
    scripts catch that type to retry with ``weights_only=False``: the same code runs on jflow.
    A truncated file is a RuntimeError, not an unpickling error, in both."""
    path = tmp_path / "whole.pt"
    torch.save(torch.nn.Sequential(torch.nn.Linear(2, 3)), path)

    def load_with_fallback(lib):
        try:
            return lib.load(path), "weights_only"
        except pickle.UnpicklingError:
            return lib.load(path, weights_only=False), "fallback"

    want, how = load_with_fallback(torch)
    got, how2 = load_with_fallback(flow)
    assert how == how2 == "fallback"
    assert isinstance(got, flow.nn.Sequential)
    np.testing.assert_array_equal(got[0].weight.detach().numpy(), want[0].weight.detach().numpy())
    with pytest.raises(S.SerializationError, match="weights_only=True"):  # still jflow's type
        flow.load(path)
    cut = tmp_path / "cut.pt"                    # a truncated zip: RuntimeError in both
    torch.save({"w": torch.ones(100)}, cut)
    cut.write_bytes(cut.read_bytes()[:200])
    with pytest.raises(RuntimeError) as t_err:
        torch.load(cut)
    with pytest.raises(S.SerializationError) as f_err:
        flow.load(cut)
    assert not isinstance(t_err.value, pickle.UnpicklingError)
    assert not isinstance(f_err.value, pickle.UnpicklingError)
