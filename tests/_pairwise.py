"""All-pairs parametrization: ``pairwise(a, b, c)`` is a list of ``(x, y, z)`` tuples in
which every pair of values of any two of the lists appears in some tuple (a covering array of
strength 2), usually far fewer than the Cartesian product.

Why: each case of a parity test compiles new executables (a new dtype, dim or mode is a new
XLA program), so a Cartesian product of three lists pays for every triple while the bugs these
tests find come from one value or from two interacting (a dtype with a dim, a mode with a
keepdim). Every value of every list and every pair of values still runs.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any


def pairwise(*lists: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Tuples (one value per list, in the lists' order) covering every pair of values of any
    two lists; with fewer than three lists, the whole product. Deterministic: the same lists
    give the same tuples (pytest-xdist's workers must collect the same ids)."""
    n = len(lists)
    if any(len(v) == 0 for v in lists):
        raise ValueError("pairwise: every list needs at least one value")
    if n < 3:
        return list(itertools.product(*lists))
    sizes = [len(v) for v in lists]
    # the two longest lists first: their product is the least any covering array holds
    order = sorted(range(n), key=lambda i: -sizes[i])
    a, b = order[0], order[1]
    rows: list[dict[int, int]] = [{a: x, b: y} for x in range(sizes[a]) for y in range(sizes[b])]
    uncovered = {((i, x), (j, y)) for i, j in itertools.combinations(range(n), 2)
                 for x in range(sizes[i]) for y in range(sizes[j])}

    def pairs(row: dict[int, int]) -> set:
        return {((i, row[i]), (j, row[j])) if i < j else ((j, row[j]), (i, row[i]))
                for i, j in itertools.combinations(row, 2)}

    for row in rows:
        uncovered -= pairs(row)
    for k in order[2:]:
        for r, row in enumerate(rows):  # each row takes the value of k covering most pairs
            gains = [len(pairs({**row, k: v}) & uncovered) for v in range(sizes[k])]
            row[k] = max(range(sizes[k]), key=lambda v: (gains[v], -((v - r) % sizes[k])))
            uncovered -= pairs(row)
        # pairs of k with an earlier list that no row holds: rows of their own
        for (i, x), (j, y) in sorted(p for p in uncovered if k in (p[0][0], p[1][0])
                                     and all(q[0] in rows[0] for q in p)):
            if ((i, x), (j, y)) not in uncovered:
                continue
            row = {q: 0 for q in rows[0]}
            row[i], row[j] = x, y
            rows.append(row)
            uncovered -= pairs(row)
    assert not uncovered, uncovered  # every pair of values is held by some row
    return [tuple(lists[i][row[i]] for i in range(n)) for row in rows]
