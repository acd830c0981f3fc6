"""``torch.nn.utils.convert_conv2d_weight_memory_format`` / ``..._conv3d_...``.

PyTorch re-lays the weights of every ``Conv2d`` / ``ConvTranspose2d`` (``Conv3d`` /
``ConvTranspose3d``) out in ``memory_format`` (channels-last kernels are faster on some
hardware). jflow's arrays have no physical layout (XLA picks it; docs/porting.md "Memory
formats are accepted, not applied"), so here each such weight gets ``clone(memory_format=...)``
of itself — the format checked as PyTorch checks it (``channels_last_3d`` on a 4-d weight
raises), values, parameter objects and ``stride()`` unchanged — and the module is returned.
"""

from __future__ import annotations

from typing import Any

from ...autograd import no_grad
from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module: Module, memory_format: Any, kinds: tuple[type, ...]) -> Module:
    if isinstance(module, kinds):
        with no_grad():
            module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, kinds)
    return module


def convert_conv2d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """``module`` with its 2-d convolution weights in ``memory_format`` (see the module
    docstring: checked, values unchanged)."""
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    """``module`` with its 3-d convolution weights in ``memory_format`` (see the module
    docstring: checked, values unchanged)."""
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
