"""Collective traffic of a compiled program, read from its optimized HLO text.

``jax.jit(f).lower(*args).compile().as_text()`` lists every collective with its result type
and replica groups; per device (``n`` = devices in the collective's group):

* *payload*: the buffer each device hands the collective: the operand for all-reduce,
  reduce-scatter, all-to-all and collective-permute; the (gathered) result for all-gather;
* *wire*: bytes each device sends with ring algorithms: all-reduce 2(n-1)/n x operand,
  all-gather (n-1)/n x result, reduce-scatter and all-to-all (n-1)/n x operand,
  collective-permute the operand — the unit of :func:`.boxing.cost`.

Used by ``benchmarks/sbp.py`` and by the tests that hold the boxing cost model to the bytes
XLA actually moves.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["Collective", "hlo_collectives", "ring"]

_DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
                "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8,
                "c128": 16}
_KINDS = "all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute"
# "%name = TYPE kind(" or "kind-done(" (async pairs are counted once, at -done, whose type
# is the result); TYPE is an array type or a tuple of them (combined collectives)
_LINE = re.compile(rf"=\s*(?P<type>\(.*?\)|\S+)\s+(?P<kind>{_KINDS})(?:-done)?\(")
_ARRAY = re.compile(r"\b([a-z]+\d*)\[([\d,]*)\]")


def ring(n: int) -> float:
    """(n-1)/n: the fraction of a buffer each device sends in a ring gather/scatter."""
    return (n - 1) / n


@dataclass
class Collective:
    """One collective of the HLO: its kind, result array types (per device), group size,
    and bytes per device (payload and wire, as the module docstring defines them)."""

    kind: str
    shapes: list[str]
    n: int
    payload: float
    wire: float
    origin: str  # the jflow op (or to_global) it came from, from the HLO metadata


def _group_size(line: str, default: int) -> int:
    m = re.search(r"replica_groups=\{\{([\d,]*)\}", line)
    if m:
        return len(m.group(1).split(","))
    m = re.search(r"replica_groups=\[([\d,]+)\]<=", line)  # iota form [groups, size]
    if m:
        return int(m.group(1).split(",")[-1])
    return default


def hlo_collectives(text: str, n_devices: int) -> list[Collective]:
    """The collectives of optimized HLO ``text`` (groups default to ``n_devices``)."""
    out = []
    for line in text.splitlines():
        m = _LINE.search(line)
        if m is None or "-start(" in line:
            continue
        kind = m.group("kind")
        arrays = _ARRAY.findall(m.group("type"))
        nbytes = sum(_DTYPE_BYTES[dt] * math.prod(int(s) for s in dims.split(",") if s)
                     for dt, dims in arrays)
        n = _group_size(line, n_devices)
        if kind == "all-reduce":
            payload, wire = nbytes, 2 * ring(n) * nbytes
        elif kind == "all-gather":
            payload, wire = nbytes, ring(n) * nbytes
        elif kind == "reduce-scatter":  # the result is 1/n of the operand
            payload, wire = n * nbytes, (n - 1) * nbytes
        elif kind == "all-to-all":
            payload, wire = nbytes, ring(n) * nbytes
        else:  # collective-permute
            payload, wire = nbytes, nbytes
        origins = re.findall(r"jit\((\w+?)_global\)", line)
        origin = origins[-1] if origins else ("to_global" if "jit(<lambda>)" in line else "?")
        out.append(Collective(kind, [f"{dt}[{dims}]" for dt, dims in arrays], n, payload, wire,
                              origin))
    return out
