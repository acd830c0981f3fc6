"""``Bernoulli(probs=None, logits=None)``."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import _ops, constraints
from ._util import as_param, logits_to_probs, probs_to_logits
from .distribution import Distribution

__all__ = ["Bernoulli"]


class Bernoulli(Distribution):
    """Values 0 / 1 with ``P(1) = probs`` (or ``sigmoid(logits)``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.probs = as_param(probs)
            self.logits = probs_to_logits(self.probs, is_binary=True)
        else:
            self.logits = as_param(logits)
            self.probs = logits_to_probs(self.logits, is_binary=True)
        super().__init__(self.probs.shape, (), validate_args)

    @property
    def mean(self) -> Tensor:
        """``probs``."""
        return self.probs

    @property
    def variance(self) -> Tensor:
        """``p (1 - p)``."""
        return self.probs * (1 - self.probs)

    @property
    def mode(self) -> Tensor:
        """1 where ``p > 1/2``, 0 where below, NaN at exactly 1/2 (as PyTorch)."""
        m = (self.probs > 0.5).to(self.probs.dtype)
        return _ops.where(self.probs == 0.5, float("nan"), m)

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """0/1 draws (the parameter's dtype)."""
        shape = self._extended_shape(sample_shape)
        with _ops.no_grad():
            return _ops.bernoulli(self.probs.expand(*shape))

    def log_prob(self, value: Any) -> Tensor:
        """``-BCE-with-logits(logits, value)``."""
        self._validate_sample(value)
        logits, value = _ops.broadcast_tensors(self.logits, as_param(value))
        return -_ops.nn_functional.binary_cross_entropy_with_logits(logits, value,
                                                                      reduction="none")

    def entropy(self) -> Tensor:
        """``BCE-with-logits(logits, probs)``."""
        return _ops.nn_functional.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                                     reduction="none")
