"""``optim.LBFGS``: limited-memory BFGS with an optional strong-Wolfe line search.

Written from Nocedal & Wright, *Numerical Optimization* (2nd ed.): the two-loop recursion
(Algorithm 7.4) with the initial Hessian scaling ``gamma = s'y / y'y`` (eq. 7.20), and the
line search for the strong Wolfe conditions (Algorithms 3.5 and 3.6) with cubic
interpolation (eq. 3.59). The step semantics follow ``torch.optim.LBFGS``: ``step(closure)``
runs up to ``max_iter`` iterations, ``closure()`` re-evaluates the loss and the gradients,
and the state (``func_evals``, ``n_iter``, the curvature pairs...) lives in
``state[first parameter]``.

LBFGS is eager only: the closure is called a data-dependent number of times and the
stopping tests read values back, so it cannot be traced into a compiled step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import jax

from .. import _C
from ..autograd import no_grad
from ..creation import zeros
from ..tensor import Tensor
from .optimizer import Optimizer

__all__ = ["LBFGS"]

_C1, _C2, _MAX_LS = 1e-4, 0.9, 25  # sufficient decrease, curvature, evaluations per search


def _cubic_min(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
               lo: float | None = None, hi: float | None = None) -> float:
    """The minimizer in ``[lo, hi]`` (default: between ``x1`` and ``x2``) of the cubic
    through ``(x1, f1)``, ``(x2, f2)`` with slopes ``g1``, ``g2`` (N&W eq. 3.59); the middle
    of the interval when the cubic has no minimizer."""
    if lo is None or hi is None:
        lo, hi = x1, x2
    lo, hi = min(lo, hi), max(lo, hi)
    if x1 != x2:
        d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
        disc = d1 * d1 - g1 * g2
        if disc >= 0:
            d2 = math.copysign(math.sqrt(disc), x2 - x1)
            den = g2 - g1 + 2 * d2
            if den != 0:
                x = x2 - (x2 - x1) * (g2 + d2 - d1) / den
                if math.isfinite(x):
                    return min(max(x, lo), hi)
    return (lo + hi) / 2


def _strong_wolfe(evaluate: Callable[[float], tuple[float, Tensor]], t: float, d: Tensor,
                  f0: float, g0: Tensor, gtd0: float, tolerance_change: float
                  ) -> tuple[float, Tensor, float, int]:
    """Step length ``t`` along ``d`` satisfying the strong Wolfe conditions
    ``f(t) <= f0 + c1 t gtd0`` and ``|g(t)'d| <= c2 |gtd0|`` (N&W Algorithm 3.5: grow the
    step by cubic extrapolation until a bracket is found; Algorithm 3.6: zoom into it by
    cubic interpolation, safeguarded away from the bracket's ends). At most 25
    evaluations; as PyTorch, the test ``f(t_i) >= f(t_{i-1})`` starts at the third trial.
    Returns ``(loss, flat gradient, t, evaluations)`` at the accepted step."""
    d_max = float(d.abs().max())

    def probe(a: float) -> list[Any]:
        f, g = evaluate(a)
        return [a, f, g, float(g.dot(d))]

    def armijo_fails(a: float, f: float) -> bool:
        return not f <= f0 + _C1 * a * gtd0  # (a NaN loss fails too)

    prev = [0.0, f0, g0, gtd0]
    cur = probe(t)
    evals = 1
    bracket: list[list[Any]] | None = None
    while evals <= _MAX_LS:
        a, f, _, gtd = cur
        if armijo_fails(a, f) or (evals > 2 and f >= prev[1]):
            bracket = [prev, cur]
            break
        if abs(gtd) <= -_C2 * gtd0:
            return cur[1], cur[2], a, evals
        if gtd >= 0:
            bracket = [prev, cur]
            break
        nxt = _cubic_min(prev[0], prev[1], prev[3], a, f, gtd,
                         a + 0.01 * (a - prev[0]), 10 * a)
        prev, cur = cur, probe(nxt)
        evals += 1
    if bracket is None:  # no bracket within the budget: the better of 0 and the last trial
        bracket = [[0.0, f0, g0, gtd0], cur]
    # zoom: bracket[low] has the lowest loss (satisfying sufficient decrease)
    low = 0 if bracket[0][1] <= bracket[1][1] else 1
    stuck = False
    while evals <= _MAX_LS:
        a0, a1 = bracket[0][0], bracket[1][0]
        left, right = min(a0, a1), max(a0, a1)
        if (right - left) * d_max < tolerance_change:
            break
        a = _cubic_min(*bracket[0][:2], bracket[0][3], *bracket[1][:2], bracket[1][3])
        # safeguard: a trial too close to an end of the bracket makes little progress;
        # the second time in a row (or at an end) move it 10% of the width inside
        margin = 0.1 * (right - left)
        if min(right - a, a - left) < margin:
            if stuck or a >= right or a <= left:
                a = right - margin if abs(a - right) < abs(a - left) else left + margin
                stuck = False
            else:
                stuck = True
        else:
            stuck = False
        cur = probe(a)
        evals += 1
        if armijo_fails(a, cur[1]) or cur[1] >= bracket[low][1]:
            bracket[1 - low] = cur
            low = 0 if bracket[0][1] <= bracket[1][1] else 1
        else:
            done = abs(cur[3]) <= -_C2 * gtd0
            if not done and cur[3] * (bracket[1 - low][0] - bracket[low][0]) >= 0:
                bracket[1 - low] = bracket[low]
            bracket[low] = cur
            if done:
                break
    a, f, g, _ = bracket[low]
    return f, g, a, evals


class LBFGS(Optimizer):
    """L-BFGS, as ``torch.optim.LBFGS``: ``step(closure)`` runs at most ``max_iter``
    iterations (and ``max_eval`` closure calls, default ``max_iter * 5 // 4``)::

        d = -H g   (two-loop recursion over the last history_size pairs (s, y) with
                    s'y > 1e-10; H0 = s'y / y'y)
        t = lr (first iteration ever: min(1, 1 / |g|_1) * lr);  x += t d
          (line_search_fn="strong_wolfe": t from a strong-Wolfe search started at that t)

    An iteration stops the step when ``max|g| <= tolerance_grad``, ``max|t d| <=
    tolerance_change``, the loss changed by less than ``tolerance_change``, or ``g'd >
    -tolerance_change``. Only one parameter group is supported. Eager only: inside a
    compiled step (flow.jit / nn.Graph) ``step`` raises.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1, max_iter: int = 20,
                 max_eval: int | None = None, tolerance_grad: float = 1e-7,
                 tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) or not 0.0 <= lr:
            raise ValueError(f"LBFGS(): lr must be a non-negative float, got {lr}")
        if not isinstance(max_iter, int) or max_iter < 1:
            raise ValueError(f"LBFGS(): max_iter must be a positive int, got {max_iter!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        if not isinstance(max_eval, int) or max_eval < 1:
            raise ValueError(f"LBFGS(): max_eval must be a positive int, got {max_eval!r}")
        if not isinstance(history_size, int) or history_size < 1:
            raise ValueError(f"LBFGS(): history_size must be a positive int, got "
                             f"{history_size!r}")
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS(): line_search_fn must be None or 'strong_wolfe', got "
                             f"{line_search_fn!r}")
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add the (only) parameter group; a second one raises ValueError."""
        if self.param_groups:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        super().add_param_group(param_group)

    @property
    def _params(self) -> list[Tensor]:
        return self.param_groups[0]["params"]

    def _flat_grad(self) -> Tensor:
        parts = [(p.grad if p.grad is not None else zeros(tuple(p.shape), dtype=p.dtype))
                 .reshape(-1) for p in self._params]
        return _C.cat(parts) if len(parts) > 1 else parts[0].clone()

    def _add(self, t: float, d: Tensor) -> None:
        """``params += t * d`` (``d`` flat, split over the parameters in order)."""
        offset = 0
        for p in self._params:
            n = p.numel()
            p.add_(d[offset:offset + n].reshape(tuple(p.shape)), alpha=t)
            offset += n

    def _set(self, values: list[Tensor]) -> None:
        for p, v in zip(self._params, values):
            p.copy_(v)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:  # noqa: C901
        """Up to ``max_iter`` L-BFGS iterations; ``closure()`` must zero the gradients,
        compute the loss, call ``backward()`` and return the loss. Returns the loss of the
        first evaluation (before this step's updates)."""
        if any(isinstance(p._value, jax.core.Tracer) for p in self._params):
            raise RuntimeError("LBFGS.step() cannot run inside a compiled step (flow.jit / "
                               "nn.Graph): it calls the closure a data-dependent number of "
                               "times; call it eagerly")
        if closure is None:
            raise RuntimeError("LBFGS.step() requires a closure that re-evaluates the model "
                               "and returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history, line_search = group["history_size"], group["line_search_fn"]
        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        def evaluate() -> tuple[Any, float, Tensor]:
            out = self._closure(closure)
            with no_grad():
                return out, float(out), self._flat_grad()

        orig_loss, loss, flat_grad = evaluate()
        evals = 1
        state["func_evals"] += 1
        if float(flat_grad.abs().max()) <= tol_grad:
            return orig_loss
        d, t = state.get("d"), state.get("t")
        # (fresh lists: a state dict taken earlier keeps its own curvature pairs)
        old_dirs, old_stps, ro = (list(state.get(k) or []) for k in ("old_dirs", "old_stps",
                                                                      "ro"))
        h_diag, prev_grad = state.get("H_diag"), state.get("prev_flat_grad")
        prev_loss, al = state.get("prev_loss"), state.get("al")
        n_iter = 0
        with no_grad():
            while n_iter < max_iter:
                n_iter += 1
                state["n_iter"] += 1
                if state["n_iter"] == 1:
                    d = -flat_grad
                    old_dirs, old_stps, ro, h_diag = [], [], [], 1
                else:
                    y = flat_grad - prev_grad
                    s = d * t
                    ys = y.dot(s)
                    if float(ys) > 1e-10:  # keep the pair only where the curvature is positive
                        if len(old_dirs) == history:
                            old_dirs.pop(0)
                            old_stps.pop(0)
                            ro.pop(0)
                        old_dirs.append(y)
                        old_stps.append(s)
                        ro.append(1.0 / ys)
                        h_diag = ys / y.dot(y)
                    # two-loop recursion: d = -H g
                    q = -flat_grad
                    al = [None] * len(old_dirs)
                    for i in range(len(old_dirs) - 1, -1, -1):
                        al[i] = old_stps[i].dot(q) * ro[i]
                        q = q - old_dirs[i] * al[i]
                    d = q * h_diag
                    for i in range(len(old_dirs)):
                        beta = old_dirs[i].dot(d) * ro[i]
                        d = d + old_stps[i] * (al[i] - beta)
                prev_grad = flat_grad.clone()
                prev_loss = loss
                if state["n_iter"] == 1:
                    t = min(1.0, 1.0 / float(flat_grad.abs().sum())) * lr
                else:
                    t = lr
                gtd = float(flat_grad.dot(d))
                if gtd > -tol_change:  # not a descent direction
                    break
                ls_evals = 0
                if line_search == "strong_wolfe":
                    x0 = [p.clone() for p in self._params]

                    def along(a: float, x0: list[Tensor] = x0, d: Tensor = d
                              ) -> tuple[float, Tensor]:
                        self._add(a, d)
                        _, f, g = evaluate()
                        self._set(x0)
                        return f, g

                    loss, flat_grad, t, ls_evals = _strong_wolfe(along, t, d, loss, flat_grad,
                                                                 gtd, tol_change)
                    self._add(t, d)
                    converged = float(flat_grad.abs().max()) <= tol_grad
                else:
                    self._add(t, d)
                    converged = False
                    if n_iter != max_iter:
                        _, loss, flat_grad = evaluate()
                        converged = float(flat_grad.abs().max()) <= tol_grad
                        ls_evals = 1
                evals += ls_evals
                state["func_evals"] += ls_evals
                if (n_iter == max_iter or evals >= max_eval or converged
                        or float((d * t).abs().max()) <= tol_change
                        or abs(loss - prev_loss) < tol_change):
                    break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_grad, prev_loss=prev_loss, al=al)
        return orig_loss

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyper-parameters and state saved by :meth:`state_dict` (or by torch's
        LBFGS, with tensors converted): flat direction/gradient tensors and the lists of
        curvature pairs are copied as they are."""
        if not isinstance(state_dict, dict) or "param_groups" not in state_dict \
                or "state" not in state_dict:
            raise ValueError("LBFGS.load_state_dict(): state_dict must be a dict with "
                             "'state' and 'param_groups'")
        saved = state_dict["param_groups"]
        if len(saved) != 1 or len(saved[0]["params"]) != len(self._params):
            raise ValueError(f"LBFGS.load_state_dict(): expected one parameter group of "
                             f"{len(self._params)} parameters, got "
                             f"{[len(g['params']) for g in saved]}")
        id_map = dict(zip(saved[0]["params"], self._params))

        def copy(v: Any) -> Any:
            if isinstance(v, Tensor):
                return v.to(copy=True)
            if isinstance(v, list):
                return [copy(x) for x in v]
            return v

        self.state = {id_map[int(k)]: {n: copy(v) for n, v in s.items()}
                      for k, s in state_dict["state"].items() if int(k) in id_map}
        for k, v in saved[0].items():
            if k != "params":
                self.param_groups[0][k] = v
