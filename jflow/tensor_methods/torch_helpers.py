"""The small torch.* helpers on dtypes and shapes (``result_type``, ``can_cast``,
``broadcast_shapes``, ``broadcast_tensors``, ``atleast_1d/2d/3d``, ``is_nonzero`` ...), the
methods among them (``positive``, ``is_same_size``, ``is_nonzero``, ``is_signed``), and
``INPLACE_FUNCTIONS``: PyTorch's top-level in-place functions (``torch.exp_(x)`` ...), which
``jflow/__init__.py`` puts in the ``flow`` namespace.

Imported after every module that attaches an in-place method: ``INPLACE_FUNCTIONS`` captures
the methods it calls (``Tensor.<name>``) when it is built.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..creation import full
from ..functional import F
from ..functional.promotion import assign_inplace
from ..ops.math import UnaryFunction, derive_unary_parts
from ..tensor import Size, Tensor
from ._forward import _SCALARS, _tensors


def positive(input: Tensor) -> Tensor:
    """``input`` itself (PyTorch's ``+x``); refused for a bool tensor, as PyTorch."""
    _tensors("positive", input)
    if input._meta.dtype == np.bool_:
        raise RuntimeError("positive(): the `+` operator, with a bool tensor is not supported "
                           "(argument 'input' must not be a bool tensor)")
    return input


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether ``input`` and ``other`` have the same shape."""
    _tensors("is_same_size", input, other)
    return tuple(input.shape) == tuple(other.shape)


def is_nonzero(input: Tensor) -> bool:
    """The truth of a one-element tensor (an error for any other size, as PyTorch)."""
    _tensors("is_nonzero", input)
    n = input.numel()
    if n == 0:
        raise RuntimeError("is_nonzero(): Boolean value of Tensor with no values is ambiguous")
    if n != 1:
        raise RuntimeError("is_nonzero(): Boolean value of Tensor with more than one value is "
                           "ambiguous (argument 'input' must have exactly one element)")
    return bool(input.item())


def is_signed(input: Tensor) -> bool:
    """Whether the dtype is signed (False for bool and uint8)."""
    _tensors("is_signed", input)
    return input._meta.dtype.kind not in "ub"


def is_floating_point(input: Tensor) -> bool:
    """Whether the dtype is a floating-point one (``torch.is_floating_point``)."""
    _tensors("is_floating_point", input)
    return input.is_floating_point()


def numel(input: Tensor) -> int:
    """The number of elements of ``input`` (``torch.numel``)."""
    _tensors("numel", input)
    return input.numel()


def _promotion_operand(fname: str, arg: str, x: Any) -> tuple[int, Any]:
    """(tier, dtype or category) of a ``result_type`` operand: 0 tensor with dims, 1 0-d
    tensor, 2 Python scalar."""
    if isinstance(x, Tensor):
        d = _dt.from_numpy_dtype(x._meta.dtype)
        return (0 if x.ndim else 1), d
    if isinstance(x, _SCALARS):
        return 2, _dt.scalar_category(x)
    raise TypeError(f"{fname}(): argument '{arg}' must be a Tensor or a Number, not "
                    f"{type(x).__name__}")


def result_type(tensor1: Any, tensor2: Any) -> _dt.dtype:
    """The dtype PyTorch's type promotion gives an op on ``tensor1`` and ``tensor2`` (each a
    tensor or a Python number)."""
    tiers: tuple[list, list, list] = ([], [], [])
    for arg, x in (("tensor1", tensor1), ("tensor2", tensor2)):
        tier, v = _promotion_operand("result_type", arg, x)
        tiers[tier].append(v)
    return _dt.result_type(*tiers)


def can_cast(from_: Any, to: Any) -> bool:
    """Whether PyTorch's casting rules allow ``from_`` to ``to`` (no float -> integer, no
    number -> bool; same-category narrowing is allowed)."""
    for arg, d in (("from_", from_), ("to", to)):
        if not isinstance(d, _dt.dtype):
            raise TypeError(f"can_cast(): argument '{arg}' must be a dtype, not "
                            f"{type(d).__name__}")
    return from_.category <= to.category


def broadcast_shapes(*shapes: Any) -> Any:
    """The shape the given shapes broadcast to (each a sequence of ints or an int), as a
    ``flow.Size``; a clear error when they do not broadcast."""
    norm = []
    for k, s in enumerate(shapes):
        if isinstance(s, (int, np.integer)):
            s = (int(s),)
        if not isinstance(s, (tuple, list)) or not all(isinstance(v, (int, np.integer))
                                                       for v in s):
            raise TypeError(f"broadcast_shapes(): shape {k} must be a sequence of ints or an "
                            f"int, got {s!r}")
        norm.append(tuple(int(v) for v in s))
    nd = max((len(s) for s in norm), default=0)
    out = [1] * nd
    for s in norm:
        for i, v in enumerate(s, nd - len(s)):
            if v < 0:
                raise RuntimeError(f"broadcast_shapes(): trying to create a tensor with "
                                   f"negative dimension {v}: {list(s)}")
            if out[i] == 1:
                out[i] = v
            elif v not in (1, out[i]):
                raise RuntimeError(f"broadcast_shapes(): shape mismatch: objects cannot be "
                                   f"broadcast to a single shape ({[list(t) for t in norm]})")
    return Size(out)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Each tensor expanded to the common broadcast shape (views, as PyTorch)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    _tensors("broadcast_tensors", *tensors)
    shape = tuple(broadcast_shapes(*(tuple(t.shape) for t in tensors)))
    return tuple(t if tuple(t.shape) == shape else F.expand(t, shape) for t in tensors)


def _atleast(fname: str, nd: int, tensors: tuple[Any, ...]) -> Any:
    single = len(tensors) == 1 and isinstance(tensors[0], Tensor)
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    _tensors(fname, *tensors)
    outs = []
    for t in tensors:
        d = t._meta.ndim
        if d >= nd:
            outs.append(t)
        elif d == 0:
            outs.append(F.reshape(t, (1,) * nd))
        elif d == 1:  # (n,) -> (1, n) -> (1, n, 1), as NumPy / PyTorch
            outs.append(F.reshape(t, (1, t.shape[0]) if nd == 2 else (1, t.shape[0], 1)))
        else:  # 2-d to 3-d: (m, n) -> (m, n, 1)
            outs.append(F.unsqueeze(t, -1))
    return outs[0] if single else tuple(outs)


def atleast_1d(*tensors: Any) -> Any:
    """Each tensor with at least 1 dimension (a 0-d one becomes shape ``(1,)``); one tensor
    in, one out; several (or a list) in, a tuple out."""
    return _atleast("atleast_1d", 1, tensors)


def atleast_2d(*tensors: Any) -> Any:
    """Each tensor with at least 2 dimensions (``(n,)`` becomes ``(1, n)``)."""
    return _atleast("atleast_2d", 2, tensors)


def atleast_3d(*tensors: Any) -> Any:
    """Each tensor with at least 3 dimensions (``(n,)`` becomes ``(1, n, 1)``, ``(m, n)``
    becomes ``(m, n, 1)``)."""
    return _atleast("atleast_3d", 3, tensors)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """``torch.select``: ``input.select(dim, index)`` (a view without ``dim``)."""
    _tensors("select", input)
    return input.select(dim, index)


def detach(input: Tensor) -> Tensor:
    """``torch.detach``: ``input.detach()`` (shares the value, no history)."""
    _tensors("detach", input)
    return input.detach()


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    """A 0-d tensor holding the number ``s`` (default dtype: the default float dtype, as
    PyTorch, whatever the number's type)."""
    if isinstance(s, Tensor):
        if s.numel() != 1:
            raise RuntimeError("scalar_tensor(): argument 's' must be a number or a "
                               "one-element tensor")
        s = s.item()
    if not isinstance(s, _SCALARS):
        raise TypeError(f"scalar_tensor(): argument 's' must be a Number, not "
                        f"{type(s).__name__}")
    return full((), s, dtype=_dt.get_default_dtype() if dtype is None else dtype,
                device=device, requires_grad=requires_grad)


Tensor.positive = positive
Tensor.is_same_size = is_same_size
Tensor.is_nonzero = is_nonzero
Tensor.is_signed = is_signed


def _top_inplace(name: str):
    meth = getattr(Tensor, name)

    def fn(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                            f"{type(input).__name__}")
        return meth(input, *args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``flow.{name}(x, ...)`` is ``x.{name}(...)``: {meth.__doc__ or ''}"
    return fn


#: torch.<name>_ in-place functions: each is the method of the same name (those of the declared
#: unary functions, ``ops.math.unary_function``, derived below).
INPLACE_FUNCTIONS = {n: _top_inplace(n) for n in [
    "abs_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "clamp_",
    "clamp_max_", "clamp_min_", "clip_", "fill_", "fix_", "frac_", "ldexp_", "logit_",
    "nan_to_num_", "neg_", "negative_", "relu_", "square_", "xlogy_", "zero_", "addmv_",
    "index_put_", "detach_"]}


def _unary_inplace_function(u: UnaryFunction) -> None:
    """``torch.<name>_`` of a declared unary function, where PyTorch has one (bound as
    ``flow.<name>_`` at import: one declared later is reached as ``INPLACE_FUNCTIONS``)."""
    if u.inplace_function:
        if f"{u.name}_" in INPLACE_FUNCTIONS:
            raise ValueError(f"unary_function('{u.name}'): torch.{u.name}_ already exists")
        INPLACE_FUNCTIONS[f"{u.name}_"] = _top_inplace(f"{u.name}_")
        _DERIVED.add(u.name)


_DERIVED: set[str] = set()


def _forget_unary_inplace_function(name: str) -> None:
    if name in _DERIVED:
        _DERIVED.discard(name)
        del INPLACE_FUNCTIONS[f"{name}_"]


derive_unary_parts(_unary_inplace_function, _forget_unary_inplace_function)


def selu_(input: Tensor) -> Tensor:
    """``torch.selu_``: ``selu`` written into ``input``."""
    _tensors("selu_", input)
    return assign_inplace(input, F.selu(input), "selu_")


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``torch.celu_``: ``celu(input, alpha)`` written into ``input``."""
    _tensors("celu_", input)
    return assign_inplace(input, F.celu(input, alpha), "celu_")


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``torch.threshold_``: ``threshold(input, threshold, value)`` written into ``input``."""
    _tensors("threshold_", input)
    return assign_inplace(input, F.threshold(input, threshold, value), "threshold_")


def rrelu_(input: Tensor, lower: float = 0.125, upper: float = 1.0 / 3.0,
           training: bool = False, generator: Any = None) -> Tensor:
    """``torch.rrelu_``: ``rrelu`` written into ``input``."""
    _tensors("rrelu_", input)
    return F.rrelu(input, lower, upper, training, True, generator=generator)


INPLACE_FUNCTIONS.update(selu_=selu_, celu_=celu_, threshold_=threshold_, rrelu_=rrelu_)

INPLACE_FUNCTIONS.update({n: _top_inplace(n) for n in ("gcd_", "lcm_")})
