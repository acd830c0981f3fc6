"""Global tensors (SBP): collective traffic of compiled programs, and eager overhead.

    python benchmarks/sbp.py [--repeat 7] [--number 300] [--details]

Runs on 8 virtual CPU devices (``jax_num_cpu_devices``, set below before JAX computes
anything). Two measurements:

1. **Traffic.** Each case (matmul chains, one MLP training step: forward, ``loss.backward()``
   on the tape, SGD update) is compiled as ONE ``flow.jit`` of a function of global tensors,
   which chooses the SBP signatures of the whole step together (``jflow/sharding/plan.py``).
   The collectives in the optimized HLO (``flow.jit(f).lower(*args).compile().as_text()``)
   are parsed and their bytes summed, in two units (n = devices in the collective's group):

   * *payload*: the buffer each device hands the collective — the operand for all-reduce,
     reduce-scatter, all-to-all and collective-permute; the (gathered) result for all-gather;
   * *wire*: bytes each device sends with ring algorithms — all-reduce 2(n-1)/n x operand,
     all-gather (n-1)/n x result, reduce-scatter and all-to-all (n-1)/n x operand,
     collective-permute the operand. This is the unit of jflow's boxing cost model
     (``jflow.sharding.boxing.cost``), so it is the one compared.

   Compared against: the minimum the ops' SBP signatures allow (derived by hand from the shapes
   in each case's builder; the cheapest of the listed candidates), and the cost model's
   estimate from ``flow.sharding.explain`` (eager run: greedy per-op choices, what eager code
   moves). ``explain`` records op calls only, so a second column adds the cost model's bytes
   for the explicit ``to_global`` calls the case makes (gradient / loss layout for the
   update). Before the whole-step choice, case (f) compiled moved 8.4x its minimum.

2. **Eager overhead.** Median µs per call (``--number`` calls per run, the last result
   waited for, median of ``--repeat`` runs) of one small op on global tensors vs the same op
   on local tensors, and vs a bare cached ``jax.jit(shard_map)`` of the op on the same
   sharded arrays.

Every compiled case is also checked against the same function run on local tensors.
"""

from __future__ import annotations

import jax

jax.config.update("jax_num_cpu_devices", 8)  # must precede any JAX computation, jflow's too

import argparse  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Any  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _timing import bench  # noqa: E402  (benchmarks/ is on sys.path)
from jax.sharding import PartitionSpec  # noqa: E402

import jflow as flow  # noqa: E402
from jflow.sharding.boxing import cost as boxing_cost  # noqa: E402
from jflow.sharding.hlo_traffic import Collective, hlo_collectives, ring  # noqa: E402

S, B = flow.sbp.split, flow.sbp.broadcast
P8 = flow.placement("cpu", list(range(8)))
P24 = flow.placement("cpu", [[0, 1, 2, 3], [4, 5, 6, 7]])  # r0: data parallel, r1: tensor
F32 = 4  # bytes per element
LR = 0.1


# -- explicit conversions, costed for the "explain + to_global" column ------------------------

_EXPLICIT: list[float] | None = None  # cost-model bytes of explicit to_global calls, if on


def box(t: flow.Tensor, like: flow.Tensor | None = None) -> flow.Tensor:
    """``t.to_global(sbp=...)`` with ``like``'s nd-SBP (all broadcast when None); a local
    ``t`` is returned as is, so the case functions also run on local tensors. While costing
    (``_EXPLICIT`` set), adds the cost model's bytes for the conversion."""
    if not t.is_global:
        return t
    sbp = like.sbp if like is not None else (B,) * len(t.placement.hierarchy)
    if _EXPLICIT is not None:
        _EXPLICIT.append(boxing_cost(t.sbp, sbp, t.numel() * t.element_size(),
                                     t.placement.hierarchy, tuple(t.shape)))
    return t.to_global(sbp=sbp)


# -- the computations --------------------------------------------------------------------------

def chain(x: flow.Tensor, w1: flow.Tensor, w2: flow.Tensor, w3: flow.Tensor) -> flow.Tensor:
    return x @ w1 @ w2 @ w3


def mlp_step(x: flow.Tensor, w1: flow.Tensor, w2: flow.Tensor) -> tuple[flow.Tensor, ...]:
    """One SGD step of ``mean((tanh(x @ w1) @ w2) ** 2)``: backward on the tape, then each
    gradient boxed to its weight's layout (a data-parallel gradient is a partial sum) and the
    loss to broadcast. The boxing runs under no_grad: recorded on the tape, ``to_global``'s
    output loses its placement (``Function.apply`` re-wraps outputs as local tensors)."""
    loss = (((x @ w1).tanh() @ w2) ** 2).mean()
    loss.backward()
    with flow.no_grad():
        new_w1 = w1 - LR * box(w1.grad, w1)
        new_w2 = w2 - LR * box(w2.grad, w2)
        loss = box(loss)
    return loss, new_w1, new_w2


# -- the cases ---------------------------------------------------------------------------------

@dataclass
class Case:
    name: str
    plc: Any
    fn: Callable[..., Any]
    args: list[tuple[tuple[int, ...], Any, bool]]  # (shape, nd-SBP, requires_grad) per input
    minimum: float  # wire bytes per device
    why: str  # how the minimum comes about


def cases() -> list[Case]:
    """The cases, each with the minimum wire bytes per device its signatures allow, derived
    below in elements (x 4 bytes) with f(n) = (n-1)/n; shapes x [N, D], w1 [D, H], w2 [H, D],
    w3 [D, H]. Where another assignment of signatures could move less for other shapes, the
    cheaper candidate is taken (min), so the shapes pick which strategy is the minimum."""
    out = []
    # (a) data-parallel chain, x S(0), weights B: every matmul is (S(0), B) -> S(0), rows stay
    # local, nothing moves.
    n, d, h = 1024, 256, 256
    out.append(Case("a chain DP", P8, chain,
                    [((n, d), (S(0),), False), ((d, h), (B,), False), ((h, d), (B,), False),
                     ((d, h), (B,), False)],
                    0.0, "(S(0),B)->S(0) everywhere"))

    # (b) Megatron chain, x B, weights S(1), S(0), S(1): x@w1 is (B,S(1)) -> S(1) and @w2
    # (S(1),S(0)) -> P, both free; @w3 takes a partial sum [N, D], cheapest of
    #   all-reduce it (P -> B), then (B,S(1)) -> S(1)      2 f(8) N D
    #   all-gather w3, then (P,B) -> P                       f(8) D H
    # (a reduce-scatter of the activation needs w3 moved as well: more than the second).
    n, d, h = 64, 512, 2048
    m = min(2 * ring(8) * n * d, ring(8) * d * h) * F32
    out.append(Case("b chain TP (Megatron)", P8, chain,
                    [((n, d), (B,), False), ((d, h), (S(1),), False), ((h, d), (S(0),), False),
                     ((d, h), (S(1),), False)],
                    m, "all-reduce of x@w1@w2 [N,D], 2f(8)ND"))

    # (c) data-parallel step, x S(0), weights B: the forward and the backward to dh, dy are
    # row-local; each weight gradient (dW1 = x^T dh, dW2 = h^T dy) is (S(1),S(0)) -> P and the
    # update needs it B. Per weight, cheapest of
    #   all-reduce the gradient                              2 f(8) D H
    #   gather both activations, then (B,B) -> B             f(8) N (D + H)
    # plus the loss: a mean over the split batch is a partial sum -> all-reduce 1 element.
    n, d, h = 1024, 256, 256
    per_w = min(2 * ring(8) * d * h, ring(8) * n * (d + h))
    m = (2 * per_w + 2 * ring(8)) * F32
    out.append(Case("c MLP step DP", P8, mlp_step,
                    [((n, d), (S(0),), False), ((d, h), (B,), True), ((h, d), (B,), True)],
                    m, "all-reduce of dW1, dW2 and the loss, 2f(8)(2DH+1)"))

    # (d) tensor-parallel step, x B, w1 S(1), w2 S(0): x@w1 -> S(1), tanh, @w2 -> y P; the
    # square needs y summed, cheapest of
    #   all-reduce y (P -> B); or reduce-scatter it and all-gather dy in the backward: the
    #   same bytes                                           2 f(8) N D
    #   all-gather both weights instead (then all B)         2 f(8) D H
    # After the all-reduce the loss is B and the backward is local: dh = dy w2^T (B,S(0)^T)
    # -> S(1), dW1 = x^T dh (B,S(1)) -> S(1), dW2 = h^T dy (S(1)^T,B) -> S(0): the gradients
    # come out in their weights' layouts (x needs no gradient).
    n, d, h = 64, 512, 2048
    m = min(2 * ring(8) * n * d, 2 * ring(8) * d * h) * F32
    out.append(Case("d MLP step TP", P8, mlp_step,
                    [((n, d), (B,), False), ((d, h), (S(1),), True), ((h, d), (S(0),), True)],
                    m, "all-reduce of y [N,D], 2f(8)ND"))

    # (e) hybrid chain on the 2x4 placement, rows split over r0, Megatron over r1: case (b)
    # on each half of the rows, over r1 (4 devices): all-reduce of [N/2, D] (or all-gather w3
    # over r1: f(4) D H).
    n, d, h = 64, 512, 2048
    m = min(2 * ring(4) * n // 2 * d, ring(4) * d * h) * F32
    out.append(Case("e chain DPxTP 2x4", P24, chain,
                    [((n, d), (S(0), B), False), ((d, h), (B, S(1)), False),
                     ((h, d), (B, S(0)), False), ((d, h), (B, S(1)), False)],
                    m, "r1 all-reduce of [N/2,D], 2f(4)ND/2"))

    # (f) hybrid step on 2x4: case (d) over r1 on each half of the rows, then case (c) over
    # r0 on the r1 shards of the gradients:
    #   r1: all-reduce y [N/2, D]                            2 f(4) N/2 D
    #       (or all-gather both weights over r1:             2 f(4) D H)
    #   r0, per weight: all-reduce its shard [D, H/4]        2 f(2) D H/4
    #       (or gather its two activations over r0:          f(2) N (D + H/4))
    #   r0: the loss                                         2 f(2)
    n, d, h = 1024, 256, 1024
    per_w = min(2 * ring(2) * d * h // 4, ring(2) * n * (d + h // 4))
    m = (min(2 * ring(4) * n // 2 * d, 2 * ring(4) * d * h) + 2 * per_w + 2 * ring(2)) * F32
    out.append(Case("f MLP step DPxTP 2x4", P24, mlp_step,
                    [((n, d), (S(0), B), False), ((d, h), (B, S(1)), True),
                     ((h, d), (B, S(0)), True)],
                    m, "r1 all-reduce of y, r0 all-reduce of dW shards and the loss"))
    return out


def make_inputs(case: Case, seed: int = 0) -> tuple[list[np.ndarray], list[flow.Tensor]]:
    rng = np.random.default_rng(seed)
    values, tensors = [], []
    for k, (shape, nd, rg) in enumerate(case.args):
        scale = 1.0 if k == 0 else 1.0 / math.sqrt(shape[0])  # weights: 1/sqrt(fan_in)
        v = (rng.standard_normal(shape) * scale).astype(np.float32)
        t = flow.tensor(v).to_global(case.plc, nd)
        values.append(v)
        tensors.append(t.requires_grad_() if rg else t)
    return values, tensors


# -- traffic -----------------------------------------------------------------------------------

@dataclass
class Traffic:
    case: Case
    collectives: list[Collective]
    explain: Any
    explicit: float
    max_err: float
    error: str = ""


def _logical(out: Any) -> list[np.ndarray]:
    outs = out if isinstance(out, tuple) else (out,)
    return [o.numpy() for o in outs]


def _local_reference(case: Case, values: list[np.ndarray]) -> list[np.ndarray]:
    ts = [flow.tensor(v).requires_grad_() if rg else flow.tensor(v)
          for v, (_, _, rg) in zip(values, case.args)]
    return _logical(case.fn(*ts))


def measure_traffic(case: Case) -> Traffic:
    global _EXPLICIT
    values, args = make_inputs(case)
    try:
        # eager first: a global op with a Python scalar operand caches the scalar's broadcast
        # copy (jflow.sharding.execute._broadcast_scalar), and one first made under jax.jit
        # is a tracer that later eager calls would reuse; made eagerly, traces reuse it too
        _EXPLICIT = []
        try:
            ex = flow.sharding.explain(case.fn, *args)
            explicit = sum(_EXPLICIT)
        finally:
            _EXPLICIT = None
        for t in args:
            t.grad = None
        step = flow.jit(case.fn)  # the whole step's signatures chosen together
        colls = hlo_collectives(step.lower(*args).compile().as_text(), case.plc.size)
        got = _logical(step(*args))
        want = _local_reference(case, values)
        err = max(float(np.max(np.abs(g - w)) / np.max(np.abs(w))) for g, w in zip(got, want))
    except Exception as e:  # noqa: BLE001 - a failing case is reported in its row
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        frames = [f for f in traceback.extract_tb(e.__traceback__) if "/jflow/" in f.filename]
        where = f" (at {frames[-1].filename.rsplit('/jflow/', 1)[-1]}:{frames[-1].lineno})" \
            if frames else ""
        return Traffic(case, [], [], 0.0, math.nan, f"{type(e).__name__}{where}: {msg[:80]}")
    return Traffic(case, colls, ex, explicit, err)


def _fmt_bytes(x: float) -> str:
    return f"{x:,.0f}"


def print_traffic(results: list[Traffic], details: bool) -> None:
    print("\n== collective traffic per device, one flow.jit per case (float32) ==")
    print("payload: operand bytes (all-gather: result bytes); wire: bytes sent with ring "
          "algorithms\n(all-reduce 2(n-1)/n, all-gather/reduce-scatter/all-to-all (n-1)/n of "
          "the full buffer),\nthe unit of the minimum and of the cost model (explain)")
    head = (f"{'case':24s} {'HLO colls':>9s} {'HLO payload':>12s} {'HLO wire':>12s} "
            f"{'minimum':>12s} {'HLO/min':>7s} {'explain':>12s} {'+to_global':>12s} "
            f"{'max rel err':>11s}")
    print(head)
    print("-" * len(head))
    for r in results:
        c = r.case
        if r.error:
            print(f"{c.name:24s} FAILED  {r.error}")
            continue
        payload = sum(x.payload for x in r.collectives)
        wire = sum(x.wire for x in r.collectives)
        ratio = "-" if c.minimum == 0 and wire == 0 else \
            ("inf" if c.minimum == 0 else f"{wire / c.minimum:.3f}")
        est = r.explain.bytes_moved
        print(f"{c.name:24s} {len(r.collectives):9d} {_fmt_bytes(payload):>12s} "
              f"{_fmt_bytes(wire):>12s} {_fmt_bytes(c.minimum):>12s} {ratio:>7s} "
              f"{_fmt_bytes(est):>12s} {_fmt_bytes(est + r.explicit):>12s} "
              f"{r.max_err:11.1e}")
    print("\nexplain: the cost model summed over the eager op calls (explain records op calls "
          "only;\n+to_global adds the explicit conversions). max rel err: max |jit - local| / "
          "max |local|\nover the outputs, the jitted global case vs the function on local "
          "tensors (float32).")
    print("minimum (derivations in cases()):")
    for r in results:
        print(f"  ({r.case.name[0]}) {r.case.why}: {_fmt_bytes(r.case.minimum)} B")
    if not details:
        return
    for r in results:
        if r.error:
            continue
        print(f"\n-- {r.case.name}: HLO collectives")
        for x in r.collectives:
            print(f"   {x.kind:18s} {', '.join(x.shapes):44s} n={x.n}  payload "
                  f"{_fmt_bytes(x.payload):>10s}  wire {_fmt_bytes(x.wire):>10s}  "
                  f"from {x.origin}")
        if not r.collectives:
            print("   (none)")
        print("   cost model (explain), inputs that move:")
        moved = [ch for ch in r.explain if ch.bytes_moved]
        for ch in moved:
            print(f"   {ch.op:18s} {ch.signature!r:36s} [{', '.join(ch.boxing)}] "
                  f"{_fmt_bytes(ch.bytes_moved)}")
        if r.explicit:
            print(f"   {'explicit to_global':18s} {'':36s} {_fmt_bytes(r.explicit)}")
        if not moved and not r.explicit:
            print("   (none)")


# -- eager overhead ----------------------------------------------------------------------------

def _wait(r: Any) -> None:
    jax.block_until_ready(flow.utils.to_jax(r) if isinstance(r, flow.Tensor) else r)


def print_overhead(number: int, repeat: int) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 16)).astype(np.float32)
    b = rng.standard_normal((64, 16)).astype(np.float32)
    w = rng.standard_normal((16, 16)).astype(np.float32)
    la, lb, lw = flow.tensor(a), flow.tensor(b), flow.tensor(w)
    ga, gb = la.to_global(P8, S(0)), lb.to_global(P8, S(0))
    gw = lw.to_global(P8, B)
    row, rep = PartitionSpec("r0"), PartitionSpec()
    bare_add = jax.jit(jax.shard_map(jnp.add, mesh=P8.mesh, in_specs=(row, row),
                                     out_specs=row))
    bare_mm = jax.jit(jax.shard_map(jnp.matmul, mesh=P8.mesh, in_specs=(row, rep),
                                    out_specs=row))
    va, vb, vw = (flow.utils.to_jax(t) for t in (ga, gb, gw))
    rows = [
        ("add (64x16), S(0)+S(0)", lambda: la + lb, lambda: ga + gb, lambda: bare_add(va, vb)),
        ("matmul (64x16 @ 16x16), (S(0),B)", lambda: la @ lw, lambda: ga @ gw,
         lambda: bare_mm(va, vw)),
    ]
    print(f"\n== eager overhead: median µs per call ({number} calls x {repeat} runs, last "
          f"result waited for) ==")
    print("bare jit: a cached jax.jit(shard_map(op)) on the same sharded arrays (8 devices)")
    head = (f"{'op':34s} {'local':>8s} {'global':>8s} {'bare jit':>9s}   "
            f"{'global/local':>12s} {'global/bare':>11s}")
    print(head)
    print("-" * len(head))
    for name, local, glob, bare in rows:
        tl, tg, tb = (bench(f, number, repeat, wait=_wait) for f in (local, glob, bare))
        print(f"{name:34s} {tl:8.1f} {tg:8.1f} {tb:9.1f}   {tg / tl:12.1f} {tg / tb:11.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--number", type=int, default=300)
    ap.add_argument("--details", action=argparse.BooleanOptionalAction, default=True,
                    help="list each case's collectives and cost-model boxings")
    args = ap.parse_args()
    cpu = platform.processor() or platform.machine()
    print(f"jflow {flow.__version__}, jax {jax.__version__}, {cpu}, backend "
          f"{jax.default_backend()}, {len(jax.devices())} devices "
          f"(virtual, on {len(os.sched_getaffinity(0))} cores)")
    t0 = time.perf_counter()
    print_traffic([measure_traffic(c) for c in cases()], args.details)
    print_overhead(args.number, args.repeat)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
