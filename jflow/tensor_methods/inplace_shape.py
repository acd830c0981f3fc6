"""In-place shape changes (``squeeze_``, ``unsqueeze_``, ``transpose_``, ``t_``), ``unfold``
(a strided view of windows) and ``get_device``.

The in-place shape changes rebase this tensor on the reshaped result (its version bumps, its
history continues as PyTorch's); on a view they are refused (a view aliases its base, whose
shape cannot change under it).
"""

from __future__ import annotations

from typing import Any

from .._dims import wrap_dim
from ..autograd.graph import rebase_inplace
from ..functional import F
from ..tensor import Tensor
from ..views import as_strided, layout_of, unview
from ._forward import _as_method_signature


def _rebase(self: Tensor, out: Tensor, fname: str) -> Tensor:
    """``self`` takes ``out``'s value and history though its shape differs (``out`` is
    first made a plain tensor: a view of ``self`` would replay from the changed base)."""
    if out._aliases:
        out = unview(out)
    return rebase_inplace(self, out, fname)


def _reshaped_inplace(fname: str, view_fn: Any):
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if self._aliases:
            raise RuntimeError(f"{fname}(): changing the shape of a view in place is not "
                               f"supported in jflow (the view aliases its base); call it on "
                               f"a clone() or use the out-of-place form")
        out = view_fn(self, *args, **kwargs)
        return _rebase(self, out, fname)
    method.__name__ = fname
    method.__doc__ = (f"In place ``{fname[:-1]}``: this tensor takes the new shape (its "
                      f"version bumps, its history continues as PyTorch's).")
    method.__signature__ = _as_method_signature(  # type: ignore[attr-defined]
        getattr(F, fname[:-1]))
    return method


Tensor.squeeze_ = _reshaped_inplace("squeeze_", lambda self, *a, **k: F.squeeze(self, *a, **k))
Tensor.unsqueeze_ = _reshaped_inplace("unsqueeze_",
                                      lambda self, *a, **k: F.unsqueeze(self, *a, **k))
Tensor.transpose_ = _reshaped_inplace("transpose_",
                                      lambda self, *a, **k: F.transpose(self, *a, **k))
Tensor.t_ = _reshaped_inplace("t_", lambda self: F.t(self))


def get_device(self: Tensor) -> int:
    """The device index: -1 on the CPU (as PyTorch), the ordinal on an accelerator."""
    d = self.device
    return -1 if d.type == "cpu" else int(d.index or 0)


def unfold(self: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Every slice of ``size`` elements along ``dimension``, ``step`` apart, as a new last
    dim: a view of this tensor (writes reach it), as ``Tensor.unfold``."""
    nd = self._meta.ndim
    d = wrap_dim("unfold", dimension, nd, arg="dimension")
    lay = layout_of(self)
    sizes, strides = list(lay.sizes), list(lay.strides)
    n = sizes[d] if nd else 1
    if size < 0:
        raise RuntimeError(f"unfold(): size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(f"unfold(): maximum size for tensor at dimension {d} is {n} but "
                           f"size is {size}")
    if step <= 0:
        raise RuntimeError(f"unfold(): step is {step} but must be > 0")
    st = strides[d] if nd else 1
    count = (n - size) // step + 1
    if nd:
        sizes[d], strides[d] = count, st * step
    return as_strided(self, tuple(sizes) + (size,), tuple(strides) + (st,), lay.offset)


Tensor.get_device, Tensor.unfold = get_device, unfold
