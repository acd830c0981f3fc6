"""The few private JAX hooks jflow needs, in one place (each with why).

JAX 0.10 is the reference; a lent GPU machine may run 0.11. Everything here falls back to a
public API where one exists.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import jax
from jax import lax

__all__ = ["all_gather_invariant", "manual_out_aval", "plain_lowering_ctx", "match_manual_type",
           "vary_together", "is_tracing", "cpu_async_dispatch", "drop_traceback_note",
           "backends_initialized", "distributed_client", "jaxlib_has", "release_lowerings",
           "refuse_as_argument"]


def _all_gather_invariant() -> Any:
    # An all-gather whose result is typed replicated (invariant) over the axis, so a
    # shard_map can return it with a replicated out_spec. Public in newer JAX as
    # jax.lax.all_gather_invariant; private in 0.10.
    fn = getattr(lax, "all_gather_invariant", None)
    if fn is not None:
        return fn
    try:
        from jax._src.lax.parallel import all_gather_invariant as fn
        return fn
    except ImportError:  # last resort: embed the shard in zeros and all-reduce (2x traffic)
        def gather(x: Any, name: str, *, axis: int, tiled: bool = True) -> Any:
            n = lax.axis_size(name)
            size = x.shape[axis]
            shape = list(x.shape)
            shape[axis] = size * n
            full = jax.numpy.zeros(shape, x.dtype)
            full = lax.dynamic_update_slice_in_dim(full, x, lax.axis_index(name) * size, axis)
            return lax.psum(full, name)
        return gather


all_gather_invariant = _all_gather_invariant()


def manual_out_aval(shape: Sequence[int], dtype: Any, in_avals: Sequence[Any]) -> Any:
    """The aval of a jflow primitive's output inside ``shard_map``: it varies over (and is
    unreduced on) the manual mesh axes its inputs vary over (are unreduced on).

    JAX types values in ``shard_map`` by how they vary across devices (``check_vma``); a
    custom primitive must propagate that type or shard_map rejects its outputs. The type's
    representation is private and changed across JAX versions (0.10: ``manual_axis_type``),
    hence this helper. Outside shard_map (no mesh on the inputs) it is a plain ShapedArray.
    """
    ref = None
    for a in in_avals:
        sh = getattr(a, "sharding", None)
        if sh is not None and not sh.mesh.empty:
            ref = a
            break
    if ref is None:
        return jax.core.ShapedArray(tuple(shape), dtype)
    from jax.sharding import NamedSharding, PartitionSpec
    sharding = NamedSharding(ref.sharding.mesh, PartitionSpec())
    mat = getattr(ref, "manual_axis_type", None)
    if mat is not None:  # JAX 0.10
        from jax._src.core import ManualAxisType
        varying: frozenset = frozenset()
        unreduced: frozenset = frozenset()
        for a in in_avals:
            m = getattr(a, "manual_axis_type", None)
            if m is not None:
                varying |= m.varying
                unreduced |= m.unreduced
        return jax.core.ShapedArray(tuple(shape), dtype, sharding=sharding,
                                    manual_axis_type=ManualAxisType(varying=varying,
                                                                    unreduced=unreduced))
    vma = frozenset().union(*[getattr(a, "vma", frozenset()) for a in in_avals])
    return jax.core.ShapedArray(tuple(shape), dtype, sharding=sharding, vma=vma)


def plain_lowering_ctx(ctx: Any) -> Any:
    """A lowering context whose avals carry no sharding / manual-axis types.

    A jflow kernel computes on the local shard; whether that is valid for a global tensor is
    decided by the op's SBP signature, not by JAX's typing of the values inside shard_map
    (which, e.g., has no "unreduced" rule for ``div`` and would refuse ``mean`` of a partial
    sum). ``LoweringRuleContext.replace`` is JAX-internal API, hence this helper.
    """
    def plain(a: Any) -> Any:
        if isinstance(a, jax.core.ShapedArray):
            return jax.core.ShapedArray(a.shape, a.dtype, a.weak_type)
        return a
    ins = [plain(a) for a in ctx.avals_in]
    outs = [plain(a) for a in ctx.avals_out]
    if all(a is b for a, b in zip(ins, ctx.avals_in)) and \
            all(a is b for a, b in zip(outs, ctx.avals_out)):
        return ctx
    return ctx.replace(avals_in=ins, avals_out=outs)


def match_manual_type(value: Any, target: Any) -> Any:
    """Cast ``value`` (inside shard_map) to vary / be reduced over the manual axes ``target``'s
    aval does — what JAX expects of a cotangent for that primal in a transpose rule."""
    mat = getattr(target, "manual_axis_type", None)
    if mat is None or value is None:
        return value
    have = getattr(jax.typeof(value), "manual_axis_type", None)
    if have is None:
        return value
    add_vary = tuple(sorted(mat.varying - have.varying))
    if add_vary:
        value = lax.pcast(value, add_vary, to="varying")
    add_reduced = tuple(sorted(mat.reduced - have.reduced))
    if add_reduced:
        value = lax.pcast(value, add_reduced, to="reduced")
    return value


def vary_together(values: Sequence[Any]) -> list[Any]:
    """Make the operands of one primitive vary over the same manual axes (JAX does this for
    its own primitives; its transpose then sums the cotangent of a replicated operand)."""
    mats = [getattr(jax.typeof(v), "manual_axis_type", None) for v in values]
    if any(m is None for m in mats):
        return list(values)
    union: frozenset = frozenset().union(*[m.varying for m in mats])
    out = []
    for v, m in zip(values, mats):
        missing = tuple(sorted(union - m.varying))
        if missing and not m.unreduced and not m.reduced:
            v = lax.pcast(v, missing, to="varying")
        out.append(v)
    return out


def trace_state_clean_fn() -> Any:
    """JAX's ``trace_state_clean`` (no trace active: a bind runs eagerly) or None when this
    JAX lacks it (callers then assume a trace may be active). JAX has no public query for
    this; it is what ``jax.clear_caches`` callers inside JAX use. Returned once, so a hot
    path (a lazy segment's flush) calls it without the import."""
    try:
        from jax._src.core import trace_state_clean
    except ImportError:
        return None
    return trace_state_clean


_TRACE_STATE_CLEAN = trace_state_clean_fn()


def is_tracing() -> bool:
    """True while JAX traces something (jit, grad, vmap...): not a moment to clear its caches.
    Without JAX's query (:func:`trace_state_clean_fn`), assume tracing (never clear at an
    unsafe time: the budget is then enforced only at top level)."""
    return _TRACE_STATE_CLEAN is None or not _TRACE_STATE_CLEAN()


def cpu_async_dispatch() -> bool:
    """Whether JAX runs CPU computations asynchronously (its default; the
    ``jax_cpu_enable_async_dispatch`` flag). Flags have no attribute on ``jax.config`` in
    0.10; ``jax.config.read`` is the config object's own reader. Unknown: True (the
    default)."""
    try:
        return bool(jax.config.read("jax_cpu_enable_async_dispatch"))
    except (AttributeError, KeyError):
        return True


def _traceback_note() -> str:
    # The footer JAX's traceback filtering (the default JAX_TRACEBACK_FILTERING) adds, as an
    # exception note, to any exception leaving a jax.jit: "For simplicity, JAX has removed
    # its internal frames from the traceback of the following exception...". Its text is
    # private (jax._src.traceback_util); the public wording is the fallback.
    try:
        from jax._src.traceback_util import _simplified_tb_msg
        return str(_simplified_tb_msg)
    except ImportError:
        return "For simplicity, JAX has removed its internal frames from the traceback"


_TB_NOTE = _traceback_note()


def drop_traceback_note(e: BaseException) -> None:
    """Remove JAX's traceback-filtering footer from ``e``'s notes (its filtered traceback
    stays: JAX's internal frames are still left out). An eager op's error raised through the
    op's ``jax.jit`` would otherwise end with that footer, which announces "the following
    exception" when none follows: jflow's errors print as jflow's alone."""
    notes = getattr(e, "__notes__", None)
    if not notes:
        return
    kept = [n for n in notes if not (isinstance(n, str) and _TB_NOTE in n)]
    if len(kept) == len(notes):
        return
    if kept:
        e.__notes__ = kept
    else:
        del e.__notes__


# -- queries JAX answers only privately (used by jflow.env, distributed.c10d, sharding) -------

def backends_initialized() -> bool:
    """Whether JAX's backends have started (``jax.distributed.initialize`` must come first):
    no public query; ``jax.distributed`` itself makes the same check."""
    from jax._src import xla_bridge
    return xla_bridge.backends_are_initialized()


def distributed_client() -> tuple[Any, int, int]:
    """``jax.distributed``'s coordination-service client (None before it is initialized), this
    process's index and the process count: JAX has no public accessor for the client."""
    from jax._src.distributed import global_state
    return global_state.client, global_state.process_id, global_state.num_processes


def jaxlib_has(name: str) -> bool:
    """Whether jaxlib's extension module has ``name`` (e.g. ``make_gloo_tcp_collectives``):
    which collectives this build carries has no public query."""
    from jax._src.lib import _jax
    return hasattr(_jax, name)


def refuse_as_argument(cls: type, refuse: Any) -> bool:
    """Have JAX call ``refuse`` (which raises ``TypeError``) when it reads the abstract value
    of a ``cls`` argument: a subclass of ``jax.ShapeDtypeStruct`` (a meta tensor's value) is
    otherwise taken as an abstract argument, lowered and compiled, and refused only when the
    executable is called (an XLA compile per call, every one thrown away). JAX's type-to-aval
    table is private (``jax.core``'s alias is deprecated); False where this JAX has none
    (the call is then refused after compiling, as before)."""
    from jax._src import core
    table = getattr(core, "pytype_aval_mappings", None)
    if not isinstance(table, dict):
        return False
    table[cls] = refuse
    return True


@functools.cache
def _lowering_caches() -> tuple[Any, ...]:
    from jax._src import pjit
    from jax._src.interpreters import pxla
    return tuple(c for c in (getattr(pjit, "_pjit_lower", None),
                             getattr(pxla, "_cached_lowering_to_hlo", None),
                             getattr(pxla, "_cached_compilation", None))
                 if hasattr(c, "cache_clear"))


def release_lowerings() -> bool:
    """Drop the StableHLO lowerings JAX keeps after compiling them; False where this JAX
    keeps them elsewhere (nothing is dropped then).

    ``jax.jit`` keeps, besides the compiled executable its fast path runs, the lowered module
    (an MLIR module with its own context) of every (function, shapes) it compiled, in two
    internal caches keyed weakly on the traced jaxpr — which JAX's trace cache keeps alive.
    Measured on CPU: 1.1 MiB of the 1.5 MiB each eager executable holds. The lowering is
    needed again only when the same function and shapes miss the fast path, which then lowers
    again; the executable itself is untouched (jit's fast path holds it). JAX has no public
    way to drop only these (``jax.clear_caches`` drops the executables too), hence the
    private names, looked up so that a JAX without them makes this a no-op. The cache clear
    is safe while a lowering is in flight: that call keeps its own result.

    The compile cache keyed by the lowered module goes too (a precaution: JAX's one cache
    keyed by a module): a module's hash is its MLIR pointer, which a freed module hands on to
    the next one allocated (checked on JAX 0.10), so no entry of a dropped module is kept.
    """
    caches = _lowering_caches()
    for cache in caches:
        cache.cache_clear()
    return len(caches) == 3
