"""``flow.nn.utils.rnn``: padding variable-length sequences (``pad_sequence``,
``unpad_sequence``), as ``torch.nn.utils.rnn``. jflow has no packed sequences: the ``pack_*``
functions and ``PackedSequence`` raise, saying to pad and mask instead (docs/porting.md,
"Not supported")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

from ... import _C
from ...creation import full
from ...tensor import Tensor

__all__ = ["pad_sequence", "unpad_sequence", "PackedSequence", "pack_padded_sequence",
           "pad_packed_sequence", "pack_sequence", "unpack_sequence"]


def pad_sequence(sequences: Sequence[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack tensors of shape ``(L_i, *)`` into ``(B, L_max, *)`` (``batch_first``) or
    ``(L_max, B, *)``, filling with ``padding_value`` on ``padding_side``; differentiable."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"pad_sequence: padding_side must be 'left' or 'right', got "
                         f"{padding_side!r}")
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    longest = max(s.shape[0] for s in seqs)
    rows = []
    for s in seqs:
        n = longest - s.shape[0]
        if n:
            pad = full((n, *s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
            s = _C.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        rows.append(s)
    out = _C.stack(rows, 0)
    return out if batch_first else out.transpose(0, 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Any,
                   batch_first: bool = False) -> list[Tensor]:
    """The inverse of :func:`pad_sequence` (right padding): the first ``lengths[i]`` steps
    of each sequence."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :int(n)] for i, n in enumerate(lengths)]


def _no_packing(name: str) -> NoReturn:
    raise NotImplementedError(f"torch.nn.utils.rnn.{name}: jflow has no packed sequences; "
                              f"pad with pad_sequence and mask the padded steps instead")


class PackedSequence:
    """PyTorch's packed batch of sequences: not in jflow (constructing one raises)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _no_packing("PackedSequence")


def pack_padded_sequence(*args: Any, **kwargs: Any) -> NoReturn:
    """Not in jflow (raises): see :class:`PackedSequence`."""
    _no_packing("pack_padded_sequence")


def pad_packed_sequence(*args: Any, **kwargs: Any) -> NoReturn:
    """Not in jflow (raises): see :class:`PackedSequence`."""
    _no_packing("pad_packed_sequence")


def pack_sequence(*args: Any, **kwargs: Any) -> NoReturn:
    """Not in jflow (raises): see :class:`PackedSequence`."""
    _no_packing("pack_sequence")


def unpack_sequence(*args: Any, **kwargs: Any) -> NoReturn:
    """Not in jflow (raises): see :class:`PackedSequence`."""
    _no_packing("unpack_sequence")
