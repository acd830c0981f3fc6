"""The makers every other module of the package shares; attaches nothing itself.

Each maker turns a functional entry (``flow._C.<name>``, i.e. ``F.<name>``, or a functor of
``functional/registry.FUNCTORS``) into a ``Tensor`` method: ``_binary`` a Python operator with
its reflected form, ``_inplace`` an augmented assignment passing ``inplace=True``,
``_assign_result`` an in-place form that writes the out-of-place result through
``assign_inplace`` (PyTorch's cast rules, views written through, the graph kept), ``_method`` a
named method forwarding to ``flow._C`` (the function itself when it already takes the tensor
first), ``_inplace_method`` an in-place method passing ``inplace=True``, ``_alpha_method``
``add``/``sub`` that also take a 0-d tensor ``alpha``. ``_operand`` turns a NumPy operand into a
tensor; ``_tensors`` is the argument check of the torch.* helpers. Kept in one place so every
module builds its methods the same way.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import numpy as np

from ..creation import as_tensor
from ..functional import F
from ..functional.functors.math import tensor_alpha
from ..functional.promotion import assign_inplace
from ..functional.registry import FUNCTORS as _FN
from ..functional.signature import LazySignature
from ..tensor import Tensor

_SCALARS = (bool, int, float, complex, np.bool_, np.integer, np.floating, np.complexfloating)


def _as_method_signature(fn: Any, drop: tuple[str, ...] = ()) -> LazySignature:
    """``fn``'s signature as a method's (built on first use, as the functions' own): its first
    parameter, the tensor, becomes ``self``; ``drop`` names parameters the method fixes (an
    in-place method's ``inplace``). So ``help(x.add)`` shows ``add(other, *, alpha=1, ...)``,
    not ``(*args, **kwargs)``."""
    def build() -> inspect.Signature:
        sig = inspect.signature(fn)
        params = [p for p in sig.parameters.values() if p.name not in drop]
        if params and params[0].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                         inspect.Parameter.POSITIONAL_OR_KEYWORD):
            params[0] = params[0].replace(name="self", annotation="Tensor",
                                          default=inspect.Parameter.empty)
        else:
            params.insert(0, inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY,
                                               annotation="Tensor"))
        return sig.replace(parameters=params)
    return LazySignature(build)


def _operand(x: Any) -> Any:
    """A NumPy array operand becomes a tensor (dtype kept), as ``torch_tensor + ndarray``."""
    if isinstance(x, np.ndarray):
        return as_tensor(x)
    return x


def _binary(name: str, reflected: bool = False):
    tt = _FN[name]
    ts = _FN[f"Scalar{name}"]
    tr = _FN.get(f"ScalarR{name}")

    if not reflected:
        def op(self: Tensor, other: Any) -> Any:
            if isinstance(other, Tensor):
                return tt(self, other)
            if isinstance(other, _SCALARS):
                return ts(self, other.item() if isinstance(other, np.generic) else other)
            if isinstance(other, np.ndarray):
                return tt(self, _operand(other))
            return NotImplemented
    else:
        def op(self: Tensor, other: Any) -> Any:
            if isinstance(other, _SCALARS):
                return tr(other.item() if isinstance(other, np.generic) else other, self)
            if isinstance(other, np.ndarray):
                return tt(_operand(other), self)
            if isinstance(other, Tensor):  # called directly: t.__radd__(u) is u + t
                return tt(other, self)
            return NotImplemented
    return op


def _inplace(fname: str):
    fn = getattr(F, fname)

    def op(self: Tensor, other: Any) -> Tensor:
        if not isinstance(other, (Tensor, np.ndarray, *_SCALARS)):
            return NotImplemented
        return fn(self, _operand(other), inplace=True)
    return op


def _assign_result(fname: str):
    fn = getattr(F, fname)

    def op(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        args = tuple(_operand(a) for a in args)
        return assign_inplace(self, fn(self, *args, **kwargs), f"{fname}_")
    op.__name__ = f"{fname}_"
    op.__doc__ = (f"In-place ``{fname}``: ``x.{fname}_(...)`` writes ``x.{fname}(...)`` into "
                  f"``x`` (its version bumps; views of it see the change).")
    op.__signature__ = _as_method_signature(fn, ("inplace",))  # type: ignore[attr-defined]
    return op


def _method(fname: str):
    fn = getattr(F, fname)
    if isinstance(fn, types.FunctionType) and fn.__name__ == fname:
        return fn  # (the function itself: ``self`` is its first argument; no forwarding frame)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = fname
    method.__doc__ = fn.__doc__
    method.__signature__ = _as_method_signature(fn)  # type: ignore[attr-defined]
    return method


def _alpha_method(fname: str, inplace: bool):
    """``add``/``sub`` (``inplace``: ``add_``/``sub_``) that also take a 0-d tensor ``alpha``
    (an optimizer's learning rate, a traced input under ``flow.jit``); other calls go to
    ``flow._C`` unchanged."""
    fn = getattr(F, fname)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        if isinstance(kwargs.get("alpha"), Tensor) and len(args) == 1 \
                and set(kwargs) <= {"alpha", "inplace"}:
            other = args[0]
            if isinstance(other, np.generic):
                other = other.item()
            return tensor_alpha(fname, self, _operand(other), kwargs["alpha"],
                                inplace or bool(kwargs.get("inplace", False)))
        if inplace:
            return fn(self, *args, inplace=True, **kwargs)
        return fn(self, *args, **kwargs)
    method.__name__ = f"{fname}_" if inplace else fname
    method.__doc__ = fn.__doc__
    method.__signature__ = _as_method_signature(  # type: ignore[attr-defined]
        fn, ("inplace",) if inplace else ())
    return method


def _inplace_method(fname: str):
    fn = getattr(F, fname)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return fn(self, *args, inplace=True, **kwargs)
    method.__name__ = f"{fname}_"
    method.__doc__ = (f"In-place ``{fname}``: ``x.{fname}_(...)`` writes ``x.{fname}(...)`` "
                      f"into ``x`` (its version bumps; views of it see the change).")
    method.__signature__ = _as_method_signature(fn, ("inplace",))  # type: ignore[attr-defined]
    return method


def _tensors(fname: str, *ts: Any) -> None:
    for t in ts:
        if not isinstance(t, Tensor):
            raise TypeError(f"{fname}(): expected Tensor arguments, got {type(t).__name__}")
