"""``Normal(loc, scale)``."""

from __future__ import annotations

import math
from typing import Any

from ..tensor import Tensor
from . import _ops, constraints
from ._util import broadcast_all
from .distribution import Distribution

__all__ = ["Normal"]


class Normal(Distribution):
    """The normal distribution N(loc, scale²), batched over the broadcast parameter shape."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def mode(self) -> Tensor:
        """``loc``."""
        return self.loc

    @property
    def stddev(self) -> Tensor:
        """``scale``."""
        return self.scale

    @property
    def variance(self) -> Tensor:
        """``scale²``."""
        return self.scale.pow(2)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """``loc + scale * eps``, ``eps ~ N(0, 1)``."""
        shape = self._extended_shape(sample_shape)
        eps = _ops.randn(*shape, dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value: Any) -> Tensor:
        """``-(x - loc)² / (2 scale²) - log(scale) - log(sqrt(2π))``."""
        self._validate_sample(value)
        var = self.scale ** 2
        return (-((value - self.loc) ** 2) / (2 * var) - self.scale.log()
                - math.log(math.sqrt(2 * math.pi)))

    def cdf(self, value: Any) -> Tensor:
        """``(1 + erf((x - loc) / (scale sqrt 2))) / 2``."""
        self._validate_sample(value)
        return 0.5 * (1 + _ops.erf((value - self.loc) * self.scale.reciprocal()
                                    / math.sqrt(2)))

    def icdf(self, value: Any) -> Tensor:
        """``loc + scale sqrt(2) erfinv(2p - 1)``."""
        return self.loc + self.scale * _ops.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        """``1/2 + log(sqrt(2π)) + log(scale)``."""
        return 0.5 + 0.5 * math.log(2 * math.pi) + _ops.log(self.scale)
