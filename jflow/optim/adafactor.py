"""``optim.Adafactor`` (Shazeer & Stern 2018, as torch.optim.Adafactor): second moments
factored into row and column statistics over a parameter's last two dimensions, a relative
step size and update clipping.

Everything that depends on the step count is computed with ops on the 0-d ``step`` tensor
(float64, as PyTorch's Python floats), so one compiled step serves every step.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _C
from ..creation import zeros, zeros_like
from ..dtypes import finfo, float64
from ..tensor import Tensor
from .optimizer import Optimizer, scalar_dtype

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """PyTorch's Adafactor::

        t += 1;  1 - beta2_t = t^beta2_decay;  rho = min(lr, 1 / sqrt(t))
        alpha = max(eps2, RMS(p)) * rho;  p *= 1 - lr * weight_decay
        p.ndim >= 2:  R = lerp(R, mean(g², dim=-1), 1 - beta2_t)   (row_var, [..., m, 1])
                      C = lerp(C, mean(g², dim=-2), 1 - beta2_t)   (col_var, [..., 1, n])
                      V = R @ C / max(mean(R, dim=-2), eps1)
        otherwise:    V = lerp(V, g², 1 - beta2_t)                 (variance)
        u = g / max(sqrt(V), eps1);  p -= alpha / max(1, RMS(u) / d) * u

    ``eps = (eps1, eps2)``: ``eps1=None`` is the machine epsilon of the parameter's dtype.
    Weight decay is decoupled (scaled by ``lr``, not by the relative step).
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: Any = None,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) or not 0.0 <= lr:
            raise ValueError(f"Adafactor(): lr must be a non-negative float, got {lr}")
        if not beta2_decay <= 0.0:
            raise ValueError(f"Adafactor(): beta2_decay must be <= 0, got {beta2_decay}")
        if not isinstance(eps, (tuple, list)) or len(eps) != 2:
            raise ValueError(f"Adafactor(): eps must be a pair (eps1, eps2), got {eps!r}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"Adafactor(): eps1 (eps[0]) must be None or >= 0, got {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"Adafactor(): eps2 (eps[1]) must be >= 0, got {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Adafactor(): the clipping threshold d must be >= 1, got {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Adafactor(): weight_decay must be >= 0, got {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        state: dict[str, Any] = {"step": zeros((), dtype=scalar_dtype(p))}
        if p.ndim >= 2:
            shape = tuple(p.shape)
            state["row_var"] = zeros(shape[:-1] + (1,), dtype=p.dtype)
            state["col_var"] = zeros(shape[:-2] + (1, shape[-1]), dtype=p.dtype)
        else:
            state["variance"] = zeros_like(p)
        return state

    def _update(self, p: Tensor, g: Tensor, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        lr, decay, (eps1, eps2), d, wd = (group["lr"], group["beta2_decay"], group["eps"],
                                          group["d"], group["weight_decay"])
        if eps1 is None:
            eps1 = finfo(p.dtype).eps
        step = state["step"]
        step.add_(1)
        t = step.to(float64)
        beta2_c = (t ** decay).to(p.dtype)  # 1 - beta2_t
        rho = t.rsqrt()
        rho = (_C.minimum(rho, lr.to(float64)) if isinstance(lr, Tensor)
               else rho.clamp(max=float(lr)))
        alpha = ((p.norm() / p.numel() ** 0.5).to(float64).clamp(min=eps2) * rho)
        if wd != 0:
            p.mul_(1 - lr * wd)
        if p.ndim >= 2:
            row, col = state["row_var"], state["col_var"]
            sq = g * g
            row.lerp_(sq.mean(dim=-1, keepdim=True), beta2_c)
            col.lerp_(sq.mean(dim=-2, keepdim=True), beta2_c)
            var = row @ col / row.mean(dim=-2, keepdim=True).clamp(min=eps1)
        else:
            var = state["variance"]
            var.lerp_(g * g, beta2_c)
        update = var.clamp(min=eps1 * eps1).rsqrt() * g
        denom = (update.norm() / (update.numel() ** 0.5 * d)).clamp(min=1.0)
        p.sub_(update * (alpha / denom.to(float64)).to(p.dtype))

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyper-parameters and state saved by :meth:`state_dict` (or by torch's
        Adafactor, with tensors converted); the factored ``row_var`` / ``col_var`` keep
        their reduced shapes."""
        factored = {}
        for k, s in state_dict.get("state", {}).items():
            factored[k] = {n: s[n] for n in ("row_var", "col_var") if n in s}
        stripped = dict(state_dict)
        stripped["state"] = {k: {n: v for n, v in s.items() if n not in factored[k]}
                             for k, s in state_dict.get("state", {}).items()}
        super().load_state_dict(stripped)
        index = {sid: p for g, s in zip(self.param_groups, state_dict["param_groups"])
                 for sid, p in zip(s["params"], g["params"])}
        for k, extra in factored.items():
            p = index.get(int(k))
            if p is None or not extra:
                continue
            for name, val in extra.items():
                want = (tuple(p.shape[:-1]) + (1,) if name == "row_var"
                        else tuple(p.shape[:-2]) + (1, p.shape[-1]))
                if tuple(val.shape) != want:
                    raise ValueError(f"Adafactor.load_state_dict(): state '{name}' of "
                                     f"parameter {k} has shape {list(val.shape)}, expected "
                                     f"{list(want)}")
                self.state[p][name] = val.to(p.dtype).to(copy=True)
