"""PyTorch parity of ``TransformerDecoderLayer``, ``TransformerDecoder`` and ``Transformer``.

A torch module's state dict is copied into the jflow module through NumPy; eval-mode outputs
and the gradients with respect to the inputs must match. Everything runs in float64 with one
set of tiny shapes (d_model 8, 2 heads, T=4, S=5, N=2) reused by every test, because the test
time here is XLA compiles, one per new shape.
"""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow
from jflow import nn
from jflow.nn import functional as F

torch = pytest.importorskip("torch")

E, H, FF, T, S, N = 8, 2, 16, 4, 5, 2
_rng = np.random.default_rng(11)


def _r(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape)


def _load(jmod: nn.Module, tmod: torch.nn.Module) -> None:
    """Same keys and shapes as torch's state dict, then torch's values copied in."""
    tsd = tmod.state_dict()
    jsd = jmod.state_dict()
    assert set(jsd) == set(tsd)
    for k, v in tsd.items():
        assert tuple(jsd[k].shape) == tuple(v.shape), k
    jmod.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tsd.items()})


def _pair(make_j, make_t):
    """(jflow module, torch module) in float64 and eval mode, torch's weights in both."""
    torch.manual_seed(0)
    tm = make_t().double().eval()
    jm = make_j().to(flow.float64).eval()
    _load(jm, tm)
    return jm, tm


def _masks():
    """A causal tgt mask (float, -inf above the diagonal) and a memory padding mask."""
    causal = np.triu(np.full((T, T), -np.inf), 1)
    mkpm = np.zeros((N, S), bool)
    mkpm[0, -2:] = True                                  # True = padded (torch convention)
    return causal, mkpm


def _run(jm, tm, arrays: dict, masks: dict, flags: dict) -> None:
    """Call both modules with the same inputs; compare outputs and input gradients."""
    ja = {k: flow.tensor(v).requires_grad_() for k, v in arrays.items()}
    ta = {k: torch.tensor(v, requires_grad=True) for k, v in arrays.items()}
    jmk = {k: flow.tensor(v) for k, v in masks.items()}
    tmk = {k: torch.tensor(v) for k, v in masks.items()}
    oj = jm(**ja, **jmk, **flags)
    ot = tm(**ta, **tmk, **flags)
    np.testing.assert_allclose(oj.detach().numpy(), ot.detach().numpy(), rtol=1e-7, atol=1e-9)
    w = _r(*ot.shape)
    (oj * flow.tensor(w)).sum().backward()
    (ot * torch.tensor(w)).sum().backward()
    for k in arrays:
        np.testing.assert_allclose(ja[k].grad.numpy(), ta[k].grad.numpy(), rtol=1e-6,
                                   atol=1e-9, err_msg=k)


_TGT, _MEM = _r(T, N, E), _r(S, N, E)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first: bool) -> None:
    kw = dict(d_model=E, nhead=H, dim_feedforward=FF, dropout=0.1, norm_first=norm_first,
              activation="gelu" if norm_first else "relu")
    jm, tm = _pair(lambda: nn.TransformerDecoderLayer(**kw),
                   lambda: torch.nn.TransformerDecoderLayer(**kw))
    causal, mkpm = _masks()
    arrays = {"tgt": _TGT, "memory": _MEM}
    masks = {"tgt_mask": causal, "memory_key_padding_mask": mkpm}
    _run(jm, tm, arrays, masks, {})
    # tgt_is_causal=True: jflow applies the causal mask itself; same function.
    _run(jm, tm, arrays, masks, {"tgt_is_causal": True})


def test_decoder_stack_batch_first_callable_activation() -> None:
    kw = dict(d_model=E, nhead=H, dim_feedforward=FF, dropout=0.0, batch_first=True)
    jm, tm = _pair(
        lambda: nn.TransformerDecoder(nn.TransformerDecoderLayer(**kw, activation=F.gelu), 2,
                                      norm=nn.LayerNorm(E)),
        lambda: torch.nn.TransformerDecoder(
            torch.nn.TransformerDecoderLayer(**kw, activation=torch.nn.functional.gelu), 2,
            norm=torch.nn.LayerNorm(E)))
    assert len(jm.layers) == 2 and jm.layers[0] is not jm.layers[1]
    causal, mkpm = _masks()
    tkpm = np.zeros((N, T), bool)
    tkpm[1, -1] = True
    # bool masks here (True = masked), as torch wants both masks of one kind
    _run(jm, tm, {"tgt": _TGT.transpose(1, 0, 2).copy(), "memory": _MEM.transpose(1, 0, 2).copy()},
         {"tgt_mask": np.isinf(causal), "tgt_key_padding_mask": tkpm,
          "memory_key_padding_mask": mkpm}, {})


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_transformer_matches_torch() -> None:
    kw = dict(d_model=E, nhead=H, num_encoder_layers=1, num_decoder_layers=1,
              dim_feedforward=FF, dropout=0.1)
    jm, tm = _pair(lambda: nn.Transformer(**kw), lambda: torch.nn.Transformer(**kw))
    causal, mkpm = _masks()
    _run(jm, tm, {"src": _MEM, "tgt": _TGT},
         {"tgt_mask": causal, "src_key_padding_mask": mkpm, "memory_key_padding_mask": mkpm},
         {})


def test_transformer_init_and_checks() -> None:
    m = nn.Transformer(d_model=E, nhead=H, num_encoder_layers=1, num_decoder_layers=1,
                       dim_feedforward=FF)
    w = m.decoder.layers[0].linear1.weight.detach().numpy()          # xavier_uniform_ over (FF, E)
    bound = np.sqrt(6.0 / (E + FF))
    assert np.abs(w).max() <= bound
    assert np.all(m.encoder.norm.weight.detach().numpy() == 1)       # 1-d params keep their init
    with pytest.raises(RuntimeError, match="batch number"):
        m(flow.zeros(S, 2, E), flow.zeros(T, 3, E))
    with pytest.raises(RuntimeError, match="d_model"):
        m(flow.zeros(S, 2, 4), flow.zeros(T, 2, 4))
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF), 1)
    custom = nn.Transformer(d_model=E, nhead=H, custom_encoder=enc, num_decoder_layers=1,
                            dim_feedforward=FF)
    assert custom.encoder is enc


@pytest.mark.parametrize("dtype", [None, "float64"])
def test_generate_square_subsequent_mask(dtype) -> None:
    jd = None if dtype is None else getattr(flow, dtype)
    td = None if dtype is None else getattr(torch, dtype)
    for sz in (1, 4):
        mj = nn.Transformer.generate_square_subsequent_mask(sz, dtype=jd)
        mt = torch.nn.Transformer.generate_square_subsequent_mask(sz, dtype=td)
        assert str(mj.dtype).split(".")[-1] == str(mt.dtype).split(".")[-1]
        np.testing.assert_array_equal(mj.numpy(), mt.numpy())
