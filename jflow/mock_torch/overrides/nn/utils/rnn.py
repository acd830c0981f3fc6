"""``torch.nn.utils.rnn``: padding variable-length sequences (``pad_sequence``,
``unpad_sequence``) over jflow ops. Packed sequences are not in jflow: ``pack_*`` raise."""

from __future__ import annotations

from typing import Any

import jflow
from jflow.mock_torch._refusals import refuser, refusing_class, refusing_functions

__all__ = ["pad_sequence", "unpad_sequence", "PackedSequence", "pack_padded_sequence",
           "pad_packed_sequence", "pack_sequence", "unpack_sequence"]


def pad_sequence(sequences: Any, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> jflow.Tensor:
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
            pad = jflow.full((n, *s.shape[1:]), padding_value, dtype=s.dtype)
            s = jflow.cat([s, pad] if padding_side == "right" else [pad, s], 0)
        rows.append(s)
    out = jflow.stack(rows, 0)
    return out if batch_first else out.transpose(0, 1)


def unpad_sequence(padded_sequences: jflow.Tensor, lengths: Any,
                   batch_first: bool = False) -> list[jflow.Tensor]:
    """The inverse of :func:`pad_sequence` (right padding)."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i, :int(n)] for i, n in enumerate(lengths)]


_packed = refuser("torch.nn.utils.rnn",
                  "jflow has no packed sequences; pad with pad_sequence and mask instead")

PackedSequence = refusing_class(__name__, _packed, "PackedSequence")
pack_padded_sequence, pad_packed_sequence, pack_sequence, unpack_sequence = refusing_functions(
    __name__, _packed, "pack_padded_sequence", "pad_packed_sequence", "pack_sequence",
    "unpack_sequence")
