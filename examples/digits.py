"""Train an MLP or a small CNN on scikit-learn's bundled handwritten digits (8x8 images, 10
classes, no download), eagerly and compiled with ``flow.nn.Graph``.

    pip install -e .[examples]          # scikit-learn
    python examples/digits.py                         # MLP, eager then nn.Graph
    python examples/digits.py --model cnn --mode graph --epochs 15
    python examples/digits.py --mode all --epochs 3   # eager, lazy (flow.lazy) and nn.Graph

One line per epoch: mean training loss, held-out test accuracy and training steps/s (the
first compiled epoch includes the XLA compilation). The same seed gives the same initial
weights and the same batches for both modes, so their curves can be compared line by line.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

import jflow as flow
from jflow import nn


def load_data(seed: int, test_fraction: float = 0.2) -> tuple[np.ndarray, ...]:
    """The digits, pixels scaled to [0, 1], images (N, 1, 8, 8) float32, labels int64, split
    into a training and a held-out test part by a seeded permutation (stratification is not
    needed: the classes are balanced)."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("examples/digits.py needs scikit-learn for its bundled digits data set: "
                 "pip install -e .[examples]   (or: pip install scikit-learn)")
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(len(y) * test_fraction))
    test, train = perm[:n_test], perm[n_test:]
    return x[train], y[train], x[test], y[test]


def build_model(kind: str) -> nn.Module:
    """``mlp``: 64-256-128-10 with ReLU; ``cnn``: two 3x3 conv + ReLU + 2x2 max-pool stages
    (16 and 32 channels) and a linear classifier. Both take (N, 1, 8, 8) images."""
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(),
                             nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
    if kind == "cnn":
        return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(128, 10))  # 16x4x4, then 32x2x2
    raise ValueError(f"unknown model {kind!r} (expected 'mlp' or 'cnn')")


def _graphs(model: nn.Module, loss_fn: nn.Module, opt: Any,
            sched: Any = None) -> tuple[Any, Any]:
    """The compiled training step (forward, backward, optimizer update in one executable; the
    scheduler, if any, steps after each call) and the compiled inference graph."""

    class TrainStep(flow.nn.Graph):
        def __init__(self) -> None:
            super().__init__()
            self.model, self.loss_fn = model, loss_fn
            self.add_optimizer(opt, lr_sch=sched)

        def build(self, x: flow.Tensor, y: flow.Tensor) -> flow.Tensor:
            loss = self.loss_fn(self.model(x), y)
            loss.backward()
            return loss

    class Eval(flow.nn.Graph):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def build(self, x: flow.Tensor) -> flow.Tensor:
            return self.model(x)

    return TrainStep(), Eval()


def train(kind: str = "mlp", mode: str = "eager", epochs: int = 10, seed: int = 0,
          batch_size: int = 64, lr: float = 3e-3, quiet: bool = False) -> dict[str, Any]:
    """Train one model in one mode; returns the final test accuracy, per-epoch losses and
    accuracies, the steps/s of the last epoch and the trained model.

    Every batch has ``batch_size`` rows (the remainder of each shuffled epoch is dropped), so
    the compiled step is traced once.
    """
    if mode not in ("eager", "lazy", "graph"):
        raise ValueError(f"unknown mode {mode!r} (expected 'eager', 'lazy' or 'graph')")
    xtr, ytr, xte, yte = load_data(seed)
    flow.manual_seed(seed)
    model = build_model(kind)
    loss_fn = nn.CrossEntropyLoss()
    opt = flow.optim.Adam(model.parameters(), lr=lr)
    steps_per_epoch = len(ytr) // batch_size
    # cosine decay to 0 over the run: the last epochs settle instead of jittering
    sched = flow.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * steps_per_epoch)
    step = evaluate = None
    if mode == "graph":
        step, evaluate = _graphs(model, loss_fn, opt, sched)
    x_test = flow.tensor(xte)
    rng = np.random.default_rng(seed + 1)
    losses, accs, rate = [], [], 0.0
    for epoch in range(1, epochs + 1):
        model.train()
        perm = rng.permutation(len(ytr))
        batches = [(flow.tensor(xtr[i]), flow.tensor(ytr[i]))
                   for i in np.split(perm[:steps_per_epoch * batch_size], steps_per_epoch)]
        t0 = time.perf_counter()
        epoch_losses = []
        # lazy: the same eager code, recorded; each step runs as one fused executable
        with flow.lazy(mode == "lazy"):
            for x, y in batches:
                if step is not None:
                    loss = step(x, y)
                else:
                    opt.zero_grad()
                    loss = loss_fn(model(x), y)
                    loss.backward()
                    opt.step()
                    sched.step()
                epoch_losses.append(loss)
            mean_loss = float(np.mean([v.item() for v in epoch_losses]))  # waits for the last
        rate = steps_per_epoch / (time.perf_counter() - t0)
        model.eval()
        if evaluate is not None:
            logits = evaluate(x_test)
        else:
            with flow.no_grad():
                logits = model(x_test)
        acc = float((logits.numpy().argmax(1) == yte).mean())
        losses.append(mean_loss)
        accs.append(acc)
        if not quiet:
            print(f"[{kind} {mode:5s}] epoch {epoch:3d}  loss {mean_loss:.4f}  "
                  f"test acc {acc:.4f}  {rate:8.1f} steps/s", flush=True)
    return {"accuracy": accs[-1], "losses": losses, "accuracies": accs,
            "steps_per_s": rate, "model": model}


def main(argv: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """Parse the command line, train in the requested mode(s), print a summary; returns the
    results per mode (for tests)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--mode", choices=["eager", "lazy", "graph", "both", "all"], default="both",
                    help="both: eager and graph; all: eager, lazy and graph")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    args = ap.parse_args(argv)
    modes = {"both": ["eager", "graph"], "all": ["eager", "lazy", "graph"]}.get(
        args.mode, [args.mode])
    results = {}
    for mode in modes:
        results[mode] = train(args.model, mode, args.epochs, args.seed, args.batch_size,
                              args.lr)
    for mode, r in results.items():
        print(f"{args.model} {mode}: test accuracy {r['accuracy']:.4f}, "
              f"{r['steps_per_s']:.0f} steps/s (last epoch)")
    return results


if __name__ == "__main__":
    main()
