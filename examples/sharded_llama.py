"""An HF model trained sharded, its code unchanged: transformers' ``LlamaForCausalLM`` on 8
CPU devices through PyTorch's DTensor API, which jflow maps onto its global tensors (SBP).

    python examples/sharded_llama.py [--steps 5] [--mesh 4x2] [--layers 2]

The tiny Llama (2 layers by default, hidden 64, MLP 128, 4 heads, 2 KV heads, vocab 256) is
built by transformers under ``jflow.mock_torch`` (offline, random weights, seeded) and trained
with AdamW by one compiled step (``flow.jit``: forward, ``loss.backward()``, ``opt.step()``):

1. on one device (plain tensors), the reference;
2. on a ``data x tensor`` device mesh (``init_device_mesh("cpu", (4, 2),
   mesh_dim_names=("dp", "tp"))``): every parameter placed with ``distribute_tensor`` as the
   model's own tensor-parallel plan says (``config.base_model_tp_plan``: attention and MLP
   input projections ``colwise`` -> ``Shard(0)`` of the ``[out, in]`` weight over ``tp``,
   output projections ``rowwise`` -> ``Shard(1)``), everything else (embeddings, norms,
   ``lm_head``, the rotary buffer) ``Replicate()``, and the batch ``Shard(0)`` over ``dp``.

Tensors the model makes inside its forward (``torch.arange`` positions, the causal mask)
are plain local tensors; ``implicit_replication()`` (PyTorch's
``torch.distributed.tensor.experimental``) takes them as replicated, which is exact here: one
process holds every device, so a local tensor is one value.

It prints the losses of both runs (they must agree to rtol 1e-5), how the SBP planner laid
out the step (docs/sbp.md "Whole-step choice": the plan of least modelled time on an
accelerator, boxing bytes over the interconnect plus per-device compute; how many calls divide
their work over how many devices, against the greedy per-op choice) and the collective bytes
per device the compiled sharded step moves (parsed from its optimized HLO, ring algorithms:
the unit of jflow's cost model) against the bytes the plan counts. With ``--json PATH`` it
also writes them (``tests/test_dtensor.py`` runs it).
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)  # must precede any JAX computation, jflow's too

import argparse  # noqa: E402
import fnmatch  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

import jflow.mock_torch as mock  # noqa: E402

mock.enable()

import torch  # noqa: E402  (jflow, under PyTorch's names)
from torch.distributed.tensor import (  # noqa: E402
    Replicate,
    Shard,
    distribute_tensor,
    init_device_mesh,
)
from torch.distributed.tensor.experimental import implicit_replication  # noqa: E402

import jflow as flow  # noqa: E402
from jflow.sharding import plan as sbp_plan  # noqa: E402
from jflow.sharding.hlo_traffic import hlo_collectives  # noqa: E402

try:
    import transformers  # noqa: E402
except ImportError:  # pragma: no cover - the example needs it
    sys.exit("examples/sharded_llama.py needs transformers (pip install transformers)")

CONFIG = dict(num_hidden_layers=2, hidden_size=64, intermediate_size=128,
              num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
              max_position_embeddings=64)
BATCH, SEQ = 8, 16

#: transformers' tp-plan styles -> DTensor placements of an nn.Linear weight [out, in] along
#: the "tp" mesh dimension (PyTorch's ColwiseParallel / RowwiseParallel)
STYLES = {"colwise": Shard(0), "rowwise": Shard(1)}


def build_model(layers: int = CONFIG["num_hidden_layers"]) -> Any:
    """The tiny Llama with seeded random weights (the same for every run), ``layers``
    decoder layers deep."""
    torch.manual_seed(0)
    config = transformers.LlamaConfig(**dict(CONFIG, num_hidden_layers=layers))
    model = transformers.LlamaForCausalLM(config)
    model.train()
    return model


def tp_style(model: Any, name: str) -> str | None:
    """The style the model's own tp plan gives parameter ``name`` (None: replicated)."""
    plan = dict(model.config.base_model_tp_plan or {})
    prefix = model.base_model_prefix + "."
    module = name.rsplit(".", 1)[0]
    if module.startswith(prefix):
        module = module[len(prefix):]
    for pattern, style in plan.items():
        if fnmatch.fnmatchcase(module, pattern):
            return style
    return None


def shard(model: Any, mesh: Any) -> dict[str, str]:
    """Place every parameter and buffer on ``mesh`` (dp x tp) with ``distribute_tensor``."""
    layout = {}
    for mod_name, mod in model.named_modules():
        for pname, p in list(mod.named_parameters(recurse=False)):
            full = f"{mod_name}.{pname}" if mod_name else pname
            style = tp_style(model, full)
            if style is not None and style not in STYLES:
                raise ValueError(f"{full}: tp style {style!r} is not mapped in this example")
            placements = [Replicate(), STYLES[style] if style else Replicate()]
            setattr(mod, pname, torch.nn.Parameter(distribute_tensor(p, mesh, placements)))
            layout[full] = f"{style or 'replicated'} {placements}"
        for bname, b in list(mod.named_buffers(recurse=False)):
            mod._buffers[bname] = distribute_tensor(b, mesh, [Replicate(), Replicate()])
    return layout


def batches(steps: int) -> list[np.ndarray]:
    """One random batch, trained on at every step (the loss falls as it is memorised)."""
    x = np.random.default_rng(0).integers(0, CONFIG["vocab_size"], (BATCH, SEQ))
    return [x] * steps


def train(model: Any, xs: list[Any]) -> tuple[list[float], Any]:
    """``steps`` AdamW steps, each one compiled call; the losses and the compiled step."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)

    def step(x: Any) -> Any:
        loss = model(input_ids=x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    compiled = flow.jit(step)
    return [float(compiled(x).numpy()) for x in xs], compiled


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--mesh", default="4x2", help="dp x tp, e.g. 4x2 or 2x4")
    ap.add_argument("--layers", type=int, default=CONFIG["num_hidden_layers"],
                    help="decoder layers (1: the same ops and placements, a step half the "
                         "size for the planner to solve: tests/test_dtensor.py's run)")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args(argv)
    dp, tp = (int(v) for v in args.mesh.split("x"))
    data = batches(args.steps)

    ref_losses, _ = train(build_model(args.layers), [torch.tensor(x) for x in data])

    mesh = init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp", "tp"))
    model = build_model(args.layers)
    layout = shard(model, mesh)
    xs = [distribute_tensor(torch.tensor(x), mesh, [Shard(0), Replicate()]) for x in data]
    with implicit_replication():
        losses, step = train(model, xs)
        solved = dict(sbp_plan.LAST_SOLVE)  # the planner's last word on this step
        hlo = step.lower(xs[0]).compile().as_text()
    colls = hlo_collectives(hlo, mesh.size())
    wire = sum(c.wire for c in colls)
    planned = greedy = float("nan")
    if step.sbp_plans:  # a plan was adopted: its cost and the greedy choice's
        _, (_, planned, greedy) = step.sbp_plans[-1]
    else:
        planned = solved.get("planned", planned)
        greedy = solved.get("greedy", greedy)

    print(f"tiny LlamaForCausalLM ({sum(p.numel() for p in model.parameters()):,} "
          f"parameters), batch {BATCH}x{SEQ}, AdamW, one flow.jit step per call")
    print(f"mesh {mesh}")
    for name in ("model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
                 "model.layers.0.self_attn.o_proj.weight", "model.layers.0.mlp.down_proj.weight",
                 "model.norm.weight"):
        print(f"  {name:42s} {layout[name]}")
    print(f"\n{'step':>4s} {'1 device':>12s} {f'{dp}x{tp} mesh':>12s} {'rel diff':>9s}")
    for k, (a, b) in enumerate(zip(ref_losses, losses), 1):
        print(f"{k:4d} {a:12.7f} {b:12.7f} {abs(a - b) / abs(a):9.1e}")
    print(f"\ncollectives in the compiled step: {len(colls)}, {wire:,.0f} B per device "
          f"(wire)")
    if step.sbp_plans or solved.get("outcome") == "solved":
        moved = solved["planned_bytes"]  # the plan's boxing bytes (its cost adds compute)
        print(f"planner ({solved.get('calls', 0)} global op calls, "
              f"{solved.get('kept_calls', 0)} left after eliminating chains, "
              f"{solved.get('variables', 0):,} variables, built in "
              f"{solved.get('build_s', 0.0):.1f} s, solved in {solved.get('solve_s', 0.0):.1f} s, "
              f"{'optimal' if solved.get('optimal') else 'not proven optimal'}; modelled "
              f"device: {solved['flop_rate'] / 1e12:g} TFLOP/s, link "
              f"{solved['link_bandwidth'] / 1e9:g} GB/s, memory "
              f"{solved['memory_bandwidth'] / 1e12:g} TB/s):")
        for who, pre in (("plan", "planned"), ("greedy per-op choice", "greedy")):
            split = solved[f"{pre}_work_split" if pre == "greedy" else "work_split"]
            print(f"  {who:21s} {solved[f'{pre}_bytes']:>11,.0f} B + "
                  f"{solved[f'{pre}_compute_s'] * 1e6:7.2f} us compute = "
                  f"{solved[f'{pre}_s'] * 1e6:7.2f} us; calls by devices sharing their work: "
                  + ", ".join(f"{n}: {c}" for n, c in split.items()))
        print(f"  ({'plan adopted' if step.sbp_plans else 'greedy already optimal'})")
        print(f"compiled / planned bytes = {wire / moved:.3f}")
    else:
        print(f"planner: no whole-step plan: {solved.get('outcome', 'not run')} "
              f"({solved.get('calls', 0)} global op calls, {solved.get('candidates', 0):,} "
              f"candidate signatures, >= {solved.get('variables', 0):,} variables; the "
              f"bound is {sbp_plan._MAX_VARIABLES:,}); the step keeps the greedy per-op "
              f"choice, whose cost-model estimate is {solved.get('greedy_bytes', greedy):,.0f}"
              f" B (compiled/estimate = {wire / solved.get('greedy_bytes', greedy):.3f})")
    res = {"ref_losses": ref_losses, "losses": losses, "wire": wire, "planned": planned,
           "greedy": greedy, "collectives": len(colls), "mesh": [dp, tp],
           "trace_count": step.trace_count, "planner": solved}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f)
    return res


if __name__ == "__main__":
    main()
