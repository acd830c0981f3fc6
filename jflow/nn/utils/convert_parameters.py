"""``parameters_to_vector`` / ``vector_to_parameters``."""

from __future__ import annotations

from collections.abc import Iterable

from ... import _C
from ...autograd import no_grad
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated into one 1-d tensor."""
    return _C.cat([_C.reshape(p, (-1,)) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy consecutive slices of ``vec`` into ``parameters`` (in place)."""
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise TypeError("expected vec to be a 1-d Tensor")
    i = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(_C.reshape(_C.narrow(vec, 0, i, n), tuple(p.shape)))
            i += n
    if i != vec.numel():
        raise ValueError(f"vector has {vec.numel()} elements, the parameters {i}")
