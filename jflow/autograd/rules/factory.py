"""Backward rules of the factory family's draws with tensor parameters (``jflow/ops/factory.py``):
PyTorch's derivatives.yaml gives ``poisson`` a zero gradient and ``binomial`` none (its
backward raises). The other factory ops are ``NoGrad``."""

from __future__ import annotations

from ..rule import register_backward
from ._util import zeros_like


@register_backward("poisson")
def _poisson(ctx, dy):
    """Zero, as PyTorch's ``PoissonBackward0``: a draw is piecewise constant in its rate."""
    return [zeros_like(dy), None, None]


@register_backward("binomial")
def _binomial(ctx, dy):
    """No derivative, as PyTorch's (derivatives.yaml: not_implemented): the outputs of a call
    on parameters requiring grad require grad, and a gradient reaching them raises PyTorch's
    error. The op's samples declare it (``grad_error``), the checker checks it."""
    raise NotImplementedError("derivative for aten::binomial is not implemented")
