"""PyTorch's remaining ``Tensor`` methods that jflow answers with what it has: the legacy
constructor ``new``, ``module_load`` (``load_state_dict``'s hook), ``as_subclass``,
``dim_order``, ``layout`` / ``to_dense`` / ``dequantize`` (a dense tensor is already
strided and dense), ``swapaxes_`` / ``swapdims_``, the ``unsafe_`` splits, ``__reversed__``,
Python 2's operator names, and the method forms of functions jflow has at top level
(``nonzero_static``, ``histogram``, ``orgqr``, ``ormqr``, ``as_strided_scatter``; the removed
``eig`` / ``lstsq`` / ``solve`` / ``symeig`` and ``reinforce``, which raise as PyTorch does, and
``volatile``, which warns).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import removed as _removed
from ..composites import as_strided_scatter, nonzero_static, orgqr
from ..creation import empty
from ..functional import F
from ..linalg import householder_product
from ..memory_format import channels_last, memory_format, strided
from ..storage import TypedStorage, UntypedStorage, asarray
from ..tensor import Size, Tensor, _as_class
from ..views import unview
from ..views.alias import _ALIAS
from .compositions import histogram
from .factories import new_tensor
from .inplace_shape import _reshaped_inplace

__all__ = ["new", "module_load", "as_subclass", "dim_order", "to_dense", "dequantize",
           "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "ormqr"]

_INTS = (int, np.integer)


# -- new: PyTorch's legacy constructor ----------------------------------------------------------

_NEW_FORMS = ("new() received an invalid combination of arguments; expected one of: "
              "(*, device), (Storage storage), (Tensor other), (tuple of ints size, *, "
              "device), (object data, *, device)")


def new(self: Tensor, *args: Any, device: Any = None, **kwargs: Any) -> Tensor:
    """PyTorch's legacy constructor, in this tensor's dtype and on its device (or
    ``device``):

    - ``x.new()``: an empty tensor; ``x.new(2, 3)`` / ``x.new(flow.Size([2, 3]))``: that
      shape, zeros (PyTorch leaves it uninitialised; jflow arrays have no such memory);
    - ``x.new(data)`` (a list, tuple or array): a copy of ``data`` (a tuple is data, as in
      PyTorch: ``x.new((2, 3))`` is ``[2., 3.]``); a lone number is refused;
    - ``x.new(other)``: ``other`` itself as an alias (it must have ``x``'s dtype and device;
      writes into either reach the other, gradients flow to ``other``);
    - ``x.new(storage)``: the storage's bytes as elements of ``x``'s dtype (a copy: jflow's
      storages are read-only).

    ``dtype=`` and ``requires_grad=`` are refused, as PyTorch refuses them (use
    ``new_tensor`` / ``new_empty``)."""
    if kwargs:
        raise TypeError(f"{_NEW_FORMS}; got keyword(s) {sorted(kwargs)}")
    dev = self.device if device is None else device
    if not args:
        return empty(0, dtype=self.dtype, device=dev)
    first = args[0]
    if len(args) == 1 and isinstance(first, Tensor):
        if device is not None:
            raise TypeError(f"{_NEW_FORMS}; new(other) takes no device")
        if first.dtype != self.dtype or first.device != self.device:
            raise TypeError(f"new(other): expected a tensor of dtype {self.dtype} on "
                            f"{self.device} (got dtype {first.dtype} on {first.device})")
        return first.view(first.shape)
    if len(args) == 1 and isinstance(first, (UntypedStorage, TypedStorage)):
        return asarray(first, dtype=self.dtype, device=dev)
    if all(isinstance(a, _INTS) and not isinstance(a, bool) for a in args) or (
            len(args) == 1 and isinstance(first, Size)):
        sizes = tuple(first) if isinstance(first, Size) else args
        bad = [int(s) for s in sizes if s < 0]
        if bad:
            raise RuntimeError(f"new(): Trying to create tensor with negative dimension "
                               f"{bad[0]}: {[int(s) for s in sizes]}")
        return empty(*sizes, dtype=self.dtype, device=dev)
    if len(args) == 1:
        if isinstance(first, (bool, float, complex, np.bool_, np.floating, np.complexfloating)):
            raise TypeError(f"new(): data must be a sequence (got {type(first).__name__})")
        return new_tensor(self, first, device=dev)
    raise TypeError(f"{_NEW_FORMS}; got ({', '.join(type(a).__name__ for a in args)})")


# -- load_state_dict's hook, subclasses, layouts --------------------------------------------------

def module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """What ``nn.Module.load_state_dict`` puts in place of this parameter or buffer, as
    PyTorch's default: ``other.detach()`` with ``assign``, else ``self.copy_(other).detach()``
    (a subclass overrides it to load differently)."""
    if assign:
        return other.detach()
    return self.copy_(other).detach()


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """This tensor's value and history as an instance of ``cls`` (a ``Tensor`` subclass;
    ``cls.__init__`` is not called, as in PyTorch). Gradients flow back to this tensor.
    jflow's views are their own class, so the result holds the current value rather than
    aliasing it: a later in-place write into one is not seen by the other."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("as_subclass(): Creating a Tensor subclass from a class that does not "
                        "inherit from Tensor is not possible. Make sure your class inherits "
                        "from Tensor.")
    src = unview(self.view(self.shape))
    out = _as_class(src, cls, None)
    if src.grad_fn is not None:  # (which output of the node it is)
        out._output_nr = src._output_nr
    return out


def dim_order(self: Tensor, *, ambiguity_check: bool | list[Any] = False) -> tuple[int, ...]:
    """The order of the dims in memory, outermost first, from the strides jflow reports
    (row-major for a non-view tensor; a permuted view's permutation): PyTorch's algorithm.
    ``ambiguity_check=True`` raises when size-1 dims or equal strides allow several orders;
    a list of memory formats raises unless exactly one of them matches."""
    if not isinstance(ambiguity_check, bool):
        if not isinstance(ambiguity_check, list) or not all(
                isinstance(f, memory_format) for f in ambiguity_check):
            raise TypeError("The ambiguity_check argument must be a bool or a list of memory "
                            "formats.")
    sizes, strides = tuple(self.shape), tuple(self.stride())
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    check = ambiguity_check if isinstance(ambiguity_check, bool) else True
    several = any(a == b for a, b in zip(strides, strides[1:])) or 1 in sizes
    if check and several and sum(
            bool(self.is_contiguous(memory_format=f)) for f in formats) != 1:
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact "
                           "one of the given memory formats.")
    perm, ambiguous = _logical_to_physical(self, sizes, strides, bool(ambiguity_check))
    if ambiguous:
        raise RuntimeError("The tensor does not have unique dim order.")
    return tuple(perm)


def _logical_to_physical(t: Tensor, shape: tuple[int, ...], strides: tuple[int, ...],
                         check: bool) -> tuple[list[int], bool]:
    """PyTorch's ``compute_elementwise_output_logical_to_physical_perm`` for one tensor."""
    ndim = len(shape)
    if ndim <= 1:
        return list(range(ndim)), False
    is_contig = t.is_contiguous()
    is_cl = ndim == 4 and t.is_contiguous(memory_format=channels_last)
    if is_contig and not is_cl:
        return list(range(ndim)), False
    if is_cl and not is_contig:
        return [0, *range(2, ndim), 1], False

    def ge(a: int, b: int) -> bool:
        return b == 0 or (a != 0 and (a >= b or a % b == 0))

    def should_swap(a: int, b: int) -> int:
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if ge(shape[b], shape[a]) else 1
        if ge(sb, sa):
            return -1
        return 1 if ge(sa, sb) else 0

    perm = list(reversed(range(ndim)))
    for i in range(1, ndim):
        d1 = i
        for d0 in reversed(range(i)):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    ambiguous = check and any(should_swap(perm[i], perm[i + 1]) != -1
                              for i in range(ndim - 1))
    return list(reversed(perm)), ambiguous


def _layout(self: Tensor) -> Any:
    """``flow.strided``: every jflow tensor is dense (no sparse layouts)."""
    return strided


def to_dense(self: Tensor, dtype: Any = None, *, masked_grad: Any = None) -> Tensor:
    """This tensor (it is dense already), cast to ``dtype`` if one is given."""
    return self if dtype is None else self.to(dtype)


def dequantize(self: Tensor) -> Tensor:
    """PyTorch's answer for a tensor that is not quantized (jflow has no quantized ones): the
    values as float32 (this tensor itself when it is float32)."""
    return self.to(_dt.float32)


# -- the unsafe_ splits ---------------------------------------------------------------------------

def _unrestricted(pieces: Sequence[Tensor]) -> tuple[Tensor, ...]:
    """``split``'s views without PyTorch's refusal of recorded in-place writes into one of
    several views, and not reported as views (``_base`` is None), as the ``unsafe_`` forms
    are; they still alias the input, and a write is recorded as a write into it (so the
    gradients stay right where PyTorch's "may be silently incorrect")."""
    for p in pieces:
        if p._aliases:
            m = _ALIAS.__get__(p)
            m.multi = None
            m.origin = None
    return tuple(pieces)


def unsafe_chunk(self: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``chunk`` without the in-place restriction on its pieces (see ``_unrestricted``)."""
    return _unrestricted(self.chunk(chunks, dim))


def unsafe_split(self: Tensor, split_size: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """``split`` without the in-place restriction on its pieces."""
    return _unrestricted(self.split(split_size, dim))


def unsafe_split_with_sizes(self: Tensor, split_sizes: Sequence[int], dim: int = 0
                            ) -> tuple[Tensor, ...]:
    """``split_with_sizes`` without the in-place restriction on its pieces."""
    n = self.size(dim)
    if sum(int(s) for s in split_sizes) != n:  # (PyTorch's error, before splitting)
        raise RuntimeError(f"unsafe_split_with_sizes(): split_with_sizes expects split_sizes "
                           f"to sum exactly to {n} (input tensor's size at dimension {dim}), "
                           f"but got split_sizes={list(split_sizes)}")
    return _unrestricted(self.split_with_sizes(split_sizes, dim))


# -- method forms of jflow's functions ------------------------------------------------------

def _nonzero_static(self: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``flow.nonzero_static(self, size=..., fill_value=...)``."""
    if isinstance(fill_value, bool) or not isinstance(fill_value, _INTS):
        raise TypeError(f"nonzero_static(): argument 'fill_value' must be int, not "
                        f"{type(fill_value).__name__}")
    return nonzero_static(self, size=size, fill_value=fill_value)


def _orgqr(self: Tensor, input2: Tensor) -> Tensor:
    """``flow.orgqr(self, tau)``: ``linalg.householder_product``."""
    return orgqr(self, input2)


def ormqr(self: Tensor, input2: Tensor, input3: Tensor, left: bool = True,
          transpose: bool = False) -> Tensor:
    """``torch.ormqr``: ``op(Q) @ input3`` (``left``) or ``input3 @ op(Q)``, where ``Q`` is
    the full square product of the Householder reflectors in ``self`` with scales
    ``input2`` (``geqrf``'s outputs) and ``op`` its conjugate transpose with ``transpose``.
    ``Q`` is ``linalg.householder_product`` of the reflectors padded with identity ones, so
    gradients are that product's."""
    for name, t in (("input2", input2), ("input3", input3)):
        if not isinstance(t, Tensor):
            raise TypeError(f"ormqr(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if self.ndim < 2 or input3.ndim < 2:
        raise RuntimeError("ormqr(): input and input3 must have at least 2 dimensions")
    mn = input3.shape[-2] if left else input3.shape[-1]
    if self.shape[-2] != mn:
        raise RuntimeError(f"ormqr(): input.shape[-2] must equal input3.shape"
                           f"[{-2 if left else -1}] ({mn}), got {self.shape[-2]}")
    k = input2.shape[-1] if input2.ndim else 0
    if k > min(mn, self.shape[-1]):
        raise RuntimeError(f"ormqr(): input2.shape[-1] ({k}) must be at most min(input.shape"
                           f"[-2], input.shape[-1]) ({min(mn, self.shape[-1])})")
    a = self[..., :k]
    if k < mn:  # identity reflectors (tau 0) up to a square Q
        a = F.cat([a, a.new_zeros(*a.shape[:-1], mn - k)], -1)
        input2 = F.cat([input2, input2.new_zeros(*input2.shape[:-1], mn - k)], -1)
    q = householder_product(a, input2)
    if transpose:
        q = q.mH
    return q @ input3 if left else input3 @ q


def _as_strided_scatter(self: Tensor, src: Tensor, size: Sequence[int], stride: Sequence[int],
                        storage_offset: int | None = None) -> Tensor:
    """``flow.as_strided_scatter(self, src, size, stride, storage_offset)``."""
    return as_strided_scatter(self, src, size, stride, storage_offset)


def _histogram(self: Tensor, bins: Any = 100, *, range: Any = None, weight: Any = None,  # noqa: A002
               density: bool = False) -> Any:
    """``flow.histogram(self, bins, range=..., weight=..., density=...)``."""
    return histogram(self, bins, range=range, weight=weight, density=density)


def __reversed__(self: Tensor) -> Tensor:
    """``reversed(t)``: ``t.flip(0)`` (a 0-d tensor itself), as PyTorch."""
    return self if self.ndim == 0 else self.flip(0)


_REINFORCE = """reinforce() was removed.
Use torch.distributions instead.
See https://pytorch.org/docs/main/distributions.html

Instead of:

probs = policy_network(state)
action = probs.multinomial()
next_state, reward = env.step(action)
action.reinforce(reward)
action.backward()

Use:

probs = policy_network(state)
# NOTE: categorical is equivalent to what used to be called multinomial
m = torch.distributions.Categorical(probs)
action = m.sample()
next_state, reward = env.step(action)
loss = -m.log_prob(action) * reward
loss.backward()
"""


def reinforce(self: Tensor, reward: Any) -> Any:
    """Removed from PyTorch (0.4): raises its message, which shows the
    ``distributions`` replacement (``flow.distributions.Categorical`` here)."""
    raise RuntimeError(_REINFORCE)


def _volatile(self: Tensor) -> bool:
    """False, with PyTorch's warning: ``volatile`` was removed (use ``no_grad``)."""
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                  stacklevel=2)
    return False


def _removed_method(name: str) -> Any:
    fn = getattr(_removed, name)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = fn.__doc__
    return method


Tensor.new = new  # type: ignore[attr-defined]
Tensor.module_load = module_load  # type: ignore[attr-defined]
Tensor.as_subclass = as_subclass  # type: ignore[attr-defined]
Tensor.dim_order = dim_order  # type: ignore[attr-defined]
Tensor.layout = property(_layout)  # type: ignore[attr-defined]
Tensor.to_dense = to_dense  # type: ignore[attr-defined]
Tensor.dequantize = dequantize  # type: ignore[attr-defined]
Tensor.swapaxes_ = _reshaped_inplace("swapaxes_", lambda self, *a, **k: F.swapaxes(self, *a, **k))
Tensor.swapdims_ = _reshaped_inplace("swapdims_", lambda self, *a, **k: F.swapdims(self, *a, **k))
Tensor.unsafe_chunk = unsafe_chunk  # type: ignore[attr-defined]
Tensor.unsafe_split = unsafe_split  # type: ignore[attr-defined]
Tensor.unsafe_split_with_sizes = unsafe_split_with_sizes  # type: ignore[attr-defined]
Tensor.nonzero_static = _nonzero_static  # type: ignore[attr-defined]
Tensor.orgqr = _orgqr  # type: ignore[attr-defined]
Tensor.ormqr = ormqr  # type: ignore[attr-defined]
Tensor.as_strided_scatter = _as_strided_scatter  # type: ignore[attr-defined]
Tensor.histogram = _histogram  # type: ignore[attr-defined]
Tensor.__reversed__ = __reversed__  # type: ignore[attr-defined]
Tensor.reinforce = reinforce  # type: ignore[attr-defined]
Tensor.volatile = property(_volatile)  # type: ignore[attr-defined]
# Python 2's operator names, which torch.Tensor still has
Tensor.__nonzero__ = Tensor.__bool__  # type: ignore[attr-defined]
Tensor.__long__ = Tensor.__int__  # type: ignore[attr-defined]
Tensor.__div__ = Tensor.__truediv__  # type: ignore[attr-defined]
Tensor.__idiv__ = Tensor.__itruediv__  # type: ignore[attr-defined]
for _name in ("eig", "lstsq", "solve", "symeig"):
    setattr(Tensor, _name, _removed_method(_name))
for _f, _n in ((_nonzero_static, "nonzero_static"), (_orgqr, "orgqr"),
               (_as_strided_scatter, "as_strided_scatter"), (_histogram, "histogram")):
    _f.__name__ = _f.__qualname__ = _n
del _f, _n, _name
