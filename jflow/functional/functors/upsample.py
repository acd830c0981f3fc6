"""Functors of the sampling family (``jflow/ops/upsample.py``): ``interpolate`` (PyTorch's
size / scale_factor / mode rules for 3-d and 4-d inputs, then the upsample2d op), and
``grid_sample`` / ``affine_grid``, compositions of existing ops (elementwise coordinate
arithmetic, ``dim_gather``, ``einsum``), so their gradients with respect to every input, of any
order, are those ops' rules.

grid_sample follows the definitions in PyTorch's documentation: a grid value ``g`` in
[-1, 1] maps to the pixel coordinate ``(g + 1) / 2 (size - 1)`` with ``align_corners`` (the
extreme values are the corner pixels' centres) and ``((g + 1) size - 1) / 2`` without (they are
the corner pixels' outer edges). 'border' clips the coordinate to ``[0, size - 1]``;
'reflection' reflects it about the borders (``0`` and ``size - 1`` with ``align_corners``,
``-0.5`` and ``size - 0.5`` without, then clipped); 'zeros' reads 0 outside the input. For
'bicubic' (Keys' kernel, ``A = -0.75``) the padding applies to each of the 4 x 4 taps rather
than to the sampling point, as PyTorch does.
"""

from __future__ import annotations

import itertools
from typing import Any

import jax
import numpy as np

from ...ops import get
from ...tensor import Tensor, _wrap
from ..promotion import scalar_tensor
from ..registry import api as _api
from ..registry import functor

_upsample2d = get("upsample2d").apply
_reshape = get("reshape").apply
_expand, _gather, _cast = get("expand").apply, get("dim_gather").apply, get("cast").apply
_where, _einsum, _split = get("where").apply, get("einsum").apply, get("split").apply


_INTERP_MODES = {1: ("nearest", "nearest-exact", "linear", "area"),
                 2: ("nearest", "nearest-exact", "bilinear", "bicubic", "area"),
                 3: ("nearest", "nearest-exact", "trilinear", "area")}


@functor("Interpolate")
def interpolate(input: Tensor, size: Any, scale_factor: Any, mode: str, align_corners: Any,
                recompute_scale_factor: Any, antialias: bool) -> Tensor:
    """torch.nn.functional.interpolate for 3-d (N, C, L: 'nearest', 'nearest-exact',
    'linear', 'area'), 4-d (N, C, H, W: 'nearest', 'nearest-exact', 'bilinear', 'bicubic',
    'area') and 5-d (N, C, D, H, W: 'nearest', 'nearest-exact', 'trilinear', 'area') inputs
    (5-d: the separable op twice, on (H, W) then on D); ``antialias=True`` for 'bilinear' /
    'bicubic' on 4-d inputs. Exactly one of ``size`` / ``scale_factor``; the output size is
    ``floor(in * scale_factor)``, and the scale factor (unless ``recompute_scale_factor``)
    gives the source coordinates, as
    PyTorch ('area' is adaptive average pooling to the output size)."""
    fname = "interpolate"
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    shape = tuple(input._meta.shape)
    nd = len(shape) - 2
    if nd not in _INTERP_MODES:
        raise ValueError(f"{fname}(): expected a 3-d, 4-d or 5-d input (N, C, spatial...), "
                         f"got shape {list(shape)}")
    if mode not in _INTERP_MODES[nd]:
        known = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear",
                 "area")
        if mode in known:
            raise NotImplementedError(f"{fname}(): mode {mode!r} is not supported for a "
                                      f"{nd + 2}-d input; supported: {list(_INTERP_MODES[nd])}")
        raise ValueError(f"{fname}(): mode must be one of {list(known)}, got {mode!r}")
    if antialias and not (nd == 2 and mode in ("bilinear", "bicubic")):
        raise ValueError(f"{fname}(): anti-alias option is restricted to bilinear and bicubic "
                         f"modes and requires a 4-D tensor as input, got mode {mode!r} and a "
                         f"{nd + 2}-d input")
    if mode.startswith("nearest") or mode == "area":
        if align_corners is not None:
            raise ValueError(f"{fname}(): align_corners option can only be set with the "
                             f"interpolating modes: linear | bilinear | bicubic | trilinear")
        align_corners = False
    align_corners = bool(align_corners)
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{fname}(): exactly one of size or scale_factor should be defined, "
                         f"got size={size} and scale_factor={scale_factor}")
    in_sizes = shape[2:]
    if size is not None:
        out = (int(size),) * nd if isinstance(size, int) else tuple(int(v) for v in size)
        if len(out) != nd:
            raise ValueError(f"{fname}(): size must be an int or {nd} ints for a "
                             f"{nd + 2}-d input, got {list(out)}")
        scales = (0.0,) * nd
    else:
        sf = (float(scale_factor),) * nd if isinstance(scale_factor, (int, float)) else \
            tuple(float(v) for v in scale_factor)
        if len(sf) != nd:
            raise ValueError(f"{fname}(): scale_factor must be a float or {nd} floats for a "
                             f"{nd + 2}-d input, got {list(sf)}")
        if any(not v > 0 for v in sf):
            raise ValueError(f"{fname}(): scale_factor must be positive, got {list(sf)}")
        out = tuple(int(np.floor(float(n) * v)) for n, v in zip(in_sizes, sf))
        scales = (0.0,) * nd if recompute_scale_factor or mode == "area" else sf
    if any(o <= 0 for o in out):
        raise ValueError(f"{fname}(): input and output sizes should be greater than 0, but "
                         f"got input {list(in_sizes)} and output {list(out)}")
    x = input
    if nd == 3:
        return _interp3d(x, out, scales, "bilinear" if mode == "trilinear" else mode,
                         align_corners)
    if nd == 1:  # a unit height dimension
        x = _reshape(x, shape=shape[:2] + (1,) + shape[2:])
        out, scales = (1,) + out, (0.0,) + scales
    y = _upsample2d(x, output_size=out, mode="bilinear" if mode == "linear" else mode,
                    scales=scales, align_corners=align_corners, antialias=bool(antialias))
    if nd == 1:
        y = _reshape(y, shape=shape[:2] + out[1:])
    return y


def _interp3d(x: Tensor, out: tuple[int, ...], scales: tuple[float, ...], mode: str,
              align_corners: bool) -> Tensor:
    """5-d resizing as two separable passes of upsample2d: (H, W) with the depth folded into
    the channels, then (D, H W) where the flattened H W axis keeps its size (an identity in
    every mode: the kernel drops zero-weight taps)."""
    n, c, d, h, w = tuple(x._meta.shape)
    od, oh, ow = out
    y = _upsample2d(_reshape(x, shape=(n, c * d, h, w)), output_size=(oh, ow), mode=mode,
                    scales=scales[1:], align_corners=align_corners, antialias=False)
    y = _upsample2d(_reshape(y, shape=(n, c, d, oh * ow)), output_size=(od, oh * ow),
                    mode=mode, scales=(scales[0], 0.0), align_corners=align_corners,
                    antialias=False)
    return _reshape(y, shape=(n, c, od, oh, ow))


_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDINGS = ("zeros", "border", "reflection")
_CUBIC_A = -0.75


def _clip(c: Tensor, hi: int) -> Tensor:
    """``c`` clipped to ``[0, hi]``; gradient 1 inside and on the bounds, 0 outside."""
    dt = c._meta.dtype
    inner = _where(c > float(hi), scalar_tensor(float(hi), dt), c)
    return _where(c < 0.0, scalar_tensor(0.0, dt), inner)


def _reflect(c: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """``c`` reflected about ``twice_low / 2`` and ``twice_high / 2`` until inside."""
    if twice_low == twice_high:
        return c * 0.0
    lo, span = twice_low / 2, (twice_high - twice_low) / 2
    a = (c - lo).abs()
    extra = _api().fmod(a, span)
    flips = (a / span).floor()
    even = _api().fmod(flips, 2.0) == 0.0
    return _where(even, extra + lo, (span + lo) - extra)


def _pad_coord(c: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """A pixel coordinate after the padding mode (unchanged for 'zeros')."""
    if padding_mode == "border":
        return _clip(c, size - 1)
    if padding_mode == "reflection":
        if align_corners:
            c = _reflect(c, 0, 2 * (size - 1))
        else:
            c = _reflect(c, -1, 2 * size - 1)
        return _clip(c, size - 1)
    return c


def _tap(fi: Tensor, size: int) -> tuple[Tensor, Tensor]:
    """(in-bounds mask, clamped int64 index) of integer-valued float coordinates: in bounds
    where clamping leaves the coordinate unchanged (NaN compares unequal: out), one compiled
    comparison instead of two and their conjunction."""
    clamped = _api().clamp(fi, 0, size - 1)
    return clamped == fi, _cast(clamped, dtype=np.dtype(np.int64))


def _cubic_weights(t: Tensor) -> list[Tensor]:
    """Keys' cubic convolution weights of the taps at ``-1, 0, 1, 2`` for fractions ``t``."""
    a = _CUBIC_A

    def near(x: Tensor) -> Tensor:
        return ((x * (a + 2) - (a + 3)) * x) * x + 1.0

    def far(x: Tensor) -> Tensor:
        return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a

    u = 1.0 - t
    return [far(t + 1.0), near(t), near(u), far(u + 1.0)]


@functor("GridSample")
def grid_sample(input: Tensor, grid: Tensor, mode: str, padding_mode: str,
                align_corners: Any) -> Tensor:
    """torch.nn.functional.grid_sample: ``input`` (N, C, H, W) sampled at ``grid``
    (N, Ho, Wo, 2) of (x, y) in [-1, 1], or (N, C, D, H, W) at (N, Do, Ho, Wo, 3) of
    (x, y, z); mode 'bilinear' (trilinear for 5-d), 'nearest' (round half to even; no
    gradient for the grid) or 'bicubic' (4-d only); padding 'zeros', 'border' or
    'reflection'. ``align_corners=None`` is False."""
    fname = "grid_sample"
    if mode not in _GRID_MODES:
        raise ValueError(f"{fname}(): expected mode to be one of {list(_GRID_MODES)}, got "
                         f"{mode!r}")
    if padding_mode not in _GRID_PADDINGS:
        raise ValueError(f"{fname}(): expected padding_mode to be one of "
                         f"{list(_GRID_PADDINGS)}, got {padding_mode!r}")
    align = bool(align_corners)
    if not input.is_floating_point() or input.dtype != grid.dtype:
        raise TypeError(f"{fname}(): expected floating point input and grid of the same dtype, "
                        f"got input {input.dtype} and grid {grid.dtype}")
    xs, gs = tuple(input._meta.shape), tuple(grid._meta.shape)
    if len(xs) not in (4, 5) or len(gs) != len(xs):
        raise ValueError(f"{fname}(): expected a 4-d or 5-d input and a grid with the same "
                         f"number of dimensions, got input of shape {list(xs)} and grid of "
                         f"shape {list(gs)}")
    nd = len(xs) - 2
    if gs[0] != xs[0]:
        raise ValueError(f"{fname}(): expected grid and input to have the same batch size, got "
                         f"input of shape {list(xs)} and grid of shape {list(gs)}")
    if gs[-1] != nd:
        raise ValueError(f"{fname}(): expected grid to have size {nd} in its last dimension "
                         f"for a {nd + 2}-d input, got grid of shape {list(gs)}")
    if any(v <= 0 for v in xs[2:]):
        raise ValueError(f"{fname}(): expected input to have non-empty spatial dimensions, got "
                         f"shape {list(xs)}")
    if mode == "bicubic" and nd != 2:
        raise ValueError(f"{fname}(): mode 'bicubic' only supports a 4-d input, got shape "
                         f"{list(xs)}")
    n, c, sizes, out = xs[0], xs[1], xs[2:], gs[1:-1]
    npts = int(np.prod(out))
    flat = _reshape(input, shape=(n, c, int(np.prod(sizes))))
    strides = [int(np.prod(sizes[i + 1:])) for i in range(nd)]
    # The grid's components as one split (a narrow per axis compiles one program each), each
    # shaped (N, 1, P) once: coordinates, weights, masks and indices then broadcast against
    # the (N, C, P) values with no reshape of their own.
    comps = _split(grid, dim=nd + 1, sizes=(1,) * nd)
    coords = []  # per spatial axis (outermost first): pixel coordinates (N, 1, P)
    for ax in range(nd):
        size = sizes[ax]
        comp = _reshape(comps[nd - 1 - ax], shape=(n, 1, npts))
        if align:
            coords.append(((comp + 1.0) / 2) * (size - 1))
        else:
            coords.append(((comp + 1.0) * size - 1.0) / 2)

    def read(fis: list[Tensor]) -> Tensor:
        """Input values (N, C, P) at integer-valued (N, 1, P) coordinates, 0 outside."""
        valid, lin = None, None
        for ax, fi in enumerate(fis):
            v, i = _tap(fi, sizes[ax])
            valid = v if valid is None else valid.logical_and(v)
            i = i * strides[ax] if strides[ax] != 1 else i
            lin = i if lin is None else lin + i
        vals = _gather(flat, _expand(lin, shape=(n, c, npts)), dim=2)
        return _where(valid, vals, scalar_tensor(0.0, vals._meta.dtype))

    def weighted(w: Tensor, v: Tensor) -> Tensor:
        return w * v

    if mode == "nearest":
        rs = [_api().round(_pad_coord(co, sizes[ax], padding_mode, align))
              for ax, co in enumerate(coords)]
        # (r - r) + 1: a unit weight through which the grid receives its zero gradient.
        y = weighted((rs[0] - rs[0]) + 1.0, read(rs))
    elif mode == "bilinear":
        cs = [_pad_coord(co, sizes[ax], padding_mode, align) for ax, co in enumerate(coords)]
        lo = [co.floor() for co in cs]
        frac = [co - f for co, f in zip(cs, lo)]
        w = [(1.0 - t, t) for t in frac]
        y = None
        for bits in itertools.product((0, 1), repeat=nd):
            wt = None
            for ax, b in enumerate(bits):
                wt = w[ax][b] if wt is None else wt * w[ax][b]
            term = weighted(wt, read([f + float(b) if b else f for f, b in zip(lo, bits)]))
            y = term if y is None else y + term
    else:
        lo = [co.floor() for co in coords]
        w = [_cubic_weights(co - f) for co, f in zip(coords, lo)]
        taps = [[_pad_coord(f + float(k - 1), sizes[ax], padding_mode, align)
                 for k in range(4)] for ax, f in enumerate(lo)]
        y = None
        for ky in range(4):
            row = None
            for kx in range(4):
                term = weighted(w[1][kx], read([taps[0][ky], taps[1][kx]]))
                row = term if row is None else row + term
            term = weighted(w[0][ky], row)
            y = term if y is None else y + term
    return _reshape(y, shape=(n, c) + tuple(out))


def _base_coords(steps: int, align_corners: bool) -> np.ndarray:
    """Normalised coordinates of ``steps`` pixel centres in [-1, 1]."""
    if steps <= 1:
        return np.zeros(max(steps, 0))
    v = np.linspace(-1.0, 1.0, steps)
    return v if align_corners else v * (steps - 1) / steps


@functor("AffineGrid")
def affine_grid(theta: Tensor, size: Any, align_corners: Any) -> Tensor:
    """torch.nn.functional.affine_grid: the sampling grid (N, H, W, 2) of the affine maps
    ``theta`` (N, 2, 3) for ``size`` (N, C, H, W), or (N, D, H, W, 3) of ``theta`` (N, 3, 4)
    for (N, C, D, H, W): each output pixel's normalised (x, y[, z], 1) times ``theta^T``.
    ``align_corners=None`` is False."""
    fname = "affine_grid"
    size = [int(v) for v in size]
    if not theta.is_floating_point():
        raise TypeError(f"{fname}(): expected theta to have a floating point dtype, got "
                        f"{theta.dtype}")
    if len(size) not in (4, 5):
        raise ValueError(f"{fname}(): size must have 4 (N, C, H, W: 2-d affine maps) or 5 "
                         f"(N, C, D, H, W: 3-d affine maps) elements, got {size}")
    nd = len(size) - 2
    ts = tuple(theta._meta.shape)
    if ts != (size[0], nd, nd + 1):
        raise ValueError(f"{fname}(): expected theta of shape [{size[0]}, {nd}, {nd + 1}] "
                         f"(a batch of {nd}-d affine matrices) for size {size}, got "
                         f"{list(ts)}")
    if min(size) <= 0:
        raise ValueError(f"{fname}(): expected a positive output size, got {size}")
    align = bool(align_corners)
    spatial = size[2:]
    axes = [_base_coords(s, align) for s in reversed(spatial)]  # x (W), y (H)[, z (D)]
    mesh = np.meshgrid(*axes[::-1], indexing="ij")  # outermost spatial axis first
    cols = [m.reshape(-1) for m in mesh[::-1]] + [np.ones(int(np.prod(spatial)))]
    dt = theta._meta.dtype
    base = _wrap(jax.device_put(np.stack(cols, 1).astype(dt)))  # (P, nd + 1)
    grid = _einsum([base, theta], equation="pk,njk->npj")
    return _reshape(grid, shape=(size[0],) + tuple(spatial) + (nd,))
