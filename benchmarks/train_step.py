"""Whole training steps: jflow compiled (``nn.Graph``) vs the same step written by hand in
pure JAX, and jflow eager and lazy (``flow.lazy()``: the same eager step recorded and run as
one executable) vs PyTorch CPU eager (when installed) — median ms per step, in one run.

    python benchmarks/train_step.py [--repeat 7] [--number 10]

Cases, the models of the examples:
- digits MLP (examples/digits.py): 64-256-128-10, batch 64, cross-entropy, Adam;
- char LM (examples/char_lm.py): byte-level GPT, 2 pre-norm blocks, d_model 128, 4 heads,
  batch 32 x 64 tokens, AdamW, gradient clipping at norm 1, a LambdaLR scheduler (the lr
  is an input of both compiled steps; the factor stays 1 while timing).

The pure-JAX step is ``jax.jit`` of ``value_and_grad`` plus the same optimizer math as
``flow.optim`` (step count as an array, the same bias corrections, decoupled weight decay,
the same clipping formula), with parameters and optimizer state donated; the lr is a traced
argument so a schedule does not recompile. All four implementations start from the same
weights; their first-step losses, and the jflow parameters after 3 steps, are checked
against the pure-JAX step before anything is timed. The exact GELU is written as jflow
computes it (``x·(1 + erf(x/√2))/2``; ``jax.nn.gelu`` uses ``erfc``, ~4x slower to
differentiate on XLA CPU: a difference of formula, not of framework).
Target: compiled jflow ≤ 1.05x pure JAX.

"Graph call overhead": a tiny step (MLP 32-64-10, batch 32, SGD; ~30 µs of pure JAX) as an
``nn.Graph`` and as the same donated pure-JAX step, each call waited for
(``block_until_ready``), the two taking turns call by call; the overhead is the median of the
differences of neighbouring calls, in µs per call (target ≤ 8 µs). It is measured twice:
with JAX's synchronous CPU dispatch (``jax_cpu_enable_async_dispatch=False``, in a
subprocess: the executable runs on the calling thread, so the difference is exactly the
Python around it, nothing hidden or added by thread hand-offs), and with the default
asynchronous dispatch, where a waited-for call also pays the wake-up of XLA's worker thread
(on the shared 2-core machines here ~30-80 µs per call for both sides, more when the caller
was busy for a few µs before dispatching).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from _timing import round_robin  # noqa: E402  (benchmarks/ is on sys.path)

import jflow as flow

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import char_lm  # noqa: E402
import digits  # noqa: E402

MLP_BATCH, MLP_LR = 64, 3e-3
LM = dict(batch=32, block=64, d_model=128, n_layer=2, n_head=4, lr=3e-3, wd=0.1,
          betas=(0.9, 0.95), clip=1.0)


# -- pure JAX ---------------------------------------------------------------------------------
def adam_update(params: dict, grads: dict, state: dict, lr: Any, b1: float, b2: float,
                eps: float = 1e-8, wd: float = 0.0, decoupled: bool = False) -> tuple:
    """flow.optim.Adam / AdamW's step, leaf by leaf, on plain arrays."""
    step = state["step"] + 1
    new_p, new_m, new_v = {}, {}, {}
    bc1 = 1 - b1 ** step
    bc2_sqrt = jnp.sqrt(1 - b2 ** step)
    for k, p in params.items():
        g = grads[k]
        if wd:
            if decoupled:
                p = p * (1 - lr * wd)
            else:
                g = g + wd * p
        m = state["m"][k] * b1 + (1 - b1) * g
        v = state["v"][k] * b2 + (1 - b2) * (g * g)
        new_p[k] = p - m / (jnp.sqrt(v) / bc2_sqrt + eps) * (lr / bc1)
        new_m[k], new_v[k] = m, v
    return new_p, {"step": step, "m": new_m, "v": new_v}


def adam_init(params: dict) -> dict:
    """Zero moments and one shared step count (jflow keeps one per parameter: same values)."""
    z = {k: jnp.zeros_like(v) for k, v in params.items()}
    return {"step": jnp.zeros((), jnp.float32), "m": z,
            "v": {k: jnp.zeros_like(v) for k, v in params.items()}}


def cross_entropy(logits: jax.Array, y: jax.Array) -> jax.Array:
    """Mean cross-entropy of class indices."""
    lse = jax.nn.logsumexp(logits, axis=-1)
    return jnp.mean(lse - jnp.take_along_axis(logits, y[:, None], axis=-1)[:, 0])


def mlp_apply(p: dict, x: jax.Array) -> jax.Array:
    """The digits MLP on a dict named like its jflow state dict."""
    h = x.reshape(x.shape[0], -1)
    for i in (1, 3):
        h = jax.nn.relu(h @ p[f"{i}.weight"].T + p[f"{i}.bias"])
    return h @ p["5.weight"].T + p["5.bias"]


def layer_norm(x: jax.Array, w: jax.Array, b: jax.Array, eps: float = 1e-5) -> jax.Array:
    """LayerNorm over the last axis (biased variance, as torch / jflow)."""
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) * jax.lax.rsqrt(var + eps) * w + b


def gelu(x: jax.Array) -> jax.Array:
    """Exact GELU as jflow computes it, x·Φ(x) with erf; ``jax.nn.gelu(approximate=False)``
    uses erfc, whose gradient costs ~4x more on XLA CPU (a difference of formula, not of
    framework)."""
    return x * 0.5 * (1.0 + jax.lax.erf(x * (1.0 / math.sqrt(2.0))))


def gpt_apply(p: dict, idx: jax.Array, n_layer: int, n_head: int) -> jax.Array:
    """examples/char_lm.py's GPT on a dict named like its jflow state dict."""
    b, t = idx.shape
    x = p["tok_emb.weight"][idx] + p["pos_emb.weight"][:t]
    c = x.shape[-1]
    hd = c // n_head
    mask = jnp.tril(jnp.ones((t, t), bool))
    for i in range(n_layer):
        q = f"blocks.{i}."
        h = layer_norm(x, p[q + "ln1.weight"], p[q + "ln1.bias"])
        qkv = h @ p[q + "attn.qkv.weight"].T + p[q + "attn.qkv.bias"]
        qh, kh, vh = qkv.reshape(b, t, 3, n_head, hd).transpose(2, 0, 3, 1, 4)
        s = (qh @ kh.swapaxes(-1, -2)) * (1.0 / math.sqrt(hd))
        a = jax.nn.softmax(jnp.where(mask, s, -jnp.inf), axis=-1) @ vh
        x = x + a.swapaxes(1, 2).reshape(b, t, c) @ p[q + "attn.proj.weight"].T \
            + p[q + "attn.proj.bias"]
        h = layer_norm(x, p[q + "ln2.weight"], p[q + "ln2.bias"])
        h = gelu(h @ p[q + "mlp.0.weight"].T + p[q + "mlp.0.bias"])
        x = x + h @ p[q + "mlp.2.weight"].T + p[q + "mlp.2.bias"]
    x = layer_norm(x, p["ln_f.weight"], p["ln_f.bias"])
    return x @ p["head.weight"].T


def jax_mlp_step() -> Callable:
    """``(params, state, x, y) -> (params, state, loss)``, jitted, state donated."""
    def step(params: dict, state: dict, x: jax.Array, y: jax.Array) -> tuple:
        loss, g = jax.value_and_grad(lambda p: cross_entropy(mlp_apply(p, x), y))(params)
        params, state = adam_update(params, g, state, MLP_LR, 0.9, 0.999)
        return params, state, loss

    return jax.jit(step, donate_argnums=(0, 1))


def jax_lm_step() -> Callable:
    """``(params, state, x, y, lr) -> (params, state, loss)`` with clipping, jitted, state
    donated."""
    b1, b2 = LM["betas"]

    def step(params: dict, state: dict, x: jax.Array, y: jax.Array, lr: jax.Array) -> tuple:
        def loss_fn(p: dict) -> jax.Array:
            logits = gpt_apply(p, x, LM["n_layer"], LM["n_head"])
            return cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))

        loss, g = jax.value_and_grad(loss_fn)(params)
        total = jnp.sqrt(sum(jnp.sum(v * v) for v in g.values()))
        coef = jnp.minimum(LM["clip"] / (total + 1e-6), 1.0)
        g = {k: v * coef for k, v in g.items()}
        params, state = adam_update(params, g, state, lr, b1, b2, wd=LM["wd"], decoupled=True)
        return params, state, loss

    return jax.jit(step, donate_argnums=(0, 1))


# -- models and data ----------------------------------------------------------------------------
def numpy_params(model: flow.nn.Module) -> dict[str, np.ndarray]:
    """The initial weights every implementation starts from."""
    return {k: v.detach().numpy().copy() for k, v in model.named_parameters()}


def mlp_case() -> tuple[Any, ...]:
    """(initial weights, one batch of digits, labels)."""
    xtr, ytr, _, _ = digits.load_data(0)
    x, y = xtr[:MLP_BATCH], ytr[:MLP_BATCH]
    flow.manual_seed(0)
    init = numpy_params(digits.build_model("mlp"))
    return init, x, y


def lm_case() -> tuple[Any, ...]:
    """(initial weights, one batch of stdlib byte windows, next-byte targets)."""
    data = char_lm.load_text(1 << 18)
    x, y = char_lm.Batches(data, LM["batch"], LM["block"], 0).next()
    flow.manual_seed(0)
    init = numpy_params(char_lm.GPT(256, LM["block"], LM["d_model"], LM["n_layer"],
                                    LM["n_head"]))
    return init, x, y


def jflow_model(kind: str, init: dict[str, np.ndarray]) -> flow.nn.Module:
    """A fresh jflow model of the case with the shared initial weights."""
    m = digits.build_model("mlp") if kind == "mlp" else char_lm.GPT(
        256, LM["block"], LM["d_model"], LM["n_layer"], LM["n_head"])
    m.load_state_dict({k: flow.tensor(v) for k, v in init.items()})
    return m


def jflow_opt(kind: str, model: flow.nn.Module) -> tuple[Any, Any]:
    """The case's optimizer and scheduler (None for the MLP), as the examples use them."""
    if kind == "mlp":
        return flow.optim.Adam(model.parameters(), lr=MLP_LR), None
    opt = flow.optim.AdamW(model.parameters(), lr=LM["lr"], betas=LM["betas"],
                           weight_decay=LM["wd"])
    # a constant-1 factor: the schedule machinery runs, the lr stays fixed while timing
    return opt, flow.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)


def jflow_eager_step(kind: str, model: Any, opt: Any, sched: Any, x: Any, y: Any) -> Any:
    """One eager training step, the same work as the compiled one."""
    opt.zero_grad()
    if kind == "mlp":
        loss = flow.nn.functional.cross_entropy(model(x), y)
    else:
        loss = char_lm.lm_loss(model(x), y)
    loss.backward()
    if kind == "lm":
        flow.nn.utils.clip_grad_norm_(model.parameters(), LM["clip"])
    opt.step()
    if sched is not None:
        sched.step()
    return loss


def jflow_graph_step(kind: str, model: Any, opt: Any, sched: Any) -> Any:
    """The examples' own ``nn.Graph`` training step for the case."""
    if kind == "lm":
        return char_lm.make_train_step(model, opt, sched, LM["clip"])
    return digits._graphs(model, flow.nn.CrossEntropyLoss(), opt)[0]


USE_TORCH = True


def torch_case(kind: str, init: dict[str, np.ndarray]) -> tuple[Any, Any, Any] | None:
    """The same model, weights and optimizer in PyTorch (None when torch is missing)."""
    if not USE_TORCH:
        return None
    try:
        import torch
    except ImportError:
        return None
    from torch import nn

    if kind == "mlp":
        model = nn.Sequential(nn.Flatten(), nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 128),
                              nn.ReLU(), nn.Linear(128, 10))
        opt = torch.optim.Adam(model.parameters(), lr=MLP_LR)
    else:
        class Attn(nn.Module):
            def __init__(self, c: int, h: int) -> None:
                super().__init__()
                self.h, self.qkv, self.proj = h, nn.Linear(c, 3 * c), nn.Linear(c, c)

            def forward(self, x: Any) -> Any:
                b, t, c = x.shape
                q, k, v = self.qkv(x).reshape(b, t, 3, self.h, c // self.h) \
                    .permute(2, 0, 3, 1, 4).unbind(0)
                y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                return self.proj(y.transpose(1, 2).reshape(b, t, c))

        class Block(nn.Module):
            def __init__(self, c: int, h: int) -> None:
                super().__init__()
                self.ln1, self.attn, self.ln2 = nn.LayerNorm(c), Attn(c, h), nn.LayerNorm(c)
                self.mlp = nn.Sequential(nn.Linear(c, 4 * c), nn.GELU(), nn.Linear(4 * c, c))

            def forward(self, x: Any) -> Any:
                x = x + self.attn(self.ln1(x))
                return x + self.mlp(self.ln2(x))

        class GPT(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                c = LM["d_model"]
                self.tok_emb, self.pos_emb = nn.Embedding(256, c), nn.Embedding(LM["block"], c)
                self.blocks = nn.ModuleList(Block(c, LM["n_head"]) for _ in range(LM["n_layer"]))
                self.ln_f, self.head = nn.LayerNorm(c), nn.Linear(c, 256, bias=False)

            def forward(self, idx: Any) -> Any:
                x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1]))
                for blk in self.blocks:
                    x = blk(x)
                return self.head(self.ln_f(x))

        model = GPT()
        opt = torch.optim.AdamW(model.parameters(), lr=LM["lr"], betas=LM["betas"],
                                weight_decay=LM["wd"])
    model.load_state_dict({k: torch.tensor(v) for k, v in init.items()})

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 y.reshape(-1))
        loss.backward()
        if kind == "lm":
            torch.nn.utils.clip_grad_norm_(model.parameters(), LM["clip"])
        opt.step()
        return loss

    return step, torch.tensor, torch


# -- the run ------------------------------------------------------------------------------------
def check_same_math(kind: str, init: dict[str, np.ndarray], x_np: np.ndarray,
                    y_np: np.ndarray, steps: int = 3) -> None:
    """Fresh copies of each jflow step and the pure-JAX step take ``steps`` updates from the
    same weights: the parameters must agree (to 1e-4, while the updates move them by ~1e-2),
    so the timed steps compute the same thing (clipping, weight decay and all)."""
    jstep = jax_mlp_step() if kind == "mlp" else jax_lm_step()
    extra = () if kind == "mlp" else (jnp.asarray(LM["lr"], jnp.float32),)
    p = {k: jnp.asarray(v) for k, v in init.items()}
    s = adam_init(p)
    fx, fy = flow.tensor(x_np), flow.tensor(y_np)
    runs = {}
    for mode in ("eager", "lazy", "graph") if hasattr(flow.nn, "Graph") else ("eager",):
        model = jflow_model(kind, init)
        opt, sched = jflow_opt(kind, model)
        graph = jflow_graph_step(kind, model, opt, sched) if mode == "graph" else None
        for _ in range(steps):
            if graph is not None:
                graph(fx, fy)
            else:
                with flow.lazy(mode == "lazy"):
                    jflow_eager_step(kind, model, opt, sched, fx, fy)
        runs[mode] = model
    for _ in range(steps):
        p, s, _ = jstep(p, s, jnp.asarray(x_np), jnp.asarray(y_np), *extra)
    for mode, model in runs.items():
        for k, v in model.named_parameters():
            d = float(np.max(np.abs(v.detach().numpy() - np.asarray(p[k]))))
            if d > 1e-4:
                raise AssertionError(f"{kind}: after {steps} steps, jflow {mode}'s {k} differs "
                                     f"from the pure-JAX step's by {d:.2e}: not the same math")


def run_case(kind: str, number: int, repeat: int) -> dict[str, float]:
    """Median ms per step of each implementation. The implementations take turns, one
    timed run each per round, so a load change on a shared machine hits all of them
    alike (the ratios stay meaningful even when the absolute times drift)."""
    init, x_np, y_np = mlp_case() if kind == "mlp" else lm_case()
    check_same_math(kind, init, x_np, y_np)
    # (fn, calls per run, wait) per implementation; the MLP step is ~100x shorter
    scale = 25 if kind == "mlp" else 1
    fns: dict[str, tuple[Callable[[], Any], int, Any]] = {}
    first: dict[str, float] = {}
    wait = jax.block_until_ready

    # pure JAX
    jstep = jax_mlp_step() if kind == "mlp" else jax_lm_step()
    extra = () if kind == "mlp" else (jnp.asarray(LM["lr"], jnp.float32),)
    jx, jy = jnp.asarray(x_np), jnp.asarray(y_np)
    st = {"p": {k: jnp.asarray(v) for k, v in init.items()}}
    st["s"] = adam_init(st["p"])

    def jax_step() -> Any:
        st["p"], st["s"], loss = jstep(st["p"], st["s"], jx, jy, *extra)
        return loss

    first["jax"] = float(jax_step())
    fns["jax"] = (jax_step, number * scale, wait)

    # jflow compiled and eager
    fx, fy = flow.tensor(x_np), flow.tensor(y_np)
    if hasattr(flow.nn, "Graph"):
        gmodel = jflow_model(kind, init)
        gopt, gsched = jflow_opt(kind, gmodel)
        graph = jflow_graph_step(kind, gmodel, gopt, gsched)
        first["jflow graph"] = graph(fx, fy).item()
        fns["jflow graph"] = (lambda: graph(fx, fy), number * scale, wait)
    model = jflow_model(kind, init)
    opt, sched = jflow_opt(kind, model)
    first["jflow eager"] = jflow_eager_step(kind, model, opt, sched, fx, fy).item()
    fns["jflow eager"] = (lambda: jflow_eager_step(kind, model, opt, sched, fx, fy),
                          max(2, number * scale // 4), wait)
    if hasattr(flow, "lazy"):  # the same eager step, recorded and run as one executable
        lmodel = jflow_model(kind, init)
        lopt, lsched = jflow_opt(kind, lmodel)

        def lazy_step() -> Any:
            with flow.lazy():
                return jflow_eager_step(kind, lmodel, lopt, lsched, fx, fy)
        first["jflow lazy"] = lazy_step().item()
        fns["jflow lazy"] = (lazy_step, max(2, number * scale // 2), wait)

    tc = torch_case(kind, init)
    if tc is not None:
        tstep, ttensor, _ = tc
        tx, ty = ttensor(x_np), ttensor(y_np)
        first["torch eager"] = tstep(tx, ty).item()
        fns["torch eager"] = (lambda: tstep(tx, ty), max(2, number * scale // 4), None)

    ref = first["jax"]
    for k, v in first.items():
        if not math.isclose(v, ref, rel_tol=1e-4, abs_tol=1e-5):
            raise AssertionError(f"{kind}: first-step loss of {k} = {v} differs from the "
                                 f"pure-JAX step's {ref}: the steps are not equivalent")
    return round_robin(fns, repeat)[0]


def graph_overhead(calls: int = 20000) -> tuple[float, float, float]:
    """(pure JAX µs, nn.Graph µs, median difference µs) per call of a tiny step, the two
    called in turn and each call timed."""
    b, d, h, o = 32, 32, 64, 10
    flow.manual_seed(0)
    model = flow.nn.Sequential(flow.nn.Linear(d, h), flow.nn.ReLU(), flow.nn.Linear(h, o))
    opt = flow.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = flow.nn.CrossEntropyLoss()

    class Step(flow.nn.Graph):
        def __init__(self) -> None:
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x: flow.Tensor, y: flow.Tensor) -> flow.Tensor:
            loss = loss_fn(self.model(x), y)
            loss.backward()
            return loss

    graph = Step()
    rs = np.random.RandomState(0)
    x_np, y_np = rs.randn(b, d).astype(np.float32), rs.randint(0, o, b)
    fx, fy = flow.tensor(x_np), flow.tensor(y_np)
    jx, jy = jnp.asarray(x_np), jnp.asarray(y_np)
    lr = jnp.asarray(0.01, jnp.float32)
    st = [{k: jnp.asarray(v.detach().numpy()) for k, v in model.named_parameters()}]

    def step(p: dict, x: jax.Array, y: jax.Array, lr: jax.Array) -> tuple:
        def loss(p: dict) -> jax.Array:
            hid = jax.nn.relu(x @ p["0.weight"].T + p["0.bias"])
            return cross_entropy(hid @ p["2.weight"].T + p["2.bias"], y)
        val, g = jax.value_and_grad(loss)(p)
        return {k: p[k] - lr * g[k] for k in p}, val

    jstep = jax.jit(step, donate_argnums=(0,))

    def jax_call() -> None:
        st[0], loss = jstep(st[0], jx, jy, lr)
        loss.block_until_ready()

    def graph_call() -> None:
        graph(fx, fy)._value.block_until_ready()

    first = float(graph(fx, fy))
    ref = float(jstep({k: jnp.copy(v) for k, v in st[0].items()}, jx, jy, lr)[1])
    if not math.isclose(first, ref, rel_tol=1e-5):
        raise AssertionError(f"overhead case: first loss {first} (nn.Graph) vs {ref} (JAX)")
    for _ in range(500):
        jax_call()
        graph_call()
    clock = time.perf_counter_ns
    tj, tg = np.zeros(calls), np.zeros(calls)
    for i in range(calls):
        t0 = clock()
        jax_call()
        t1 = clock()
        graph_call()
        tj[i], tg[i] = t1 - t0, clock() - t1
    if graph.trace_count != 1:
        raise AssertionError(f"the graph traced {graph.trace_count} times while timed")
    return (float(np.median(tj)) / 1e3, float(np.median(tg)) / 1e3,
            float(np.median(tg - tj)) / 1e3)


def overhead_line(sync: bool) -> str:
    """The overhead case's result line, in this process (``sync``: it runs with synchronous
    dispatch)."""
    j, g, d = graph_overhead()
    mode = ("synchronous CPU dispatch: nothing hidden" if sync
            else "default asynchronous dispatch")
    return (f"Graph call overhead (MLP 32-64-10, batch 32, SGD; each call waited for, the two "
            f"called in turn, {mode}): pure JAX {j:.1f} µs, nn.Graph {g:.1f} µs, overhead "
            f"{d:.1f} µs/call (median difference)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=10,
                    help="char-LM calls per timed run (the MLP makes 25x as many; eager 1/4)")
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="torch.set_num_threads (default 1, as eager_backward.py: PyTorch's "
                         "OpenMP pool collapses when the cores are shared)")
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    ap.add_argument("--overhead-only", action="store_true",
                    help="only the Graph call overhead cases")
    ap.add_argument("--sync-overhead-line", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.sync_overhead_line:  # (the subprocess of the synchronous-dispatch case)
        jax.config.update("jax_cpu_enable_async_dispatch", False)
        print(overhead_line(sync=True), flush=True)
        return
    cpu = platform.processor() or platform.machine()
    global USE_TORCH
    USE_TORCH = not args.no_torch
    try:
        if args.no_torch:
            raise ImportError
        import torch
        torch.set_num_threads(args.torch_threads)
        tinfo = f"torch {torch.__version__} ({torch.get_num_threads()} threads)"
    except ImportError:
        tinfo = "torch not installed"
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"jflow {flow.__version__}, jax {jax.__version__}, {tinfo}, {cpu} x "
          f"{os.cpu_count()}, load average {load}, backend {jax.default_backend()}; "
          f"median ms per training step")
    cols = ["jflow graph", "jax", "jflow eager", "jflow lazy", "torch eager"]
    header = (f"{'case':22s} " + " ".join(f"{c:>12s}" for c in cols)
              + f"   {'graph/jax':>9s} {'eager/torch':>11s} {'lazy/eager':>10s} "
                f"{'lazy/torch':>10s}")
    print(header)
    print("-" * len(header))
    cases = () if args.overhead_only else (("mlp", "digits MLP (64)"),
                                           ("lm", "char LM (32x64)"))
    for kind, name in cases:
        r = {k: v / 1e3 for k, v in run_case(kind, args.number, args.repeat).items()}
        cells = " ".join(f"{r[c]:12.3f}" if c in r else f"{'-':>12s}" for c in cols)
        g = f"{r['jflow graph'] / r['jax']:9.2f}" if "jflow graph" in r else f"{'-':>9s}"
        t = (f"{r['jflow eager'] / r['torch eager']:11.2f}" if "torch eager" in r
             else f"{'-':>11s}")
        le = (f"{r['jflow lazy'] / r['jflow eager']:10.2f}" if "jflow lazy" in r
              else f"{'-':>10s}")
        lt = (f"{r['jflow lazy'] / r['torch eager']:10.2f}"
              if "jflow lazy" in r and "torch eager" in r else f"{'-':>10s}")
        print(f"{name:22s} {cells}   {g} {t} {le} {lt}", flush=True)
    sync = subprocess.run([sys.executable, __file__, "--sync-overhead-line"], check=True,
                          capture_output=True, text=True)
    print(sync.stdout.strip().splitlines()[-1], flush=True)
    print(overhead_line(sync=False), flush=True)


if __name__ == "__main__":
    main()
