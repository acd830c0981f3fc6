"""An eager Adam training step whose learning rate changes every step (a scheduler) vs. one
whose learning rate is constant, jflow and PyTorch CPU, median µs per waited step,
interleaved rounds in one run.

    python benchmarks/optimizer_lr.py [--repeat 7] [--number 100]

What it guards: a new learning rate must not cost a ``device_put`` of its own — on JAX's
asynchronous CPU runtime that transfer waits for the computations queued before it, so a
scheduler stalled every step (+47% per step of this MLP before: the lr now goes to the fused
``adam_update`` call as host data, jflow/optim/adam.py). Ratio columns: changing / constant
in the same round (PyTorch's is ~1: its lr is a Python float).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from _timing import machine, median_ratio, options, round_robin  # noqa: E402  (benchmarks/ on sys.path)

import jflow as flow


def _mlp(nn: Any) -> Any:
    return nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                         nn.Linear(128, 128))


def stepper(lib: Any, model: Any, opt: Any, data: Any, target: Any, change: bool) -> Any:
    """One Adam step (written once for jflow and torch); ``change``: a new lr first."""
    count = [0]

    def step() -> Any:
        if change:
            count[0] += 1
            for g in opt.param_groups:
                g["lr"] = 1e-3 / (1 + 1e-4 * count[0])
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(model(data), target)
        loss.backward()
        opt.step()
        return [p.detach() for p in model.parameters()] if lib is flow else loss
    return step


def main() -> None:
    args = options(__doc__, number=100)
    rng = np.random.default_rng(0)
    batch = rng.standard_normal((32, 128)).astype(np.float32)
    fns = {}
    for change in (True, False):
        model = _mlp(flow.nn)
        opt = flow.optim.Adam(model.parameters(), lr=1e-3)
        fns[f"jflow {'changing' if change else 'constant'}"] = (
            stepper(flow, model, opt, flow.tensor(batch), flow.tensor(batch[::-1].copy()),
                    change), args.number, jax.block_until_ready)
    try:
        import torch
        torch.set_num_threads(1)
        for change in (True, False):
            model = _mlp(torch.nn)
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            fns[f"torch {'changing' if change else 'constant'}"] = (
                stepper(torch, model, opt, torch.tensor(batch),
                        torch.tensor(batch[::-1].copy()), change), args.number, None)
    except ImportError:
        pass
    print(machine() + "; eager Adam step of a 3-layer MLP (32x128), every step waited for")
    r, runs = round_robin(fns, args.repeat)
    for lib in ("jflow", "torch"):
        if f"{lib} changing" in r:
            print(f"{lib:6s} changing lr {r[f'{lib} changing']:8.1f} µs   constant lr "
                  f"{r[f'{lib} constant']:8.1f} µs   changing/constant "
                  f"{median_ratio(runs, f'{lib} changing', f'{lib} constant'):.2f}")


if __name__ == "__main__":
    main()
