"""Views that alias their base, on immutable arrays (functionalization; DESIGN §10).

A PyTorch view shares memory with its base, so ``y[0].add_(1)`` changes ``y``. A JAX array
cannot be shared and written, so a jflow view shares *identity* instead: it is a
:class:`View` — a ``Tensor`` whose record (:class:`Alias`) names its base and the chain of
view steps that derive it from the base. Then:

* **reading** a view whose base changed since it was last read (the base's version moved)
  replays the chain on the base's current value — through the ops themselves, so the value,
  the autograd history (PyTorch regenerates a view's ``grad_fn`` the same way) and global
  tensors' SBP all follow;
* **writing** into a view (every in-place op and ``__setitem__`` ends in
  :func:`jflow.autograd.graph.rebase_inplace`, which hands views to :func:`write`) scatters
  the view's new value into the base with an op on the tape — ``setitem`` for slices, the
  inverse permutation / reshape for bijective views, an element scatter at the layout's
  positions otherwise — and bumps the base's version, so every other view of it refreshes
  on its next read and autograd's saved-tensor check fires where PyTorch's would (a view
  shares its base's version counter). That is PyTorch's CopySlices: the base's gradient
  accounts for the overwritten region.

Only views pay: a plain tensor's fields are slots, a view's are properties that check one
version number. The base never points at its views, so nothing grows with the number of
views made (a training loop makes thousands).
"""

from __future__ import annotations

import copy
from typing import Any

import jax
import numpy as np

from .. import tensor as _tensor
from ..autograd.grad_mode import _set as _set_grad
from ..autograd.grad_mode import is_grad_enabled
from ..autograd.graph import keep_original_self, rebase_inplace
from ..device import device as _device
from ..lazy_values import LazyRef, pending_device, raw, set_raw
from ..ops import get as _get_op
from ..sharding.sbp import broadcast as _broadcast
from ..tensor import Tensor, _flatten, _unflatten, _wrap, mark_constant
from . import basic_index
from .layout import (
    DTYPE_STEPS,
    STEP_LAYOUT,
    Layout,
    as_basic_index,
    contiguous,
    flat_index,
    overlaps,
)

__all__ = ["View", "Alias", "alias", "detach", "write", "layout_of", "base_of", "unview"]

# the slots of every Tensor, read and written below the View properties
_VALUE = Tensor._value
_REQ = Tensor._requires_grad
_GRAD_FN = Tensor.grad_fn
_NR = Tensor._output_nr
_GLOBAL = Tensor._global
_ALIAS = Tensor._view

_reshape = _get_op("reshape").apply
_transpose = _get_op("transpose").apply
_squeeze = _get_op("squeeze").apply
_unsqueeze = _get_op("unsqueeze").apply
_expand = _get_op("expand").apply
_narrow = _get_op("narrow").apply
_slice = _get_op("slice").apply
_getitem = _get_op("getitem").apply
_setitem = _get_op("setitem").apply
_real, _imag, _conj = _get_op("real").apply, _get_op("imag").apply, _get_op("conj").apply
_complex = _get_op("complex").apply
_as_real, _as_complex = _get_op("view_as_real").apply, _get_op("view_as_complex").apply
_bitcast = _get_op("bitcast").apply


class Alias:
    """What a view is: its ``base`` (never itself a view), the view ``steps`` from the base
    (``(kind, args)`` pairs), the base version it last read (``seen``), and how autograd
    treats it: ``grad`` is True for a view made with grad mode on (writes are recorded),
    False for one made under ``no_grad`` (PyTorch refuses to record writes into it when its
    base requires grad), None for ``detach()`` / ``.data`` (shares values, never tracked).
    ``multi`` names the op when the view is (or derives from) one of several views one op
    returned (split / chunk / unbind): PyTorch refuses recorded writes into those."""

    __slots__ = ("base", "steps", "seen", "grad", "multi", "origin", "_layout")

    def __init__(self, base: Tensor, steps: tuple, grad: bool | None,
                 multi: str | None = None, origin: Tensor | None = None) -> None:
        self.base = base
        self.steps = steps
        self.seen = base._version
        self.grad = grad
        self.multi = multi
        self.origin = origin  # what ``_base`` reports (None: not a view to PyTorch)
        self._layout: Layout | None = None

    def layout(self) -> Layout:
        """The strided layout over the base (computed on first use, then kept)."""
        lay = self._layout
        if lay is None:
            lay = contiguous(self.base._meta.shape)
            for kind, args in self.steps:
                lay = STEP_LAYOUT[kind](lay, *args)
            self._layout = lay
        return lay


def _sync(v: View, m: Alias) -> None:
    """Replay ``m``'s steps on the base's current value and take the result's fields."""
    base = m.base
    record = bool(m.grad) and base._requires_grad
    prev = is_grad_enabled()
    _set_grad(record)
    try:
        x = _replay(base, m.steps)
    finally:
        _set_grad(prev)
    _VALUE.__set__(v, x._meta)  # (x is a plain tensor; in lazy mode still pending)
    _GLOBAL.__set__(v, x._global)
    node = x.grad_fn
    if node is not None:
        _GRAD_FN.__set__(v, node)
        _NR.__set__(v, x._output_nr)
        _REQ.__set__(v, True)
    else:  # a leaf view keeps a requires_grad_() of its own; a former history is gone
        if _GRAD_FN.__get__(v) is not None:
            _REQ.__set__(v, False)
        _GRAD_FN.__set__(v, None)
    m.seen = base._version


def _fresh(v: View) -> None:
    m = _ALIAS.__get__(v)
    if m.seen != m.base._version:
        _sync(v, m)


def _field(slot: Any, doc: str) -> property:
    get, set_ = slot.__get__, slot.__set__

    def fget(self: View) -> Any:
        m = _ALIAS.__get__(self)
        if m.seen != m.base._version:
            _sync(self, m)
        return get(self)

    def fset(self: View, value: Any) -> None:
        _fresh(self)
        set_(self, value)
    return property(fget, fset, doc=doc)


def _get_value(self: View) -> Any:
    m = _ALIAS.__get__(self)
    if m.seen != m.base._version:
        _sync(self, m)
    return _slot(self)


def _slot(self: View) -> Any:
    """The view's own value; a view made from a lazy op's result (jflow.lazy_mode) holds its
    pending value until read: it is computed here."""
    v = _VALUE.__get__(self)
    if v.__class__ is LazyRef:
        v = v.get()
        _VALUE.__set__(self, v)
    return v


def _set_value(self: View, value: Any) -> None:
    """Install a value as this view's current one without writing the base (what flow.jit
    does while it traces: it restores the old value after). Commit it with a version bump."""
    _VALUE.__set__(self, value)
    m = _ALIAS.__get__(self)
    m.seen = m.base._version


def _get_version(self: View) -> int:
    return _ALIAS.__get__(self).base._version


def _set_version(self: View, version: int) -> None:
    """Bumping a view's version (``t._value = v; t._version += 1``, how optimizers and
    compiled steps write state) commits the view's current value to its base."""
    m = _ALIAS.__get__(self)
    if version == m.base._version:
        return
    value = _wrap(_slot(self))
    _GLOBAL_SET(value, _GLOBAL.__get__(self))
    prev = is_grad_enabled()
    _set_grad(False)
    try:
        _write_base(m, value, "Tensor._version")
    finally:
        _set_grad(prev)
    m.base._version = version
    m.seen = version


_GLOBAL_SET = _GLOBAL.__set__


class View(Tensor):
    """A tensor that aliases elements of another (its base): see the module docstring.

    Same slots as ``Tensor`` (so an op's output becomes a view by a class change, no copy);
    the fields a write elsewhere can change are properties that refresh first.
    """

    __slots__ = ()
    _aliases = True

    _value = property(_get_value, _set_value)
    _version = property(_get_version, _set_version)
    _requires_grad = _field(_REQ, "requires grad (refreshed from the base)")
    grad_fn = _field(_GRAD_FN, "the autograd node (refreshed from the base)")
    _output_nr = _field(_NR, "which output of grad_fn (refreshed from the base)")
    _global = _field(_GLOBAL, "placement and SBP (refreshed from the base)")

    def _write_through(self, result: Tensor, fname: str) -> Tensor:
        return write(self, result, fname)

    @property
    def device(self) -> Any:
        """As ``Tensor.device``; a view pending in lazy mode answers without running its
        segment (``segment.pending_device``: metadata never runs anything)."""
        v = self._pending_or_value()
        if v.__class__ is LazyRef and self._global is None:
            d = pending_device(v)
            if d is not None:
                return _device.from_jax(d)
        return Tensor.device.fget(self)

    def _pending_or_value(self) -> Any:
        """The view's current value without computing a pending one (jflow.lazy_mode): its
        own slot while the base has not been written since (a lazy value stays pending),
        else the value replayed from the base."""
        m = _ALIAS.__get__(self)
        if m.seen != m.base._version:
            _sync(self, m)  # (its replay ops record in lazy mode: nothing runs)
        return _VALUE.__get__(self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled / deep-copied as a plain tensor holding the view's current value (the
        copy owns its elements, as a deep copy in PyTorch does)."""
        t = _wrap(self._value)
        t._global = self._global
        t._requires_grad = self._requires_grad and self.grad_fn is None
        return _same, (t,)

    def detach_(self) -> Tensor:
        if _ALIAS.__get__(self).grad is not None:
            raise RuntimeError("detach_(): can't detach views in-place; use detach() instead")
        return Tensor.detach_(self)


def _deep_copy_view(v: View, memo: dict) -> View:
    """``copy.deepcopy`` of a view (not the result of an op that requires grad: Tensor's
    ``__deepcopy__`` refused that): an alias, by the same steps, of the copy of its base —
    the copy the base gets in the same deep copy (PyTorch copies a storage once per deep
    copy, so tensors that alias each other alias each other's copies) — with no ``_base``
    (PyTorch's copy is not a view either). A base that is the result of an op
    (``y.detach()``'s base ``y``) is copied as elements only, for this view."""
    m = _ALIAS.__get__(v)
    base = m.base
    if base.grad_fn is None:
        base = copy.deepcopy(base, memo)
    else:
        key = ("jflow.views: the elements of", id(base))
        if key not in memo:
            memo[key] = _wrap(base._value)
            memo[key]._global = base._global
        base = memo[key]
    out = object.__new__(View)
    _VALUE.__set__(out, v._value)
    _GLOBAL.__set__(out, v._global)
    _REQ.__set__(out, v._requires_grad)
    _GRAD_FN.__set__(out, None)
    out._grad = None
    # (no ``_base``, as PyTorch's copy: it shares a copied storage without being a view)
    _ALIAS.__set__(out, Alias(base, m.steps, m.grad, m.multi, None))
    return out


_tensor.DEEP_COPY_VIEW[0] = _deep_copy_view


def _same(t: Tensor) -> Tensor:
    """Unpickling a view: the plain tensor it was pickled as."""
    return t


# a view flattened into JAX (jax.jit / vmap arguments) comes back as a plain tensor
jax.tree_util.register_pytree_node(View, _flatten, _unflatten)


# -- making views -------------------------------------------------------------------------------

def alias(out: Tensor, src: Tensor, kind: str, args: tuple, multi: str | None = None
          ) -> Tensor:
    """Make ``out`` (the result of view step ``(kind, args)`` on ``src``) a view of src's
    base. ``out`` is returned (now a :class:`View`). ``multi``: the op returned several
    views (see :class:`Alias`)."""
    if out is src:
        return out
    if src._aliases:
        m = _ALIAS.__get__(src)
        grad = m.grad
        if grad:
            grad = is_grad_enabled()
        base = m.base
        steps = (kind, args)
        steps = (steps,) if kind == "as_strided" else m.steps + (steps,)
        multi = multi or m.multi
        origin = src if m.origin is None else m.origin  # (a detached tensor is _base)
    else:
        base, steps, grad, origin = src, ((kind, args),), is_grad_enabled(), src
    out.__class__ = View
    _ALIAS.__set__(out, Alias(base, steps, grad, multi, origin))
    return out


def detach(t: Tensor) -> Tensor:
    """``t.detach()``: shares ``t``'s values (a write into either shows in the other, as in
    PyTorch) but never joins the graph."""
    out = _wrap(t._value)
    out._global = t._global
    if t._aliases:
        m = _ALIAS.__get__(t)
        base, steps = m.base, m.steps
    else:
        base, steps = t, ()
    out.__class__ = View
    _ALIAS.__set__(out, Alias(base, steps, None))
    return out


def layout_of(t: Tensor) -> Layout:
    """``t``'s strided layout over its storage (a plain tensor is dense and contiguous)."""
    if t._aliases:
        return _ALIAS.__get__(t).layout()
    return contiguous(t._meta.shape)


def base_of(t: Tensor) -> Tensor | None:
    """PyTorch's ``_base``: the tensor a view was made from (None for a non-view, and for a
    ``detach()`` result, which PyTorch does not count as a view either)."""
    if t._aliases:
        return _ALIAS.__get__(t).origin
    return None


def unview(t: Tensor) -> Tensor:
    """A view as a plain tensor with the same current value and history (no longer aliasing
    anything); any other tensor unchanged. Used where a tensor becomes module state."""
    if not t._aliases:
        return t
    v = raw(t)  # (a pending value stays pending: in lazy mode a copy runs nothing)
    out = _wrap(v)
    if v.__class__ is LazyRef:
        set_raw(out, v)
    out._global = t._global
    if t.grad_fn is not None:
        out.grad_fn, out._output_nr, out._requires_grad = t.grad_fn, t._output_nr, True
    else:
        out._requires_grad = t._requires_grad
    return out


# -- replaying and inverting the steps -----------------------------------------------------------

def _replay(base: Tensor, steps: tuple) -> Tensor:
    x = base
    for kind, args in steps:
        x = _STEP[kind](x, *args)
    return x


def _as_strided_read(base: Tensor, size: tuple, stride: tuple, offset: int) -> Tensor:
    lay = Layout(tuple(size), tuple(stride), offset)
    idx = _cached(_POSITIONS, (tuple(base._meta.shape), lay, base._global),
                  lambda: _positions(base, lay))
    if not idx:
        return _reshape(base, shape=tuple(size))
    return _getitem(base, list(idx), spec=",".join("t" * len(idx)))


_STEP = {
    "reshape": lambda x, shape: _reshape(x, shape=shape),
    "transpose": lambda x, perm: _transpose(x, perm=perm),
    "squeeze": lambda x, axes: _squeeze(x, axes=axes),
    "unsqueeze": lambda x, dim: _unsqueeze(x, dim=dim),
    "expand": lambda x, shape: _expand(x, shape=shape),
    "narrow": lambda x, dim, start, length: _narrow(x, dim=dim, start=start, length=length),
    "slice": lambda x, start, stop, step: _slice(x, start=start, stop=stop, step=step),
    "index": lambda x, spec: basic_index.get(x, spec),
    "as_strided": _as_strided_read,
    "real": lambda x: _real(x),
    "imag": lambda x: _imag(x),
    "conj": lambda x: _conj(x),
    "view_as_real": lambda x: _as_real(x),
    "view_as_complex": lambda x: _as_complex(x),
    "bitcast": lambda x, src, dst: _bitcast(x, dtype=np.dtype(dst)),
}

#: the inverse of each element-type step: (the step's input, the view's new value) -> the
#: step's input with that value written through
_PUT_DTYPE_STEP = {
    "real": lambda src, v: _complex(v, _imag(src)),
    "imag": lambda src, v: _complex(_real(src), v),
    "conj": lambda src, v: _conj(v),
    "view_as_real": lambda src, v: _as_complex(v),
    "view_as_complex": lambda src, v: _as_real(v),
    "bitcast": lambda src, v: _bitcast(v, dtype=src._meta.dtype),
}


def _positions(base: Tensor, lay: Layout) -> tuple[Tensor, ...]:
    """One index tensor per base dim, of the view's shape: where each view element lives."""
    shape = tuple(base._meta.shape)
    if not shape:
        return ()
    flat = flat_index(lay)
    total = int(np.prod(shape, dtype=np.int64))
    if flat.size and (flat.min() < 0 or flat.max() >= total):
        raise RuntimeError(f"as_strided: the view (size {list(lay.sizes)}, stride "
                           f"{list(lay.strides)}, storage offset {lay.offset}) reaches outside "
                           f"its base of {total} elements")
    out = []
    # (concrete arrays even while a trace makes the view: they are cached for later calls,
    # which a tracer would outlive)
    with jax.ensure_compile_time_eval():
        for a in np.unravel_index(flat, shape):
            t = mark_constant(_wrap(jax.device_put(np.asarray(a, np.int64))))
            g = base._global
            if g is not None:
                t = mark_constant(t.to_global(g[0], [_broadcast] * len(g[1])))
            out.append(t)
    return tuple(out)


def _spec_of(kind: str, args: tuple, ndim: int) -> str | None:
    """The basic-index spec that selects what a one-step slicing view selects."""
    if kind == "index":
        return args[0]
    if kind == "narrow":
        dim, start, length = args
        return ",".join(["s::"] * dim + [f"s{start}:{start + length}:"])
    if kind == "slice":
        return ",".join(f"s{a}:{b}:{c}" for a, b, c in zip(*args))
    return None


def _scatter_chain(base: Tensor, steps: tuple, value: Tensor) -> Tensor:
    """:func:`_scatter` for a chain with an element-type step (complex <-> float), whose
    layout counts other elements than the base's: write through one step at a time, from
    the last, each step inverted on its own (replayed) input."""
    if not steps:
        return value
    head, (kind, args) = steps[:-1], steps[-1]
    src = _replay(base, head)
    put = _PUT_DTYPE_STEP.get(kind)
    if put is not None:
        new_src = put(src, value)
    else:
        new_src = _scatter(src, Alias(src, ((kind, args),), None), value)
    return _scatter_chain(base, head, new_src)


def _scatter(base: Tensor, m: Alias, value: Tensor) -> Tensor:
    """The base with the view's elements replaced by ``value`` (an op on the tape)."""
    steps = m.steps
    shape = tuple(base._meta.shape)
    if not steps:
        return value
    if any(kind in DTYPE_STEPS for kind, _ in steps):
        return _scatter_chain(base, steps, value)
    if len(steps) == 1:
        kind, args = steps[0]
        spec = _spec_of(kind, args, len(shape))
        if spec is not None:
            return basic_index.put(base, value, spec)
        if kind in ("reshape", "squeeze", "unsqueeze") or (
                kind == "expand" and not overlaps(m.layout())):
            return _reshape(value, shape=shape)
        if kind == "transpose":
            inv = tuple(int(i) for i in np.argsort(args[0]))
            return _transpose(value, perm=inv)
    if not shape:
        return _reshape(value, shape=())
    lay = m.layout()
    plan = _cached(_PLANS, (shape, lay), lambda: as_basic_index(shape, lay))
    if plan is not None:  # slices of the base, maybe permuted: slice updates
        tshape = tuple(plan.shape[p] for p in plan.perm)
        if tuple(value._meta.shape) != tshape:
            value = _reshape(value, shape=tshape)
        if plan.perm != tuple(range(len(plan.perm))):
            value = _transpose(value, perm=tuple(int(i) for i in np.argsort(plan.perm)))
        return basic_index.put(base, value, plan.spec)
    idx = _cached(_POSITIONS, (shape, lay, base._global), lambda: _positions(base, lay))
    return _setitem(base, value, list(idx), spec=",".join("t" * len(shape)))


#: write plans and element positions per (base shape, layout), kept for the next view made
#: the same way (a training loop makes the same views every step); bounded
_PLANS: dict = {}
_POSITIONS: dict = {}
_CACHE_LIMIT = 1024


def _cached(cache: dict, key: Any, make: Any) -> Any:
    try:
        return cache[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable placement: no caching
        return make()
    if len(cache) >= _CACHE_LIMIT:
        del cache[next(iter(cache))]
    value = cache[key] = make()
    return value


def _write_base(m: Alias, value: Tensor, fname: str) -> None:
    base = m.base
    if overlaps(m.layout()):
        raise RuntimeError(f"{fname}: unsupported operation: more than one element of the "
                           f"written-to tensor refers to a single memory location. Please "
                           f"clone() the tensor before performing the operation.")
    rebase_inplace(base, _scatter(base, m, value), fname)


def write(v: View, result: Tensor, fname: str) -> Tensor:
    """``v`` takes ``result``'s value (an in-place op or ``__setitem__`` on a view): the
    base is updated through a scatter on the tape and every view of it sees the change."""
    m = _ALIAS.__get__(v)
    base = m.base
    enabled = is_grad_enabled()
    if enabled and m.grad is False and base._requires_grad:
        raise RuntimeError(f"{fname}: a view was created in no_grad mode and is being modified "
                           f"in place with grad mode enabled. Move both the view and the "
                           f"in-place op inside the no_grad block (if the write must not be "
                           f"tracked) or both outside (if it must).")
    record = enabled and m.grad is True and (base._requires_grad or result._requires_grad)
    if record and m.multi:
        raise RuntimeError(f"{fname}: this tensor is one of several views returned by "
                           f"{m.multi}() and is being modified in place; such outputs cannot "
                           f"be modified in place while autograd records (as in PyTorch). "
                           f"Use an out-of-place operation, or write under flow.no_grad()")
    if record and base.grad_fn is None and base._requires_grad:
        raise RuntimeError(f"{fname}: a view of a leaf Variable that requires grad is being "
                           f"used in an in-place operation (wrap it in flow.no_grad(), or "
                           f"clone the leaf first)")
    if base._global is not None and result._global != v._global:
        result = result.to_global(*v._global)  # the view keeps its placement and SBP
    old = base._version
    if record:
        node = result.grad_fn
        if node is not None and node.saved:  # the op's own read of the view was legitimate
            keep_original_self(node, v, old)  # (before the write: the view's old history)
        _write_base(m, result, fname)
        return v
    _set_grad(False)
    try:
        _write_base(m, result, fname)
    finally:
        _set_grad(enabled)
    if _GLOBAL.__get__(v) is None and result._global is None:  # no replay needed
        _VALUE.__set__(v, result._pending_or_value() if result._aliases else result._meta)
        m.seen = base._version
    return v


Tensor.detach = detach  # type: ignore[method-assign]
