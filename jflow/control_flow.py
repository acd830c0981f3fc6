"""``torch.cond``: structured control flow, ``true_fn(*operands) if pred else
false_fn(*operands)``.

Eagerly (and under a trace when ``pred`` is a Python value or a concrete tensor) ``pred``
picks the branch, and only that branch runs. Under ``flow.jit`` (or ``jax.jit``) tracing with a
traced ``pred`` there is no value to pick by, so both branches run and ``flow.where`` picks
each output: exact for pure branches (the gradient also flows through ``where``, to the
branch that was taken). What a branch does besides computing its outputs then happens for both
branches: a print or a counter runs twice, and a branch that writes one of the ``operands`` in
place is refused (both writes would land). The branches must return the same structure with
outputs of matching shape and dtype (checked there, naming the output); PyTorch's eager
``cond`` runs one branch without comparing, as jflow's eager call does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from .functional import F
from .tensor import Tensor

__all__ = ["cond"]

_NUMBERS = (bool, int, float, np.bool_, np.integer, np.floating)


def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


def _traced(t: Tensor) -> bool:
    return isinstance(t._meta, jax.core.Tracer)


def _branch(name: str, fn: Any) -> Callable[..., Any]:
    if not callable(fn):
        raise TypeError(f"cond(): {name} must be callable, got {type(fn).__name__}")
    return fn


def _select(pred: Tensor, out_t: Any, out_f: Any) -> Any:
    """Each output of the two branches picked by the traced ``pred``."""
    leaves_t, tree_t = jax.tree_util.tree_flatten(out_t, is_leaf=_is_tensor)
    leaves_f, tree_f = jax.tree_util.tree_flatten(out_f, is_leaf=_is_tensor)
    if tree_t != tree_f:
        raise RuntimeError(f"cond(): true_fn and false_fn must return the same structure of "
                           f"outputs, got {tree_t} and {tree_f}")
    picked = []
    for i, (a, b) in enumerate(zip(leaves_t, leaves_f)):
        if isinstance(a, Tensor) and isinstance(b, Tensor):
            if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
                raise RuntimeError(
                    f"cond(): output {i} of true_fn and false_fn must have the same shape and "
                    f"dtype, got {a.dtype}{list(a.shape)} and {b.dtype}{list(b.shape)}")
            picked.append(F.where(pred, a, b))
        elif isinstance(a, Tensor) or isinstance(b, Tensor):
            raise RuntimeError(f"cond(): output {i} is a tensor in one branch and "
                               f"{type(b if isinstance(a, Tensor) else a).__name__} in the "
                               f"other")
        elif not (a is b or a == b):
            raise RuntimeError(f"cond(): output {i} is {a!r} in true_fn and {b!r} in false_fn; "
                               f"with a traced pred only tensor outputs can depend on it")
        else:
            picked.append(a)
    return jax.tree_util.tree_unflatten(tree_t, picked)


def cond(pred: bool | int | float | Tensor, true_fn: Callable[..., Any],
         false_fn: Callable[..., Any], operands: Sequence[Any] = ()) -> Any:
    """``torch.cond``: ``true_fn(*operands)`` when ``pred`` is true, else
    ``false_fn(*operands)``. ``pred``: a Python bool or number, or a one-element tensor.
    Under tracing with a traced ``pred`` both branches run and each output is
    ``flow.where(pred, true_output, false_output)`` (exact for pure branches; side effects
    run twice, writing an operand in place is refused, outputs must match in structure,
    shape and dtype): see :mod:`jflow.control_flow`."""
    true_fn, false_fn = _branch("true_fn", true_fn), _branch("false_fn", false_fn)
    if not isinstance(operands, (tuple, list)):
        raise TypeError(f"cond(): operands must be a tuple or list (of tensors), got "
                        f"{type(operands).__name__}")
    operands = tuple(operands)
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got "
                               f"{pred}.")
        if _traced(pred):
            flag = pred.reshape(()) != 0
            tensors = [t for t in jax.tree_util.tree_leaves(operands, is_leaf=_is_tensor)
                       if isinstance(t, Tensor)]
            versions = [t._version for t in tensors]
            out_t = true_fn(*operands)
            out_f = false_fn(*operands)
            for i, (t, v) in enumerate(zip(tensors, versions)):
                if t._version != v:
                    raise RuntimeError(
                        f"cond(): a branch wrote operand tensor {i} in place; with a traced "
                        f"pred both branches run, so both writes would land: return the new "
                        f"value instead (or write to a clone)")
            return _select(flag, out_t, out_f)
        take = bool(pred.item())
    elif isinstance(pred, _NUMBERS):
        take = bool(pred)
    else:
        raise TypeError(f"cond(): pred must be a bool, a number or a one-element tensor, got "
                        f"{type(pred).__name__}")
    return true_fn(*operands) if take else false_fn(*operands)
