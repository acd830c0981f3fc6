"""``flow.UntypedStorage`` and ``flow.asarray``: PyTorch's byte storage and the tensor built on
one, enough for readers that map a file and build tensors from byte ranges of it
(``UntypedStorage.from_file(path, shared=False, nbytes=n)[a:b]`` then
``asarray(storage, dtype=uint8).view(dtype).reshape(shape)``, which is how the safetensors
package reads a ``.safetensors`` file for PyTorch).

jflow's tensors are immutable JAX arrays, so a storage here is **read-only**: a tensor built
from it holds a copy of its bytes (in-place ops on that tensor never reach the storage or the
file), and nothing writes into a storage (no ``__setitem__`` / ``fill_`` / ``copy_``;
``from_file(shared=True)``, whose point is writing back to the file, raises). Reading gives
PyTorch's values. See docs/porting.md.

A tensor's storage (``t.untyped_storage()``, ``t.storage()``) is its *storage root*'s
elements: a view's base, any other tensor itself (:func:`storage_root`). It reads the root's
current bytes, read-only, and its ``data_ptr()`` is where they are: the device buffer of the
root's current array (:func:`data_ptr`). Two tensors report the same storage exactly when a
write into one is seen by the other in jflow (a view and its base, the same tensor object);
two tensors that merely hold the same immutable array (``b = flow.tensor(a)``, a deep copy,
``p.copy_(src)``: an in-place op later re-points only one of them) get buffers of their own
the first time their address is asked for, so libraries that find tied tensors by
``untyped_storage().data_ptr()`` (safetensors' ``save_file``, transformers'
``id_tensor_storage``) see what jflow aliases. The address moves when an in-place op gives
the root a new array (PyTorch's stays until a ``resize_`` / ``set_``)."""

from __future__ import annotations

import os
import warnings
import weakref
from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from . import dtypes as _dt
from .creation import as_tensor
from .device import MetaValue as _MetaValue
from .device import device as _device
from .tensor import Tensor
from .views import layout_of
from .views.alias import _ALIAS

__all__ = ["UntypedStorage", "TypedStorage", "asarray", "storage_root", "data_ptr",
           "tensor_storage", "typed_storage", "storage_class"]


class UntypedStorage:
    """Bytes, as PyTorch's ``torch.UntypedStorage`` (read-only in jflow: see the module)."""

    __slots__ = ("_bytes",)

    def __init__(self, size: int = 0, *, device: Any = None) -> None:
        """``UntypedStorage(n)``: ``n`` zero bytes (PyTorch leaves them uninitialised)."""
        if device is not None and _device(device).type != "cpu":
            raise NotImplementedError(f"UntypedStorage: jflow's storages are host bytes; "
                                      f"device={device!r} is not supported")
        self._bytes = np.zeros(int(size), np.uint8)

    @classmethod
    def _of(cls, data: np.ndarray) -> UntypedStorage:
        out = object.__new__(cls)
        out._bytes = data
        return out

    @classmethod
    def from_file(cls, filename: Any, shared: bool = False, nbytes: int = 0) -> UntypedStorage:
        """The first ``nbytes`` bytes of ``filename``, memory-mapped read-only (as PyTorch's
        ``shared=False``: the file is never changed). ``shared=True`` raises: it exists to
        write tensor updates back to the file, which jflow's immutable tensors cannot do."""
        if shared:
            raise NotImplementedError(
                "UntypedStorage.from_file(shared=True): jflow's tensors are immutable arrays "
                "and cannot write back to a mapped file; use shared=False to read it")
        path = os.fspath(filename)
        size = os.path.getsize(path)
        nbytes = int(nbytes)
        if nbytes < 0 or nbytes > size:
            raise RuntimeError(f"UntypedStorage.from_file: {path!r} has {size} bytes, fewer "
                               f"than nbytes={nbytes}")
        if nbytes == 0:
            return cls._of(np.zeros(0, np.uint8))
        return cls._of(np.memmap(path, dtype=np.uint8, mode="r", shape=(nbytes,)))

    def untyped(self) -> UntypedStorage:
        """This storage (it is untyped already)."""
        return self

    def nbytes(self) -> int:
        """The number of bytes."""
        return int(self._bytes.size)

    def size(self) -> int:
        """The number of bytes (an untyped storage's elements are bytes)."""
        return int(self._bytes.size)

    def __len__(self) -> int:
        return int(self._bytes.size)

    def element_size(self) -> int:
        """1: an untyped storage counts bytes."""
        return 1

    @property
    def device(self) -> _device:
        """The CPU: a storage holds host bytes."""
        return _device("cpu")

    @property
    def is_cuda(self) -> bool:
        """False: host bytes."""
        return False

    def __getitem__(self, idx: Any) -> Any:
        """``s[a:b]``: the bytes in that range, as a storage over the same memory (step 1
        only, as PyTorch); ``s[i]``: one byte as an int."""
        if isinstance(idx, slice):
            start, stop, step = idx.indices(self._bytes.size)
            if step != 1:
                raise RuntimeError("UntypedStorage: slices with steps are not supported")
            return UntypedStorage._of(self._bytes[start:max(start, stop)])
        return int(self._bytes[idx])

    def tolist(self) -> list[int]:
        """The bytes as a list of ints."""
        return self._bytes.tolist()

    def data_ptr(self) -> int:
        """The address of the first byte (0 for an empty storage)."""
        b = self._bytes
        return int(b.__array_interface__["data"][0]) if b.size else 0

    def is_shared(self) -> bool:
        """False: jflow places nothing in memory shared between processes."""
        return False

    def __repr__(self) -> str:
        return f"jflow.UntypedStorage(nbytes={self.nbytes()}, read-only)"


# -- a tensor's storage: its storage root's elements ---------------------------------------------

def storage_root(t: Tensor) -> Tensor:
    """The tensor whose elements are ``t``'s storage: a view's base (a ``detach()`` /
    ``.data`` result included), else ``t`` itself."""
    return _ALIAS.__get__(t).base if t._aliases else t


class _Owners:
    """Which root tensor each device buffer address was last reported for (weakly), so that
    two roots holding the same immutable array never report one address (see the module)."""

    def __init__(self) -> None:
        self.by_ptr: dict[int, weakref.ref] = {}
        self.ptr_of: dict[int, int] = {}  # id(root) -> the address last reported for it

    def claim(self, root: Tensor, ptr: int) -> bool:
        """Record ``ptr`` as ``root``'s; False when another live root holds that buffer."""
        ref = self.by_ptr.get(ptr)
        other = ref() if ref is not None else None
        if other is not None and other is not root and _holds(other, ptr):
            return False
        key = id(root)
        old = self.ptr_of.get(key)
        if old is None:
            weakref.finalize(root, self.forget, key)
        elif old != ptr and self.by_ptr.get(old) is not None and self.by_ptr[old]() is root:
            del self.by_ptr[old]
        self.ptr_of[key] = ptr
        self.by_ptr[ptr] = weakref.ref(root)
        return True

    def forget(self, key: int) -> None:
        ptr = self.ptr_of.pop(key, None)
        ref = self.by_ptr.get(ptr) if ptr is not None else None
        if ref is not None and ref() is None:
            del self.by_ptr[ptr]


_OWNERS = _Owners()


def _holds(t: Tensor, ptr: int) -> bool:
    """Whether root ``t``'s current array (not computed if pending) is the buffer at ``ptr``."""
    if t._aliases:
        return False
    v = t._meta
    if not isinstance(v, jax.Array) or isinstance(v, Tracer) or v.size == 0:
        return False
    try:
        return v.unsafe_buffer_pointer() == ptr
    except Exception:  # noqa: BLE001  (a deleted / donated array holds no buffer)
        return False


def _root_pointer(root: Tensor, what: str) -> int:
    """The address of ``root``'s elements: its array's device buffer (0 for a meta or empty
    tensor). A buffer another live root reports too is first copied, so the two differ."""
    v = root._value
    if isinstance(v, Tracer):
        raise RuntimeError(f"{what}: this tensor is being traced (inside flow.jit / jax.jit / "
                           f"vmap) and has no memory address; call it outside the trace")
    if v.__class__ is _MetaValue or v.size == 0:
        return 0
    if root._global is not None:
        raise RuntimeError(f"{what}: a global tensor's elements live in several devices' "
                           f"buffers and have no single address; ask its local tensor "
                           f"(to_local()), as PyTorch asks a DTensor's")
    ptr = v.unsafe_buffer_pointer()
    if not _OWNERS.claim(root, ptr):  # (the same immutable array, held by another root)
        root._value = v = jax.device_put(v, v.sharding, may_alias=False)
        ptr = v.unsafe_buffer_pointer()
        _OWNERS.claim(root, ptr)
    # (the caller reads the elements at that address, as PyTorch's are there: wait until the
    # array's computation or copy has written them -- the address of a pending copy's buffer
    # is known before its bytes are, and a read then saw uninitialized memory)
    v.block_until_ready()
    return ptr


def data_ptr(t: Tensor, what: str = "Tensor.data_ptr()") -> int:
    """PyTorch's ``t.data_ptr()``: the address of ``t``'s first element — its storage root's
    buffer plus the storage offset in bytes (0 for a tensor without elements; a meta
    tensor's storage starts at 0)."""
    if t.numel() == 0:
        return 0
    ptr = _root_pointer(storage_root(t), what)
    return ptr + layout_of(t).offset * t.element_size() if t._aliases else ptr


class _TensorStorage(UntypedStorage):
    """``t.untyped_storage()``: the bytes of ``t``'s storage root (read-only), read when
    asked, at the address :func:`data_ptr` reports."""

    __slots__ = ("_root",)

    @property
    def _bytes(self) -> np.ndarray:  # type: ignore[override]
        v = self._root._concrete("UntypedStorage")
        return np.asarray(v).reshape(-1).view(np.uint8)

    def nbytes(self) -> int:
        return self._root.numel() * self._root.element_size()

    def size(self) -> int:
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def data_ptr(self) -> int:
        """The address of the storage root's elements (0 for meta or empty tensors)."""
        return _root_pointer(self._root, "UntypedStorage.data_ptr()")

    @property
    def device(self) -> _device:
        """The device of the tensor whose storage this is."""
        return self._root.device

    @property
    def is_cuda(self) -> bool:
        return self._root.device.type == "cuda"

    def __repr__(self) -> str:
        return (f"jflow.UntypedStorage(nbytes={self.nbytes()}, device='{self.device}', "
                f"read-only)")


def tensor_storage(t: Tensor) -> UntypedStorage:
    """``t.untyped_storage()`` (see :class:`_TensorStorage`)."""
    out = object.__new__(_TensorStorage)
    out._root = storage_root(t)
    return out


class TypedStorage:
    """``t.storage()``: PyTorch's (deprecated) typed view of a storage: its untyped bytes
    read as elements of ``dtype`` (read-only, as every jflow storage)."""

    __slots__ = ("_untyped_storage", "_dtype")

    def __init__(self, untyped: UntypedStorage, dtype: Any) -> None:
        self._untyped_storage = untyped
        self._dtype = _dt.as_dtype(dtype)

    @property
    def dtype(self) -> _dt.dtype:
        """The element type the bytes are read as."""
        return self._dtype

    def untyped(self) -> UntypedStorage:
        """The untyped (byte) storage."""
        return self._untyped_storage

    def element_size(self) -> int:
        return self.dtype.np.itemsize

    def size(self) -> int:
        """The number of elements."""
        return self._untyped_storage.nbytes() // self.element_size()

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    @property
    def device(self) -> _device:
        return self._untyped_storage.device

    @property
    def is_cuda(self) -> bool:
        return self._untyped_storage.is_cuda

    def is_shared(self) -> bool:
        return False

    def _elements(self) -> np.ndarray:
        b = self._untyped_storage._bytes
        return b[:self.size() * self.element_size()].view(self.dtype.np)

    def tolist(self) -> list:
        return self._elements().tolist()

    def __getitem__(self, idx: Any) -> Any:
        if not isinstance(idx, (int, np.integer)):
            raise TypeError(f"TypedStorage: only int indices are supported, got "
                            f"{type(idx).__name__}")
        return self._elements()[idx].item()

    def __repr__(self) -> str:
        return (f"jflow.TypedStorage(dtype={self.dtype}, size={self.size()}, "
                f"device='{self.device}', read-only)")


#: PyTorch's legacy storage class names (``x.storage_type()``), by jflow dtype name
_LEGACY_NAMES = {"float32": "FloatStorage", "float64": "DoubleStorage",
                 "float16": "HalfStorage", "bfloat16": "BFloat16Storage",
                 "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
                 "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
                 "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage"}
_LEGACY: dict[str, type] = {}


def storage_class(dtype: Any) -> type:
    """``x.storage_type()``: PyTorch's legacy storage class of ``dtype`` (``FloatStorage``
    ...), a :class:`TypedStorage` subclass with that ``dtype``."""
    d = _dt.as_dtype(dtype)
    name = _LEGACY_NAMES.get(d.name)
    if name is None:
        raise RuntimeError(f"Tensor.storage_type(): PyTorch has no legacy storage class for "
                           f"{d}")
    cls = _LEGACY.get(name)
    if cls is None:
        cls = _LEGACY[name] = type(name, (TypedStorage,),
                                   {"__slots__": (), "__module__": "jflow", "dtype": d})
    return cls


_TYPED_WARNED = [False]


def typed_storage(t: Tensor) -> TypedStorage:
    """``t.storage()``, with PyTorch's deprecation warning (once per process, as PyTorch)."""
    if not _TYPED_WARNED[0]:
        _TYPED_WARNED[0] = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and "
                      "UntypedStorage will be the only storage class. This should only matter "
                      "to you if you are using storages directly.  To access UntypedStorage "
                      "directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=3)
    return TypedStorage(tensor_storage(t), t.dtype)


_PYTHON_DATA = (np.ndarray, np.generic, list, tuple, int, float, bool, complex)


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """``torch.asarray``: a tensor from a tensor, a storage, a NumPy array, an object with the
    buffer protocol, or (nested) Python data.

    A storage's bytes are read as elements of ``dtype`` (PyTorch's default for a storage:
    int64), a buffer's (``bytes``, ``array.array``) too (default: the default float dtype, as
    PyTorch); the byte count must be a multiple of the element size. ``copy=False`` (share
    memory, never copy) raises for anything but a tensor already of that dtype and device:
    jflow's tensors are immutable arrays and share memory with no host object."""
    if isinstance(obj, TypedStorage):  # (its bytes, as its dtype unless one is given)
        obj, dtype = obj.untyped(), obj.dtype if dtype is None else dtype
    if isinstance(obj, UntypedStorage):
        d = _dt.int64 if dtype is None else _dt.as_dtype(dtype)
        size = d.np.itemsize
        if obj.nbytes() % size:
            raise ValueError(f"asarray: a storage of {obj.nbytes()} bytes does not hold whole "
                             f"{d} elements ({size} bytes each)")
        if copy is False:
            raise ValueError("asarray(storage, copy=False): jflow cannot share a storage's "
                             "memory (its tensors are immutable arrays); leave copy unset")
        out = as_tensor(np.frombuffer(obj._bytes, dtype=d.np), device=device)
    elif isinstance(obj, Tensor):
        out = as_tensor(obj, dtype=dtype, device=device)
        if copy and out is obj:
            out = obj.clone()
        elif copy is False and out is not obj:
            raise ValueError("asarray(copy=False): the dtype or device asked for needs a copy")
    else:
        if copy is False:
            raise ValueError(f"asarray({type(obj).__name__}, copy=False): jflow cannot share "
                             f"memory with a host object (its tensors are immutable arrays)")
        view = None
        if not isinstance(obj, _PYTHON_DATA):
            try:  # the buffer protocol (bytes, bytearray, array.array ...)
                view = memoryview(obj).cast("B")
            except TypeError:
                pass
        if view is not None:  # its raw bytes as elements of dtype (default: the float one)
            d = _dt.get_default_dtype() if dtype is None else _dt.as_dtype(dtype)
            size = d.np.itemsize
            if view.nbytes % size:
                raise ValueError(f"asarray: buffer length ({view.nbytes} bytes) must be a "
                                 f"multiple of element size ({size})")
            out = as_tensor(np.frombuffer(view, dtype=d.np), device=device)
        else:
            out = as_tensor(obj, dtype=dtype, device=device)
    if requires_grad and out.grad_fn is None:  # (a result of ops keeps its history)
        out.requires_grad_(True)
    return out
