"""Padding layers, PyTorch's ``torch.nn.modules.padding``: ``ZeroPad{1,2,3}d``,
``ConstantPad{1,2,3}d``, ``ReflectionPad{1,2,3}d``, ``ReplicationPad{1,2,3}d`` and
``CircularPad{1,2,3}d``, each ``F.pad`` with a fixed mode.

``padding`` is an int (the same on every side) or a sequence kept as given, as PyTorch's
``_ntuple`` does (so ``ZeroPad2d((1, 2))`` pads the last dim only). The non-constant layers
check the input rank here, because jflow's ``F.pad`` accepts any rank for every mode while
PyTorch's refuses reflect/replicate/circular outside (batch, channel, *spatial) inputs: a model
that runs in jflow should run in PyTorch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d"]


def _ntuple(padding: Any, n: int, cls: str) -> tuple[Any, ...]:
    """PyTorch's ``_ntuple(n)``: a sequence as a tuple, anything else repeated ``n`` times;
    the values must be ints (PyTorch fails later, inside ``F.pad``; here, at construction)."""
    out = tuple(padding) if isinstance(padding, Sequence) else (padding,) * n
    for v in out:
        if isinstance(v, bool) or not hasattr(type(v), "__index__"):
            raise TypeError(f"{cls}: padding must be an int or a sequence of ints, got "
                            f"{padding!r}")
    return tuple(int(v) for v in out)


class _PadNd(Module):
    """A fixed-mode ``F.pad``; ``_n`` spatial dims (1, 2 or 3)."""

    _n = 1
    _mode = "constant"
    padding: tuple[int, ...]

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _ntuple(padding, 2 * self._n, type(self).__name__)

    def _check_input_dim(self, input: Tensor) -> None:
        if self._mode == "circular":  # PyTorch's CircularPad*d check (a ValueError)
            n = self._n
            if input.ndim not in (n + 1, n + 2):
                raise ValueError(f"expected {n + 1}D or {n + 2}D input (got {input.ndim}D "
                                 f"input)")
            return
        n = len(self.padding) // 2   # PyTorch's F.pad rule for reflect/replicate
        if len(self.padding) % 2 == 0 and input.ndim not in (n + 1, n + 2):
            raise NotImplementedError(  # PyTorch's type and text
                f"Padding size {len(self.padding)} is not supported for {input.ndim}D input "
                "tensor.\nSupported combinations for non-constant padding:\n"
                "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    """Pads with ``value``; any input rank (as PyTorch's constant mode)."""

    value: float

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with a constant: ``padding`` int or ``(left, right)``."""

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with a constant: int or ``(left, right, top, bottom)``."""

    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with a constant: int or ``(left, right, top, bottom, front,
    back)``."""

    _n = 3


class _ZeroPadMixin:
    def extra_repr(self) -> str:
        return f"{self.padding}"  # type: ignore[attr-defined]


class ZeroPad1d(_ZeroPadMixin, ConstantPad1d):
    """``ConstantPad1d(padding, 0.0)``."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ZeroPad2d(_ZeroPadMixin, ConstantPad2d):
    """``ConstantPad2d(padding, 0.0)``."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ZeroPad3d(_ZeroPadMixin, ConstantPad3d):
    """``ConstantPad3d(padding, 0.0)``."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)


class ReflectionPad1d(_PadNd):
    """Reflects the last dim about its edges (edge not repeated); (C, W) or (N, C, W)."""

    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Reflects the last 2 dims; (C, H, W) or (N, C, H, W)."""

    _n, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Reflects the last 3 dims; (C, D, H, W) or (N, C, D, H, W)."""

    _n, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Repeats the edge values of the last dim; (C, W) or (N, C, W)."""

    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Repeats the edge values of the last 2 dims; (C, H, W) or (N, C, H, W)."""

    _n, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Repeats the edge values of the last 3 dims; (C, D, H, W) or (N, C, D, H, W)."""

    _n, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Wraps the last dim around (periodic padding); (C, W) or (N, C, W)."""

    _n, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Wraps the last 2 dims around; (C, H, W) or (N, C, H, W)."""

    _n, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    """Wraps the last 3 dims around; (C, D, H, W) or (N, C, D, H, W)."""

    _n, _mode = 3, "circular"
