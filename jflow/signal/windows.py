"""``flow.signal.windows``: PyTorch's ``torch.signal.windows`` window functions.

Each window is computed from PyTorch's own formula (``torch/signal/windows/windows.py``: a
``linspace`` of ``M`` points and a closed form) in float64 on the host, then made a tensor of
the requested dtype: windows are constants (no op to differentiate through; ``requires_grad``
makes the result a leaf). ``sym=False`` gives the periodic window (DFT-even: the symmetric
window one point longer, its last point dropped).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..creation import tensor as _tensor
from ..tensor import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _checks(fname: str, M: int, dtype: Any, layout: Any) -> Any:
    """PyTorch's ``_window_function_checks``; the dtype to use."""
    if M < 0:
        raise ValueError(f"{fname} requires non-negative window length, got M={M}")
    if layout is not None and "strided" not in str(layout):
        raise ValueError(f"{fname} is implemented for strided tensors only, got: {layout}")
    d = _dt.get_default_dtype() if dtype is None else dtype
    if np.dtype(d.np) not in (np.float32, np.float64):
        raise ValueError(f"{fname} expects float32 or float64 dtypes, got: {d}")
    return d


def _out(vals: np.ndarray, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    return _tensor(np.asarray(vals, np.float64).astype(dtype.np), dtype=dtype, device=device,
                   requires_grad=requires_grad)


def _linspace(start: float, end: float, M: int) -> np.ndarray:
    return np.linspace(start, end, M, dtype=np.float64)


def _window(fname: str, M: int, dtype: Any, layout: Any, device: Any, requires_grad: bool,
            values: Callable[[], np.ndarray], check: Callable[[], None] | None = None
            ) -> Tensor:
    """The steps every window takes, in PyTorch's order: the shared argument checks, the
    window's own (``check``), the early returns (M == 0: empty; M == 1: a single one), then
    ``values()`` (M >= 2 points, float64) as a tensor of the checked dtype."""
    d = _checks(fname, M, dtype, layout)
    if check is not None:
        check()
    return _out(np.ones(M) if M <= 1 else values(), d, device, requires_grad)


def _ramp(start: float, constant: float, M: int) -> np.ndarray:
    """``M`` points ``(start + n) * constant``, as PyTorch's windows write their linspace."""
    return _linspace(start * constant, (start + (M - 1)) * constant, M)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype: Any = None, layout: Any = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.exponential: ``exp(-|n - center| / tau)``."""
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")

    def check() -> None:
        if tau <= 0:
            raise ValueError(f"Tau must be positive, got: {tau} instead.")

    def values() -> np.ndarray:
        c = (M if not sym else M - 1) / 2.0 if center is None else center
        return np.exp(-np.abs(_linspace(-c / tau, (-c + (M - 1)) / tau, M)))

    return _window("exponential", M, dtype, layout, device, requires_grad, values, check)


def cosine(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.cosine: ``sin(pi (n + 1/2) / M)`` (the sine window)."""
    def values() -> np.ndarray:
        return np.sin(_ramp(0.5, math.pi / (M + 1 if not sym else M), M))

    return _window("cosine", M, dtype, layout, device, requires_grad, values)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None,
             layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.gaussian: ``exp(-(n - (M - 1) / 2)^2 / (2 std^2))``."""
    def check() -> None:
        if std <= 0:
            raise ValueError(f"Standard deviation must be positive, got: {std} instead.")

    def values() -> np.ndarray:
        start = -(M if not sym else M - 1) / 2.0
        return np.exp(-_ramp(start, 1 / (std * math.sqrt(2)), M) ** 2)

    return _window("gaussian", M, dtype, layout, device, requires_grad, values, check)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None,
           layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.kaiser: ``I0(beta sqrt(1 - (2 n / (M - 1) - 1)^2)) / I0(beta)``."""
    def check() -> None:
        if beta < 0:
            raise ValueError(f"beta must be non-negative, got: {beta} instead.")

    def values() -> np.ndarray:
        constant = 2.0 * beta / (M if not sym else M - 1)
        k = _linspace(-beta, min(beta, -beta + (M - 1) * constant), M)
        return np.i0(np.sqrt(np.clip(beta * beta - k ** 2, 0.0, None))) / np.i0(beta)

    return _window("kaiser", M, dtype, layout, device, requires_grad, values, check)


def general_cosine(M: int, *, a: Sequence[float], sym: bool = True, dtype: Any = None,
                   layout: Any = None, device: Any = None, requires_grad: bool = False
                   ) -> Tensor:
    """torch.signal.windows.general_cosine: ``sum_i (-1)^i a_i cos(2 pi i n / (M - 1))``."""
    def check() -> None:
        if not isinstance(a, (list, tuple)):
            raise TypeError("Coefficients must be a list/tuple")
        if not a:
            raise ValueError("Coefficients cannot be empty")

    def values() -> np.ndarray:
        k = _ramp(0.0, 2 * math.pi / (M if not sym else M - 1), M)
        return sum((-1) ** i * float(w) * np.cos(i * k) for i, w in enumerate(a))

    return _window("general_cosine", M, dtype, layout, device, requires_grad, values, check)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype: Any = None,
                    layout: Any = None, device: Any = None, requires_grad: bool = False
                    ) -> Tensor:
    """torch.signal.windows.general_hamming: ``alpha - (1 - alpha) cos(2 pi n / (M - 1))``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.hamming: general_hamming with alpha = 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
         device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.hann: general_hamming with alpha = 0.5."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.blackman: general_cosine with a = [0.42, 0.5, 0.08]."""
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.bartlett: the triangular window ``1 - |2 n / (M - 1) - 1|``."""
    def values() -> np.ndarray:
        constant = 2 / (M if not sym else M - 1)
        return 1 - np.abs(_linspace(-1.0, -1.0 + (M - 1) * constant, M))

    return _window("bartlett", M, dtype, layout, device, requires_grad, values)


def nuttall(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.nuttall: general_cosine with Nuttall's four coefficients."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
