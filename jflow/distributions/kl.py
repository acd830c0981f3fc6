"""``kl_divergence(p, q)`` for pairs of the same family (Normal, Categorical, Bernoulli)."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import _ops
from .bernoulli import Bernoulli
from .categorical import Categorical
from .normal import Normal

__all__ = ["kl_divergence", "register_kl"]

_KL: dict[tuple[type, type], Any] = {}


def register_kl(type_p: type, type_q: type) -> Any:
    """Decorator registering ``fn(p, q)`` as the KL divergence of that pair of types."""
    def wrap(fn: Any) -> Any:
        _KL[(type_p, type_q)] = fn
        return fn
    return wrap


def kl_divergence(p: Any, q: Any) -> Tensor:
    """``KL(p || q)``, batched."""
    fn = _KL.get((type(p), type(q)))
    if fn is None:
        raise NotImplementedError(f"kl_divergence: no formula for {type(p).__name__} and "
                                  f"{type(q).__name__}")
    return fn(p, q)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = _ops.where(q.probs == 0, float("inf"), t)
    t = _ops.where(p.probs == 0, 0.0, t)
    return t.sum(-1)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    sp = _ops.nn_functional.softplus
    t1 = p.probs * (sp(-q.logits) - sp(-p.logits))
    t2 = (1 - p.probs) * (sp(q.logits) - sp(p.logits))
    return t1 + t2
