"""``torch._subclasses``: PyTorch's fake tensors (tensors that carry shape, dtype and device
through an operator's meta implementation, used by its compiler's tracing). jflow traces with
JAX, so no value is ever a ``FakeTensor``: ``isinstance(x, FakeTensor)`` is False (what
libraries ask, e.g. "is this call being traced?"), and making one or entering a
``FakeTensorMode`` raises."""

from __future__ import annotations

from . import fake_tensor
from .fake_tensor import FakeTensor, FakeTensorMode

__all__ = ["FakeTensor", "FakeTensorMode", "fake_tensor"]
