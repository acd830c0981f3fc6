"""The PyTorch ecosystem's own models training on jflow, unmodified, against PyTorch (issue 40's
"real models", from the libraries users' models live in) — ms per training step and ratios
to PyTorch eager, first-3-step times, and the step-1 loss of every mode (checked equal).

    python benchmarks/ecosystem_models.py                  # every model below (~10 min)
    python benchmarks/ecosystem_models.py --models gpt2,mobilenet --modes "jflow eager"

``benchmarks/results_ecosystem_models_cpu.txt`` holds the runs' output. No timing is asserted
anywhere; the libraries' models are checked against PyTorch by tests/test_ecosystem.py.

Each model is built by its library (HF transformers, timm, torchvision, x-transformers) from a
config written here (no downloads: ``HF_HUB_OFFLINE=1``), at sizes a CPU trains in tens of
milliseconds a step. The jflow halves run the library's own code through
``jflow.mock_torch`` (``import torch`` is jflow), so every op, module and optimizer the
library uses is jflow's. One training step: ``zero_grad``, the library model's loss,
``backward``, ``AdamW.step``, without dropout (the configs' dropout rates 0, dropout modules in
eval mode: the two libraries' random streams differ, and the losses must agree).

Modes (columns): PyTorch eager at ONE thread (the reference, as in real_models.py: on these
shared 2-core VMs PyTorch's OpenMP pool at 2 threads was pathological on some hours); jflow
eager; jflow lazy (``with flow.lazy():`` around the steps); ``torch.compile`` of the step
function, which on jflow is ``flow.compile`` (flow.jit, docs/compile.md). PyTorch's own
torch.compile is not run (tens of seconds per model; real_models.py has it).

Every mode of every model runs in a fresh process (mock_torch replaces ``torch`` process-
wide), which writes (PyTorch) or reads (jflow) the model's weights and makes the same batches
(NumPy, seed 0). In a process: 3 steps timed together, each loss read (``first 3 steps``:
compilation included, warm JAX persistent cache after the first round), 2 more steps, then
``--repeat`` runs of 4 steps; the process's figure is the median run. The processes take
turns, model by model, for ``--rounds`` rounds, and a mode's ratio is the median over rounds
of its time / PyTorch's in the same round: a load change on a shared machine hits both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TORCH, EAGER, LAZY, JIT = "torch eager", "jflow eager", "jflow lazy", "jflow torch.compile"
MODES = (TORCH, EAGER, LAZY, JIT)

# name -> (what it is, library, code making `model`, batch, `loss` from `model`, `x`, `y`)
_IMG = "img"
_TOK = "tok"
MODELS = {
    "gpt2": ("HF GPT-2 4x128, T=64, batch 8", "transformers",
             "model = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=4, "
             "n_embd=128, n_head=4, vocab_size=256, n_positions=64, resid_pdrop=0.0, "
             "embd_pdrop=0.0, attn_pdrop=0.0))",
             (_TOK, 8), "model(input_ids=x, labels=x).loss"),
    "llama": ("HF Llama 4x128 (GQA 4/2), T=64, batch 8", "transformers",
              "model = transformers.LlamaForCausalLM(transformers.LlamaConfig("
              "num_hidden_layers=4, hidden_size=128, intermediate_size=344, "
              "num_attention_heads=4, num_key_value_heads=2, vocab_size=256, "
              "max_position_embeddings=64))",
              (_TOK, 8), "model(input_ids=x, labels=x).loss"),
    "bert": ("HF BERT 4x128, T=64, batch 8, classifier", "transformers",
             "model = transformers.BertForSequenceClassification(transformers.BertConfig("
             "num_hidden_layers=4, hidden_size=128, intermediate_size=512, "
             "num_attention_heads=4, vocab_size=256, max_position_embeddings=64, num_labels=10, "
             "hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))",
             (_TOK, 8), "model(input_ids=x, labels=y).loss"),
    "vit": ("timm ViT-Tiny/16 depth 4, 64x64, batch 16", "timm",
            "model = timm.create_model('vit_tiny_patch16_224', img_size=64, depth=4, "
            "num_classes=10)",
            (_IMG, 16), "F.cross_entropy(model(x), y)"),
    "convnext": ("timm ConvNeXt-Atto, 64x64, batch 16", "timm",
                 "model = timm.create_model('convnext_atto', num_classes=10)",
                 (_IMG, 16), "F.cross_entropy(model(x), y)"),
    "mobilenet": ("torchvision MobileNetV3-Small, 64x64, batch 16", "torchvision",
                  "model = torchvision.models.mobilenet_v3_small(num_classes=10)",
                  (_IMG, 16), "F.cross_entropy(model(x), y)"),
    "efficientnet": ("timm EfficientNet-B0, 64x64, batch 8", "timm",
                     "model = timm.create_model('efficientnet_b0', num_classes=10)",
                     (_IMG, 8), "F.cross_entropy(model(x), y)"),
    "xtransformers": ("x-transformers decoder 4x128, T=64, batch 8", "x_transformers",
                      "model = x_transformers.TransformerWrapper(num_tokens=256, "
                      "max_seq_len=64, attn_layers=x_transformers.Decoder(dim=128, depth=4, "
                      "heads=4))",
                      (_TOK, 8), "F.cross_entropy(model(x).reshape(-1, 256), x.reshape(-1))"),
}

# The child: one model in one mode, in a fresh process.
CHILD = r'''
import contextlib, json, os, sys, time
import numpy as np
name, mode, weights, repeat = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
build, (kind, batch), loss_code, lib_name = json.loads(sys.argv[5])
os.environ["HF_HUB_OFFLINE"] = "1"
if mode != "torch eager":
    import jflow as flow
    import jflow.mock_torch as mock
    mock.enable()
import torch
import torch.nn.functional as F
if mode == "torch eager":
    torch.set_num_threads(1)
    try:  # (a torchvision build for another PyTorch: declare the schemas its import needs)
        lib = torch.library.Library("torchvision", "FRAGMENT")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    except RuntimeError:
        pass
import importlib
env = {"torch": torch, "F": F, lib_name: importlib.import_module(lib_name)}
torch.manual_seed(0)
exec(build, env)
model = env["model"]
if mode == "torch eager":
    np.savez(weights, **{k: v.detach().numpy() for k, v in model.state_dict().items()})
else:
    w = np.load(weights)
    model.load_state_dict({k: torch.tensor(w[k]) for k in w.files})
model.train()
for m in model.modules():  # (no dropout: the libraries' random streams differ)
    if "Drop" in type(m).__name__:
        m.eval()
rng = np.random.default_rng(0)
def batch_of():
    if kind == "img":
        x = torch.tensor(rng.standard_normal((batch, 3, 64, 64)).astype(np.float32))
    else:
        x = torch.tensor(rng.integers(1, 256, (batch, 64)))
    return x, torch.tensor(rng.integers(0, 10, (batch,)))
data = [batch_of() for _ in range(4)]
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
def step(i):
    opt.zero_grad()
    x, y = data[i % 4]
    loss = eval(loss_code, {"model": model, "x": x, "y": y, "F": F})
    loss.backward()
    opt.step()
    return loss
fn = torch.compile(step) if mode == "jflow torch.compile" else step
with (flow.lazy() if mode == "jflow lazy" else contextlib.nullcontext()):
    t0 = time.perf_counter()
    losses = [fn(i).item() for i in range(3)]
    first = time.perf_counter() - t0
    for i in range(2):
        fn(i).item()
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for i in range(4):
            loss = fn(i)
        loss.item()
        runs.append((time.perf_counter() - t0) / 4 * 1e3)
print("RESULT " + json.dumps(dict(first=first, ms=sorted(runs)[len(runs) // 2], losses=losses)))
'''


def run_child(name: str, mode: str, weights: str, repeat: int) -> dict:
    """One model in one mode in a fresh process (the jflow this process imports)."""
    _, lib, build, data, loss = MODELS[name]
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    args = json.dumps([build, data, loss, lib])
    p = subprocess.run([sys.executable, "-c", CHILD, name, mode, weights, str(repeat), args],
                       capture_output=True, text=True, env=env)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        err = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": err[:120]}
    return json.loads(lines[-1][len("RESULT "):])


def available(lib: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(lib) is not None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--modes", default=",".join(MODES[1:]),
                    help=f"comma-separated, of: {', '.join(MODES[1:])} (torch eager always runs)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rtol", type=float, default=1e-4, help="step-1 loss tolerance")
    args = ap.parse_args()
    modes = [m.strip() for m in args.modes.split(",") if m.strip() in MODES[1:]]
    import platform
    print(f"python {platform.python_version()}, {platform.machine()} x {os.cpu_count()}, "
          f"load average {', '.join(f'{v:.1f}' for v in os.getloadavg())}; PyTorch at 1 "
          f"thread; {args.rounds} rounds of fresh processes, {args.repeat} runs of 4 steps each")
    cols = [TORCH] + modes
    print(f"{'model':50s}" + "".join(f"{c:>22s}" for c in cols))
    for name in [m.strip() for m in args.models.split(",")]:
        desc, lib = MODELS[name][0], MODELS[name][1]
        if not available(lib):
            print(f"{desc:50s} ({lib} is not installed)")
            continue
        rounds: list[dict[str, dict]] = []
        with tempfile.TemporaryDirectory() as d:
            weights = os.path.join(d, "weights.npz")
            for _ in range(args.rounds):
                res = {TORCH: run_child(name, TORCH, weights, args.repeat)}
                for m in modes:
                    res[m] = run_child(name, m, weights, args.repeat)
                rounds.append(res)
        ref = rounds[0][TORCH]
        for m in cols:
            for r in rounds:
                got = r[m]
                if "error" in got:
                    raise RuntimeError(f"{name}, {m}: {got['error']}")
                want = ref["losses"][0]
                if abs(got["losses"][0] - want) > args.rtol * abs(want):
                    raise AssertionError(f"{name}, {m}: step-1 loss {got['losses'][0]} is not "
                                         f"PyTorch's {want}")
        ms = {m: statistics.median(r[m]["ms"] for r in rounds) for m in cols}
        ratio = {m: statistics.median(r[m]["ms"] / r[TORCH]["ms"] for r in rounds) for m in cols}
        first = {m: statistics.median(r[m]["first"] for r in rounds) for m in cols}
        print(f"{desc + ', ms per step':50s}" + "".join(f"{ms[m]:22.2f}" for m in cols))
        print(f"{'  x torch eager (per round)':50s}" + "".join(f"{ratio[m]:21.2f}x" for m in cols))
        print(f"{'  first 3 steps, s':50s}" + "".join(f"{first[m]:22.2f}" for m in cols))
        print(f"{'  step-1 loss':50s}" + "".join(f"{rounds[0][m]['losses'][0]:22.6f}"
                                                  for m in cols), flush=True)
    print(f"load average at the end {', '.join(f'{v:.1f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"({time.perf_counter() - t0:.0f} s)")
