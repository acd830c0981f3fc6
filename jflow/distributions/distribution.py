"""``Distribution``: the base class (batch / event shapes, argument validation)."""

from __future__ import annotations

from typing import Any

from ..tensor import Size, Tensor
from . import constraints

__all__ = ["Distribution"]


class Distribution:
    """A batch of distributions over events, as ``torch.distributions.Distribution``."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict[str, constraints.Constraint] = {}
    support: constraints.Constraint | None = None
    _validate_args = False

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Whether new distributions check their arguments (PyTorch's default: checks)."""
        Distribution._validate_args = bool(value)

    def __init__(self, batch_shape: Any = (), event_shape: Any = (),
                 validate_args: bool | None = None) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for name, c in self.arg_constraints.items():
                value = getattr(self, name, None)
                if isinstance(value, Tensor) and not bool(c.check(value).all()):
                    raise ValueError(f"Expected parameter {name} of {type(self).__name__} to "
                                     f"satisfy the constraint {c!r}")

    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of one sample."""
        return self._event_shape

    def _extended_shape(self, sample_shape: Any = ()) -> tuple[int, ...]:
        return tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape)

    def _validate_sample(self, value: Any) -> None:
        if self._validate_args and self.support is not None:
            if not bool(self.support.check(value).all()):
                raise ValueError(f"Expected value argument to be within the support "
                                 f"({self.support!r}) of {type(self).__name__}")

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """A sample (no gradient)."""
        from ..autograd import no_grad  # noqa: PLC0415
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """A reparameterised sample (differentiable in the parameters)."""
        raise NotImplementedError(f"{type(self).__name__} has no rsample")

    def sample_n(self, n: int) -> Tensor:
        """``sample((n,))``."""
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        """Log density / mass of ``value``."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """Entropy of each distribution in the batch."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """Cumulative distribution function."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """Inverse cumulative distribution function."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """``exp(entropy)``."""
        return self.entropy().exp()

    @property
    def mean(self) -> Tensor:
        """The mean."""
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        """The mode."""
        raise NotImplementedError

    @property
    def variance(self) -> Tensor:
        """The variance."""
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The standard deviation."""
        return self.variance.sqrt()

    def __repr__(self) -> str:
        params = ", ".join(f"{k}: {tuple(getattr(self, k).shape)}"
                           for k in self.arg_constraints if k in self.__dict__)
        return f"{type(self).__name__}({params})"
