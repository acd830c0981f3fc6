"""Lazy mode's compile policy, measured (``jflow.lazy_mode.compile_cache.COMPILE_ON_SIGHTING``):
compile a segment on its first sighting (1), run the first sighting op by op and compile on
the second (2), or the default "adaptive": at once when the segment has ops on shapes never
seen (op by op, each of them would compile), else on the second sighting.

    python benchmarks/lazy_policy.py [--steps 60]

Workload: SGD training steps of a 3-layer MLP (width 128) written as eager code under
``flow.lazy()``, each step's loss read. Three shape patterns of the batch, each run in a
fresh process per policy (no compiled segment carries over):

* fixed: batch 32 every step;
* a new batch size every step (32, 33, 34, ...): no segment key ever repeats;
* cycling through 4 batch sizes;
* batch 32, but a new arrangement of known ops every step (the MLP's hidden activation is
  picked at random per step among relu / tanh / sigmoid / gelu: 16 structures, each op and
  shape seen before, as in code with data-dependent Python control flow).

Reported: total seconds for the steps, segments compiled, and the first / median step; the
"(eager)" row runs the same steps without lazy mode (every op's executable compiles per new
shape there).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np


def run(policy: Any, pattern: str, steps: int) -> dict[str, float]:
    import jflow as flow
    from jflow.lazy_mode import compile_cache

    if policy != "eager":
        compile_cache.COMPILE_ON_SIGHTING = policy
    nn = flow.nn
    flow.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    opt = flow.optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(0)
    sizes = {"fixed": lambda i: 32, "new every step": lambda i: 32 + i,
             "4 sizes cycling": lambda i: 32 + 8 * (i % 4),
             "new arrangements": lambda i: 32}[pattern]
    acts = [flow.relu, flow.tanh, flow.sigmoid, flow.nn.functional.gelu]
    lin = [m for m in model if isinstance(m, nn.Linear)]

    def forward(x: Any) -> Any:
        if pattern != "new arrangements":
            return model(x)
        for k, m in enumerate(lin):
            x = m(x)
            if k < 2:
                x = acts[rng.integers(4)](x)
        return x
    if pattern == "new arrangements":  # every op and shape seen once before the timed steps
        for act in acts:
            with flow.no_grad():
                act(lin[1](act(lin[0](flow.tensor(np.zeros((32, 128), np.float32))))))
    times = []
    t_all = time.perf_counter()
    with flow.lazy(policy != "eager"):
        for i in range(steps):
            n = sizes(i)
            x = flow.tensor(rng.standard_normal((n, 128)).astype(np.float32))
            y = flow.tensor(rng.integers(0, 10, n))
            t = time.perf_counter()
            opt.zero_grad()
            loss = flow.nn.functional.cross_entropy(forward(x), y)
            loss.backward()
            opt.step()
            loss.item()
            times.append(time.perf_counter() - t)
    return {"total_s": time.perf_counter() - t_all, "compiles": compile_cache.STATS["compiles"],
            "first_ms": times[0] * 1e3, "median_ms": statistics.median(times) * 1e3}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        policy = args.child[0]
        print(json.dumps(run(int(policy) if policy.isdigit() else policy, args.child[1],
                             args.steps)))
        return
    from _timing import machine  # (benchmarks/ is on sys.path when run as a script)
    print(f"{machine()}; {args.steps} lazy SGD steps of an MLP (128 wide), loss read every "
          f"step; a fresh process per run")
    print(f"{'pattern':18s} {'compile on':>11s} {'total s':>8s} {'compiles':>9s} "
          f"{'first ms':>9s} {'median ms':>10s}")
    for pattern in ("fixed", "new every step", "4 sizes cycling", "new arrangements"):
        for policy in ("eager", "1", "2", "adaptive"):
            out = subprocess.run([sys.executable, __file__, "--steps", str(args.steps),
                                  "--child", policy, pattern], check=True,
                                 capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            label = {"1": "1st sight", "2": "2nd sight", "eager": "(eager)"}.get(policy, policy)
            print(f"{pattern:18s} {label:>11s} {r['total_s']:8.2f} {r['compiles']:9d} "
                  f"{r['first_ms']:9.1f} {r['median_ms']:10.2f}", flush=True)


if __name__ == "__main__":
    main()
