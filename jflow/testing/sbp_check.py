"""The checker's SBP check: for an op and one sample, every SBP signature the op
declares for the sample's shapes, run on global inputs laid out as the signature says, gives
the single-device result, and its outputs carry the signature's SBP.

Each signature runs on a 1-d placement (4, 3 or 2 devices) that splits its split dimensions
evenly: per op, the fewest device counts that serve every signature (each device count is one
executable), the largest where that choice is free (a signature that 4 and 2 both split runs on
4, unless another signature of the op needs 2 and nothing needs 4); one that splits nothing
(broadcasts and partial sums) on the largest placement the op's splitting signatures use (any
number of devices serves it alike, and it then adds no executable). A signature can go unrun
on a sample for two reasons: no placement splits it evenly, or an earlier signature has the
same input SBPs (inference always picks that one).
:class:`SbpCoverage` records, per op, which declared signatures ran on some sample and why the
others did not, so a test can demand that every declared signature is exercised.

Compile count: the signatures of an op that run on the same number of devices share one
executable: the op runs on global tensors of traced values inside one ``jax.jit`` (the same
dispatch path, signature inference and sharded computation, staged). The inputs are
laid out from host data shard by shard and the outputs read back shard by shard (a split
one reassembled, each replica of a broadcast one compared, a partial sum's addends summed),
not boxed through ``to_global`` / ``numpy()``, whose boxings compile an executable per shape
and layout and are not what this check is about (``tests/test_sbp*.py`` check boxing). The
single-device results come from the caller where it has them (``check_op(..., sbp=True)``:
its forward check's outputs, already compared with the reference), else from one
``jax.jit`` over the samples that run a signature.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import reduce
from itertools import combinations
from typing import Any

import jax
import numpy as np

from ..ops import get as get_op
from ..sharding.execute import usable_1d
from ..sharding.global_tensor import make_global
from ..sharding.placement import placement
from ..sharding.sbp import SbpParallel, Signature, _PartialSum, _Split, signatures_of
from ..sharding.spec import named_sharding
from ..tensor import Tensor, _wrap
from .grad_check import _flat_inputs, _rebuild
from .samples import Sample, get_samples

__all__ = ["check_sbp", "check_op_sbp", "sbp_coverage", "SbpCoverage", "SbpCheckFailure"]


class SbpCheckFailure(AssertionError):
    """A signature's sharded run disagrees with the single-device result or its SBP."""


@dataclass
class SbpCoverage:
    """Which of an op's declared signatures (keyed by ``repr``, e.g. ``(S(0), B) -> (S(0))``)
    its samples ran. A signature counts as declared when the op offers it (and a 1-d layout
    can carry it, see ``usable_1d``) for some sample's shapes."""

    op: str
    #: signature -> the first sample that declared it
    declared: dict[str, str] = field(default_factory=dict)
    #: signature -> the sample it ran (and passed) on
    exercised: dict[str, str] = field(default_factory=dict)
    #: signature -> why it did not run, one line per sample that declared it
    not_run: dict[str, list[str]] = field(default_factory=dict)

    @property
    def missing(self) -> list[str]:
        """Declared signatures no sample ran."""
        return sorted(set(self.declared) - set(self.exercised))

    def explain_missing(self) -> str:
        """One line per missing signature, with the reasons (to fix: add a sample)."""
        return "\n".join(f"op '{self.op}' {sig}: " + "; ".join(self.not_run.get(sig, ["?"]))
                         for sig in self.missing)


def _device_options(sig: Signature, in_shapes: list[tuple], out_shapes: list[tuple]
                    ) -> tuple[int, ...]:
    """The device counts (of 4, 3, 2, largest first) that split every split dimension of
    ``sig`` evenly."""
    sizes = []
    for shapes, sbps in ((in_shapes, sig.inputs), (out_shapes, sig.outputs)):
        for shape, x in zip(shapes, sbps):
            if isinstance(x, _Split):
                sizes.append(shape[x.axis])
    n_dev = len(jax.devices("cpu"))
    return tuple(n for n in (4, 3, 2) if n <= n_dev and all(s % n == 0 for s in sizes))


def _label(s: Sample) -> str:
    return f"sample {s.name!r}" if s.name else f"sample {s.attrs}"


def _single_device(op: Any, s: Sample, flat: list[np.ndarray]) -> list[np.ndarray]:
    """The sample's single-device outputs (the reference)."""
    res = op.apply(*_rebuild(s, [_wrap(jax.device_put(a)) for a in flat]), **s.attrs)
    return [np.asarray(t._value) for t in (res if isinstance(res, tuple) else (res,))]


def _single_device_all(op: Any, todo: list[tuple[Sample, list[np.ndarray]]]
                       ) -> list[list[np.ndarray]]:
    """:func:`_single_device` for several samples, in one ``jax.jit`` (one executable for
    the op's references instead of one per sample); each sample eagerly should the traced
    path refuse one."""
    def trace(vals: list[list[Any]]) -> list[list[Any]]:
        res = []
        for (s, _), v in zip(todo, vals):
            out = op.apply(*_rebuild(s, [_wrap(x) for x in v]), **s.attrs)
            res.append([t._value for t in (out if isinstance(out, tuple) else (out,))])
        return res

    try:
        got = jax.jit(trace)([[jax.device_put(a) for a in flat] for _, flat in todo])
    except Exception:  # a path that needs concrete values
        return [_single_device(op, s, flat) for s, flat in todo]
    return [[np.asarray(o) for o in outs] for outs in got]


def _abstract_outputs(op: Any, s: Sample, flat: list[np.ndarray]) -> list[Any]:
    """The shapes and dtypes of the sample's outputs, from the op's inference (nothing is
    compiled or run: a sample whose signatures all ran already costs no executable)."""
    def run(*xs: Any) -> list[Any]:
        res = op.apply(*_rebuild(s, [_wrap(x) for x in xs]), **s.attrs)
        return [t._value for t in (res if isinstance(res, tuple) else (res,))]
    return jax.eval_shape(run, *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in flat])


def _lay_out(a: np.ndarray, x: SbpParallel, plc: placement) -> Tensor:
    """A global tensor of value ``a`` laid out as ``x`` on ``plc``, placed from the host
    shard by shard (no executable); a partial sum holds the value on the first rank and
    zeros on the others, as boxing a broadcast value to a partial sum leaves it."""
    sharding = named_sharding(plc, (x,), a.ndim)
    if isinstance(x, _PartialSum):
        parts = [jax.device_put(a if i == 0 else np.zeros_like(a), d)
                 for i, d in enumerate(plc.mesh.devices.flat)]
        value = jax.make_array_from_single_device_arrays(a.shape, sharding, parts)
    else:
        value = jax.device_put(a, sharding)
    return make_global(value, plc, (x,))


def _read_back(g: Tensor, x: SbpParallel) -> list[np.ndarray]:
    """The logical value(s) of a global output with SBP ``x``, from its shards on the host:
    a split one reassembled, a partial sum's addends summed (floats in float64), a broadcast
    one once per rank (every replica must be the value)."""
    v = g._value
    shards = v.addressable_shards
    if isinstance(x, _PartialSum):  # (an unreduced array's shards have no index)
        parts = [np.asarray(sh.data) for sh in shards]
        if parts[0].dtype.kind in "fc":
            wide = np.complex128 if parts[0].dtype.kind == "c" else np.float64
            parts = [p.astype(wide) for p in parts]
        return [reduce(np.add, parts)]
    if isinstance(x, _Split):
        out = np.empty(v.shape, v.dtype)
        for sh in shards:
            out[sh.index] = np.asarray(sh.data)
        return [out]
    return [np.asarray(sh.data) for sh in shards]


def _declared(op: Any, s: Sample, flat: list[np.ndarray], ref: list[Any]
              ) -> list[Signature]:
    """The signatures the op declares for the sample's shapes that a 1-d layout can carry."""
    attrs = op.normalize_attrs(dict(s.attrs))
    in_avals = [jax.core.ShapedArray(a.shape, a.dtype) for a in flat]
    out_avals = [jax.core.ShapedArray(r.shape, r.dtype) for r in ref]
    return usable_1d(signatures_of(op, [a.shape for a in flat], len(ref), attrs),
                     in_avals, out_avals)


def _close(v: np.ndarray, r: np.ndarray) -> bool:
    if r.dtype.kind not in "fc":
        return bool(np.array_equal(v, r))
    size = r.dtype.itemsize // (2 if r.dtype.kind == "c" else 1)  # a complex one's parts
    tol = 2e-2 if size < 4 else (1e-5 if size == 4 else 1e-9)
    wide = np.complex128 if r.dtype.kind == "c" else np.float64
    return bool(np.allclose(v.astype(wide), r.astype(wide), rtol=tol, atol=tol,
                            equal_nan=True))


@dataclass
class _Planned:
    """One signature to run on one sample: its inputs laid out on ``n`` devices."""

    s: Sample
    sig: Signature
    n: int
    flat: list[np.ndarray]
    #: the single-device outputs (filled by :func:`_check` for the samples that run)
    ref: list[np.ndarray] | None
    #: the device counts that split it evenly (largest first; ``n`` is one of them)
    options: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        return f"{_label(self.s)} signature {self.sig} on {self.n} devices"


def _apply_global(op: Any, p: _Planned, values: list[Any], plc: Any, staged: bool = False
                  ) -> tuple[Any, ...]:
    """The op on global tensors of ``values`` (concrete or traced) laid out as ``p.sig``
    says; the outputs must carry the signature's SBP. An error of the op is a failure of
    the signature, except when ``staged`` (the eager rerun decides)."""
    label = f"op '{op.name}' {p.label}"
    ins = [make_global(v, plc, (x,)) for v, x in zip(values, p.sig.inputs)]
    try:
        got = op.apply(*_rebuild(p.s, ins), **p.s.attrs)
    except Exception as e:
        if staged:
            raise
        raise SbpCheckFailure(f"{label}: raised {type(e).__name__}: {e}") from e
    got = got if isinstance(got, tuple) else (got,)
    for k, (g, want_sbp) in enumerate(zip(got, p.sig.outputs)):
        if g.sbp != (want_sbp,):
            raise SbpCheckFailure(f"{label}: output {k} has sbp {g.sbp}, the signature "
                                  f"says {want_sbp!r}")
    return got


def _compare(op: Any, p: _Planned, got: Sequence[Tensor]) -> None:
    """The outputs of a signature's run == the single-device result."""
    label = f"op '{op.name}' {p.label}"
    for k, (g, r, want_sbp) in enumerate(zip(got, p.ref, p.sig.outputs)):
        if tuple(g._value.shape) != r.shape or g._value.dtype != r.dtype:
            raise SbpCheckFailure(f"{label}: output {k} is {g._value.dtype}"
                                  f"{list(g._value.shape)}, the single-device result "
                                  f"{r.dtype}{list(r.shape)}")
        for rank, v in enumerate(_read_back(g, want_sbp)):
            if not _close(v, r):
                which = ("" if isinstance(want_sbp, (_Split, _PartialSum))
                         else f" (rank {rank}'s replica)")
                raise SbpCheckFailure(f"{label}: output {k}{which} differs from the "
                                      f"single-device result")


def _run_eager(op: Any, p: _Planned) -> None:
    """One signature's run, eagerly (one sharded executable of its own)."""
    plc = placement("cpu", list(range(p.n)))
    ins = [_lay_out(a, x, plc)._value for a, x in zip(p.flat, p.sig.inputs)]
    _compare(op, p, _apply_global(op, p, ins, plc))


def _run_staged(op: Any, runs: list[_Planned]) -> None:
    """Signatures on the same number of devices run in one ``jax.jit``: the op on global
    tensors of traced values takes the same path (signature inference, then its sharded
    computation, staged into the trace), and the executable is one per op and device count
    instead of one per signature. Should the staged run fail for a reason other than a
    signature (a path that needs concrete values; empty global tensors, which the traced
    path refuses, run eagerly from the start), each runs eagerly instead."""
    empty = [p for p in runs if any(a.size == 0 for a in (*p.flat, *p.ref))]
    for p in empty:
        _run_eager(op, p)
    runs = [p for p in runs if all(p is not e for e in empty)]
    if not runs:
        return
    plc = placement("cpu", list(range(runs[0].n)))
    ins = [[_lay_out(a, x, plc)._value for a, x in zip(p.flat, p.sig.inputs)] for p in runs]

    def trace(ins: list[list[Any]]) -> list[list[Any]]:
        return [[g._value for g in _apply_global(op, p, v, plc, staged=True)]
                for p, v in zip(runs, ins)]

    try:
        outs = jax.jit(trace)(ins)
    except SbpCheckFailure:
        raise
    except Exception:
        for p in runs:
            _run_eager(op, p)
        return
    for p, vals in zip(runs, outs):
        _compare(op, p, [make_global(v, plc, (x,)) for v, x in zip(vals, p.sig.outputs)])


def _plan(op: Any, s: Sample, cov: SbpCoverage, planned: set[str]) -> list[_Planned]:
    """The signatures declared for one sample that are to run on it, recording into ``cov``
    what was declared and why the rest do not run. A signature already exercised (or
    planned, ``planned``) on another sample of the op is not run again."""
    flat = [np.asarray(a) for a in _flat_inputs(s)]
    if not flat:
        return []
    ref: list[np.ndarray] | None = None  # computed by _check for the samples that run
    try:
        outs: list[Any] = _abstract_outputs(op, s, flat)
    except Exception:  # an output shape that depends on the values (a host computation)
        outs = ref = _single_device(op, s, flat)
    picked: dict[tuple, Signature] = {}
    runs = []
    for sig in _declared(op, s, flat, outs):
        key = repr(sig)
        cov.declared.setdefault(key, _label(s))
        first = picked.setdefault(sig.inputs, sig)
        if first is not sig:  # inference picks the first signature with these inputs
            cov.not_run.setdefault(key, []).append(
                f"{_label(s)}: shadowed by {first} (same input SBPs, declared earlier)")
            continue
        if key in cov.exercised or key in planned:
            continue
        options = _device_options(sig, [a.shape for a in flat], [tuple(o.shape) for o in outs])
        if not options:
            cov.not_run.setdefault(key, []).append(
                f"{_label(s)}: no placement of 4, 3 or 2 devices splits it evenly "
                f"(input shapes {[list(a.shape) for a in flat]})")
            continue
        runs.append(_Planned(s, sig, options[0], flat, ref, options))
        planned.add(key)
    return runs


def _splits(sig: Signature) -> bool:
    return any(isinstance(x, _Split) for x in (*sig.inputs, *sig.outputs))


def _share_device_counts(runs: list[_Planned]) -> None:
    """The device count each signature runs on: each device count is one executable, so
    the splitting signatures of the op take the fewest device counts that split each of
    them evenly (of the smallest such sets, the one with the largest counts; each signature
    then the largest count of the set that splits it: e.g. signatures split evenly by 4 or 2
    and by 2 only all run on 2, one executable instead of two). A signature that splits
    nothing (broadcasts and partial sums only) runs on any number of devices alike (every
    rank holds the whole value, or an addend of it): it joins the largest device count a
    splitting signature of the op runs on, so it adds no executable of its own."""
    needs = {r.options for r in runs if _splits(r.sig)}
    counts = sorted({n for o in needs for n in o}, reverse=True)
    for k in range(1, len(counts) + 1):
        # combinations of a descending list come in descending lexicographic order
        cover = next((set(c) for c in combinations(counts, k)
                      if all(set(o) & set(c) for o in needs)), None)
        if cover is not None:
            for r in runs:
                if _splits(r.sig):
                    r.n = max(set(r.options) & cover)
            break
    used = [r.n for r in runs if _splits(r.sig)]
    if used:
        for r in runs:
            if not _splits(r.sig):
                r.n = max(used)


def _check(op_name: str, samples: list[Sample], cov: SbpCoverage,
           refs: dict[int, list[np.ndarray]] | None = None) -> SbpCoverage:
    """Plan the samples' signatures, run them grouped by device count, record what ran.
    ``refs`` (``id(sample)`` -> its single-device outputs, as the op checker's forward
    check computed them) spares computing them again."""
    op = get_op(op_name)
    planned: set[str] = set()
    runs = [r for s in samples for r in _plan(op, s, cov, planned)]
    todo: dict[int, tuple[Sample, list[np.ndarray]]] = {}
    for r in runs:
        if r.ref is None and refs is not None and id(r.s) in refs:
            r.ref = refs[id(r.s)]
        if r.ref is None:
            todo.setdefault(id(r.s), (r.s, r.flat))
    refs = dict(zip(todo, _single_device_all(op, list(todo.values())))) if todo else {}
    for r in runs:
        if r.ref is None:
            r.ref = refs[id(r.s)]
    _share_device_counts(runs)
    for n in sorted({r.n for r in runs}, reverse=True):
        _run_staged(op, [r for r in runs if r.n == n])
    for r in runs:
        cov.exercised[repr(r.sig)] = _label(r.s)
    return cov


def check_sbp(op_name: str, s: Sample, coverage: SbpCoverage | None = None) -> SbpCoverage:
    """Check every signature declared for one sample, recording into ``coverage`` what was
    declared, what ran and why the rest did not. A signature already exercised on another
    sample of the op is not run again."""
    return _check(op_name, [s], coverage if coverage is not None else SbpCoverage(op_name))


def sbp_coverage(op_name: str, refs: dict[int, list[np.ndarray]] | None = None
                 ) -> SbpCoverage:
    """The SBP check over all of an op's samples (those with ``sbp=True``), each distinct
    signature run once (on the first sample where it is picked and divides evenly).
    ``refs``: ``id(sample)`` -> the sample's single-device outputs where already computed
    (``check_op(..., sbp=True)`` passes its forward check's: one executable less)."""
    return _check(op_name, [s for s in get_samples(op_name).samples if s.sbp],
                  SbpCoverage(op_name), refs)


def check_op_sbp(op_name: str) -> tuple[int, int]:
    """:func:`sbp_coverage`, as counts: (signatures checked, declared signatures never run)."""
    cov = sbp_coverage(op_name)
    return len(cov.exercised), len(cov.missing)
