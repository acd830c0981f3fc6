"""PyTorch functions removed in PyTorch 1.9+ that old scripts still call (``torch.solve``,
``torch.lstsq``, ``torch.eig``, ``torch.symeig``, ``torch.matrix_rank``, and their ``Tensor``
methods): each raises PyTorch's RuntimeError naming its ``torch.linalg`` replacement, so the
fix is the same on both libraries."""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["solve", "lstsq", "eig", "symeig", "matrix_rank", "REMOVED"]

#: name -> what replaces it (the message's second sentence on)
REMOVED = {
    "solve": "Use torch.linalg.solve(A, B) (its arguments are reversed: X = torch.solve(B, "
             "A).solution becomes X = torch.linalg.solve(A, B)); the LU factorization comes "
             "from torch.linalg.lu_factor.",
    "lstsq": "Use torch.linalg.lstsq(A, B).solution (its arguments are reversed and it does "
             "not return the QR decomposition; the residuals are its 'residuals' field).",
    "eig": "Use torch.linalg.eigvals(A) for the eigenvalues and torch.linalg.eig(A) for both "
           "(complex tensors, not real ones mimicking complex).",
    "symeig": "Use torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L') and torch.linalg.eigh "
              "(A, UPLO=...) (the default triangle is now the lower one).",
    "matrix_rank": "Use torch.linalg.matrix_rank (its 'symmetric' parameter is now "
                   "'hermitian').",
}


def _removed(name: str) -> Any:
    def fn(*args: Any, **kwargs: Any) -> NoReturn:
        raise RuntimeError(f"torch.{name} was deprecated in PyTorch 1.9 and is now removed "
                           f"(in PyTorch and in jflow). {REMOVED[name]}")
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Removed in PyTorch 1.9: raises, naming the replacement. {REMOVED[name]}"
    return fn


solve = _removed("solve")
lstsq = _removed("lstsq")
eig = _removed("eig")
symeig = _removed("symeig")
matrix_rank = _removed("matrix_rank")
