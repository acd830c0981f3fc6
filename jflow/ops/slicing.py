"""Slicing ops: narrow and slice (a sub-block of the input) and pad (a border added, or with
negative widths cropped) — definition, xla kernel and SBP signatures side by side.

An axis taken whole may be split; narrow, slice and zero padding are linear.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import S, Signature
from ._shape_util import PP, dims_str
from .infer import desc, normalize_axis
from .primitive import define_op
from .registry import Attr

# -- narrow / slice ----------------------------------------------------------------------------

def _narrow_check(dim, start, length):
    if start < 0:
        raise ValueError(f"start must be non-negative (the functor wraps negative starts), "
                         f"got {start}")
    if length < 0:
        raise ValueError(f"length must be non-negative, got {length}")


def _narrow_infer(x, dim, start, length):
    nd = len(x.shape)
    if nd == 0:
        raise ValueError("narrow() cannot be applied to a 0-dim tensor")
    a = normalize_axis(dim, nd)
    if start + length > x.shape[a]:
        raise ValueError(f"start ({start}) + length ({length}) exceeds dimension size "
                         f"({x.shape[a]})")
    return desc(tuple(x.shape[:a]) + (length,) + tuple(x.shape[a + 1:]), x.dtype)


def _narrow_sbp(in_shapes, n_out=1, dim=0, **_):
    nd = len(in_shapes[0])
    a = normalize_axis(dim, nd)
    return [Signature((S(i),), (S(i),)) for i in range(nd) if i != a] + [PP]


define_op("narrow", inputs=["x"], outputs=["y"],
          attrs=[Attr("dim", "int64"), Attr("start", "int64"), Attr("length", "int64")],
          check=_narrow_check, infer=_narrow_infer, sbp=_narrow_sbp)
register_kernel("narrow", lambda x, dim, start, length: lax.slice_in_dim(
    x, start, start + length, axis=normalize_axis(dim, x.ndim)), name="narrow_xla")


def _slice_ranges(shape: Sequence[int], start: Sequence[int], stop: Sequence[int],
                  step: Sequence[int]) -> list[tuple[int, int, int]]:
    """Per dim (start, length, step) with Python slice semantics (negatives wrap, clamping)."""
    nd = len(shape)
    if not len(start) == len(stop) == len(step) == nd:
        raise ValueError(f"start, stop and step must each have one entry per dim ({nd}), got "
                         f"{len(start)}, {len(stop)} and {len(step)}")
    out = []
    for d, a, b, c in zip(shape, start, stop, step):
        a, b, c = slice(a, b, c).indices(int(d))
        out.append((a, len(range(a, b, c)), c))
    return out


def _slice_check(start, stop, step):
    if any(s <= 0 for s in step):
        raise ValueError(f"slice steps must be positive, got {list(step)}")


def _slice_infer(x, start, stop, step):
    return desc([n for _, n, _ in _slice_ranges(x.shape, start, stop, step)], x.dtype)


def _slice_kernel(x, start, stop, step):
    r = _slice_ranges(x.shape, start, stop, step)
    return lax.slice(x, [a for a, _, _ in r], [a + (n - 1) * c + 1 if n else a for a, n, c in r],
                     [c for _, _, c in r])


def _slice_sbp(in_shapes, n_out=1, start=(), stop=(), step=()):
    shape = in_shapes[0]
    r = _slice_ranges(shape, start, stop, step)
    return [Signature((S(i),), (S(i),)) for i, (a, n, c) in enumerate(r)
            if a == 0 and n == shape[i] and c == 1] + [PP]


define_op("slice", inputs=["x"], outputs=["y"],
          attrs=[Attr("start", "int64_list"), Attr("stop", "int64_list"),
                 Attr("step", "int64_list")],
          check=_slice_check, infer=_slice_infer, sbp=_slice_sbp,
          doc="x[start0:stop0:step0, start1:stop1:step1, ...] with Python slice semantics.")
register_kernel("slice", _slice_kernel, name="slice_xla")


# -- pad -------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_check(pad, mode, value):
    if len(pad) % 2:
        raise ValueError(f"padding length must be divisible by 2, got {len(pad)} ({list(pad)})")
    if mode not in _PAD_MODES:
        raise ValueError(f"mode must be one of {list(_PAD_MODES)}, got {mode!r}")
    if mode != "constant" and value != 0.0:
        raise ValueError(f"a padding value is only meaningful in 'constant' mode, got mode "
                         f"{mode!r} with value {value}")


def _pad_widths(shape: Sequence[int], pad: Sequence[int], mode: str) -> list[tuple[int, int]]:
    """Per dim (before, after) from torch's order (last dim first), validated per mode."""
    nd = len(shape)
    k = len(pad) // 2
    if k > nd:
        raise ValueError(f"padding length {len(pad)} is too large for a {nd}-d input "
                         f"(at most {2 * nd})")
    w = [(0, 0)] * nd
    for j in range(k):
        w[nd - 1 - j] = (int(pad[2 * j]), int(pad[2 * j + 1]))
    for d, ((lo, hi), size) in enumerate(zip(w, shape)):
        if (lo, hi) == (0, 0):
            continue
        if mode == "constant":
            if size + lo + hi < 0:
                raise ValueError(f"the input size {size}, plus negative padding {lo} and {hi} "
                                 f"resulted in a negative output size at dimension {d}")
            continue
        if lo < 0 or hi < 0:
            raise ValueError(f"negative padding ({lo}, {hi}) at dimension {d} is only allowed "
                             f"in 'constant' mode")
        if mode == "reflect" and (lo >= size or hi >= size):
            raise ValueError(f"padding size should be less than the corresponding input "
                             f"dimension, but got padding ({lo}, {hi}) at dimension {d} of "
                             f"input {dims_str(shape)}")
        if mode == "circular" and (lo > size or hi > size):
            raise ValueError(f"padding ({lo}, {hi}) at dimension {d} must not exceed the input "
                             f"size {size} in 'circular' mode")
        if mode == "replicate" and size == 0:
            raise ValueError(f"cannot replicate-pad the empty dimension {d}")
    return w


def _pad_infer(x, pad, mode, value):
    w = _pad_widths(x.shape, pad, mode)
    return desc([s + lo + hi for s, (lo, hi) in zip(x.shape, w)], x.dtype)


def _pad_kernel(x, pad, mode, value):
    w = _pad_widths(x.shape, pad, mode)
    if mode == "constant":
        v = jnp.asarray(value).astype(x.dtype)
        return lax.pad(x, v, [(lo, hi, 0) for lo, hi in w])
    return jnp.pad(x, w, mode={"reflect": "reflect", "replicate": "edge",
                               "circular": "wrap"}[mode])


def _pad_sbp(in_shapes, n_out=1, pad=(), mode="constant", value=0.0):
    w = _pad_widths(in_shapes[0], pad, mode)
    sigs = [Signature((S(i),), (S(i),)) for i, p in enumerate(w) if p == (0, 0)]
    if mode == "constant" and value == 0.0:  # padding with zeros is linear
        sigs.append(PP)
    return sigs


define_op("pad", inputs=["x"], outputs=["y"],
          attrs=[Attr("pad", "int64_list"), Attr("mode", "string", "constant"),
                 Attr("value", "double", 0.0, static=True)],  # zero padding: SBP P
          check=_pad_check, infer=_pad_infer, sbp=_pad_sbp,
          doc="torch.nn.functional.pad: `pad` lists (before, after) pairs, last dim first; "
              "negative constant padding crops.")
register_kernel("pad", _pad_kernel, name="pad_xla")
