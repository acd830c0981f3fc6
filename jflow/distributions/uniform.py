"""``Uniform(low, high)``."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import _ops, constraints
from ._util import broadcast_all
from .distribution import Distribution

__all__ = ["Uniform"]


class Uniform(Distribution):
    """The uniform distribution on ``[low, high)``."""

    arg_constraints = {"low": constraints.dependent, "high": constraints.dependent}
    has_rsample = True

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        if validate_args and not bool((self.low < self.high).all()):
            raise ValueError("Uniform: expected low < high")
        super().__init__(self.low.shape, (), False)

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        """``[low, high)``."""
        return constraints.half_open_interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        """``(low + high) / 2``."""
        return (self.high + self.low) / 2

    @property
    def variance(self) -> Tensor:
        """``(high - low)² / 12``."""
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """``low + (high - low) u``, ``u ~ U[0, 1)``."""
        shape = self._extended_shape(sample_shape)
        u = _ops.rand(*shape, dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Any) -> Tensor:
        """``-log(high - low)`` inside the support, ``-inf`` outside."""
        lb = (self.low <= value).to(self.low.dtype)
        ub = (self.high > value).to(self.low.dtype)
        return _ops.log(lb * ub) - _ops.log(self.high - self.low)

    def cdf(self, value: Any) -> Tensor:
        """``(x - low) / (high - low)`` clamped to [0, 1]."""
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def icdf(self, value: Any) -> Tensor:
        """``low + p (high - low)``."""
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        """``log(high - low)``."""
        return _ops.log(self.high - self.low)
