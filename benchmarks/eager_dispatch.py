"""Eager dispatch overhead: jflow eager vs a bare cached ``jax.jit`` vs eager ``jax.numpy``
(and PyTorch CPU when installed), median µs per call on small tensors, in one run.

    python benchmarks/eager_dispatch.py [--repeat 7] [--number 2000]

Targets: jflow eager <= 1.3x the bare cached jax.jit call, and faster than the
eager jax.numpy call. ``flow.tensor(ndarray)`` (host to device, every training step): <= 10 µs.

Dynamic attrs (second table): a loop of 1000 calls each with a value never seen before
(leaky_relu alphas, clamp bounds) against the same loop with one value 1000 times; the
float attrs are runtime scalars, so a new value compiles nothing. Target: <= 2x.

Interleaved: each round runs every column once (``_timing.round_robin``), and the ratios are
the median over rounds of the per-round ratio, so load changes on a shared machine hit jflow
and its baselines alike. Like for like: every column is one library call per op as a user
writes it, and every run of ``number`` calls ends by waiting for its last result
(``jax.block_until_ready``; a no-op on PyTorch's synchronous CPU tensors). For leaky_relu
the "jax" column is ``jax.nn.leaky_relu``, which JAX itself defines as a jitted function (one
dispatch, as jflow's op), and the ``jax.jit`` column jits that same function; an eager
``jnp.where(x > 0, x, 0.2 * x)`` would be three dispatches and no fair baseline.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from _timing import machine, median_ratio, options, round_robin  # noqa: E402  (benchmarks/ is on sys.path)

import jflow as flow


def cases() -> list[tuple[str, dict[str, Callable[[], Any]]]]:
    rng = np.random.default_rng(0)
    x6 = rng.standard_normal(6).astype(np.float32)
    a16 = rng.standard_normal((16, 16)).astype(np.float32)
    b16 = rng.standard_normal((16, 16)).astype(np.float32)

    fx6, fa, fb = flow.tensor(x6), flow.tensor(a16), flow.tensor(b16)
    jx6, ja, jb = jnp.asarray(x6), jnp.asarray(a16), jnp.asarray(b16)

    jit_lrelu = jax.jit(lambda x: jax.nn.leaky_relu(x, 0.2))
    jit_add = jax.jit(jnp.add)
    jit_mm = jax.jit(jnp.matmul)
    jit_sum = jax.jit(jnp.sum)
    out: list[tuple[str, dict[str, Callable[[], Any]]]] = [
        ("leaky_relu (6)", {
            "jflow": lambda: flow._C.leaky_relu(fx6, 0.2),
            "jax.jit": lambda: jit_lrelu(jx6),
            "jax": lambda: jax.nn.leaky_relu(jx6, 0.2),  # jitted by JAX itself
        }),
        ("add (16x16)", {
            "jflow": lambda: flow.add(fa, fb),
            "jax.jit": lambda: jit_add(ja, jb),
            "jax": lambda: jnp.add(ja, jb),
        }),
        ("a + b operator (16x16)", {
            "jflow": lambda: fa + fb,
            "jax.jit": lambda: jit_add(ja, jb),
            "jax": lambda: ja + jb,
        }),
    ]
    # host to device (issue 40): a new tensor from a NumPy batch, as every training step makes
    # one; "jax.jit" is the floor (a jitted identity: JAX's C++ argument transfer), "jax" is
    # jax.device_put (jflow.host_transfer uses the first for shapes seen HOT_AFTER times before)
    h64 = rng.standard_normal(64).astype(np.float32)
    jit_ident = jax.jit(lambda x: x)
    out.append(("flow.tensor(ndarray 64)", {
        "jflow": lambda: flow.tensor(h64),
        "jax.jit": lambda: jit_ident(h64),
        "jax": lambda: jax.device_put(h64),
    }))
    if hasattr(flow, "matmul"):
        out.append(("matmul (16x16)", {
            "jflow": lambda: flow.matmul(fa, fb),
            "jax.jit": lambda: jit_mm(ja, jb),
            "jax": lambda: jnp.matmul(ja, jb),
        }))
    if hasattr(flow, "sum"):
        out.append(("sum (16x16)", {
            "jflow": lambda: flow.sum(fa),
            "jax.jit": lambda: jit_sum(ja),
            "jax": lambda: jnp.sum(ja),
        }))
    try:
        import torch
        torch.set_num_threads(1)
        tx6, ta, tb = torch.tensor(x6), torch.tensor(a16), torch.tensor(b16)
        torch_fns = {
            "leaky_relu (6)": lambda: torch.nn.functional.leaky_relu(tx6, 0.2),
            "add (16x16)": lambda: torch.add(ta, tb),
            "a + b operator (16x16)": lambda: ta + tb,
            "matmul (16x16)": lambda: torch.matmul(ta, tb),
            "sum (16x16)": lambda: torch.sum(ta),
            "flow.tensor(ndarray 64)": lambda: torch.tensor(h64),
        }
        for name, fns in out:
            fns["torch"] = torch_fns[name]
    except ImportError:
        pass
    return out


def attr_cases() -> list[tuple[str, dict[str, Callable[[], Any]]]]:
    """1000 calls with new attr values vs 1000 calls with one value (ms per loop)."""
    x = flow.tensor(np.random.default_rng(0).standard_normal(6).astype(np.float32))
    fresh = itertools.count()  # every loop draws values no earlier loop used

    def alphas() -> Any:
        for _ in range(1000):
            y = flow._C.leaky_relu(x, 0.01 + next(fresh) * 1e-9)
        return y

    def same_alpha() -> Any:
        for _ in range(1000):
            y = flow._C.leaky_relu(x, 0.2)
        return y

    def bounds() -> Any:
        for _ in range(1000):
            b = next(fresh) * 1e-9
            y = flow.clamp(x, -0.5 - b, 0.5 + b)
        return y

    def same_bounds() -> Any:
        for _ in range(1000):
            y = flow.clamp(x, -0.5, 0.5)
        return y

    return [("leaky_relu x1000", {"distinct": alphas, "same": same_alpha}),
            ("clamp x1000", {"distinct": bounds, "same": same_bounds})]


def main() -> None:
    args = options(__doc__, number=2000)
    print(f"{machine()}; median µs per call (runs waited for); ratios: median of per-round "
          f"ratios, {args.repeat} interleaved rounds")
    print("jax: the jax.numpy / jax.nn call (leaky_relu: jax.nn.leaky_relu, itself jitted)")
    header = f"{'case':24s} {'jflow':>8s} {'jax.jit':>8s} {'jax':>8s} {'torch':>8s}   " \
             f"{'jflow/jit':>9s} {'jflow/jax':>9s} {'jflow/torch':>11s}"
    print(header)
    print("-" * len(header))
    for name, fns in cases():
        r, runs = round_robin({k: (f, args.number, jax.block_until_ready)
                               for k, f in fns.items()}, args.repeat)
        t = r.get("torch")
        torch_col = f"{t:8.2f}" if t else f"{'-':>8s}"
        torch_ratio = f"{median_ratio(runs, 'jflow', 'torch'):11.2f}" if t else f"{'-':>11s}"
        print(f"{name:24s} {r['jflow']:8.2f} {r['jax.jit']:8.2f} {r['jax']:8.2f} "
              f"{torch_col}   {median_ratio(runs, 'jflow', 'jax.jit'):9.2f} "
              f"{median_ratio(runs, 'jflow', 'jax'):9.2f} {torch_ratio}")
    print()
    print("dynamic attrs: ms per loop of 1000 calls, new values each call vs one value")
    header = f"{'case':24s} {'distinct':>9s} {'same':>9s}   {'distinct/same':>13s}"
    print(header)
    print("-" * len(header))
    for name, fns in attr_cases():
        r, runs = round_robin({k: (f, 1, jax.block_until_ready)
                                for k, f in fns.items()}, args.repeat)
        print(f"{name:24s} {r['distinct'] / 1e3:9.2f} {r['same'] / 1e3:9.2f}   "
              f"{median_ratio(runs, 'distinct', 'same'):13.2f}")


if __name__ == "__main__":
    main()
