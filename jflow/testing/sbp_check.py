"""The checker's SBP check (DESIGN §9): for an op and one sample, every SBP signature the op
declares for the sample's shapes, run on global inputs laid out as the signature says, gives
the single-device result, and its outputs carry the signature's SBP.

Each signature runs on the largest 1-d placement (4, 3 or 2 devices) that splits its split
dimensions evenly; a signature no placement can split evenly is reported as skipped.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..ops import get as get_op
from ..sharding.execute import usable_1d
from ..sharding.placement import placement
from ..sharding.sbp import Signature, _Split, signatures_of
from ..tensor import _wrap
from .grad_check import _flat_inputs, _rebuild
from .samples import Sample

__all__ = ["check_sbp", "check_op_sbp", "SbpCheckFailure"]


class SbpCheckFailure(AssertionError):
    """A signature's sharded run disagrees with the single-device result or its SBP."""


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


def check_sbp(op_name: str, s: Sample, done: set | None = None) -> tuple[int, int]:
    """Check every signature on one sample; returns (checked, skipped for uneven splits).
    ``done``: signatures (by repr) already checked on another sample of the op, skipped."""
    op = get_op(op_name)
    flat = [np.asarray(a) for a in _flat_inputs(s)]
    if not flat:
        return 0, 0
    local = [_wrap(jnp.asarray(a)) for a in flat]
    res = op.apply(*_rebuild(s, local), **s.attrs)
    ref = [np.asarray(t._value) for t in (res if isinstance(res, tuple) else (res,))]
    attrs = op.normalize_attrs(dict(s.attrs))
    in_shapes = [tuple(a.shape) for a in flat]
    out_shapes = [r.shape for r in ref]
    in_avals = [jax.core.ShapedArray(a.shape, a.dtype) for a in flat]
    out_avals = [jax.core.ShapedArray(r.shape, r.dtype) for r in ref]
    sigs = usable_1d(signatures_of(op, in_shapes, len(ref), attrs), in_avals, out_avals)
    checked = skipped = 0
    seen_inputs: set[tuple] = set()
    for sig in sigs:
        if sig.inputs in seen_inputs:
            continue  # the first signature with these inputs is the one inference picks
        seen_inputs.add(sig.inputs)
        if done is not None and repr(sig) in done:
            continue
        n = _devices_for(sig, in_shapes, out_shapes)
        if n is None:
            skipped += 1
            continue
        plc = placement("cpu", list(range(n)))
        ins = [t.to_global(plc, x) for t, x in zip(local, sig.inputs)]
        label = f"op '{op_name}' sample {s.name or s.attrs} signature {sig} on {n} devices"
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
            tol = 1e-5 if r.dtype.kind == "f" and r.dtype.itemsize <= 4 else 1e-9
            if r.dtype.kind == "f" and r.dtype.itemsize < 4:
                tol = 2e-2
            ok = np.allclose(v.astype(np.float64), r.astype(np.float64), rtol=tol, atol=tol,
                             equal_nan=True) if r.dtype.kind in "fc" else np.array_equal(v, r)
            if not ok:
                raise SbpCheckFailure(f"{label}: output {k} differs from the single-device "
                                      f"result")
        checked += 1
        if done is not None:
            done.add(repr(sig))
    return checked, skipped


def check_op_sbp(op_name: str) -> tuple[int, int]:
    """The SBP check over an op's samples, each distinct signature once (first sample where
    it divides evenly); returns (checked, never runnable evenly)."""
    from .samples import get_samples
    done: set = set()
    checked = skipped = 0
    for s in get_samples(op_name).samples:
        if not s.sbp:
            continue
        c, k = check_sbp(op_name, s, done)
        checked += c
        skipped += k
    return checked, skipped
