"""The checker's SBP check: for an op and one sample, every SBP signature the op
declares for the sample's shapes, run on global inputs laid out as the signature says, gives
the single-device result, and its outputs carry the signature's SBP.

Each signature runs on the largest 1-d placement (4, 3 or 2 devices) that splits its split
dimensions evenly. A signature can go unrun on a sample for two reasons: no placement splits
it evenly, or an earlier signature has the same input SBPs (inference always picks that one).
:class:`SbpCoverage` records, per op, which declared signatures ran on some sample and why the
others did not, so a test can demand that every declared signature is exercised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..ops import get as get_op
from ..sharding.execute import usable_1d
from ..sharding.placement import placement
from ..sharding.sbp import Signature, _Split, signatures_of
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


def _devices_for(sig: Signature, in_shapes: list[tuple], out_shapes: list[tuple]) -> int | None:
    sizes = []
    for shapes, sbps in ((in_shapes, sig.inputs), (out_shapes, sig.outputs)):
        for shape, x in zip(shapes, sbps):
            if isinstance(x, _Split):
                sizes.append(shape[x.axis])
    n_dev = len(jax.devices("cpu"))
    for n in (4, 3, 2):
        if n <= n_dev and all(s % n == 0 for s in sizes):
            return n
    return None


def _label(s: Sample) -> str:
    return f"sample {s.name!r}" if s.name else f"sample {s.attrs}"


def _single_device(op: Any, s: Sample) -> tuple[list[Tensor], list[np.ndarray]]:
    """The sample's local input tensors and its single-device outputs (the reference)."""
    local = [_wrap(jnp.asarray(a)) for a in _flat_inputs(s)]
    res = op.apply(*_rebuild(s, local), **s.attrs)
    return local, [np.asarray(t._value) for t in (res if isinstance(res, tuple) else (res,))]


def _declared(op: Any, s: Sample, flat: list[np.ndarray], ref: list[np.ndarray]
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


def _run_signature(op: Any, s: Sample, sig: Signature, n: int, local: list[Tensor],
                   ref: list[np.ndarray]) -> None:
    """Lay the inputs out as ``sig`` says on ``n`` devices, run the op, compare."""
    plc = placement("cpu", list(range(n)))
    ins = [t.to_global(plc, x) for t, x in zip(local, sig.inputs)]
    label = f"op '{op.name}' {_label(s)} signature {sig} on {n} devices"
    try:
        got = op.apply(*_rebuild(s, ins), **s.attrs)
    except Exception as e:
        raise SbpCheckFailure(f"{label}: raised {type(e).__name__}: {e}") from e
    got = got if isinstance(got, tuple) else (got,)
    for k, (g, r, want_sbp) in enumerate(zip(got, ref, sig.outputs)):
        if g.sbp != (want_sbp,):
            raise SbpCheckFailure(f"{label}: output {k} has sbp {g.sbp}, the signature "
                                  f"says {want_sbp!r}")
        v = g.numpy()
        if v.shape != r.shape or v.dtype != r.dtype:
            raise SbpCheckFailure(f"{label}: output {k} is {v.dtype}{list(v.shape)}, the "
                                  f"single-device result {r.dtype}{list(r.shape)}")
        if not _close(v, r):
            raise SbpCheckFailure(f"{label}: output {k} differs from the single-device result")


def check_sbp(op_name: str, s: Sample, coverage: SbpCoverage | None = None) -> SbpCoverage:
    """Check every signature declared for one sample, recording into ``coverage`` what was
    declared, what ran and why the rest did not. A signature already exercised on another
    sample of the op is not run again."""
    op = get_op(op_name)
    cov = coverage if coverage is not None else SbpCoverage(op_name)
    flat = [np.asarray(a) for a in _flat_inputs(s)]
    if not flat:
        return cov
    local, ref = _single_device(op, s)
    picked: dict[tuple, Signature] = {}
    for sig in _declared(op, s, flat, ref):
        key = repr(sig)
        cov.declared.setdefault(key, _label(s))
        first = picked.setdefault(sig.inputs, sig)
        if first is not sig:  # inference picks the first signature with these inputs
            cov.not_run.setdefault(key, []).append(
                f"{_label(s)}: shadowed by {first} (same input SBPs, declared earlier)")
            continue
        if key in cov.exercised:
            continue
        n = _devices_for(sig, [a.shape for a in flat], [r.shape for r in ref])
        if n is None:
            cov.not_run.setdefault(key, []).append(
                f"{_label(s)}: no placement of 4, 3 or 2 devices splits it evenly "
                f"(input shapes {[list(a.shape) for a in flat]})")
            continue
        _run_signature(op, s, sig, n, local, ref)
        cov.exercised[key] = _label(s)
    return cov


def sbp_coverage(op_name: str) -> SbpCoverage:
    """The SBP check over all of an op's samples (those with ``sbp=True``), each distinct
    signature run once (on the first sample where it is picked and divides evenly)."""
    cov = SbpCoverage(op_name)
    for s in get_samples(op_name).samples:
        if s.sbp:
            check_sbp(op_name, s, cov)
    return cov


def check_op_sbp(op_name: str) -> tuple[int, int]:
    """:func:`sbp_coverage`, as counts: (signatures checked, declared signatures never run)."""
    cov = sbp_coverage(op_name)
    return len(cov.exercised), len(cov.missing)
