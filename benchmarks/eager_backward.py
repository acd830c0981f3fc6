"""Autograd steps: forward + backward through the tape, jflow vs PyTorch CPU eager (when
installed) vs a compiled ``jax.jit(jax.grad(...))``, median µs per step, in one run.

    python benchmarks/eager_backward.py [--repeat 7] [--number 300]

Cases: a chain of 10 elementwise ops + sum + backward on a small tensor (on one leaf, and on
a new leaf made from host data each step, ``x = flow.tensor(a, requires_grad=True)``, as
PyTorch code makes its inputs: issue 40's target <= 1.5x PyTorch), one forward+backward
step of a 3-layer MLP (batch 32, width 128), one SGD training step of that MLP written
as eager code (``zero_grad``, forward, MSE, ``backward``, ``step``; the JAX column is
``jax.jit(value_and_grad)`` + the update in one executable), and ten such steps of which
only the last is waited for (a loop that reads its loss now and then: asynchronous dispatch
overlaps a step's Python with the previous step's computation), and that training step on
a 1x1 MLP (batch 1, width 1): no computation to speak of, so each column is what its
framework costs per step around the arithmetic (Python, dispatch, autograd, the optimizer's
bookkeeping, waiting for the result). Target: jflow within 2x of
PyTorch eager for the chain; lazy mode (``flow.lazy()``, issue 21) <= 0.5x PyTorch for the
chain, <= 0.7x PyTorch and <= 1.5x JAX for the training step.

Like for like: every step of every column ends by waiting for its gradients
(``jax.block_until_ready``; a no-op on PyTorch's synchronous CPU tensors), so each column
times finished steps, not queued ones.

What jflow's column is: the forward is eager (one cached executable per op), but the backward
is NOT run op by op: the tape's graph has the same structural key every step, so after the
first step the WHOLE backward is one cached ``jax.jit`` executable
(``jflow/autograd/compiled_graph.py``). The column is labelled so ("eager fwd + cached-graph
bwd"): it is what a training loop gets, not the cost of an op-by-op eager backward.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from _timing import machine, median_ratio, options, round_robin  # noqa: E402  (benchmarks/ is on sys.path)

import jflow as flow

#: the columns (keys of cases()' dicts)
JFLOW, TORCH, JIT = "jflow eager fwd + cached-graph bwd", "torch", "jax.jit(grad)"
LAZY = "jflow lazy"


def chain(x: Any, c: Any) -> Any:
    """10 elementwise ops, written once for jflow, torch and jnp (operators and methods)."""
    y = x * c
    y = y + c
    y = y.tanh() if hasattr(y, "tanh") else jnp.tanh(y)
    y = y * 2.0
    y = y.sigmoid() if hasattr(y, "sigmoid") else jax.nn.sigmoid(y)
    y = y.exp() if hasattr(y, "exp") else jnp.exp(y)
    y = y - c
    y = y.sin() if hasattr(y, "sin") else jnp.sin(y)
    y = y * y
    y = y / 3.0
    return y.sum()


def mlp_step(data: Any, ws: list[Any], bs: list[Any], relu: Callable[[Any], Any]
             ) -> list[Any]:
    """One forward + backward of the 3-layer MLP, written once for jflow and torch; returns
    the gradients (to wait on)."""
    h = data
    for i, (w, b) in enumerate(zip(ws, bs)):
        h = h @ w + b
        if i < 2:
            h = relu(h)
    loss = (h * h).mean()
    for p in (*ws, *bs):
        p.grad = None
    loss.backward()
    return [p.grad for p in (*ws, *bs)]


def train_step(model: Any, opt: Any, data: Any, target: Any, mse: Callable[..., Any]) -> Any:
    """One SGD training step of an ``nn.Sequential`` MLP, written once for jflow and torch;
    returns the loss (to wait on: the update is computed with it)."""
    opt.zero_grad()
    loss = mse(model(data), target)
    loss.backward()
    opt.step()
    return loss


def _mlp(nn: Any, width: int = 128) -> Any:
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, width))


def _mse_jnp(params: Any, data: Any, target: Any) -> Any:
    h = data
    for i, (w, b) in enumerate(params):
        h = h @ w.T + b
        if i < 2:
            h = jax.nn.relu(h)
    return jnp.mean((h - target) ** 2)


@jax.jit
def _jit_train(params: Any, data: Any, target: Any) -> Any:
    loss, grads = jax.value_and_grad(_mse_jnp)(params, data, target)
    return loss, jax.tree.map(lambda p, g: p - 0.01 * g, params, grads)


def training(batch: np.ndarray, lazily: Callable[[Callable[[], Any]], Callable[[], Any]]
             ) -> dict[str, Callable[[], Any]]:
    """The MLP SGD training step of width ``batch.shape[1]`` in every column (the same
    initial weights; torch when installed)."""
    width = batch.shape[1]
    fmodel = _mlp(flow.nn, width)
    fopt = flow.optim.SGD(fmodel.parameters(), lr=0.01)
    fdata, ftarget = flow.tensor(batch), flow.tensor(batch[::-1].copy())

    def jflow_train() -> Any:
        return train_step(fmodel, fopt, fdata, ftarget, flow.nn.functional.mse_loss)

    jtrain = [[(jnp.asarray(m.weight.detach().numpy()), jnp.asarray(m.bias.detach().numpy()))
               for m in fmodel if hasattr(m, "weight")]]
    jdata, jtarget = jnp.asarray(batch), jnp.asarray(batch[::-1].copy())

    def jax_train() -> Any:
        loss, jtrain[0] = _jit_train(jtrain[0], jdata, jtarget)
        return loss

    out = {JFLOW: jflow_train, LAZY: lazily(jflow_train), JIT: jax_train}
    try:
        import torch
    except ImportError:
        return out
    torch.set_num_threads(1)
    tmodel = _mlp(torch.nn, width)
    with torch.no_grad():
        for tm, fm in zip(tmodel, fmodel):
            if hasattr(tm, "weight"):
                tm.weight.copy_(torch.tensor(fm.weight.detach().numpy()))
                tm.bias.copy_(torch.tensor(fm.bias.detach().numpy()))
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.01)
    tdata, ttarget = torch.tensor(batch), torch.tensor(batch[::-1].copy())
    out[TORCH] = lambda: train_step(tmodel, topt, tdata, ttarget, torch.nn.functional.mse_loss)
    return out


def ten(step: Callable[[], Any]) -> Callable[[], Any]:
    """Ten training steps, of which only the last loss is waited for: how a training loop
    that reads its loss now and then runs (an asynchronous framework overlaps its Python
    with the previous step's computation; PyTorch eager is synchronous)."""
    def run() -> Any:
        for _ in range(9):
            step()
        return step()
    return run


def waited(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` and then a wait for its result: the same for every column."""
    return lambda: jax.block_until_ready(fn())


def cases() -> list[tuple[str, dict[str, Callable[[], Any]]]]:
    rng = np.random.default_rng(0)
    x16 = rng.standard_normal(16).astype(np.float32)
    c16 = rng.standard_normal(16).astype(np.float32)
    batch = rng.standard_normal((32, 128)).astype(np.float32)
    ws = [(rng.standard_normal((128, 128)) / np.sqrt(128)).astype(np.float32) for _ in range(3)]
    bs = [np.zeros(128, np.float32) for _ in range(3)]

    fx = flow.tensor(x16, requires_grad=True)
    fc = flow.tensor(c16)

    def jflow_chain() -> Any:
        fx.grad = None
        chain(fx, fc).backward()
        return fx.grad

    jx, jc = jnp.asarray(x16), jnp.asarray(c16)
    jit_chain = jax.jit(jax.grad(lambda x: chain(x, jc)))

    def jflow_fresh_chain() -> Any:  # a new leaf from host data each step, as PyTorch code
        x = flow.tensor(x16, requires_grad=True)  # makes its inputs
        chain(x, fc).backward()
        return x.grad

    fws = [flow.tensor(w, requires_grad=True) for w in ws]
    fbs = [flow.tensor(b, requires_grad=True) for b in bs]
    fdata = flow.tensor(batch)

    def jflow_mlp() -> list[Any]:
        return mlp_step(fdata, fws, fbs, flow.relu)

    def mlp_jnp(params: Any, data: Any) -> Any:
        h = data
        for i, (w, b) in enumerate(params):
            h = h @ w + b
            if i < 2:
                h = jax.nn.relu(h)
        return jnp.mean(h * h)

    jparams = [(jnp.asarray(w), jnp.asarray(b)) for w, b in zip(ws, bs)]
    jdata = jnp.asarray(batch)
    jit_mlp = jax.jit(jax.grad(mlp_jnp))

    def lazily(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            with flow.lazy():  # (leaving the block runs what was recorded)
                return fn()
        return run

    train = training(batch, lazily)
    tiny = training(rng.standard_normal((1, 1)).astype(np.float32), lazily)

    out = [
        ("chain of 10 ops + sum (16)", {
            JFLOW: jflow_chain, LAZY: lazily(jflow_chain), JIT: lambda: jit_chain(jx),
        }),
        ("chain, new input each (16)", {
            JFLOW: jflow_fresh_chain, LAZY: lazily(jflow_fresh_chain),
            JIT: lambda: jit_chain(jax.device_put(x16)),
        }),
        ("3-layer MLP step (32x128)", {
            JFLOW: jflow_mlp, LAZY: lazily(jflow_mlp), JIT: lambda: jit_mlp(jparams, jdata),
        }),
        ("MLP SGD train step (32x128)", train),
        ("10 SGD steps, 1 read (32x128)", {k: ten(f) for k, f in train.items()
                                           if k != LAZY} | {LAZY: lazily(ten(train[JFLOW]))}),
        ("MLP SGD step, 1x1 (overhead)", tiny),
    ]
    try:
        import torch
        torch.set_num_threads(1)
        tx = torch.tensor(x16, requires_grad=True)
        tc = torch.tensor(c16)

        def torch_chain() -> Any:
            tx.grad = None
            chain(tx, tc).backward()
            return tx.grad

        def torch_fresh_chain() -> Any:
            x = torch.tensor(x16, requires_grad=True)
            chain(x, tc).backward()
            return x.grad

        tws = [torch.tensor(w, requires_grad=True) for w in ws]
        tbs = [torch.tensor(b, requires_grad=True) for b in bs]
        tdata = torch.tensor(batch)

        def torch_mlp() -> list[Any]:
            return mlp_step(tdata, tws, tbs, torch.relu)

        out[0][1][TORCH] = torch_chain
        out[1][1][TORCH] = torch_fresh_chain
        out[2][1][TORCH] = torch_mlp
    except ImportError:
        pass
    return out


def _col(v: float | None, width: int, fmt: str = ".1f") -> str:
    return f"{v:{width}{fmt}}" if v else f"{'-':>{width}s}"


def table(number: int, repeat: int) -> None:
    """Print the results table, in this process's dispatch mode."""
    header = f"{'case':28s} {'jflow (cached-graph bwd)':>24s} {'lazy':>8s} {'torch':>9s} " \
             f"{'jit(grad)':>10s}   {'jflow/torch':>11s} {'jflow/jit':>9s} {'lazy/torch':>10s} " \
             f"{'lazy/jit':>8s}"
    print(header)
    print("-" * len(header))
    for name, fns in cases():
        r, runs = round_robin({k: (waited(f), number, None) for k, f in fns.items()}, repeat)
        j, t = r[JFLOW], r.get(TORCH)
        vs_torch = t and median_ratio(runs, JFLOW, TORCH)
        lazy_vs_torch = t and median_ratio(runs, LAZY, TORCH)
        lazy_vs_jit = median_ratio(runs, LAZY, JIT)
        print(f"{name:28s} {j:24.1f} {r[LAZY]:8.1f} {_col(t, 9)} {r[JIT]:10.1f}   "
              f"{_col(vs_torch, 11, '.2f')} {median_ratio(runs, JFLOW, JIT):9.2f} "
              f"{_col(lazy_vs_torch, 10, '.2f')} {lazy_vs_jit:8.2f}", flush=True)


def main() -> None:
    if "--sync" in sys.argv:  # (the subprocess of the synchronous-dispatch table)
        sys.argv.remove("--sync")
        jax.config.update("jax_cpu_enable_async_dispatch", False)
        args = options(__doc__, number=300)
        table(args.number, args.repeat)
        return
    args = options(__doc__, number=300)
    print(f"{machine()}; median µs per forward+backward step, every step waited for")
    print("jflow column = eager forward + cached-graph backward: the whole backward is ONE "
          "cached executable per graph (jflow/autograd/compiled_graph.py), not an op-by-op "
          "eager backward; ratios: median of per-round ratios over interleaved rounds")
    print("\nJAX's default asynchronous CPU dispatch:", flush=True)
    table(args.number, args.repeat)
    # synchronous dispatch runs each executable on the calling thread: no wake-ups of XLA's
    # worker thread, which on small shared VMs cost a lazy step's one big dispatch most
    print("\nsynchronous CPU dispatch (jax_cpu_enable_async_dispatch=False; every column):",
          flush=True)
    subprocess.run([sys.executable, __file__, "--sync", "--repeat", str(args.repeat),
                    "--number", str(args.number)], check=True)


if __name__ == "__main__":
    main()
