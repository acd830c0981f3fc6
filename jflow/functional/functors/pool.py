"""Functors of the pooling ops (``jflow/ops/pool.py``): avg_pool2d, adaptive_avg_pool2d,
max_pool2d (with indices) — PyTorch's argument rules (unbatched inputs, ``stride=None``),
then the op.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from ...ops import get
from ...tensor import Tensor, _wrap
from ..registry import functor
from ._spatial import pair, unbatch
from .matmul import matmul

_reshape = get("reshape").apply
_avg_pool2d = get("avg_pool2d").apply
_max_pool2d = get("max_pool2d").apply


def _pool_input(fname: str, input: Tensor) -> tuple[Tensor, bool]:
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    nd = input._value.ndim
    if nd not in (3, 4):
        raise RuntimeError(f"{fname}(): expected a 3-d (unbatched) or 4-d (batched) input, "
                           f"got shape {list(input._value.shape)}")
    if nd == 3:
        return _reshape(input, shape=(1,) + tuple(input._value.shape)), True
    return input, False


@functor("AvgPool2d")
def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
               count_include_pad: bool, divisor_override: Any) -> Tensor:
    """2-d average pooling (torch.nn.functional.avg_pool2d); ``stride`` defaults to the
    kernel size. ``ceil_mode`` and ``divisor_override`` as PyTorch: with ceil_mode the last
    window must start inside the input or its left padding, and cells past the right padding
    do not count."""
    if divisor_override is not None and int(divisor_override) == 0:
        raise ValueError("avg_pool2d(): divisor_override must be non-zero, got 0")
    x, unbatched = _pool_input("avg_pool2d", input)
    k = pair("avg_pool2d", "kernel_size", kernel_size, 2)
    st = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        pair("avg_pool2d", "stride", stride, 2)
    pad = pair("avg_pool2d", "padding", padding, 2)
    y = _avg_pool2d(x, kernel_size=k, stride=st, padding=pad,
                    count_include_pad=bool(count_include_pad), ceil_mode=bool(ceil_mode),
                    divisor_override=int(divisor_override or 0))
    return unbatch(y, unbatched)


def _adaptive_matrix(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) averaging matrix: window i is [floor(i n_in / n_out),
    ceil((i + 1) n_in / n_out)) as PyTorch's adaptive pooling."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        lo, hi = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


@functor("AdaptiveAvgPool2d")
def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """2-d adaptive average pooling (torch.nn.functional.adaptive_avg_pool2d).
    Evenly dividing sizes use the avg_pool2d op;
    others are two matmuls with constant averaging matrices."""
    x, unbatched = _pool_input("adaptive_avg_pool2d", input)
    h, w = x._value.shape[2:]
    os = (output_size,) * 2 if output_size is None or isinstance(output_size, int) \
        else tuple(output_size)
    if len(os) == 1:
        os = os * 2
    if len(os) != 2:
        raise ValueError(f"adaptive_avg_pool2d(): output_size must be an int or 2 ints, got "
                         f"{output_size}")
    oh, ow = (h if os[0] is None else int(os[0])), (w if os[1] is None else int(os[1]))
    if oh <= 0 or ow <= 0:
        raise ValueError(f"adaptive_avg_pool2d(): output_size must be positive, got "
                         f"{[oh, ow]}")
    if h % oh == 0 and w % ow == 0:
        k = (h // oh, w // ow)
        y = _avg_pool2d(x, kernel_size=k, stride=k, padding=(0, 0), count_include_pad=True)
    else:
        dt = x._value.dtype
        ah = _wrap(jnp.asarray(_adaptive_matrix(h, oh), dt))
        aw = _wrap(jnp.asarray(_adaptive_matrix(w, ow), dt))
        y = matmul(matmul(ah, x, transpose_a=False, transpose_b=False, alpha=1.0), aw,
                   transpose_a=False, transpose_b=True, alpha=1.0)
    return unbatch(y, unbatched)


def _max_pool(fname: str, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool) -> tuple[Tensor, Tensor]:
    x, unbatched = _pool_input(fname, input)
    k = pair(fname, "kernel_size", kernel_size, 2)
    st = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        pair(fname, "stride", stride, 2)
    y, idx = _max_pool2d(x, kernel_size=k, stride=st, padding=pair(fname, "padding", padding, 2),
                         dilation=pair(fname, "dilation", dilation, 2),
                         ceil_mode=bool(ceil_mode))
    return unbatch(y, unbatched), unbatch(idx, unbatched)


@functor("MaxPool2d")
def max_pool2d(input: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
               ceil_mode: bool) -> Tensor:
    """2-d max pooling (torch.nn.functional.max_pool2d); ``stride`` defaults to the kernel
    size; padding is -inf; ``ceil_mode`` as PyTorch. For the indices use
    ``max_pool2d_with_indices``."""
    return _max_pool("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode)[0]


@functor("MaxPool2dWithIndices")
def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any, padding: Any,
                            dilation: Any, ceil_mode: bool) -> tuple[Tensor, Tensor]:
    """max_pool2d and the flat indices (h * W + w) of the maxima (PyTorch's
    ``return_indices=True``); the first maximum on ties."""
    return _max_pool("max_pool2d_with_indices", input, kernel_size, stride, padding, dilation,
                     ceil_mode)
