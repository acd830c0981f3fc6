"""tests/_pairwise.py: the all-pairs parametrization the parity tests use instead of Cartesian
products holds every pair of values, in fewer cases, the same on every call."""

from __future__ import annotations

import itertools

import pytest
from _pairwise import pairwise


@pytest.mark.parametrize("sizes", [(2, 6, 3), (2, 5, 4), (4, 4, 3), (3, 2, 2), (3, 3, 3, 3),
                                   (1, 4, 2), (5, 2, 3, 2, 4)])
def test_every_pair_appears_in_fewer_cases(sizes: tuple[int, ...]) -> None:
    lists = [[f"{chr(97 + i)}{v}" for v in range(n)] for i, n in enumerate(sizes)]
    rows = pairwise(*lists)
    assert all(len(r) == len(sizes) and all(r[i] in lists[i] for i in range(len(sizes)))
               for r in rows)
    for i, j in itertools.combinations(range(len(sizes)), 2):
        assert {(r[i], r[j]) for r in rows} == set(itertools.product(lists[i], lists[j]))
    two = sorted(sizes)[-2:]
    assert two[0] * two[1] <= len(rows) < len(list(itertools.product(*lists))) or \
        min(sizes) == 1
    assert pairwise(*lists) == rows  # deterministic: xdist workers collect the same ids


def test_two_lists_are_the_product_and_empty_lists_are_refused() -> None:
    assert pairwise([1, 2], "ab") == [(1, "a"), (1, "b"), (2, "a"), (2, "b")]
    with pytest.raises(ValueError, match="every list needs at least one value"):
        pairwise([1], [], [2])
