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
from .functional.functors import linalg as _fl
from .tensor import Tensor
from .views.methods import diagonal as _diagonal

__all__ = ["norm", "vector_norm", "matrix_norm", "inv", "det", "slogdet", "solve", "cholesky",
           "qr", "svd", "svdvals", "eigh", "eigvalsh", "pinv", "lstsq", "matrix_rank", "cross",
           "multi_dot"]
__all__ += ["matrix_power"]
__all__ += ["solve_triangular", "lu_factor", "lu_factor_ex", "lu", "lu_solve", "eig", "eigvals",
            "vecdot", "cholesky_ex", "inv_ex", "solve_ex", "cond", "householder_product",
            "tensorinv", "tensorsolve", "vander", "diagonal", "matmul", "matrix_exp",
            "ldl_factor", "ldl_factor_ex", "ldl_solve"]

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
lstsq = F.linalg_lstsq
cross = F.linalg_cross
multi_dot = F.linalg_multi_dot
matrix_power = F.linalg_matrix_power
# LU, triangular solves, eig, the *_ex variants (functors/linalg.py)
solve_triangular = F.linalg_solve_triangular
lu_factor = F.linalg_lu_factor
lu_factor_ex = F.linalg_lu_factor_ex
lu = F.linalg_lu
lu_solve = F.linalg_lu_solve
eig = F.linalg_eig
eigvals = F.linalg_eigvals
vecdot = F.linalg_vecdot
cholesky_ex = F.linalg_cholesky_ex
inv_ex = F.linalg_inv_ex
solve_ex = F.linalg_solve_ex
cond = F.linalg_cond
householder_product = F.linalg_householder_product
tensorinv = F.linalg_tensorinv
tensorsolve = F.linalg_tensorsolve
vander = F.linalg_vander
matrix_exp = F.linalg_matrix_exp
matmul = F.matmul
ldl_factor = F.linalg_ldl_factor
ldl_factor_ex = F.linalg_ldl_factor_ex
ldl_solve = F.linalg_ldl_solve


def pinv(A: Tensor, rcond: Any = None, hermitian: bool = False, *, atol: Any = None,
         rtol: Any = None) -> Tensor:
    """torch.linalg.pinv(A, *, atol=None, rtol=None, hermitian=False) (and the older
    ``pinv(A, rcond, hermitian)``): ``atol`` / ``rtol`` numbers or tensors."""
    if rcond is not None:
        rtol = rcond
    if isinstance(atol, Tensor) or isinstance(rtol, Tensor):
        return _fl.pinv_impl(A, atol, rtol, hermitian)
    return F.linalg_pinv(A, atol=atol, rtol=rtol, hermitian=hermitian)


def matrix_rank(A: Tensor, tol: Any = None, hermitian: bool = False, *, atol: Any = None,
                rtol: Any = None) -> Tensor:
    """torch.linalg.matrix_rank(A, *, atol=None, rtol=None, hermitian=False) (and the older
    ``matrix_rank(A, tol, hermitian)``, tol = atol with rtol 0): numbers or tensors."""
    if tol is not None:
        atol, rtol = tol, 0.0
    if isinstance(atol, Tensor) or isinstance(rtol, Tensor):
        return _fl.matrix_rank_impl(A, atol, rtol, hermitian)
    return F.linalg_matrix_rank(A, atol=atol, rtol=rtol, hermitian=hermitian)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """torch.linalg.diagonal: ``torch.diagonal`` with the matrix dims last by default."""
    return _diagonal(A, offset=offset, dim1=dim1, dim2=dim2)


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


def torch_lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple[Tensor, ...]:
    """torch.lu (the older form of ``linalg.lu_factor_ex``): ``(LU, pivots)``, plus ``infos``
    with ``get_infos=True``. Like PyTorch's CPU build, LU without pivoting is refused."""
    if not pivot:
        raise RuntimeError("lu(): LU without pivoting is not implemented on the CPU")
    LU, pivots, infos = lu_factor_ex(A)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


Tensor.lu = torch_lu  # x.lu(pivot=True, get_infos=False), as torch.Tensor.lu
