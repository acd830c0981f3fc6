"""``torch.distributions.constraints``: where a distribution's parameters and values live;
``constraint.check(value)`` is a boolean tensor."""

from __future__ import annotations

from typing import Any

__all__ = ["Constraint", "real", "positive", "nonnegative", "unit_interval", "boolean",
           "simplex", "integer_interval", "nonnegative_integer", "greater_than",
           "greater_than_eq", "interval", "half_open_interval", "real_vector", "independent",
           "dependent", "probability"]


class Constraint:
    """A region of values: :meth:`check` says, per element, whether a value is in it."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Any) -> Any:
        """A boolean tensor: which elements satisfy the constraint."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__[1:] + "()"


class _Dependent(Constraint):
    """Depends on other parameters: not checkable on its own."""

    def check(self, value: Any) -> Any:
        raise ValueError("Cannot determine validity of dependent constraint")


class _Real(Constraint):
    def check(self, value: Any) -> Any:
        return value == value  # not NaN


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Any) -> Any:
        return (value == 0) | (value == 1)


class _GreaterThan(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Any) -> Any:
        return value > self.lower_bound


class _GreaterThanEq(_GreaterThan):
    def check(self, value: Any) -> Any:
        return value >= self.lower_bound


class _Interval(Constraint):
    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Any) -> Any:
        return (value >= self.lower_bound) & (value <= self.upper_bound)


class _HalfOpenInterval(_Interval):
    def check(self, value: Any) -> Any:
        return (value >= self.lower_bound) & (value < self.upper_bound)


class _IntegerInterval(_Interval):
    is_discrete = True

    def check(self, value: Any) -> Any:
        return (value % 1 == 0) & super().check(value)


class _IntegerGreaterThan(_GreaterThanEq):
    is_discrete = True

    def check(self, value: Any) -> Any:
        return (value % 1 == 0) & (value >= self.lower_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Any) -> Any:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Independent(Constraint):
    def __init__(self, base: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint, self.reinterpreted_batch_ndims = base, reinterpreted_batch_ndims
        self.event_dim = base.event_dim + reinterpreted_batch_ndims

    def check(self, value: Any) -> Any:
        r = self.base_constraint.check(value)
        for _ in range(self.reinterpreted_batch_ndims):
            r = r.all(-1)
        return r


dependent = _Dependent()
real = _Real()
boolean = _Boolean()
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
unit_interval = _Interval(0.0, 1.0)
probability = unit_interval
simplex = _Simplex()
nonnegative_integer = _IntegerGreaterThan(0)
real_vector = _Independent(real, 1)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
interval = _Interval
half_open_interval = _HalfOpenInterval
integer_interval = _IntegerInterval
independent = _Independent
