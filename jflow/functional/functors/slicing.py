"""Functors of the slicing ops (``jflow/ops/slicing.py``): narrow, slice and pad —
PyTorch's argument rules (negative starts, pad modes and lengths), then the op.
"""

from __future__ import annotations

from typing import Any

from ...ops import get
from ...tensor import Tensor
from ...views import alias
from ...views.bounds import note_bounds_like
from ..registry import FUNCTORS, functor
from ._shape_util import wrap_dim

_narrow = get("narrow").apply
_slice = get("slice").apply
_pad = get("pad").apply


# -- narrow / slice ------------------------------------------------------------------------------

@functor("Narrow")
def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    nd = input._meta.ndim
    if nd == 0:
        raise ValueError("narrow(): cannot be applied to a 0-dim tensor")
    a = wrap_dim("narrow", dim, nd)
    size = input._meta.shape[a]
    if not -size <= start <= size:
        raise IndexError(f"narrow(): start out of range (expected to be in range of "
                         f"[{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0:
        raise ValueError(f"narrow(): length must be non-negative, got {length}")
    if start + length > size:
        raise ValueError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size "
                         f"({size})")
    return alias(_narrow(input, dim=a, start=start, length=length), input, "narrow",
                 (a, start, length))


@functor("Slice")
def slice_(input: Tensor, start: tuple[int, ...], stop: tuple[int, ...],
           step: tuple[int, ...]) -> Tensor:
    nd = input._meta.ndim
    if not len(start) == len(stop) == len(step) == nd:
        raise ValueError(f"slice(): start, stop and step must each have one entry per dim of "
                         f"the input ({nd}), got {len(start)}, {len(stop)} and {len(step)}")
    if any(s <= 0 for s in step):
        raise ValueError(f"slice(): step must be greater than zero, got {list(step)}")
    return alias(_slice(input, start=start, stop=stop, step=step), input, "slice",
                 (start, stop, step))


# -- pad -------------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


@functor("Pad")
def pad(input: Tensor, pad: tuple[int, ...], mode: str, value: Any) -> Tensor:
    if mode not in _PAD_MODES:
        raise ValueError(f"pad(): mode must be one of {list(_PAD_MODES)}, got {mode!r}")
    if len(pad) % 2:
        raise ValueError(f"pad(): padding length must be divisible by 2, got {len(pad)}")
    nd = input._meta.ndim
    if len(pad) // 2 > nd:
        raise ValueError(f"pad(): padding length ({len(pad)}) is too large for a {nd}-d input "
                         f"(at most {2 * nd})")
    if mode != "constant" and value is not None and value != 0:
        raise ValueError(f"pad(): padding mode {mode!r} doesn't take in value argument")
    v = 0.0 if value is None else float(value)
    if mode != "constant" and any(p < 0 for p in pad):
        return _pad_cropping(input, tuple(int(p) for p in pad), mode)
    out = _pad(input, pad=pad, mode=mode, value=v)
    if input._meta.dtype.kind in "iu":  # (padded labels: their bounds, for a loss's check)
        note_bounds_like(out, input, v if mode == "constant" else None)
    return out


def _pad_cropping(input: Tensor, pad: tuple[int, ...], mode: str) -> Tensor:
    """Non-constant padding with negative widths, as PyTorch: 'reflect' and 'replicate' pad
    with the positive widths, then crop the negative ones (their source index is that of the
    uncropped input); 'circular' crops first, then wraps around what is left. Checks are
    PyTorch's (against the uncropped size)."""
    nd = input._meta.ndim
    shape = tuple(input._meta.shape)
    for j in range(len(pad) // 2):
        lo, hi, size = pad[2 * j], pad[2 * j + 1], shape[nd - 1 - j]
        if size + lo + hi < 0:
            raise ValueError(f"pad(): the input size {size}, plus negative padding {lo} and "
                             f"{hi} resulted in a negative output size at dimension "
                             f"{nd - 1 - j}")
        if mode == "circular" and (lo > size or hi > size):
            raise ValueError(f"pad(): padding ({lo}, {hi}) at dimension {nd - 1 - j} causes "
                             f"wrapping around more than once in 'circular' mode (input size "
                             f"{size})")
    grow = tuple(max(p, 0) for p in pad)
    crop = tuple(min(p, 0) for p in pad)
    if mode != "circular":
        return _pad(_pad(input, pad=grow, mode=mode, value=0.0), pad=crop, mode="constant",
                    value=0.0)
    x = _pad(input, pad=crop, mode="constant", value=0.0)
    xs = tuple(x._meta.shape)
    if all(grow[2 * j] <= xs[nd - 1 - j] and grow[2 * j + 1] <= xs[nd - 1 - j]
           for j in range(len(pad) // 2)):
        return _pad(x, pad=grow, mode="circular", value=0.0)
    # a width beyond the cropped size: the periodic extension (PyTorch's overlapping copy)
    for j in range(len(pad) // 2):
        d, lo, hi = nd - 1 - j, grow[2 * j], grow[2 * j + 1]
        m = xs[d]
        if lo == hi == 0:
            continue
        if m == 0:
            raise ValueError(f"pad(): cannot wrap around the empty dimension {d} in "
                             f"'circular' mode")
        before, after = -(-lo // m), -(-hi // m)
        reps = [1] * nd
        reps[d] = before + 1 + after
        x = _narrow(x.repeat(*reps), dim=d, start=before * m - lo, length=m + lo + hi)
    return x


# -- narrow / tensor_split with their bounds as tensors (PyTorch's Tensor overloads) ------------

def _host_ints(fname: str, arg: str, t: Tensor) -> Any:
    """An integer tensor's values on the host (eager: these bounds decide output shapes)."""
    import numpy as np
    from jax.core import Tracer
    if isinstance(t._meta, Tracer):
        raise RuntimeError(f"{fname}(): '{arg}' as a tensor decides the output shape: it must "
                           f"be concrete, not traced (pass a Python int)")
    return np.asarray(t.detach()._value)


@functor("NarrowTensorStart")
def narrow_tensor_start(input: Tensor, dim: int, start: Tensor, length: int) -> Tensor:
    """torch.narrow with ``start`` a 0-d integer tensor."""
    if start._meta.ndim != 0 or start._meta.dtype.kind not in "iu":
        raise RuntimeError("narrow(): start must be an 0-dim integral Tensor.")
    return narrow(input, dim, int(_host_ints("narrow", "start", start)), length)


@functor("TensorSplitTensor")
def tensor_split_tensor(input: Tensor, tensor_indices_or_sections: Tensor,
                        dim: int) -> tuple[Tensor, ...]:
    """torch.tensor_split with an int64 tensor: 0-d = the number of sections, 1-d = the split
    indices."""
    t = tensor_indices_or_sections
    if t._meta.dtype != "int64":
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of "
                           f"long, but got {t.dtype}")
    if t._meta.ndim > 1:
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                           f"zero-dimensional or one-dimensional tensor, but got a tensor with "
                           f"{t._meta.ndim} dims")
    v = _host_ints("tensor_split", "tensor_indices_or_sections", t)
    if v.ndim == 0:
        return FUNCTORS["TensorSplit"](input, int(v), dim)
    return FUNCTORS["TensorSplitIndices"](input, tuple(int(i) for i in v), dim)
