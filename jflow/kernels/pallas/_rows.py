"""Shared tiling for the row-wise kernels (softmax, norms): a program handles ``BR`` rows x
``BC`` columns (powers of 2, as Triton requires), masked at the edges, so any shape works."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from ._compat import next_power_of_2, pl

#: the widest row a row-wise kernel keeps in one block (beyond it the xla kernel runs)
MAX_ROW = 16384
#: elements per program the row kernels aim at (several short rows share a program)
_TILE = 4096


def row_tiling(n_rows: int, n_cols: int, interpret: bool = False) -> tuple[int, int, int]:
    """(rows per program, padded row length, num_warps) for an (n_rows, n_cols) input.

    In interpret mode the tiles are small (256 elements), so that tests on tiny shapes run
    several programs and a partial last block."""
    bc = next_power_of_2(n_cols)
    br = max(1, min(next_power_of_2(n_rows), (256 if interpret else _TILE) // bc))
    elems = br * bc
    warps = 4 if elems <= 2048 else 8 if elems <= 8192 else 16
    return br, bc, warps


def row_block(n_rows: int, n_cols: int, br: int, bc: int) -> tuple[Any, Any, Any, Any]:
    """(row slice, col slice, 2-d mask, row mask) of this program's block."""
    i = pl.program_id(0)
    rows = i * br + jnp.arange(br, dtype=jnp.int32)
    cols = jnp.arange(bc, dtype=jnp.int32)
    rmask = rows < n_rows
    mask = rmask[:, None] & (cols[None, :] < n_cols)
    return pl.ds(i * br, br), pl.ds(jnp.int32(0), bc), mask, rmask


def fits_row(x: Any) -> bool:
    """A non-empty >= 1-d input whose last axis fits one block."""
    s = tuple(x.shape)
    return len(s) >= 1 and 0 < s[-1] <= MAX_ROW and all(d > 0 for d in s)
