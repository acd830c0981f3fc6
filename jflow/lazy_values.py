"""Lazy mode's values: what a pending result *is*, for the layers below the executor.

A value that lazy mode (:mod:`jflow.lazy_mode`) has recorded but not computed is a
:class:`LazyRef` — its abstract value, then its array — held in a :class:`LazyTensor`'s value
slot. Metadata (``shape``, ``dtype``, ``device``) is read from the ref and never runs
anything; reading the value asks the ref's segment for it (this thread's runs; another
thread's is computed on the reader's thread, the owner's left untouched).

This module is the boundary that lower layers see. It knows nothing of how a segment records
or runs: a ref's ``segment`` is the executor (:class:`jflow.lazy_mode.segment.Segment`), called
through three methods — ``flush()``, ``compute_elsewhere(ref)``, ``pending_device(ref)`` — and
the per-thread :data:`LOCAL` says which executor, if any, this thread records into. The
tape (``autograd/graph.py``), the views and the sharded executor import only this; the
recorder, the runner and the compile cache sit above them, beside the eager dispatch.
"""

from __future__ import annotations

import threading
from typing import Any

import jax

from .device import device as _device
from .tensor import Tensor, _flatten, _unflatten, new_tensor

__all__ = ["LazyRef", "LazyTensor", "Failure", "LOCAL", "HOOK", "ACTIVE", "raw", "set_raw",
           "new_lazy", "register_lazy_class", "pending_device"]

#: ``[True or None]``: set while some thread is in lazy mode (:mod:`jflow.lazy_mode`). An op's
#: generated eager dispatch reads it first (one list read: all that lazy mode costs eager
#: code), then this thread's ``LOCAL.active`` segment, whose ``add`` records the call and
#: returns its tensor(s), or NotImplemented to let it run as usual (a traced or global input)
HOOK: list[Any] = [None]
#: ``[n]``: threads in lazy mode now (``HOOK`` is set while it is above 0)
ACTIVE = [0]


class _Local(threading.local):
    """Per thread: ``segment`` (its pending calls, a ``Segment``), ``active`` (it, while the
    thread is lazy: the executor every op call of this thread records into). Class defaults:
    a read never misses (see grad_mode._State)."""

    segment: Any = None
    active: Any = None


#: this thread's lazy state (see :class:`_Local`)
LOCAL = _Local()


class Failure:
    """A failed segment's outputs: reading one raises the error."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


# (``t._meta`` is the raw ``_value`` slot — LazyTensor's ``_value`` property sits over it:
# how lazy mode reads and writes a pending tensor's value without computing it)


class LazyRef:
    """The value-to-be of one node output: its abstract value (``shape``, ``dtype``, ``ndim``
    read like an array's, so metadata never flushes) and, after the flush, its array."""

    __slots__ = ("aval", "shape", "dtype", "segment", "wire", "array")

    def __init__(self, aval: Any, segment: Any, node: int, index: int) -> None:
        self.aval = aval
        self.shape, self.dtype = aval.shape, aval.dtype
        self.segment = segment
        self.wire = (node, index)  # (which node's output: how a reader is wired)
        self.array: Any = None  # (a Failure when the segment failed)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    def get(self) -> Any:
        """The array: this thread's segment is flushed; another thread's is left alone (its
        owner may be recording into it or running it right now) and the value is computed
        here (``Segment.compute_elsewhere``)."""
        a = self.array
        if a is None:
            seg = self.segment
            if seg is not LOCAL.segment:
                return seg.compute_elsewhere(self)
            seg.flush()
            a = self.array
            if a is None:  # (read from inside the segment's own run: there is no value yet)
                raise RuntimeError("lazy mode: a pending value was read while the segment "
                                   "that computes it was running")
        if a.__class__ is Failure:
            raise RuntimeError("this lazy value was never computed: running the segment that "
                               "computes it failed") from a.error
        return a


def pending_device(ref: LazyRef) -> Any:
    """The JAX device a pending value of this thread's segment will be computed on, without
    running anything; None when that needs the run (``Segment.pending_device``)."""
    seg = ref.segment
    if ref.array is not None or seg is not LOCAL.segment:
        return None
    return seg.pending_device(ref)


class LazyTensor(Tensor):
    """A tensor whose value a pending segment computes. Reading ``_value`` flushes the segment;
    the tensor then becomes a plain :class:`~jflow.tensor.Tensor` holding the array."""

    __slots__ = ()

    def _get_value(self) -> Any:
        v = self._meta
        if v.__class__ is LazyRef:
            v = v.get()
            self._meta = v
            cls = self.__class__  # (plain already when another thread read it meanwhile)
            self.__class__ = _PLAIN_OF.get(cls, cls)
        return v

    def _set_value(self, v: Any) -> None:
        self._meta = v
        if v.__class__ is not LazyRef:
            self.__class__ = _PLAIN_OF[self.__class__]

    _value = property(_get_value, _set_value)

    @property
    def device(self) -> Any:
        """The device the pending value will be on, found without running anything
        (:func:`pending_device`); when that cannot be told, the segment runs (as a value
        read does)."""
        v = self._meta
        if v.__class__ is LazyRef and self._global is None and not self._aliases:
            d = pending_device(v)
            if d is not None:
                return _device.from_jax(d)
        return Tensor.device.fget(self)


# (what error messages print for a pending tensor's type — ``type(x).__name__`` — is the class
# the user knows, as for the twins of register_lazy_class; ``repr(LazyTensor)`` still says it)
LazyTensor.__name__ = "Tensor"

#: tensor class -> its pending twin (same slots, ``_value`` a flushing property) and back: an
#: in-place op in lazy mode makes its target (a tensor, a module's Parameter) pending without
#: changing what ``isinstance`` says about it
_LAZY_OF: dict[type, type] = {Tensor: LazyTensor}
_PLAIN_OF: dict[type, type] = {LazyTensor: Tensor}

# a lazy tensor flattened into JAX (jax.jit / vmap arguments, block_until_ready) is computed
# and comes back as a plain tensor
jax.tree_util.register_pytree_node(LazyTensor, _flatten, _unflatten)


def register_lazy_class(cls: type, unflatten: Any) -> type:
    """Give tensor subclass ``cls`` (slots only, no ``_value`` property of its own) a pending
    twin, so in-place ops on its instances record (``nn.Parameter``: optimizer updates).
    ``unflatten`` is cls's pytree unflatten (the twin flattens as cls does)."""
    twin = type(cls.__name__, (cls,), {"__slots__": (), "__module__": cls.__module__,
                                       "__qualname__": cls.__qualname__,
                                       "__doc__": cls.__doc__,
                                       "_value": LazyTensor.__dict__["_value"],
                                       "device": LazyTensor.__dict__["device"]})
    jax.tree_util.register_pytree_node(twin, _flatten, unflatten)
    _LAZY_OF[cls], _PLAIN_OF[twin] = twin, cls
    return twin


def raw(t: Tensor) -> Any:
    """``t``'s array, or its :class:`LazyRef` while pending (no flush): for metadata and for
    moving a value between tensors."""
    return t._pending_or_value() if t._aliases else t._meta


def set_raw(t: Tensor, v: Any) -> bool:
    """Make ``v`` (an array or a :class:`LazyRef`) ``t``'s value without computing anything;
    False when ``t``'s class has no pending twin (the caller reads ``v``'s value instead)."""
    if v.__class__ is LazyRef:
        twin = _LAZY_OF.get(t.__class__)
        if twin is None:
            if t.__class__ not in _PLAIN_OF:
                return False
        else:
            t.__class__ = twin
    elif t.__class__ in _PLAIN_OF:
        t.__class__ = _PLAIN_OF[t.__class__]
    t._meta = v
    return True


def new_lazy(ref: LazyRef) -> LazyTensor:
    """A new pending tensor holding ``ref`` (the fields of every new tensor:
    ``tensor.new_tensor``)."""
    return new_tensor(LazyTensor, ref)
