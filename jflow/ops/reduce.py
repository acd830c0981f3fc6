"""Reduction and scan ops: definition, xla kernel and SBP signatures side by side.

Naming follows OneFlow: ``reduce_<fn>`` for reductions over a list of axes (attrs ``axis``:
int32_list, empty = every axis; ``keepdim``: bool), ``argmax`` / ``argmin`` (one optional axis,
absent = the flattened input), ``max_dim`` / ``min_dim`` (values and first-occurrence indices
along one axis, PyTorch's ``max(x, dim)``) and the scans ``cumsum`` / ``cumprod``.

The ops are dtype-strict: ``reduce_sum`` / ``reduce_prod`` / ``cumsum`` / ``cumprod`` return the
input dtype and refuse bool (the functional layer casts int/bool inputs to int64 first, as
PyTorch's result dtype); the float-only reductions (mean, var, logsumexp, norm) refuse integers.
Axes may be negative; they are resolved against the input's rank in inference and kernel.
16-bit floats are accumulated in float32, as PyTorch's CPU/GPU kernels do.

SBP (OneFlow's reduce ops): a split on a kept axis stays a split (renumbered when the reduced
axes are dropped); a split on a reduced axis gives partial_sum for ``reduce_sum`` only (a
physical sum of a shard is a partial of the logical sum), and P -> P holds for the linear ops
(sum, mean, cumsum). Max/min/prod/any/all/var/norm/logsumexp offer no partial signature.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels.registry import register_kernel
from ..sharding.sbp import P, S, Signature
from .infer import (
    ANY,
    FLOAT,
    FLOAT_C,
    NUMBER,
    NUMBER_C,
    check_dtype,
    desc,
    normalize_axes,
    normalize_axis,
    reduce_shape,
)
from .primitive import define_op
from .registry import Attr

_INT64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)
_AXES = [Attr("axis", "int32_list", ()), Attr("keepdim", "bool", False)]


# -- shared helpers ---------------------------------------------------------------------------

def _kernel_axes(ndim: int, axis: Sequence[int]) -> tuple[int, ...]:
    """Non-negative axes for a kernel (inference has already validated them)."""
    if ndim == 0:
        return ()
    if not axis:
        return tuple(range(ndim))
    return tuple(sorted({a % ndim for a in axis}))


def _acc(x: Any) -> Any:
    """16-bit floats are computed in float32 (accuracy, as PyTorch accumulates)."""
    if x.dtype in (jnp.float16, jnp.bfloat16):
        return x.astype(jnp.float32)
    return x


def _numel(shape: Sequence[int], axes: Sequence[int]) -> int:
    return math.prod(shape[a] for a in axes)


def _no_empty_axis(shape: Sequence[int], axes: tuple[int, ...], what: str) -> None:
    """Max/min/argmax have no identity: reducing a zero-size axis is an error, not garbage."""
    for a in axes:
        if shape[a] == 0:
            raise ValueError(f"cannot compute {what} over axis {a} of size 0 (input shape "
                             f"{tuple(shape)}): the reduction has no identity")


def _reduce_infer(allowed: frozenset[str], out_dtype: Any = None, nonempty: str | None = None):
    def infer(x: Any, *, axis: tuple[int, ...], keepdim: bool, **_: Any) -> Any:
        check_dtype(x, allowed, "input")
        axes = normalize_axes(axis, len(x.shape), "axis")
        if nonempty:
            _no_empty_axis(x.shape, axes, nonempty)
        return desc(reduce_shape(x.shape, axes, keepdim), x.dtype if out_dtype is None
                    else out_dtype)
    return infer


def reduce_sbp(partial: str = "none"):
    """OneFlow's reduce get_sbp_fn. ``partial``: "none"; "linear" (P -> P: mean, cumsum-like);
    "sum" (S(reduced axis) -> P and P -> P: reduce_sum)."""
    def fn(in_shapes: Sequence[Sequence[int]], n_out: int = 1, *, axis: Sequence[int] = (),
           keepdim: bool = False, **_: Any) -> list[Signature]:
        nd = len(in_shapes[0])
        axes = set(_kernel_axes(nd, axis))
        sigs, dropped = [], 0
        for i in range(nd):
            if i in axes:
                if partial == "sum":
                    sigs.append(Signature((S(i),), (P,) * n_out))
                dropped += 1
            else:
                out_axis = i if keepdim else i - dropped
                sigs.append(Signature((S(i),), (S(out_axis),) * n_out))
        if partial in ("sum", "linear"):
            sigs.append(Signature((P,), (P,) * n_out))
        return sigs
    fn.__name__ = f"reduce_sbp_{partial}"
    return fn


def _one_axis_sbp(in_shapes: Sequence[Sequence[int]], n_out: int = 1, *, axis: Any = None,
                  keepdim: bool = False, **_: Any) -> list[Signature]:
    """argmax / max_dim: a split on any other axis stays a split; none for a flattened argmax."""
    if axis is None:
        return []
    nd = len(in_shapes[0])
    return reduce_sbp("none")(in_shapes, n_out, axis=(axis,), keepdim=keepdim) if nd else []


def _scan_sbp(in_shapes: Sequence[Sequence[int]], n_out: int = 1, *, dim: int = 0,
              **_: Any) -> list[Signature]:
    """cumsum/cumprod: split on any axis but the scanned one; cumsum also P -> P (linear)."""
    nd = len(in_shapes[0])
    d = dim % nd if nd else 0
    return [Signature((S(i),), (S(i),) * n_out) for i in range(nd) if i != d]


def _cumsum_sbp(in_shapes: Sequence[Sequence[int]], n_out: int = 1, **attrs: Any
                ) -> list[Signature]:
    return _scan_sbp(in_shapes, n_out, **attrs) + [Signature((P,), (P,) * n_out)]


# -- reductions over an axis list --------------------------------------------------------------

def _sum(x: Any, axis: tuple[int, ...], keepdim: bool) -> Any:
    axes = _kernel_axes(x.ndim, axis)
    if jnp.issubdtype(x.dtype, jnp.floating):  # jnp upcasts 16-bit floats internally
        return jnp.sum(x, axis=axes, keepdims=keepdim)
    return jnp.sum(x, axis=axes, keepdims=keepdim, dtype=x.dtype)


def _prod(x: Any, axis: tuple[int, ...], keepdim: bool) -> Any:
    axes = _kernel_axes(x.ndim, axis)
    if jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.prod(_acc(x), axis=axes, keepdims=keepdim).astype(x.dtype)
    return jnp.prod(x, axis=axes, keepdims=keepdim, dtype=x.dtype)


def _mean(x: Any, axis: tuple[int, ...], keepdim: bool) -> Any:
    axes = _kernel_axes(x.ndim, axis)
    n = _numel(x.shape, axes)
    s = jnp.sum(_acc(x), axis=axes, keepdims=keepdim)
    return (s / jnp.asarray(n, s.dtype)).astype(x.dtype)  # n == 0 -> 0/0 = nan, as torch


def _max(x: Any, axis: tuple[int, ...], keepdim: bool) -> Any:
    return jnp.max(x, axis=_kernel_axes(x.ndim, axis), keepdims=keepdim)


def _min(x: Any, axis: tuple[int, ...], keepdim: bool) -> Any:
    return jnp.min(x, axis=_kernel_axes(x.ndim, axis), keepdims=keepdim)


def _any(x: Any, axis: tuple[int, ...], keepdim: bool) -> Any:
    return jnp.any(x != 0, axis=_kernel_axes(x.ndim, axis), keepdims=keepdim)


def _all(x: Any, axis: tuple[int, ...], keepdim: bool) -> Any:
    return jnp.all(x != 0, axis=_kernel_axes(x.ndim, axis), keepdims=keepdim)


def _logsumexp(x: Any, axis: tuple[int, ...], keepdim: bool) -> Any:
    """log(sum(exp(x))) shifted by the max; an infinite max is not subtracted (inf - inf)."""
    axes = _kernel_axes(x.ndim, axis)
    xa = _acc(x)
    if _numel(x.shape, axes) == 0:
        return jnp.full(reduce_shape(x.shape, axes, keepdim), -jnp.inf, x.dtype)
    m = jnp.max(xa, axis=axes, keepdims=True)
    m = jnp.where(jnp.isfinite(m), m, jnp.zeros((), m.dtype))
    s = jnp.sum(jnp.exp(xa - m), axis=axes, keepdims=True)
    out = jnp.log(s) + m
    if not keepdim:
        out = jnp.squeeze(out, axis=axes)
    return out.astype(x.dtype)


def _var(x: Any, axis: tuple[int, ...], keepdim: bool, correction: float) -> Any:
    """Two-pass variance; divisor max(n - correction, 0), so n <= correction gives nan (0/0)
    or inf, as torch."""
    axes = _kernel_axes(x.ndim, axis)
    xa = _acc(x)
    n = _numel(x.shape, axes)
    mean = jnp.sum(xa, axis=axes, keepdims=True) / jnp.asarray(max(n, 1), xa.dtype)
    d = xa - mean
    ss = jnp.sum(d * d, axis=axes, keepdims=keepdim)
    if n == 0:
        ss = jnp.full(ss.shape, jnp.nan, ss.dtype)
    return (ss / jnp.asarray(max(n - correction, 0.0), ss.dtype)).astype(x.dtype)


def _norm(x: Any, ord: float, axis: tuple[int, ...], keepdim: bool) -> Any:  # noqa: A002
    """Vector p-norm (torch.linalg.vector_norm): inf / -inf / 0 / 1 / 2 / any other p."""
    axes = _kernel_axes(x.ndim, axis)
    a = jnp.abs(_acc(x))
    if ord == math.inf:
        out = jnp.max(a, axis=axes, keepdims=keepdim)
    elif ord == -math.inf:
        out = jnp.min(a, axis=axes, keepdims=keepdim)
    elif ord == 0:
        out = jnp.sum((a != 0).astype(a.dtype), axis=axes, keepdims=keepdim)
    elif ord == 1:
        out = jnp.sum(a, axis=axes, keepdims=keepdim)
    elif ord == 2:
        out = jnp.sqrt(jnp.sum(a * a, axis=axes, keepdims=keepdim))
    else:
        p = jnp.asarray(ord, a.dtype)
        out = jnp.sum(a ** p, axis=axes, keepdims=keepdim) ** (1 / p)
    return out.astype(x.dtype)


def _var_infer(x: Any, *, axis: tuple[int, ...], keepdim: bool, correction: float) -> Any:
    return _reduce_infer(FLOAT)(x, axis=axis, keepdim=keepdim)


def _var_check(correction: float, **_: Any) -> None:
    if not math.isfinite(correction):
        raise ValueError(f"reduce_var: correction must be finite, got {correction}")


def _norm_check(ord: float, **_: Any) -> None:  # noqa: A002
    if math.isnan(ord):
        raise ValueError("ord must not be nan")


def _norm_infer(x: Any, *, ord: float, axis: tuple[int, ...], keepdim: bool) -> Any:  # noqa: A002
    out = _reduce_infer(FLOAT)(x, axis=axis, keepdim=keepdim)
    if math.isinf(ord):
        _no_empty_axis(x.shape, normalize_axes(axis, len(x.shape), "axis"),
                       f"the {'-' if ord < 0 else ''}inf norm")
    return out


_SUM_SBP = reduce_sbp("sum")
_LINEAR_SBP = reduce_sbp("linear")
_PLAIN_SBP = reduce_sbp("none")

for _name, _fn, _infer, _sbp, _doc in [
    ("reduce_sum", _sum, _reduce_infer(NUMBER_C), _SUM_SBP,
     "sum over axis (empty = all); output dtype = input dtype (no bool: cast first)"),
    ("reduce_prod", _prod, _reduce_infer(NUMBER), _PLAIN_SBP,
     "product over axis (empty = all); output dtype = input dtype (no bool: cast first)"),
    ("reduce_mean", _mean, _reduce_infer(FLOAT_C), _LINEAR_SBP,
     "mean over axis (empty = all); floating inputs; an empty reduction gives nan"),
    ("reduce_max", _max, _reduce_infer(ANY, nonempty="max"), _PLAIN_SBP,
     "max over axis (empty = all), nan propagates; a zero-size reduced axis is an error"),
    ("reduce_min", _min, _reduce_infer(ANY, nonempty="min"), _PLAIN_SBP,
     "min over axis (empty = all), nan propagates; a zero-size reduced axis is an error"),
    ("reduce_any", _any, _reduce_infer(ANY, out_dtype=_BOOL), _PLAIN_SBP,
     "logical or of x != 0 over axis (empty = all); bool output; empty -> False"),
    ("reduce_all", _all, _reduce_infer(ANY, out_dtype=_BOOL), _PLAIN_SBP,
     "logical and of x != 0 over axis (empty = all); bool output; empty -> True"),
    ("reduce_logsumexp", _logsumexp, _reduce_infer(FLOAT), _PLAIN_SBP,
     "log(sum(exp(x))) over axis, computed stably; empty -> -inf"),
]:
    # any/all give bools: no gradient
    _traits = ("NoSideEffect", "NoGrad") if _name in ("reduce_any", "reduce_all") else \
        ("NoSideEffect",)
    define_op(_name, inputs=["x"], outputs=["y"], attrs=_AXES, infer=_infer, sbp=_sbp, doc=_doc,
              traits=_traits)
    register_kernel(_name, _fn, name=f"{_name}_xla")

define_op("reduce_var", inputs=["x"], outputs=["y"],
          # correction is static: the divisor max(n - correction, 0) is Python arithmetic, and a
          # model uses one or two values (0 and 1), so a compile per value costs nothing
          attrs=[*_AXES, Attr("correction", "double", 1.0, static=True)], infer=_var_infer,
          sbp=_PLAIN_SBP, check=_var_check,
          doc="variance over axis (empty = all), divisor max(n - correction, 0) (torch's "
              "correction; 1 = unbiased); n <= correction -> nan/inf")
register_kernel("reduce_var", _var, name="reduce_var_xla")

define_op("reduce_norm", inputs=["x"], outputs=["y"],
          attrs=[Attr("ord", "double", 2.0, static=True), *_AXES],  # ord picks the formula
          check=_norm_check, infer=_norm_infer,
          sbp=_PLAIN_SBP,
          doc="vector p-norm over axis (empty = all): (sum |x|^ord)^(1/ord), ord in R or +-inf")
register_kernel("reduce_norm", _norm, name="reduce_norm_xla")


# -- argmax / argmin -----------------------------------------------------------------------------

def _arg_infer(what: str):
    def infer(x: Any, *, axis: int | None, keepdim: bool) -> Any:
        check_dtype(x, ANY, "input")
        nd = len(x.shape)
        if axis is None:
            if math.prod(x.shape) == 0:
                raise ValueError(f"cannot compute {what} of an empty input (shape "
                                 f"{tuple(x.shape)}) without an axis")
            return desc((1,) * nd if keepdim else (), _INT64)
        a = normalize_axis(axis, nd, "axis")
        if nd:
            _no_empty_axis(x.shape, (a,), what)
        return desc(reduce_shape(x.shape, (a,) if nd else (), keepdim), _INT64)
    return infer


def _arg_kernel(fn: Any):
    def kernel(x: Any, axis: int | None, keepdim: bool) -> Any:
        if axis is None:
            i = fn(x.reshape(-1))
            return (i.reshape((1,) * x.ndim) if keepdim else i).astype(jnp.int64)
        if x.ndim == 0:
            return jnp.zeros((), jnp.int64)
        return fn(x, axis=axis % x.ndim, keepdims=keepdim).astype(jnp.int64)
    return kernel


for _name, _fn in [("argmax", jnp.argmax), ("argmin", jnp.argmin)]:
    define_op(_name, inputs=["x"], outputs=["y"],
              attrs=[Attr("axis", "int32", None), Attr("keepdim", "bool", False)],
              infer=_arg_infer(_name), sbp=_one_axis_sbp, traits=("NoSideEffect", "NoGrad"),
              doc=f"int64 index of the first {_name[3:]} along axis (absent: of the flattened "
                  f"input); nan counts as the {_name[3:]}")
    register_kernel(_name, _arg_kernel(_fn), name=f"{_name}_xla")


# -- max / min with indices along one axis (torch.max(x, dim)) ---------------------------------

def _dim_infer(what: str):
    def infer(x: Any, *, axis: int, keepdim: bool) -> Any:
        check_dtype(x, ANY, "input")
        nd = len(x.shape)
        a = normalize_axis(axis, nd, "axis")
        if nd:
            _no_empty_axis(x.shape, (a,), what)
        shape = reduce_shape(x.shape, (a,) if nd else (), keepdim)
        return desc(shape, x.dtype), desc(shape, _INT64)
    return infer


def _dim_kernel(arg: Any):
    def kernel(x: Any, axis: int, keepdim: bool) -> tuple[Any, Any]:
        if x.ndim == 0:
            return x, jnp.zeros((), jnp.int64)
        a = axis % x.ndim
        idx = arg(x, axis=a, keepdims=True)
        values = jnp.take_along_axis(x, idx, axis=a)  # values == x[idx]: nan stays nan
        if not keepdim:
            values, idx = jnp.squeeze(values, a), jnp.squeeze(idx, a)
        return values, idx.astype(jnp.int64)
    return kernel


for _name, _fn in [("max_dim", jnp.argmax), ("min_dim", jnp.argmin)]:
    define_op(_name, inputs=["x"], outputs=["values", "indices"],
              attrs=[Attr("axis", "int32"), Attr("keepdim", "bool", False)],
              infer=_dim_infer(_name[:3]), sbp=_one_axis_sbp,
              doc=f"{_name[:3]} along axis and the int64 index of its first occurrence")
    register_kernel(_name, _dim_kernel(_fn), name=f"{_name}_xla")


# -- scans -----------------------------------------------------------------------------------

def _scan_infer(x: Any, *, dim: int) -> Any:
    check_dtype(x, NUMBER, "input")
    normalize_axis(dim, len(x.shape), "dim")
    return desc(x.shape, x.dtype)


def _scan_kernel(fn: Any):
    def kernel(x: Any, dim: int) -> Any:
        if x.ndim == 0:
            return x
        if jnp.issubdtype(x.dtype, jnp.floating):
            return fn(_acc(x), axis=dim % x.ndim).astype(x.dtype)
        return fn(x, axis=dim % x.ndim, dtype=x.dtype)
    return kernel


define_op("cumsum", inputs=["x"], outputs=["y"], attrs=[Attr("dim", "int32")],
          infer=_scan_infer, sbp=_cumsum_sbp,
          doc="inclusive prefix sum along dim; output dtype = input dtype (no bool)")
register_kernel("cumsum", _scan_kernel(jnp.cumsum), name="cumsum_xla")
define_op("cumprod", inputs=["x"], outputs=["y"], attrs=[Attr("dim", "int32")],
          infer=_scan_infer, sbp=_scan_sbp,
          doc="inclusive prefix product along dim; output dtype = input dtype (no bool)")
register_kernel("cumprod", _scan_kernel(jnp.cumprod), name="cumprod_xla")



def _float_scan_infer(x: Any, *, dim: int) -> Any:
    check_dtype(x, FLOAT, "input")
    normalize_axis(dim, len(x.shape), "dim")
    return desc(x.shape, x.dtype)


def _logcumsumexp(x: Any, dim: int) -> Any:
    """log(cumsum(exp(x))) as a scan of logaddexp: no global shift, so an early entry far
    below a later maximum keeps its value (a shift by the max would underflow it to -inf)."""
    if x.ndim == 0 or x.size == 0:
        return x
    return jax.lax.cumlogsumexp(_acc(x), axis=dim % x.ndim).astype(x.dtype)


define_op("logcumsumexp", inputs=["x"], outputs=["y"], attrs=[Attr("dim", "int32")],
          infer=_float_scan_infer, sbp=_scan_sbp,
          doc="log of the inclusive prefix sum of exp(x) along dim, computed stably; floating "
              "inputs")
register_kernel("logcumsumexp", _logcumsumexp, name="logcumsumexp_xla")

# -- cummax / cummin: running extremum with its index -------------------------------------------

def _cumext_infer(x: Any, *, dim: int) -> Any:
    check_dtype(x, ANY, "input")
    normalize_axis(dim, len(x.shape), "dim")
    return desc(x.shape, x.dtype), desc(x.shape, _INT64)


def _cumext_kernel(larger: bool):
    """PyTorch's sequential rule (``x >= best or isnan(x)`` for cummax, ``<=`` for cummin) as
    an associative scan: the later of two candidates wins on a tie, a nan wins over a number
    and the last nan over earlier ones, so the index is that of the last extremum seen."""
    def combine(a: Any, b: Any) -> Any:
        (av, ai), (bv, bi) = a, b
        if jnp.issubdtype(av.dtype, jnp.floating):
            a_nan, b_nan = jnp.isnan(av), jnp.isnan(bv)
            better = (bv >= av) if larger else (bv <= av)
            take_b = b_nan | (~a_nan & better)
        else:
            take_b = (bv >= av) if larger else (bv <= av)
        return jnp.where(take_b, bv, av), jnp.where(take_b, bi, ai)

    def kernel(x: Any, dim: int) -> tuple[Any, Any]:
        if x.ndim == 0:
            return x, jnp.zeros((), jnp.int64)
        d = dim % x.ndim
        if x.shape[d] == 0:
            return x, jnp.zeros(x.shape, jnp.int64)
        iota = jax.lax.broadcasted_iota(jnp.int64, x.shape, d)
        return jax.lax.associative_scan(combine, (x, iota), axis=d)
    return kernel


for _name, _larger in [("cummax", True), ("cummin", False)]:
    define_op(_name, inputs=["x"], outputs=["values", "indices"], attrs=[Attr("dim", "int32")],
              infer=_cumext_infer, sbp=_scan_sbp,
              doc=f"running {_name[3:]} along dim and the int64 index of the last "
                  f"{_name[3:]} so far (nan propagates), as torch.{_name}")
    register_kernel(_name, _cumext_kernel(_larger), name=f"{_name}_xla")

# -- order statistics along one axis: kthvalue / median_dim / mode ------------------------------
# One kernel shape: a stable sort of each slice, a position in it chosen per slice, and the
# value and original index there. nan sorts last (PyTorch treats nan as the largest value).
# Among equal values the stable order decides the index; PyTorch's CPU kernel picks one by
# quickselect (implementation-defined), so only the values and "an index of that value" are
# its contract, and jflow's is deterministic.

def _order_infer(what: str):
    def infer(x: Any, *, axis: int, keepdim: bool, **attrs: Any) -> Any:
        check_dtype(x, ANY, "input")
        nd = len(x.shape)
        a = normalize_axis(axis, nd, "axis")
        if nd:
            _no_empty_axis(x.shape, (a,), what)
        k = attrs.get("k")
        n = x.shape[a] if nd else 1
        if k is not None and not 1 <= k <= n:
            raise ValueError(f"kthvalue: k={k} is out of range for an axis of size {n} "
                             f"(1 <= k <= {n})")
        shape = reduce_shape(x.shape, (a,) if nd else (), keepdim)
        return desc(shape, x.dtype), desc(shape, _INT64)
    return infer


def _order_kernel(position: Any):
    """``position(sorted_values) -> int positions`` (one per slice, the slice axis last)."""
    def kernel(x: Any, axis: int, keepdim: bool, **attrs: Any) -> tuple[Any, Any]:
        if x.ndim == 0:
            return x, jnp.zeros((), jnp.int64)
        a = axis % x.ndim
        xm = jnp.moveaxis(x, a, -1)
        perm = jnp.argsort(xm, axis=-1, stable=True)
        srt = jnp.take_along_axis(xm, perm, axis=-1)
        pos = position(srt, **attrs)[..., None]
        val = jnp.take_along_axis(srt, pos, axis=-1)[..., 0]
        idx = jnp.take_along_axis(perm, pos, axis=-1)[..., 0].astype(jnp.int64)
        if keepdim:
            val, idx = jnp.expand_dims(val, a), jnp.expand_dims(idx, a)
        return val, idx
    return kernel


def _nan_count(srt: Any) -> Any:
    if not jnp.issubdtype(srt.dtype, jnp.floating):
        return jnp.zeros(srt.shape[:-1], jnp.int32)
    return jnp.sum(jnp.isnan(srt), axis=-1, dtype=jnp.int32)


def _kth_position(srt: Any, k: int) -> Any:
    return jnp.full(srt.shape[:-1], k - 1, jnp.int32)


def _median_position(srt: Any, ignore_nan: bool) -> Any:
    """The lower median (position (n - 1) // 2). With nan in the slice: median gives the first
    nan (sorted right after the numbers); nanmedian the lower median of the numbers, or
    position (n - 1) // 2 among the nans when there is no number (as PyTorch)."""
    n = srt.shape[-1]
    c = n - _nan_count(srt)  # numbers in the slice
    if ignore_nan:
        return jnp.where(c > 0, (c - 1) // 2, (n - 1) // 2)
    return jnp.where(c < n, c, (n - 1) // 2)


def _mode_position(srt: Any) -> Any:
    """The end of the longest run of equal values; the first such run (the smallest value) on
    a tie. The run's end is, by the stable sort, the value's last index, as PyTorch's mode;
    nan != nan, so each nan is a run of its own."""
    n = srt.shape[-1]
    i = jnp.arange(n, dtype=jnp.int32)
    diff = srt[..., 1:] != srt[..., :-1]
    edge = jnp.ones(srt.shape[:-1] + (1,), bool)
    start = jax.lax.cummax(jnp.where(jnp.concatenate([edge, diff], -1), i, 0), axis=srt.ndim - 1)
    is_end = jnp.concatenate([diff, edge], -1)
    count = jnp.where(is_end, i - start + 1, 0)
    return jnp.argmax(count, axis=-1).astype(jnp.int32)


for _name, _pos, _extra, _doc in [
    ("kthvalue", _kth_position, [Attr("k", "int64")],
     "the k-th smallest value along axis (1-based; nan is the largest) and an index of it"),
    ("median_dim", _median_position, [Attr("ignore_nan", "bool", False)],
     "the lower median along axis and an index of it; nan in a slice gives its first nan "
     "unless ignore_nan (torch.nanmedian)"),
    ("mode", _mode_position, [],
     "the most frequent value along axis (the smallest on a tie) and its last index"),
]:
    define_op(_name, inputs=["x"], outputs=["values", "indices"],
              attrs=[Attr("axis", "int32"), Attr("keepdim", "bool", False), *_extra],
              infer=_order_infer(_name.removesuffix("_dim")), sbp=_one_axis_sbp, doc=_doc)
    register_kernel(_name, _order_kernel(_pos), name=f"{_name}_xla")

__all__ = ["reduce_sbp"]
