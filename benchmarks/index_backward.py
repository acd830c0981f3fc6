"""The backward of row lookups (embedding, index_select): one scatter-add of whole rows (the ops
``embedding_grad`` and ``index_add``) against the element-wise scatter-add they replaced
(``scatter_add`` with the index expanded over every column, which built two index arrays of
the gradient's size) and PyTorch's kernels at one thread; median µs per call, interleaved
rounds, each call waited for.

    python benchmarks/index_backward.py [--repeat 7] [--number 20]

Sizes: a small language model's embedding (256 x 128, 512 tokens), GPT-2's (50257 x 768, 512
tokens; most of its time is the zero-filled 150 MB table, in both libraries) and an
index_add of 1024 rows into a 4096 x 256 table.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from _timing import machine, median_ratio, options, round_robin  # noqa: E402  (benchmarks/ is on sys.path)

import jflow as flow
from jflow.ops import get


def _wait(t: Any) -> Any:
    return jax.block_until_ready(t._value) if isinstance(t, flow.Tensor) else t


def cases() -> list[tuple[str, dict[str, Any]]]:
    rng = np.random.default_rng(0)
    out = []
    for n, rows, d in [(256, 512, 128), (50257, 512, 768)]:
        idx = rng.integers(0, n, rows)
        dy = rng.standard_normal((rows, d)).astype(np.float32)
        fi, fdy = flow.tensor(idx), flow.tensor(dy)
        index = fi.reshape(rows, 1).expand(rows, d)
        fns = {"jflow embedding_grad": lambda fdy=fdy, fi=fi, n=n: get("embedding_grad")(
                   fdy, fi, num_embeddings=n),
               "jflow element-wise": lambda index=index, fdy=fdy, n=n, d=d: flow.zeros(
                   n, d).scatter_add(0, index, fdy)}
        try:
            import torch
            ti, tdy = torch.from_numpy(idx), torch.from_numpy(dy)
            fns["torch"] = lambda ti=ti, tdy=tdy, n=n: torch.ops.aten.embedding_dense_backward(
                tdy, ti, n, -1, False)
        except ImportError:
            pass
        out.append((f"embedding backward {n}x{d}, {rows} rows", fns))
    x = rng.standard_normal((4096, 256)).astype(np.float32)
    idx = rng.integers(0, 4096, 1024)
    src = rng.standard_normal((1024, 256)).astype(np.float32)
    fx, fi, fs = flow.tensor(x), flow.tensor(idx), flow.tensor(src)
    index = fi.reshape(1024, 1).expand(1024, 256)
    fns = {"jflow index_add": lambda: fx.index_add(0, fi, fs),
           "jflow element-wise": lambda: fx.scatter_add(0, index, fs)}
    try:
        import torch
        tx, ti, ts = torch.from_numpy(x), torch.from_numpy(idx), torch.from_numpy(src)
        fns["torch"] = lambda: tx.index_add(0, ti, ts)
    except ImportError:
        pass
    out.append(("index_add 1024 rows into 4096x256", fns))
    return out


def main() -> None:
    a = options(__doc__, number=20)
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        torch = None
    print(f"# {machine()}" + (f"; torch {torch.__version__} at 1 thread" if torch else ""))
    for name, fns in cases():
        outs = {k: f().numpy() for k, f in fns.items()}   # all compute the same
        first = next(iter(outs.values()))
        for k, v in outs.items():
            np.testing.assert_allclose(v, first, rtol=1e-5, atol=1e-5, err_msg=k)
        med, runs = round_robin({k: (f, a.number, _wait) for k, f in fns.items()}, a.repeat)
        ref = "torch" if "torch" in fns else next(iter(fns))
        print(name)
        for k in fns:
            print(f"  {k:22s} {med[k]:10.1f} us  x {ref} {median_ratio(runs, k, ref):6.2f}")


if __name__ == "__main__":
    main()
