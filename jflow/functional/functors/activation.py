"""Functors of the activation ops (``jflow/ops/activation.py``) that do more than call the op:
silu computes integer inputs in the default float dtype, leaky_relu takes ``inplace``, and
glu / prelu / rrelu are compositions of existing ops. relu, elu, gelu, softplus, hardtanh and
the table of issue-14 activations (selu, celu, hardswish, ...) are bound to their ops in
api.yaml (``=> op:elu``)."""

from __future__ import annotations

from typing import Any

from ..._dims import wrap_dim
from ...ops import get
from ...tensor import Tensor
from ..promotion import assign_inplace, to_float
from ..registry import api as _api
from ..registry import functor

_silu = get("silu").apply
_leaky_relu = get("leaky_relu").apply


@functor("Silu")
def silu(input: Tensor) -> Tensor:
    """x * sigmoid(x); bool / integer inputs in the default float dtype (as PyTorch)."""
    if input._meta.dtype.kind in "iub":
        input = to_float(input)
    return _silu(input)


@functor("LeakyRelu")
def leaky_relu(x: Tensor, alpha: float, inplace: bool) -> Tensor:
    """x if x > 0 else alpha * x; ``inplace`` writes the result into ``x``. (No defaults
    here: api.yaml's signature holds them and the parser always passes both.)"""
    y = _leaky_relu(x, alpha=alpha)
    return assign_inplace(x, y, "leaky_relu") if inplace else y


# -- activations that are compositions of existing ops -----------------------------------------
# glu, prelu and rrelu need no primitive of their own: their gradients (weight included, via
# the broadcasting mul's rule) come out right from the ops they are written with.


def _float_input(fname: str, input: Tensor) -> None:
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")


@functor("Glu")
def glu(input: Tensor, dim: int) -> Tensor:
    """a * sigmoid(b), where a, b are the two halves of ``input`` along ``dim``."""
    _float_input("glu", input)
    nd = input.ndim
    if nd == 0:
        raise ValueError("glu(): input must have at least 1 dimension, got a 0-d tensor")
    dim = wrap_dim("glu", dim, nd)
    n = int(input.shape[dim])
    if n % 2:
        raise ValueError(f"glu(): halving dimension must be even, but dimension {dim % nd} is "
                         f"size {n}")
    a, b = _api().chunk(input, 2, dim)
    return a * _api().sigmoid(b)


@functor("Prelu")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x if x > 0 else weight * x; ``weight`` has 1 element or one per channel (dim 1; a
    0-d or 1-d input has one channel), as PyTorch."""
    _float_input("prelu", input)
    if weight.ndim > 1:
        raise ValueError(f"prelu(): weight must be 0-d or 1-d, got {weight.ndim}-d")
    n = int(weight.numel())
    nd = input.ndim
    channels = int(input.shape[1]) if nd >= 2 else 1
    if n != 1 and n != channels:
        raise ValueError(f"prelu(): mismatch of parameter numbers and input channel size: "
                         f"weight has {n} elements, input has {channels} channels")
    if weight.dtype != input.dtype:
        weight = weight.to(input.dtype)
    if n == 1:
        w = weight.reshape(())
    else:
        w = weight.reshape((n,) + (1,) * (nd - 2))
    return _api().where(input > 0, input, w * input)


@functor("Rrelu")
def rrelu(input: Tensor, lower: float, upper: float, training: bool, inplace: bool,
          generator: Any) -> Tensor:
    """Randomized leaky ReLU. Evaluation: leaky_relu with slope (lower + upper) / 2. Training:
    each negative element gets its own slope drawn from U(lower, upper) (the generator's
    stream, so draws are reproducible with ``flow.manual_seed``; not PyTorch's numbers)."""
    _float_input("rrelu", input)
    if lower > upper:
        raise ValueError(f"rrelu(): lower bound ({lower}) must be less than or equal to the "
                         f"upper bound ({upper})")
    if not training:
        y = _leaky_relu(input, alpha=(lower + upper) / 2)
    else:
        u = _api().rand(tuple(input.shape), generator=generator, dtype=input.dtype,
                      device=input.device)
        y = _api().where(input >= 0, input, input * (u * (upper - lower) + lower))
    return assign_inplace(input, y, "rrelu") if inplace else y
