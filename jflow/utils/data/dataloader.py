"""``DataLoader``: batches of samples from a dataset, in PyTorch's shape.

Everything runs in the calling process. ``num_workers > 0`` is accepted so ported code runs
unchanged, but no worker processes are started: jflow tensors are handles on JAX arrays, and
forking a process that has initialised JAX (threads, device runtime) is unsafe, while the
loading itself is usually host-side NumPy work that is cheap next to the compiled step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from ...random import Generator
from .collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _check_generator

__all__ = ["DataLoader", "get_worker_info"]

T_co = TypeVar("T_co", covariant=True)


def get_worker_info() -> None:
    """Always ``None``: loading never happens in a worker process (see the module docstring),
    so ``IterableDataset`` code that shards its stream by worker sees the single-process
    case and yields every sample once."""
    return None


class DataLoader(Generic[T_co]):
    """Iterate over ``dataset`` in batches.

    Map-style datasets are indexed in the order of ``sampler`` (sequential, or random with
    ``shuffle=True``, drawing from ``generator`` or ``flow.default_generator``), grouped into
    lists of ``batch_size`` by a :class:`BatchSampler` (or the given ``batch_sampler``) and
    merged by ``collate_fn`` (:func:`default_collate`). Iterable datasets are read in stream
    order and cut into batches. ``batch_size=None`` turns batching off: each sample passes
    through ``collate_fn`` (:func:`default_convert`) alone.

    ``num_workers``, ``prefetch_factor``, ``persistent_workers``, ``timeout`` and
    ``multiprocessing_context`` are checked and kept, but loading is always in-process (the
    module docstring says why), so ``worker_init_fn`` is never called. ``pin_memory`` is
    accepted and ignored: JAX owns host-to-device transfers.
    """

    def __init__(self, dataset: Dataset[T_co], batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Sampler | Iterable | None = None,
                 batch_sampler: Sampler[list] | Iterable[list] | None = None,
                 num_workers: int = 0, collate_fn: Callable[[Any], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Generator | None = None,
                 *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "") -> None:
        where = "DataLoader"
        if batch_size is not None and (isinstance(batch_size, bool)
                                       or not isinstance(batch_size, int) or batch_size <= 0):
            raise ValueError(f"{where}: batch_size should be a positive integer or None, but "
                             f"got batch_size={batch_size!r}")
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"{where}: num_workers option should be a non-negative integer, "
                             f"but got num_workers={num_workers!r}")
        if timeout < 0:
            raise ValueError(f"{where}: timeout option should be non-negative, but got "
                             f"timeout={timeout!r}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(f"{where}: prefetch_factor option could only be specified in "
                             f"multiprocessing; let num_workers > 0 to enable it")
        if persistent_workers and num_workers == 0:
            raise ValueError(f"{where}: persistent_workers option needs num_workers > 0")
        if not isinstance(drop_last, bool):
            raise ValueError(f"{where}: drop_last should be a boolean value, but got "
                             f"drop_last={drop_last!r}")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"{where}: collate_fn must be callable, got "
                            f"{type(collate_fn).__name__}")
        _check_generator(generator, where)

        if isinstance(dataset, IterableDataset):
            if shuffle not in (None, False):
                raise ValueError(f"{where} with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle!r}")
            if sampler is not None:
                raise ValueError(f"{where} with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler!r}")
            if batch_sampler is not None:
                raise ValueError(f"{where} with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler="
                                 f"{batch_sampler!r}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError(f"{where}: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(f"{where}: batch_sampler option is mutually exclusive with "
                                 f"batch_size, shuffle, sampler, and drop_last")
            batch_size = None
        elif batch_size is None and drop_last:
            raise ValueError(f"{where}: batch_size=None option disables auto-batching and is "
                             f"mutually exclusive with drop_last")

        if not isinstance(dataset, IterableDataset):
            if sampler is None:
                sampler = (RandomSampler(dataset, generator=generator) if shuffle  # type: ignore[arg-type]
                           else SequentialSampler(dataset))  # type: ignore[arg-type]
            if batch_size is not None and batch_sampler is None:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_size is not None or batch_sampler is not None
            else default_convert)
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers

    def __iter__(self) -> Iterator[Any]:
        if isinstance(self.dataset, IterableDataset):
            return self._iter_stream()
        return self._iter_map()

    def _fetch(self, indices: list) -> list:
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            return getitems(indices)
        return [self.dataset[i] for i in indices]

    def _iter_map(self) -> Iterator[Any]:
        if self.batch_sampler is not None:
            for indices in self.batch_sampler:
                yield self.collate_fn(self._fetch(list(indices)))
        else:
            for idx in self.sampler:  # type: ignore[union-attr]
                yield self.collate_fn(self.dataset[idx])

    def _iter_stream(self) -> Iterator[Any]:
        it = iter(self.dataset)  # type: ignore[call-overload]
        if self.batch_size is None:
            for sample in it:
                yield self.collate_fn(sample)
            return
        while True:
            batch = [s for _, s in zip(range(self.batch_size), it)]
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        """Batches per epoch: from the (batch) sampler for map-style datasets; for an
        iterable dataset, from its ``__len__`` (a ``TypeError`` if it has none)."""
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        src = self.batch_sampler if self.batch_sampler is not None else self.sampler
        return len(src)  # type: ignore[arg-type]
