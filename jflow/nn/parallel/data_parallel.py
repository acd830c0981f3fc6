"""``nn.DataParallel`` / ``nn.parallel.data_parallel``: PyTorch's single-process data
parallelism, for the cases a jflow process has.

* **No GPU** (PyTorch's answer on a CPU-only machine): ``DataParallel(m)`` holds ``m`` as
  ``.module`` (state-dict keys ``module.<name>``) with ``device_ids == []`` and its forward is
  ``m``'s; ``data_parallel(...)`` raises as PyTorch's does ("device type could not be
  determined").
* **One GPU**: ``m`` moves to it; the forward checks that the parameters and buffers are
  there, moves tensor arguments there (PyTorch's scatter to one device) and runs ``m``.
* **Several GPUs**: PyTorch replicates the module on each and splits the batch in one
  process; jflow does data parallelism with global tensors instead: it raises, pointing at
  ``nn.parallel.DistributedDataParallel``.
"""

from __future__ import annotations

import itertools
from typing import Any

from ... import cuda as _cuda
from ...device import device as _device
from ...tensor import Tensor
from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


def _index(d: Any) -> int:
    if isinstance(d, int):
        return d
    d = _device(d)
    return 0 if d.index is None else d.index


def _devices(device_ids: Any, output_device: Any, what: str) -> tuple[list[int], int]:
    if device_ids is None:
        device_ids = list(range(_cuda.device_count()))
    if not device_ids:
        raise RuntimeError("no available devices were found")
    ids = [_index(d) for d in device_ids]
    if len(ids) > 1:
        raise NotImplementedError(f"{what} over {len(ids)} devices: jflow does data "
                                  f"parallelism with global tensors; use "
                                  f"nn.parallel.DistributedDataParallel (docs/sbp.md)")
    out = ids[0] if output_device is None else _index(output_device)
    return ids, out


def _to(obj: Any, dev: Any) -> Any:
    """Tensors in ``obj`` (tuples, lists, dicts) on ``dev``: PyTorch's scatter to one device."""
    if isinstance(obj, Tensor):
        return obj.to(dev)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to(o, dev) for o in obj))
    if isinstance(obj, (tuple, list)):
        return type(obj)(_to(o, dev) for o in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _to(v, dev)) for k, v in obj.items())
    return obj


def _check_on(module: Module, dev: Any) -> None:
    for t in itertools.chain(module.parameters(), module.buffers()):
        if t.device != dev:
            raise RuntimeError(f"module must have its parameters and buffers on device {dev} "
                               f"(device_ids[0]) but found one of them on device: {t.device}")


class DataParallel(Module):
    """``DataParallel(module, device_ids=None, output_device=None, dim=0)``: see the module
    docstring (without a GPU, a pass-through wrapper, as PyTorch's)."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0) -> None:
        super().__init__()
        if not _cuda.is_available():
            self.module = module
            self.device_ids = []
            return
        ids, out = _devices(device_ids, output_device, "DataParallel")
        self.dim = dim
        self.module = module
        self.device_ids = ids
        self.output_device = out
        self.src_device_obj = _device("cuda", ids[0])
        self.module.to(self.src_device_obj)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        _check_on(self.module, self.src_device_obj)
        return self.module(*_to(inputs, self.src_device_obj),
                           **_to(kwargs, self.src_device_obj))


def data_parallel(module: Module, inputs: Any, device_ids: Any = None,
                  output_device: Any = None, dim: int = 0, module_kwargs: Any = None) -> Any:
    """``module(*inputs, **module_kwargs)`` on ``device_ids[0]`` (see the module docstring;
    without a GPU it raises, as PyTorch's)."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    if not _cuda.is_available():
        raise RuntimeError("device type could not be determined")
    ids, _ = _devices(device_ids, output_device, "data_parallel")
    dev = _device("cuda", ids[0])
    _check_on(module, dev)
    return module(*_to(inputs, dev), **_to(module_kwargs or {}, dev))
