"""docs/custom_ops.md runs as written: the code blocks of the walkthrough (steps 1 to 6) as one
program, and the complete C++ kernel of "C++ and CUDA ops" built and called.

Each runs in a fresh interpreter (op names are global to a process) from a temporary folder
holding the files the text names (the yaml of step 3, the C++ source)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "custom_ops.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def _section(start: str, end: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index(start):text.index(end)]


def _blocks(section: str) -> list[tuple[str, str]]:
    return [(m[1], m[2]) for m in _BLOCK.finditer(section)]


def _run(tmp_path: Path, code: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "walkthrough.py").write_text(code, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "walkthrough.py"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    return run.stdout


def test_walkthrough_steps_1_to_6_run_as_written(tmp_path: Path) -> None:
    blocks = _blocks(_section("## 1. Define the op", "## NumPy"))
    yaml_blocks = [code for lang, code in blocks if lang == "yaml"]
    assert len(yaml_blocks) == 1 and yaml_blocks[0].startswith("# leaky_relu_yzh_api.yaml\n")
    code = "\n".join(code for lang, code in blocks if lang == "python")
    # every name a block uses is defined by an earlier block: nothing is added before them;
    # after them, two claims of the prose
    code += ("\nimport inspect\nfrom jflow.sharding.sbp import elementwise\n"
             "assert elementwise('none')([(4, 6)], 1) == _sbp([(4, 6)], 1)\n"
             "assert str(inspect.signature(F.leaky_relu_yzh)) == "
             "\"(x: 'Tensor', alpha: 'float' = 0.01) -> 'Tensor'\"\n")
    out = _run(tmp_path, code, {"leaky_relu_yzh_api.yaml": yaml_blocks[0]})
    printed = [line for lang, c in blocks if lang == "text" for line in c.splitlines()]
    # the printed values and signatures are the ones the text shows as comments
    assert "[-0.4 -0.1  1.   3. ]" in out
    assert "[0.2 0.2 1.  1. ]" in out
    assert "[(S(0)) -> (S(0)), (S(1)) -> (S(1)), (B) -> (B)]" in out
    assert "[(S(0), S(0)) -> (S(0)), (S(1), S(1)) -> (S(1)), (B, P) -> (P), (B, B) -> (B)]" \
        in out
    # the check_op report printed is the one the text shows, line for line
    report = out[out.index("check_op('leaky_relu_yzh'): passed"):].splitlines()
    assert report[:len(printed)] == printed and len(printed) == 8


def _cxx() -> str | None:
    return shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")


@pytest.mark.skipif(_cxx() is None, reason="no C++ compiler")
def test_complete_cpp_kernel_builds_and_runs(tmp_path: Path) -> None:
    blocks = _blocks(_section("### A complete kernel", "### The C++ declaration surface"))
    cpp = [c for lang, c in blocks if lang == "cpp"]
    py = [c for lang, c in blocks if lang == "python"]
    assert len(cpp) == 1 and cpp[0].startswith("// softsign.cpp:") and len(py) == 1
    for api in ("element_count()", "typed_data()", "JFLOW_REGISTER_OP", "JFLOW_REGISTER_KERNEL",
                "ffi::Error::InvalidArgument"):
        assert api in cpp[0], api
    out = _run(tmp_path, py[0], {"softsign.cpp": cpp[0]})
    assert "softsign: ok" in out
