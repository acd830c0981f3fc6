"""Functions and methods composed of functional ops (their gradients are the pieces'):
``addcmul`` / ``addcdiv`` / ``lerp`` and their in-place forms, ``Tensor.sum_to_size``, and the
torch.* functions ``histogram``, ``histogramdd``, ``unravel_index``, ``gradient``.

They live here rather than in api.yaml because PyTorch's rules for them (``value=`` outside
the type promotion, edges computed from the data) are Python, not one op.
"""

from __future__ import annotations

from collections import namedtuple as _namedtuple
from typing import Any

import numpy as np
from jax.core import Tracer

from .. import dtypes as _dt
from .._dims import wrap_dim
from ..creation import zeros
from ..functional import F
from ..functional.promotion import assign_inplace, cast, result_dtype
from ..tensor import Tensor
from ._forward import _SCALARS, _tensors

# -- addcmul, addcdiv, lerp --------------------------------------------------------------------

def _scale(t: Tensor, value: Any, fname: str) -> Tensor:
    """``value * t`` in ``t``'s dtype (``value`` takes no part in type promotion, as
    PyTorch's ``value=``); a floating ``value`` is refused for an integral ``t``."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"{fname}(): value must be a number or a 0-d tensor")
        if value.is_floating_point() and not t.is_floating_point():
            raise RuntimeError(f"{fname}(): For integral input tensors, argument value must "
                               f"not be a floating point number.")
        return t * cast(value, t._meta.dtype)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not t.is_floating_point():
        raise RuntimeError(f"{fname}(): For integral input tensors, argument value must not "
                           f"be a floating point number.")
    return t if value == 1 else t * value


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2`` (broadcast; PyTorch's result dtype of the three
    tensors, ``value`` outside the promotion)."""
    _tensors("addcmul", input, tensor1, tensor2)
    d = result_dtype(input, tensor1, tensor2)
    prod = F.mul(cast(tensor1, d), cast(tensor2, d))
    return F.add(cast(input, d), _scale(prod, value, "addcmul"))


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2`` (broadcast); integer division is refused, as
    in PyTorch."""
    _tensors("addcdiv", input, tensor1, tensor2)
    if not tensor1.is_floating_point() and not tensor2.is_floating_point():
        raise RuntimeError("addcdiv(): Integer division with addcdiv is no longer supported, "
                           "and in a future release addcdiv will perform a true division of "
                           "tensor1 and tensor2.")
    d = result_dtype(input, tensor1, tensor2)
    quot = F.div(cast(tensor1, d), cast(tensor2, d))
    return F.add(cast(input, d), _scale(quot, value, "addcdiv"))


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """``input + weight * (end - input)`` with PyTorch's formula (``end - (end - input) *
    (1 - weight)`` where ``|weight| >= 0.5``, exact at ``weight = 1``). ``input`` and ``end``
    (and a tensor ``weight``) must share one floating dtype, as in PyTorch."""
    _tensors("lerp", input, end)
    if end.dtype != input.dtype:
        raise RuntimeError(f"lerp(): expected dtype {input.dtype} for `end` but got dtype "
                           f"{end.dtype}")
    if not input.is_floating_point():
        raise RuntimeError(f"lerp(): not implemented for {input.dtype} (floating dtypes only)")
    diff = end - input
    if isinstance(weight, Tensor):
        if weight.dtype != input.dtype:
            raise RuntimeError(f"lerp(): expected dtype {input.dtype} for `weight` but got "
                               f"dtype {weight.dtype}")
        return F.where(F.lt(F.abs(weight), 0.5), input + weight * diff,
                       end - diff * (1 - weight))
    if isinstance(weight, np.generic):
        weight = weight.item()
    if not isinstance(weight, _SCALARS):
        raise TypeError(f"lerp(): weight must be a number or a Tensor, not "
                        f"{type(weight).__name__}")
    if abs(weight) < 0.5:
        return input + diff * weight
    return end - diff * (1 - weight)


def addcmul_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """:func:`addcmul` in place."""
    return assign_inplace(self, addcmul(self, tensor1, tensor2, value=value), "addcmul_")


def addcdiv_(self: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """:func:`addcdiv` in place."""
    return assign_inplace(self, addcdiv(self, tensor1, tensor2, value=value), "addcdiv_")


def lerp_(self: Tensor, end: Tensor, weight: Any) -> Tensor:
    """:func:`lerp` in place."""
    return assign_inplace(self, lerp(self, end, weight), "lerp_")


Tensor.addcmul, Tensor.addcdiv, Tensor.lerp = addcmul, addcdiv, lerp
Tensor.addcmul_, Tensor.addcdiv_, Tensor.lerp_ = addcmul_, addcdiv_, lerp_


# -- sum_to_size -----------------------------------------------------------------------------

def sum_to_size(self: Tensor, *size: Any) -> Tensor:
    """This tensor summed to ``size`` (a shape it broadcasts to): leading dims summed away,
    dims where ``size`` is 1 summed with keepdim, as ``torch.Tensor.sum_to_size``."""
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    shape = tuple(self.shape)
    size = tuple(int(s) for s in size)
    lead = len(shape) - len(size)
    ok = lead >= 0 and all(s in (1, d) for s, d in zip(size, shape[lead:]))
    if not ok:
        raise RuntimeError(f"sum_to_size(): size {list(size)} is not expandable to size "
                           f"{list(shape)} (argument 'size' must broadcast to this tensor)")
    out = self
    if lead:
        out = F.sum(out, list(range(lead)))
    dims = [i for i, (s, d) in enumerate(zip(size, shape[lead:])) if s == 1 and d != 1]
    if dims:
        out = F.sum(out, dims, keepdim=True)
    return out


Tensor.sum_to_size = sum_to_size


# -- histogram / histogramdd / unravel_index / gradient ---------------------------------------

builtins_range = range  # (histogram's keyword ``range`` shadows the builtin inside it)
_HISTOGRAM = _namedtuple("histogram", ["hist", "bin_edges"])
_HISTOGRAMDD = _namedtuple("histogramdd", ["hist", "bin_edges"])

def _hist_range(fname: str, x: Tensor, rng: Any) -> tuple[float, float]:
    """The (leftmost, rightmost) edges: ``range`` or the data's extremes (eager), widened by
    0.5 each way when equal ([0, 1] for no data), as PyTorch."""
    if rng is not None:
        lo, hi = (float(v) for v in rng)
        if lo > hi:
            raise ValueError(f"{fname}(): max must be larger than min, got range ({lo}, {hi})")
    elif x.numel() == 0:
        lo, hi = 0.0, 1.0
    else:
        if isinstance(x._meta, Tracer):
            raise RuntimeError(f"{fname}(): without range= the edges come from the data, "
                               f"which must be concrete (not traced)")
        v = np.asarray(x.detach()._value)
        lo, hi = float(v.min()), float(v.max())
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"{fname}(): range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _bin_of(x: Tensor, edges: Tensor) -> tuple[Tensor, Tensor]:
    """Each value's bin among sorted ``edges`` (the last bin closed on the right) and whether
    it falls inside them."""
    nb = edges.shape[0] - 1
    pos = F.sub(F.searchsorted(edges, x, right=True), 1)
    pos = F.clamp(pos, 0, max(nb - 1, 0))
    inside = F.logical_and(F.ge(x, edges[0]), F.le(x, edges[-1]))
    return pos, inside


def _hist_edges(fname: str, x: Tensor, bins: Any, rng: Any) -> Tensor:
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.shape[0] < 1:
            raise RuntimeError(f"{fname}(): bins tensor should have one dimension and at least "
                               f"1 element, got shape {list(bins.shape)}")
        if bins.dtype != x.dtype:
            raise RuntimeError(f"{fname}(): input tensor and bins tensors should have the same "
                               f"dtype, got {x.dtype} and {bins.dtype}")
        return bins.detach()
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins <= 0:
        raise RuntimeError(f"{fname}(): bins must be a positive int or a 1-d tensor of edges, "
                           f"got {bins!r}")
    lo, hi = _hist_range(fname, x, rng)
    return F.linspace(lo, hi, int(bins) + 1, dtype=x.dtype, device=x.device)


def _hist_input(fname: str, input: Tensor, weight: Any) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{fname}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if not input.is_floating_point():
        raise RuntimeError(f"{fname}(): \"{fname}\" not implemented for '{input.dtype}' (a "
                           f"floating point input is expected)")
    if weight is not None:
        if not isinstance(weight, Tensor) or weight.dtype != input.dtype:
            raise RuntimeError(f"{fname}(): weight must be a tensor of the input's dtype "
                               f"({input.dtype})")


def histogram(input: Tensor, bins: Any = 100, *, range: Any = None,  # noqa: A002
              weight: Tensor | None = None, density: bool = False) -> Any:
    """torch.histogram: counts (or summed ``weight``) of ``input``'s values in ``bins`` equal
    bins over ``range`` (default: the data's extremes) or between the edges of a 1-d ``bins``
    tensor; the last bin includes its right edge, values outside are left out. Returns
    ``(hist, bin_edges)`` in the input's dtype; ``density`` divides by total times width."""
    _hist_input("histogram", input, weight)
    if isinstance(bins, Tensor) and range is not None:
        raise TypeError("histogram(): range= is only accepted with an int number of bins")
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError(f"histogram(): weight should have the same shape as input, got "
                           f"{list(weight.shape)} and {list(input.shape)}")
    edges = _hist_edges("histogram", input, bins, range)
    hist = _histdd([F.reshape(input.detach(), (-1,))], [edges],
                   None if weight is None else F.reshape(weight, (-1,)), density, input.dtype)
    return _HISTOGRAM(hist, edges)


def _histdd(cols: list, edges: list, weight: Any, density: bool, dtype: Any) -> Tensor:
    nbins = [e.shape[0] - 1 for e in edges]
    total = int(np.prod(nbins))
    lin, ok = None, None
    for c, e, nb in zip(cols, edges, nbins):
        pos, inside = _bin_of(c, e)
        lin = pos if lin is None else F.add(F.mul(lin, nb), pos)
        ok = inside if ok is None else F.logical_and(ok, inside)
    n = cols[0].shape[0]
    w = F.full((n,), 1, dtype=dtype) if weight is None else weight
    w = F.where(ok, w, zeros((n,), dtype=dtype)) if n else w
    hist = F.scatter_add(zeros((total,), dtype=dtype), 0, lin, w) if total \
        else zeros((0,), dtype=dtype)
    hist = F.reshape(hist, tuple(nbins))
    if density:
        widths = None
        for k, e in enumerate(edges):
            d = F.sub(e[1:], e[:-1])
            shape = [1] * len(edges)
            shape[k] = nbins[k]
            d = F.reshape(d, tuple(shape))
            widths = d if widths is None else F.mul(widths, d)
        hist = F.div(hist, F.mul(F.sum(hist), widths))
    return hist


def histogramdd(input: Tensor, bins: Any = 10, *, range: Any = None,  # noqa: A002
                weight: Tensor | None = None, density: bool = False) -> Any:
    """torch.histogramdd: a D-dimensional histogram of the points in ``input``'s last dim
    (``(..., D)``); ``bins`` an int, D ints or D 1-d edge tensors; ``range`` 2 D numbers
    (min, max per dim). Returns ``(hist, bin_edges)`` with a list of D edge tensors."""
    _hist_input("histogramdd", input, weight)
    if input.ndim < 1:
        raise RuntimeError("histogramdd(): input should have at least 1 dimension")
    D = input.shape[-1]
    pts = F.reshape(input.detach(), (-1, D))
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        bins = [int(bins)] * D
    bins = list(bins)
    if len(bins) != D:
        raise RuntimeError(f"histogramdd(): expected {D} sequences of bin edges for each "
                           f"dimension, but got {len(bins)}")
    if range is not None:
        range = list(range)
        if len(range) != 2 * D:
            raise RuntimeError(f"histogramdd(): expected range to have {2 * D} elements, got "
                               f"{len(range)}")
    cols = [pts[:, k] for k in builtins_range(D)]
    edges = [_hist_edges("histogramdd", cols[k], bins[k],
                         None if range is None else range[2 * k:2 * k + 2])
             for k in builtins_range(D)]
    w = None
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(f"histogramdd(): weight should have the shape of input without "
                               f"its last dim, {list(input.shape[:-1])}, got "
                               f"{list(weight.shape)}")
        w = F.reshape(weight, (-1,))
    hist = _histdd(cols, edges, w, density, input.dtype)
    return _HISTOGRAMDD(hist, edges)


def unravel_index(indices: Tensor, shape: Any) -> tuple[Tensor, ...]:
    """torch.unravel_index: the coordinates in ``shape`` of flat (row-major) ``indices``, one
    tensor per dim of ``shape``, each of ``indices``' shape (values taken modulo the size,
    as PyTorch: ``-1`` is the last element)."""
    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index(): argument 'indices' must be Tensor, not "
                        f"{type(indices).__name__}")
    if indices.dtype.is_floating_point or indices.is_complex() or indices.dtype is _dt.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError(f"unravel_index(): 'shape' cannot have negative values, but got "
                         f"{shape}")
    if any(s == 0 for s in shape) and indices.numel():
        raise ValueError(f"unravel_index(): an index cannot be unravelled into shape {shape} "
                         f"with no elements")
    idx = cast(indices, np.dtype(np.int64))
    out = []
    for s in reversed(shape):
        out.append(F.remainder(idx, s))
        idx = F.floor_divide(idx, s)
    return tuple(reversed(out))


def _spacings(fname: str, input: Tensor, spacing: Any, dims: list) -> list:
    """Per differentiated dim: a float step or a 1-d coordinate tensor."""
    if isinstance(spacing, (int, float, np.integer, np.floating)) and \
            not isinstance(spacing, bool):
        return [float(spacing)] * len(dims)
    if isinstance(spacing, Tensor) and spacing.ndim == 0:
        return [spacing.item()] * len(dims)
    sp = list(spacing)
    if len(sp) == 1 and not isinstance(sp[0], Tensor) and len(dims) != 1:
        return [float(sp[0])] * len(dims)
    if len(sp) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                           f"it's spacing and dim arguments to have the same length, but got "
                           f"a spacing argument of length {len(sp)} and a dim argument of "
                           f"length {len(dims)}.")
    out = []
    for s, d in zip(sp, dims):
        if isinstance(s, Tensor) and s.ndim == 1:
            if s.shape[0] != input.shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same "
                                   f"device and of size {input.shape[d]} along dim {d}, got "
                                   f"{s.shape[0]}")
            out.append(s)
        elif isinstance(s, Tensor):
            out.append(s.item())
        else:
            out.append(float(s))
    return out


def gradient(input: Tensor, *, spacing: Any = 1, dim: Any = None,
             edge_order: int = 1) -> tuple[Tensor, ...]:
    """torch.gradient: the derivative along each of ``dim`` (all by default) by second-order
    central differences inside and first- or second-order (``edge_order``) one-sided ones at
    the ends; ``spacing`` a step (per dim) or the coordinates (1-d tensors, one per dim).
    Integer inputs give the default float dtype. One tensor per dim."""
    if not isinstance(input, Tensor):
        raise TypeError(f"gradient(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, got "
                           f"{edge_order}")
    nd = input.ndim
    if spacing is None:
        spacing = 1
    if dim is None:
        dims = list(builtins_range(nd))
        if not isinstance(spacing, (int, float, Tensor)) and len(list(spacing)) not in (1, nd):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, "
                               f"or a list of length equal to 'self.dim() = {nd}', since dim "
                               f"argument was not given, but got a list of length "
                               f"{len(list(spacing))}")
    else:
        dims = [dim] if isinstance(dim, (int, np.integer)) else list(dim)
        dims = [wrap_dim("gradient", int(d), nd) for d in dims]
    if dim is None and not isinstance(spacing, (int, float, Tensor)) and \
            len(list(spacing)) == 1 and nd != 1:
        spacing = [list(spacing)[0]] * nd if not isinstance(list(spacing)[0], Tensor) \
            else spacing
    x = input if input.is_floating_point() or input.is_complex() else \
        cast(input, _dt.get_default_dtype().np)
    steps = _spacings("gradient", input, spacing, dims)
    return tuple(_grad_along(x, d, s, edge_order) for d, s in zip(dims, steps))


def _grad_along(x: Tensor, d: int, h: Any, edge_order: int) -> Tensor:
    n = x.shape[d]
    if n < edge_order + 1:
        raise RuntimeError("torch.gradient expected each dimension size to be at least "
                           "edge_order+1")

    def sl(a: int, b: int) -> Tensor:
        return F.narrow(x, d, a, b - a)

    def along(v: Tensor) -> Tensor:  # a 1-d coefficient tensor broadcast along dim d
        shape = [1] * x.ndim
        shape[d] = v.shape[0]
        return F.reshape(cast(v, x._meta.dtype), tuple(shape))

    if not isinstance(h, Tensor):  # uniform steps
        mid = F.div(F.sub(sl(2, n), sl(0, n - 2)), 2.0 * h) if n > 2 else None
        if edge_order == 1:
            first = F.div(F.sub(sl(1, 2), sl(0, 1)), h)
            last = F.div(F.sub(sl(n - 1, n), sl(n - 2, n - 1)), h)
        else:
            first = F.div(F.add(F.add(F.mul(sl(0, 1), -1.5), F.mul(sl(1, 2), 2.0)),
                                F.mul(sl(2, 3), -0.5)), h)
            last = F.div(F.add(F.add(F.mul(sl(n - 3, n - 2), 0.5),
                                     F.mul(sl(n - 2, n - 1), -2.0)),
                               F.mul(sl(n - 1, n), 1.5)), h)
    else:  # coordinates: NumPy's / PyTorch's non-uniform formulas
        c = h.detach()
        dx = F.sub(c[1:], c[:-1])
        mid = None
        if n > 2:
            hl, hr = dx[:-1], dx[1:]
            a = F.neg(F.div(hr, F.mul(hl, F.add(hl, hr))))
            b = F.div(F.sub(hr, hl), F.mul(hl, hr))
            cc = F.div(hl, F.mul(hr, F.add(hl, hr)))
            mid = F.add(F.add(F.mul(along(a), sl(0, n - 2)), F.mul(along(b), sl(1, n - 1))),
                        F.mul(along(cc), sl(2, n)))
        if edge_order == 1:
            first = F.div(F.sub(sl(1, 2), sl(0, 1)), along(dx[:1]))
            last = F.div(F.sub(sl(n - 1, n), sl(n - 2, n - 1)), along(dx[-1:]))
        else:
            h1, h2 = dx[0:1], dx[1:2]
            a = F.neg(F.div(F.add(F.mul(h1, 2.0), h2), F.mul(h1, F.add(h1, h2))))
            b = F.div(F.add(h1, h2), F.mul(h1, h2))
            cc = F.neg(F.div(h1, F.mul(h2, F.add(h1, h2))))
            first = F.add(F.add(F.mul(along(a), sl(0, 1)), F.mul(along(b), sl(1, 2))),
                          F.mul(along(cc), sl(2, 3)))
            h1, h2 = dx[-2:-1], dx[-1:]
            a = F.div(h2, F.mul(h1, F.add(h1, h2)))
            b = F.neg(F.div(F.add(h2, h1), F.mul(h1, h2)))
            cc = F.div(F.add(F.mul(h2, 2.0), h1), F.mul(h2, F.add(h1, h2)))
            last = F.add(F.add(F.mul(along(a), sl(n - 3, n - 2)),
                               F.mul(along(b), sl(n - 2, n - 1))),
                         F.mul(along(cc), sl(n - 1, n)))
    parts = [first] + ([mid] if mid is not None else []) + [last]
    return F.cat(parts, d)
