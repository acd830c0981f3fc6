"""Functors of the special functions (``jflow/ops/special.py``): PyTorch's dtype rules, then
the op. Bool / integer inputs compute in the default float dtype (as ``torch.special``); the
binary functions promote their two operands first (a Python scalar takes the tensor's dtype
unless its category is higher), in the tensor-tensor, tensor-scalar and scalar-tensor forms
that ``torch.special.xlog1py`` / ``zeta`` / the polynomials accept."""

from __future__ import annotations

from typing import Any

from ...ops import get
from ...tensor import Tensor
from ..promotion import (
    cast,
    default_float_np,
    promote,
    scalar_result_dtype,
    scalar_tensor,
    to_float,
)
from ..registry import functor


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def _unary_functor(functor_name: str, op_name: str) -> None:
    apply = get(op_name).apply

    def fn(input: Tensor) -> Tensor:
        return apply(to_float(input))
    fn.__name__ = functor_name
    functor(functor_name)(fn)


for _fn in ["i0e", "i1e", "ndtr", "ndtri", "log_ndtr", "erfcx", "entr", "bessel_j0",
            "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
            "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
            "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai"]:
    _unary_functor(_camel(f"special_{_fn}"), f"special_{_fn}")
# torch.special.i1: the i1 op of ops/math.py (with its derivative), here for the promotion
_unary_functor("SpecialI1", "i1")


def _float_pair(fname: str, a: Tensor, b: Tensor, integral_ok: bool) -> tuple[Tensor, Tensor]:
    a, b = promote(a, b)
    if a._meta.dtype.kind in "iub":
        if not integral_ok:
            raise RuntimeError(f"{fname}(): \"{fname}_cpu\" not implemented for integer or "
                               f"bool inputs (arguments 'input' and 'other' have dtype "
                               f"{a.dtype}); pass floating tensors")
        f = default_float_np()
        a, b = cast(a, f), cast(b, f)
    return a, b


def _binary_functors(fname: str, op_name: str, scalar_forms: bool = True,
                     integral_ok: bool = True) -> None:
    """``Name`` (tensor, tensor) and, with ``scalar_forms``, ``ScalarName`` (tensor, scalar)
    and ``ScalarRName`` (scalar, tensor)."""
    apply = get(op_name).apply
    name = _camel(op_name)

    def tensor_tensor(a: Tensor, b: Tensor) -> Tensor:
        return apply(*_float_pair(fname, a, b, integral_ok))

    def tensor_scalar(a: Tensor, b: Any) -> Tensor:
        d = scalar_result_dtype(a, b)
        return apply(*_float_pair(fname, cast(a, d), scalar_tensor(b, d), integral_ok))

    def scalar_tensor_(a: Any, b: Tensor) -> Tensor:
        d = scalar_result_dtype(b, a)
        return apply(*_float_pair(fname, scalar_tensor(a, d), cast(b, d), integral_ok))

    tensor_tensor.__name__ = name
    functor(name)(tensor_tensor)
    if scalar_forms:
        tensor_scalar.__name__, scalar_tensor_.__name__ = f"Scalar{name}", f"ScalarR{name}"
        functor(f"Scalar{name}")(tensor_scalar)
        functor(f"ScalarR{name}")(scalar_tensor_)


_binary_functors("xlog1py", "special_xlog1py")
_binary_functors("zeta", "special_zeta")
_binary_functors("igamma", "igamma", scalar_forms=False, integral_ok=False)
_binary_functors("igammac", "igammac", scalar_forms=False, integral_ok=False)
for _p in ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"]:
    _binary_functors(_p, f"special_{_p}")
