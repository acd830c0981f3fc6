"""``torch.*`` questions about objects and the ``sym_*`` number helpers, as PyTorch answers
them for concrete values: ``typename``, ``is_storage``, ``get_device``, ``is_neg``,
``is_inference``, ``sym_int`` / ``sym_float`` / ``sym_max`` / ``sym_min`` / ``sym_not`` /
``sym_ite`` / ``sym_sum`` / ``sym_sqrt``, and ``get_device_module`` (the ``flow.<device>``
module of a device). (PyTorch's ``sym_*`` also take its symbolic integers while
``torch.compile`` traces; jflow's traces see concrete Python numbers, so plain arithmetic is
their whole meaning here.)
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterable
from typing import Any

from . import cpu as _cpu
from . import cuda as _cuda
from .accelerator import current_accelerator
from .device import device as _device
from .storage import TypedStorage, UntypedStorage
from .tensor import Tensor

__all__ = ["typename", "is_storage", "get_device", "is_neg", "is_inference", "sym_int", "sym_float",
           "sym_max", "sym_min", "sym_not", "sym_ite", "sym_sum", "sym_sqrt", "get_device_module"]

#: device type -> the ``flow.<name>`` module of its device (ROCm GPUs are ``flow.cuda``'s, as
#: PyTorch's ``torch.cuda``)
_DEVICE_MODULES = {"cpu": _cpu, "cuda": _cuda, "rocm": _cuda}


def typename(obj: Any) -> str:
    """A tensor's legacy type name (``"torch.FloatTensor"``, as ``Tensor.type()``), else the
    object's (or, for an instance without a name, its class's) qualified name with its module
    (jflow's own, ``jflow.nn.modules.linear.Linear``), builtins unprefixed."""
    if isinstance(obj, Tensor):
        return obj.type()
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    module = getattr(obj, "__module__", None) if name else None
    if not name:
        name, module = type(obj).__qualname__, type(obj).__module__
    return name if module in (None, "", "builtins") else f"{module}.{name}"


def is_storage(obj: Any) -> bool:
    """Whether ``obj`` is a storage: untyped (``t.untyped_storage()``) or typed
    (``t.storage()``), as PyTorch's."""
    return isinstance(obj, (UntypedStorage, TypedStorage))


def get_device(input: Tensor) -> int:  # noqa: A002  (PyTorch's name)
    """``input.get_device()``: -1 on the CPU, else the device index."""
    if not isinstance(input, Tensor):
        raise TypeError(f"get_device(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.get_device()


def is_neg(input: Tensor) -> bool:  # noqa: A002
    """False: jflow has no lazy negation bit (``resolve_neg`` returns its input)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_neg(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return False


def is_inference(input: Tensor) -> bool:  # noqa: A002
    """``input.is_inference()``: False (jflow has no inference tensors: docs/porting.md)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"is_inference(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.is_inference()


def sym_int(a: Any) -> int:
    """``int(a)``: truncation toward zero for a float."""
    return int(a)


def sym_float(a: Any) -> float:
    """``float(a)``."""
    return float(a)


def sym_max(a: Any, b: Any) -> Any:
    """The larger; a float when either is one (PyTorch's promotion)."""
    m = builtins.max(a, b)
    return float(m) if isinstance(a, float) or isinstance(b, float) else m


def sym_min(a: Any, b: Any) -> Any:
    """The smaller; a float when either is one (PyTorch's promotion)."""
    m = builtins.min(a, b)
    return float(m) if isinstance(a, float) or isinstance(b, float) else m


def sym_not(a: Any) -> bool:
    """``not a``."""
    return not a


def sym_ite(b: Any, t: Any, f: Any) -> Any:
    """``t if b else f``."""
    return t if b else f


def sym_sum(args: Iterable[Any]) -> Any:
    """``sum(args)``."""
    return builtins.sum(args)


def sym_sqrt(a: Any) -> float:
    """``math.sqrt(a)``."""
    return math.sqrt(a)


def get_device_module(device: Any = None) -> Any:
    """``torch.get_device_module``: the module of ``device``'s type (a ``flow.device`` or a
    string such as ``"cuda:0"``): ``flow.cuda`` or ``flow.cpu``; without one, the current
    accelerator's (``flow.accelerator``), or ``flow.cpu`` when there is none. A device type
    without a jflow module (``"tpu"``, ``"xpu"`` ...) raises PyTorch's error."""
    if isinstance(device, _device):
        name = device.type
    elif isinstance(device, str):
        name = device.split(":")[0]
    elif device is None:
        acc = current_accelerator()
        name = "cpu" if acc is None else acc.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or "
                           f"None")
    module = _DEVICE_MODULES.get(name)
    if module is None:
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered "
                           f"as 'torch.{name}' (jflow has flow.cpu and flow.cuda)")
    return module
