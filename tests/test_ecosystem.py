"""PyTorch-ecosystem libraries (timm, torchvision, x-transformers, einops, HF transformers)
run unmodified on jflow through ``jflow.mock_torch``: each model is built with real PyTorch
(seeded), its weights, forward output, loss, gradients and loss after one AdamW step are the
reference; the same library is then imported under the mock in a fresh subprocess (so none
of its modules keeps real torch; one process per half for all the cases), loads the same
weights and must match -- eagerly, under ``torch.compile`` (``flow.compile``) and in lazy
execution mode (``flow.lazy``), with the mock's lazy placeholders on and none of them
reached.

The HF checks, in the same two processes (they need the same imports): transformers'
``from_pretrained`` and ``generate`` against real PyTorch on the same weights. After the
cases, the PyTorch half builds the tiny GPT-2 and Llama of the cases again (seeded), writes
each with ``save_pretrained`` (safetensors) and as a ``pytorch_model.bin`` directory, and
records the reference: logits on fixed ids and ``generate(ids, max_new_tokens=3,
do_sample=False)`` (greedy, with the KV cache, transformers' default). The jflow half then,
per model, loads each directory with ``AutoModelForCausalLM.from_pretrained`` offline
(``HF_HUB_OFFLINE=1``; transformers builds the model on the meta device, then assigns the
loaded tensors: jflow.meta) and compares logits, and runs ``generate`` on the model built in
code with the weights loaded by ``load_state_dict`` (the placeholders it reaches count with
the cases'). (Three new tokens: every one after the first runs the KV-cache path, twice, the
second time on a cache that grew, and each new cache length compiles jflow's ops anew, so
more tokens cost time without exercising another path.)

transformers 5's ``save_pretrained`` writes safetensors only (``safe_serialization`` is gone);
the ``.bin`` directory is what 4.x's ``save_pretrained(safe_serialization=False)`` wrote: the
config and ``torch.save(model.state_dict())`` as ``pytorch_model.bin`` (a PyTorch zip pickle
with shared storages for tied weights), which 5.x still loads, here through jflow's
restricted unpickler (jflow/serialization/_torchformat.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from _shared import shared_dir

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent

# name -> (library to import, code building `model` (the library is bound to its name),
# input, forward giving `o` from `x` through `net` (the model, or `torch.compile(model)`),
# loss from `o` (and `y`, labels [1, 7])). Each model is one layer of a kind deep: the
# transformers have one layer, the ResNets (resnet18's code: timm's factory, torchvision's
# class) one BasicBlock per stage (the first stage's keeps the identity shortcut, the others
# downsample). A second layer of the same kind runs the same library code and jflow ops (no
# new path), and would double the whole-step programs the compiled and lazy stages compile.
_CE = "F.cross_entropy(o, y)"
_LM = "F.cross_entropy(o.reshape(-1, 256), x.reshape(-1))"
CASES = {
    "timm_resnet": ("timm", "model = timm.create_model('resnet18', num_classes=10, "
                    "layers=(1, 1, 1, 1))", "randn(2, 3, 32, 32)", "o = net(x)", _CE),
    "torchvision_resnet": ("torchvision",
                           "model = torchvision.models.ResNet(torchvision.models.resnet."
                           "BasicBlock, [1, 1, 1, 1], num_classes=10)",
                           "randn(2, 3, 32, 32)", "o = net(x)", _CE),
    "x_transformers_decoder": (
        "x_transformers",
        "model = x_transformers.TransformerWrapper(num_tokens=256, max_seq_len=64, "
        "attn_layers=x_transformers.Decoder(dim=64, depth=1, heads=4))",
        "randint", "o = net(x)", _LM),
    "einops_layers": (
        "einops",
        "from einops.layers.torch import Rearrange, Reduce\n"
        "model = torch.nn.Sequential(Rearrange('b c (h p) (w q) -> b (h w) (c p q)', p=4, q=4),"
        " torch.nn.Linear(48, 32), Reduce('b n d -> b d', 'mean'), torch.nn.Linear(32, 10))",
        "randn(2, 3, 16, 16)", "o = net(x)", _CE),
    "hf_gpt2": ("transformers",
                "model = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=1, "
                "n_embd=64, n_head=4, vocab_size=256, n_positions=64))",
                "randint", "o = net(x).logits", _LM),
    "hf_llama": ("transformers",
                 "model = transformers.LlamaForCausalLM(transformers.LlamaConfig("
                 "num_hidden_layers=1, hidden_size=64, intermediate_size=128, "
                 "num_attention_heads=4, num_key_value_heads=2, vocab_size=256, "
                 "max_position_embeddings=64))",
                 "randint", "o = net(x).logits", _LM),
    "hf_bert": ("transformers",
                "model = transformers.BertForSequenceClassification(transformers.BertConfig("
                "num_hidden_layers=1, hidden_size=64, intermediate_size=128, "
                "num_attention_heads=4, vocab_size=256, max_position_embeddings=64, "
                "num_labels=10))",
                # with padding (tokens = 0 mod 7 masked out): eagerly transformers reads
                # `padding_mask.all()` to choose the mask path; compiled it asks
                # `torch.compiler.is_compiling()` and skips the read, as under torch.compile
                "randint", "o = net(x, attention_mask=(x % 7 != 0).long()).logits", _CE),
}

# the run: PyTorch's half runs each case's step once eagerly (the reference); jflow's half runs
# it eagerly, under `torch.compile` (flow.compile) and in lazy execution mode (flow.lazy), each
# from PyTorch's weights with a fresh optimizer. One process per half runs every case one
# after the other: importing torch, jflow and the libraries is most of a case's time (timm
# and transformers both import torchvision), and the cases share jflow's compiled
# executables (timm's and torchvision's ResNets have the same layers; losses of one shape
# share theirs). A case that raises is reported (ERROR) and the next one runs. The mock is
# enabled with lazy placeholders, and the run prints what the process touched: the test
# requires no placeholder among it, so strict mode takes the same path. After the cases the
# halves run the HF checks' code (``extra``, below): it needs the same imports.
RUN = textwrap.dedent('''
    import contextlib, importlib, json, os, sys, time, traceback
    import numpy as np
    cases, half, extra = json.loads(sys.argv[1])
    t0 = time.perf_counter()
    if half == "jflow":
        import jflow as flow
        import jflow.mock_torch as mock
        mock.enable(lazy=True)
    import torch
    import torch.nn.functional as F
    if half == "torch":
        # real torchvision's compiled ops may not match this PyTorch (timm imports it too):
        # declare the two schemas its import registers fake kernels for, so the Python
        # package imports (none of its compiled ops runs here)
        try:
            lib = torch.library.Library("torchvision", "FRAGMENT")
            lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
            lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        except RuntimeError:
            pass  # its compiled ops loaded: they are defined already
    print("START " + json.dumps(time.perf_counter() - t0))

    def run_case(name, lib_name, build, forward, loss_code, out):
        t0 = time.perf_counter()
        env = {"torch": torch, "F": F, "flow": globals().get("flow")}
        env[lib_name] = importlib.import_module(lib_name)
        torch.manual_seed(0)
        exec(build, env)
        model = env["model"]
        data = np.load(out + ".in.npz")
        env["x"], env["y"] = torch.tensor(data["x"]), torch.tensor(data["y"])
        if half == "jflow":
            w = np.load(out + ".weights.npz")
            weights = {k: torch.tensor(w[k]) for k in w.files}
            stages = ("eager", "compiled", "lazy")
        else:
            np.savez(out + ".weights.npz",
                     **{k: v.numpy() for k, v in model.state_dict().items()})
            stages = ("eager",)
        times = {"import": time.perf_counter() - t0}
        res = {}
        for stage in stages:
            t0 = time.perf_counter()
            if half == "jflow":
                model.load_state_dict(weights)
            # eval mode: no dropout (its random draws are not PyTorch's) and BatchNorm on
            # running statistics (train-mode BatchNorm over a batch of 2 at 1x1 spatial size
            # divides by a near-zero variance: float32 rounding alone moves its gradients by
            # percents)
            model.eval()
            env["net"] = net = torch.compile(model) if stage == "compiled" else model
            mode = flow.lazy() if stage == "lazy" else contextlib.nullcontext()
            with mode:
                opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
                exec(forward, env)
                loss = eval(loss_code, env)
                loss.backward()
                res.update({stage + ".grad." + k: p.grad.numpy()
                            for k, p in model.named_parameters() if p.grad is not None})
                res[stage + ".out"] = env["o"].detach().numpy()
                res[stage + ".loss"] = np.array(loss.item())
                opt.step()
                opt.zero_grad()
                exec(forward, env)
                res[stage + ".loss2"] = np.array(eval(loss_code, env).item())
            if stage == "compiled":  # (the traces of jflow's flow.jit under the wrapper)
                res["recompile_reasons"] = np.array(json.dumps(net.recompile_reasons))
                res["traces"] = np.array(net._compiled_for().trace_count)
            times[stage] = time.perf_counter() - t0
        np.savez(out + "." + half + ".npz", **res)
        print("TIMES " + json.dumps([name, times]), flush=True)

    for case in cases:
        try:
            run_case(*case)
        except Exception:
            print("ERROR " + json.dumps([case[0], traceback.format_exc()]), flush=True)
    if extra is not None:  # (the HF checks' half: its code and arguments)
        try:
            exec(extra[0][half], {"torch": torch, "np": np, "args": extra[1]})
        except Exception:
            print("EXTRAERROR " + json.dumps(traceback.format_exc()), flush=True)
    if half == "jflow":
        print("TOUCHED " + json.dumps(mock.touched()))
''')


def _run(args: list, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", RUN, json.dumps(args)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=1200)


#: names PyTorch has and jflow deliberately lacks that libraries read at import with
#: ``getattr(torch, name, None)`` into a table and never use (safetensors' dtype sizes): in
#: lazy mode a placeholder, in strict mode None; no tensor's dtype is either
_UNUSED_PLACEHOLDERS = {"torch.float4_e2m1fn_x2"}

def _lines(stdout: str, tag: str) -> list:
    return [json.loads(ln[len(tag) + 1:]) for ln in stdout.splitlines()
            if ln.startswith(tag + " ")]


def _line(stdout: str, tag: str) -> object:
    return _lines(stdout, tag)[0]


#: the order the cases run in, in one process per half (see RUN): vision models (timm's and
#: torchvision's ResNets share jflow's executables), then language models (three share the
#: transformers import). (They once ran as two tests, a process pair each, so that
#: pytest-xdist's two workers could take one each; one pair imports torch, jflow, torchvision
#: and the mock once instead of twice, and on a loaded two-core machine the parallel pairs
#: saved no time.)
ORDER = ("timm_resnet", "torchvision_resnet", "einops_layers",
         "x_transformers_decoder", "hf_gpt2", "hf_llama", "hf_bert")


MODELS = {"gpt2": CASES["hf_gpt2"][1], "llama": CASES["hf_llama"][1]}
FORMATS = ("safetensors", "bin")
#: prompt ids (batch 2; transformers' greedy search on PyTorch is the reference): as long as
#: the cases' inputs, whose forward programs jflow compiled in the same process
IDS = [list(range(1, 17)), list(range(17, 33))]
NEW_TOKENS = 3

# run by RUN after the cases (``extra``), with `torch` (real or the mock), `np` and `args`
# (models, ids, new tokens, directory); the torch half declared torchvision's schemas before
# anything imported transformers
HF_TORCH_HALF = textwrap.dedent('''
    import os
    import transformers
    models, ids, new, out = args
    ids = torch.tensor(ids)
    ref = {}
    for name, build in models.items():
        torch.manual_seed(0)
        exec(build)
        model.eval()
        model.save_pretrained(os.path.join(out, name + "_safetensors"))
        d = os.path.join(out, name + "_bin")
        os.makedirs(d, exist_ok=True)
        model.config.save_pretrained(d)
        torch.save(model.state_dict(), os.path.join(d, "pytorch_model.bin"))
        np.savez(os.path.join(out, name + ".weights.npz"),
                 **{k: v.numpy() for k, v in model.state_dict().items()})
        with torch.no_grad():
            ref[name + ".logits"] = model(ids).logits.numpy()
        ref[name + ".generate"] = model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=new, do_sample=False,
            pad_token_id=0).numpy()
    np.savez(os.path.join(out, "torch.npz"), **ref)
''')

HF_JFLOW_HALF = textwrap.dedent('''
    import json, os, traceback
    import transformers
    models, ids, new, out = args
    ids = torch.tensor(ids)
    res, errors = {}, {}
    for name, build in models.items():
        for fmt in ("safetensors", "bin"):
            try:
                m = transformers.AutoModelForCausalLM.from_pretrained(
                    os.path.join(out, name + "_" + fmt))
                m.eval()
                assert not any(p.is_meta for p in m.parameters()), "a parameter stayed meta"
                assert not any(b.is_meta for b in m.buffers()), "a buffer stayed meta"
                with torch.no_grad():
                    res[name + "." + fmt + ".logits"] = m(ids).logits.numpy()
            except Exception:
                errors[name + "." + fmt] = traceback.format_exc()
        try:
            exec(build)
            w = np.load(os.path.join(out, name + ".weights.npz"))
            model.load_state_dict({k: torch.tensor(w[k]) for k in w.files})
            model.eval()
            res[name + ".generate"] = model.generate(
                ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                do_sample=False, pad_token_id=0).numpy()
        except Exception:
            errors[name + ".generate"] = traceback.format_exc()
    np.savez(os.path.join(out, "jflow.npz"), **res)
    with open(os.path.join(out, "errors.json"), "w") as f:
        json.dump(errors, f)
''')


def _check_case(name: str, out: str) -> None:
    """One case's jflow stages against PyTorch's eager step (raises AssertionError)."""
    ref, got = np.load(out + ".torch.npz"), np.load(out + ".jflow.npz")
    assert {k.split(".")[0] for k in got.files} == {"eager", "compiled", "lazy",
                                                    "recompile_reasons", "traces"}
    for stage in ("eager", "compiled", "lazy"):
        assert sorted(stage + k[len("eager"):] for k in ref.files) == sorted(
            k for k in got.files if k.startswith(stage + ".")), stage
        np.testing.assert_allclose(got[stage + ".out"], ref["eager.out"], rtol=1e-4, atol=1e-5,
                                   err_msg=f"{stage} forward")
        for k in ("loss", "loss2"):
            np.testing.assert_allclose(got[f"{stage}.{k}"], ref[f"eager.{k}"], rtol=1e-4,
                                       atol=1e-6, err_msg=f"{stage} {k}")
        for k in ref.files:
            if k.startswith("eager.grad."):
                np.testing.assert_allclose(
                    got[stage + k[len("eager"):]], ref[k], rtol=1e-3,
                    atol=1e-5 * float(np.abs(ref[k]).max() + 1), err_msg=f"{stage} {k}")
    # compiled for real: one trace, reused after the optimizer step; no graph break (a break
    # would run the call eagerly, still matching, with its reason here) and no retrace
    reasons = json.loads(str(got["recompile_reasons"]))
    assert reasons == [] and int(got["traces"]) == 1, (reasons, int(got["traces"]))


def test_order_holds_every_case_once() -> None:
    assert sorted(ORDER) == sorted(CASES)


def _extra() -> list | None:
    """The HF checks' code for the halves and its arguments (None without transformers)."""
    if importlib.util.find_spec("transformers") is None:
        return None
    return [{"torch": HF_TORCH_HALF, "jflow": HF_JFLOW_HALF}, [MODELS, IDS, NEW_TOKENS]]


@pytest.fixture(scope="module")
def ecosystem_run(tmp_path_factory) -> tuple:
    """Both halves, once per run, for every case and the HF checks (one process per half:
    the same imports): ``(directory, case names, {half: (exit code, stdout, output's
    tail)})``. pytest-xdist's workers share the directory
    (tests/_shared.py): the first runs the two subprocesses, the others read what they wrote."""
    names = [n for n in ORDER if importlib.util.find_spec(CASES[n][0]) is not None]
    with shared_dir(tmp_path_factory, "ecosystem") as out:
        done = out / "runs.json"
        if not done.exists():
            env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT),
                       TRANSFORMERS_VERBOSITY="error")
            env.pop("XLA_FLAGS", None)
            g = np.random.default_rng(0)
            cases = []
            for name in names:
                lib_name, build, make_input, forward, loss_code = CASES[name]
                if make_input == "randint":
                    x = g.integers(0, 256, (2, 16))
                else:
                    shape = tuple(int(v) for v in make_input[len("randn("):-1].split(","))
                    x = g.standard_normal(shape).astype(np.float32)
                np.savez(str(out / name) + ".in.npz", x=x, y=np.array([1, 7]))
                cases.append([name, lib_name, build, forward, loss_code, str(out / name)])
            extra = _extra()
            if extra is not None:
                (out / "hf").mkdir(exist_ok=True)
                extra[1] = [*extra[1], str(out / "hf")]
            runs = {}
            for half in ("torch", "jflow"):
                r = _run([cases, half, extra], env)
                runs[half] = (r.returncode, r.stdout, r.stdout[-2000:] + r.stderr[-3000:])
                if r.returncode:  # (the jflow half needs the weights)
                    break
            done.write_text(json.dumps(runs))
        return out, names, json.loads(done.read_text())


def test_library_matches_pytorch(ecosystem_run):
    """One step eagerly, compiled and in lazy mode: each equals PyTorch's eager step, for
    every case (each case's failure is reported, not only the first)."""
    tmp_path, names, results = ecosystem_run
    if not names:  # not imported here: the halves import them
        pytest.skip(f"none of {sorted({CASES[n][0] for n in ORDER})} is installed")
    runs = {}
    for half in ("torch", "jflow"):
        assert half in results, results
        rc, stdout, tail = results[half]
        assert rc == 0, tail
        runs[half] = stdout
    times = {half: {n: t for n, t in _lines(runs[half], "TIMES")} for half in runs}
    for name in names:
        print(name, "seconds:", times["torch"].get(name), times["jflow"].get(name))
    # lazy placeholders were on: none may have been reached, so strict mode (where each of
    # these names raises) takes the same path
    touched = _line(runs["jflow"], "TOUCHED")
    assert not [e for e in touched if "placeholder" in e
                and e.split(" ")[0] not in _UNUSED_PLACEHOLDERS], touched
    failures = [f"{name} ({half} half) raised:\n{tb}" for half in runs
                for name, tb in _lines(runs[half], "ERROR")]
    for name in names:
        if any(f.startswith(name + " ") for f in failures):
            continue
        try:
            _check_case(name, str(tmp_path / name))
        except AssertionError as e:
            failures.append(f"{name}: {e}")
    assert not failures, "\n\n".join(failures)


@pytest.fixture(scope="module")
def hf_results(ecosystem_run):
    """The HF checks' results, from the halves' run: (PyTorch's reference, jflow's results,
    errors)."""
    if importlib.util.find_spec("transformers") is None:  # (imported only by the halves)
        pytest.skip("transformers is not installed")
    out, _, runs = ecosystem_run
    for half in ("torch", "jflow"):
        assert half in runs, runs
        rc, stdout, tail = runs[half]
        assert rc == 0, tail
        extra_errors = [ln for ln in stdout.splitlines() if ln.startswith("EXTRAERROR ")]
        assert not extra_errors, "\n".join(json.loads(e[len("EXTRAERROR "):])
                                           for e in extra_errors)
    out = out / "hf"
    errors = json.loads((out / "errors.json").read_text())
    return np.load(out / "torch.npz"), np.load(out / "jflow.npz"), errors


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_from_pretrained_matches_pytorch(hf_results, name, fmt):
    """A directory real PyTorch wrote loads offline, and its logits are PyTorch's."""
    ref, got, errors = hf_results
    key = f"{name}.{fmt}"
    assert key not in errors, errors[key]
    np.testing.assert_allclose(got[key + ".logits"], ref[name + ".logits"], rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_generate_matches_pytorch(hf_results, name):
    """Greedy ``generate`` (KV cache on) gives PyTorch's token ids, prompt included."""
    ref, got, errors = hf_results
    key = f"{name}.generate"
    assert key not in errors, errors[key]
    want = ref[key]
    assert want.shape == (len(IDS), len(IDS[0]) + NEW_TOKENS)
    np.testing.assert_array_equal(got[key], want)


def test_einops_in_lazy_mode():
    """einops probes ``torch._dynamo.allow_in_graph`` at import: PyTorch has it, so lazy mode
    gives jflow's equivalent (not a placeholder that fails at first use)."""
    if importlib.util.find_spec("einops") is None:
        pytest.skip("einops is not installed")
    import jflow as flow
    import jflow.mock_torch as mock

    saved = {k: sys.modules.pop(k) for k in list(sys.modules)
             if k == "einops" or k.startswith("einops.")}
    try:
        with mock.enable(lazy=True):
            import einops
            from einops.layers.torch import Rearrange
            x = flow.arange(24.0).reshape(2, 3, 4)
            y = einops.rearrange(x, "a b c -> a (c b)")
            assert y.tolist() == x.permute(0, 2, 1).reshape(2, 12).tolist()
            assert Rearrange("a b c -> c b a")(x).shape == (4, 3, 2)
            assert einops.reduce(x, "a b c -> a", "sum").tolist() == x.sum((1, 2)).tolist()
        assert "torch._dynamo.allow_in_graph (equivalent)" in mock.touched()
        assert not any(e.endswith("(placeholder)") for e in mock.touched())
    finally:
        for k in [k for k in sys.modules if k == "einops" or k.startswith("einops.")]:
            del sys.modules[k]
        sys.modules.update(saved)
