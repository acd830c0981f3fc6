"""Where a GPT training step's time goes on a GPU: a ``jax.profiler`` trace of ``--steps``
steps of benchmarks/gpu_models.py's GPT (``flow.jit`` or eager), summarised on the machine:
per trace process (the GPU's streams, the host threads), the events of most total time.

    python benchmarks/gpu/profile_step.py [--mode jit|eager] [--layers 6] [--top 30]
    python benchmarks/gpu/profile_step.py --device cpu --tiny     # a check of this script

Only the summary is printed (a lent GPU's output comes back as text); ``--keep DIR`` keeps
the Perfetto trace too.
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import gpu_models as g  # noqa: E402
import jax  # noqa: E402

import jflow as flow  # noqa: E402


def summarise(trace_file: str, top: int) -> str:
    with gzip.open(trace_file, "rt") as f:
        events = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    per: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    count: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            p = names.get(e["pid"], str(e["pid"]))
            per[p][e["name"]] += e["dur"]
            count[p][e["name"]] += 1
    lines = []
    for p, c in sorted(per.items(), key=lambda kv: -sum(kv[1].values())):
        lines.append(f"== {p}: {sum(c.values()) / 1e3:.1f} ms in {sum(count[p].values())} events")
        for name, us in c.most_common(top):
            lines.append(f"  {us / 1e3:9.2f} ms  x{count[p][name]:<5d} {name[:110]}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--mode", default="jit", choices=["jit", "eager"])
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--precision", default="high")
    ap.add_argument("--keep", default=None, help="copy the Perfetto trace here")
    a = ap.parse_args()
    import torch
    flow.set_float32_matmul_precision(a.precision)
    cfg = dict(g.TINY if a.tiny else g.FULL)
    if a.layers:
        cfg["n_layer"] = a.layers
    seq = np.random.RandomState(0).randint(0, cfg["vocab"], (cfg["batch"], cfg["block"] + 1))
    data = [(seq[:, :-1].astype(np.int64), seq[:, 1:].astype(np.int64))]
    torch.manual_seed(0)
    init = {k: v.detach().numpy().copy()
            for k, v in g.build(torch, cfg, "cpu").state_dict().items()}
    step, wait = g.make(g.JIT if a.mode == "jit" else g.EAGER, cfg, init, data, a.device)
    for i in range(2):
        wait(step(i))
    d = tempfile.mkdtemp(prefix="jflow-profile-")
    with jax.profiler.trace(d, create_perfetto_trace=True):
        for i in range(a.steps):
            wait(step(i))
    (trace,) = glob.glob(os.path.join(d, "**", "perfetto_trace.json.gz"), recursive=True)
    print(f"# {a.steps} steps of the GPT ({cfg}), {a.mode}, on {a.device}, jax {jax.__version__}")
    print(summarise(trace, a.top))
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        shutil.copy(trace, a.keep)
    shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
