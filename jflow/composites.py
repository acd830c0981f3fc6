"""PyTorch's public functions that are compositions of jflow ops: the ATen-level forms
``torch.*`` exposes (``constant_pad_nd``, ``native_layer_norm`` ... returning the saved
statistics as PyTorch does), ``as_strided_scatter``, static-shape ``nonzero_static``,
``empty_permuted`` / ``Tensor.new_empty_strided``, the randomized low-rank factorizations
(``svd_lowrank`` / ``pca_lowrank``, Halko et al. 2009 as ``torch._lowrank``) and
``nn.functional.linear_cross_entropy``. Gradients come from the ops they are made of.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes as _dt
from .autograd import no_grad
from .creation import arange, as_tensor, empty_strided, full, randn, zeros
from .functional import F
from .linalg import qr, svd
from .memory_format import check_layout
from .nn import functional as nn_functional
from .tensor import Tensor

__all__ = ["constant_pad_nd", "as_strided_scatter", "empty_permuted", "nonzero_static",
           "native_layer_norm", "native_batch_norm", "native_group_norm", "svd_lowrank",
           "pca_lowrank"]


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

