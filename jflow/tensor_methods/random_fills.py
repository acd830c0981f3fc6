"""In-place random fills: ``normal_``, ``uniform_``, ``exponential_``, ``bernoulli_``,
``random_``, ``cauchy_``, ``log_normal_``, ``geometric_``, and the ``bernoulli`` /
``multinomial`` methods.

Each draws from ``flow.rand`` / ``randn`` / ``randint`` (the default generator or the
``generator=`` given; float64 draws for float64 tensors, else float32), transforms the draws
(the inverse CDF for the continuous ones) and writes them with ``assign_inplace``, so views
see the write.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from .. import dtypes as _dt
from ..creation import _draw_device, _draw_dtype, bernoulli, multinomial
from ..functional import F
from ..functional.promotion import assign_inplace, cast
from ..tensor import Tensor
from ._forward import _SCALARS
from .conversion import _TYPE_NAMES


def _check_floating(self: Tensor, fname: str) -> None:
    if not self.is_floating_point():
        raise RuntimeError(f"{fname}: not implemented for '{_TYPE_NAMES[self.dtype.name][:-6]}' "
                           f"(a floating point tensor is expected)")


def _uniform_like(self: Tensor, generator: Any) -> Tensor:
    """Uniform [0, 1) draws in ``self``'s shape (float64 for float64, else float32)."""
    return F.rand(tuple(self.shape), generator=generator, dtype=_draw_dtype(self),
                  device=_draw_device(self))


def normal_(self: Tensor, mean: Any = 0.0, std: Any = 1.0, *,
            generator: Any = None) -> Tensor:
    """Fill with draws from N(``mean``, ``std``**2) in place (floating tensors)."""
    _check_floating(self, "normal_")
    if isinstance(std, _SCALARS) and std < 0:
        raise RuntimeError(f"normal_ expects std >= 0.0, but found std {std}")
    z = F.randn(tuple(self.shape), generator=generator, dtype=_draw_dtype(self),
                device=_draw_device(self))
    if not (isinstance(std, _SCALARS) and std == 1):
        z = z * std
    if not (isinstance(mean, _SCALARS) and mean == 0):
        z = z + mean
    return assign_inplace(self, cast(z, self._meta.dtype), "normal_")


def uniform_(self: Tensor, a: Any = 0.0, b: Any = 1.0, *, generator: Any = None,
             **kwargs: Any) -> Tensor:
    """Fill with draws from U[``a``, ``b``) in place (floating tensors); PyTorch's keyword
    names ``from=`` / ``to=`` are accepted too."""
    a = kwargs.pop("from", a)
    b = kwargs.pop("to", b)
    if kwargs:
        raise TypeError(f"uniform_() got unexpected keyword argument(s) {sorted(kwargs)}")
    _check_floating(self, "uniform_")
    if isinstance(a, _SCALARS) and isinstance(b, _SCALARS) and a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={a} > to={b}")
    u = _uniform_like(self, generator)
    return assign_inplace(self, cast(u * (b - a) + a, self._meta.dtype), "uniform_")


def exponential_(self: Tensor, lambd: Any = 1.0, *, generator: Any = None) -> Tensor:
    """Fill with draws from Exp(``lambd``) (density ``lambd * exp(-lambd x)``) in place."""
    _check_floating(self, "exponential_")
    if isinstance(lambd, _SCALARS) and not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    u = _uniform_like(self, generator)
    e = F.neg(F.log1p(F.neg(u))) / lambd
    return assign_inplace(self, cast(e, self._meta.dtype), "exponential_")


def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Any = None) -> Tensor:
    """Fill with 0/1 in place: 1 with probability ``p`` (a number, or a tensor broadcast to
    this shape). Any dtype, as PyTorch."""
    if isinstance(p, _SCALARS) and not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    if isinstance(p, Tensor) and p.ndim > self.ndim:
        raise RuntimeError(f"bernoulli_: p of shape {list(p.shape)} does not broadcast to "
                           f"{list(self.shape)}")
    out = F.lt(_uniform_like(self, generator), p)
    return assign_inplace(self, cast(out, self._meta.dtype), "bernoulli_")


def _random_top(self: Tensor) -> int:
    """``random_()``'s exclusive upper bound: every integer the dtype holds exactly (2**mantissa
    + 1 for floats, the dtype's maximum for integers; PyTorch's inclusive top is one more,
    drawn with probability ~2**-63, so the difference cannot be observed)."""
    dt = np.dtype(self._meta.dtype)
    if dt == np.bool_:
        return 2
    if dt.kind == "f" or self.dtype is _dt.bfloat16:
        return 2 ** (int(jax.numpy.finfo(self._meta.dtype).nmant) + 1) + 1
    return int(np.iinfo(dt).max)


def random_(self: Tensor, *args: Any, generator: Any = None, **kwargs: Any) -> Tensor:
    """Fill with integers drawn uniformly in place: ``random_()`` over every integer the dtype
    holds exactly, ``random_(to)`` from ``[0, to)``, ``random_(from, to)`` from ``[from, to)``
    (``from=`` / ``to=`` keywords as PyTorch)."""
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments, got {len(args)}")
    lo, hi = (0, args[0]) if len(args) == 1 else (args + (0, None)[len(args):])
    lo = kwargs.pop("from", lo)
    hi = kwargs.pop("to", hi)
    if kwargs:
        raise TypeError(f"random_() got unexpected keyword argument(s) {sorted(kwargs)}")
    if self.is_complex():
        raise RuntimeError("random_: not implemented for complex tensors")
    if hi is None:
        hi = _random_top(self)
    if not lo < hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                           f"from={lo} >= to={hi}")
    r = F.randint(int(lo), int(hi), tuple(self.shape), generator=generator,
                  dtype=_dt.int64, device=_draw_device(self))
    return assign_inplace(self, cast(r, self._meta.dtype), "random_")


Tensor.random_ = random_
Tensor.normal_ = normal_
Tensor.uniform_ = uniform_
Tensor.exponential_ = exponential_
Tensor.bernoulli_ = bernoulli_


def _bernoulli(self: Tensor, p: Any = None, *, generator: Any = None) -> Tensor:
    """0/1 draws with probability ``p`` (default: this tensor's values), its shape."""
    return bernoulli(self, p, generator=generator)


def _multinomial(self: Tensor, num_samples: int, replacement: bool = False, *,
                 generator: Any = None) -> Tensor:
    """Indices drawn from the categorical distribution(s) in this tensor's last dim."""
    return multinomial(self, num_samples, replacement, generator=generator)


Tensor.bernoulli, Tensor.multinomial = _bernoulli, _multinomial


# -- more in-place random fills (as exponential_: uniform draws, then the inverse CDF) ----------

def cauchy_(self: Tensor, median: Any = 0.0, sigma: Any = 1.0, *,
            generator: Any = None) -> Tensor:
    """Fill with draws from Cauchy(``median``, ``sigma``) in place (floating tensors):
    ``median + sigma * tan(pi (u - 1/2))``."""
    _check_floating(self, "cauchy_")
    if isinstance(sigma, _SCALARS) and not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    u = _uniform_like(self, generator)
    c = F.tan(F.mul(F.sub(u, 0.5), float(np.pi))) * sigma + median
    return assign_inplace(self, cast(c, self._meta.dtype), "cauchy_")


def log_normal_(self: Tensor, mean: Any = 1.0, std: Any = 2.0, *,
                generator: Any = None) -> Tensor:
    """Fill with ``exp(N(mean, std**2))`` draws in place (floating tensors)."""
    _check_floating(self, "log_normal_")
    if isinstance(std, _SCALARS) and not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    z = F.randn(tuple(self.shape), generator=generator, dtype=_draw_dtype(self),
                device=_draw_device(self))
    return assign_inplace(self, cast(F.exp(z * std + mean), self._meta.dtype), "log_normal_")


def geometric_(self: Tensor, p: Any, *, generator: Any = None) -> Tensor:
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...) in
    place: ``ceil(log(1 - u) / log(1 - p))``, at least 1. Any real dtype, as PyTorch."""
    if isinstance(p, _SCALARS) and not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if self.is_complex() or self.dtype is _dt.bool_:
        raise RuntimeError(f"geometric_: not implemented for '{self.dtype}'")
    u = _uniform_like(self, generator)
    k = F.ceil(F.div(F.log1p(F.neg(u)), float(np.log1p(-p))))
    k = F.clamp(k, 1.0, None)
    return assign_inplace(self, cast(k, self._meta.dtype), "geometric_")


Tensor.cauchy_, Tensor.log_normal_, Tensor.geometric_ = cauchy_, log_normal_, geometric_
