"""HF transformers' ``generate`` and ``from_pretrained`` on jflow through ``jflow.mock_torch``,
against real PyTorch on the same weights.

One PyTorch subprocess builds the tiny GPT-2 and Llama of tests/test_ecosystem.py (seeded),
writes each with ``save_pretrained`` (safetensors) and as a ``pytorch_model.bin`` directory,
and records the reference: logits on fixed ids and ``generate(ids, max_new_tokens=4,
do_sample=False)`` (greedy, with the KV cache, transformers' default). One jflow subprocess
then imports transformers under the mock (so none of its modules holds real torch) and, per
model: loads each directory with ``AutoModelForCausalLM.from_pretrained`` offline
(``HF_HUB_OFFLINE=1``; transformers builds the model on the meta device, then assigns the
loaded tensors: jflow.meta) and compares logits, and runs ``generate`` on the model built in
code with the weights loaded by ``load_state_dict``. (Four new tokens: every one after the
first runs the KV-cache path, three times on a cache that grows, and each new cache length
compiles jflow's ops anew, so more tokens cost time without exercising another path.)

transformers 5's ``save_pretrained`` writes safetensors only (``safe_serialization`` is gone);
the ``.bin`` directory is what 4.x's ``save_pretrained(safe_serialization=False)`` wrote: the
config and ``torch.save(model.state_dict())`` as ``pytorch_model.bin`` (a PyTorch zip pickle
with shared storages for tied weights), which 5.x still loads, here through jflow's
restricted unpickler (jflow/serialization/_torchformat.py)."""

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

pytest.importorskip("torch")
if importlib.util.find_spec("transformers") is None:  # (imported only by the subprocesses)
    pytest.skip("transformers is not installed", allow_module_level=True)

from test_ecosystem import CASES  # noqa: E402  (the model configs, kept in one place)

ROOT = Path(__file__).resolve().parent.parent
MODELS = {"gpt2": CASES["hf_gpt2"][1], "llama": CASES["hf_llama"][1]}
FORMATS = ("safetensors", "bin")
#: prompt ids (batch 2; transformers' greedy search on PyTorch is the reference)
IDS = [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]]
NEW_TOKENS = 4

TORCH_HALF = textwrap.dedent('''
    import json, os, sys
    import numpy as np
    import torch
    # real torchvision's compiled ops may not match this PyTorch (transformers imports it):
    # declare the two schemas its import registers fake kernels for (tests/test_ecosystem.py)
    try:
        lib = torch.library.Library("torchvision", "FRAGMENT")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    except RuntimeError:
        pass
    import transformers
    models, ids, new, out = json.loads(sys.argv[1])
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

JFLOW_HALF = textwrap.dedent('''
    import json, os, sys, traceback
    import numpy as np
    import jflow.mock_torch as mock
    mock.enable()
    import torch
    import transformers
    models, ids, new, out = json.loads(sys.argv[1])
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


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Both halves, once for every case: (PyTorch's reference, jflow's results, errors).
    Once per run: pytest-xdist's workers share the directory (tests/_shared.py), the first
    runs the two subprocesses and the others read what they wrote."""
    with shared_dir(tmp_path_factory, "hf_pretrained") as out:
        if not (out / "done").exists():
            env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT),
                       TRANSFORMERS_VERBOSITY="error")
            env.pop("XLA_FLAGS", None)
            args = json.dumps([MODELS, IDS, NEW_TOKENS, str(out)])
            for src in (TORCH_HALF, JFLOW_HALF):
                r = subprocess.run([sys.executable, "-c", src, args], env=env, cwd=ROOT,
                                   capture_output=True, text=True, timeout=1200)
                assert r.returncode == 0, r.stderr[-4000:]
            (out / "done").write_text("")
    errors = json.loads((out / "errors.json").read_text())
    return np.load(out / "torch.npz"), np.load(out / "jflow.npz"), errors


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_from_pretrained_matches_pytorch(results, name, fmt):
    """A directory real PyTorch wrote loads offline, and its logits are PyTorch's."""
    ref, got, errors = results
    key = f"{name}.{fmt}"
    assert key not in errors, errors[key]
    np.testing.assert_allclose(got[key + ".logits"], ref[name + ".logits"], rtol=1e-4,
                               atol=1e-5)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_generate_matches_pytorch(results, name):
    """Greedy ``generate`` (KV cache on) gives PyTorch's token ids, prompt included."""
    ref, got, errors = results
    key = f"{name}.generate"
    assert key not in errors, errors[key]
    want = ref[key]
    assert want.shape == (len(IDS), len(IDS[0]) + NEW_TOKENS)
    np.testing.assert_array_equal(got[key], want)
