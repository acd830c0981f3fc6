"""Datasets in PyTorch's shape: map-style (``__getitem__`` + ``__len__``) and iterable, plus
the wrappers that combine and split them."""

from __future__ import annotations

import bisect
import itertools
import math
import numbers
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from ...random import Generator
from ...tensor import Tensor
from .sampler import _randperm

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split"]

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map from keys (usually ``0 .. len - 1``) to samples. Subclasses define
    ``__getitem__`` and, for the default samplers, ``__len__``; ``a + b`` concatenates."""

    def __getitem__(self, index: Any) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """A stream of samples: subclasses define ``__iter__``; ``a + b`` chains the streams."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: Dataset[T_co]) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``: the tensors share their first
    dimension, which is checked here so a mismatch fails at construction, not mid-epoch."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset: tensors[{i}] must be a flow.Tensor, got "
                                f"{type(t).__name__}")
            if t.dim() == 0:
                raise ValueError(f"TensorDataset: tensors[{i}] is 0-dimensional; every "
                                 f"tensor needs a first dimension to index samples by")
        sizes = [t.shape[0] for t in tensors]
        if any(s != sizes[0] for s in sizes):
            raise ValueError(f"TensorDataset: size mismatch between tensors: every tensor "
                             f"must have the same size in dimension 0, got {sizes}")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class ConcatDataset(Dataset[T_co]):
    """Map-style datasets one after another: index ``i`` falls in the first dataset whose
    cumulative length exceeds it."""

    def __init__(self, datasets: Iterable[Dataset[T_co]]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for i, d in enumerate(self.datasets):
            if isinstance(d, IterableDataset):
                raise TypeError(f"ConcatDataset: datasets[{i}] is an IterableDataset, which "
                                f"has no indices; use ChainDataset to chain streams")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T_co:
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"ConcatDataset: index {idx} is out of range for length {n}")
        if idx < 0:
            idx += n
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        return self.datasets[d][idx - (self.cumulative_sizes[d - 1] if d else 0)]


class ChainDataset(IterableDataset[T_co]):
    """Iterable datasets one after another (what ``IterableDataset + IterableDataset``
    gives)."""

    def __init__(self, datasets: Iterable[Dataset[T_co]]) -> None:
        self.datasets = list(datasets)

    def __iter__(self) -> Iterator[T_co]:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset: only IterableDatasets can be chained, got "
                                f"{type(d).__name__}")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)  # type: ignore[arg-type]


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[T_co]:
        """Batch fetch; forwarded when the wrapped dataset has its own ``__getitems__``."""
        inner = [self.indices[i] for i in indices]
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__(inner)  # type: ignore[attr-defined]
        return [self.dataset[i] for i in inner]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset[T_co], lengths: Sequence[int | float],
                 generator: Generator | None = None) -> list[Subset[T_co]]:
    """Split ``dataset`` into non-overlapping random subsets of the given ``lengths``.

    ``lengths`` are either ints summing to ``len(dataset)``, or fractions summing to 1: each
    split gets ``floor(len * frac)`` items and the remainder is dealt round-robin from the
    first split, as PyTorch 2.x does. The permutation uses ``generator`` (one draw), or
    ``flow.default_generator``.
    """
    n = len(dataset)  # type: ignore[arg-type]
    lengths = list(lengths)
    if not lengths:
        raise ValueError("random_split: lengths must not be empty")
    for i, x in enumerate(lengths):
        if isinstance(x, bool) or not isinstance(x, numbers.Real):
            raise TypeError(f"random_split: lengths[{i}] must be an int or a float fraction, "
                            f"got {type(x).__name__}")
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if not 0 <= frac <= 1:
                raise ValueError(f"random_split: fraction at index {i} is not between 0 and "
                                 f"1, got {frac}")
            sizes.append(int(math.floor(n * frac)))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, s in enumerate(sizes):
            if s == 0:
                warnings.warn(f"random_split: length of split at index {i} is 0. This might "
                              f"result in an empty dataset.", stacklevel=2)
        lengths = sizes
    else:
        for i, x in enumerate(lengths):
            if not isinstance(x, numbers.Integral) or x < 0:
                raise ValueError(f"random_split: lengths must be non-negative ints or "
                                 f"fractions summing to 1, got lengths[{i}]={x!r}")
        lengths = [int(x) for x in lengths]
    if sum(lengths) != n:
        raise ValueError(f"random_split: sum of input lengths ({sum(lengths)}) does not equal "
                         f"the length of the input dataset ({n})")
    perm = _randperm(n, generator, "random_split")
    return [Subset(dataset, perm[end - k:end])
            for end, k in zip(itertools.accumulate(lengths), lengths)]
