"""``flow.sharding.explain(fn, *args)``: what SBP inference chose for every global op call
that ``fn`` makes — the signature, the boxing of each input, and the bytes moved."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import execute

__all__ = ["explain", "Explanation", "OpChoice"]


@dataclass(frozen=True)
class OpChoice:
    """One global op call: its signature, how each input was boxed, bytes sent per device."""

    op: str
    signature: Any
    boxing: tuple[str, ...]
    bytes_moved: float

    def __str__(self) -> str:
        box = ", ".join(self.boxing)
        return f"{self.op:20s} {self.signature!r:36s} boxing: [{box}]  {self.bytes_moved:.0f} B"


class Explanation(list):
    """The calls in order; ``str()`` is a table, ``.collectives()`` the boxings that move
    data, ``.bytes_moved`` their total."""

    @property
    def bytes_moved(self) -> float:
        return sum(c.bytes_moved for c in self)

    def collectives(self) -> list[tuple[str, int, str]]:
        """``(op, input index, collective)`` for every input that needed communication."""
        return [(c.op, i, b) for c in self for i, b in enumerate(c.boxing)
                if b != "none" and not all(step.split(":")[-1].startswith("local")
                                           for step in b.split(", "))]

    def __str__(self) -> str:
        lines = [str(c) for c in self]
        lines.append(f"total bytes moved per device: {self.bytes_moved:.0f}")
        return "\n".join(lines)


def explain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Explanation:
    """Run ``fn(*args, **kwargs)`` eagerly, recording every global op's SBP choice."""
    execute.last_choices.clear()
    execute._RECORDING[0] = True
    try:
        fn(*args, **kwargs)
    finally:
        execute._RECORDING[0] = False
    out = Explanation(OpChoice(op, sig, tuple(box), moved)
                      for op, sig, box, moved in execute.last_choices)
    execute.last_choices.clear()
    return out
