"""``optim.Muon``: PyTorch 2.13's Muon (momentum, then Newton–Schulz orthogonalisation of the
update, for 2-d parameters).

PyTorch's update, step for step::

    buf.lerp_(g, 1 - momentum)                       # buf = momentum * buf + (1 - momentum) g
    u = g.lerp(buf, momentum) if nesterov else buf
    O = newton_schulz(u)                             # in bfloat16, see below
    p *= 1 - lr * weight_decay                       # decoupled weight decay
    p -= adjust_lr(lr, p.shape) * O                  # sqrt(max(1, A / B)), or 0.2 sqrt(max(A, B))

``newton_schulz``: ``X = u`` in bfloat16 (transposed when it has more rows than columns),
``X /= max(||X||, eps)``, then ``ns_steps`` times ``A = X X^T; B = b A + c A A; X = a X + B X``
(PyTorch's ``addmm``). Each ``addmm`` is computed as bfloat16 GEMMs compute it on PyTorch's
CPU and CUDA backends — products and sums in float32, the result rounded to bfloat16 once —
rather than as separate bfloat16 ops (each rounding), so the iterates stay PyTorch's to
bfloat16 rounding; so are the norm and the division.
"""

from __future__ import annotations

import math
from typing import Any

from .. import _C
from .. import dtypes as _dt
from ..creation import zeros_like
from ..tensor import Tensor
from .optimizer import Optimizer

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _addmm(input: Tensor, mat1: Tensor, mat2: Tensor, beta: float = 1.0,
           alpha: float = 1.0) -> Tensor:
    """bfloat16 ``beta * input + alpha * mat1 @ mat2`` computed in float32, rounded once."""
    f32 = _dt.float32
    out = _C.matmul(mat1.to(f32), mat2.to(f32))
    if alpha != 1.0:
        out = out * alpha
    return (input.to(f32) * beta + out).to(_dt.bfloat16)


def _zeropower_via_newtonschulz(grad: Tensor, ns_coefficients: tuple[float, float, float],
                                ns_steps: int, eps: float) -> Tensor:
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    f32, bf16 = _dt.float32, _dt.bfloat16
    x = grad.to(bf16)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = _C.clamp(x.to(f32).norm().to(bf16), eps, None)
    x = (x.to(f32) / norm.to(f32)).to(bf16)
    for _ in range(ns_steps):
        gram = _C.matmul(x.to(f32), x.T.to(f32)).to(bf16)
        gram_update = _addmm(gram, gram, gram, beta=b, alpha=c)
        x = _addmm(x, gram_update, x, beta=a)
    return x.T if tall else x


def _adjust_lr(lr: Any, adjust_lr_fn: str | None, param_shape: Any) -> Any:
    A, B = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, A / B))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(A, B))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """PyTorch's Muon for 2-d parameters (see the module docstring); biases, embeddings and
    other parameters belong to another optimizer (AdamW), as in PyTorch."""

    def __init__(self, params: Any, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B,
                                                                DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_coefficients=ns_coefficients,
                                      eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any] | None:
        if p.is_complex():
            raise RuntimeError("Muon does not support complex parameters")
        return {"momentum_buffer": zeros_like(p)}

    def _update(self, p: Tensor, g: Tensor, state: dict[str, Any], group: dict[str, Any]
                ) -> None:
        if g.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        lr, momentum = group["lr"], group["momentum"]
        buf = state["momentum_buffer"]
        buf.lerp_(g, 1 - momentum)
        update = g.lerp(buf, momentum) if group["nesterov"] else buf
        update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                             group["ns_steps"], group["eps"])
        adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], tuple(p.shape))
        self._weight_decay(p, g, lr, group["weight_decay"], decoupled=True)
        self._descend_(p, update.to(p.dtype), adjusted_lr)
