"""Real models' training steps: PyTorch and jflow in every execution mode, side by side
(issue 40) — median ms per step, ratios to PyTorch eager, first-3-step times cold and warm,
peak memory growth, and the step-1 loss of every mode (checked equal).

    python benchmarks/real_models.py            # full: the models below (~30 min on 2 cores)
    python benchmarks/real_models.py --quick    # tiny models, 1-2 steps (the test's run)

``benchmarks/results_real_models_cpu.txt`` holds two consecutive full runs' output, the second
after a line ``# second consecutive run`` (as the other results files). No timing is asserted
anywhere; tests/test_benchmarks_real_models.py runs the quick mode and checks the losses.

The models are written ONCE against the PyTorch API, as functions of the library module
(``build(torch, ...)`` / ``build(flow, ...)``, as tests/compat/compat_models.py does), so the
same source runs on ``torch`` and on ``jflow``:

- GPT: 4 pre-norm layers, d_model 128, 4 heads, T=64, batch 8, vocab 256, attention by
  ``F.scaled_dot_product_attention(is_causal=True)``, GELU MLP;
- CIFAR ResNet-18 at 1/4 width: 3x3 stem, 2-2-2-2 BasicBlocks of 16-32-64-128 channels,
  BatchNorm (training mode), batch 32 of 3x32x32;
- LSTM LM: pytorch/examples' word_language_model shape (2 layers, 35 steps, batch 20),
  byte vocabulary 256, embedding 128, hidden 256, ``nn.LSTM(batch_first=True)``;
- GRU LM: the same with ``nn.GRU`` (its recurrence, as the LSTM's, one op per layer:
  jflow/ops/rnn.py).

No dropout anywhere (the two libraries' random streams differ; the losses must agree).
Every model's ``forward(x, y)`` returns the mean cross-entropy, and one training step is
``train_step`` below (``zero_grad``, forward, ``backward``, ``AdamW.step``), the same code on
both libraries. All modes start from the same weights (drawn by PyTorch, seed 0, copied into
each model through its ``state_dict``) and see the same batches (NumPy, seed 0).

Modes (columns): PyTorch eager at one thread (the ratios' reference); PyTorch eager at its
default thread count, every core (``torch eager mt``: the same program and weights);
``torch.compile`` of the model (the step around it eager, as
it is usually used; it may fail or compile for a long time: a failure is caught and shown);
jflow eager (its backward one whole-graph program; AdamW op by op, as Adam / AdamW are
by default, docs/autograd.md "Memory or speed"); jflow lean (eager, with the eager step's
fused programs off: ``flow.config.set_whole_graph_backward(False)`` and
``set_fused_optimizer_step(False)``, the backward rule by rule — since session 22 the one
difference from jflow eager with AdamW: what memory the whole-graph backward costs, and
what speed it buys); jflow lazy (``with flow.lazy():`` around the eager step, docs/lazy.md); jflow
``nn.Graph`` (forward + backward + AdamW as one executable, docs/compile.md); ``flow.jit`` of
the same eager step function (closure over the model and the optimizer).

Measurements:
- **ms per step**: the modes take turns, one timed run of ``--number`` steps each per round
  (``_timing.round_robin``, which warms every mode up first), ``--repeat`` rounds; each run
  ends by waiting for its last loss and the parameters (jflow's dispatch is asynchronous;
  PyTorch CPU is synchronous). The ratio is the median over rounds of the mode's time /
  PyTorch eager's time in the same round (``_timing.median_ratio``): a load change on a
  shared machine hits every mode alike.
- **first 3 steps**, cold and warm: a fresh Python process per model and mode builds the
  model and then times its first three steps, compilation included, each loss read
  (``.item()``) as a training loop logging it would; imports and model construction are not
  in the time. Cold: compilation caches on disk start empty — JAX's persistent compilation
  cache, when one is configured (by jflow or the user), is pointed at a new empty directory,
  and so is TorchInductor's cache. Warm: a second process with the same directories (a
  second run of the same script). The line ``compilation caches:`` says whether JAX's
  persistent cache was on.
- **model setup**, cold and warm: in the same fresh processes, the time before those steps
  that a user's script spends making the model (its modules and their initialisation, on
  the same caches), loading the common weights into it and making its optimizer and batches.
- **peak RSS growth** cold and warm: in the same fresh processes, how much the first three
  steps raise the process's peak resident memory over what it held before them (Linux's
  ``VmHWM``, reset before the steps through ``/proc/self/clear_refs``). The line ``XLA's
  compile alone`` is the floor of a compiled step: a fresh process traces and lowers
  ``flow.jit``'s program of one step, then measures only XLA's compile of it (no cache) —
  what any JAX program of that step pays, whoever builds it.
- **step-1 loss**: every mode's first loss (from the same weights and batch) must agree with
  PyTorch eager's to ``--rtol`` (default 1e-4; float32 summation order is all that may
  differ), and the next two steps' to ``--rtol-later`` (3e-3); otherwise the run stops with
  an AssertionError naming the mode — the timed steps compute the same thing. The fresh
  processes' losses are checked the same way. Why 3e-3 later: AdamW's first update is
  ~``lr·g/|g|``, which magnifies float32 rounding in small gradient components; measured on
  the ResNet, PyTorch eager's own step-3 loss is 9.5e-4 off the same step in float64
  (2.536734 vs 2.534310; torch.compile and jflow's fused modes land near float64), while a
  step without its update moves the step-3 loss by 1e-2 (GPT: 1.2e-3 and 1.0e-3, float64 and
  float32 agree to 1e-7).

Threads. The reference column, ``torch eager``, runs PyTorch at ONE thread
(``torch.set_num_threads(1)``, as issue 40 set it: on some hours of these shared 2-core VMs
PyTorch's OpenMP pool at 2 threads was pathological, ``torch.sqrt`` of 200k floats 6.5 ms at 2
threads against 0.44 ms at 1; ``--torch-threads`` changes it). jflow runs with JAX's defaults,
and those keep more than one core busy: asynchronous dispatch runs Python and XLA side by side,
and XLA splits matrix products, elementwise loops and convolutions across its threads
(convolutions because jflow has XLA run its own rather than YNNPACK's single-threaded one:
jflow/_xla_cpu_flags.py). So the column ``torch eager mt`` runs PyTorch at its own default too
(every core), and the row ``x torch mt`` gives every mode's time against it: the comparison a
user makes. The header line measures the sqrt case again in every run. On 2026-12-03's host
PyTorch at 2 threads ran these steps in 0.58-0.73x its 1-thread time, and jflow pinned to one
core (``taskset -c 0``) took 1.2-1.6x its 2-core time (results file, session 14).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from _timing import machine, median_ratio, round_robin  # noqa: E402  (benchmarks/ is on sys.path)

import jflow as flow

LR, WD = 1e-3, 0.01  # AdamW

#: per model: (display name, full configuration, quick configuration)
MODELS: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "gpt": ("GPT 4x128, 4 heads, T=64, batch 8",
            dict(vocab=256, block=64, n_layer=4, n_head=4, d=128, batch=8),
            dict(vocab=32, block=8, n_layer=1, n_head=2, d=16, batch=2)),
    "resnet": ("ResNet-18/4 (16-128 ch), batch 32",
               dict(widths=(16, 32, 64, 128), blocks=(2, 2, 2, 2), batch=32, size=32,
                    classes=10),
               dict(widths=(4, 8), blocks=(1, 1), batch=4, size=8, classes=10)),
    "lstm": ("LSTM LM 2x256, T=35, batch 20",
             dict(vocab=256, emb=128, hidden=256, layers=2, bptt=35, batch=20),
             dict(vocab=32, emb=8, hidden=16, layers=1, bptt=4, batch=2)),
    "gru": ("GRU LM 2x256, T=35, batch 20",
            dict(vocab=256, emb=128, hidden=256, layers=2, bptt=35, batch=20),
            dict(vocab=32, emb=8, hidden=16, layers=1, bptt=4, batch=2)),
}

TORCH_EAGER, TORCH_MT, TORCH_COMPILE = "torch eager", "torch eager mt", "torch.compile"
EAGER, LAZY, GRAPH, JIT = "jflow eager", "jflow lazy", "jflow nn.Graph", "flow.jit"
LEAN = "jflow lean"
MODES = (TORCH_EAGER, TORCH_MT, TORCH_COMPILE, EAGER, LEAN, LAZY, GRAPH, JIT)
#: PyTorch's thread count per PyTorch mode, set by main(): ``--torch-threads`` for torch eager
#: and torch.compile, PyTorch's own default (every core) for torch eager mt. Each PyTorch
#: runner sets its count at every step, since the modes take turns in one process.
TORCH_THREADS: dict[str, int] = {}
_DEFAULT_THREADS: list[int] = []  # PyTorch's default count, read before main() first sets it
N_BATCHES = 4  # distinct batches, cycled


# -- the models, written once against the PyTorch API ------------------------------------------
def build(torch: Any, kind: str, cfg: dict[str, Any]) -> Any:
    """The model ``kind`` on the library ``torch`` (PyTorch or jflow): a module whose
    ``forward(x, y)`` is the mean cross-entropy of its logits against ``y``."""
    nn = torch.nn
    F = torch.nn.functional

    class WithLoss(nn.Module):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def forward(self, x, y):
            logits = self.net(x)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

    if kind == "gpt":
        d, h = cfg["d"], cfg["n_head"]

        class Attention(nn.Module):
            def __init__(self):
                super().__init__()
                self.qkv = nn.Linear(d, 3 * d)
                self.proj = nn.Linear(d, d)

            def forward(self, x):
                B, T, C = x.shape
                q, k, v = self.qkv(x).split(C, dim=2)
                q = q.view(B, T, h, C // h).transpose(1, 2)
                k = k.view(B, T, h, C // h).transpose(1, 2)
                v = v.view(B, T, h, C // h).transpose(1, 2)
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.ln1 = nn.LayerNorm(d)
                self.attn = Attention()
                self.ln2 = nn.LayerNorm(d)
                self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

            def forward(self, x):
                x = x + self.attn(self.ln1(x))
                return x + self.mlp(self.ln2(x))

        class GPT(nn.Module):
            def __init__(self):
                super().__init__()
                self.tok = nn.Embedding(cfg["vocab"], d)
                self.pos = nn.Embedding(cfg["block"], d)
                self.blocks = nn.ModuleList([Block() for _ in range(cfg["n_layer"])])
                self.ln_f = nn.LayerNorm(d)
                self.head = nn.Linear(d, cfg["vocab"], bias=False)

            def forward(self, idx):
                t = idx.shape[1]
                x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
                for blk in self.blocks:
                    x = blk(x)
                return self.head(self.ln_f(x))

        return WithLoss(GPT())

    if kind == "resnet":
        class BasicBlock(nn.Module):
            def __init__(self, cin, cout, stride):
                super().__init__()
                self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
                self.bn1 = nn.BatchNorm2d(cout)
                self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
                self.bn2 = nn.BatchNorm2d(cout)
                self.shortcut = nn.Sequential()
                if stride != 1 or cin != cout:
                    self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                                  nn.BatchNorm2d(cout))

            def forward(self, x):
                out = F.relu(self.bn1(self.conv1(x)))
                out = self.bn2(self.conv2(out))
                return F.relu(out + self.shortcut(x))

        class ResNet(nn.Module):
            def __init__(self):
                super().__init__()
                w = cfg["widths"]
                self.conv1 = nn.Conv2d(3, w[0], 3, 1, 1, bias=False)
                self.bn1 = nn.BatchNorm2d(w[0])
                layers, cin = [], w[0]
                for i, (cout, n) in enumerate(zip(w, cfg["blocks"])):
                    for j in range(n):
                        layers.append(BasicBlock(cin, cout, 2 if i > 0 and j == 0 else 1))
                        cin = cout
                self.layers = nn.Sequential(*layers)
                self.fc = nn.Linear(cin, cfg["classes"])

            def forward(self, x):
                out = self.layers(F.relu(self.bn1(self.conv1(x))))
                out = F.adaptive_avg_pool2d(out, 1)
                return self.fc(torch.flatten(out, 1))

        return WithLoss(ResNet())

    if kind in ("lstm", "gru"):
        cell = nn.LSTM if kind == "lstm" else nn.GRU

        class LSTMLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(cfg["vocab"], cfg["emb"])
                self.rnn = cell(cfg["emb"], cfg["hidden"], cfg["layers"], batch_first=True)
                self.head = nn.Linear(cfg["hidden"], cfg["vocab"])

            def forward(self, idx):
                out, _ = self.rnn(self.emb(idx))
                return self.head(out)

        return WithLoss(LSTMLM())
    raise ValueError(f"build(): unknown model {kind!r}; expected one of {sorted(MODELS)}")


def train_step(torch: Any, model: Any, opt: Any, x: Any, y: Any) -> Any:
    """One training step as PyTorch code writes it (``torch`` unused: the same on both)."""
    opt.zero_grad(set_to_none=True)
    loss = model(x, y)
    loss.backward()
    opt.step()
    return loss


def batches(kind: str, cfg: dict[str, Any], n: int = N_BATCHES) -> list[tuple[np.ndarray, ...]]:
    """``n`` (input, target) NumPy batches, the same for every mode."""
    rs = np.random.RandomState(0)
    out = []
    for _ in range(n):
        if kind == "resnet":
            b, s = cfg["batch"], cfg["size"]
            out.append((rs.randn(b, 3, s, s).astype(np.float32),
                        rs.randint(0, cfg["classes"], b).astype(np.int64)))
        else:
            t = cfg["block"] if kind == "gpt" else cfg["bptt"]
            seq = rs.randint(0, cfg["vocab"], (cfg["batch"], t + 1)).astype(np.int64)
            out.append((seq[:, :-1].copy(), seq[:, 1:].copy()))
    return out


def initial_state(kind: str, cfg: dict[str, Any]) -> dict[str, np.ndarray]:
    """The weights (and buffers) every mode starts from: PyTorch's initialisation, seed 0."""
    import torch
    torch.manual_seed(0)
    return {k: v.detach().numpy().copy() for k, v in build(torch, kind, cfg).state_dict().items()}


# -- the modes ---------------------------------------------------------------------------------
class Runner:
    """One mode's model, optimizer and step: ``step()`` runs the next training step (batches
    cycled) and returns its loss; ``wait(loss)`` blocks until that step (and its parameter
    update) is computed; ``value(loss)`` reads the loss as a float."""

    def __init__(self, step: Callable[[Any, Any], Any], data: list[tuple[Any, Any]],
                 wait: Callable[[Any], Any] | None) -> None:
        self._step, self.data, self.wait, self.i = step, data, wait, 0

    def step(self) -> Any:
        x, y = self.data[self.i % len(self.data)]
        self.i += 1
        return self._step(x, y)

    @staticmethod
    def value(loss: Any) -> float:
        return float(loss.item())


def make_runner(mode: str, kind: str, cfg: dict[str, Any], init: dict[str, np.ndarray],
                data: list[tuple[np.ndarray, ...]]) -> Runner:
    """A fresh model with the weights ``init`` and an AdamW, run in ``mode``."""
    if mode in (TORCH_EAGER, TORCH_MT, TORCH_COMPILE):
        import torch
        model = build(torch, kind, cfg)
        model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in init.items()})
        opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
        fwd = torch.compile(model) if mode == TORCH_COMPILE else model
        tdata = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in data]
        threads = TORCH_THREADS.get(mode, torch.get_num_threads())

        def torch_step(x: Any, y: Any) -> Any:
            torch.set_num_threads(threads)
            return train_step(torch, fwd, opt, x, y)
        return Runner(torch_step, tdata, None)
    if mode not in MODES:
        raise ValueError(f"make_runner(): unknown mode {mode!r}; expected one of {MODES}")
    model = build(flow, kind, cfg)
    model.load_state_dict({k: flow.tensor(v) for k, v in init.items()})
    opt = flow.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
    fdata = [(flow.tensor(x), flow.tensor(y)) for x, y in data]
    params = list(model.parameters())

    def wait(loss: Any) -> Any:  # the loss and the update of every parameter
        return jax.block_until_ready((loss, params))

    if mode == EAGER:
        step = lambda x, y: train_step(flow, model, opt, x, y)  # noqa: E731
    elif mode == LEAN:
        def step(x: Any, y: Any) -> Any:  # (process-wide switches: the modes take turns)
            fused = flow.config.set_fused_optimizer_step(False)
            whole = flow.config.set_whole_graph_backward(False)
            try:
                return train_step(flow, model, opt, x, y)
            finally:
                flow.config.set_fused_optimizer_step(fused)
                flow.config.set_whole_graph_backward(whole)
    elif mode == LAZY:
        def step(x: Any, y: Any) -> Any:
            with flow.lazy():
                return train_step(flow, model, opt, x, y)
    elif mode == GRAPH:
        class TrainStep(flow.nn.Graph):
            def __init__(self) -> None:
                super().__init__()
                self.model = model
                self.add_optimizer(opt)

            def build(self, x: Any, y: Any) -> Any:
                loss = self.model(x, y)
                loss.backward()
                return loss

        step = TrainStep()
    else:
        step = flow.jit(lambda x, y: train_step(flow, model, opt, x, y))
    return Runner(step, fdata, wait)


# -- checks ------------------------------------------------------------------------------------
def check_losses(kind: str, losses: dict[str, list[float]], rtol: float, rtol_later: float,
                 ref: str = TORCH_EAGER) -> None:
    """Every mode's step-1 loss agrees with ``ref``'s to ``rtol``, its later losses to
    ``rtol_later``; else AssertionError naming the mode, the step and both values."""
    want = losses[ref]
    for mode, got in losses.items():
        for i, (g, w) in enumerate(zip(got, want)):
            tol = rtol if i == 0 else rtol_later
            if not (math.isfinite(g) and math.isclose(g, w, rel_tol=tol, abs_tol=tol * 1e-2)):
                raise AssertionError(f"{kind}: step-{i + 1} loss of {mode} = {g!r} differs from "
                                     f"{ref}'s {w!r} by more than rel. {tol:g}: the modes do "
                                     f"not compute the same training step")


def first_losses(kind: str, cfg: dict[str, Any], modes: Sequence[str], steps: int,
                 rtol: float, rtol_later: float,
                 init_for: Callable[[str, dict[str, np.ndarray]], dict[str, np.ndarray]]
                 | None = None) -> tuple[dict[str, Runner], dict[str, list[float]],
                                         dict[str, str]]:
    """Fresh runners of ``modes`` take ``steps`` steps from the same weights; their losses are
    checked (:func:`check_losses`, PyTorch eager is the reference and always runs). Returns
    the runners (warm, reused for timing), the losses and the modes that failed to run, with
    why (torch.compile may fail; a jflow mode failing is a jflow bug and raises).
    ``init_for(mode, init)`` may change one mode's weights (the test's perturbation)."""
    init, data = initial_state(kind, cfg), batches(kind, cfg)
    runners: dict[str, Runner] = {}
    losses: dict[str, list[float]] = {}
    failed: dict[str, str] = {}
    for mode in (TORCH_EAGER, *[m for m in modes if m != TORCH_EAGER]):
        w = init_for(mode, init) if init_for is not None else init
        try:
            r = make_runner(mode, kind, cfg, w, data)
            losses[mode] = [r.value(r.step()) for _ in range(steps)]
        except Exception as e:  # noqa: BLE001  (reported in the table)
            if mode != TORCH_COMPILE:
                raise
            failed[mode] = f"{type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"
            continue
        runners[mode] = r
    check_losses(kind, losses, rtol, rtol_later)
    return runners, losses, failed


# -- first steps in a fresh process ------------------------------------------------------------
def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def first_steps_child(kind: str, mode: str, quick: bool, cache_dir: str, steps: int = 3) -> dict:
    """(Runs in the fresh process.) Build ``mode``'s model, then time its first ``steps``
    steps, each loss read; returns seconds, peak RSS growth (MiB), losses, whether JAX's
    cache was on, the setup's seconds (model, weights, optimizer and batches) and, in
    ``events``, those steps' seconds in each of :data:`COMPILE_EVENTS`."""
    jax_cache = jax.config.jax_compilation_cache_dir
    if jax_cache:  # a persistent cache is configured: cold and warm use our directory instead
        jax.config.update("jax_compilation_cache_dir", os.path.join(cache_dir, "jax"))
    cfg = MODELS[kind][2 if quick else 1]
    init, data = initial_state(kind, cfg), batches(kind, cfg)
    t0 = time.perf_counter()
    r = make_runner(mode, kind, cfg, init, data)
    setup = time.perf_counter() - t0
    before = _rss_kib("VmRSS")
    try:  # reset the peak ("VmHWM") to the current RSS (Linux >= 4.0)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    events = dict.fromkeys(COMPILE_EVENTS, 0.0)
    names = {v: k for k, v in COMPILE_EVENTS.items()}

    def listen(event: str, secs: float, **_kw: Any) -> None:
        if event in names:
            events[names[event]] += secs

    jax.monitoring.register_event_duration_secs_listener(listen)
    t0 = time.perf_counter()
    losses = [r.value(r.step()) for _ in range(steps)]
    seconds = time.perf_counter() - t0
    peak = _rss_kib("VmHWM")
    return dict(seconds=seconds, rss_mib=max(0, peak - before) / 1024, losses=losses,
                jax_cache=bool(jax_cache), setup=setup, events=events)


#: JAX's compile events (``jax.monitoring`` durations) that :func:`first_steps_child` sums:
#: tracing to a jaxpr, lowering it to the module whose hash is the persistent cache's key, and
#: XLA's compile (or, on a cache hit, the executable's load)
COMPILE_EVENTS = {"tracing": "/jax/core/compile/jaxpr_trace_duration",
                  "lowering": "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "compile or load": "/jax/core/compile/backend_compile_duration"}


#: the pseudo-mode of :func:`first_steps_child` that measures XLA's compile of the whole step
XLA_COMPILE = "XLA compile only"


def xla_compile_child(kind: str, quick: bool) -> dict:
    """(Runs in the fresh process, persistent cache off.) The memory floor of a compiled step:
    ``flow.jit``'s program for one training step, traced and lowered first, then only XLA's
    compile of it measured — what any JAX program of this step pays, whatever builds it."""
    # (off before anything compiles: JAX reads the switch when its cache is first used, and
    # a cache would both answer a second run and add the executable's serialization)
    was = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    try:
        cfg = MODELS[kind][2 if quick else 1]
        r = make_runner(JIT, kind, cfg, initial_state(kind, cfg), batches(kind, cfg))
        lowered = r._step.lower(*r.data[0])
        before = _rss_kib("VmRSS")
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass
        t0 = time.perf_counter()
        compiled = lowered.compile()
        seconds = time.perf_counter() - t0
    finally:
        jax.config.update("jax_enable_compilation_cache", was)
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost  # a list in older JAX
    return dict(seconds=seconds, rss_mib=max(0, _rss_kib("VmHWM") - before) / 1024,
                flops=float(cost.get("flops", 0.0)))


def first_steps(kind: str, mode: str, quick: bool, cache_dir: str, torch_threads: int) -> dict:
    """Run :func:`first_steps_child` in a fresh Python process; its result dict, or
    ``{"error": ...}`` when the process failed."""
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(cache_dir, "inductor"))
    # the child imports the jflow this process imported (not whatever is installed)
    root = str(Path(flow.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, __file__, "--first-steps-child", kind, mode, cache_dir,
           "--torch-threads", str(torch_threads)] + (["--quick"] if quick else [])
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        err = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": err[:100]}
    return json.loads(lines[-1])


# -- the run -----------------------------------------------------------------------------------
def run_model(kind: str, args: argparse.Namespace, out: Callable[[str], None]) -> None:
    """Check, time and print one model's rows."""
    name, full, quick = MODELS[kind]
    cfg = quick if args.quick else full
    name = f"{kind} (tiny, --quick)" if args.quick else name
    modes = [m for m in args.modes if m in MODES]
    runners, losses, failed = first_losses(kind, cfg, modes, 3 if not args.quick else 2,
                                           args.rtol, args.rtol_later)
    fns = {m: (r.step, args.number, r.wait) for m, r in runners.items()}
    med, runs = round_robin(fns, args.repeat, warmup=args.warmup)
    cold: dict[str, dict] = {}
    warm: dict[str, dict] = {}
    floor: dict = {}
    if args.first_steps:
        with tempfile.TemporaryDirectory(prefix="real_models_cache_") as d:
            floor = first_steps(kind, XLA_COMPILE, args.quick, d, args.torch_threads)
        for m in modes:
            if m == TORCH_MT:  # the same program as torch eager's, on more threads
                continue
            with tempfile.TemporaryDirectory(prefix="real_models_cache_") as d:
                cold[m] = first_steps(kind, m, args.quick, d, args.torch_threads)
                warm[m] = first_steps(kind, m, args.quick, d, args.torch_threads)
            for res in (cold[m], warm[m]):
                if "losses" in res:  # the fresh process computed the same losses
                    check_losses(kind, {TORCH_EAGER: losses[TORCH_EAGER], m: res["losses"]},
                                 args.rtol, args.rtol_later)

    def row(label: str, cell: Callable[[str], str]) -> None:
        out(f"{name:36s} {label:26s} " + " ".join(f"{cell(m):>14s}" for m in modes))

    def fail(m: str) -> str:
        return "failed" if m in failed else "-"

    row("ms per step", lambda m: f"{med[m] / 1e3:.3f}" if m in med else fail(m))
    row("x torch eager (per round)",
        lambda m: f"{median_ratio(runs, m, TORCH_EAGER):.2f}x" if m in med else fail(m))
    if TORCH_MT in med:
        row("x torch mt (per round)",
            lambda m: f"{median_ratio(runs, m, TORCH_MT):.2f}x" if m in med else fail(m))
    if args.first_steps:
        def fresh(res: dict[str, dict], key: str, fmt: str) -> Callable[[str], str]:
            def cell(m: str) -> str:
                if m not in res:  # not measured (torch eager mt: torch eager's program)
                    return "-"
                return format(res[m][key], fmt) if key in res[m] else "failed"
            return cell
        for label, res in (("first 3 steps cold, s", cold), ("first 3 steps warm, s", warm)):
            row(label, fresh(res, "seconds", ".2f"))
        for label, res in (("model setup cold, s", cold), ("model setup warm, s", warm)):
            row(label, fresh(res, "setup", ".2f"))
        for label, res in (("peak RSS growth cold, MiB", cold),
                           ("peak RSS growth warm, MiB", warm)):
            row(label, fresh(res, "rss_mib", ".0f"))
    row("step-1 loss", lambda m: f"{losses[m][0]:.6f}" if m in losses else fail(m))
    ref = losses[TORCH_EAGER]
    row(f"max rel. diff, steps 1-{len(ref)}",
        lambda m: f"{max(abs(a / b - 1) for a, b in zip(losses[m], ref)):.1e}"
        if m in losses else fail(m))
    for m, why in failed.items():
        out(f"{'':36s} {m} failed: {why}")
    for m in modes:
        for res, when in ((cold.get(m, {}), "cold"), (warm.get(m, {}), "warm")):
            if "error" in res:
                out(f"{'':36s} {m} first steps ({when}) failed: {res['error']}")
    if "rss_mib" in floor:
        out(f"{'':36s} XLA's compile alone of the whole step's program (flow.jit's, lowered "
            f"first; no cache): peak RSS +{floor['rss_mib']:.0f} MiB, {floor['seconds']:.2f} s")
    elif floor:
        out(f"{'':36s} XLA compile floor failed: {floor.get('error')}")
    if cold:
        on = any(r.get("jax_cache") for r in cold.values())
        out(f"{'':36s} compilation caches: JAX persistent cache "
            f"{'on (fresh directory for cold)' if on else 'off (not configured)'}, "
            f"TorchInductor's cache in a fresh directory for cold")


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="tiny models, 2 checked steps, 1 round of 1 step, no warm-up, no "
                         "torch.compile, no fresh processes (the test's run)")
    ap.add_argument("--models", default=",".join(MODELS),
                    help=f"comma-separated, of {','.join(MODELS)}")
    ap.add_argument("--modes", default=None,
                    help=f"comma-separated, of: {','.join(MODES)} (torch eager always runs)")
    ap.add_argument("--repeat", type=int, default=None, help="rounds (full 7, quick 1)")
    ap.add_argument("--number", type=int, default=None,
                    help="steps per timed run (full 3, quick 1)")
    ap.add_argument("--warmup", type=int, default=None,
                    help="steps of each mode before the rounds, after the 3 checked ones "
                         "(full 3, quick 0)")
    ap.add_argument("--first-steps", action=argparse.BooleanOptionalAction, default=None,
                    help="cold / warm first-3-step times in fresh processes (full: on)")
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="torch.set_num_threads (default 1: see the module docstring)")
    ap.add_argument("--rtol", type=float, default=1e-4, help="step-1 loss tolerance")
    ap.add_argument("--rtol-later", type=float, default=3e-3,
                    help="steps 2 and 3 loss tolerance")
    ap.add_argument("--first-steps-child", nargs=3, metavar=("MODEL", "MODE", "CACHE_DIR"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    quick = args.quick
    if args.modes is None:
        args.modes = [m for m in MODES if not (quick and m == TORCH_COMPILE)]
    else:
        args.modes = [m.strip() for m in args.modes.split(",")]
        bad = [m for m in args.modes if m not in MODES]
        if bad:
            ap.error(f"--modes: unknown {bad}; expected some of {list(MODES)}")
    if TORCH_EAGER not in args.modes:
        args.modes.insert(0, TORCH_EAGER)
    args.models = [m.strip() for m in args.models.split(",")]
    bad = [m for m in args.models if m not in MODELS]
    if bad:
        ap.error(f"--models: unknown {bad}; expected some of {list(MODELS)}")
    args.repeat = args.repeat or (1 if quick else 7)
    args.number = args.number or (1 if quick else 3)
    if args.warmup is None:
        args.warmup = 0 if quick else 3
    if args.first_steps is None:
        args.first_steps = not quick
    return args


def threads_line(torch: Any, base: int, default: int) -> str:
    """What the PyTorch columns run on and why, with this run's measurement of the case that
    once made one thread the reference (torch.sqrt of 200k floats)."""
    x = torch.randn(200_000)
    ms = {}
    for n in (base, default):
        torch.set_num_threads(n)
        for _ in range(20):
            torch.sqrt(x)
        times = []
        for _ in range(100):
            t0 = time.perf_counter()
            torch.sqrt(x)
            times.append(time.perf_counter() - t0)
        ms[n] = statistics.median(times) * 1e3
    torch.set_num_threads(base)
    return (f"PyTorch runs at {base} thread{'s' * (base != 1)} in '{TORCH_EAGER}' (issue 40's "
            f"reference: on some hours of these shared VMs its OpenMP pool at 2 threads was "
            f"pathological, torch.sqrt of 200k floats 6.5 ms at 2 threads against 0.44 at 1; "
            f"this run: {ms[base]:.2f} ms at {base}, {ms[default]:.2f} ms at {default}) and at "
            f"its default {default} in '{TORCH_MT}', the speed a user gets. jflow runs with "
            f"JAX's defaults, which keep more than one core busy (asynchronous dispatch "
            f"overlaps Python with XLA; XLA splits matrix products, elementwise loops and, "
            f"as jflow sets it, convolutions across threads).")


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] | None = None) -> None:
    """Run the benchmark (``argv`` as the command line), printing with ``out``."""
    args = parse(argv)
    import torch
    if not _DEFAULT_THREADS:
        _DEFAULT_THREADS.append(torch.get_num_threads())
    TORCH_THREADS.update({TORCH_EAGER: args.torch_threads, TORCH_COMPILE: args.torch_threads,
                          TORCH_MT: _DEFAULT_THREADS[0]})
    torch.set_num_threads(args.torch_threads)
    if args.first_steps_child:
        kind, mode, cache_dir = args.first_steps_child
        res = (xla_compile_child(kind, args.quick) if mode == XLA_COMPILE
               else first_steps_child(kind, mode, args.quick, cache_dir))
        print(json.dumps(res), flush=True)
        return
    say = out or (lambda s: print(s, flush=True))
    threads = torch.get_num_threads()
    say(f"{machine()}, torch {torch.__version__} ({threads} thread{'s' * (threads != 1)})"
        f"{', QUICK MODE (tiny models)' if args.quick else ''}; AdamW, {args.repeat} rounds "
        f"of {args.number} steps per mode, interleaved")
    say(threads_line(torch, args.torch_threads, _DEFAULT_THREADS[0]))
    header = f"{'model':36s} {'':26s} " + " ".join(f"{m:>14s}" for m in args.modes)
    say(header)
    say("-" * len(header))
    for kind in args.models:
        run_model(kind, args, say)
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    say(f"load average at the end {load} (with the first line's: was the machine quiet?)")


if __name__ == "__main__":
    main()
