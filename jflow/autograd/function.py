"""``flow.autograd.Function``: a user-written forward and backward (PyTorch's / OneFlow's).

::

    class Exp(flow.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, dy):
            (y,) = ctx.saved_tensors
            return dy * y

    y = Exp.apply(x)

``forward`` runs without recording; the outputs get one tape node whose backward is the user's.
It runs op by op (the user's code may do anything), recorded when ``create_graph=True``. The
tape is the caller here: under ``jax.grad`` of a function calling ``Exp.apply`` on non-grad
tensors, JAX differentiates the ops of ``forward`` instead (a primitive with its own backward is
:func:`jflow.autograd.register_backward` on a user-defined op).
"""

from __future__ import annotations

import weakref
from typing import Any

import jax.numpy as jnp

from ..ops.registry import get as _get_op
from ..tensor import Tensor, _wrap
from .grad_mode import _state, no_grad, set_grad_enabled
from .graph import LEAF, Node
from .rule import is_differentiable_dtype
from .saved import FREED, saved_tensors

__all__ = ["Function", "FunctionCtx"]


class FunctionCtx:
    """The ``ctx`` of a Function: ``save_for_backward``, ``saved_tensors``,
    ``needs_input_grad``, ``mark_non_differentiable``, ``set_materialize_grads``; any other
    attribute may be set in forward and read in backward."""

    def __init__(self) -> None:
        self._to_save: tuple[Any, ...] = ()
        self._saved: list[tuple[Any, Any, int, int]] | None = None
        self._node: Any = None
        self._non_diff: set[int] = set()
        self.needs_input_grad: tuple[bool, ...] = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors: Any) -> None:
        """Keep tensors for ``backward`` (``ctx.saved_tensors``), checked against later
        in-place writes."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save jflow Tensors or None, got "
                                f"{type(t).__name__}")
        self._to_save = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Outputs that get no gradient (as ``torch.autograd.Function``)."""
        self._non_diff.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """Whether ``backward`` gets zeros (True, the default) or None for unused output grads."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self) -> tuple[Any, ...]:
        if self._saved is None:  # forward has not finished, or no graph was recorded
            return self._to_save
        node = self._node
        if node is not None and node.freed:
            raise RuntimeError(FREED)
        connect = _state.enabled and node is not None
        vals = saved_tensors(node, connect) if node is not None else []
        out, it = [], iter(vals)
        for entry in self._saved:
            if entry is None:
                out.append(None)
            else:
                v = next(it)
                out.append(v if isinstance(v, Tensor) else _wrap(v))
        return tuple(out)


class _FunctionOp:
    """Stands in for an OpDef in messages (``node.op.name``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.grad_rule = None


def _user_conj(g: Any) -> Any:
    """A user's backward works in PyTorch's convention for complex gradients, the engine in
    JAX's (the conjugate): conjugate on the way in and out (``engine._user_conj``)."""
    if g is None or g._meta.dtype.kind != "c":
        return g
    return _get_op("conj").apply(g)


class FunctionNode(Node):
    """The tape node of one ``Function.apply``: backward is the user's ``backward``."""

    __slots__ = ("fn_cls", "ctx", "arg_index", "n_args")

    def run(self, grads: list[Any], create_graph: bool) -> list[Any]:
        ctx = self.ctx
        full = []
        for g, aval in zip(grads, self.out_avals):
            if g is None and ctx.materialize_grads and is_differentiable_dtype(aval.dtype):
                g = _wrap(jnp.zeros(aval.shape, aval.dtype))
            full.append(g)
        full = [_user_conj(g) for g in full]
        with set_grad_enabled(create_graph):
            res = self.fn_cls.backward(ctx, *full)
        if not isinstance(res, tuple):
            res = (res,)
        n_args = self.n_args
        if len(res) > n_args and all(g is None for g in res[n_args:]):
            res = res[:n_args]  # extra trailing Nones are dropped, as PyTorch does
        if len(res) != n_args:
            raise RuntimeError(f"function {self.op.name}.backward returned {len(res)} gradients, "
                               f"but forward took {n_args} arguments (return None for "
                               f"arguments without a gradient)")
        out = []
        for k, aval in zip(self.arg_index, self.in_avals):
            g = res[k]
            if g is not None:
                if not isinstance(g, Tensor):
                    raise TypeError(f"function {self.op.name}.backward returned a "
                                    f"{type(g).__name__} for argument {k}; expected a Tensor "
                                    f"or None")
                if tuple(g.shape) != tuple(aval.shape):
                    raise RuntimeError(f"function {self.op.name}.backward returned a gradient "
                                       f"of shape {list(g.shape)} for argument {k}, expected "
                                       f"shape {list(aval.shape)}")
                if g._meta.dtype != aval.dtype:
                    raise RuntimeError(f"function {self.op.name}.backward returned a gradient "
                                       f"of dtype {g.dtype} for argument {k}, expected "
                                       f"{aval.dtype}")
            out.append(_user_conj(g))
        return out



class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call
    ``YourFunction.apply(*args)``."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any, **kwargs: Any) -> Any:
        """The computation (override it): ``ctx`` first, then the inputs; return the outputs."""
        raise NotImplementedError("subclasses of flow.autograd.Function implement forward")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        """The gradients of the inputs from those of the outputs (override it)."""
        raise NotImplementedError("subclasses of flow.autograd.Function implement backward")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        ctx = FunctionCtx()
        arg_index = [k for k, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[k] for k in arg_index]
        recording = _state.enabled and any(t._requires_grad for t in tensors)
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        with no_grad():
            res = cls.forward(ctx, *args, **kwargs)
        single = isinstance(res, Tensor)
        outs = (res,) if single else tuple(res) if isinstance(res, (tuple, list)) else None
        if outs is None or not all(isinstance(o, Tensor) for o in outs):
            raise TypeError(f"{cls.__name__}.forward must return a Tensor or a tuple of Tensors")
        if not recording:
            return res
        new_outs = tuple(o.detach() for o in outs)  # fresh handles (global layout kept)
        needs = tuple(t._requires_grad for t in tensors)
        edges = tuple(((t.grad_fn, t._output_nr) if t.grad_fn is not None else (t, LEAF))
                      if n else None for t, n in zip(tensors, needs))
        node = FunctionNode(_FunctionOp(cls.__name__), {}, needs, edges,
                            tuple(t._meta.aval for t in tensors),
                            tuple(o._meta.aval for o in outs))
        node.fn_cls = cls
        node.ctx = ctx
        node.arg_index = tuple(arg_index)
        node.n_args = len(args)
        out_pos = {id(o): k for k, o in enumerate(outs)}
        saved_meta: list[Any] = []
        for t in ctx._to_save:
            if t is None:
                saved_meta.append(None)
                continue
            k = out_pos.get(id(t))
            if k is None:
                node.saved.append((t._value, t, t._version, LEAF))
            else:  # an output: held weakly, as tape nodes hold outputs
                node.saved.append((t._value, weakref.ref(new_outs[k]), 0, k))
            saved_meta.append(True)
        ctx._saved = saved_meta
        ctx._node = node
        for k, o in enumerate(new_outs):
            if is_differentiable_dtype(o._meta.dtype) and id(outs[k]) not in ctx._non_diff:
                o._requires_grad = True
                o.grad_fn = node
                o._output_nr = k
        return new_outs[0] if single else new_outs
