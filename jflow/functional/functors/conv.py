"""Functors of the conv ops (``jflow/ops/conv.py``): conv1d/2d/3d, conv_transpose1d/2d/3d
and unfold / fold (the im2col / col2im ops) — PyTorch's argument rules, then the op.

conv1d and conv_transpose1d run the 2-d ops on a unit height dimension (reshapes in the
functor); the bias is added after the op (broadcast over N and the spatial dims), so its
gradient is the ordinary sum.

Under ``flow.autocast`` (:mod:`jflow.amp.autocast_mode`) the input, weight and bias are first
cast to the autocast dtype (PyTorch's lower-precision list has every convolution); the check
costs one thread-local read when autocast is off.
"""

from __future__ import annotations

from typing import Any

from ...amp.autocast_mode import state as _autocast
from ...ops import get
from ...tensor import Tensor
from ..registry import functor
from ._spatial import pair, unbatch
from .matmul import autocast_args

_CONV = {2: get("conv2d").apply, 3: get("conv3d").apply}
_CONV_T = {2: get("conv_transpose2d").apply, 3: get("conv_transpose3d").apply}
_im2col = get("im2col").apply
_col2im = get("col2im").apply
_reshape = get("reshape").apply
_add = get("add").apply


def _check(fname: str, input: Tensor, weight: Tensor, bias: Any, nd: int) -> None:
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    if input._meta.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{fname}(): expected a {nd + 1}-d (unbatched) or {nd + 2}-d "
                           f"(batched) input, got shape {list(input._meta.shape)}")
    if weight._meta.ndim != nd + 2:
        raise RuntimeError(f"{fname}(): expected a {nd + 2}-d weight, got shape "
                           f"{list(weight._meta.shape)}")
    if bias is not None and tuple(bias._meta.shape) != (weight._meta.shape[0],):
        raise RuntimeError(f"{fname}(): bias must have shape ({weight._meta.shape[0]},), got "
                           f"{list(bias._meta.shape)}")


def _padding(fname: str, padding: Any, kernel: tuple[int, ...], stride: tuple[int, ...],
             dilation: tuple[int, ...]) -> list[int]:
    """(lo, hi) per spatial dim, flattened; "same" pads as PyTorch (the extra one at the end)."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return [0] * (2 * n)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{fname}(): padding='same' is not supported for strided "
                                 f"convolutions")
            out = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                out += [total // 2, total - total // 2]
            return out
        raise ValueError(f"{fname}(): invalid padding string {padding!r}, should be one of "
                         f"'valid' or 'same'")
    p = pair(fname, "padding", padding, n)
    if any(a < 0 for a in p):
        raise ValueError(f"{fname}(): negative padding is not supported, got {list(p)}")
    return [a for v in p for a in (v, v)]


def _lift(input: Tensor, weight: Tensor, nd: int) -> tuple[Tensor, Tensor, bool]:
    """The operands as the kernel takes them: a batch dimension added to an unbatched input,
    and for 1-d a unit height dimension (1-d runs on the 2-d kernel); whether it was
    unbatched (``_finish`` undoes both)."""
    unbatched = input._meta.ndim == nd + 1
    x, w = input, weight
    if unbatched:
        x = _reshape(x, shape=(1,) + tuple(x._meta.shape))
    if nd == 1:
        x = _reshape(x, shape=x._meta.shape[:2] + (1,) + x._meta.shape[2:])
        w = _reshape(w, shape=w._meta.shape[:2] + (1,) + w._meta.shape[2:])
    return x, w, unbatched


def _finish(y: Tensor, bias: Any, nd: int, unbatched: bool) -> Tensor:
    """A (transposed) convolution's result: ``bias`` added per channel, then the unit height
    dim of a 1-d conv and the batch dim of an unbatched input taken out again."""
    if bias is not None:
        y = _add(y, _reshape(bias, shape=(1, bias._meta.shape[0]) + (1,) * (y.ndim - 2)))
    out_shape = tuple(y._meta.shape)
    if nd == 1:
        out_shape = out_shape[:2] + out_shape[3:]
    if unbatched:
        out_shape = out_shape[1:]
    return _reshape(y, shape=out_shape) if out_shape != tuple(y._meta.shape) else y


def _conv(fname: str, input: Tensor, weight: Tensor, bias: Any, stride: Any, padding: Any,
          dilation: Any, groups: int, nd: int) -> Tensor:
    if _autocast.dtype is not None:
        input, weight, bias = autocast_args(_autocast.dtype, input, weight, bias)
    _check(fname, input, weight, bias, nd)
    stride = pair(fname, "stride", stride, nd)
    dilation = pair(fname, "dilation", dilation, nd)
    pad = _padding(fname, padding, tuple(weight._meta.shape[2:]), stride, dilation)
    x, w, unbatched = _lift(input, weight, nd)
    if nd == 1:
        stride, dilation, pad = (1,) + stride, (1,) + dilation, [0, 0] + pad
    y = _CONV[max(nd, 2)](x, w, stride=stride, padding=pad, dilation=dilation,
                          groups=int(groups))
    return _finish(y, bias, nd, unbatched)


@functor("Conv2d")
def conv2d(input: Tensor, weight: Tensor, bias: Any, stride: Any, padding: Any, dilation: Any,
           groups: int) -> Tensor:
    """2-d cross-correlation (torch.nn.functional.conv2d): input (N, C, H, W) or (C, H, W),
    weight (O, C / groups, kH, kW); padding an int, 2 ints, "valid" or "same"."""
    return _conv("conv2d", input, weight, bias, stride, padding, dilation, groups, 2)


@functor("Conv1d")
def conv1d(input: Tensor, weight: Tensor, bias: Any, stride: Any, padding: Any, dilation: Any,
           groups: int) -> Tensor:
    """1-d cross-correlation (torch.nn.functional.conv1d): input (N, C, L) or (C, L), weight
    (O, C / groups, k); runs the conv2d op on a unit height dimension."""
    return _conv("conv1d", input, weight, bias, stride, padding, dilation, groups, 1)


@functor("Conv3d")
def conv3d(input: Tensor, weight: Tensor, bias: Any, stride: Any, padding: Any, dilation: Any,
           groups: int) -> Tensor:
    """3-d cross-correlation (torch.nn.functional.conv3d): input (N, C, D, H, W) or
    (C, D, H, W), weight (O, C / groups, kD, kH, kW); padding an int, 3 ints, "valid" or
    "same"."""
    return _conv("conv3d", input, weight, bias, stride, padding, dilation, groups, 3)


def _conv_transpose(fname: str, input: Tensor, weight: Tensor, bias: Any, stride: Any,
                    padding: Any, output_padding: Any, groups: int, dilation: Any,
                    nd: int) -> Tensor:
    if _autocast.dtype is not None:
        input, weight, bias = autocast_args(_autocast.dtype, input, weight, bias)
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    if input._meta.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{fname}(): expected a {nd + 1}-d (unbatched) or {nd + 2}-d "
                           f"(batched) input, got shape {list(input._meta.shape)}")
    ws = tuple(weight._meta.shape)
    if len(ws) != nd + 2:
        raise RuntimeError(f"{fname}(): expected a {nd + 2}-d weight (Cin, Cout/groups, "
                           f"{', '.join(('kD', 'kH', 'kW')[3 - nd:])}), got shape {list(ws)}")
    if bias is not None and tuple(bias._meta.shape) != (ws[1] * int(groups),):
        raise RuntimeError(f"{fname}(): bias must have shape ({ws[1] * int(groups)},), got "
                           f"{list(bias._meta.shape)}")
    stride = pair(fname, "stride", stride, nd)
    padding = pair(fname, "padding", padding, nd)
    output_padding = pair(fname, "output_padding", output_padding, nd)
    dilation = pair(fname, "dilation", dilation, nd)
    if any(p < 0 for p in padding) or any(p < 0 for p in output_padding):
        raise ValueError(f"{fname}(): negative padding is not supported, got padding "
                         f"{list(padding)} and output_padding {list(output_padding)}")
    if any(op >= max(s, d) for op, s, d in zip(output_padding, stride, dilation)):
        raise ValueError(f"{fname}(): output_padding must be smaller than either stride or "
                         f"dilation, got output_padding {list(output_padding)}, stride "
                         f"{list(stride)} and dilation {list(dilation)}")
    x, w, unbatched = _lift(input, weight, nd)
    if nd == 1:
        stride, padding = (1,) + stride, (0,) + padding
        output_padding, dilation = (0,) + output_padding, (1,) + dilation
    try:
        y = _CONV_T[max(nd, 2)](x, w, stride=stride, padding=padding,
                                output_padding=output_padding, dilation=dilation,
                                groups=int(groups))
    except ValueError as e:
        raise ValueError(f"{fname}(): {e}") from None
    return _finish(y, bias, nd, unbatched)


@functor("ConvTranspose1d")
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Any, stride: Any, padding: Any,
                     output_padding: Any, groups: int, dilation: Any) -> Tensor:
    """1-d transposed convolution (torch.nn.functional.conv_transpose1d): input (N, Cin, L)
    or (Cin, L), weight (Cin, Cout / groups, k); runs the conv_transpose2d op on a unit height
    dimension."""
    return _conv_transpose("conv_transpose1d", input, weight, bias, stride, padding,
                           output_padding, groups, dilation, 1)


@functor("ConvTranspose2d")
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Any, stride: Any, padding: Any,
                     output_padding: Any, groups: int, dilation: Any) -> Tensor:
    """2-d transposed convolution (torch.nn.functional.conv_transpose2d): input (N, Cin, H, W)
    or (Cin, H, W), weight (Cin, Cout / groups, kH, kW); output size per dim
    ``(H - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1``."""
    return _conv_transpose("conv_transpose2d", input, weight, bias, stride, padding,
                           output_padding, groups, dilation, 2)


@functor("ConvTranspose3d")
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Any, stride: Any, padding: Any,
                     output_padding: Any, groups: int, dilation: Any) -> Tensor:
    """3-d transposed convolution (torch.nn.functional.conv_transpose3d): input
    (N, Cin, D, H, W) or (Cin, D, H, W), weight (Cin, Cout / groups, kD, kH, kW)."""
    return _conv_transpose("conv_transpose3d", input, weight, bias, stride, padding,
                           output_padding, groups, dilation, 3)


def _op_message(e: Exception, op: str) -> str:
    """The op's error message without its ``op 'name': `` prefix (the caller names itself)."""
    return str(e).removeprefix(f"op '{op}': ")


def _fold_attrs(fname: str, kernel_size: Any, dilation: Any, padding: Any,
                stride: Any) -> dict[str, tuple[int, ...]]:
    out = {}
    for name, v, lo in (("kernel_size", kernel_size, 1), ("dilation", dilation, 1),
                        ("padding", padding, 0), ("stride", stride, 1)):
        t = pair(fname, name, v, 2)
        if any(a < lo for a in t):
            raise ValueError(f"{fname}(): {name} must be {'positive' if lo else 'non-negative'}"
                             f", got {list(t)}")
        out[name] = t
    return out


@functor("Unfold")
def unfold(input: Tensor, kernel_size: Any, dilation: Any, padding: Any,
           stride: Any) -> Tensor:
    """Sliding blocks as columns (torch.nn.functional.unfold, im2col): input (N, C, H, W) or
    (C, H, W) -> (N, C kH kW, L) or (C kH kW, L), L the number of blocks (row-major)."""
    fname = "unfold"
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    if input._meta.ndim not in (3, 4):
        raise RuntimeError(f"{fname}(): expected a 3-d (unbatched) or 4-d (batched) input, "
                           f"got shape {list(input._meta.shape)}")
    a = _fold_attrs(fname, kernel_size, dilation, padding, stride)
    unbatched = input._meta.ndim == 3
    x = _reshape(input, shape=(1,) + tuple(input._meta.shape)) if unbatched else input
    try:
        y = _im2col(x, **a)
    except ValueError as e:
        raise ValueError(f"{fname}(): {_op_message(e, 'im2col')}") from None
    return unbatch(y, unbatched)


@functor("Fold")
def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any, padding: Any,
         stride: Any) -> Tensor:
    """Columns summed back into an image (torch.nn.functional.fold, col2im; overlapping
    entries add up): input (N, C kH kW, L) or (C kH kW, L) -> (N, C, H, W) or (C, H, W)."""
    fname = "fold"
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    if input._meta.ndim not in (2, 3):
        raise RuntimeError(f"{fname}(): expected a 2-d (unbatched) or 3-d (batched) input, "
                           f"got shape {list(input._meta.shape)}")
    a = _fold_attrs(fname, kernel_size, dilation, padding, stride)
    size = pair(fname, "output_size", output_size, 2)
    if any(s < 1 for s in size):
        raise ValueError(f"{fname}(): output_size must be positive, got {list(size)}")
    unbatched = input._meta.ndim == 2
    x = _reshape(input, shape=(1,) + tuple(input._meta.shape)) if unbatched else input
    try:
        y = _col2im(x, output_size=size, **a)
    except ValueError as e:
        raise ValueError(f"{fname}(): {_op_message(e, 'col2im')}") from None
    return unbatch(y, unbatched)
