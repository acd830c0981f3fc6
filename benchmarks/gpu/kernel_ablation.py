"""Which kernel choice makes benchmarks/gpu_models.py's GPT step slow on a GPU: the ``flow.jit``
step timed with each group of jflow's Pallas kernels switched off in turn (the xla kernel of
the op runs instead), beside PyTorch eager, in one process.

    python benchmarks/gpu/kernel_ablation.py [--layers 6] [--number 5]
    python benchmarks/gpu/kernel_ablation.py --device cpu --tiny   # a check of this script

Each variant is a fresh model and a fresh ``flow.jit`` (one whole-step compile, ~10 s on an
H200) from PyTorch's weights; its step-1 loss is printed next to its time so a variant that
computes something else shows. A diagnostic, not a results table: its output goes into
``results_gpu_models_*.txt`` with the conclusion drawn from it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gpu_models as g  # noqa: E402
import jax  # noqa: E402

import jflow as flow  # noqa: E402
from jflow.kernels import registry  # noqa: E402

GROUPS = {
    "attention": ("scaled_dot_product_attention", "scaled_dot_product_attention_grad"),
    "cross_entropy": ("sparse_softmax_cross_entropy", "sparse_softmax_cross_entropy_grad"),
    "norms": ("layer_norm", "layer_norm_grad", "rms_norm", "rms_norm_grad"),
    "softmax": ("softmax", "log_softmax", "softmax_grad", "log_softmax_grad"),
    "fused": ("fused_bias_add_activation",),
}


@contextmanager
def without_pallas(ops: tuple[str, ...]) -> Iterator[None]:
    """The ops' Pallas kernels dropped from the registry inside the block (a diagnostic
    reach into the registry's table; every compiled lowering is forgotten on the way in and
    out, as when a kernel is registered)."""
    table = registry._KERNELS
    saved = {op: list(table.get(op, ())) for op in ops}
    for op in ops:
        table[op] = [k for k in saved[op] if k.backend != "pallas"]
    registry._LOWERED.clear()
    jax.clear_caches()
    try:
        yield
    finally:
        table.update(saved)
        registry._LOWERED.clear()
        jax.clear_caches()


def time_steps(step: Any, wait: Any, number: int, repeat: int) -> tuple[float, float, float]:
    """(first step s, step-1 loss, median ms per step over ``repeat`` runs of ``number``)."""
    t0 = time.perf_counter()
    loss = float(wait(step(0)).item())
    first = time.perf_counter() - t0
    wait(step(1))
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = None
        for i in range(number):
            out = step(i)
        wait(out)
        runs.append((time.perf_counter() - t0) / number * 1e3)
    return first, loss, statistics.median(runs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--number", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--precision", default="high")
    ap.add_argument("--variants", default="default,all," + ",".join(GROUPS))
    a = ap.parse_args()
    import torch
    torch.set_float32_matmul_precision(a.precision)
    flow.set_float32_matmul_precision(a.precision)
    cfg = dict(g.TINY if a.tiny else g.FULL)
    if a.layers:
        cfg["n_layer"] = a.layers
    data, init = g.setup(torch, cfg)
    print(f"# GPT {cfg}, flow.jit, precision {a.precision!r}, jax {jax.__version__}, "
          f"torch {torch.__version__}, {jax.devices()[0].device_kind}", flush=True)
    tdev = a.device if a.device.startswith("cuda") else "cpu"
    step, wait = g.make(g.TORCH_EAGER, cfg, init, data, tdev)
    first, loss, ms = time_steps(step, lambda o: (wait(o), o)[1], a.number, a.repeat)
    print(f"{'torch eager':28s} {ms:9.2f} ms/step  first {first:6.2f} s  loss {loss:.6f}",
          flush=True)
    for v in a.variants.split(","):
        ops = () if v == "default" else (sum(GROUPS.values(), ()) if v == "all" else GROUPS[v])
        with without_pallas(ops):
            step, wait = g.make(g.JIT, cfg, init, data, a.device)
            first, loss, ms = time_steps(step, lambda o, w=wait: (w(o), o)[1],
                                         a.number, a.repeat)
        label = "flow.jit" + ("" if v == "default" else f" - pallas {v}")
        print(f"{label:28s} {ms:9.2f} ms/step  first {first:6.2f} s  loss {loss:.6f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
