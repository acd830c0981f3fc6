"""``Categorical(probs=None, logits=None)``."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import _ops, constraints
from ._util import as_param, logits_to_probs, probs_to_logits
from .distribution import Distribution

__all__ = ["Categorical"]


class Categorical(Distribution):
    """A distribution over ``{0, ..., K-1}`` (the last dimension of ``probs`` / ``logits``);
    ``probs`` are normalised to sum to 1, ``logits`` to ``logsumexp == 0`` (as PyTorch)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            p = as_param(probs)
            if p.ndim < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = p / p.sum(-1, keepdim=True)
            self.logits = probs_to_logits(self.probs)
            param = self.probs
        else:
            lg = as_param(logits)
            if lg.ndim < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = lg - lg.logsumexp(-1, keepdim=True)
            self.probs = logits_to_probs(self.logits)
            param = self.logits
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], (), validate_args)

    @property
    def param_shape(self) -> tuple[int, ...]:
        """The shape of ``probs`` / ``logits``."""
        return tuple(self.probs.shape)

    @property
    def support(self) -> constraints.Constraint:  # type: ignore[override]
        """``{0, ..., K-1}``."""
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self) -> Tensor:
        """Undefined: NaN, as PyTorch."""
        return _ops.full(tuple(self.batch_shape), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        """The most probable category."""
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        """Undefined: NaN, as PyTorch."""
        return self.mean

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """Category indices, shape ``sample_shape + batch_shape`` (int64)."""
        n = 1
        for s in sample_shape:
            n *= int(s)
        flat = self.probs.reshape(-1, self._num_events)
        draws = _ops.multinomial(flat, n, replacement=True)  # (B, n)
        out = draws.T.reshape(*tuple(sample_shape), *tuple(self.batch_shape))
        return out

    def log_prob(self, value: Any) -> Tensor:
        """``logits[value]`` (broadcasting ``value`` against the batch)."""
        self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = _ops.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        """``-sum p log p`` (logits clamped to the dtype's min, as PyTorch)."""
        min_real = _ops.finfo(self.logits.dtype).min
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """``[0, ..., K-1]`` shaped ``(K, *batch_shape)``."""
        k = self._num_events
        values = _ops.arange(k).reshape(k, *([1] * len(self.batch_shape)))
        return values.expand(k, *tuple(self.batch_shape)) if expand else values
