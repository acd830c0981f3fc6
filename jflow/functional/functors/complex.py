"""Functors of the complex-number ops (``jflow/ops/complex.py``): PyTorch's ``complex``,
``polar``, ``real``, ``imag``, ``conj`` (+ ``conj_physical``, ``resolve_conj``), ``angle``,
``sgn``, ``isreal``, ``view_as_real`` and ``view_as_complex``.

As in PyTorch, ``real``, ``imag``, ``conj``, ``view_as_real`` and ``view_as_complex`` return
views that alias their input: ``z.real.mul_(2)`` or ``flow.view_as_real(z)[..., 1] = 0``
changes ``z`` (the view steps and their inverses are in ``jflow/views/alias.py``). On a real
tensor ``real`` and ``conj`` return the tensor itself and ``imag`` raises, as PyTorch.
"""

from __future__ import annotations

from ... import dtypes as _dt
from ...ops import get
from ...tensor import Tensor
from ...views import alias
from ..promotion import cast, scalar_tensor
from ..registry import functor

_complex = get("complex").apply
_real, _imag, _conj = get("real").apply, get("imag").apply, get("conj").apply
_angle = get("angle").apply
_as_real, _as_complex = get("view_as_real").apply, get("view_as_complex").apply
_mul, _div, _cos, _sin = (get(n).apply for n in ("mul", "div", "cos", "sin"))
_abs, _eq, _where, _sign, _clone = (get(n).apply for n in ("abs", "eq", "where", "sign", "clone"))
_full = get("full").apply
_FLOATS = (_dt.float32, _dt.float64)


def _is_complex(t: Tensor) -> bool:
    return t._meta.dtype.kind == "c"


def _floats(fname: str, a: Tensor, b: Tensor, names: tuple[str, str]) -> None:
    for name, t in zip(names, (a, b)):
        if t.dtype not in _FLOATS:
            raise TypeError(f"{fname}(): expected {name} to be a float32 or float64 tensor, "
                            f"got {t.dtype}")
    if a.dtype is not b.dtype:
        raise TypeError(f"{fname}(): expected {names[0]} and {names[1]} to have the same "
                        f"dtype, got {a.dtype} and {b.dtype}")


@functor("Complex")
def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001  (PyTorch's name)
    """``torch.complex``: ``real + i imag`` (float32 -> complex64, float64 -> complex128)."""
    _floats("complex", real, imag, ("real", "imag"))
    return _complex(real, imag)


@functor("Polar")
def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002  (PyTorch's names)
    """``torch.polar``: ``abs * (cos(angle) + i sin(angle))``."""
    _floats("polar", abs, angle, ("abs", "angle"))
    return _complex(_mul(abs, _cos(angle)), _mul(abs, _sin(angle)))


@functor("Real")
def real(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.real``: a view of the real parts (the tensor itself if it is not complex)."""
    if not _is_complex(input):
        return input
    return alias(_real(input), input, "real", ())


@functor("Imag")
def imag(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.imag``: a view of the imaginary parts (complex tensors only, as PyTorch)."""
    if not _is_complex(input):
        raise RuntimeError(f"imag(): imag is not implemented for tensors with non-complex "
                           f"dtypes (got {input.dtype})")
    return alias(_imag(input), input, "imag", ())


@functor("Conj")
def conj(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.conj``: the conjugate as a view of ``input`` (writes into it conjugate back);
    the tensor itself if it is not complex."""
    if not _is_complex(input):
        return input
    return alias(_conj(input), input, "conj", ())


@functor("ConjPhysical")
def conj_physical(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.conj_physical``: the conjugate as a new tensor (a copy for real input)."""
    return _conj(input) if _is_complex(input) else _clone(input)


@functor("ResolveConj")
def resolve_conj(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.resolve_conj``: a conjugate view (``is_conj()``) as a new tensor; any other
    tensor itself."""
    return _clone(input) if is_conj(input) else input


def is_conj(t: Tensor) -> bool:
    """Whether ``t`` is a conjugate view (``x.conj()`` of a complex ``x``), as PyTorch's
    conjugate bit."""
    view = t._view if t._aliases else None
    return view is not None and bool(view.steps) and view.steps[-1][0] == "conj"


@functor("Angle")
def angle(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.angle``: the argument in (-pi, pi] (float; 0 or pi for real input; integer
    and bool input in the default float dtype)."""
    if input._meta.dtype.kind in "biu":
        input = cast(input, _dt.get_default_dtype().np)
    return _angle(input)


@functor("Sgn")
def sgn(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.sgn``: ``z / |z|`` for complex input (0 at 0), the sign otherwise."""
    if not _is_complex(input):
        return _sign(input)
    r = _abs(input)
    zero = _eq(r, scalar_tensor(0.0, r._meta.dtype))
    safe = _where(zero, scalar_tensor(1.0, r._meta.dtype), r)
    out = _div(input, _complex(safe, _mul(safe, scalar_tensor(0.0, r._meta.dtype))))
    return _where(zero, scalar_tensor(0.0, out._meta.dtype), out)


@functor("IsReal")
def isreal(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.isreal``: True where the imaginary part is 0 (everywhere for real input)."""
    if not _is_complex(input):
        return _full(shape=tuple(input._meta.shape), value=1.0, dtype=bool)
    im = _imag(input)
    return _eq(im, scalar_tensor(0.0, im._meta.dtype))


@functor("ViewAsReal")
def view_as_real(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.view_as_real``: a complex tensor (...) as a float view (..., 2)."""
    if not _is_complex(input):
        raise RuntimeError(f"view_as_real(): is only supported for complex tensors, got "
                           f"{input.dtype}")
    return alias(_as_real(input), input, "view_as_real", ())


@functor("ViewAsComplex")
def view_as_complex(input: Tensor) -> Tensor:  # noqa: A002
    """``torch.view_as_complex``: a float tensor (..., 2) as a complex view (...)."""
    if input.dtype not in _FLOATS:
        raise RuntimeError(f"view_as_complex(): is only supported for float32 and float64 "
                           f"tensors, got {input.dtype}")
    shape = tuple(input._meta.shape)
    if not shape or shape[-1] != 2:
        raise RuntimeError(f"view_as_complex(): tensor must have a last dimension of size 2, "
                           f"got shape {list(shape)}")
    return alias(_as_complex(input), input, "view_as_complex", ())
