"""Whole-step SBP signature choice inside flow.jit (jflow/sharding/plan.py): the solver
against brute force, the data x tensor parallel MLP step at the minimum collective bytes with
the single-device result, and state/outputs that keep their layout (no recompiles)."""

from __future__ import annotations

import functools
import itertools
import math
import re

import numpy as np
import pytest

import jflow as flow
from jflow.sharding import plan as step_plan
from jflow.sharding.boxing import cost
from jflow.sharding.execute import NdSignature

S, B, P = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum
P24 = flow.placement("cpu", [[0, 1, 2, 3], [4, 5, 6, 7]])
N, D, H = 64, 16, 32


def _mlp_step(x, w1, w2):
    loss = (((x @ w1).tanh() @ w2) ** 2).mean()
    loss.backward()
    with flow.no_grad():
        new_w1 = w1 - 0.1 * w1.grad.to_global(sbp=w1.sbp)
        new_w2 = w2 - 0.1 * w2.grad.to_global(sbp=w2.sbp)
        loss = loss.to_global(sbp=(B,) * len(loss.placement.hierarchy))
    return loss, new_w1, new_w2


def _numpy_step(x, w1, w2):
    h = np.tanh(x @ w1)
    y = h @ w2
    loss = np.mean(y ** 2)
    dy = 2 * y / y.size
    dw2 = h.T @ dy
    dw1 = x.T @ ((dy @ w2.T) * (1 - h ** 2))
    return loss, w1 - 0.1 * dw1, w2 - 0.1 * dw2


_COLL = re.compile(r"= (\([^)]*\)|\S+) (all-reduce|all-gather|reduce-scatter|all-to-all|"
                   r"collective-permute)\(")
_ARRAY = re.compile(r"f32\[([\d,]*)\]")


def _collectives(hlo: str) -> list[tuple[str, int, int]]:
    """(kind, bytes of the result, group size) per collective of an optimized HLO module."""
    out = []
    for line in hlo.splitlines():
        m = _COLL.search(line)
        if m is None:
            continue
        nbytes = sum(4 * int(np.prod([int(s) for s in dims.split(",") if s]))
                     for dims in _ARRAY.findall(m.group(1)))
        groups = re.search(r"replica_groups=\{\{([\d,]+)\}", line) or \
            re.search(r"replica_groups=\[\d+,(\d+)\]", line)
        size = len(groups.group(1).split(",")) if "," in groups.group(1) else \
            int(groups.group(1))
        out.append((m.group(2), nbytes, size))
    return out


def test_dp_tp_mlp_step_moves_the_minimum_and_matches_numpy() -> None:
    """x S(0) over r0 (data), w1 column- and w2 row-split over r1 (tensor): the minimum is
    one all-reduce of y over r1 and one over r0 of the gradient shards and the loss. The
    greedy per-op choice moved several times that (all-gathers of activations)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, D)).astype(np.float32)
    w1 = (rng.standard_normal((D, H)) / 4).astype(np.float32)
    w2 = (rng.standard_normal((H, D)) / 6).astype(np.float32)
    args = [flow.tensor(x).to_global(P24, (S(0), B)),
            flow.tensor(w1).to_global(P24, (B, S(1))).requires_grad_(),
            flow.tensor(w2).to_global(P24, (B, S(0))).requires_grad_()]
    step = flow.jit(_mlp_step)
    colls = _collectives(step.lower(*args).compile().as_text())
    (rec, (plan, planned, greedy)), = step.sbp_plans
    assert planned < greedy, (planned, greedy)
    assert not rec._keep and not rec._producer  # no traced values kept past the trace
    minimum = (2 * 3 / 4 * N // 2 * D * 4            # all-reduce y [N/2, D] over r1
               + 2 * 1 / 2 * (4 + 2 * D * H // 4 * 4))  # loss, dW1, dW2 shards over r0
    assert minimum <= _wire(colls) <= 1.01 * minimum, colls
    loss, n1, n2 = step(*args)
    want = _numpy_step(x.astype(np.float64), w1.astype(np.float64), w2.astype(np.float64))
    for got, ref in zip((loss, n1, n2), want):
        np.testing.assert_allclose(got.numpy(), ref, rtol=2e-5, atol=1e-6)
    # the outputs keep the layout eager execution gives them
    eager = _mlp_step(*[a.detach().requires_grad_(a.requires_grad) for a in args])
    assert [t.sbp for t in (loss, n1, n2)] == [t.sbp for t in eager]


def _wire(colls: list[tuple[str, int, int]]) -> float:
    """Bytes each device sends (ring algorithms) for collectives given by result bytes."""
    f = {"all-reduce": lambda b, n: 2 * (n - 1) / n * b,
         "all-gather": lambda b, n: (n - 1) / n * b,
         "reduce-scatter": lambda b, n: (n - 1) * b,
         "all-to-all": lambda b, n: (n - 1) / n * b}
    return sum(f[k](b, n) for k, b, n in colls)


def test_tensor_parallel_step_at_the_minimum() -> None:
    """Megatron on 8 devices (x B, w1 column-, w2 row-split): the minimum is the all-reduce of
    y and of the loss (the greedy trace boxes y twice; the plan once, shared)."""
    p8 = flow.placement("cpu", list(range(8)))
    n, d, h = 64, 512, 2048
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, d)).astype(np.float32)
    w1 = (rng.standard_normal((d, h)) / np.sqrt(d)).astype(np.float32)
    w2 = (rng.standard_normal((h, d)) / np.sqrt(h)).astype(np.float32)
    args = [flow.tensor(x).to_global(p8, B),
            flow.tensor(w1).to_global(p8, S(1)).requires_grad_(),
            flow.tensor(w2).to_global(p8, S(0)).requires_grad_()]
    step = flow.jit(_mlp_step)
    colls = _collectives(step.lower(*args).compile().as_text())
    assert _wire(colls) == pytest.approx(2 * 7 / 8 * (n * d * 4 + 4)), colls
    got = step(*args)
    want = _numpy_step(x.astype(np.float64), w1.astype(np.float64), w2.astype(np.float64))
    for g, ref in zip(got, want):
        np.testing.assert_allclose(g.numpy(), ref, rtol=2e-5, atol=1e-6)


class _Mlp(flow.nn.Module):
    def __init__(self, w1: np.ndarray, w2: np.ndarray) -> None:
        super().__init__()
        self.w1 = flow.nn.Parameter(flow.tensor(w1).to_global(P24, (B, S(1))))
        self.w2 = flow.nn.Parameter(flow.tensor(w2).to_global(P24, (B, S(0))))

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        return ((x @ self.w1).tanh() @ self.w2).square().mean()


def test_training_with_an_optimizer_keeps_layouts_and_matches_eager() -> None:
    """Parameters, gradients and optimizer state come back with the layout they came in
    with (pinned in the plan), so the step traces once more at most (the first call has no
    gradients/state) and the losses equal eager training's."""
    rng = np.random.default_rng(1)
    w1 = (rng.standard_normal((D, H)) / 4).astype(np.float32)
    w2 = (rng.standard_normal((H, D)) / 6).astype(np.float32)
    xs = [flow.tensor(rng.standard_normal((N, D)).astype(np.float32)).to_global(P24, (S(0), B))
          for _ in range(4)]

    def run(compiled: bool) -> tuple[list[float], _Mlp, object]:
        model = _Mlp(w1, w2)
        opt = flow.optim.Adam(model.parameters(), lr=0.05)

        def train(x: flow.Tensor) -> flow.Tensor:
            loss = model(x)
            loss.backward()
            opt.step()
            return loss.detach()

        fn = flow.jit(train) if compiled else train
        return [float(fn(x).numpy()) for x in xs], model, fn

    eager, _, _ = run(False)
    losses, model, fn = run(True)
    np.testing.assert_allclose(losses, eager, rtol=1e-5)
    assert model.w1.sbp == (B, S(1)) and model.w2.sbp == (B, S(0))
    assert fn.trace_count <= 2, fn.recompile_reasons


def _sig(ins, outs) -> NdSignature:
    return NdSignature(tuple((x,) for x in ins), tuple((x,) for x in outs))


_SPLIT = type(S(0))


def _local_shape(shape, nd, hh):
    out = list(shape)
    for x, n in zip(nd, hh):
        if isinstance(x, _SPLIT):
            out[x.axis] //= n
    return out


# boxing's cost of one conversion, remembered: the exhaustive searches below ask for the same
# few conversions once per combination (3**9 of them), and Fraction arithmetic dominated
_cost = functools.lru_cache(maxsize=None)(cost)


def _brute_bytes(rec, choice) -> float:
    """The step's boxing bytes for one signature per call, written from the model (without
    plan.py): each conversion of one value (a call's output or a value the step did not
    compute) to one SBP paid once."""
    c = 0.0
    seen = set()
    for k, (_, _, ins, _, hh, _, _) in enumerate(rec.ops):
        for (src, b), need in zip(ins, choice[k].inputs):
            if src[0] == "fixed":
                if (src[2], need) not in seen:
                    seen.add((src[2], need))
                    c += _cost(src[1], need, b[0], hh, b[1])
            elif (src[1], src[2], need) not in seen:
                seen.add((src[1], src[2], need))
                c += _cost(choice[src[1]].outputs[src[2]], need, b[0], hh, b[1])
    for src, dst, b, hh in rec.boxes:
        c += _cost(choice[src[1]].outputs[src[2]], dst, b[0], hh, b[1])
    return c


def _brute_seconds(rec, choice) -> float:
    """The step's compute seconds per device, from the documented model: a 2-d matmul's
    2·m·k·n FLOPs on its local shards at FLOP_RATE (m·k = the local left operand, n = the
    local output's columns), at least the bytes of the local outputs at MEMORY_BANDWIDTH."""
    t = 0.0
    for (name, _, ins, _, hh, outs, _), sig in zip(rec.ops, choice):
        out_bytes = sum(b / math.prod([n for x, n in zip(nd, hh) if isinstance(x, _SPLIT)])
                        for (b, _), nd in zip(outs, sig.outputs))
        call = out_bytes / step_plan.MEMORY_BANDWIDTH
        if name == "matmul":
            a = _local_shape(ins[0][1][1], sig.inputs[0], hh)
            o = _local_shape(outs[0][1], sig.outputs[0], hh)
            call = max(call, 2 * math.prod(a) * o[1] / step_plan.FLOP_RATE)
        t += call
    return t


def _brute_cost(rec, choice) -> float:
    """The program's objective: bytes + seconds x LINK_BANDWIDTH."""
    return _brute_bytes(rec, choice) + step_plan.LINK_BANDWIDTH * _brute_seconds(rec, choice)


def test_solver_finds_the_brute_force_optimum() -> None:
    """A small call graph (a diamond with a fan-out and a pinned output) where the greedy
    choice is not the cheapest: the ILP's plan costs what exhaustive search finds."""
    rng = np.random.default_rng(2)
    kinds = [S(0), S(1), B, P]
    rec = step_plan.StepRecorder()
    values = [object() for _ in range(8)]
    h = (4,)
    # call 0: from a fixed S(0) input; calls 1, 2 read call 0; call 3 reads 1 and 2
    wiring = [[None], [0], [0], [1, 2]]
    for k, srcs in enumerate(wiring):
        n_in = len(srcs)
        cands = [_sig(ins, [o]) for ins in itertools.product(kinds, repeat=n_in)
                 for o in kinds if rng.random() < 0.4] or [_sig([B] * n_in, [B])]
        ins = [v if s is None else values[s] for v, s in zip([values[7]], srcs)] \
            if n_in == 1 else [values[s] for s in srcs]
        size = (float(rng.integers(1, 9)) * 1024, (64, 64))
        rec.op(f"op{k}", cands, ins, [(S(0),)] * n_in, [size] * n_in,
               cands[0], [values[k]], [4096.0], h)
    rec.box(values[3], (B,), (S(1),), (4096.0, (32, 32)), h)
    rec.pinned[(2, 0)] = rec.ops[2][3].outputs[0]
    plan, planned, _ = step_plan.solve(rec)
    brute_cost = functools.partial(_brute_cost, rec)
    allowed = [[s for s in op[1] if k != 2 or s.outputs[0] == rec.pinned[(2, 0)]]
               for k, op in enumerate(rec.ops)]
    best = min(brute_cost(c) for c in itertools.product(*allowed))
    assert planned == pytest.approx(best) and brute_cost(plan) == pytest.approx(best)
    assert plan[2].outputs[0] == rec.pinned[(2, 0)]


@pytest.mark.parametrize("seed,shared_fixed", [(0, False), (1, False), (2, False),
                                               (3, False), (4, True), (5, True)])
def test_eliminations_keep_the_brute_force_optimum(seed, shared_fixed) -> None:
    """A graph with every shape the solver minimises out before the integer program (a
    chain 0 -> 1 -> 2 -> 3, a leaf 6, a source 7 from fixed inputs, an isolated call 8) and
    a value two calls share (3 -> 4, 5) that stays in it: the plan costs what exhaustive
    search finds, and the program kept fewer calls than the step has. ``shared_fixed``:
    calls 0, 7 and 8 read one fixed value (a weight the forward and backward both read),
    whose conversions they share."""
    rng = np.random.default_rng(seed)
    kinds = [S(0), S(1), B, P]
    rec = step_plan.StepRecorder()
    values = [object() for _ in range(10)]
    shared = object()
    size, fixed_nd, fresh = {}, {}, []
    wiring = [[None], [0], [1], [2], [3], [3], [5, 7], [None, None], [None]]
    for k, srcs in enumerate(wiring):
        combos = list(itertools.product(kinds, repeat=len(srcs) + 1))
        picks = rng.choice(len(combos), size=3, replace=False)
        cands = [_sig(combos[i][:-1], combos[i][-1:]) for i in picks]
        fresh += [object() for _ in srcs]  # (kept alive: ids stay distinct)
        ins = [(shared if shared_fixed else fresh[-1 - i]) if s is None else values[s]
               for i, s in enumerate(srcs)]
        for v in ins:
            size.setdefault(id(v), (float(rng.integers(1, 9)) * 1024, (64, 64)))
            fixed_nd.setdefault(id(v), (kinds[int(rng.integers(4))],))
        sizes = [size[id(v)] for v in ins]  # one value, one size
        rec.op(f"op{k}", cands, ins, [fixed_nd[id(v)] for v in ins], sizes, cands[0],
               [values[k]], [4096.0], (4,))
    plan, planned, _ = step_plan.solve(rec)
    best = min(_brute_cost(rec, c) for c in itertools.product(*[op[1] for op in rec.ops]))
    assert planned == pytest.approx(best) and _brute_cost(rec, plan) == pytest.approx(best)
    solved = step_plan.LAST_SOLVE
    # the program's proven bound is the plan's cost: the eliminations lost no cost term
    assert solved["optimal"] and solved["bound"] == pytest.approx(planned, rel=1e-6)
    # 3, 4, 5 and (at most) 6 reach the program; with the shared fixed value, 0, 7, 8 too
    assert solved["kept_calls"] <= (7 if shared_fixed else 4), solved


def test_conversion_costs_equal_boxing_cost() -> None:
    """The planner's one-Dijkstra-per-source costs are boxing.cost's floats exactly (every
    pair of valid 2-d SBPs on 2x4, a shape one axis product does not divide)."""
    from jflow.sharding.boxing_plan import _divides

    h, shape, nbytes = (2, 4), (8, 6), 8 * 6 * 4.0
    kinds = [B, P, S(0), S(1)]
    states = [nd for nd in itertools.product(kinds, repeat=2) if _divides(nd, h, shape)]
    assert 4 < len(states) < 16
    step_plan._FROM.clear()
    for a in states:
        for b in states:
            assert step_plan._cost(a, b, (nbytes, shape), h) == cost(a, b, nbytes, h, shape)


def test_a_trace_that_strays_from_the_plan_falls_back_to_greedy() -> None:
    a, b = _sig([B], [B]), _sig([S(0)], [S(0)])
    plan = step_plan.StepPlan(["matmul", "tanh"], [a, b])
    with step_plan.forcing(plan):
        assert plan.next("matmul") is a
        assert plan.next("exp") is None   # another op than recorded: the plan is off
        assert plan.next("tanh") is None  # for the rest of the trace
    with step_plan.forcing(plan):        # a new trace starts over
        assert plan.next("matmul") is a and plan.next("tanh") is b


def test_a_forced_signature_is_not_served_from_the_greedy_cache() -> None:
    """Same inputs, another output layout (expand can make a split from a broadcast): the
    forced call gets its own executable."""
    p8 = flow.placement("cpu", list(range(8)))
    x = flow.tensor(np.array([[2.0]])).to_global(p8, B)
    assert x.expand(16, 4).sbp == (S(0),)  # greedy: no transfer, cached
    forced = NdSignature(((B,),), ((B,),))
    with step_plan.forcing(step_plan.StepPlan(["expand"], [forced])):
        y = x.expand(16, 4)
    assert y.sbp == (B,)
    np.testing.assert_array_equal(y.numpy(), np.full((16, 4), 2.0))


# -- compute weighed against communication --------------------------------------------------
#: rows 8 devices cannot split evenly: the batch cannot go data parallel, so the chain below
#: either keeps its weights split (tensor parallel: all-reduce the activations) or gathers
#: them (every device runs the whole chain)
ROWS = 1020
P8 = flow.placement("cpu", list(range(8)))


def _chain(x, w1, w2):
    return ((x @ w1).tanh() @ w2).square().sum()


def _old_objective(rec, choice) -> float:
    """The bytes-only model this planner had: boxing bytes + 1e-3 x bytes of local outputs."""
    local = sum(b / (8 if isinstance(nd[0], type(S(0))) else 1)
                for op, sig in zip(rec.ops, choice) for (b, _), nd in zip(op[5], sig.outputs))
    return _brute_bytes(rec, choice) + 1e-3 * local


def _plan_chain(monkeypatch, d: int, h: int) -> tuple:
    """flow.jit of the chain (x [ROWS, d] broadcast, w1 [d, h] column-split, w2 [h, d]
    row-split over 8 devices), the recording its planner solved, the plan, the brute-force
    optimum of the model and of the old bytes-only one, and the compiled collectives."""
    solved = []
    real = step_plan.solve
    monkeypatch.setattr(step_plan, "solve", lambda rec: solved.append((rec, real(rec))) or
                        solved[-1][1])
    rng = np.random.default_rng(d + h)
    xs = [rng.standard_normal((ROWS, d)), rng.standard_normal((d, h)) / np.sqrt(d),
          rng.standard_normal((h, d)) / np.sqrt(h)]
    args = [flow.tensor(a.astype(np.float32)).to_global(P8, nd)
            for a, nd in zip(xs, (B, S(1), S(0)))]
    step = flow.jit(_chain)
    loss = step(*args)
    want = np.sum((np.tanh(xs[0] @ xs[1]) @ xs[2]) ** 2)
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-5)
    colls = _collectives(step.lower(*args).compile().as_text())
    (rec, (plan, planned, greedy)), = solved
    allowed = [[s for s in op[1] if all(s.outputs[j] == nd for (kk, j), nd in
                                        rec.pinned.items() if kk == k)]
               for k, op in enumerate(rec.ops)]
    combos = list(itertools.product(*allowed))
    assert 50 < len(combos) < 5000  # (a real choice, small enough to try every one)
    best = min(combos, key=functools.partial(_brute_cost, rec))
    old = min(combos, key=functools.partial(_old_objective, rec))
    assert [op[0] for op in rec.ops] == ["matmul", "tanh", "matmul", "square", "reduce_sum"]
    assert planned == pytest.approx(_brute_cost(rec, best)), (plan, best)
    assert _brute_cost(rec, plan) == pytest.approx(planned)
    return rec, plan, best, old, step, colls


def _matmuls_whole(rec, choice) -> list[bool]:
    """Per matmul of the step: whether every device runs all of it (inputs broadcast)."""
    return [all(nd == (B,) for nd in sig.inputs)
            for op, sig in zip(rec.ops, choice) if op[0] == "matmul"]


def test_compute_heavy_chain_stays_tensor_parallel(monkeypatch) -> None:
    """Small weights, many rows: gathering a weight moves fewer bytes than all-reducing the
    activations, so the bytes-only model gathered w1 and ran the first matmul (and the tanh
    of its [1020, 256] output) whole on every device. Weighing their FLOPs (8x per device
    replicated) the plan keeps both split — the brute-force optimum of the model — and is
    faster in modelled time."""
    rec, plan, best, old, step, colls = _plan_chain(monkeypatch, 64, 256)
    assert _matmuls_whole(rec, old)[0], old  # (the old model: gather w1, replicate)
    assert _matmuls_whole(rec, plan) == [False, False]
    solved = step_plan.LAST_SOLVE
    assert solved["work_split"] == {8: 5}, solved
    nbytes, secs = step_plan.step_terms(rec, plan)
    old_bytes, old_secs = step_plan.step_terms(rec, old)
    assert (nbytes, secs) == (pytest.approx(_brute_bytes(rec, plan)),
                              pytest.approx(_brute_seconds(rec, plan)))
    assert old_bytes < nbytes and old_secs > 3 * secs  # more bytes, much less compute
    assert nbytes / step_plan.LINK_BANDWIDTH + secs < \
        old_bytes / step_plan.LINK_BANDWIDTH + old_secs
    assert solved["planned_bytes"] == pytest.approx(nbytes)
    assert solved["planned_compute_s"] == pytest.approx(secs)
    assert solved["planned_s"] == pytest.approx(nbytes / step_plan.LINK_BANDWIDTH + secs)
    # the compiled step moves what the plan says (greedy was already this plan here)
    assert nbytes <= _wire(colls) <= 1.01 * nbytes, colls


def test_communication_bound_chain_gathers_the_weights(monkeypatch) -> None:
    """Tiny weights and little compute: all-reducing the [1020, 8] activations costs more
    time than running the first matmul whole on every device, so the plan gathers w1 (and
    re-splits w2 by columns): it moves weights only, a few hundred bytes, where the greedy
    tensor-parallel choice all-reduces activations — compute weighed does not mean always
    split."""
    rec, plan, best, old, step, colls = _plan_chain(monkeypatch, 8, 8)
    assert _matmuls_whole(rec, plan)[0], plan
    solved = step_plan.LAST_SOLVE
    assert solved["planned_bytes"] <= 2 * 7 / 8 * 8 * 8 * 4  # (gathering both weights)
    assert solved["greedy_bytes"] > 50 * solved["planned_bytes"]
    assert step.sbp_plans  # adopted: cheaper than the greedy (tensor-parallel) choice
    assert solved["planned_bytes"] <= _wire(colls) <= 1.1 * solved["planned_bytes"], colls


def test_flops_estimates_scale_with_local_shards() -> None:
    """The planner calls the ops' flops= estimates on local shard shapes: a batched product
    (both operands batched, attention's) is m·k·n per batch element, so splitting its batch
    over 4 devices divides it by 4 (the geometric mean over-counted the batch by its square
    root, so splitting looked 8x cheaper)."""
    import jax

    from jflow.ops import cost as op_cost

    def a(*shape):
        return jax.core.ShapedArray(shape, np.float32)

    assert op_cost.contraction((a(16, 4, 5), a(16, 5, 3)), (a(16, 4, 3),)) == 16 * 4 * 5 * 3
    assert op_cost.contraction((a(4, 4, 5), a(4, 5, 3)), (a(4, 4, 3),)) == 4 * 4 * 5 * 3
    # broadcast batches: (2, 1) x (1, 3) -> (2, 3)
    assert op_cost.contraction((a(2, 1, 4, 5), a(1, 3, 5, 7)), (a(2, 3, 4, 7),)) == \
        2 * 3 * 4 * 5 * 7
    assert op_cost.contraction((a(2, 6, 4, 5), a(5, 7)), (a(2, 6, 4, 7),)) == 2 * 6 * 4 * 5 * 7
    # the planner's local shapes: batch_matmul split over the first axis (2) of a 2x4 mesh
    rec = step_plan.StepRecorder()
    sig = NdSignature(((S(0), B), (S(0), B)), ((S(0), B),))
    outs = [type("V", (), {"shape": (16, 4, 3)})()]
    rec.op("batch_matmul", [sig], [object(), object()], [(S(0), B)] * 2,
           [(16 * 20 * 4.0, (16, 4, 5)), (16 * 15 * 4.0, (16, 5, 3))], sig, outs,
           [16 * 12 * 4.0], (2, 4))
    seconds = step_plan._compute_s(rec.ops[0], sig)
    assert seconds == pytest.approx(max(2 * 8 * 4 * 5 * 3 / step_plan.FLOP_RATE,
                                        8 * 12 * 4 / step_plan.MEMORY_BANDWIDTH))
