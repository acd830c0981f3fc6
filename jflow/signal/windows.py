"""``flow.signal.windows``: PyTorch's ``torch.signal.windows`` window functions.

Each window is computed from PyTorch's own formula (``torch/signal/windows/windows.py``: a
``linspace`` of ``M`` points and a closed form) in float64 on the host, then made a tensor of
the requested dtype: windows are constants (no op to differentiate through; ``requires_grad``
makes the result a leaf). ``sym=False`` gives the periodic window (DFT-even: the symmetric
window one point longer, its last point dropped).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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


def _trivial(M: int, dtype: Any, device: Any, requires_grad: bool) -> Tensor | None:
    """M == 0: empty; M == 1: a single one (PyTorch's early returns)."""
    if M <= 1:
        return _out(np.ones(M), dtype, device, requires_grad)
    return None


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype: Any = None, layout: Any = None, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.exponential: ``exp(-|n - center| / tau)``."""
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    d = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    t = _trivial(M, d, device, requires_grad)
    if t is not None:
        return t
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    k = _linspace(-center / tau, (-center + (M - 1)) / tau, M)
    return _out(np.exp(-np.abs(k)), d, device, requires_grad)


def cosine(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.cosine: ``sin(pi (n + 1/2) / M)`` (the sine window)."""
    d = _checks("cosine", M, dtype, layout)
    t = _trivial(M, d, device, requires_grad)
    if t is not None:
        return t
    start = 0.5
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = _linspace(start * constant, (start + (M - 1)) * constant, M)
    return _out(np.sin(k), d, device, requires_grad)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None,
             layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.gaussian: ``exp(-(n - (M - 1) / 2)^2 / (2 std^2))``."""
    d = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    t = _trivial(M, d, device, requires_grad)
    if t is not None:
        return t
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _linspace(start * constant, (start + (M - 1)) * constant, M)
    return _out(np.exp(-k ** 2), d, device, requires_grad)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None,
           layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.kaiser: ``I0(beta sqrt(1 - (2 n / (M - 1) - 1)^2)) / I0(beta)``."""
    d = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    t = _trivial(M, d, device, requires_grad)
    if t is not None:
        return t
    start = -beta
    constant = 2.0 * beta / (M if not sym else M - 1)
    end = min(beta, start + (M - 1) * constant)
    k = _linspace(start, end, M)
    return _out(np.i0(np.sqrt(np.clip(beta * beta - k ** 2, 0.0, None))) / np.i0(beta), d,
                device, requires_grad)


def general_cosine(M: int, *, a: Sequence[float], sym: bool = True, dtype: Any = None,
                   layout: Any = None, device: Any = None, requires_grad: bool = False
                   ) -> Tensor:
    """torch.signal.windows.general_cosine: ``sum_i (-1)^i a_i cos(2 pi i n / (M - 1))``."""
    d = _checks("general_cosine", M, dtype, layout)
    if not isinstance(a, (list, tuple)):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    t = _trivial(M, d, device, requires_grad)
    if t is not None:
        return t
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = _linspace(0.0, (M - 1) * constant, M)
    vals = sum((-1) ** i * float(w) * np.cos(i * k) for i, w in enumerate(a))
    return _out(vals, d, device, requires_grad)


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
    d = _checks("bartlett", M, dtype, layout)
    t = _trivial(M, d, device, requires_grad)
    if t is not None:
        return t
    start = -1.0
    constant = 2 / (M if not sym else M - 1)
    k = _linspace(start, start + (M - 1) * constant, M)
    return _out(1 - np.abs(k), d, device, requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = None,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """torch.signal.windows.nuttall: general_cosine with Nuttall's four coefficients."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
