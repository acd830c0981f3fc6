"""``flow.UntypedStorage`` and ``flow.asarray``: PyTorch's byte storage and the tensor built on
one, enough for readers that map a file and build tensors from byte ranges of it
(``UntypedStorage.from_file(path, shared=False, nbytes=n)[a:b]`` then
``asarray(storage, dtype=uint8).view(dtype).reshape(shape)``, which is how the safetensors
package reads a ``.safetensors`` file for PyTorch).

jflow's tensors are immutable JAX arrays, so a storage here is **read-only**: a tensor built
from it holds a copy of its bytes (in-place ops on that tensor never reach the storage or the
file), and nothing writes into a storage (no ``__setitem__`` / ``fill_`` / ``copy_``;
``from_file(shared=True)``, whose point is writing back to the file, raises). Reading gives
PyTorch's values. See docs/porting.md."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from . import dtypes as _dt
from .creation import as_tensor
from .device import device as _device
from .tensor import Tensor

__all__ = ["UntypedStorage", "asarray"]


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

    def __repr__(self) -> str:
        return f"jflow.UntypedStorage(nbytes={self._bytes.size}, read-only)"


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
