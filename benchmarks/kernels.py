"""Pallas kernels vs the xla kernels of the same ops, on a GPU.

    python benchmarks/kernels.py [--repeat 5] [--number 20] [--only softmax,attention]
    python benchmarks/kernels.py --smoke     # CPU: tiny sizes, Pallas in interpret mode

For each case both kernel functions (the registered Pallas kernel and the op's xla kernel,
taken from the kernel registry) are compiled alone with ``jax.jit`` on the same inputs and
timed (median µs per call of ``--repeat`` runs of ``--number`` calls, the last result waited
for; ``_timing.bench``). Reported: both times, xla / pallas (> 1: Pallas faster), and for the
memory-bound kernels the achieved bandwidth (bytes that must move: inputs read once, outputs
written once) as a fraction of the GPU's peak; for attention TFLOP/s (4 B H L S D forward,
2.5x that backward, halved when causal) against the GPU's dense bf16 peak. The registry's
choice on ``cuda`` is checked too (the Pallas kernel must be the selected one).

Targets: memory-bound kernels >= 85% of peak bandwidth and no slower than XLA;
flash attention >= 1.5x XLA's attention at seq 4096. Results go to
``benchmarks/results_kernels_<gpu>.txt``. Without a GPU it prints a skip line and exits 0.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _timing import bench  # noqa: E402

import jflow  # noqa: E402,F401  (registers ops and kernels)
from jflow.kernels import kernels_for, select_kernel  # noqa: E402
from jflow.ops import get  # noqa: E402

#: (peak HBM bandwidth GB/s, dense bf16 TFLOP/s) by device-kind pattern (vendor datasheets)
PEAKS = [(r"H200", 4800, 989), (r"H100.*(PCIe|PCIE)", 2000, 756), (r"H100", 3350, 989),
         (r"A100.*40GB", 1555, 312), (r"A100", 2039, 312), (r"L40S", 864, 362),
         (r"RTX 4090", 1008, 165), (r"A10G", 600, 70)]


def peaks(kind: str) -> tuple[float | None, float | None]:
    for pat, bw, tf in PEAKS:
        if re.search(pat, kind):
            return bw * 1e9, tf * 1e12
    return None, None


@dataclass
class Case:
    name: str
    op: str
    args: Callable[[], tuple[list[Any], dict[str, Any]]]   # (inputs, attrs)
    bytes_: Callable[[list[Any], list[Any]], float] | None = None
    flops: float | None = None


def _kernel(op: str, backend: str) -> Any:
    ks = [k for k in kernels_for(op) if k.backend == backend and "cpu" not in k.platforms] \
        if backend == "pallas" else [k for k in kernels_for(op) if k.backend == backend]
    return ks[-1] if ks else None


def _nbytes(xs: list[Any]) -> float:
    return float(sum(x.size * x.dtype.itemsize for x in xs if x is not None))


def _io(inputs: list[Any], outputs: list[Any]) -> float:
    return _nbytes(inputs) + _nbytes(outputs)


def cases(scale: int, dt: Any) -> list[Case]:
    """The issue's sizes divided by ``scale`` (1 on a GPU; large for --smoke)."""
    key = iter(jax.random.split(jax.random.key(0), 64))

    def rnd(*shape: int, dtype: Any = dt) -> Any:
        return jax.random.normal(next(key), shape, jnp.float32).astype(dtype)

    n_sm, v_sm = 8192 // scale, 8192 // scale
    n_ln, d_ln = 16384 // scale, 4096 // scale
    n_ce, v_ce = 8192 // scale, 50304 // scale
    b, h, s, d = 8 // min(scale, 8), 16 // min(scale, 16), 4096 // scale, 128

    def sm() -> Any:
        return [rnd(n_sm, v_sm)], {"dim": -1}

    def sm_grad() -> Any:
        y = jax.nn.softmax(rnd(n_sm, v_sm).astype(jnp.float32)).astype(dt)
        return [y, rnd(n_sm, v_sm)], {"dim": -1}

    def ln() -> Any:
        return [rnd(n_ln, d_ln), rnd(d_ln), rnd(d_ln)], {"begin_norm_axis": 1, "eps": 1e-5}

    def ln_grad() -> Any:
        x = rnd(n_ln, d_ln)
        m = jnp.mean(x.astype(jnp.float32), axis=1).astype(dt)
        r = jnp.ones((n_ln,), dt)
        return [x, m, r, rnd(n_ln, d_ln), jnp.zeros((n_ln,), dt), jnp.zeros((n_ln,), dt),
                rnd(d_ln)], {"begin_norm_axis": 1}

    def rms() -> Any:
        return [rnd(n_ln, d_ln), rnd(d_ln)], {"begin_norm_axis": 1, "eps": 1e-5}

    def rms_grad() -> Any:
        return [rnd(n_ln, d_ln), jnp.ones((n_ln,), dt), rnd(n_ln, d_ln),
                jnp.zeros((n_ln,), dt), rnd(d_ln)], {"begin_norm_axis": 1}

    def fba() -> Any:
        return [rnd(n_ln, d_ln), rnd(d_ln)], {"activation": "gelu"}

    def ce() -> Any:
        labels = jax.random.randint(next(key), (n_ce,), 0, v_ce)
        return [rnd(n_ce, v_ce), labels], {"ignore_index": -100}

    def ce_grad() -> Any:
        x = rnd(n_ce, v_ce)
        labels = jax.random.randint(next(key), (n_ce,), 0, v_ce)
        lse = jax.nn.logsumexp(x.astype(jnp.float32), axis=1)
        return [x, labels, lse, jnp.ones((n_ce,), dt), jnp.zeros((n_ce,), jnp.float32)], \
            {"ignore_index": -100}

    def attn(causal: bool) -> Any:
        def make() -> Any:
            q, k, v = rnd(b, h, s, d), rnd(b, h, s, d), rnd(b, h, s, d)
            return [q, k, v, None], {"is_causal": causal, "scale": 1 / np.sqrt(d)}
        return make

    def attn_grad(causal: bool) -> Any:
        def make() -> Any:
            q, k, v = rnd(b, h, s, d), rnd(b, h, s, d), rnd(b, h, s, d)
            attrs = {"is_causal": causal, "scale": 1 / np.sqrt(d)}
            out, lse = _kernel("scaled_dot_product_attention", "xla").fn(q, k, v, None, **attrs)
            return [q, k, v, out, lse, rnd(b, h, s, d), jnp.zeros_like(lse), None], attrs
        return make

    fl = 4.0 * b * h * s * s * d
    out = [Case(f"softmax {n_sm}x{v_sm}", "softmax", sm, _io),
           Case(f"log_softmax {n_sm}x{v_sm}", "log_softmax", sm, _io),
           Case(f"softmax_grad {n_sm}x{v_sm}", "softmax_grad", sm_grad, _io),
           Case(f"layer_norm {n_ln}x{d_ln}", "layer_norm", ln, _io),
           Case(f"layer_norm_grad {n_ln}x{d_ln}", "layer_norm_grad", ln_grad, _io),
           Case(f"rms_norm {n_ln}x{d_ln}", "rms_norm", rms, _io),
           Case(f"rms_norm_grad {n_ln}x{d_ln}", "rms_norm_grad", rms_grad, _io),
           Case(f"bias+gelu {n_ln}x{d_ln}", "fused_bias_add_activation", fba, _io),
           Case(f"cross_entropy {n_ce}x{v_ce}", "sparse_softmax_cross_entropy", ce, _io),
           Case(f"cross_entropy_grad {n_ce}x{v_ce}", "sparse_softmax_cross_entropy_grad",
                ce_grad, _io)]
    if "scaled_dot_product_attention" in jflow.ops.list_ops():
        for causal in (False, True):
            c = "causal" if causal else "full"
            f = fl / (2 if causal else 1)
            out.append(Case(f"attention {c} {b}x{h}x{s}x{d}", "scaled_dot_product_attention",
                            attn(causal), None, f))
            out.append(Case(f"attention_grad {c} {b}x{h}x{s}x{d}",
                            "scaled_dot_product_attention_grad", attn_grad(causal), None, 2.5 * f))
    return out


def _selected(op_name: str, inputs: list[Any]) -> str:
    op = get(op_name)
    avals = [None if x is None else jax.core.ShapedArray(x.shape, x.dtype) for x in inputs]
    structured = [1 if x is not None else None for x in inputs]
    layout = op.layout_of(structured) if op.structured else None
    flat = [a for a in avals if a is not None]
    try:
        per_out = op.infer_descs(flat, layout, _CUR_ATTRS)
        return select_kernel(op, "cuda", flat, per_out, layout).name
    except Exception as e:  # the choice is informative only
        return f"? ({type(e).__name__})"


_CUR_ATTRS: dict[str, Any] = {}


def run_case(c: Case, number: int, repeat: int, interpret: bool, bw_peak: float | None,
             tf_peak: float | None) -> str:
    global _CUR_ATTRS
    inputs, attrs = c.args()
    op = get(c.op)
    attrs = op.normalize_attrs(attrs)
    _CUR_ATTRS = attrs
    pk, xk = _kernel(c.op, "pallas"), _kernel(c.op, "xla")
    fp = jax.jit(lambda *a: pk.fn(*a, interpret=interpret, **attrs))
    fx = jax.jit(lambda *a: xk.fn(*a, **attrs))
    outs_p = jax.block_until_ready(fp(*inputs))
    outs_x = jax.block_until_ready(fx(*inputs))
    op_ = outs_p if isinstance(outs_p, (list, tuple)) else [outs_p]
    ox = outs_x if isinstance(outs_x, (list, tuple)) else [outs_x]
    err = max(float(jnp.max(jnp.abs(a.astype(jnp.float32) - b.astype(jnp.float32))))
              for a, b in zip(op_, ox))
    tp = bench(lambda: fp(*inputs), number, repeat, jax.block_until_ready)
    tx = bench(lambda: fx(*inputs), number, repeat, jax.block_until_ready)
    extra = ""
    if c.bytes_ is not None:
        nb = c.bytes_(inputs, list(op_))
        gbp, gbx = nb / tp / 1e3, nb / tx / 1e3
        frac = f" = {gbp * 1e9 / bw_peak:5.1%} of peak" if bw_peak else ""
        extra = f"pallas {gbp:7.1f} GB/s{frac}; xla {gbx:7.1f} GB/s"
    elif c.flops is not None:
        tfp, tfx = c.flops / tp / 1e6, c.flops / tx / 1e6
        frac = f" = {tfp * 1e12 / tf_peak:5.1%} of peak" if tf_peak else ""
        extra = f"pallas {tfp:6.1f} TFLOP/s{frac}; xla {tfx:6.1f} TFLOP/s"
    sel = _selected(c.op, inputs)
    return (f"{c.name:42s} pallas {tp:10.1f} us  xla {tx:10.1f} us  xla/pallas {tx / tp:5.2f}x  "
            f"{extra}  (max|diff| {err:.2e}; cuda selects {sel})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--number", type=int, default=20)
    ap.add_argument("--only", default="", help="comma-separated substrings of case names")
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--smoke", action="store_true",
                    help="CPU check of this script: tiny sizes, Pallas in interpret mode")
    ap.add_argument("--out", default=None, help="results file (default benchmarks/"
                                                "results_kernels_<gpu>.txt)")
    a = ap.parse_args()
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus and not a.smoke:
        print("SKIP benchmarks/kernels.py: no GPU (the Pallas kernels run compiled only on "
              "cuda; on CPU they are checked in interpret mode by tests/test_pallas_kernels.py)")
        return 0
    dt = jnp.dtype(a.dtype)
    if a.smoke:
        kind, scale, interpret, number, repeat = "cpu (smoke, interpret)", 64, True, 1, 1
    else:
        kind, scale, interpret, number, repeat = gpus[0].device_kind, 1, False, a.number, a.repeat
    bw, tf = peaks(kind)
    lines = [f"# jflow Pallas kernels vs xla kernels on {kind} (jax {jax.__version__}, "
             f"{a.dtype}); peak bandwidth {bw / 1e9 if bw else '?'} GB/s, dense bf16 "
             f"{tf / 1e12 if tf else '?'} TFLOP/s"]
    print(lines[0], flush=True)
    only = [s for s in a.only.split(",") if s]
    for c in cases(scale, dt):
        if only and not any(s in c.name for s in only):
            continue
        try:
            line = run_case(c, number, repeat, interpret, bw, tf)
        except Exception as e:  # report and go on with the other kernels
            line = f"{c.name:42s} FAILED: {type(e).__name__}: {str(e)[:300]}"
        print(line, flush=True)
        lines.append(line)
    if not a.smoke:
        name = re.sub(r"[^A-Za-z0-9]+", "_", kind).strip("_")
        path = a.out or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     f"results_kernels_{name}.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
