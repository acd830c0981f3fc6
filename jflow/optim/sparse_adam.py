"""``optim.SparseAdam``: "lazy" Adam, which updates only the rows that got a gradient.

PyTorch's SparseAdam requires sparse gradients (``nn.Embedding(sparse=True)``) and updates
the moments and the parameter only at the gradient's indices. jflow has no sparse tensors,
so the rule is defined on dense gradients: the rows (slices along the first dimension) whose
gradient is non-zero are the gradient's indices. For an embedding this is exactly PyTorch's
update, except for a looked-up row whose gradient is exactly zero everywhere, which PyTorch
updates (its moments decay) and jflow leaves as is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import _C
from ..creation import zeros, zeros_like
from ..dtypes import float64
from ..tensor import Tensor
from .optimizer import Optimizer, scalar_dtype

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Lazy Adam on the rows ``i`` whose gradient ``g[i]`` is non-zero (other rows, their
    ``exp_avg`` and ``exp_avg_sq`` are left unchanged)::

        t += 1  (once per step() in which the parameter has a gradient)
        m[i] = b1 m[i] + (1 - b1) g[i];  v[i] = b2 v[i] + (1 - b2) g[i]²
        p[i] -= lr sqrt(1 - b2^t) / (1 - b1^t) · m[i] / (sqrt(v[i]) + eps)

    Rows of a 1-d parameter are its elements. ``maximize`` negates the gradient. The step
    count is a 0-d tensor (PyTorch keeps a Python int; loading its state dict converts it),
    so a compiled step does not change with ``t``.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        if not 0.0 < lr:
            raise ValueError(f"SparseAdam(): lr must be > 0, got {lr}")
        if not 0.0 < eps:
            raise ValueError(f"SparseAdam(): eps must be > 0, got {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"SparseAdam(): betas[0] must be in [0, 1), got {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"SparseAdam(): betas[1] must be in [0, 1), got {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, maximize=maximize))

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any]:
        return {"step": zeros((), dtype=scalar_dtype(p)), "exp_avg": zeros_like(p),
                "exp_avg_sq": zeros_like(p)}

    def _update(self, p: Tensor, g: Tensor, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        if p.ndim == 0:
            raise ValueError("SparseAdam(): parameters must have at least one dimension "
                             "(rows are slices along the first), got a 0-d parameter")
        lr, (b1, b2), eps = group["lr"], group["betas"], group["eps"]
        step, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
        step.add_(1)
        rows = g != 0
        if g.ndim > 1:
            rows = rows.any(dim=tuple(range(1, g.ndim)), keepdim=True)
        m.copy_(_C.where(rows, m * b1 + g * (1 - b1), m))
        v.copy_(_C.where(rows, v * b2 + g * g * (1 - b2), v))
        t = step.to(float64)
        size = ((1 - b2 ** t).sqrt() / (1 - b1 ** t)).to(p.dtype)
        update = _C.where(rows, m / (v.sqrt() + eps) * size, zeros((), dtype=p.dtype))
        self._descend_(p, update, lr)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyper-parameters and state saved by :meth:`state_dict` or by PyTorch's
        SparseAdam (whose integer step count becomes a 0-d tensor)."""
        super().load_state_dict(state_dict)
        for p, s in self.state.items():
            if "step" in s and not isinstance(s["step"], Tensor):
                s["step"] = zeros((), dtype=scalar_dtype(p)) + float(s["step"])
