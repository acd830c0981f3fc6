"""``flow.linalg``: PyTorch's ``torch.linalg`` on jflow's ops and functors.

Each function is the api.yaml entry ``linalg_<name>`` (argument parsing, defaults and errors
live there and in ``jflow/functional/functors/linalg.py``). This module also holds the three
top-level functions whose PyTorch signatures the api.yaml grammar cannot express: ``einsum``
(varargs operands), ``tensordot`` (``dims`` an int or a pair of lists) and ``chain_matmul``
(varargs); ``jflow/__init__.py`` re-exports them as ``flow.einsum`` etc.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .functional import F
from .tensor import Tensor

__all__ = ["norm", "vector_norm", "matrix_norm", "inv", "det", "slogdet", "solve", "cholesky",
           "qr", "svd", "svdvals", "eigh", "eigvalsh", "pinv", "lstsq", "matrix_rank", "cross",
           "multi_dot"]
__all__ += ["matrix_power"]  # issue 14, breadth round 2

norm = F.linalg_norm
vector_norm = F.linalg_vector_norm
matrix_norm = F.linalg_matrix_norm
inv = F.linalg_inv
det = F.linalg_det
slogdet = F.linalg_slogdet
solve = F.linalg_solve
cholesky = F.linalg_cholesky
qr = F.linalg_qr
svd = F.linalg_svd
svdvals = F.linalg_svdvals
eigh = F.linalg_eigh
eigvalsh = F.linalg_eigvalsh
pinv = F.linalg_pinv
lstsq = F.linalg_lstsq
matrix_rank = F.linalg_matrix_rank
cross = F.linalg_cross
multi_dot = F.linalg_multi_dot
matrix_power = F.linalg_matrix_power


def einsum(equation: str, *operands: Any) -> Tensor:
    """torch.einsum: ``einsum("ij,jk->ik", a, b)`` or ``einsum("ij,jk", [a, b])``; the full
    grammar (``...`` broadcasting, implicit output)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return F.einsum(equation, list(operands))


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """torch.tensordot: ``dims`` an int n (the last n dims of ``a`` with the first n of
    ``b``) or a pair of dim lists."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise ValueError(f"tensordot(): expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise ValueError(f"tensordot(): expects dims <= min(a.ndim, b.ndim) = "
                             f"{min(a.ndim, b.ndim)}, but got dims={dims}")
        da = list(range(a.ndim - dims, a.ndim))
        db = list(range(dims))
    elif isinstance(dims, Sequence) and len(dims) == 2:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    else:
        raise TypeError(f"tensordot(): argument 'dims' must be an int or a pair of dim lists, "
                        f"got {dims!r}")
    return F.tensordot(a, b, da, db)


def chain_matmul(*matrices: Tensor) -> Tensor:
    """torch.chain_matmul: the product of 2-D matrices (``linalg.multi_dot`` with varargs)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    return F.chain_matmul(list(matrices))
