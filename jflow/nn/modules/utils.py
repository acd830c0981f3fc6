"""PyTorch's ``torch.nn.modules.utils``: the argument-normalising helpers
(``_pair(3) == (3, 3)``) modules and libraries import from that path."""

from __future__ import annotations

import collections.abc
from collections.abc import Callable
from itertools import repeat
from typing import Any

__all__ = ["consume_prefix_in_state_dict_if_present", "_single", "_pair", "_triple",
           "_quadruple", "_ntuple", "_reverse_repeat_tuple", "_list_with_default"]


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple]:
    def parse(x: Any) -> tuple:
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: Any, n: int) -> tuple:
    """Reverse ``t`` and repeat each element ``n`` times (conv padding for ``F.pad``)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size: Any, defaults: list[int]) -> list[int]:
    """Adaptive pooling output sizes: ``None`` entries take the input's size."""
    if isinstance(out_size, (int, float)):
        return out_size  # type: ignore[return-value]
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d
            for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict: dict[str, Any], prefix: str) -> None:
    """Strip ``prefix`` from the keys (and metadata keys) of ``state_dict``, in place."""
    for key in sorted(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if len(key) == 0:
                continue
            if key == prefix.replace(".", "") or key.startswith(prefix):
                metadata[key[len(prefix):]] = metadata.pop(key)
