"""SBP values (OneFlow's split / broadcast / partial_sum) and op SBP signatures.

A signature maps each flat op input and output to one SBP value, e.g. matmul's
``Signature((S(0), B), (S(0),))``. Ops declare signatures through a function of the
inputs' ndims and the attrs (OneFlow's get_sbp_fn); the helpers here build the common
families. The all-broadcast signature is implied for every op. Global tensors (inference,
boxing, ``shard_map`` execution) use these in the SBP issue.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SbpParallel", "split", "broadcast", "partial_sum", "Signature", "S", "B", "P",
           "elementwise", "signatures_of"]


class SbpParallel:
    """One SBP entry (for one hierarchy axis)."""

    __slots__ = ()


@dataclass(frozen=True)
class _Split(SbpParallel):
    axis: int

    def __repr__(self) -> str:
        return f"oneflow.sbp.split(dim={self.axis})"


@dataclass(frozen=True)
class _Broadcast(SbpParallel):
    def __repr__(self) -> str:
        return "oneflow.sbp.broadcast"


@dataclass(frozen=True)
class _PartialSum(SbpParallel):
    def __repr__(self) -> str:
        return "oneflow.sbp.partial_sum"


def split(dim: int) -> SbpParallel:
    """``flow.sbp.split(dim)``: each rank holds a slice along ``dim``."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"flow.sbp.split: dim must be an int, got {dim!r}")
    if dim < 0:
        raise ValueError(f"flow.sbp.split: dim must be >= 0, got {dim}")
    return _Split(dim)


broadcast: SbpParallel = _Broadcast()
partial_sum: SbpParallel = _PartialSum()
S, B, P = split, broadcast, partial_sum


@dataclass(frozen=True)
class Signature:
    """SBP of every flat input and output of one op call."""

    inputs: tuple[SbpParallel, ...]
    outputs: tuple[SbpParallel, ...]

    @staticmethod
    def _short(x: SbpParallel) -> str:
        return f"S({x.axis})" if isinstance(x, _Split) else \
            ("B" if isinstance(x, _Broadcast) else "P")

    def __repr__(self) -> str:
        f = self._short
        return f"({', '.join(map(f, self.inputs))}) -> ({', '.join(map(f, self.outputs))})"


SbpFn = Callable[..., Sequence[Signature]]


def elementwise(partial: str = "none") -> SbpFn:
    """Signatures of a broadcasting elementwise op with n inputs and one output.

    Split axis i of the output splits each input on its own aligned axis (broadcast inputs of
    size 1 there stay B). ``partial``: "none"; "linear" (all P -> P: add, sub, neg...);
    "first" (P, B... -> P, and B, P -> P for two inputs: mul, scaling ops); "numerator"
    (P, B -> P only: div is linear in its numerator, not its divisor).
    """
    def fn(in_shapes: Sequence[Sequence[int]], n_out: int = 1, **attrs: Any) -> list[Signature]:
        nd = max((len(s) for s in in_shapes), default=0)
        sigs = []
        for axis in range(nd):
            ins = []
            for s in in_shapes:
                a = axis - (nd - len(s))
                ins.append(B if a < 0 or s[a] == 1 and _out_dim(in_shapes, axis, nd) != 1
                           else S(a))
            sigs.append(Signature(tuple(ins), (S(axis),) * n_out))
        k = len(in_shapes)
        if partial == "linear" and k:
            sigs.append(Signature((P,) * k, (P,) * n_out))
        elif partial in ("first", "numerator") and k:
            sigs.append(Signature((P,) + (B,) * (k - 1), (P,) * n_out))
            if k == 2 and partial == "first":
                sigs.append(Signature((B, P), (P,) * n_out))
        return sigs
    fn.__name__ = f"elementwise_{partial}"
    return fn


def _out_dim(in_shapes: Sequence[Sequence[int]], axis: int, nd: int) -> int:
    d = 1
    for s in in_shapes:
        a = axis - (nd - len(s))
        if a >= 0 and s[a] != 1:
            d = s[a]
    return d


def signatures_of(op: Any, in_shapes: Sequence[Sequence[int]], n_out: int,
                  attrs: dict[str, Any]) -> list[Signature]:
    """All signatures an op offers for these input shapes, the all-broadcast one included."""
    sigs = list(op.sbp(in_shapes, n_out, **attrs)) if op.sbp is not None else []
    all_b = Signature((B,) * len(in_shapes), (B,) * n_out)
    if all_b not in sigs:
        sigs.append(all_b)
    return sigs
