"""Assembly: an op declaration becomes exactly one ``jax.extend.core.Primitive``.

This is the one place where the three registries meet, imported at top level the way JAX's
``lax.py`` imports ``ad``, ``batching`` and ``mlir``:

* the op declaration (:mod:`jflow.ops.registry`) gives the abstract eval (its inference);
* the eager dispatcher (:mod:`jflow.dispatch`) gives the impl and the op's ``apply``;
* the kernel registry (:mod:`jflow.kernels.registry`) gives one lowering per platform (the
  kernel is chosen at lowering time);
* the rule registry (:mod:`jflow.autograd.jax_rules`) gives JAX's jvp/transpose rules, derived
  from the op's one backward rule;
* batching is one generic rule here: the batch axes become the ``_vmap`` param and the kernel
  is lowered under ``jax.vmap``, so every backend (xla, python, pallas, ffi) batches exactly.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax import core
from jax.extend.core import Primitive
from jax.interpreters import batching

from .. import dispatch
from .._jax_compat import manual_out_aval
from ..autograd import jax_rules
from ..kernels import registry as kernels
from .registry import OpDef, declare_op, register, strip_batch

__all__ = ["define_op", "build_primitive"]


def define_op(name: str, **declaration: Any) -> OpDef:
    """Declare an op, build its primitive and register it: the one call that defines an op.

    Takes the arguments of :func:`jflow.ops.registry.declare_op` (inputs, outputs, attrs,
    infer, traits, check, sbp, doc), which validates them; returns the registered
    :class:`OpDef` (``op.primitive``, ``op.apply``)."""
    # the defining module, read from the caller's frame (as ``warnings`` and ``dataclasses``
    # do): it tells where an op was declared and which family its other parts belong to
    declaration.setdefault("module", sys._getframe(1).f_globals.get("__name__", ""))
    op = declare_op(name, **declaration)
    build_primitive(op)
    return register(op)


define_op.__signature__ = inspect.signature(declare_op)  # type: ignore[attr-defined]


def build_primitive(op: OpDef) -> Primitive:
    """Create ``op.primitive`` with its abstract eval, impl, batching rule, lowerings and
    autodiff rules, and the op's eager entry ``op.apply``."""
    prim = Primitive(f"jflow.{op.name}")
    prim.multiple_results = True
    prim.def_abstract_eval(_abstract_eval(op))
    prim.def_impl(dispatch.primitive_impl(op))
    # registered directly as a "fancy" rule: JAX's primitive_batchers wrapper takes a keyword
    # ``dims`` of its own, which an attr of that name would collide with
    batching.fancy_primitive_batchers[prim] = _batch_rule(op)
    op.primitive = prim
    kernels.install_lowerings(op)
    jax_rules.install(op)
    op.apply = dispatch.make_apply(op)
    return prim


# The rules' own arguments are positional-only: attrs arrive as keyword params and may have
# any name (an attr called ``dims`` or ``self`` must not collide with a rule's argument).
def _abstract_eval(op: OpDef) -> Callable[..., list[core.ShapedArray]]:
    def abstract_eval(*avals: core.ShapedArray, **params: Any) -> list[core.ShapedArray]:
        attrs, layout, vmap = op.split_params(params)
        per_example, sizes = strip_batch(avals, vmap)
        # dynamic attr operands are not inputs: inference sees their DYNAMIC marker
        per_example, _ = op.split_dynamic(per_example, attrs)
        outs = op.infer_descs(per_example, layout, attrs)
        # inside shard_map (global tensors), outputs vary like the inputs (see _jax_compat)
        return [manual_out_aval(tuple(sizes) + o.shape, o.dtype, avals) for o in outs]

    return abstract_eval


def _batch_rule(op: OpDef) -> Callable[..., tuple[Any, list[Any]]]:
    def batch_rule(axis_data: Any, args: Sequence[Any], dims: Sequence[Any], /,
                   **params: Any) -> tuple[Any, list[Any]]:
        """JAX's (fancy) batching rule: record this vmap level's axes in ``_vmap``."""
        if all(d is None for d in dims):
            outs = op.primitive.bind(*args, **params)
            return outs, [None] * len(outs)
        axes = tuple(None if d is None else 0 for d in dims)
        moved = [a if d is None or d == 0 else jax.numpy.moveaxis(a, d, 0)
                 for a, d in zip(args, dims)]
        new = dict(params)
        new["_vmap"] = (axes,) + tuple(params.get("_vmap", ()))
        outs = op.primitive.bind(*moved, **new)
        return outs, [0] * len(outs)

    return batch_rule
