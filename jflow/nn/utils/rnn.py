"""``flow.nn.utils.rnn``: variable-length sequences as ``torch.nn.utils.rnn``: padding
(``pad_sequence``, ``unpad_sequence``) and packing (``PackedSequence``, ``pack_padded_sequence``,
``pad_packed_sequence``, ``pack_sequence``, ``unpack_sequence``).

A :class:`PackedSequence` is PyTorch's: ``data`` holds the valid steps of a batch sorted by
decreasing length, time-major (step 0 of every sequence, then step 1 of those that have one,
...), and ``batch_sizes`` (an int64 tensor on the CPU) how many sequences each step has. The
layout is the host's business: packing and unpacking are one ``index_select`` each, with
indices computed in NumPy from the lengths, so both are differentiable and the lengths must be
concrete (known on the host, as PyTorch requires them on the CPU; a traced ``lengths`` inside
``flow.jit`` is an error). ``nn.RNN`` / ``LSTM`` / ``GRU`` take a ``PackedSequence`` and
return one (jflow/nn/modules/rnn.py runs the padded batch and reads each sequence's final
state at its own last step).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ... import _C
from ... import dtypes as _dtypes
from ...creation import full, tensor
from ...tensor import Tensor

__all__ = ["pad_sequence", "unpad_sequence", "PackedSequence", "pack_padded_sequence",
           "pad_packed_sequence", "pack_sequence", "unpack_sequence", "invert_permutation"]


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
    return [x[i, :int(n)] for i, n in enumerate(host_ints(lengths, "unpad_sequence",
                                                           "lengths"))]


# -- host-side layout --------------------------------------------------------------------------

def host_ints(x: Any, fn: str, arg: str) -> np.ndarray:
    """``x`` (a list, array or tensor of integers) as a 1-D int64 NumPy array, or an error
    naming ``fn`` and ``arg`` when it is not concrete (a traced tensor) or not 1-D."""
    if isinstance(x, Tensor):
        if x.dtype.is_floating_point or x.dtype.is_complex:
            raise TypeError(f"{fn}: {arg} must hold integers, got {x.dtype}")
        try:
            x = x.numpy()
        except Exception as e:  # a tracer: no host value to lay out the batch with
            raise TypeError(f"{fn}: {arg} must be known on the host (a list or a concrete "
                            f"tensor); inside flow.jit pass it as a Python list or build the "
                            f"packed batch outside the compiled function ({type(e).__name__})"
                            ) from None
    a = np.asarray(x)
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iub"):
        raise TypeError(f"{fn}: {arg} must be a 1-D sequence of integers, got "
                        f"{a.dtype} of shape {a.shape}")
    return a.astype(np.int64)


def _index(idx: np.ndarray, like: Tensor) -> Tensor:
    return tensor(idx.astype(np.int32), device=like.device)


def _batch_sizes(lengths: np.ndarray) -> np.ndarray:
    """Sequences alive at each step, from decreasing ``lengths``."""
    steps = np.arange(int(lengths[0]))
    return (lengths[None, :] > steps[:, None]).sum(1).astype(np.int64)


def lengths_of(batch_sizes: np.ndarray) -> np.ndarray:
    """Each (sorted) sequence's length, from the steps' batch sizes."""
    return (batch_sizes[None, :] > np.arange(int(batch_sizes[0]))[:, None]).sum(1)


def _valid_rows(batch_sizes: np.ndarray) -> np.ndarray:
    """Rows ``t * B + j`` of a time-major ``(T * B, ...)`` batch that a packed ``data``
    holds, in its order (step by step, sequences in sorted order)."""
    b = int(batch_sizes[0])
    return np.concatenate([t * b + np.arange(n) for t, n in enumerate(batch_sizes)])


def padded_from_packed(data: Tensor, batch_sizes: np.ndarray, steps: int,
                       padding_value: float = 0.0) -> Tensor:
    """A packed ``data`` as its padded time-major batch ``(steps, B, *)``, sequences in sorted
    order, ``padding_value`` past each one's end: one ``index_select`` of ``data`` with one
    padding row appended (differentiable in ``data``)."""
    n, b = int(batch_sizes.sum()), int(batch_sizes[0])
    src = np.full(steps * b, n, np.int64)  # (row n: the padding row)
    src[_valid_rows(batch_sizes)] = np.arange(n)
    pad = full((1, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    out = _C.index_select(_C.cat([data, pad], 0), 0, _index(src, data))
    return _C.reshape(out, (steps, b, *data.shape[1:]))


def packed_from_padded(x: Tensor, batch_sizes: np.ndarray) -> Tensor:
    """The packed ``data`` of a padded time-major batch ``x`` ``(T, B, *)`` (sequences in
    sorted order, at least ``len(batch_sizes)`` steps): its valid rows, in packed order."""
    steps, b = batch_sizes.size, x.shape[1]
    flat = _C.reshape(x[:steps], (steps * b, *x.shape[2:]))
    return _C.index_select(flat, 0, _index(_valid_rows(batch_sizes), flat))


def steps_at(x: Tensor, index: np.ndarray) -> Tensor:
    """``out[t, j] = x[index[t, j], j]`` for a time-major ``x`` ``(T, N, ...)``: a per-sequence
    choice of steps (one ``index_select``)."""
    steps, n = x.shape[0], x.shape[1]
    flat = _C.reshape(x, (steps * n, *x.shape[2:]))
    out = _C.index_select(flat, 0, _index((index * n + np.arange(n)).ravel(), flat))
    return _C.reshape(out, (*index.shape, *x.shape[2:]))


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes ``permutation`` (None stays None), as PyTorch's."""
    if permutation is None:
        return None
    p = host_ints(permutation, "invert_permutation", "permutation")
    inv = np.empty_like(p)
    inv[p] = np.arange(p.size)
    return tensor(inv, device=permutation.device if isinstance(permutation, Tensor) else None)


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedFields):
    """A batch of variable-length sequences, packed (PyTorch's layout and fields): ``data``
    ``(sum(lengths), *)``, ``batch_sizes`` (int64, CPU), and the permutation that sorted the
    batch by decreasing length with its inverse (``None`` when the batch came sorted).
    Build one with :func:`pack_padded_sequence` or :func:`pack_sequence`."""

    def __new__(cls, data: Any, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PyTorch's old form: PackedSequence((data, batch_sizes))
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise TypeError("PackedSequence: pass data and batch_sizes, or one "
                                "(data, batch_sizes) pair")
            data, batch_sizes = data
        if not isinstance(batch_sizes, Tensor):
            batch_sizes = tensor(host_ints(batch_sizes, "PackedSequence", "batch_sizes"))
        elif batch_sizes.device.type != "cpu":
            raise ValueError("PackedSequence: batch_sizes should always be on the CPU "
                             f"(got {batch_sizes.device}); build it with "
                             "pack_padded_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    # moving and casting: the data and the permutations move, batch_sizes stays on the CPU
    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data.to(*args, **kwargs)``; the permutations follow ``data``'s device."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        def move(p: Tensor | None) -> Tensor | None:
            return None if p is None else p.to(device=data.device)

        return type(self)(data, self.batch_sizes, move(self.sorted_indices),
                          move(self.unsorted_indices))

    def cuda(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The batch on a CUDA device (``Tensor.cuda``'s arguments)."""
        return self.to(self.data.cuda(*args, **kwargs).device)

    def cpu(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """The batch on the CPU."""
        return self.to("cpu")

    def double(self) -> PackedSequence:
        """``data`` as float64."""
        return self.to(dtype=_dtypes.float64)

    def float(self) -> PackedSequence:
        """``data`` as float32."""
        return self.to(dtype=_dtypes.float32)

    def half(self) -> PackedSequence:
        """``data`` as float16."""
        return self.to(dtype=_dtypes.float16)

    def bfloat16(self) -> PackedSequence:
        """``data`` as bfloat16."""
        return self.to(dtype=_dtypes.bfloat16)

    def long(self) -> PackedSequence:
        """``data`` as int64."""
        return self.to(dtype=_dtypes.int64)

    def int(self) -> PackedSequence:
        """``data`` as int32."""
        return self.to(dtype=_dtypes.int32)

    def short(self) -> PackedSequence:
        """``data`` as int16."""
        return self.to(dtype=_dtypes.int16)

    def char(self) -> PackedSequence:
        """``data`` as int8."""
        return self.to(dtype=_dtypes.int8)

    def byte(self) -> PackedSequence:
        """``data`` as uint8."""
        return self.to(dtype=_dtypes.uint8)

    @property
    def is_cuda(self) -> bool:
        """Whether ``data`` is on a CUDA device."""
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        """Whether ``data`` is in pinned memory (never, in jflow)."""
        return self.data.is_pinned()

    def pin_memory(self) -> PackedSequence:
        """The batch itself: jflow has no pinned host memory."""
        return self


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded ``(T, B, *)`` batch (``(B, T, *)`` with ``batch_first``) whose sequence
    ``i`` has ``lengths[i]`` valid steps. ``enforce_sorted`` requires decreasing lengths;
    otherwise the batch is sorted (stably) and the permutation kept. Differentiable in
    ``input``; ``lengths`` must be known on the host."""
    fn = "pack_padded_sequence"
    n = host_ints(lengths, fn, "lengths")
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}: input must be a Tensor, got {type(input).__name__}")
    if input.dim() < 2:
        raise ValueError(f"{fn}: input must have a time and a batch dimension, got shape "
                         f"{tuple(input.shape)}")
    b_dim = 0 if batch_first else 1
    if n.size != input.shape[b_dim]:
        raise ValueError(f"{fn}: Expected `len(lengths)` to be equal to batch_size, but got "
                         f"{n.size} (batch_size={input.shape[b_dim]})")
    if n.size and n.min() <= 0:
        raise RuntimeError(f"{fn}: Length of all samples has to be greater than 0, but found "
                           "an element in 'lengths' that is <= 0")
    if n.size and n.max() > input.shape[1 - b_dim]:
        raise RuntimeError(f"{fn}: a length ({int(n.max())}) exceeds the input's "
                           f"{input.shape[1 - b_dim]} time steps")
    if enforce_sorted:
        if np.any(np.diff(n) > 0):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = np.argsort(-n, kind="stable")
        n = n[order]
        sorted_indices = tensor(order, device=input.device)
        input = _C.index_select(input, b_dim, _index(order, input))
    if batch_first:
        input = input.transpose(0, 1)
    bs = _batch_sizes(n)
    return PackedSequence(packed_from_padded(input, bs), tensor(bs), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None
                        ) -> tuple[Tensor, Tensor]:
    """The inverse of :func:`pack_padded_sequence`: ``(padded, lengths)``, the batch in its
    original order, ``padded`` ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) filled with
    ``padding_value`` past each sequence's end, ``lengths`` int64 on the CPU. ``total_length``
    pads the time dimension to that many steps."""
    fn = "pad_packed_sequence"
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"{fn}: expected a PackedSequence, got {type(sequence).__name__}")
    data = sequence.data
    bs = host_ints(sequence.batch_sizes, fn, "sequence.batch_sizes")
    t_max = steps = bs.size
    if total_length is not None:
        if total_length < t_max:
            raise ValueError(f"{fn}: Expected total_length to be at least the length of the "
                             f"longest sequence in input, but got total_length={total_length} "
                             f"and max sequence length being {t_max}")
        steps = int(total_length)
    out = padded_from_packed(data, bs, steps, padding_value)
    lengths = lengths_of(bs)
    if sequence.unsorted_indices is not None:
        unsort = host_ints(sequence.unsorted_indices, fn, "sequence.unsorted_indices")
        out = _C.index_select(out, 1, _index(unsort, out))
        lengths = lengths[unsort]
    if batch_first:
        out = out.transpose(0, 1)
    return out, tensor(lengths.astype(np.int64))


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of ``(L_i, *)`` tensors (decreasing lengths unless ``enforce_sorted`` is
    False)."""
    seqs = list(sequences)
    return pack_padded_sequence(pad_sequence(seqs), [s.shape[0] for s in seqs],
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The inverse of :func:`pack_sequence`: the list of ``(L_i, *)`` tensors, in the original
    order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
