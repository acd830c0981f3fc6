"""docs/api is generated from api.yaml, the op / kernel / rule registries, the SBP functions
and the docstrings, and kept in sync with them (as _C.pyi is)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from jflow.testing.api_reference import REGENERATE, undocumented

ROOT = Path(__file__).resolve().parent.parent


def test_committed_api_reference_is_up_to_date():
    # a fresh process: ops and functors that other tests register must not appear
    out = subprocess.run([sys.executable, "-m", "jflow.testing.api_reference", "--check"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, (f"{out.stdout}{out.stderr[-2000:]}\nregenerate with "
                                 f"`{REGENERATE}`")


def test_reference_shows_kernels_rules_and_sbp_of_an_op():
    text = (ROOT / "docs" / "api" / "ops.md").read_text(encoding="utf-8")
    add = text.split("## `add`\n", 1)[1].split("\n## ", 1)[0]
    assert "xla kernel 'add_xla' (platforms cpu" in add and "backward: registered" in add
    assert "`(S(0), S(0)) -> (S(0))`" in add and "`(P, P) -> (P)`" in add
    fn = (ROOT / "docs" / "api" / "functional.md").read_text(encoding="utf-8")
    assert "## `matmul`" in fn and "=> MatMul" in fn
    py = (ROOT / "docs" / "api" / "python.md").read_text(encoding="utf-8")
    assert "## `flow.func`" in py and "- `grad(func" in py


def test_every_public_name_has_a_docstring():
    assert undocumented() == []
