"""Porting a PyTorch training script: the code below is written against a module called
``torch`` and runs unchanged on either library — on jflow because ``import jflow as torch``
is all a port needs.

    pip install -e .[examples]                   # scikit-learn, for the digits data
    python examples/torch_port.py                # the script on jflow
    python examples/torch_port.py --lib torch    # the same script on PyTorch (if installed)
    python examples/torch_port.py --compare      # both, from the same initial weights

What it uses, in PyTorch's idioms: a ResNet of BasicBlocks (``ReLU(inplace=True)``,
``out += identity``, ``nn.init.kaiming_normal_``), ``torch.utils.data.DataLoader`` over a
``TensorDataset``, Cutout augmentation written as an in-place slice assignment on a view of
the batch (``img[:, :, r:r+3, c:c+3] = 0``), ``SGD(momentum, weight_decay)`` with a ``StepLR``
schedule, ``model.train()`` / ``model.eval()`` around a ``torch.no_grad()`` evaluation, and a
``torch.save`` / ``torch.load`` round trip of the ``state_dict``.

``--compare`` runs PyTorch first, copies its initial weights into the jflow model and feeds
both the same batches and the same Cutout squares (drawn from NumPy): the first epoch's mean
loss agrees to float32 rounding, later ones drift apart by ~1e-3 as the libraries' rounding
differences compound through training (accuracies within a few points).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import numpy as np


def load_digits(seed: int) -> tuple[np.ndarray, ...]:
    """scikit-learn's bundled 8x8 digits in [0, 1], shaped (N, 1, 8, 8); 20% held out."""
    try:
        from sklearn.datasets import load_digits as sk_digits
    except ImportError:
        sys.exit("examples/torch_port.py needs scikit-learn for the digits data: "
                 "pip install -e .[examples]")
    d = sk_digits()
    x = (d.images / 16.0).astype(np.float32)[:, None]
    y = d.target.astype(np.int64)
    order = np.random.RandomState(seed).permutation(len(y))
    n_test = len(y) // 5
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def make_model(torch: Any, width: int = 16) -> Any:
    """A ResNet for 8x8 images, written as torchvision's is."""
    nn = torch.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int = 1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += identity
            return self.relu(out)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(1, width, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(width), nn.ReLU(inplace=True))
            self.layer1 = BasicBlock(width, width)
            self.layer2 = BasicBlock(width, 2 * width, stride=2)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(2 * width, 10)
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

        def forward(self, x):
            x = self.layer2(self.layer1(self.stem(x)))
            return self.fc(torch.flatten(self.pool(x), 1))

    return ResNet()


def cutout(torch: Any, img: Any, rng: np.random.RandomState, size: int = 3) -> Any:
    """Zero one random square per batch (Cutout), by assigning into a slice of the batch."""
    img = img.clone()
    r, c = rng.randint(0, 8 - size + 1, size=2)
    img[:, :, r:r + size, c:c + size] = 0.0
    return img


def train(torch: Any, data: tuple[np.ndarray, ...], *, epochs: int, seed: int,
          init: dict[str, np.ndarray] | None = None, quiet: bool = False) -> dict[str, Any]:
    """The training script proper; ``torch`` is the library module. Returns the per-epoch
    losses and accuracies, the initial weights (as NumPy) and the trained model."""
    from_np = torch.from_numpy
    torch.manual_seed(seed)
    model = make_model(torch)
    if init is not None:
        model.load_state_dict({k: from_np(v.copy()) for k, v in init.items()})
    start = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    xtr, ytr, xte, yte = data
    # the batch order comes from NumPy (not the library's generator) so that --compare sees
    # the same batches on both libraries
    order = np.random.RandomState(seed).permutation(len(ytr))
    dataset = torch.utils.data.TensorDataset(from_np(xtr[order]), from_np(ytr[order]))
    loader = torch.utils.data.DataLoader(dataset, batch_size=64, shuffle=False, drop_last=True)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, gamma=0.1,
                                                step_size=max(1, epochs - epochs // 3))
    rng = np.random.RandomState(seed + 1)
    losses, accs = [], []
    for epoch in range(epochs):
        model.train()
        t0, total, n = time.perf_counter(), 0.0, 0
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(cutout(torch, x, rng)), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * y.size(0)
            n += y.size(0)
        scheduler.step()
        model.eval()
        with torch.no_grad():
            pred = model(from_np(xte)).argmax(dim=1)
            acc = (pred == from_np(yte)).float().mean().item()
        losses.append(total / n)
        accs.append(acc)
        if not quiet:
            print(f"[{torch.__name__}] epoch {epoch + 1:2d}  loss {losses[-1]:.4f}  "
                  f"test acc {acc:.3f}  {time.perf_counter() - t0:.1f} s", flush=True)
    with tempfile.TemporaryDirectory() as tmp:  # the checkpoint round trip a script does
        path = os.path.join(tmp, "resnet.pt")
        torch.save(model.state_dict(), path)
        again = make_model(torch)
        again.load_state_dict(torch.load(path))
        again.eval()
        with torch.no_grad():  # on the whole test set (the evaluation's batch: same programs)
            same = bool((again(from_np(xte)) == model(from_np(xte))).all())
    assert same, "the reloaded model must compute what the trained one does"
    return {"losses": losses, "accuracy": accs, "init": start, "model": model}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", choices=["jflow", "torch"], default="jflow")
    p.add_argument("--compare", action="store_true",
                   help="run PyTorch then jflow from the same initial weights")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    data = load_digits(args.seed)
    if not args.compare:
        return {args.lib: train(importlib.import_module(args.lib), data, epochs=args.epochs,
                                seed=args.seed)}
    try:
        import torch
    except ImportError:
        sys.exit("--compare needs PyTorch: pip install torch")
    import jflow
    ref = train(torch, data, epochs=args.epochs, seed=args.seed)
    got = train(jflow, data, epochs=args.epochs, seed=args.seed, init=ref["init"])
    print("epoch  loss torch / jflow      test acc torch / jflow")
    for i in range(args.epochs):
        print(f"{i + 1:5d}  {ref['losses'][i]:.5f} / {got['losses'][i]:.5f}    "
              f"{ref['accuracy'][i]:.3f} / {got['accuracy'][i]:.3f}")
    return {"torch": ref, "jflow": got}


if __name__ == "__main__":
    main()
