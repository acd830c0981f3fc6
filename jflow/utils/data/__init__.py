"""``flow.utils.data``: datasets, samplers and ``DataLoader`` in ``torch.utils.data``'s shape,
so ported input pipelines run with only the import changed. Loading is in-process (see
:mod:`jflow.utils.data.dataloader`); shuffles draw from ``flow.Generator``."""

from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "Subset",
           "SubsetRandomSampler", "TensorDataset", "default_collate", "default_convert",
           "get_worker_info", "random_split"]
