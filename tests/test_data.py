"""flow.utils.data against torch.utils.data (where the result is deterministic) and NumPy."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import jflow as flow
from jflow.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    TensorDataset,
    default_collate,
    get_worker_info,
    random_split,
)

Pair = namedtuple("Pair", ["a", "b"])


class Squares(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __getitem__(self, i: int) -> int:
        return i * i

    def __len__(self) -> int:
        return self.n


class Stream(IterableDataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n


def _plain(x):
    """A nested structure of jflow or torch tensors -> NumPy arrays with dtype names."""
    if hasattr(x, "numpy") and hasattr(x, "dtype"):
        return ("tensor", str(x.dtype).split(".")[-1], x.numpy().tolist())
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, tuple):
        return (type(x).__name__, tuple(_plain(v) for v in x))
    if isinstance(x, list):
        return [_plain(v) for v in x]
    return x


def _batches(loader):
    return [_plain(b) for b in loader]


# -- against PyTorch -------------------------------------------------------------------------

@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True), (10, True),
                                                  (None, False)])
def test_sequential_batches_match_torch(batch_size, drop_last):
    torch = pytest.importorskip("torch")
    td = torch.utils.data
    x = np.arange(14, dtype=np.float32).reshape(7, 2)
    y = np.arange(7, dtype=np.int64)
    ours = DataLoader(TensorDataset(flow.tensor(x), flow.tensor(y)), batch_size=batch_size,
                      drop_last=drop_last)
    ref = td.DataLoader(td.TensorDataset(torch.tensor(x), torch.tensor(y)),
                        batch_size=batch_size, drop_last=drop_last)
    assert len(ours) == len(ref)
    assert _batches(ours) == _batches(ref)


def test_nested_collate_matches_torch():
    torch = pytest.importorskip("torch")
    samples = [{"i": k, "f": k / 2, "b": k % 2 == 0, "s": f"s{k}",
                "t": (np.full(2, k, np.int32), [np.float32(k), 1.0]),
                "p": Pair(a=k, b=np.ones(3, np.float64) * k)} for k in range(3)]
    ours = _plain(default_collate(samples))
    ref = _plain(torch.utils.data.default_collate(samples))
    assert ours == ref
    assert ours["i"][1] == "int64" and ours["f"][1] == "float64" and ours["b"][1] == "bool"


def test_tensor_samples_collate_matches_torch():
    torch = pytest.importorskip("torch")
    rows = np.random.default_rng(0).standard_normal((4, 2, 3)).astype(np.float32)
    ours = default_collate([(flow.tensor(r), i) for i, r in enumerate(rows)])
    ref = torch.utils.data.default_collate([(torch.tensor(r), i) for i, r in enumerate(rows)])
    assert isinstance(ours, list)  # tuples come back as lists, as in PyTorch
    assert _plain(ours) == _plain(ref)


@pytest.mark.parametrize("n,lengths", [(10, [0.3, 0.3, 0.4]), (11, [0.5, 0.5]),
                                       (7, [0.1, 0.2, 0.7]), (5, [2, 3])])
def test_random_split_lengths_match_torch(n, lengths):
    torch = pytest.importorskip("torch")
    ours = random_split(Squares(n), lengths, generator=flow.Generator().manual_seed(0))
    ref = torch.utils.data.random_split(range(n), lengths)
    assert [len(s) for s in ours] == [len(s) for s in ref]
    assert sorted(i for s in ours for i in s.indices) == list(range(n))


def test_lengths_and_batch_sampler_match_torch():
    torch = pytest.importorskip("torch")
    td = torch.utils.data
    for drop_last in (False, True):
        ours = BatchSampler(SequentialSampler(range(10)), 4, drop_last)
        ref = td.BatchSampler(td.SequentialSampler(range(10)), 4, drop_last)
        assert list(ours) == list(ref) and len(ours) == len(ref)
        ours_it = DataLoader(Stream(10), batch_size=4, drop_last=drop_last)
        ref_it = td.DataLoader(list(range(10)), batch_size=4, drop_last=drop_last)
        assert len(ours_it) == len(ref_it)
        assert _batches(ours_it) == _batches(ref_it)


# -- NumPy references and behaviour ----------------------------------------------------------

def test_shuffle_is_a_seeded_permutation():
    def order(seed):
        g = flow.Generator().manual_seed(seed)
        loader = DataLoader(Squares(20), batch_size=6, shuffle=True, generator=g)
        return [int(v) for b in loader for v in b.numpy()]

    a, b, c = order(1), order(1), order(2)
    assert a == b and a != c
    np.testing.assert_array_equal(np.sort(a), np.arange(20) ** 2)


def test_epochs_differ_and_default_generator_follows_manual_seed():
    sampler = RandomSampler(range(30), generator=flow.Generator().manual_seed(0))
    assert list(sampler) != list(sampler)  # one generator draw per epoch
    flow.manual_seed(5)
    first = list(RandomSampler(range(30)))
    flow.manual_seed(5)
    assert list(RandomSampler(range(30))) == first


def test_random_sampler_num_samples_and_replacement():
    g = flow.Generator().manual_seed(3)
    over = list(RandomSampler(range(4), num_samples=10, generator=g))
    assert len(over) == 10 and sorted(over[:8]) == sorted(list(range(4)) * 2)
    drawn = np.array(list(RandomSampler(range(5), replacement=True, num_samples=200,
                                        generator=g)))
    assert len(drawn) == 200 and drawn.min() >= 0 and drawn.max() < 5
    assert len(np.unique(drawn)) == 5


def test_random_split_is_deterministic_and_disjoint():
    def split():
        return [s.indices for s in random_split(Squares(9), [4, 5],
                                                generator=flow.Generator().manual_seed(7))]

    a = split()
    assert a == split()
    parts = random_split(Squares(9), [4, 5], generator=flow.Generator().manual_seed(7))
    assert [parts[0][i] for i in range(4)] == [k * k for k in a[0]]


def test_concat_subset_and_add():
    both = Squares(3) + Squares(2)
    assert isinstance(both, ConcatDataset)
    assert [both[i] for i in range(len(both))] == [0, 1, 4, 0, 1]
    assert both[-1] == 1
    with pytest.raises(IndexError, match="ConcatDataset"):
        both[5]
    sub = Subset(Squares(10), [9, 2])
    assert len(sub) == 2 and [sub[0], sub[1]] == [81, 4]
    assert _batches(DataLoader(sub, batch_size=2)) == [("tensor", "int64", [81, 4])]
    chained = Stream(2) + Stream(3)
    assert list(chained) == [0, 1, 0, 1, 2]


def test_iterable_unbatched_and_workers_run_in_process():
    # batch_size=None: default_convert leaves Python ints alone and turns arrays to tensors
    assert list(DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]
    (t,) = DataLoader([np.ones(2)], batch_size=None)
    assert isinstance(t, flow.Tensor) and str(t.dtype) == "flow.float64"
    plain = _batches(DataLoader(Squares(7), batch_size=2))
    assert _batches(DataLoader(Squares(7), batch_size=2, num_workers=2)) == plain
    assert get_worker_info() is None
    # a custom collate_fn and batch_sampler
    loader = DataLoader(Squares(5), batch_sampler=[[4, 0], [1]], collate_fn=list)
    assert list(loader) == [[16, 0], [1]] and len(loader) == 2


def test_tensor_dataset_items():
    x = flow.tensor(np.arange(6.0).reshape(3, 2))
    ds = TensorDataset(x, flow.tensor([7, 8, 9]))
    assert len(ds) == 3
    a, b = ds[1]
    np.testing.assert_array_equal(a.numpy(), [2.0, 3.0])
    assert int(b.numpy()) == 8


# -- error paths -----------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,match", [
    (dict(batch_size=0), "DataLoader: batch_size"),
    (dict(batch_size=True), "DataLoader: batch_size"),
    (dict(num_workers=-1), "DataLoader: num_workers"),
    (dict(shuffle=True, sampler=[0, 1]), "mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
    (dict(batch_size=None, drop_last=True), "mutually exclusive with drop_last"),
    (dict(prefetch_factor=2), "prefetch_factor"),
])
def test_dataloader_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DataLoader(Squares(4), **kwargs)


def test_dataloader_iterable_rejects_shuffle_and_samplers():
    with pytest.raises(ValueError, match="IterableDataset.*shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="IterableDataset.*sampler"):
        DataLoader(Stream(3), sampler=[0])
    with pytest.raises(TypeError, match="DataLoader: generator"):
        DataLoader(Squares(3), generator=np.random.default_rng(0))


def test_random_split_bad_lengths():
    with pytest.raises(ValueError, match=r"random_split: sum of input lengths \(5\).*\(6\)"):
        random_split(Squares(6), [2, 3])
    with pytest.raises(ValueError, match="random_split: lengths must be non-negative"):
        random_split(Squares(3), [4, -1])
    with pytest.raises(ValueError, match="random_split: .*fractions summing to 1"):
        random_split(Squares(3), [0.5, 0.6])
    with pytest.raises(TypeError, match=r"random_split: lengths\[0\]"):
        random_split(Squares(3), ["a", 3])
    with pytest.warns(UserWarning, match="index 1 is 0"):
        random_split(Squares(1), [0.5, 0.5])


def test_dataset_and_sampler_errors():
    with pytest.raises(ValueError, match=r"TensorDataset: size mismatch.*\[3, 2\]"):
        TensorDataset(flow.zeros(3, 2), flow.zeros(2))
    with pytest.raises(ValueError, match="TensorDataset: needs at least one tensor"):
        TensorDataset()
    with pytest.raises(TypeError, match=r"TensorDataset: tensors\[0\]"):
        TensorDataset(np.zeros(3))
    with pytest.raises(ValueError, match="ConcatDataset: datasets should not be an empty"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="ConcatDataset: datasets\\[0\\] is an IterableDataset"):
        ConcatDataset([Stream(2)])
    with pytest.raises(ValueError, match="BatchSampler: batch_size"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="RandomSampler: num_samples"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="RandomSampler: replacement"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(NotImplementedError, match="must implement __getitem__"):
        Dataset()[0]


def test_collate_errors():
    with pytest.raises(RuntimeError, match="default_collate: each element in list"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([np.array(["a"]), np.array(["b"])])
