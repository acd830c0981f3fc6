"""Dtype and device conversion on ``Tensor``: ``to``, the dtype casters (``float()``,
``long()`` ...), ``type_as``, ``cpu``/``cuda``, ``type()`` with PyTorch's type strings
(``'torch.FloatTensor'``), ``is_cuda``.

``to`` returns ``self`` when nothing changes, as PyTorch; the meta device keeps shape and
dtype only. ``_TYPE_NAMES`` (PyTorch's tensor type names) is shared with the random fills'
error messages.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.core import Tracer

from .. import dtypes as _dt
from ..device import device as _device
from ..functional import F
from ..memory_format import check_memory_format
from ..meta import meta_value
from ..tensor import Tensor, _wrap
from ..value_bounds import note_host as note_bounds


def to(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other_tensor)``.

    Returns ``self`` when neither the dtype nor the device changes (as PyTorch does), unless
    ``copy=True``; in-place ops on a copy never reach the original.
    """
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    copy = bool(kwargs.pop("copy", False))
    kwargs.pop("non_blocking", None)
    # memory_format changes PyTorch's strides, never the values; jflow's layout stays row-major
    check_memory_format("Tensor.to", kwargs.pop("memory_format", None), self.ndim)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword argument(s) {sorted(kwargs)}")
    # PyTorch's positional flags after the target: to(device, dtype, non_blocking, copy),
    # to(dtype, non_blocking, copy), to(other, non_blocking, copy)
    flags = 0
    while flags < len(args) and isinstance(args[len(args) - 1 - flags], (bool, np.bool_)):
        flags += 1
    if flags > 2:
        raise TypeError(f"to(): at most two positional flags (non_blocking, copy), got {flags}")
    if flags:
        if flags == 2:
            copy = bool(args[-1])
        args = args[:len(args) - flags]
    for a in args:
        if a is None:  # to(None): PyTorch's device=None, nothing to move
            continue
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, _device):
            device = a
        elif isinstance(a, str) and a.partition(":")[0] in ("cpu", "cuda", "rocm", "tpu", "meta"):
            device = a
        else:
            try:
                dtype = _dt.as_dtype(a)
            except TypeError:
                raise TypeError(f"to(): cannot interpret {a!r} as a dtype or a device") from None
    out = self
    if dtype is not None:
        out = F.cast(out, _dt.as_dtype(dtype))
    if device is not None and (_device(device).type == "meta" or out.is_meta):
        if not out.is_meta:  # to the meta device: shape and dtype kept, the data dropped
            out = _wrap(meta_value(out._meta.shape, out._meta.dtype))
        elif _device(device).type != "meta":
            raise NotImplementedError(f"Tensor.to(): Cannot copy out of meta tensor; no data! "
                                      f"(to {_device(device)}: use Module.to_empty / "
                                      f"flow.empty_like(t, device=...) to allocate, then load)")
    elif device is not None:
        target = _device(device).jax_device()
        v = out._value
        if not isinstance(v, Tracer) and target not in v.devices():
            moved = jax.device_put(v, target)
            if v.dtype.kind in "iu" and all(d.platform == "cpu" for d in v.devices()):
                note_bounds(moved, np.asarray(v))  # (index bounds checks read them there)
            out = _wrap(moved)
    if copy and out is self:  # a new tensor, with the history (PyTorch differentiates it)
        out = F.clone(self)
    return out


Tensor.to = to


def _caster(name: str, dtype: Any) -> Any:
    def cast_to(self: Tensor, *, memory_format: Any = None) -> Tensor:
        check_memory_format(f"Tensor.{name}", memory_format, self.ndim)
        return F.cast(self, dtype)
    cast_to.__name__ = name
    cast_to.__doc__ = f"``x.{name}()`` is ``x.to({dtype})`` (a copy unless already {dtype})."
    return cast_to


for _name, _dtype in [("float", _dt.float32), ("double", _dt.float64), ("half", _dt.float16),
                      ("bfloat16", _dt.bfloat16), ("long", _dt.int64), ("int", _dt.int32),
                      ("short", _dt.int16), ("char", _dt.int8), ("byte", _dt.uint8),
                      ("bool", _dt.bool_)]:
    setattr(Tensor, _name, _caster(_name, _dtype))


def type_as(self: Tensor, other: Tensor) -> Tensor:
    """This tensor cast to ``other``'s dtype."""
    return F.cast(self, other.dtype)


def cpu(self: Tensor) -> Tensor:
    """This tensor on the CPU (itself if already there)."""
    return to(self, "cpu")


def cuda(self: Tensor, index: int = 0) -> Tensor:
    """This tensor on GPU ``index`` (a clear error when JAX has no GPU backend)."""
    return to(self, f"cuda:{index}")


Tensor.type_as, Tensor.cpu, Tensor.cuda = type_as, cpu, cuda


# -- PyTorch type strings, is_cuda --------------------------------------------------------------

#: PyTorch's tensor type names (``torch.FloatTensor``...) by jflow dtype name.
_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor",
               "int16": "ShortTensor", "int8": "CharTensor", "uint8": "ByteTensor",
               "bool": "BoolTensor"}
_BY_TYPE_NAME = {v: k for k, v in _TYPE_NAMES.items()}
_MODULES = ("torch.", "flow.", "oneflow.", "jflow.")


def _is_cuda(self: Tensor) -> bool:
    """True when the tensor is on a CUDA (GPU) device, as ``torch.Tensor.is_cuda``."""
    return self.device.type == "cuda"


def _parse_type_string(s: str) -> tuple[_dt.dtype, str | None]:
    """``'torch.FloatTensor'`` -> (float32, 'cpu'), ``'torch.cuda.HalfTensor'`` -> (float16,
    'cuda'); a plain dtype name (``'float32'``) -> (dtype, None: the device is kept)."""
    name = s
    for m in _MODULES:
        if name.startswith(m):
            name = name[len(m):]
            break
    cuda = name.startswith("cuda.")
    if cuda:
        name = name[len("cuda."):]
    if name in _BY_TYPE_NAME:
        return _dt.as_dtype(_BY_TYPE_NAME[name]), "cuda" if cuda else "cpu"
    try:
        return _dt.as_dtype(s), None
    except TypeError:
        raise ValueError(f"type(): invalid type: {s!r}") from None


def _has_cuda() -> bool:
    try:
        return bool(jax.local_devices(backend="gpu"))
    except RuntimeError:
        return False


def type_(self: Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """``t.type()``: PyTorch's type string (``'torch.FloatTensor'``, or
    ``'torch.cuda.FloatTensor'`` on a GPU). ``t.type(dtype)``: ``t`` cast to ``dtype`` (a
    dtype, or a type string such as ``'torch.LongTensor'``); ``self`` when nothing changes.

    A type string names a device as in PyTorch (``'torch.FloatTensor'`` is a CPU tensor,
    ``'torch.cuda.FloatTensor'`` a GPU one); without a GPU a ``cuda`` type string only sets
    the dtype (PyTorch would raise).
    """
    kwargs.pop("async", None)
    if kwargs:
        raise TypeError(f"type() got unexpected keyword argument(s) {sorted(kwargs)}")
    if dtype is None:
        name = _TYPE_NAMES[self.dtype.name]
        return f"torch.cuda.{name}" if _is_cuda(self) else f"torch.{name}"
    dev: str | None = None
    if isinstance(dtype, str):
        d, dev = _parse_type_string(dtype)
        if dev == "cuda" and not _has_cuda():
            dev = None
        elif dev is not None and self.device.type == dev:
            dev = None
    else:
        d = _dt.as_dtype(dtype)
    if dev is None:
        return self if d == self.dtype else F.cast(self, d)
    return to(self, dev, d)


Tensor.type = type_
Tensor.is_cuda = property(_is_cuda, doc="True when the tensor is on a CUDA (GPU) device.")


# -- pinned memory ------------------------------------------------------------------------------

def pin_memory(self: Tensor, device: Any = None) -> Tensor:
    """PyTorch's ``pin_memory``: a copy in page-locked host memory, for fast transfers to an
    accelerator. Without one it raises as PyTorch does; with a GPU it returns a copy
    (``clone``: JAX manages host staging buffers itself, so the copy is an ordinary host array
    and ``is_pinned()`` stays False)."""
    if not _has_cuda():
        raise RuntimeError("pin_memory(): Cannot access accelerator device when none is "
                           "available.")
    return self.clone()


def is_pinned(self: Tensor, device: Any = None) -> bool:
    """False: jflow tensors are never in page-locked memory (see :func:`pin_memory`)."""
    return False


Tensor.pin_memory, Tensor.is_pinned = pin_memory, is_pinned
