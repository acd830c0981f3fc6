"""PyTorch's public functions that are compositions of jflow ops: the ATen-level forms
``torch.*`` exposes (``constant_pad_nd``, ``native_layer_norm`` ... returning the saved
statistics as PyTorch does), ``as_strided_scatter``, static-shape ``nonzero_static``,
``empty_permuted`` / ``Tensor.new_empty_strided``, the randomized low-rank factorizations
(``svd_lowrank`` / ``pca_lowrank``, Halko et al. 2009 as ``torch._lowrank``),
``nn.functional.linear_cross_entropy``, and the ``torch.*`` forms of functions jflow keeps
elsewhere (``diagonal``, ``pixel_shuffle``, ``orgqr``, the deprecated ``range`` (here
``torch_range``, exported as ``flow.range``) / ``frobenius_norm`` / ``nuclear_norm``, the
ATen dropout forms, single RNN steps
``lstm_cell`` ..., the generic ``convolution`` and fairseq's ``conv_tbc``, the in-place
``conj_physical_`` / ``as_strided_`` / ``embedding_renorm_``, ``native_norm``, the ATen grid
samplers with PyTorch's integer enums, ``is_distributed``) and ``segment_reduce``. Gradients
come from the ops they are made of.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from . import dtypes as _dt
from ._dims import wrap_dim
from .autograd import is_grad_enabled, no_grad
from .creation import arange, as_tensor, empty_strided, full, randn, zeros
from .functional import F
from .functional.functors.nn import _check_indices as _check_embedding_indices
from .functional.functors.nn import _renorm_rows
from .linalg import householder_product, matrix_norm, qr, svd, vector_norm
from .memory_format import check_layout
from .nn import functional as nn_functional
from .nn.modules.rnn import _gru_step, _lstm_step, _rnn_step
from .tensor import Tensor

__all__ = ["constant_pad_nd", "as_strided_scatter", "empty_permuted", "nonzero_static",
           "native_layer_norm", "native_batch_norm", "native_group_norm", "svd_lowrank",
           "pca_lowrank", "diagonal", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
           "native_channel_shuffle", "torch_range", "orgqr", "frobenius_norm", "nuclear_norm",
           "native_dropout", "feature_dropout", "dropout_", "alpha_dropout_",
           "feature_alpha_dropout_", "feature_dropout_", "lstm_cell", "gru_cell", "rnn_tanh_cell",
           "rnn_relu_cell", "convolution", "conv_tbc", "resize_as_", "conj_physical_",
           "as_strided_", "embedding_renorm_", "native_norm", "grid_sampler", "grid_sampler_2d",
           "grid_sampler_3d", "affine_grid_generator", "is_distributed", "segment_reduce"]


def _tensor_arg(fname: str, name: str, x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fname}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:  # noqa: A002
    """``torch.constant_pad_nd``: ``F.pad(input, pad, 'constant', value)`` (negative pads
    crop), pairs from the last dim backwards."""
    _tensor_arg("constant_pad_nd", "input", input)
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise RuntimeError(f"constant_pad_nd(): pad must have an even length of at most "
                           f"2 * input.dim() ({2 * input.ndim}), got {list(pad)}")
    return nn_functional.pad(input, tuple(int(p) for p in pad), mode="constant", value=value)


def as_strided_scatter(input: Tensor, src: Tensor, size: Sequence[int],  # noqa: A002
                       stride: Sequence[int], storage_offset: int | None = None) -> Tensor:
    """``torch.as_strided_scatter``: a copy of ``input`` (read as a dense row-major storage)
    with the elements ``input.as_strided(size, stride, storage_offset)`` addresses replaced by
    ``src``; gradients flow to both."""
    _tensor_arg("as_strided_scatter", "input", input)
    _tensor_arg("as_strided_scatter", "src", src)
    if tuple(src.shape) != tuple(int(s) for s in size):
        raise RuntimeError(f"as_strided_scatter(): src must have the view's size "
                           f"{list(size)}, got {list(src.shape)}")
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided_scatter(): mismatch in length of strides and shape "
                           f"({len(stride)} strides for {len(size)} sizes)")
    offset = 0 if storage_offset is None else int(storage_offset)
    flat = np.full(size, offset, np.int64)
    for d, (n, st) in enumerate(zip(size, stride)):
        flat = flat + (np.arange(n, dtype=np.int64) * st).reshape((n,) + (1,) * (len(size) - d - 1))
    numel = input.numel()
    if flat.size and (flat.min() < 0 or flat.max() >= numel):
        raise RuntimeError(f"as_strided_scatter(): the view (size {list(size)}, stride "
                           f"{list(stride)}, storage offset {offset}) reaches outside the "
                           f"input's {numel} elements")
    index = as_tensor(flat.reshape(-1))
    out = F.scatter(input.reshape(-1), 0, index, src.reshape(-1).to(input.dtype))
    return out.reshape(tuple(input.shape))


def empty_permuted(size: Sequence[int], physical_layout: Sequence[int], *, dtype: Any = None,
                   layout: Any = None, device: Any = None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:
    """``torch.empty_permuted``: a tensor of ``size`` whose strides put the dims in the order
    ``physical_layout`` (outermost first), as PyTorch's; zeros (JAX has no uninitialised
    memory)."""
    check_layout("empty_permuted", layout)
    size = tuple(int(s) for s in size)
    perm = tuple(int(p) for p in physical_layout)
    if sorted(perm) != list(range(len(size))):
        raise RuntimeError(f"empty_permuted(): physical_layout must be a permutation of the "
                           f"{len(size)} dims, got {list(physical_layout)}")
    stride = [0] * len(size)
    step = 1
    for d in reversed(perm):
        stride[d] = step
        step *= max(size[d], 1)
    return empty_strided(size, tuple(stride), dtype=dtype, device=device,
                         requires_grad=requires_grad)


def _new_empty_strided(self: Tensor, size: Sequence[int], stride: Sequence[int], *,
                       dtype: Any = None, device: Any = None, requires_grad: bool = False,
                       layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``Tensor.new_empty_strided``: ``empty_strided`` in this tensor's dtype and device
    (unless given)."""
    check_layout("Tensor.new_empty_strided", layout)
    return empty_strided(size, stride, dtype=self.dtype if dtype is None else dtype,
                         device=self.device if device is None else device,
                         requires_grad=requires_grad)


Tensor.new_empty_strided = _new_empty_strided  # type: ignore[attr-defined]


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:  # noqa: A002
    """``torch.nonzero_static``: the first ``size`` rows of ``nonzero(input)`` (shape
    ``(size, input.dim())``, int64), padded with ``fill_value``: a static shape, so it also
    traces under ``flow.jit`` (a stable sort of the flat indices, nonzeros first)."""
    _tensor_arg("nonzero_static", "input", input)
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise RuntimeError(f"nonzero_static(): 'size' must be a non-negative int, got {size!r}")
    shape = tuple(input.shape)
    n = math.prod(shape)
    flat = arange(n, dtype=_dt.int64)
    mask = input.reshape(-1) != 0
    key = F.where(mask, flat, flat + n)
    order = F.sort(key).values[:min(size, n)]
    if size > n:
        order = F.cat([order, full((size - n,), 2 * n, dtype=_dt.int64)])
    valid = order < n
    cols, rest = [], order
    for d in reversed(shape):
        cols.append(rest % d)
        rest = rest // d
    coords = F.stack(cols[::-1], dim=1) if cols else zeros((size, 0), dtype=_dt.int64)
    return F.where(valid.unsqueeze(1), coords, full((), int(fill_value), dtype=_dt.int64))


# -- the normalizations with their saved statistics -------------------------------------------

def native_layer_norm(input: Tensor, normalized_shape: Sequence[int],  # noqa: A002
                      weight: Tensor | None, bias: Tensor | None, eps: float
                      ) -> tuple[Tensor, Tensor, Tensor]:
    """``torch.native_layer_norm``: ``(output, mean, rstd)``; mean and rstd keep the
    normalized dims as size 1 (PyTorch's shapes)."""
    _tensor_arg("native_layer_norm", "input", input)
    k = len(tuple(normalized_shape))
    if tuple(input.shape[input.ndim - k:]) != tuple(normalized_shape):
        raise RuntimeError(f"native_layer_norm(): input's last dims {list(input.shape)} do "
                           f"not match normalized_shape {list(normalized_shape)}")
    dims = tuple(range(input.ndim - k, input.ndim))
    mean = input.mean(dim=dims, keepdim=True) if dims else input
    var = input.var(dim=dims, unbiased=False, keepdim=True) if dims else input * 0
    rstd = F.rsqrt(var + eps)
    out = (input - mean) * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out, mean.detach(), rstd.detach()  # PyTorch: the statistics are not differentiable


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                      running_mean: Tensor | None, running_var: Tensor | None, training: bool,
                      momentum: float, eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """``torch.native_batch_norm``: ``(output, save_mean, save_invstd)`` over dim 1; in
    training the batch statistics (running stats updated in place with the unbiased
    variance), else the running stats and empty saved statistics, as PyTorch."""
    _tensor_arg("native_batch_norm", "input", input)
    if input.ndim < 2:
        raise RuntimeError(f"native_batch_norm(): input must have at least 2 dims, got "
                           f"{input.ndim}")
    c = input.shape[1]
    dims = (0,) + tuple(range(2, input.ndim))
    view = (1, c) + (1,) * (input.ndim - 2)
    if training:
        mean = input.mean(dim=dims)
        var = input.var(dim=dims, unbiased=False)
        invstd = F.rsqrt(var + eps)
        if running_mean is not None or running_var is not None:
            count = input.numel() // max(c, 1)
            with _no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
                if running_var is not None:
                    unbiased = var.detach() * (count / max(count - 1, 1))
                    running_var.mul_(1 - momentum).add_(unbiased * momentum)
        out = (input - mean.reshape(view)) * invstd.reshape(view)
        save_mean, save_invstd = mean, invstd
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("native_batch_norm(): running_mean and running_var are needed "
                               "when training=False")
        out = (input - running_mean.reshape(view)) * F.rsqrt(running_var + eps).reshape(view)
        save_mean = save_invstd = zeros((0,), dtype=input.dtype)
    if weight is not None:
        out = out * weight.reshape(view)
    if bias is not None:
        out = out + bias.reshape(view)
    return out, save_mean.detach(), save_invstd.detach()  # not differentiable, as PyTorch


def _no_grad() -> Any:
    return no_grad()


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None,  # noqa: A002
                      N: int, C: int, HxW: int, group: int, eps: float  # noqa: N803
                      ) -> tuple[Tensor, Tensor, Tensor]:
    """``torch.native_group_norm``: ``(output, mean, rstd)`` with mean and rstd of shape
    ``(N, group)``."""
    _tensor_arg("native_group_norm", "input", input)
    if C % group or input.numel() != N * C * HxW:
        raise RuntimeError(f"native_group_norm(): input of shape {list(input.shape)} does not "
                           f"hold N={N}, C={C}, HxW={HxW} with C divisible by group={group}")
    x = input.reshape(N, group, -1)
    mean = x.mean(dim=2)
    rstd = F.rsqrt(x.var(dim=2, unbiased=False) + eps)
    out = ((x - mean.unsqueeze(2)) * rstd.unsqueeze(2)).reshape(N, C, -1)
    if weight is not None:
        out = out * weight.reshape(1, C, 1)
    if bias is not None:
        out = out + bias.reshape(1, C, 1)
    return out.reshape(input.shape), mean, rstd  # differentiable here, as PyTorch


# -- randomized low-rank factorizations (torch._lowrank) --------------------------------------

def _mh(x: Tensor) -> Tensor:
    x = x.transpose(-2, -1)
    return x.conj() if x.is_complex() else x


def _approximate_basis(a: Tensor, q: int, niter: int, m: Tensor | None) -> Tensor:
    """An orthonormal ``(..., m, q)`` basis of ``a``'s range (randomized subspace iteration)."""
    r = randn(a.shape[-1], q, dtype=a.dtype)
    x = a @ r if m is None else a @ r - m @ r
    basis = qr(x).Q
    for _ in range(niter):
        x = _mh(a) @ basis if m is None else _mh(a) @ basis - _mh(m) @ basis
        basis = qr(x).Q
        x = a @ basis if m is None else a @ basis - m @ basis
        basis = qr(x).Q
    return basis


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int = 2,  # noqa: N803  (PyTorch's names)
                M: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:  # noqa: N803
    """``torch.svd_lowrank``: ``(U, S, V)`` with ``A ~ U diag(S) V^H`` of rank ``q``
    (randomized: Halko et al. 2009, Algorithm 5 with ``niter`` subspace iterations); ``M``
    is subtracted from ``A`` first."""
    _tensor_arg("svd_lowrank", "A", A)
    q = 6 if q is None else int(q)
    rows, cols = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(tuple(A.shape))  # noqa: N806
    if rows < cols:
        A, M = _mh(A), None if M is None else _mh(M)  # noqa: N806
    basis = _approximate_basis(A, q, niter, M)
    b = _mh(basis) @ A if M is None else _mh(basis) @ A - _mh(basis) @ M
    u, s, vh = svd(b, full_matrices=False)
    v = _mh(vh)
    u = basis @ u
    if rows < cols:
        u, v = v, u
    return u, s, v


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True,  # noqa: N803
                niter: int = 2) -> tuple[Tensor, Tensor, Tensor]:
    """``torch.pca_lowrank``: ``svd_lowrank`` of ``A`` with its column means removed
    (``center``); ``q`` defaults to ``min(6, m, n)``."""
    _tensor_arg("pca_lowrank", "A", A)
    rows, cols = A.shape[-2:]
    if q is None:
        q = min(6, rows, cols)
    elif not 0 <= q <= min(rows, cols):
        raise ValueError(f"pca_lowrank(): q(={q}) must be non-negative integer and not greater "
                         f"than min(m, n)={min(rows, cols)}")
    if niter < 0:
        raise ValueError(f"pca_lowrank(): niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter)
    return svd_lowrank(A - A.mean(dim=-2, keepdim=True), q, niter=niter)


# -- linear + cross entropy ------------------------------------------------------------------



# -- torch.* forms of functions jflow has elsewhere (nn.functional, linalg, Tensor methods) ----

def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """``torch.diagonal``: ``input.diagonal(offset, dim1, dim2)`` (a view)."""
    return _tensor_arg("diagonal", "input", input).diagonal(offset, dim1, dim2)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    """``torch.pixel_shuffle``: ``nn.functional.pixel_shuffle``."""
    return nn_functional.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """``torch.pixel_unshuffle``: ``nn.functional.pixel_unshuffle``."""
    return nn_functional.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    """``torch.channel_shuffle`` (and ``native_channel_shuffle``): ``nn.functional.
    channel_shuffle``."""
    return nn_functional.channel_shuffle(input, groups)


native_channel_shuffle = channel_shuffle


def torch_range(start: Any, end: Any, step: Any = 1, *, dtype: Any = None,
                device: Any = None, requires_grad: bool = False) -> Tensor:
    """PyTorch's deprecated ``torch.range``: ``start, start + step, ...`` up to ``end``
    *included*, ``floor((end - start) / step) + 1`` values, of the default float dtype
    unless ``dtype`` says otherwise (warns, as PyTorch)."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if step == 0:
        raise RuntimeError("range(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("range(): upper bound and larger bound inconsistent with step sign")
    n = int(math.floor((end - start) / step)) + 1
    d = _dt.get_default_dtype() if dtype is None else _dt.as_dtype(dtype)
    out = arange(n, dtype=_dt.float64 if d.is_floating_point else d, device=device)
    out = (out * step + start).to(d)
    return out.requires_grad_(True) if requires_grad else out


def orgqr(input: Tensor, tau: Tensor) -> Tensor:  # noqa: A002
    """``torch.orgqr``: ``linalg.householder_product``."""
    return householder_product(input, tau)


def frobenius_norm(input: Tensor, dim: Sequence[int], keepdim: bool = False) -> Tensor:  # noqa: A002
    """PyTorch's deprecated ``torch.frobenius_norm``: ``linalg.vector_norm(input, 2, dim,
    keepdim)``."""
    return vector_norm(_tensor_arg("frobenius_norm", "input", input), 2.0, dim, keepdim)


def nuclear_norm(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A002
    """PyTorch's deprecated ``torch.nuclear_norm``: ``linalg.matrix_norm(input, 'nuc', dim,
    keepdim)``, ``dim`` the last two dims when left out (then ``keepdim`` may come second)."""
    if isinstance(dim, bool):       # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return matrix_norm(_tensor_arg("nuclear_norm", "input", input), "nuc",
                       (-2, -1) if dim is None else dim, keepdim)


# -- the ATen dropout forms ----------------------------------------------------------------------

def native_dropout(input: Tensor, p: float, train: bool | None) -> tuple[Tensor, Tensor]:  # noqa: A002
    """``torch.native_dropout``: ``(output, mask)``, the bool mask of kept elements; when not
    ``train``, ``(input, all True)``."""
    _tensor_arg("native_dropout", "input", input)
    if not train or p == 0.0:
        return input, full(tuple(input.shape), True, device=input.device)
    keep = nn_functional.dropout(full(tuple(input.shape), 1.0, dtype=input.dtype,
                                      device=input.device), p, True)
    return input * keep, keep != 0


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.feature_dropout``: whole channels of (N, C, *) zeroed with probability ``p``
    (one draw per sample and channel), the rest scaled by 1 / (1 - p), when ``train``."""
    _tensor_arg("feature_dropout", "input", input)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"feature_dropout(): dropout probability has to be between 0 and 1, "
                         f"but got {p}")
    if not train or p == 0.0:
        return input
    if input.ndim < 2:
        raise RuntimeError(f"feature_dropout(): expected an input of at least 2 dims (N, C, *), "
                           f"got shape {list(input.shape)}")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return input * nn_functional.dropout(full(shape, 1.0, dtype=input.dtype,
                                              device=input.device), p, True)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.dropout_``: :func:`nn.functional.dropout` in place."""
    return nn_functional.dropout(input, p, train, inplace=True)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.alpha_dropout_``: :func:`nn.functional.alpha_dropout` in place."""
    return nn_functional.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.feature_alpha_dropout_``: :func:`nn.functional.feature_alpha_dropout` in
    place."""
    return nn_functional.feature_alpha_dropout(input, p, train, inplace=True)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:  # noqa: A002
    """``torch.feature_dropout_``: :func:`feature_dropout` in place."""
    y = feature_dropout(input, p, train)
    return input if y is input else input.copy_(y)


# -- single RNN steps (torch.lstm_cell ...), PyTorch's gate orders ------------------------------

def lstm_cell(input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor,  # noqa: A002
              b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``torch.lstm_cell``: one LSTM step, ``hx = (h, c)``; returns ``(h', c')``."""
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    return _lstm_step(nn_functional.linear(input, w_ih, b_ih), hx[0], hx[1], w_hh, b_hh)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
             b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """``torch.gru_cell``: one GRU step (gates r, z, n)."""
    return _gru_step(nn_functional.linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """``torch.rnn_tanh_cell``: ``tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    return _rnn_step(nn_functional.linear(input, w_ih, b_ih), hx, w_hh, b_hh, False)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,  # noqa: A002
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """``torch.rnn_relu_cell``: ``relu(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    return _rnn_step(nn_functional.linear(input, w_ih, b_ih), hx, w_hh, b_hh, True)


# -- the generic convolution entry points ---------------------------------------------------------

def convolution(input: Tensor, weight: Tensor, bias: Tensor | None,  # noqa: A002
                stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
                transposed: bool, output_padding: Sequence[int], groups: int) -> Tensor:
    """``torch.convolution``: the 1-, 2- or 3-d convolution (or transposed convolution) the
    weight's rank names."""
    nd = _tensor_arg("convolution", "weight", weight).ndim - 2
    if nd not in (1, 2, 3):
        raise RuntimeError(f"convolution(): expected a 3-, 4- or 5-d weight, got shape "
                           f"{list(weight.shape)}")
    if transposed:
        fn = (nn_functional.conv_transpose1d, nn_functional.conv_transpose2d,
              nn_functional.conv_transpose3d)[nd - 1]
        return fn(input, weight, bias, tuple(stride), tuple(padding), tuple(output_padding),
                  groups, tuple(dilation))
    fn = (nn_functional.conv1d, nn_functional.conv2d, nn_functional.conv3d)[nd - 1]
    return fn(input, weight, bias, tuple(stride), tuple(padding), tuple(dilation), groups)


conv_tbc = nn_functional.conv_tbc  # (torch.conv_tbc is nn.functional's, fairseq's layout)


def resize_as_(input: Tensor, the_template: Tensor, *,  # noqa: A002
               memory_format: Any = None) -> Tensor:
    """``torch.resize_as_``: ``input.resize_as_(the_template)`` (in place)."""
    return _tensor_arg("resize_as_", "input", input).resize_as_(
        the_template, memory_format=memory_format)


# -- in-place forms, norms, samplers and reductions torch.* names at top level ---------------

def conj_physical_(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.conj_physical_``: ``input.conj_physical_()`` (conjugates a complex tensor's
    values in place; a real one is returned unchanged)."""
    return _tensor_arg("conj_physical_", "input", input).conj_physical_()


def as_strided_(input: Tensor, size: Sequence[int], stride: Sequence[int],  # noqa: A002
                storage_offset: int | None = None) -> Tensor:
    """``torch.as_strided_``: ``input.as_strided_(size, stride, storage_offset)`` (in place;
    see ``Tensor.as_strided_`` for what jflow's storage means there)."""
    return _tensor_arg("as_strided_", "input", input).as_strided_(size, stride, storage_offset)


def embedding_renorm_(input: Tensor, indices: Tensor, max_norm: float,  # noqa: A002
                      norm_type: float) -> Tensor:
    """``torch.embedding_renorm_``: the rows of the 2-d ``input`` named by ``indices`` whose
    ``norm_type``-norm exceeds ``max_norm`` are scaled in place to ``max_norm`` (by
    ``max_norm / (norm + 1e-7)``, PyTorch's); returns ``input``. Not differentiable (PyTorch's
    derivative is not implemented): refused on a tensor that requires grad in grad mode
    (PyTorch's error for a leaf; for a non-leaf PyTorch raises at the backward instead)."""
    _tensor_arg("embedding_renorm_", "input", input)
    _tensor_arg("embedding_renorm_", "indices", indices)
    if input.ndim != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {input.ndim}-dimensional "
                           f"tensor for argument #1 'self' (while checking arguments for "
                           f"embedding_renorm_)")
    if indices.dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(f"Expected tensor for argument #2 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {indices.dtype} instead "
                           f"(while checking arguments for embedding_renorm_)")
    if input.requires_grad and is_grad_enabled():
        if input.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        raise RuntimeError("embedding_renorm_(): the derivative for 'embedding_renorm_' is not "
                           "implemented; call it under no_grad()")
    _check_embedding_indices("embedding_renorm_", indices, input, None)
    _renorm_rows("embedding_renorm_", input, indices.reshape(-1), max_norm, norm_type)
    return input


def native_norm(input: Tensor, p: Any = 2, dim: Sequence[int] | None = None,  # noqa: A002
                keepdim: bool = False, dtype: Any = None) -> Tensor:
    """``torch.native_norm``: the ``p``-norm of ``input``'s elements (over ``dim`` when given,
    in ``dtype`` when given), ``linalg.vector_norm``. PyTorch has kernels for sparse tensors
    only (a dense call raises there): jflow's tensors are dense, and this is the value
    PyTorch's sparse kernel gives for the same elements."""
    _tensor_arg("native_norm", "input", input)
    if not input.is_floating_point() and not input.is_complex():
        raise RuntimeError(f"native_norm(): expected a floating point or complex tensor, got "
                           f"{input.dtype}")
    return vector_norm(input, 2.0 if p is None else p, None if dim is None else tuple(dim),
                       keepdim, dtype=dtype)


#: PyTorch's ``GridSamplerInterpolation`` / ``GridSamplerPadding`` enums
_GRID_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_GRID_PADDINGS = {0: "zeros", 1: "border", 2: "reflection"}


def _enum(fname: str, arg: str, value: Any, names: dict[int, str]) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or int(value) not in names:
        options = ", ".join(f"{k} ({v})" for k, v in names.items())
        raise ValueError(f"{fname}(): {arg} must be one of {options}, got {value!r}")
    return names[int(value)]


def _align(fname: str, align_corners: Any) -> bool:
    if not isinstance(align_corners, (bool, np.bool_)):
        raise TypeError(f"{fname}(): argument 'align_corners' (position 5) must be bool, not "
                        f"{type(align_corners).__name__}")
    return bool(align_corners)


def _grid_sampler(fname: str, nd: int | None, input: Tensor, grid: Tensor,  # noqa: A002
                  interpolation_mode: int, padding_mode: int, align_corners: bool) -> Tensor:
    _tensor_arg(fname, "input", input)
    _tensor_arg(fname, "grid", grid)
    mode = _enum(fname, "interpolation_mode", interpolation_mode, _GRID_MODES)
    padding = _enum(fname, "padding_mode", padding_mode, _GRID_PADDINGS)
    align = _align(fname, align_corners)
    if nd is not None and (input.ndim != nd or grid.ndim != nd):
        raise RuntimeError(f"grid_sampler(): expected {nd}D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    if mode == "bicubic" and input.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    return nn_functional.grid_sample(input, grid, mode, padding, align)


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int,  # noqa: A002
                 padding_mode: int, align_corners: bool) -> Tensor:
    """``torch.grid_sampler``: ``nn.functional.grid_sample`` with PyTorch's enums
    (``interpolation_mode`` 0 bilinear, 1 nearest, 2 bicubic; ``padding_mode`` 0 zeros,
    1 border, 2 reflection) on a 4-d or 5-d input. Other enum values raise (PyTorch's result
    for them is undefined)."""
    return _grid_sampler("grid_sampler", None, input, grid, interpolation_mode, padding_mode,
                         align_corners)


def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int,  # noqa: A002
                    padding_mode: int, align_corners: bool) -> Tensor:
    """``torch.grid_sampler_2d``: :func:`grid_sampler` of a 4-d input (N, C, H, W)."""
    return _grid_sampler("grid_sampler_2d", 4, input, grid, interpolation_mode, padding_mode,
                         align_corners)


def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int,  # noqa: A002
                    padding_mode: int, align_corners: bool) -> Tensor:
    """``torch.grid_sampler_3d``: :func:`grid_sampler` of a 5-d input (N, C, D, H, W);
    bicubic is refused, as PyTorch."""
    return _grid_sampler("grid_sampler_3d", 5, input, grid, interpolation_mode, padding_mode,
                         align_corners)


def affine_grid_generator(theta: Tensor, size: Sequence[int], align_corners: bool) -> Tensor:
    """``torch.affine_grid_generator``: ``nn.functional.affine_grid(theta, size,
    align_corners)`` (``align_corners`` required, a bool, as PyTorch)."""
    _tensor_arg("affine_grid_generator", "theta", theta)
    if not isinstance(align_corners, (bool, np.bool_)):
        raise TypeError(f"affine_grid_generator(): argument 'align_corners' (position 3) must "
                        f"be bool, not {type(align_corners).__name__}")
    return nn_functional.affine_grid(theta, list(size), bool(align_corners))


def is_distributed(input: Tensor) -> bool:  # noqa: A002
    """``torch.is_distributed``: False for every jflow tensor, as PyTorch answers for dense
    ones (a global tensor says so with ``is_global``)."""
    return _tensor_arg("is_distributed", "input", input).is_distributed()


# -- torch.segment_reduce ------------------------------------------------------------------------

_SEGMENT_REDUCTIONS = ("sum", "mean", "max", "min", "prod")
#: what an empty segment holds without ``initial`` (PyTorch's)
_SEGMENT_EMPTY = {"sum": 0.0, "mean": math.nan, "max": -math.inf, "min": math.inf, "prod": 1.0}
_SEGMENT_SCATTER = {"max": "amax", "min": "amin", "prod": "prod"}


def _segment_lengths(data: Tensor, lengths: Tensor | None, offsets: Tensor | None,
                     indices: Tensor | None) -> Tensor:
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    seg = lengths if lengths is not None else offsets
    name = "lengths" if lengths is not None else "offsets"
    _tensor_arg("segment_reduce", name, seg)
    if seg.dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(f"segment_reduce(): {name} must be an int64 or int32 tensor, got "
                           f"{seg.dtype}")
    if seg.ndim == 0:
        raise RuntimeError(f"segment_reduce(): {name} must have at least one dimension")
    if lengths is not None:
        return lengths.long()
    return (offsets[..., 1:] - offsets[..., :-1]).long()


def segment_reduce(data: Tensor, reduce: str, *, lengths: Tensor | None = None,
                   indices: Tensor | None = None, offsets: Tensor | None = None,
                   axis: int = 0, unsafe: bool = False, initial: Any = None) -> Tensor:
    """``torch.segment_reduce``: ``data`` reduced (``sum``, ``mean``, ``max``, ``min`` or
    ``prod``) over consecutive segments along ``axis``; the segments' ``lengths`` (or their
    ``offsets``, one more than segments) have the shape ``data.shape[:axis] + (S,)`` and the
    result ``data``'s shape with ``S`` at ``axis``. An empty segment holds ``initial`` if
    given, else 0 / NaN / -inf / inf / 1 (sum / mean / max / min / prod); ``initial`` also
    enters every segment's reduction (``mean``: ``(initial + sum) / length``), as PyTorch's.
    Lengths are checked (non-negative, summing to ``data.shape[axis]``) unless ``unsafe``;
    floating data only, as PyTorch's kernels. Differentiable: sum and mean as PyTorch's,
    max / min share the gradient among tied elements, prod's is exact with zeros. A traced
    ``lengths`` works (the segment ids are computed on the device)."""
    _tensor_arg("segment_reduce", "data", data)
    if reduce not in _SEGMENT_REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if not data.is_floating_point():
        raise NotImplementedError(f"segment_reduce(): not implemented for {data.dtype} data "
                                  f"(PyTorch's kernels take floating point data only)")
    lens = _segment_lengths(data, lengths, offsets, indices)
    ax = wrap_dim("segment_reduce", axis, data.ndim)
    if lens.ndim - 1 != ax:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of "
                           f"lengths but got {ax}.")
    if tuple(lens.shape[:-1]) != tuple(data.shape[:ax]):
        raise RuntimeError(f"segment_reduce(): lengths of shape {list(lens.shape)} must have "
                           f"data's dims before axis {ax} ({list(data.shape[:ax])}) first")
    n, s = int(data.shape[ax]), int(lens.shape[-1])
    if not unsafe and not isinstance(lens._meta, jax.core.Tracer):
        h = np.asarray(lens.detach().numpy())
        if (h < 0).any():
            raise RuntimeError("lengths contains negative value!")
        if (h.sum(axis=-1) != n).any():
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to "
                               "sum to data.size(lengths.dim()-1) when !unsafe.")
    # the segment of each element along axis: how many segment ends lie at or before it
    # (elements past the last end, with unsafe lengths summing short, land in a dropped row)
    ends = F.cumsum(lens, -1)
    pos = arange(n, dtype=_dt.int64).reshape((1,) * ax + (n,)).expand(*data.shape[:ax], n)
    ids = F.searchsorted(ends.contiguous(), pos.contiguous(), right=True)
    ids = ids.reshape(tuple(ids.shape) + (1,) * (data.ndim - ax - 1)).expand(*data.shape)
    out_shape = tuple(data.shape[:ax]) + (s + 1,) + tuple(data.shape[ax + 1:])
    counts = lens.to(data.dtype).reshape(tuple(lens.shape) + (1,) * (data.ndim - ax - 1))
    if reduce in ("sum", "mean"):
        total = F.scatter_add(zeros(out_shape, dtype=data.dtype), ax, ids, data)
        total = total.narrow(ax, 0, s)
        if initial is not None:
            total = total + initial
        if reduce == "sum":
            return total
        mean = total / counts
        if initial is not None:  # (an empty segment holds initial, not initial / 0)
            mean = F.where(counts == 0, full((), float(initial), dtype=data.dtype), mean)
        return mean
    # the data's own reduction (ties share the gradient), then initial joined as a number: a
    # datum equal to it keeps its whole gradient, as PyTorch's
    start = _SEGMENT_EMPTY[reduce] if initial is None or reduce == "prod" else float(initial)
    out = full(out_shape, start, dtype=data.dtype).scatter_reduce(
        ax, ids, data, _SEGMENT_SCATTER[reduce], include_self=False).narrow(ax, 0, s)
    if initial is None:
        return out
    init = full((), float(initial), dtype=data.dtype)
    if reduce == "prod":
        return out * init
    keep = out >= init if reduce == "max" else out <= init
    return F.where(keep, out, init)
