"""What bounds issue 40's targets on XLA CPU, measured (benchmarks/real_models.py has
the targets; its results file quotes this script's output).

    python benchmarks/real_models_floors.py            # the real shapes (~3 min on 2 cores)
    python benchmarks/real_models_floors.py --quick    # tiny shapes (the test's run)

**conv** — eager ResNet (target <= 1.2x PyTorch eager). An eager convolution is its own
executable, so it pays what XLA's CPU convolution costs on PyTorch's NCHW layout. This part
times, at every convolution shape of the ResNet step (the real_models model: 3x3 stem,
2-2-2-2 BasicBlocks of 16-32-64-128 channels, batch 32 of 3x32x32), XLA's forward, input
gradient and weight gradient, each a jitted program as jflow's conv ops are (``lax.conv`` and
its JAX transposes), against PyTorch's ``conv2d`` forward and its backward at one thread, and
sums them over the step. It also compiles one convolution, in a child process, with every XLA
CPU flag that names a library convolution (XNNPACK, YNNPACK, oneDNN) in ``XLA_FLAGS``, and
says whether the optimized program calls a library (a custom fusion or call): the flags
exist in jaxlib's table, but a build without that library path compiles XLA's own (Eigen)
convolution, with its NCHW <-> NHWC transposes, either way.

**lazy** — lazy mode on the GPT (target <= 0.8x PyTorch eager). A lazy step computes nothing
while its forward is recorded (the forward's run starts at ``backward()``), so a step takes
at least that recording plus its executables' run, and no executable of the step runs faster
than ``nn.Graph``'s one executable of all of it. This part times, interleaved, PyTorch eager,
jflow ``nn.Graph`` and jflow lazy (real_models' step, with the forward's recording timed and
checked to run nothing) on the GPT: the floor is ``nn.Graph + the forward's recording``.

**saved** — the memory target (peak growth within 1.5x PyTorch's). Is it what the step keeps
for its backward? This part builds each model in both libraries from the same weights, runs
one training forward, and sums the bytes of the arrays each library saved for the backward:
PyTorch's through ``torch.autograd.graph.saved_tensors_hooks``, jflow's from its tape (every
node's saved values, reached from the loss's ``grad_fn``), each distinct storage / array
once, the parameters left out (they are live anyway).

**warm** — start-up on a warm cache (target: the first 3 steps of the GPT <= 1.0 s, the
ResNet's <= 2.0 s). In a fresh process per run, cold (a new JAX cache directory) then warm
(the same directory again), the first three eager steps, with JAX's compile events summed
(``jax.monitoring``): what of a warm start is lowering each program to the module whose hash
is the cache key, what is reading executables back, and what is left (Python, running).

No timing is asserted anywhere: tests/test_benchmarks_real_models.py runs ``--quick``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
from _timing import machine  # noqa: E402  (benchmarks/ is on sys.path)
from jax import lax

#: XLA CPU flags that route a convolution to a library kernel where the build has one
LIBRARY_CONV_FLAGS = {
    "xla_cpu_experimental_xnn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION",
    "xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION",
    "xla_cpu_experimental_onednn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_CONVOLUTION",
    "xla_cpu_use_onednn": True,
}


def _median_ms(fn: Callable[[], Any], n: int) -> float:
    fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def resnet_convs(widths: Sequence[int], blocks: Sequence[int], batch: int,
                 size: int) -> list[tuple[int, int, int, int, int, int]]:
    """Every convolution of real_models' ResNet: (batch, in channels, input side, out
    channels, kernel, stride)."""
    out = [(batch, 3, size, widths[0], 3, 1)]
    cin, hw = widths[0], size
    for i, (cout, nb) in enumerate(zip(widths, blocks)):
        for j in range(nb):
            s = 2 if i > 0 and j == 0 else 1
            out.append((batch, cin, hw, cout, 3, s))
            out.append((batch, cout, hw // s, cout, 3, 1))
            if s != 1 or cin != cout:
                out.append((batch, cin, hw, cout, 1, s))
            cin, hw = cout, hw // s
    return out


def _one_conv(shape: tuple[int, ...], rng: np.random.Generator, n: int) -> dict[str, float]:
    """Median ms of one convolution's forward, input grad and weight grad in XLA (a jitted
    program each) and PyTorch (forward; backward to the input and weight)."""
    import torch
    b, c, hw, o, k, s = shape
    conv = _conv_fn(k, s)
    x = rng.standard_normal((b, c, hw, hw), np.float32)
    w = rng.standard_normal((o, c, k, k), np.float32)
    xj, wj = jax.device_put(x), jax.device_put(w)
    fwd = jax.jit(conv)
    dy = rng.standard_normal(fwd(xj, wj).shape, np.float32)
    dyj = jax.device_put(dy)
    x0, w0 = np.zeros(x.shape, np.float32), np.zeros(w.shape, np.float32)
    dx = jax.jit(lambda dy, w: jax.vjp(lambda x: conv(x, w), x0)[1](dy)[0])
    dw = jax.jit(lambda x, dy: jax.vjp(lambda w: conv(x, w), w0)[1](dy)[0])
    first = c == 3  # (the stem's input needs no gradient, in either library)
    tx = torch.tensor(x, requires_grad=not first)
    tw = torch.tensor(w, requires_grad=True)
    ty = torch.nn.functional.conv2d(tx, tw, stride=s, padding=k // 2)
    ins, tdy = ((tw,) if first else (tx, tw)), torch.tensor(dy)
    return {
        "xla fwd": _median_ms(lambda: fwd(xj, wj).block_until_ready(), n),
        "xla dx": 0.0 if first else _median_ms(lambda: dx(dyj, wj).block_until_ready(), n),
        "xla dw": _median_ms(lambda: dw(xj, dyj).block_until_ready(), n),
        "torch fwd": _median_ms(
            lambda: torch.nn.functional.conv2d(tx, tw, stride=s, padding=k // 2), n),
        "torch bwd": _median_ms(
            lambda: torch.autograd.grad(ty, ins, tdy, retain_graph=True), n),
    }


def _conv_fn(k: int, s: int) -> Callable[[Any, Any], Any]:
    p = k // 2
    return lambda x, w: lax.conv_general_dilated(x, w, (s, s), ((p, p), (p, p)),
                                                 dimension_numbers=("NCHW", "OIHW", "NCHW"))


def conv_floor(quick: bool, n: int, out: Callable[[str], None]) -> None:
    import real_models as rm
    import torch
    torch.set_num_threads(1)
    model = rm.MODELS["resnet"][2 if quick else 1]
    cfg = {k: model[k] for k in ("widths", "blocks", "batch", "size")}
    tot = dict.fromkeys(("xla fwd", "xla dx", "xla dw", "torch fwd", "torch bwd"), 0.0)
    rng = np.random.default_rng(0)
    for shape in resnet_convs(**cfg):
        for key, ms in _one_conv(shape, rng, n).items():
            tot[key] += ms
    # PyTorch's whole training step of that ResNet (real_models' model and step)
    r = rm.make_runner(rm.TORCH_EAGER, "resnet", model, rm.initial_state("resnet", model),
                       rm.batches("resnet", model))
    step = _median_ms(lambda: r.value(r.step()), max(3, n // 3))
    xla = tot["xla fwd"] + tot["xla dx"] + tot["xla dw"]
    pt = tot["torch fwd"] + tot["torch bwd"]
    floor = xla + step - pt
    out(f"conv: {len(resnet_convs(**cfg))} convolutions of the ResNet step "
        f"({'quick' if quick else 'real'} shapes), ms summed, medians of {n}")
    out(f"  XLA, one executable each: forward {tot['xla fwd']:.1f}, input grad "
        f"{tot['xla dx']:.1f}, weight grad {tot['xla dw']:.1f}, total {xla:.1f}")
    out(f"  PyTorch (1 thread):       forward {tot['torch fwd']:.1f}, backward "
        f"{tot['torch bwd']:.1f}, total {pt:.1f}  -> XLA / PyTorch {xla / pt:.2f}x")
    out(f"  PyTorch's whole step {step:.1f}, of which convolutions {pt:.1f}; XLA's "
        f"convolutions + PyTorch's other work = {floor:.1f} ({floor / step:.2f}x PyTorch's step)")
    flags = " ".join(f"--{k}={str(v).lower() if isinstance(v, bool) else v}"
                     for k, v in LIBRARY_CONV_FLAGS.items())
    env = {**os.environ, "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()}
    child = subprocess.run([sys.executable, "-c", _CONV_CHILD, str(Path(__file__).parent)],
                           env=env, capture_output=True, text=True, timeout=300)
    if child.returncode:
        out(f"  XLA_FLAGS={flags}: refused ({(child.stderr.strip().splitlines() or ['?'])[-1]})")
        return
    found, convs = json.loads(child.stdout.strip().splitlines()[-1])
    out(f"  with XLA_FLAGS={flags}:")
    out("    " + (f"a library kernel: {found[0][:100]}" if found else
                  f"no library kernel in the compiled program; XLA's own convolution "
                  f"({convs} instruction)"))


#: the child compiling one convolution under XLA_FLAGS (XLA reads them once, at start-up)
_CONV_CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import jax, jax.numpy as jnp
from real_models_floors import _conv_fn, library_kernels
x, w = jnp.zeros((2, 4, 8, 8), jnp.float32), jnp.zeros((4, 4, 3, 3), jnp.float32)
c = jax.jit(_conv_fn(3, 1)).lower(x, w).compile()
print(json.dumps([library_kernels(c), c.as_text().count(" convolution(")]))
"""


def library_kernels(compiled: Any) -> list[str]:
    """The optimized program's instructions that call a library (a custom fusion or call:
    how XLA CPU hands a convolution to XNNPACK, YNNPACK or oneDNN)."""
    return [line.strip() for line in compiled.as_text().splitlines()
            if "kind=kCustom" in line or "custom-call" in line or "custom_call_target" in line]


def lazy_floor(quick: bool, rounds: int, steps: int, out: Callable[[str], None]) -> None:
    import real_models as rm
    import torch

    import jflow as flow
    torch.set_num_threads(1)
    kind = "gpt"
    cfg = rm.MODELS[kind][2 if quick else 1]
    init, data = rm.initial_state(kind, cfg), rm.batches(kind, cfg)
    runners = {m: rm.make_runner(m, kind, cfg, init, data) for m in (rm.TORCH_EAGER, rm.GRAPH)}
    # lazy mode's step, as real_models.train_step under flow.lazy(), with the forward's
    # recording timed: nothing computes during it (no flush: checked with the mode's counters)
    model = rm.build(flow, kind, cfg)
    model.load_state_dict({k: flow.tensor(v) for k, v in init.items()})
    opt = flow.optim.AdamW(model.parameters(), lr=rm.LR, weight_decay=rm.WD)
    fdata = [(flow.tensor(x), flow.tensor(y)) for x, y in data]
    params = list(model.parameters())
    record: list[float] = []
    unflushed = [True]

    def lazy_step(x: Any, y: Any) -> Any:
        with flow.lazy():
            opt.zero_grad(set_to_none=True)
            before = flow.lazy_mode.stats()["flushes"]
            t = time.perf_counter()
            loss = model(x, y)
            record.append(time.perf_counter() - t)
            unflushed[0] &= flow.lazy_mode.stats()["flushes"] == before
            loss.backward()
            opt.step()
        return loss

    runners[rm.LAZY] = rm.Runner(lazy_step, fdata, lambda loss: jax.block_until_ready(
        (loss, params)))
    times: dict[str, list[float]] = {m: [] for m in runners}
    for r in runners.values():
        for _ in range(3):
            (r.wait or r.value)(r.step())
    record.clear()
    for _ in range(rounds):
        for m, r in runners.items():
            wait = r.wait or r.value
            t = time.perf_counter()
            for _ in range(steps):
                wait(r.step())
            times[m].append((time.perf_counter() - t) / steps * 1e3)
    med = {m: statistics.median(v) for m, v in times.items()}
    rec = statistics.median(record) * 1e3
    pt, graph = med[rm.TORCH_EAGER], med[rm.GRAPH]
    out(f"lazy: the GPT ({'quick' if quick else 'real'} config), ms per step, medians of "
        f"{rounds} interleaved rounds of {steps} waited steps")
    out(f"  PyTorch eager {pt:.2f}; jflow nn.Graph {graph:.2f} ({graph / pt:.2f}x); jflow "
        f"lazy {med[rm.LAZY]:.2f} ({med[rm.LAZY] / pt:.2f}x)")
    ran = "nothing ran meanwhile" if unflushed[0] else "A FLUSH RAN DURING IT"
    out(f"  lazy forward's recording {rec:.2f} ({ran}); nn.Graph + that = {graph + rec:.2f} "
        f"({(graph + rec) / pt:.2f}x)")


def _torch_saved(torch: Any, model: Any, x: Any, y: Any) -> int:
    """Bytes PyTorch saves for the backward of ``model(x, y)``: each storage once, the
    parameters' left out."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t: Any) -> Any:
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(x, y)
    return sum(seen.values())


def _jflow_saved(model: Any, loss: Any) -> int:
    """Bytes jflow's tape saves for the backward of ``loss``: every node's saved arrays,
    each once, the parameters' left out."""
    from jflow.autograd.graph import LEAF, Node
    params = {id(p._value) for p in model.parameters()}
    seen: dict[int, int] = {}
    todo, done = [loss.grad_fn], set()
    while todo:
        n = todo.pop()
        if id(n) in done:
            continue
        done.add(id(n))
        for value, *_ in n.saved or ():
            if isinstance(value, jax.Array) and id(value) not in params:
                seen[id(value)] = value.nbytes
        todo.extend(e[0] for e in n.next_edges
                    if e is not None and e[1] != LEAF and isinstance(e[0], Node))
    return sum(seen.values())


def saved_bytes(quick: bool, out: Callable[[str], None]) -> dict[str, tuple[int, int]]:
    """The activations each library keeps for the backward of one training forward, per
    model: ``{kind: (torch_bytes, jflow_bytes)}``."""
    import real_models as rm
    import torch

    import jflow as flow
    res = {}
    out(f"saved: activations kept for the backward of one training forward "
        f"({'quick' if quick else 'real'} configs; each array once, parameters left out)")
    for kind in ("gpt", "resnet"):
        cfg = rm.MODELS[kind][2 if quick else 1]
        init, (x, y) = rm.initial_state(kind, cfg), rm.batches(kind, cfg, 1)[0]
        tm = rm.build(torch, kind, cfg)
        tm.load_state_dict({k: torch.as_tensor(v) for k, v in init.items()})
        fm = rm.build(flow, kind, cfg)
        fm.load_state_dict({k: flow.tensor(v) for k, v in init.items()})
        t = _torch_saved(torch, tm, torch.as_tensor(x), torch.as_tensor(y))
        f = _jflow_saved(fm, fm(flow.tensor(x), flow.tensor(y)))
        res[kind] = (t, f)
        out(f"  {rm.MODELS[kind][0]}: PyTorch {t / 2**20:.2f} MiB, jflow {f / 2**20:.2f} MiB "
            f"({f / t:.2f}x)")
    return res


def warm_split(quick: bool, out: Callable[[str], None], kinds: Sequence[str] = ("gpt", "resnet")
               ) -> dict[str, list[dict[str, Any]]]:
    """Cold, then warm, first 3 eager steps per model (real_models.first_steps: a fresh
    process each, the same JAX cache directory): ``{kind: [cold, warm]}``."""
    import tempfile

    import real_models as rm
    res = {}
    out(f"warm: the first 3 eager steps ({'quick' if quick else 'real'} configs), cold then "
        f"warm (the same JAX cache directory), a fresh process each; seconds, and of them "
        f"JAX's compile events")
    for kind in kinds:
        with tempfile.TemporaryDirectory() as d:
            runs = []
            for label in ("cold", "warm"):
                r = rm.first_steps(kind, rm.EAGER, quick, d, 1)
                if "error" in r:
                    raise RuntimeError(f"real_models_floors: {kind} {label}: {r['error']}")
                runs.append(r)
                ev = r["events"]
                split = ", ".join(f"{k} {v:.2f}" for k, v in ev.items())
                out(f"  {rm.MODELS[kind][0]} {label}: {r['seconds']:.2f} s ({split}; the rest "
                    f"{r['seconds'] - sum(ev.values()):.2f})")
            res[kind] = runs
    return res


PARTS = ("conv", "lazy", "saved", "warm")


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny shapes, few repeats")
    ap.add_argument("--parts", default=",".join(PARTS),
                    help=f"comma-separated: {', '.join(PARTS)}")
    args = ap.parse_args(argv)
    parts = args.parts.split(",")
    bad = sorted(set(parts) - set(PARTS))
    if bad:
        raise SystemExit(f"real_models_floors: unknown --parts {bad}; expected "
                         f"{', '.join(PARTS)}")
    out(machine())
    if "conv" in parts:
        conv_floor(args.quick, 3 if args.quick else 25, out)
    if "lazy" in parts:
        lazy_floor(args.quick, 2 if args.quick else 7, 2 if args.quick else 5, out)
    if "saved" in parts:
        saved_bytes(args.quick, out)
    if "warm" in parts:
        warm_split(args.quick, out)


if __name__ == "__main__":
    sys.exit(main())
