"""Eager ``optimizer.step()`` of every optimizer over a small transformer's 52 parameters
(4 layers, d=128: the shapes of real_models.py's GPT), jflow fused (one executable per step:
``jflow/lazy_mode/optimizer_step.py``), jflow op by op
(``flow.config.set_fused_optimizer_step(False)``) and PyTorch CPU at one thread (its default
``foreach`` implementations), median µs per waited step, interleaved rounds in one run.

    python benchmarks/optimizer_steps.py [--repeat 7] [--number 20]

The gradients are set, not computed: this times the update alone. Ratio columns: fused /
op by op and fused / torch in the same round.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from _timing import machine, median_ratio, options, round_robin  # noqa: E402  (benchmarks/ on sys.path)

import jflow as flow

#: the GPT benchmark's parameters: embeddings, 4 x (2 layer norms, qkv, proj, 2-layer MLP)
SHAPES = [(256, 128), (64, 128)] + [(128,), (128,), (384, 128), (384,), (128, 128), (128,),
                                     (128,), (128,), (512, 128), (512,), (128, 512),
                                     (128,)] * 4 + [(128,), (128,)]

OPTIMIZERS = [("SGD", dict(lr=0.01, momentum=0.9)), ("Adam", dict(lr=1e-3)),
              ("AdamW", dict(lr=1e-3)), ("RMSprop", dict(lr=1e-3)),
              ("Adagrad", dict(lr=0.01)), ("Adadelta", dict()), ("Adamax", dict(lr=2e-3)),
              ("NAdam", dict(lr=2e-3)), ("RAdam", dict(lr=1e-3)), ("ASGD", dict(lr=0.01))]


def _flow_step(name: str, kw: dict, params: list, grads: list, fused: bool) -> Any:
    ps = [flow.nn.Parameter(flow.tensor(p)) for p in params]
    for p, g in zip(ps, grads):
        p.grad = flow.tensor(g)
    opt = getattr(flow.optim, name)(ps, **kw)

    def step() -> Any:
        old = flow.config.set_fused_optimizer_step(fused)
        try:
            opt.step()
        finally:
            flow.config.set_fused_optimizer_step(old)
        return ps[0].detach()
    return step


def _torch_step(torch: Any, name: str, kw: dict, params: list, grads: list) -> Any:
    ps = [torch.nn.Parameter(torch.tensor(p)) for p in params]
    for p, g in zip(ps, grads):
        p.grad = torch.tensor(g)
    opt = getattr(torch.optim, name)(ps, **kw)
    return opt.step


def main() -> None:
    args = options(__doc__, number=20)
    rng = np.random.default_rng(0)
    params = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    print(machine() + f"; eager step of {len(SHAPES)} float32 parameters "
          f"({sum(int(np.prod(s)) for s in SHAPES):,} values), gradients set, waited for")
    print(f"{'optimizer':9s} {'fused':>9s} {'op by op':>9s} {'torch':>9s}   fused/op-by-op "
          f"fused/torch")
    for name, kw in OPTIMIZERS:
        fns = {"fused": (_flow_step(name, kw, params, grads, True), args.number,
                         lambda t: t.numpy()),
               "ops": (_flow_step(name, kw, params, grads, False), args.number,
                       lambda t: t.numpy())}
        if torch is not None:
            fns["torch"] = (_torch_step(torch, name, kw, params, grads), args.number, None)
        r, runs = round_robin(fns, args.repeat, warmup=5)
        line = f"{name:9s} {r['fused']:9.1f} {r['ops']:9.1f} "
        line += f"{r['torch']:9.1f}" if "torch" in r else f"{'-':>9s}"
        line += f"   {median_ratio(runs, 'fused', 'ops'):14.2f}"
        if "torch" in r:
            line += f" {median_ratio(runs, 'fused', 'torch'):11.2f}"
        print(line)


if __name__ == "__main__":
    main()
