"""Tensor methods and properties for complex numbers (``x.real``, ``x.conj()``,
``x.is_complex()``, ``x.cfloat()`` ...), attached once the functional layer is loaded, as
the ``tensor_methods`` package attaches the others. ``real`` and ``imag`` are properties that return
views, as PyTorch's; assigning to them writes the part into the tensor.
"""

from __future__ import annotations

from typing import Any

from . import dtypes as _dt
from .creation import full_like
from .functional import F
from .functional.functors.complex import is_conj as _conj_view
from .tensor import Tensor


def _real_get(self: Tensor) -> Tensor:
    """The real parts as a view (the tensor itself when it is not complex)."""
    return F.real(self)


def _imag_get(self: Tensor) -> Tensor:
    """The imaginary parts as a view (complex tensors only)."""
    return F.imag(self)


def _part_setter(name: str) -> Any:
    def fset(self: Tensor, value: Any) -> None:
        part = getattr(F, name)(self)
        if part is self:  # ``x.real = v`` on a real tensor writes x itself
            self.copy_(value if isinstance(value, Tensor) else full_like(self, value))
            return
        part.copy_(value if isinstance(value, Tensor) else full_like(part, value))
    fset.__name__ = name
    return fset


Tensor.real = property(_real_get, _part_setter("real"),  # type: ignore[attr-defined]
                       doc="the real parts as a view that aliases this tensor")
Tensor.imag = property(_imag_get, _part_setter("imag"),  # type: ignore[attr-defined]
                       doc="the imaginary parts as a view that aliases this tensor")


def _forward(fname: str) -> Any:
    fn = getattr(F, fname)

    def method(self: Tensor) -> Tensor:
        return fn(self)
    method.__name__ = fname
    method.__doc__ = fn.__doc__
    return method


for _name in ("conj", "conj_physical", "resolve_conj", "angle", "isreal"):
    setattr(Tensor, _name, _forward(_name))


def _conj_physical_(self: Tensor) -> Tensor:
    """In-place ``conj_physical``: conjugates this tensor's values (no-op for real ones)."""
    if self._meta.dtype.kind == "c":
        self.copy_(F.conj_physical(self))
    return self


def _is_complex(self: Tensor) -> bool:
    """Whether the dtype is complex (complex64 or complex128)."""
    return self._meta.dtype.kind == "c"


def _is_conj(self: Tensor) -> bool:
    """Whether this is a conjugate view (``x.conj()`` of a complex ``x``)."""
    return _conj_view(self)


def _resolve_neg(self: Tensor) -> Tensor:
    """PyTorch's lazy negation bit does not exist in jflow: the tensor itself."""
    return self


def _is_neg(self: Tensor) -> bool:
    """Always False: jflow has no lazy negation bit."""
    return False


def _to(d: _dt.dtype, name: str) -> Any:
    def method(self: Tensor, *, memory_format: Any = None) -> Tensor:
        return self.to(d, memory_format=memory_format)
    method.__name__ = name
    method.__doc__ = f"``self.to({d})``"
    return method


def _chalf(self: Tensor, memory_format: Any = None) -> Tensor:
    """complex32 (PyTorch's ``chalf``) is not supported: raises."""
    raise TypeError("Tensor.chalf(): complex32 is not supported by jflow (complex64 and "
                    "complex128 are); use .cfloat()")


Tensor.conj_physical_ = _conj_physical_  # type: ignore[attr-defined]
Tensor.is_complex = _is_complex  # type: ignore[attr-defined]
Tensor.is_conj = _is_conj  # type: ignore[attr-defined]
Tensor.resolve_neg = _resolve_neg  # type: ignore[attr-defined]
Tensor.is_neg = _is_neg  # type: ignore[attr-defined]
Tensor.cfloat = _to(_dt.complex64, "cfloat")  # type: ignore[attr-defined]
Tensor.cdouble = _to(_dt.complex128, "cdouble")  # type: ignore[attr-defined]
Tensor.chalf = _chalf  # type: ignore[attr-defined]


def is_complex(input: Tensor) -> bool:  # noqa: A002  (PyTorch's name)
    """``torch.is_complex``: whether ``input``'s dtype is complex."""
    return _is_complex(input)


def is_conj(input: Tensor) -> bool:  # noqa: A002  (PyTorch's name)
    """``torch.is_conj``: whether ``input`` is a conjugate view."""
    return _is_conj(input)


def resolve_neg(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.resolve_neg``: ``input`` itself (jflow has no lazy negation bit)."""
    return input
