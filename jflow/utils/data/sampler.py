"""Samplers: which dataset indices a :class:`~jflow.utils.data.DataLoader` visits, in what order.

Randomness comes from a ``flow.Generator`` (or ``flow.default_generator``): each epoch takes
one draw from it, turns the draw's PRNG key into a NumPy seed and shuffles on the host, so a
seeded generator replays the same order, no JAX code is compiled per dataset size, and
``flow.manual_seed`` governs unseeded loaders as it does the random ops.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from typing import Generic, TypeVar

import jax
import numpy as np

from ...random import Generator, default_generator

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "BatchSampler"]

T_co = TypeVar("T_co", covariant=True)


def _check_generator(generator: object, where: str) -> Generator:
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"{where}: generator must be a flow.Generator or None, got "
                        f"{type(generator).__name__}")
    return generator


def _host_rng(generator: Generator | None, where: str) -> np.random.Generator:
    """A NumPy generator seeded from one draw of ``generator`` (advances it by one draw),
    keyed as the random ops key theirs: ``fold_in(key(seed), counter)``."""
    key, counter = _check_generator(generator, where)._next()
    k = jax.random.fold_in(key._value, counter._value.astype(np.uint32))
    return np.random.default_rng(np.asarray(k, dtype=np.uint32).tolist())


def _randperm(n: int, generator: Generator | None, where: str) -> list[int]:
    """A random permutation of ``range(n)`` as Python ints (one generator draw)."""
    return _host_rng(generator, where).permutation(n).tolist()


def _positive_int(value: object, name: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{where}: {name} should be a positive integer value, but got "
                         f"{name}={value!r}")
    return int(value)


class Sampler(Generic[T_co]):
    """Base class: subclasses yield indices (or batches of indices) from ``__iter__`` and may
    define ``__len__`` so the loader knows its length."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass  # PyTorch accepts and ignores data_source here; kept for ported subclasses

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler[int]):
    """Indices ``0 .. len(data_source) - 1`` in order."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Indices in random order: a fresh permutation per epoch (repeated whole when
    ``num_samples`` exceeds the dataset), or ``num_samples`` draws with ``replacement``."""

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator: Generator | None = None) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement should be a boolean value, but got "
                            f"replacement={replacement!r}")
        if num_samples is not None:
            _positive_int(num_samples, "num_samples", "RandomSampler")
        _check_generator(generator, "RandomSampler")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else int(self._num_samples)

    def __iter__(self) -> Iterator[int]:
        n, k = len(self.data_source), self.num_samples
        rng = _host_rng(self.generator, "RandomSampler")
        if self.replacement:
            if n == 0:
                raise ValueError("RandomSampler: cannot sample with replacement from an "
                                 "empty data_source")
            return iter(rng.integers(0, n, size=k).tolist())
        out: list[int] = []
        while len(out) < k:  # as PyTorch: whole permutations, then part of one more
            out.extend(rng.permutation(n)[:k - len(out)].tolist())
            if n == 0:
                break
        return iter(out)

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in random order (a fresh permutation per epoch)."""

    def __init__(self, indices: Iterable[int], generator: Generator | None = None) -> None:
        _check_generator(generator, "SubsetRandomSampler")
        self.indices = list(indices)
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        perm = _randperm(len(self.indices), self.generator, "SubsetRandomSampler")
        return iter([self.indices[i] for i in perm])

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler[list[int]]):
    """Groups another sampler's indices into lists of ``batch_size``; the last, shorter list
    is kept unless ``drop_last``."""

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        self.batch_size = _positive_int(batch_size, "batch_size", "BatchSampler")
        if not isinstance(drop_last, bool):
            raise ValueError(f"BatchSampler: drop_last should be a boolean value, but got "
                             f"drop_last={drop_last!r}")
        self.sampler = sampler
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size
