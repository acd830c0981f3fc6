"""Functors of the pooling ops (``jflow/ops/pool.py``) in 1, 2 and 3 spatial dims:
avg_pool, max_pool (with indices), adaptive_avg_pool, adaptive_max_pool and lp_pool —
PyTorch's argument rules (unbatched inputs, ``stride=None``), then the op.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ...ops import get
from ...tensor import Tensor, _wrap
from ..promotion import cast
from ..registry import api as _api
from ..registry import functor
from ._spatial import pair, unbatch
from .index import checked_min_max
from .matmul import matmul

_reshape = get("reshape").apply
_DIMS = {1: "(C, L) or (N, C, L)", 2: "(C, H, W) or (N, C, H, W)",
         3: "(C, D, H, W) or (N, C, D, H, W)"}


def _pool_input(fname: str, input: Tensor, nd: int = 2) -> tuple[Tensor, bool]:
    """``input`` with a batch dim (added for an unbatched input) and whether it was added."""
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    rank = input._meta.ndim
    if rank not in (nd + 1, nd + 2):
        raise RuntimeError(f"{fname}(): expected a {nd + 1}-d (unbatched) or {nd + 2}-d "
                           f"(batched) input {_DIMS[nd]}, got shape "
                           f"{list(input._meta.shape)}")
    if rank == nd + 1:
        return _reshape(input, shape=(1,) + tuple(input._meta.shape)), True
    return input, False


def _stride(fname: str, stride: Any, k: tuple[int, ...], nd: int) -> tuple[int, ...]:
    if stride is None or (not isinstance(stride, int) and len(stride) == 0):
        return k
    return pair(fname, "stride", stride, nd)


def _positive(fname: str, name: str, v: tuple[int, ...]) -> tuple[int, ...]:
    if any(a <= 0 for a in v):
        raise ValueError(f"{fname}(): {name} must be positive, got {list(v)}")
    return v


def _avg_pool(nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
              ceil_mode: bool, count_include_pad: bool, divisor_override: Any) -> Tensor:
    fname = f"avg_pool{nd}d"
    if divisor_override is not None and int(divisor_override) == 0:
        raise ValueError(f"{fname}(): divisor_override must be non-zero, got 0")
    x, unbatched = _pool_input(fname, input, nd)
    k = _positive(fname, "kernel_size", pair(fname, "kernel_size", kernel_size, nd))
    st = _positive(fname, "stride", _stride(fname, stride, k, nd))
    pad = pair(fname, "padding", padding, nd)
    y = get(fname).apply(x, kernel_size=k, stride=st, padding=pad,
                         count_include_pad=bool(count_include_pad), ceil_mode=bool(ceil_mode),
                         divisor_override=int(divisor_override or 0))
    return unbatch(y, unbatched)


@functor("AvgPool1d")
def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
               count_include_pad: bool) -> Tensor:
    """1-d average pooling (torch.nn.functional.avg_pool1d) over ``(N, C, L)`` or
    ``(C, L)``; ``stride`` defaults to the kernel size; ``ceil_mode`` as avg_pool2d."""
    return _avg_pool(1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


@functor("AvgPool2d")
def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
               count_include_pad: bool, divisor_override: Any) -> Tensor:
    """2-d average pooling (torch.nn.functional.avg_pool2d); ``stride`` defaults to the
    kernel size. ``ceil_mode`` and ``divisor_override`` as PyTorch: with ceil_mode the last
    window must start inside the input or its left padding, and cells past the right padding
    do not count."""
    return _avg_pool(2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


@functor("AvgPool3d")
def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
               count_include_pad: bool, divisor_override: Any) -> Tensor:
    """3-d average pooling (torch.nn.functional.avg_pool3d) over ``(N, C, D, H, W)`` or
    ``(C, D, H, W)``; arguments as avg_pool2d."""
    return _avg_pool(3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _adaptive_matrix(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) averaging matrix: window i is [floor(i n_in / n_out),
    ceil((i + 1) n_in / n_out)) as PyTorch's adaptive pooling."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        lo, hi = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


def _output_size(fname: str, output_size: Any, sizes: tuple[int, ...]) -> tuple[int, ...]:
    """``output_size`` (an int, or one entry per spatial dim where ``None`` keeps the input's
    size) as positive ints."""
    nd = len(sizes)
    os = (output_size,) * nd if output_size is None or isinstance(output_size, int) \
        else tuple(output_size)
    if len(os) == 1:
        os = os * nd
    if len(os) != nd:
        raise ValueError(f"{fname}(): output_size must be an int or {nd} ints, got "
                         f"{output_size}")
    out = tuple(s if v is None else int(v) for v, s in zip(os, sizes))
    if any(o <= 0 for o in out):
        raise ValueError(f"{fname}(): output_size must be positive, got {list(out)}")
    if any(s <= 0 for s in sizes):
        raise ValueError(f"{fname}(): expected non-empty spatial dims, got {list(sizes)}")
    return out


def _adaptive_avg_pool(nd: int, input: Tensor, output_size: Any) -> Tensor:
    """Evenly dividing sizes use the avg_pool op; others one matmul with a constant
    averaging matrix per spatial dim that changes size."""
    fname = f"adaptive_avg_pool{nd}d"
    x, unbatched = _pool_input(fname, input, nd)
    shape = tuple(x._meta.shape)
    out = _output_size(fname, output_size, shape[2:])
    if all(s % o == 0 for s, o in zip(shape[2:], out)):
        k = tuple(s // o for s, o in zip(shape[2:], out))
        y = get(f"avg_pool{nd}d").apply(x, kernel_size=k, stride=k, padding=(0,) * nd,
                                        count_include_pad=True)
        return unbatch(y, unbatched)
    y, dt = x, x._meta.dtype
    cur = list(shape)  # y's logical shape; y itself stays in the last matmul's 3-d view, so
    for i in range(nd):  # one reshape (not two) compiles between two matmuls
        n_in, n_out = cur[2 + i], out[i]
        if n_in == n_out:
            continue
        lead, rest = int(np.prod(cur[:2 + i])), int(np.prod(cur[3 + i:]))
        # a host constant: device_put compiles nothing (jnp.asarray's dtype conversion would
        # compile a convert per matrix shape)
        a = _wrap(jax.device_put(np.asarray(_adaptive_matrix(n_in, n_out), dt)))
        y = matmul(a, _reshape(y, shape=(lead, n_in, rest)), transpose_a=False,
                   transpose_b=False, alpha=1.0)
        cur[2 + i] = n_out
    return unbatch(_reshape(y, shape=tuple(cur)), unbatched)


@functor("AdaptiveAvgPool1d")
def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """1-d adaptive average pooling (torch.nn.functional.adaptive_avg_pool1d): window i of
    L is ``[floor(i L / o), ceil((i + 1) L / o))``."""
    return _adaptive_avg_pool(1, input, output_size)


@functor("AdaptiveAvgPool2d")
def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """2-d adaptive average pooling (torch.nn.functional.adaptive_avg_pool2d).
    Evenly dividing sizes use the avg_pool2d op;
    others are matmuls with constant averaging matrices."""
    return _adaptive_avg_pool(2, input, output_size)


@functor("AdaptiveAvgPool3d")
def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """3-d adaptive average pooling (torch.nn.functional.adaptive_avg_pool3d), windows as
    adaptive_avg_pool1d in each spatial dim."""
    return _adaptive_avg_pool(3, input, output_size)


def _adaptive_max_pool(nd: int, fname: str, input: Tensor,
                       output_size: Any) -> tuple[Tensor, Tensor]:
    x, unbatched = _pool_input(fname, input, nd)
    out = _output_size(fname, output_size, tuple(x._meta.shape[2:]))
    y, idx = get(f"adaptive_max_pool{nd}d").apply(x, output_size=out)
    return unbatch(y, unbatched), unbatch(idx, unbatched)


@functor("AdaptiveMaxPool1d")
def adaptive_max_pool1d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:
    """1-d adaptive max pooling (torch.adaptive_max_pool1d): ``(output, indices)``, the
    indices flat positions in L of the maxima (the first one on ties); windows as
    adaptive_avg_pool1d."""
    return _adaptive_max_pool(1, "adaptive_max_pool1d", input, output_size)


@functor("AdaptiveMaxPool2d")
def adaptive_max_pool2d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:
    """2-d adaptive max pooling: ``(output, indices)``, the indices flat ``h * W + w``
    positions of the maxima (torch.nn.functional.adaptive_max_pool2d_with_indices)."""
    return _adaptive_max_pool(2, "adaptive_max_pool2d", input, output_size)


@functor("AdaptiveMaxPool3d")
def adaptive_max_pool3d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:
    """3-d adaptive max pooling: ``(output, indices)``, the indices flat
    ``(d * H + h) * W + w`` positions of the maxima."""
    return _adaptive_max_pool(3, "adaptive_max_pool3d", input, output_size)


def _max_pool(nd: int, fname: str, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool) -> tuple[Tensor, Tensor]:
    x, unbatched = _pool_input(fname, input, nd)
    k = _positive(fname, "kernel_size", pair(fname, "kernel_size", kernel_size, nd))
    st = _positive(fname, "stride", _stride(fname, stride, k, nd))
    dil = _positive(fname, "dilation", pair(fname, "dilation", dilation, nd))
    y, idx = get(f"max_pool{nd}d").apply(x, kernel_size=k, stride=st,
                                         padding=pair(fname, "padding", padding, nd),
                                         dilation=dil, ceil_mode=bool(ceil_mode))
    return unbatch(y, unbatched), unbatch(idx, unbatched)


@functor("MaxPool1d")
def max_pool1d(input: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
               ceil_mode: bool) -> Tensor:
    """1-d max pooling (torch.max_pool1d) over ``(N, C, L)`` or ``(C, L)``; ``stride``
    defaults to the kernel size; padding is -inf. For the indices use
    ``max_pool1d_with_indices``."""
    return _max_pool(1, "max_pool1d", input, kernel_size, stride, padding, dilation,
                     ceil_mode)[0]


@functor("MaxPool2d")
def max_pool2d(input: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
               ceil_mode: bool) -> Tensor:
    """2-d max pooling (torch.nn.functional.max_pool2d); ``stride`` defaults to the kernel
    size; padding is -inf; ``ceil_mode`` as PyTorch. For the indices use
    ``max_pool2d_with_indices``."""
    return _max_pool(2, "max_pool2d", input, kernel_size, stride, padding, dilation,
                     ceil_mode)[0]


@functor("MaxPool3d")
def max_pool3d(input: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
               ceil_mode: bool) -> Tensor:
    """3-d max pooling (torch.max_pool3d) over ``(N, C, D, H, W)`` or ``(C, D, H, W)``;
    arguments as max_pool2d. For the indices use ``max_pool3d_with_indices``."""
    return _max_pool(3, "max_pool3d", input, kernel_size, stride, padding, dilation,
                     ceil_mode)[0]


@functor("MaxPool1dWithIndices")
def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any, padding: Any,
                            dilation: Any, ceil_mode: bool) -> tuple[Tensor, Tensor]:
    """max_pool1d and the positions in L of the maxima (the first one on ties)."""
    return _max_pool(1, "max_pool1d_with_indices", input, kernel_size, stride, padding,
                     dilation, ceil_mode)


@functor("MaxPool2dWithIndices")
def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any, padding: Any,
                            dilation: Any, ceil_mode: bool) -> tuple[Tensor, Tensor]:
    """max_pool2d and the flat indices (h * W + w) of the maxima (PyTorch's
    ``return_indices=True``); the first maximum on ties."""
    return _max_pool(2, "max_pool2d_with_indices", input, kernel_size, stride, padding,
                     dilation, ceil_mode)


@functor("MaxPool3dWithIndices")
def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any, padding: Any,
                            dilation: Any, ceil_mode: bool) -> tuple[Tensor, Tensor]:
    """max_pool3d and the flat indices ((d * H + h) * W + w) of the maxima; the first
    maximum on ties."""
    return _max_pool(3, "max_pool3d_with_indices", input, kernel_size, stride, padding,
                     dilation, ceil_mode)


def _lp_pool(nd: int, input: Tensor, norm_type: float, kernel_size: Any, stride: Any,
             ceil_mode: bool) -> Tensor:
    """PyTorch's definition: the window mean of ``x^p`` (avg_pool, no padding, ceil_mode as
    given) times the kernel's cell count, with negative means clamped to 0 (a sign times a
    relu), to the power ``1/p``."""
    fname = f"lp_pool{nd}d"
    p = float(norm_type)
    if p == 0 or not np.isfinite(p):
        raise ValueError(f"{fname}(): norm_type must be a finite non-zero number, got "
                         f"{norm_type}")
    _pool_input(fname, input, nd)
    k = _positive(fname, "kernel_size", pair(fname, "kernel_size", kernel_size, nd))
    F = _api()
    avg = _avg_pool(nd, F.pow(input, p), k, stride, 0, ceil_mode, True, None)
    y = F.mul(F.mul(F.sign(avg), F.relu(F.abs(avg))), float(np.prod(k)))
    return F.pow(y, 1.0 / p)


@functor("LpPool1d")
def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any,
              ceil_mode: bool) -> Tensor:
    """1-d power-average pooling (torch.nn.functional.lp_pool1d):
    ``(sum over the window of x^p)^(1/p)`` as PyTorch computes it (an avg_pool1d of ``x^p``
    times the kernel size; with ceil_mode a partial last window's mean is scaled by the full
    kernel size, as PyTorch)."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


@functor("LpPool2d")
def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any,
              ceil_mode: bool) -> Tensor:
    """2-d power-average pooling (torch.nn.functional.lp_pool2d), as lp_pool1d."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


@functor("LpPool3d")
def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any,
              ceil_mode: bool) -> Tensor:
    """3-d power-average pooling (torch.nn.functional.lp_pool3d), as lp_pool1d."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


# -- max_unpool: the inverse of max_pool with indices (a scatter into zeros) ----------------------

def _max_unpool(nd: int, input: Tensor, indices: Tensor, kernel_size: Any, stride: Any,
                padding: Any, output_size: Any) -> Tensor:
    """``input``'s values written at their flat ``indices`` (per (N, C) plane, as
    max_pool{nd}d_with_indices returns them) of a zero output; the gradient is the gather of
    the output gradient at ``indices``."""
    fname = f"max_unpool{nd}d"
    f = _api()
    if indices._meta.dtype != np.dtype(np.int64):
        raise TypeError(f"{fname}(): expected indices of dtype int64, got {indices.dtype}")
    shape = tuple(input._meta.shape)
    if shape != tuple(indices._meta.shape):
        raise ValueError(f"{fname}(): expected input and indices of the same shape, got "
                         f"{list(shape)} and {list(indices._meta.shape)}")
    if len(shape) not in (nd + 1, nd + 2):
        raise ValueError(f"{fname}(): expected a {nd + 1}-d (unbatched) or {nd + 2}-d "
                         f"(batched) input {_DIMS[nd]}, got shape {list(shape)}")
    k = _positive(fname, "kernel_size", pair(fname, "kernel_size", kernel_size, nd))
    st = _positive(fname, "stride", _stride(fname, stride, k, nd))
    pad = pair(fname, "padding", padding, nd)
    sizes = shape[-nd:]
    default = tuple((n - 1) * s - 2 * p + kk for n, s, p, kk in zip(sizes, st, pad, k))
    if output_size is None or len(output_size) == 0:
        out = default
    else:
        out = tuple(int(v) for v in output_size)
        if len(out) == nd + 2:
            out = out[2:]
        if len(out) != nd:
            raise ValueError(f"{fname}(): output_size should be a sequence containing {nd} or "
                             f"{nd + 2} elements, but it has a length of {len(out)}")
        for i, (o, d, s) in enumerate(zip(out, default, st)):
            if not d - s < o < d + s:
                raise ValueError(f"{fname}(): invalid output_size {list(out)}: dimension {i} "
                                 f"must be between {d - s} and {d + s} (exclusive)")
    if any(o <= 0 for o in out):
        raise ValueError(f"{fname}(): output size must be positive, got {list(out)}")
    lead = shape[:-nd]
    n_out = int(np.prod(out))
    flat_shape = (int(np.prod(lead)), int(np.prod(sizes)))
    x = _reshape(input, shape=flat_shape)
    idx = _reshape(indices, shape=flat_shape)

    def check(lo: int, hi: int) -> None:
        if lo < 0 or hi >= n_out:
            raise RuntimeError(f"{fname}(): found an invalid max index {lo if lo < 0 else hi} "
                               f"(output volumes are of size {'x'.join(map(str, out))})")
    checked_min_max(indices, check)
    zeros = input.new_zeros((flat_shape[0], n_out))
    y = f.scatter(zeros, 1, idx, x)
    return _reshape(y, shape=lead + out)


@functor("MaxUnpool1d")
def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any,
                 output_size: Any) -> Tensor:
    """torch.nn.functional.max_unpool1d: (N, C, L) or (C, L)."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


@functor("MaxUnpool2d")
def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any,
                 output_size: Any) -> Tensor:
    """torch.nn.functional.max_unpool2d: (N, C, H, W) or (C, H, W)."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


@functor("MaxUnpool3d")
def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any, padding: Any,
                 output_size: Any) -> Tensor:
    """torch.nn.functional.max_unpool3d: (N, C, D, H, W) or (C, D, H, W)."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


# -- fractional max pooling (Graham 2014): pseudo-random window starts from given samples --------

def _fractional_windows(sizes: tuple, out: tuple, k: tuple, comp: tuple,
                        dt: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The host constants of PyTorch's ``generate_intervals`` for every axis at once.

    Window ``j`` of axis ``a`` starts at ``int((j + u) alpha) - int(u alpha)``, ``alpha =
    (n_in - k) / (n_out - 1)`` in the samples' dtype, and the last at ``n_in - k``; ``u`` is
    sample component ``comp[a]``. With ``T[s, j] = int((j + u_s) alpha_s)`` (``j`` from 0,
    so ``T[s, 0] = int(u_s alpha_s)``) a window's flat start is linear in ``T``: ``T @ W +
    C``. Returns ``j`` (M,), ``alpha`` (nd, 1) in ``dt``, ``W`` (nd M, P) and the constant
    ``C[p] + offset[q]`` (P, kk), int64, where P = prod(out) windows of kk = prod(k) taps.
    """
    nd = len(sizes)
    m = max(out)
    strides = [int(np.prod(sizes[a + 1:])) for a in range(nd)]
    alpha = np.zeros((nd, 1), dt)
    for a in range(nd):
        if out[a] > 1:
            alpha[comp[a], 0] = np.asarray(sizes[a] - k[a], dt) / np.asarray(out[a] - 1, dt)
    grid = np.indices(out).reshape(nd, -1)             # (nd, P): each window's j per axis
    n_win = grid.shape[1]
    w = np.zeros((nd * m, n_win), np.int64)
    c = np.zeros(n_win, np.int64)
    cols = np.arange(n_win)
    for a in range(nd):
        j, row = grid[a], comp[a] * m
        inner = j < out[a] - 1
        np.add.at(w, (row + j[inner], cols[inner]), strides[a])
        np.add.at(w, (np.full(int(inner.sum()), row), cols[inner]), -strides[a])
        c[~inner] += strides[a] * (sizes[a] - k[a])
    taps = np.indices(k).reshape(nd, -1)              # (nd, kk): row-major window order
    offset = (np.asarray(strides)[:, None] * taps).sum(0)
    return np.arange(m, dtype=dt), alpha, w, c[:, None] + offset[None, :]


def _fractional_max_pool(nd: int, input: Tensor, kernel_size: Any, output_size: Any,
                         random_samples: Tensor) -> tuple[Tensor, Tensor]:
    """(output, indices): the maximum of each window ``[start, start + k)`` per axis (first
    maximum in row-major window order), indices flat over each input plane.

    The windows' flat input positions come from the samples in a handful of ops on
    host-built constants (``_fractional_windows``), not per axis: each eager op compiles per
    shape, and per-axis arithmetic was ~40 programs a new input or output size."""
    fname = f"fractional_max_pool{nd}d"
    f = _api()
    x, unbatched = _pool_input(fname, input, nd)
    k = _positive(fname, "kernel_size", pair(fname, "kernel_size", kernel_size, nd))
    out = _positive(fname, "output_size", pair(fname, "output_size", output_size, nd))
    shape = tuple(x._meta.shape)
    n, c, sizes = shape[0], shape[1], shape[2:]
    for a in range(nd):
        if out[a] + k[a] - 1 > sizes[a]:
            raise ValueError(f"{fname}(): pool size {k[a]} at spatial dim {a} too large "
                             f"relative to input size {sizes[a]} and output size {out[a]}")
    rs = tuple(random_samples._meta.shape)
    if rs != (n, c, nd):
        raise ValueError(f"{fname}(): expected _random_samples of shape {[n, c, nd]}, got "
                         f"{list(rs)}")
    if random_samples.dtype != input.dtype:
        raise TypeError(f"{fname}(): expected _random_samples of dtype {input.dtype}, got "
                        f"{random_samples.dtype}")
    samples = random_samples.detach()
    # PyTorch's sample order: (W, H) for 2-d, (T, H, W) for 3-d
    comp = (1, 0) if nd == 2 else (0, 1, 2)
    j, alpha, w, const = _fractional_windows(sizes, out, k, comp, samples._meta.dtype)
    n_win, kk = const.shape
    u = _reshape(samples, shape=(n, c, nd, 1))
    # int((j + u) alpha): the samples' dtype, then truncation, as PyTorch's int()
    t = cast(f.mul(f.add(_wrap(jax.device_put(j)), u), _wrap(jax.device_put(alpha))),
             np.dtype(np.int64))
    start = matmul(_reshape(t, shape=(n, c, nd * j.shape[0])), _wrap(jax.device_put(w)),
                   transpose_a=False, transpose_b=False, alpha=1.0)
    lin = f.add(_reshape(start, shape=(n, c, n_win, 1)), _wrap(jax.device_put(const)))
    vals = f.gather(_reshape(x, shape=(n, c, int(np.prod(sizes)))), 2,
                    _reshape(lin, shape=(n, c, n_win * kk)))
    y, arg = f.max(_reshape(vals, shape=(n, c, n_win, kk)), 3, True)
    idx = _reshape(f.gather(lin, 3, arg), shape=(n, c) + out)
    return unbatch(_reshape(y, shape=(n, c) + out), unbatched), unbatch(idx, unbatched)


@functor("FractionalMaxPool2d")
def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any,
                          random_samples: Tensor) -> tuple[Tensor, Tensor]:
    """torch._C._nn.fractional_max_pool2d: (output, indices) with the window starts drawn from
    ``random_samples`` (N, C, 2) in [0, 1)."""
    return _fractional_max_pool(2, input, kernel_size, output_size, random_samples)


@functor("FractionalMaxPool3d")
def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any,
                          random_samples: Tensor) -> tuple[Tensor, Tensor]:
    """torch._C._nn.fractional_max_pool3d: (output, indices) with the window starts drawn from
    ``random_samples`` (N, C, 3) in [0, 1)."""
    return _fractional_max_pool(3, input, kernel_size, output_size, random_samples)
