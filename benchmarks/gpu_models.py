"""A GPT training step on a GPU: PyTorch and jflow, the same model source, side by side.

    python benchmarks/gpu_models.py                      # a GPU: GPT 6x768, T=1024, batch 8
    python benchmarks/gpu_models.py --device cpu --tiny  # a CPU check of this script

The model is benchmarks/real_models.py's GPT, written once against the PyTorch API, at a GPU's
size, on ``torch`` and on ``jflow``: pre-norm blocks, ``F.scaled_dot_product_attention(is_causal=
True)`` (jflow's Pallas flash attention on cuda), LayerNorm, GELU MLP, an untied LM head,
``F.cross_entropy`` (jflow's Pallas cross-entropy), AdamW. Every mode starts from PyTorch's
weights (seed 0) and sees the same batches; their step-1 losses must agree to ``--rtol``.

Float32 weights; ``--precision high`` (the default) lets matrix products use TF32 on both
sides, the way GPU training usually runs (``torch.set_float32_matmul_precision`` and
``flow.set_float32_matmul_precision``, the same call); ``--precision highest`` is both
libraries' own default, full float32 products. Modes: ``torch eager``,
``torch.compile`` (``--compile``; its compile takes a minute), ``jflow eager`` (op by op,
asynchronous dispatch), ``flow.jit`` (the whole step, one executable). Reported: ms per step
(the modes take turns, ``--repeat`` rounds of ``--number`` steps, medians; ratios to
PyTorch eager per round) and each mode's first step (compilation included; a fresh machine
has no compilation cache). Without a GPU it prints a skip line and exits 0 (unless
``--device cpu``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax  # noqa: E402
import real_models  # noqa: E402
from _timing import machine, median_ratio, round_robin, write_report  # noqa: E402

import jflow as flow  # noqa: E402

FULL = dict(vocab=50304, block=1024, n_layer=6, n_head=12, d=768, batch=8)
TINY = dict(vocab=64, block=16, n_layer=1, n_head=2, d=32, batch=2)
LR, WD = 3e-4, 0.1
TORCH_EAGER, TORCH_COMPILE, EAGER, JIT = "torch eager", "torch.compile", "jflow eager", "flow.jit"


def build(torch: Any, cfg: dict[str, Any], device: str) -> Any:
    """The GPT of benchmarks/real_models.py (its ``build``) at ``cfg``'s size, on ``device``;
    ``forward(x, y)`` is the loss."""
    return real_models.build(torch, "gpt", cfg).to(device)


def setup(torch: Any, cfg: dict[str, Any]) -> tuple[list, dict[str, np.ndarray]]:
    """``(batches, weights)``: two batches of (input, target) token ids (seed 0) and PyTorch's
    initial weights (seed 0), the start every mode shares."""
    rs = np.random.RandomState(0)
    data = []
    for _ in range(2):
        seq = rs.randint(0, cfg["vocab"], (cfg["batch"], cfg["block"] + 1)).astype(np.int64)
        data.append((seq[:, :-1].copy(), seq[:, 1:].copy()))
    torch.manual_seed(0)
    init = {k: v.detach().cpu().numpy().copy()
            for k, v in build(torch, cfg, "cpu").state_dict().items()}
    return data, init


def train_step(model: Any, opt: Any, x: Any, y: Any) -> Any:
    opt.zero_grad(set_to_none=True)
    loss = model(x, y)
    loss.backward()
    opt.step()
    return loss


def make(mode: str, cfg: dict[str, Any], init: dict[str, np.ndarray],
         data: list[tuple[np.ndarray, np.ndarray]], device: str) -> tuple[Any, Any]:
    """``(step, wait)``: ``step(i)`` runs the training step on batch ``i``."""
    if mode in (TORCH_EAGER, TORCH_COMPILE):
        import torch
        model = build(torch, cfg, device)
        model.load_state_dict({k: torch.from_numpy(v) for k, v in init.items()})
        opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
        fwd = torch.compile(model) if mode == TORCH_COMPILE else model
        tdata = [(torch.from_numpy(x).to(device), torch.from_numpy(y).to(device))
                 for x, y in data]

        def wait(loss: Any) -> Any:
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            return loss
        return (lambda i: train_step(fwd, opt, *tdata[i % len(tdata)])), wait
    model = build(flow, cfg, device)
    model.load_state_dict({k: flow.tensor(v) for k, v in init.items()})
    opt = flow.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
    fdata = [(flow.tensor(x, device=device), flow.tensor(y, device=device)) for x, y in data]
    params = list(model.parameters())
    def eager_step(x: Any, y: Any) -> Any:
        return train_step(model, opt, x, y)
    step = flow.jit(eager_step) if mode == JIT else eager_step
    return (lambda i: step(*fdata[i % len(fdata)])), \
        (lambda loss: jax.block_until_ready((loss, params)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="a tiny GPT (a check of the script)")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile")
    ap.add_argument("--precision", default="high", choices=["highest", "high", "medium"],
                    help="float32 matmul precision of both libraries")
    ap.add_argument("--jflow-modes", default=f"{EAGER},{JIT}")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--number", type=int, default=10)
    ap.add_argument("--rtol", type=float, default=2e-3, help="step-1 loss tolerance (TF32)")
    ap.add_argument("--out", default=None, help="also write the report to this file")
    a = ap.parse_args()
    if a.device.startswith("cuda") and not [d for d in jax.devices() if d.platform == "gpu"]:
        print("SKIP benchmarks/gpu_models.py: no GPU")
        return 0
    import torch
    torch.set_float32_matmul_precision(a.precision)
    flow.set_float32_matmul_precision(a.precision)
    cfg = TINY if a.tiny else FULL
    data, init = setup(torch, cfg)
    jmodes = [m for m in a.jflow_modes.split(",") if m]
    if set(jmodes) - {EAGER, JIT}:
        ap.error(f"--jflow-modes: expected a comma-separated subset of {EAGER!r}, {JIT!r}")
    modes = [TORCH_EAGER] + ([TORCH_COMPILE] if a.compile else []) + jmodes
    lines = [f"# GPT {cfg['n_layer']}x{cfg['d']}, {cfg['n_head']} heads, T={cfg['block']}, "
             f"batch {cfg['batch']}, vocab {cfg['vocab']}, float32, matmul precision "
             f"{a.precision!r} in both libraries, AdamW",
             f"# {machine()}; torch {torch.__version__}; device {a.device}"
             + (f" = {jax.devices()[0].device_kind}" if a.device.startswith("cuda") else "")]
    print("\n".join(lines), flush=True)
    fns, first = {}, {}
    for m in modes:
        step, wait = make(m, cfg, init, data, a.device)
        t0 = time.perf_counter()
        out = step(0)
        wait(out)
        loss = float(out.item())
        first[m] = (time.perf_counter() - t0, loss)
        fns[m] = (lambda s=step, n=[1]: (s(n[0]), n.__setitem__(0, n[0] + 1))[0], a.number, wait)
        line = f"{m:14s} first step {first[m][0]:7.2f} s (compile included), loss {loss:.6f}"
        print(line, flush=True)
        lines.append(line)
    ref = first[TORCH_EAGER][1]
    for m in modes:
        assert abs(first[m][1] - ref) <= a.rtol * abs(ref), f"{m}: step-1 loss {first[m][1]} " \
            f"!= torch eager's {ref}"
    med, runs = round_robin(fns, a.repeat, warmup=2)
    for m in modes:
        line = (f"{m:14s} {med[m] / 1e3:9.2f} ms/step  x torch eager "
                f"{median_ratio(runs, m, TORCH_EAGER):5.2f}")
        print(line, flush=True)
        lines.append(line)
    write_report(a.out, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
