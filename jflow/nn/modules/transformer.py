"""``MultiheadAttention``, the encoder and decoder layers and stacks, and ``Transformer``
(PyTorch's ``torch.nn.modules.transformer``).

Parameter names, shapes and initialisation follow PyTorch, so state dicts are interchangeable:
``in_proj_weight (3E, E)`` / ``in_proj_bias (3E,)`` (or ``q_proj_weight``, ``k_proj_weight``,
``v_proj_weight`` when ``kdim`` / ``vdim`` differ from ``embed_dim``) with xavier_uniform_ and
zero biases, and ``out_proj`` a ``Linear`` (its default init, zero bias).

Attention runs through the fused ``scaled_dot_product_attention`` op when the weights are not
needed (``need_weights=False``, and always inside ``TransformerEncoderLayer``); with
``need_weights=True`` the probabilities are materialised with jflow ops
(:func:`jflow.functional.functors.attention.attention_math`) to be returned.

Masks use PyTorch's ``nn.MultiheadAttention`` conventions: a bool ``attn_mask`` or
``key_padding_mask`` marks positions that may NOT be attended (True = masked; the opposite of
``scaled_dot_product_attention``), a float one is added to the scores. A query row with every
key masked gives zeros (PyTorch gives NaN). ``is_causal=True`` is a hint that ``attn_mask``
is the causal mask (as PyTorch); jflow then applies the causal mask itself, also when
``attn_mask`` is None (PyTorch raises there).

``TransformerDecoderLayer``, ``TransformerDecoder`` and ``Transformer`` have PyTorch's
submodule names (``self_attn``, ``multihead_attn``, ``linear1/2``, ``norm1/2/3``,
``encoder.layers.<i>``, ``decoder.norm``, ...), so a torch ``state_dict`` loads unchanged.
PyTorch's eval-mode fast paths (nested tensors, fused encoder kernels) are not reproduced: they
compute the same function, except that the nested-tensor path returns zeros at padded source
positions where jflow returns the (unused) computed values.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

from ...creation import empty, full
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]

_FN = "MultiheadAttention.forward()"


class MultiheadAttention(Module):
    """Multi-head attention (``torch.nn.MultiheadAttention``): ``out_proj(attention(q W_q,
    k W_k, v W_v))`` over ``num_heads`` heads of size ``embed_dim // num_heads``.

    The computation is :func:`jflow.nn.functional.multi_head_attention_forward` (one
    implementation for both); ``add_bias_kv`` adds the learned ``bias_k`` / ``bias_v`` rows
    (1, 1, E), ``add_zero_attn`` a zero key / value row.
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: Any = None,
                 vdim: Any = None, batch_first: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        self.embed_dim = int(embed_dim)
        self.kdim = int(kdim) if kdim is not None else self.embed_dim
        self.vdim = int(vdim) if vdim is not None else self.embed_dim
        self._qkv_same_embed_dim = self.kdim == self.embed_dim and self.vdim == self.embed_dim
        self.num_heads = int(num_heads)
        self.dropout = float(dropout)
        self.batch_first = bool(batch_first)
        self.head_dim = self.embed_dim // self.num_heads
        if self.head_dim * self.num_heads != self.embed_dim:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads "
                             f"({num_heads})")
        e = self.embed_dim
        kw = {"dtype": dtype, "device": device}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * e, e, **kw))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(empty(e, e, **kw))
            self.k_proj_weight = Parameter(empty(e, self.kdim, **kw))
            self.v_proj_weight = Parameter(empty(e, self.vdim, **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * e, **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(e, e, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, e, **kw))
            self.bias_v = Parameter(empty(1, 1, e, **kw))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = bool(add_zero_attn)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Any = None,
                need_weights: bool = True, attn_mask: Any = None,
                average_attn_weights: bool = True, is_causal: bool = False
                ) -> tuple[Tensor, Any]:
        """(attention output, weights or None): output like ``query`` ((N, L, E) with
        ``batch_first``, else (L, N, E); (L, E) unbatched); weights (N, L, S) averaged over
        heads, or (N, H, L, S) with ``average_attn_weights=False``."""
        if query.ndim == 3 and self.batch_first:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(0, 1)
                else:
                    query, key = (t.transpose(0, 1) for t in (query, key))
                    value = key
            else:
                query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        elif query.ndim not in (2, 3):
            raise RuntimeError(f"{_FN}: query should be unbatched 2D or batched 3D, got shape "
                               f"{list(query.shape)}")
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight, average_attn_weights=average_attn_weights,
            is_causal=is_causal)
        if query.ndim == 3 and self.batch_first:
            out = out.transpose(0, 1)
        return out, weights

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"dropout={self.dropout}, batch_first={self.batch_first}")


def _activation(activation: Any) -> Callable[[Tensor], Tensor]:
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _build_layer(layer: Module, n_attn: int, d_model: int, nhead: int, dim_feedforward: int,
                 dropout: float, activation: Any, layer_norm_eps: float, batch_first: bool,
                 norm_first: bool, bias: bool, device: Any, dtype: Any) -> None:
    """The submodules of an encoder (``n_attn=1``) or decoder (2: + cross-attention) layer,
    under PyTorch's names: one norm and one dropout per residual block."""
    kw = {"device": device, "dtype": dtype}
    layer.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                         batch_first=batch_first, **kw)
    if n_attn == 2:
        layer.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                  batch_first=batch_first, **kw)
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
    layer.norm_first = bool(norm_first)
    for k in range(1, n_attn + 2):
        setattr(layer, f"norm{k}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
    for k in range(1, n_attn + 2):
        setattr(layer, f"dropout{k}", Dropout(dropout))
    layer.activation = _activation(activation)


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block (``torch.nn.TransformerEncoderLayer``): post-norm
    ``x = norm1(x + sa(x)); x = norm2(x + ff(x))`` or, with ``norm_first``, pre-norm
    ``x = x + sa(norm1(x)); x = x + ff(norm2(x))``."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Any = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        _build_layer(self, 1, d_model, nhead, dim_feedforward, dropout, activation,
                     layer_norm_eps, batch_first, norm_first, bias, device, dtype)

    def _sa_block(self, x: Tensor, attn_mask: Any, key_padding_mask: Any,
                  is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src: Tensor, src_mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: bool = False) -> Tensor:
        """One layer over ``src`` ``(S, N, E)`` (``(N, S, E)`` if ``batch_first``); same shape."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer`` (state dict keys
    ``layers.<i>.…`` as PyTorch), then the optional ``norm``."""

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Any = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = int(num_layers)
        self.norm = norm

    def forward(self, src: Tensor, mask: Any = None, src_key_padding_mask: Any = None,
                is_causal: Any = None) -> Tensor:
        """``is_causal=None`` is False (PyTorch would inspect ``mask``; the mask is applied
        either way, so the result is the same)."""
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x)


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory`` and a feed-forward block
    (``torch.nn.TransformerDecoderLayer``): post-norm ``x = norm1(x + sa(x));
    x = norm2(x + mha(x, memory)); x = norm3(x + ff(x))`` or, with ``norm_first``, pre-norm
    ``x = x + sa(norm1(x)); x = x + mha(norm2(x), memory); x = x + ff(norm3(x))``.

    ``activation`` is ``"relu"``, ``"gelu"`` or a callable (a module is registered as a
    submodule, as PyTorch does by plain attribute assignment)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Any = "relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        _build_layer(self, 2, d_model, nhead, dim_feedforward, dropout, activation,
                     layer_norm_eps, batch_first, norm_first, bias, device, dtype)

    _sa_block = TransformerEncoderLayer._sa_block  # the same self-attention block

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Any, key_padding_mask: Any,
                   is_causal: bool) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False,
                                is_causal=is_causal)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None,
                memory_mask: Any = None, tgt_key_padding_mask: Any = None,
                memory_key_padding_mask: Any = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """``tgt`` (T, N, E) ((N, T, E) with ``batch_first``; (T, E) unbatched) attending to
        ``memory`` (S, N, E); masks in ``MultiheadAttention``'s conventions."""
        x = tgt
        tc, mc = bool(tgt_is_causal), bool(memory_is_causal)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tc)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, mc)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tc))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                               memory_key_padding_mask, mc))
            x = self.norm3(x + self._ff_block(x))
        return x


class TransformerDecoder(Module):
    """A stack of ``num_layers`` deep copies of ``decoder_layer`` (state dict keys
    ``layers.<i>.…`` as PyTorch), then the optional ``norm``."""

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Any = None) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = int(num_layers)
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Any = None,
                memory_mask: Any = None, tgt_key_padding_mask: Any = None,
                memory_key_padding_mask: Any = None, tgt_is_causal: Any = None,
                memory_is_causal: bool = False) -> Tensor:
        """``tgt_is_causal=None`` is False (PyTorch would inspect ``tgt_mask``; the mask is
        applied either way, so the result is the same)."""
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return x if self.norm is None else self.norm(x)


class Transformer(Module):
    """Encoder-decoder transformer (``torch.nn.Transformer``): ``decoder(tgt, encoder(src))``,
    each stack ending in a ``LayerNorm`` unless ``custom_encoder`` / ``custom_decoder`` is
    given. Every parameter with more than one dimension is re-initialised with
    xavier_uniform_, as PyTorch does (custom stacks included)."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Any = "relu", custom_encoder: Any = None,
                 custom_decoder: Any = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layer_kw = {"dim_feedforward": dim_feedforward, "dropout": dropout,
                    "activation": activation, "layer_norm_eps": layer_norm_eps,
                    "batch_first": batch_first, "norm_first": norm_first, "bias": bias, **kw}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(d_model, nhead, **layer_kw), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(d_model, nhead, **layer_kw), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self._reset_parameters()
        self.d_model = int(d_model)
        self.nhead = int(nhead)
        self.batch_first = bool(batch_first)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Any = None, tgt_mask: Any = None,
                memory_mask: Any = None, src_key_padding_mask: Any = None,
                tgt_key_padding_mask: Any = None, memory_key_padding_mask: Any = None,
                src_is_causal: Any = None, tgt_is_causal: Any = None,
                memory_is_causal: bool = False) -> Tensor:
        """``src`` (S, N, E) and ``tgt`` (T, N, E) ((N, ·, E) with ``batch_first``;
        unbatched 2-D also accepted) → (T, N, E)."""
        batched = src.ndim == 3
        bdim = 0 if self.batch_first else 1
        if batched and src.shape[bdim] != tgt.shape[bdim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None,
                                        dtype: Any = None) -> Tensor:
        """The causal mask as an additive float mask: ``-inf`` above the diagonal, 0 on and
        below it (PyTorch's; float32 unless ``dtype`` is given)."""
        return full((sz, sz), -math.inf, dtype=dtype, device=device).triu(diagonal=1)
