"""When a lazy ``backward()`` runs the pending forward first (``segment.SPLIT_FLOPS``),
measured: the same eager training step under ``flow.lazy()``, each step waited for, with
the forward split off (it runs asynchronously while the backward and the optimizer step are
recorded; they run as a second executable at ``step()``) against the whole step fused into
one executable — median µs per step, interleaved rounds, median of per-round ratios.

    python benchmarks/lazy_split.py [--repeat 9] [--number 200]

Cases: SGD steps (momentum 0) of a 3-layer MLP (``Linear-ReLU-Linear-ReLU-Linear``, MSE) at
widths 1 to 128 (batch 32; width 1 with batch 1), and a chain of 10 elementwise ops + sum
+ backward (no optimizer) of 16 and 100,000 floats. The estimate the ops declare
(``OpDef.flops``, jflow/ops/cost.py) gives each case's forward multiply-adds: the default
threshold lies between the widths where splitting loses and where it wins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from _timing import machine, median_ratio, options, round_robin  # noqa: E402
from eager_backward import _mlp, chain, train_step  # noqa: E402

import jflow as flow
from jflow.lazy_mode import segment

FUSED, SPLIT = "fused", "split"


def mlp_case(width: int, batch: int) -> tuple[int, dict[str, Callable[[], Any]]]:
    """(forward multiply-adds, {policy: waited lazy step})."""
    rng = np.random.default_rng(0)
    data = rng.standard_normal((batch, width)).astype(np.float32)
    x, t = flow.tensor(data), flow.tensor(data[::-1].copy())
    fns = {}
    for policy in (FUSED, SPLIT):
        flow.manual_seed(0)
        model = _mlp(flow.nn, width)
        opt = flow.optim.SGD(model.parameters(), lr=0.01)
        fns[policy] = _stepper(policy, lambda m=model, o=opt: train_step(
            m, o, x, t, flow.nn.functional.mse_loss))
    return 3 * batch * width * width, fns


def chain_case(n: int) -> tuple[int, dict[str, Callable[[], Any]]]:
    rng = np.random.default_rng(0)
    fns = {}
    for policy in (FUSED, SPLIT):
        x = flow.tensor(rng.standard_normal(n).astype(np.float32), requires_grad=True)
        c = flow.tensor(rng.standard_normal(n).astype(np.float32))

        def step(x: Any = x, c: Any = c) -> Any:
            x.grad = None
            chain(x, c).backward()
            return x.grad
        fns[policy] = _stepper(policy, step)
    return 0, fns


def _stepper(policy: str, step: Callable[[], Any]) -> Callable[[], Any]:
    """``step`` under ``flow.lazy()`` with the policy's threshold (0: always split; None:
    never), its result waited for."""
    threshold = 0 if policy == SPLIT else 1 << 62

    def run() -> Any:
        old, segment.SPLIT_FLOPS = segment.SPLIT_FLOPS, threshold
        try:
            with flow.lazy():
                out = step()
        finally:
            segment.SPLIT_FLOPS = old
        return jax.block_until_ready(out)
    return run


def main() -> None:
    args = options(__doc__, number=200, repeat=9)
    print(f"{machine()}; median µs per waited lazy step; default SPLIT_FLOPS "
          f"{segment.SPLIT_FLOPS}")
    print(f"{'case':30s} {'fwd mult-adds':>13s} {'fused':>9s} {'split':>9s} {'split/fused':>11s}")
    cases = [(f"MLP SGD step, width {w}", *mlp_case(w, 32 if w > 1 else 1))
             for w in (1, 8, 16, 32, 64, 128)]
    cases += [(f"chain + backward ({n})", *chain_case(n)) for n in (16, 100_000)]
    for name, flops, fns in cases:
        number = args.number if "100000" not in name else max(10, args.number // 10)
        r, runs = round_robin({k: (f, number, None) for k, f in fns.items()}, args.repeat)
        print(f"{name:30s} {flops:13d} {r[FUSED]:9.1f} {r[SPLIT]:9.1f} "
              f"{median_ratio(runs, SPLIT, FUSED):11.2f}", flush=True)


if __name__ == "__main__":
    main()
