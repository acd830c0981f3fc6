"""JAX's autodiff rules for every op primitive, derived from the op's ONE backward rule.

For ``jflow.<op>`` the JVP rule binds the op, then emits ``jflow.<op>_lin``: a primitive that
is linear in its first arguments (the input tangents) and takes the saved values as residuals.

* transpose of ``_lin``   = the backward rule (so ``jax.grad`` / ``vjp`` / ``jacrev`` run it);
* evaluation of ``_lin``  = the transpose of the backward rule, computed as ``jax.vjp`` of the
  rule in its (linear) cotangent argument (so ``jax.jvp`` / ``jacfwd`` / ``hessian`` work). The
  rule is written with jflow ops, which JAX cannot transpose directly; differentiating it
  instead goes through *their* rules, so no op needs a second, forward-mode rule;
* batching of ``_lin``    = a ``_vmap`` param, as for op primitives, so a batched ``_lin`` can
  still be transposed (``jax.vmap`` inside ``jax.grad``): every per-example function below is
  re-entered under nested ``jax.vmap``.

``custom_vjp`` is deliberately not used: it loses forward mode and costs ~200 µs per eager call.

This is the one module that registers rules in ``jax.interpreters.ad`` (JAX's extension
points for primitives; there is no public alternative for defining differentiable primitives).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

from .._jax_compat import manual_out_aval, match_manual_type
from ..ops.registry import strip_batch
from ..tensor import _wrap
from .grad_mode import no_grad
from .rule import (
    BackwardContext,
    gather_saved,
    get_rule,
    get_tangent,
    is_differentiable_dtype,
    run_rule,
    structure_saved,
)

__all__ = ["install"]

_CACHE_SIZE = 256


def _shaped(x: Any) -> jax.core.ShapedArray:
    a = jax.typeof(x)
    return jax.core.ShapedArray(tuple(a.shape), a.dtype)


def _under_vmap(fn: Callable[..., Any], vmap: tuple, in_axes_of: Callable[[tuple], tuple]
                ) -> Callable[..., Any]:
    """``fn`` (per example) wrapped in one ``jax.vmap`` per level of ``vmap`` (outermost
    first); ``in_axes_of(level_axes)`` gives that level's in_axes for ``fn``'s arguments."""
    for axes in reversed(vmap):
        fn = jax.vmap(fn, in_axes=in_axes_of(axes), out_axes=0)
    return fn


def _strip_vmap_sizes(avals: Sequence[Any], vmap: tuple) -> list[int]:
    return strip_batch(avals, vmap)[1]


class _Linear:
    """The ``_lin`` primitive of one op and its rules. Params of a bind:
    ``params`` (the op's bind params, as items), ``needs`` (which flat inputs have a tangent
    among the linear args), ``in_avals`` / ``out_avals`` (per example) and maybe ``_vmap``."""

    def __init__(self, op: Any) -> None:
        self.op = op
        self.prim = prim = Primitive(f"jflow.{op.name}_lin")
        prim.multiple_results = True
        prim.def_abstract_eval(self.abstract_eval)
        prim.def_impl(self.impl)
        mlir.register_lowering(prim, mlir.lower_fun(self.evaluate, multiple_results=True))
        ad.primitive_transposes[prim] = self.transpose
        ad.primitive_jvps[prim] = self.jvp
        batching.fancy_primitive_batchers[prim] = self.batch
        self._impl_cache: dict[Any, Any] = {}

    # -- the rule, per example ------------------------------------------------------------
    def _context(self, lp: dict[str, Any], saved_vals: Sequence[Any]) -> tuple:
        """(rule, params, layout, saved tensors structured as the rule saved them, in_avals,
        out_avals, needs) of one bind's residuals."""
        op = self.op
        rule = get_rule(op)
        params = dict(lp["params"])
        # dynamic attr values are the last residuals (operands, so _lin is cached per params)
        n_dyn = len(op.dynamic_in(params))
        if n_dyn:
            params = op.with_dynamic(params, saved_vals[len(saved_vals) - n_dyn:])
            saved_vals = saved_vals[:len(saved_vals) - n_dyn]
        layout = params.pop("_layout", None)
        in_avals, out_avals, needs = lp["in_avals"], lp["out_avals"], lp["needs"]
        slots = rule.saved_slots(layout, len(out_avals))
        saved = structure_saved(slots, [_wrap(v) for v in saved_vals])
        return rule, params, layout, saved, in_avals, out_avals, needs

    def run(self, lp: dict[str, Any], saved_vals: Sequence[Any], cts: Sequence[Any]
            ) -> list[Any]:
        """Input cotangents (arrays; zeros where the rule gives None) of the needed inputs,
        for cotangents ``cts`` (one array or None per differentiable output)."""
        rule, params, layout, saved, in_avals, out_avals, needs = self._context(lp, saved_vals)
        it = iter(cts)
        grads = []
        for aval in out_avals:
            if is_differentiable_dtype(aval.dtype):
                c = next(it)
                grads.append(_wrap(jnp.zeros(aval.shape, aval.dtype) if c is None else c))
            else:
                grads.append(None)
        with no_grad():
            res = run_rule(rule, params, layout, saved, needs, in_avals, out_avals, grads)
        return [jnp.zeros(a.shape, a.dtype) if g is None else g._value
                for g, a, n in zip(res, in_avals, needs) if n]

    def diff_out_avals(self, lp: dict[str, Any]) -> list[Any]:
        return [a for a in lp["out_avals"] if is_differentiable_dtype(a.dtype)]

    def tangents(self, lp: dict[str, Any], saved_vals: Sequence[Any],
                 tangents: Sequence[Any], fn: Any) -> list[Any]:
        """Forward mode by the op's tangent rule ``fn`` (``register_tangent``): one tangent
        per differentiable output, zeros where the rule gives None."""
        _, params, layout, saved, in_avals, out_avals, needs = self._context(lp, saved_vals)
        it = iter(tangents)
        tans = [_wrap(next(it) if n else jnp.zeros(a.shape, a.dtype))
                for a, n in zip(in_avals, needs)]
        ctx = BackwardContext(self.op, params, saved, needs, in_avals, out_avals, layout)
        with no_grad():
            res = fn(ctx, *tans)
        res = list(res) if isinstance(res, (list, tuple)) else [res]
        return [jnp.zeros(a.shape, a.dtype) if t is None else t._value
                for t, a in zip(res, out_avals) if is_differentiable_dtype(a.dtype)]

    def evaluate_example(self, lp: dict[str, Any], n_lin: int, *args: Any) -> list[Any]:
        """Forward mode: the op's tangent rule if it has one, else the transpose of the
        (linear) backward rule applied to the tangents."""
        tangents, saved = args[:n_lin], args[n_lin:]
        fn = get_tangent(self.op)
        if fn is not None:
            return self.tangents(lp, saved, tangents, fn)
        ct0 = [jnp.zeros(a.shape, a.dtype) for a in self.diff_out_avals(lp)]
        _, pullback = jax.vjp(lambda *cts: self.run(lp, saved, cts), *ct0)
        return list(pullback(list(tangents)))

    # -- primitive rules -------------------------------------------------------------------
    def evaluate(self, *args: Any, **lp: Any) -> list[Any]:
        n_lin = sum(lp["needs"])
        vmap = lp.get("_vmap", ())

        def fn(*a: Any) -> list[Any]:
            return self.evaluate_example(lp, n_lin, *a)

        # linear args are batched at every level (see batch); residuals as recorded
        return _under_vmap(fn, vmap, lambda axes: (0,) * n_lin + tuple(axes[n_lin:]))(*args)

    def impl(self, *args: Any, **lp: Any) -> Any:
        key = tuple(lp.items())
        f = self._impl_cache.get(key)
        if f is None:
            prim = self.prim
            f = jax.jit(lambda *a: prim.bind(*a, **lp))
            if len(self._impl_cache) >= _CACHE_SIZE:
                del self._impl_cache[next(iter(self._impl_cache))]
            self._impl_cache[key] = f
        return f(*args)

    def abstract_eval(self, *avals: Any, **lp: Any) -> list[Any]:
        outs = self.diff_out_avals(lp)
        vmap = lp.get("_vmap", ())
        sizes = _strip_vmap_sizes(avals, vmap) if vmap else []
        return [manual_out_aval(tuple(sizes) + tuple(a.shape), a.dtype, avals) for a in outs]

    def transpose(self, cts: Sequence[Any], *args: Any, **lp: Any) -> list[Any]:
        n_lin = sum(lp["needs"])
        lin, saved = args[:n_lin], args[n_lin:]
        if any(ad.is_undefined_primal(s) for s in saved):
            raise ValueError(f"jflow.{self.op.name}_lin: a residual is being transposed "
                             f"(it is linear only in its tangent arguments)")
        undefined = [ad.is_undefined_primal(x) for x in lin]
        if not any(undefined):
            return [None] * len(args)
        cts = [ad.instantiate_zeros(c) for c in cts]
        vmap = lp.get("_vmap", ())
        n_ct = len(cts)

        def fn(*a: Any) -> list[Any]:
            return self.run(lp, a[n_ct:], a[:n_ct])

        res = _under_vmap(fn, vmap, lambda axes: (0,) * n_ct + tuple(axes[n_lin:]))(
            *cts, *saved)
        # inside shard_map, a cotangent must vary / be reduced like its primal
        return [match_manual_type(g, x.aval) if u else None
                for g, u, x in zip(res, undefined, lin)] + [None] * len(saved)

    def jvp(self, primals: Sequence[Any], tangents: Sequence[Any], **lp: Any) -> Any:
        tangents = [ad.instantiate_zeros(t) for t in tangents]
        return jax.jvp(lambda *a: self.evaluate(*a, **lp), tuple(primals), tuple(tangents))

    def batch(self, axis_data: Any, args: Sequence[Any], dims: Sequence[Any], /,
              **lp: Any) -> tuple[Any, list[int]]:
        n_lin = sum(lp["needs"])
        if all(d is None for d in dims):
            outs = self.prim.bind(*args, **lp)
            return outs, [None] * len(outs)
        moved, axes = [], []
        for i, (a, d) in enumerate(zip(args, dims)):
            if d is None and i < n_lin:  # tangents batched at every level: transposable
                a = jnp.broadcast_to(a, (axis_data.size, *a.shape))
                d = 0
            elif d is not None and d != 0:
                a = jnp.moveaxis(a, d, 0)
            moved.append(a)
            axes.append(None if d is None else 0)
        new = dict(lp)
        new["_vmap"] = (tuple(axes),) + tuple(lp.get("_vmap", ()))
        outs = self.prim.bind(*moved, **new)
        return outs, [0] * len(outs)


def _op_jvp(op: Any, lin: _Linear, primals: Sequence[Any], tangents: Sequence[Any],
            params: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    vmap = params.get("_vmap")
    if vmap:
        return _op_jvp_batched(op, lin, primals, tangents, params, vmap)
    outs = op.primitive.bind(*primals, **params)
    out_avals = tuple(_shaped(o) for o in outs)
    primals, dyn = op.split_dynamic(primals, params)
    if dyn:
        for name, t in zip(op.dynamic_in(params), tangents[len(primals):]):
            if type(t) is not ad.Zero:
                raise TypeError(f"op '{op.name}': cannot differentiate with respect to attr "
                                f"'{name}' (attrs are not differentiable inputs; pass it as a "
                                f"tensor to an op that takes one)")
        tangents = tangents[:len(primals)]
    needs = tuple(type(t) is not ad.Zero and is_differentiable_dtype(jax.typeof(p).dtype)
                  for p, t in zip(primals, tangents))
    zero_outs = [ad.Zero(jax.typeof(o).to_tangent_aval()) for o in outs]
    if not any(needs) or op.has_trait("NoGrad") or \
            not any(is_differentiable_dtype(a.dtype) for a in out_avals):
        return outs, zero_outs
    rule = get_rule(op)
    slots = rule.saved_slots(params.get("_layout"), len(outs))
    saved = gather_saved(slots, primals, outs)
    lp = {"params": tuple(params.items()), "needs": needs,
          "in_avals": tuple(_shaped(p) for p in primals), "out_avals": out_avals}
    touts = iter(lin.prim.bind(*[t for t, n in zip(tangents, needs) if n], *saved, *dyn,
                               **lp))
    return outs, [next(touts) if is_differentiable_dtype(a.dtype) else z
                  for a, z in zip(out_avals, zero_outs)]


def _op_jvp_batched(op: Any, lin: _Linear, primals: Sequence[Any], tangents: Sequence[Any],
                    params: dict[str, Any], vmap: tuple) -> tuple[list[Any], list[Any]]:
    """The op was bound under ``jax.vmap`` (``_vmap`` param) inside a differentiation: run the
    per-example JVP under the same nested vmaps, which re-batches both the op and its _lin."""
    base = {k: v for k, v in params.items() if k != "_vmap"}
    n = len(primals)
    nz = [type(t) is not ad.Zero for t in tangents]
    diff: list[bool] = []

    def per_example(*args: Any) -> tuple[list[Any], list[Any]]:
        p = args[:n]
        it = iter(args[n:])
        ts = [next(it) if z else ad.Zero(jax.typeof(x).to_tangent_aval())
              for x, z in zip(p, nz)]
        outs, touts = _op_jvp(op, lin, p, ts, base)
        diff[:] = [type(t) is not ad.Zero for t in touts]
        return list(outs), [t for t in touts if type(t) is not ad.Zero]

    def in_axes(axes: tuple) -> tuple:
        return tuple(axes) + tuple(a for a, z in zip(axes, nz) if z)

    outs, touts = _under_vmap(per_example, vmap, in_axes)(
        *primals, *[t for t, z in zip(tangents, nz) if z])
    it = iter(touts)
    return outs, [next(it) if d else ad.Zero(jax.typeof(o).to_tangent_aval())
                  for o, d in zip(outs, diff)]


def install(op: Any) -> None:
    """Give ``op``'s primitive its JVP rule and create its linear primitive."""
    lin = _Linear(op)
    op.linear_primitive = lin.prim

    def jvp(primals: Sequence[Any], tangents: Sequence[Any], /, **params: Any) -> Any:
        return _op_jvp(op, lin, primals, tangents, params)

    ad.primitive_jvps[op.primitive] = jvp
