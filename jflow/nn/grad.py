"""``flow.nn.grad``: the gradients of a convolution with respect to its input and its weight,
as functions of their own (``torch.nn.grad``), e.g. to write a custom ``autograd.Function``
around a convolution.

``conv{1,2,3}d_input(input_size, weight, grad_output, ...)`` is the gradient of
``conv{n}d(input, weight, ...)`` for ``input`` of shape ``input_size``;
``conv{1,2,3}d_weight(input, weight_size, grad_output, ...)`` the gradient for the weight
of shape ``weight_size``. They run jflow's convolution gradient ops (``conv2d_input_grad`` /
``conv2d_weight_grad`` and the 3-d ones, ``jflow/ops/conv.py``: the ops the convolutions'
backward rules use; 1-d runs the 2-d ops on a unit height dimension, as ``conv1d`` does), so
the results are differentiable in turn. Padding is ints only (PyTorch's functions take no
``"same"`` / ``"valid"`` either); the input must be batched.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from ..ops import get
from ..tensor import Tensor

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input",
           "conv3d_weight"]

_INPUT_GRAD = {2: get("conv2d_input_grad").apply, 3: get("conv3d_input_grad").apply}
_WEIGHT_GRAD = {2: get("conv2d_weight_grad").apply, 3: get("conv3d_weight_grad").apply}
#: the input-gradient op's attr holding the input's spatial size
_SIZE_ATTR = {2: "input_hw", 3: "input_size"}

IntOrInts = int | Sequence[int]


def _ints(fname: str, name: str, v: Any, nd: int) -> tuple[int, ...]:
    """``v`` (an int, or one or ``nd`` ints) as ``nd`` ints, as PyTorch's ``_single`` /
    ``_pair`` / ``_triple`` and the convolution's length check."""
    if isinstance(v, (bool, str)):
        raise TypeError(f"{fname}(): argument '{name}' must be an int or a tuple of ints, got "
                        f"{type(v).__name__}")
    try:
        t = (operator.index(v),) * nd if not isinstance(v, Sequence) \
            else tuple(operator.index(a) for a in v)
    except TypeError:
        raise TypeError(f"{fname}(): argument '{name}' must be an int or a tuple of ints, got "
                        f"{v!r}") from None
    if len(t) == 1:
        t = t * nd
    if len(t) != nd:
        raise RuntimeError(f"{fname}(): expected {name} to be a single integer value or a list "
                           f"of {nd} values to match the convolution dimensions, but got "
                           f"{name}={list(t)}")
    return t


def _size(fname: str, name: str, v: Any, nd: int) -> tuple[int, ...]:
    try:
        t = tuple(operator.index(a) for a in v)
    except TypeError:
        raise TypeError(f"{fname}(): argument '{name}' must be a sequence of ints, got "
                        f"{v!r}") from None
    if len(t) != nd + 2:
        raise RuntimeError(f"{fname}(): expected {name} to have {nd + 2} entries (batch, "
                           f"channels and {nd} spatial sizes), got {list(t)}")
    return t


def _tensor(fname: str, name: str, v: Any, nd: int) -> Tensor:
    if not isinstance(v, Tensor):
        raise TypeError(f"{fname}(): argument '{name}' must be Tensor, not {type(v).__name__}")
    if v.ndim != nd + 2:
        raise RuntimeError(f"{fname}(): expected {name} to be {nd + 2}-d, got shape "
                           f"{list(v.shape)}")
    return v


def _attrs(fname: str, stride: Any, padding: Any, dilation: Any, groups: Any,
           nd: int) -> dict[str, Any]:
    """The gradient ops' attrs, for the 2-d op when ``nd`` is 1 (a unit height dim)."""
    s = _ints(fname, "stride", stride, nd)
    p = _ints(fname, "padding", padding, nd)
    d = _ints(fname, "dilation", dilation, nd)
    if isinstance(groups, bool) or not isinstance(groups, int):
        raise TypeError(f"{fname}(): argument 'groups' must be an int, got "
                        f"{type(groups).__name__}")
    if groups <= 0:
        raise RuntimeError(f"{fname}(): non-positive groups is not supported, got {groups}")
    if any(a <= 0 for a in s):
        raise RuntimeError(f"{fname}(): non-positive stride is not supported, got {list(s)}")
    if any(a < 0 for a in p):
        raise RuntimeError(f"{fname}(): negative padding is not supported, got {list(p)}")
    if any(a <= 0 for a in d):
        raise RuntimeError(f"{fname}(): dilation should be greater than zero, got {list(d)}")
    if nd == 1:
        s, p, d = (1,) + s, (0,) + p, (1,) + d
    return {"stride": s, "padding": [a for v in p for a in (v, v)], "dilation": d,
            "groups": groups}


def _channels_message(fname: str, groups: int, wshape: Any, xshape: Any) -> str:
    """PyTorch's message for an input whose channels do not fit the weight and groups."""
    return (f"{fname}(): Given groups={groups}, weight of size {list(wshape)}, expected "
            f"input{list(xshape)} to have {wshape[1] * groups} channels, but got {xshape[1]} "
            f"channels instead")


def _lift(t: Tensor, nd: int) -> Tensor:
    """A 1-d operand with a unit height dim (1-d runs the 2-d op)."""
    return t.unsqueeze(2) if nd == 1 else t


def _conv_input(fname: str, input_size: Any, weight: Any, grad_output: Any, stride: Any,
                padding: Any, dilation: Any, groups: Any, nd: int) -> Tensor:
    size = _size(fname, "input_size", input_size, nd)
    w = _tensor(fname, "weight", weight, nd)
    dy = _tensor(fname, "grad_output", grad_output, nd)
    attrs = _attrs(fname, stride, padding, dilation, groups, nd)
    g = attrs["groups"]
    if size[1] != w.shape[1] * g:
        raise RuntimeError(_channels_message(fname, g, w.shape, size))
    if size[0] != dy.shape[0]:
        raise RuntimeError(f"{fname}(): input_size {list(size)} and grad_output of shape "
                           f"{list(dy.shape)} have different batch sizes")
    spatial = size[2:] if nd > 1 else (1,) + size[2:]
    try:
        dx = _INPUT_GRAD[max(nd, 2)](_lift(dy, nd), _lift(w, nd),
                                     **{_SIZE_ATTR[max(nd, 2)]: spatial}, **attrs)
    except (ValueError, TypeError) as e:  # the op's shape and dtype checks
        raise RuntimeError(f"{fname}(): {e}") from None
    return dx.squeeze(2) if nd == 1 else dx


def _conv_weight(fname: str, input: Any, weight_size: Any, grad_output: Any,  # noqa: A002
                 stride: Any, padding: Any, dilation: Any, groups: Any, nd: int) -> Tensor:
    x = _tensor(fname, "input", input, nd)
    size = _size(fname, "weight_size", weight_size, nd)
    dy = _tensor(fname, "grad_output", grad_output, nd)
    attrs = _attrs(fname, stride, padding, dilation, groups, nd)
    g = attrs["groups"]
    if size[1] * g != x.shape[1]:
        raise RuntimeError(_channels_message(fname, g, size, x.shape))
    if size[0] != dy.shape[1] or size[0] % g:
        raise RuntimeError(f"{fname}(): weight_size {list(size)} does not fit an input of "
                           f"shape {list(x.shape)} and grad_output of shape {list(dy.shape)} "
                           f"with groups={g} (expected ({dy.shape[1]}, {x.shape[1] // g}, "
                           f"...))")
    kernel = size[2:] if nd > 1 else (1,) + size[2:]
    try:
        dw = _WEIGHT_GRAD[max(nd, 2)](_lift(x, nd), _lift(dy, nd), kernel_size=kernel, **attrs)
    except (ValueError, TypeError) as e:  # the op's shape and dtype checks
        raise RuntimeError(f"{fname}(): {e}") from None
    return dw.squeeze(2) if nd == 1 else dw


def conv1d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                 stride: IntOrInts = 1, padding: IntOrInts = 0, dilation: IntOrInts = 1,
                 groups: int = 1) -> Tensor:
    """The gradient of ``conv1d(input, weight, ...)`` with respect to ``input``, of shape
    ``input_size`` ``(N, C_in, L)``, given ``grad_output`` ``(N, C_out, L_out)``."""
    return _conv_input("conv1d_input", input_size, weight, grad_output, stride, padding,
                       dilation, groups, 1)


def conv1d_weight(input: Tensor, weight_size: Sequence[int],  # noqa: A002
                  grad_output: Tensor, stride: IntOrInts = 1, padding: IntOrInts = 0,
                  dilation: IntOrInts = 1, groups: int = 1) -> Tensor:
    """The gradient of ``conv1d(input, weight, ...)`` with respect to ``weight``, of shape
    ``weight_size`` ``(C_out, C_in / groups, k)``, given ``grad_output``."""
    return _conv_weight("conv1d_weight", input, weight_size, grad_output, stride, padding,
                        dilation, groups, 1)


def conv2d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                 stride: IntOrInts = 1, padding: IntOrInts = 0, dilation: IntOrInts = 1,
                 groups: int = 1) -> Tensor:
    """The gradient of ``conv2d(input, weight, ...)`` with respect to ``input``, of shape
    ``input_size`` ``(N, C_in, H, W)``, given ``grad_output`` ``(N, C_out, H_out, W_out)``."""
    return _conv_input("conv2d_input", input_size, weight, grad_output, stride, padding,
                       dilation, groups, 2)


def conv2d_weight(input: Tensor, weight_size: Sequence[int],  # noqa: A002
                  grad_output: Tensor, stride: IntOrInts = 1, padding: IntOrInts = 0,
                  dilation: IntOrInts = 1, groups: int = 1) -> Tensor:
    """The gradient of ``conv2d(input, weight, ...)`` with respect to ``weight``, of shape
    ``weight_size`` ``(C_out, C_in / groups, kH, kW)``, given ``grad_output``."""
    return _conv_weight("conv2d_weight", input, weight_size, grad_output, stride, padding,
                        dilation, groups, 2)


def conv3d_input(input_size: Sequence[int], weight: Tensor, grad_output: Tensor,
                 stride: IntOrInts = 1, padding: IntOrInts = 0, dilation: IntOrInts = 1,
                 groups: int = 1) -> Tensor:
    """The gradient of ``conv3d(input, weight, ...)`` with respect to ``input``, of shape
    ``input_size`` ``(N, C_in, D, H, W)``, given ``grad_output``."""
    return _conv_input("conv3d_input", input_size, weight, grad_output, stride, padding,
                       dilation, groups, 3)


def conv3d_weight(input: Tensor, weight_size: Sequence[int],  # noqa: A002
                  grad_output: Tensor, stride: IntOrInts = 1, padding: IntOrInts = 0,
                  dilation: IntOrInts = 1, groups: int = 1) -> Tensor:
    """The gradient of ``conv3d(input, weight, ...)`` with respect to ``weight``, of shape
    ``weight_size`` ``(C_out, C_in / groups, kD, kH, kW)``, given ``grad_output``."""
    return _conv_weight("conv3d_weight", input, weight_size, grad_output, stride, padding,
                        dilation, groups, 3)
