"""DLPack interop: tensors cross to and from NumPy, PyTorch, JAX and any other DLPack
library without a copy where the device and the memory alignment allow (``torch.utils.dlpack``'s
shape).

A jflow tensor's value is an immutable ``jax.Array``; a consumer that receives its memory
through DLPack (``torch.from_dlpack(t)``, ``np.from_dlpack(t)``) shares it, so writing into
that memory on the other side would change the jflow tensor behind JAX's back: treat shared
memory as read-only, or copy (``torch.from_dlpack(t).clone()``). In the other direction,
:func:`from_dlpack` wraps the producer's buffer (JAX copies only when it must, e.g. an
unaligned NumPy buffer), and the producer must not write into it afterwards either.
"""

from __future__ import annotations

from typing import Any

import jax

from ..dtypes import from_numpy_dtype
from ..tensor import Tensor, _wrap

__all__ = ["from_dlpack", "to_dlpack", "from_torch", "to_torch"]


def _local_value(t: Tensor, fname: str) -> jax.Array:
    if not isinstance(t, Tensor):
        raise TypeError(f"{fname}: expected a jflow Tensor, got {type(t).__name__}")
    if t._global is not None:
        raise TypeError(f"{fname}: a global tensor has no single buffer; use .to_local() or "
                        f".numpy() first")
    v = t._value
    if isinstance(v, jax.core.Tracer):
        raise TypeError(f"{fname}: a traced tensor (inside jax.jit / flow.jit) has no buffer")
    return v


class _Capsule:
    """A legacy DLPack capsule (``torch.utils.dlpack.to_dlpack``'s, :func:`to_dlpack`'s) behind
    the protocol JAX's ``from_dlpack`` takes: ``__dlpack__`` hands the capsule over once and
    ``__dlpack_device__`` reads the device from its ``DLTensor`` (DLPack's C layout: a data
    pointer, then ``int32 device_type, int32 device_id``; a versioned capsule's tensor follows
    its version, manager context, deleter and flags)."""

    def __init__(self, capsule: Any) -> None:
        import ctypes  # noqa: PLC0415  (only for capsules)

        get_name = ctypes.pythonapi.PyCapsule_GetName
        get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
        name = get_name(capsule)
        if name not in (b"dltensor", b"dltensor_versioned"):
            raise TypeError(f"an invalid capsule ({name!r}): a DLPack capsule can be consumed "
                            f"only once")
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        tensor = get(capsule, name) + (32 if name == b"dltensor_versioned" else 0)
        device = (ctypes.c_int32 * 2).from_address(tensor + ctypes.sizeof(ctypes.c_void_p))
        self.device = (int(device[0]), int(device[1]))
        self.capsule = capsule

    def __dlpack__(self, **_: Any) -> Any:
        return self.capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


def from_dlpack(ext: Any) -> Tensor:
    """A tensor sharing the memory of ``ext``: any object with ``__dlpack__`` (a NumPy array,
    a PyTorch or JAX array, ...) or a legacy DLPack capsule (consumed, as PyTorch's)."""
    try:
        if type(ext).__name__ == "PyCapsule":
            ext = _Capsule(ext)
        value = jax.dlpack.from_dlpack(ext)
    except (TypeError, ValueError, RuntimeError) as e:
        raise TypeError(f"flow.from_dlpack: cannot import {type(ext).__name__}: {e}") from None
    from_numpy_dtype(value.dtype)  # a clear error for dtypes jflow does not have
    return _wrap(value)


def to_dlpack(tensor: Tensor) -> Any:
    """A legacy DLPack capsule of the tensor's buffer (prefer passing the tensor itself to
    the consumer's ``from_dlpack``, which uses ``Tensor.__dlpack__``)."""
    return _local_value(tensor, "flow.utils.dlpack.to_dlpack").__dlpack__()


def _dlpack(self: Tensor, *, stream: Any = None, max_version: Any = None,
            dl_device: Any = None, copy: Any = None) -> Any:
    """The DLPack protocol: the tensor's buffer, for ``from_dlpack`` of another library.
    As in PyTorch, a tensor that requires grad is refused (in any grad mode): the consumer's
    array would leave the graph; export ``t.detach()``."""
    if self.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    v = _local_value(self, "Tensor.__dlpack__")
    kw = {k: x for k, x in (("stream", stream), ("max_version", max_version),
                            ("dl_device", dl_device), ("copy", copy)) if x is not None}
    return v.__dlpack__(**kw)


def _dlpack_device(self: Tensor) -> Any:
    return _local_value(self, "Tensor.__dlpack_device__").__dlpack_device__()


Tensor.__dlpack__ = _dlpack
Tensor.__dlpack_device__ = _dlpack_device


def from_torch(t: Any) -> Tensor:
    """A jflow tensor sharing a (CPU, contiguous or not) PyTorch tensor's memory where JAX
    can; ``requires_grad`` is not carried over (the tape is jflow's own)."""
    mod = type(t).__module__
    if not mod.startswith("torch"):
        raise TypeError(f"flow.utils.from_torch: expected a torch.Tensor, got "
                        f"{type(t).__name__}")
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    return from_dlpack(t.detach())


def to_torch(tensor: Tensor) -> Any:
    """A PyTorch tensor sharing this tensor's memory (CPU: no copy). Raises for dtypes that
    PyTorch lacks."""
    import torch  # noqa: PLC0415  (optional: only this function needs PyTorch)
    v = _local_value(tensor, "flow.utils.to_torch")
    try:
        return torch.from_dlpack(v)
    except (TypeError, RuntimeError, BufferError) as e:
        raise TypeError(f"flow.utils.to_torch: PyTorch cannot take a {tensor.dtype} tensor "
                        f"({e})") from None
