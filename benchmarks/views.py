"""The cost of views that alias (jflow.views): making a view vs a plain op call, and a write
through a view vs the same in-place op on a plain tensor; median µs per call, interleaved
rounds, PyTorch CPU alongside when installed.

    python benchmarks/views.py [--repeat 7] [--number 2000]

Target (issue 13): a view op within 1.5x of a plain op call (``x.neg()`` on the same tensor,
one dispatch). A write through a view is functionalized (the view's new value, then a
scatter into the base: two dispatches where PyTorch writes memory) — measured, reported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
from _timing import machine, median_ratio, options, round_robin  # noqa: E402  (benchmarks/ is on sys.path)

import jflow as flow


def _wait(t: Any) -> Any:
    return jax.block_until_ready(t._value) if isinstance(t, flow.Tensor) else t


def cases() -> list[tuple[str, Callable[..., Any] | None]]:
    """``(name, fn(x, y))``: the same code runs on jflow and on torch tensors."""
    return [
        ("plain op: x.neg()", lambda x, y: x.neg()),
        ("view: x.t()", lambda x, y: x.t()),
        ("view: x.view(-1)", lambda x, y: x.view(-1)),
        ("view: x[1]", lambda x, y: x[1]),
        ("view: x[:, 2:5]", lambda x, y: x[:, 2:5]),
        ("view: x.narrow(0, 1, 4)", lambda x, y: x.narrow(0, 1, 4)),
        ("plain in-place: y.add_(1)", lambda x, y: y.add_(1.0)),
        ("write: y[1].add_(1)", lambda x, y: y[1].add_(1.0)),
        ("write: y[:, 2].zero_()", lambda x, y: y[:, 2].zero_()),
        ("write: y[2:5] = x[:3]", lambda x, y: y.__setitem__(slice(2, 5), x[:3])),
        ("write: y.t()[1].mul_(2)", lambda x, y: y.t()[1].mul_(2.0)),
        ("read a stale view: y.add_(1); v.sum()", None),
    ]


def main() -> None:
    args = options(__doc__, number=2000)
    print(f"{machine()}; 16x16 float32; median µs per call; ratios: median of per-round "
          f"ratios over {args.repeat} interleaved rounds")
    a = np.random.default_rng(0).standard_normal((16, 16)).astype(np.float32)
    libs: dict[str, Any] = {"jflow": flow}
    try:
        import torch
        torch.set_num_threads(1)
        libs["torch"] = torch
    except ImportError:
        pass
    tensors = {k: (lib.tensor(a), lib.tensor(a)) for k, lib in libs.items()}
    stale = {}
    for k, (_, y) in tensors.items():
        v = y[3]

        def read_stale(y=y, v=v):
            y.add_(1.0)
            return v.sum()
        stale[k] = read_stale
    header = f"{'case':40s} {'jflow':>8s} {'torch':>8s} {'/plain op':>10s} {'/torch':>8s}"
    print(header)
    print("-" * len(header))
    fns: dict[str, tuple[Callable[[], Any], int, Any]] = {}
    names = []
    for name, fn in cases():
        names.append(name)
        for k, (x, y) in tensors.items():
            f = stale[k] if fn is None else (lambda fn=fn, x=x, y=y: fn(x, y))
            fns[f"{k}|{name}"] = (f, args.number, _wait)
    r, runs = round_robin(fns, args.repeat)
    plain = "jflow|plain op: x.neg()"
    plain_inplace = "jflow|plain in-place: y.add_(1)"
    for name in names:
        j = r[f"jflow|{name}"]
        t = r.get(f"torch|{name}")
        ref = plain_inplace if name.startswith(("write", "read")) else plain
        rel = median_ratio(runs, f"jflow|{name}", ref)
        tc = f"{t:8.2f}" if t else f"{'-':>8s}"
        tr = f"{median_ratio(runs, f'jflow|{name}', f'torch|{name}'):8.2f}" if t else \
            f"{'-':>8s}"
        print(f"{name:40s} {j:8.2f} {tc} {rel:10.2f} {tr}")
    print("/plain op: views vs x.neg(); writes and stale reads vs y.add_(1) on a plain tensor")


if __name__ == "__main__":
    main()
