"""docs/api is generated from api.yaml, the op / kernel / rule registries, the SBP functions
and the docstrings, and kept in sync with them (as _C.pyi is). Its signatures are Python's
(what ``inspect.signature`` / ``help()`` give), one per api.yaml overload, and it documents
every public member of ``flow.Tensor``."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path

import jflow as flow
from jflow.functional import F
from jflow.functional.signature import overload_policy
from jflow.testing.api_reference import (
    REGENERATE,
    format_signature,
    overload_signatures,
    tensor_members,
    undocumented,
)

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "api"


def _section(page: str, title: str) -> str:
    text = (API / page).read_text(encoding="utf-8")
    return text.split(f"## `{title}`\n", 1)[1].split("\n## ", 1)[0]


def test_committed_api_reference_is_up_to_date():
    # a fresh process: ops and functors that other tests register must not appear
    out = subprocess.run([sys.executable, "-m", "jflow.testing.api_reference", "--check"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, (f"{out.stdout}{out.stderr[-2000:]}\nregenerate with "
                                 f"`{REGENERATE}`")


def test_reference_shows_kernels_rules_and_sbp_of_an_op():
    add = _section("ops.md", "add")
    assert "xla kernel 'add_xla' (platforms cpu" in add and "backward: registered" in add
    assert "`(S(0), S(0)) -> (S(0))`" in add and "`(P, P) -> (P)`" in add
    assert "- runs: functor `MatMul`" in _section("functional.md", "matmul")
    py = (API / "python.md").read_text(encoding="utf-8")
    assert "## `flow.func`" in py and "- `grad(func" in py


def test_functional_signatures_are_python_one_line_per_overload():
    conv = _section("functional.md", "conv2d")
    lines = conv.split("```python\n", 1)[1].split("```", 1)[0].splitlines()
    assert lines == [
        "conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, "
        "stride: int | Sequence[int] = 1, padding: int | Sequence[int] = 0, "
        "dilation: int | Sequence[int] = 1, groups: int = 1) -> Tensor",
        "conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, "
        "stride: int | Sequence[int] = 1, padding: str = 'valid', "
        "dilation: int | Sequence[int] = 1, groups: int = 1) -> Tensor"]
    text = (API / "functional.md").read_text(encoding="utf-8")
    code = "".join(re.findall(r"^```python\n(.*?)^```", text, re.S | re.M))
    assert code.count("\n") > 400
    # nothing in api.yaml's grammar, no quoted annotations, no table escapes in code
    assert not re.search(r"Int64List\[|\bScalar \w|\bTensor input\b|: '|\\\|", code)


def test_single_signatures_are_what_inspect_signature_gives():
    # the page renders the very signature help() shows (the generated function's
    # __signature__), for every entry with one overload
    checked = 0
    for e in F.entries:
        if not e.bind_python or overload_policy(e.signatures) != "single":
            continue
        shown = format_signature(inspect.signature(getattr(F, e.name)))
        assert overload_signatures(e) == [shown], e.name
        assert f"\n{e.name}{shown}\n" in _section("functional.md", e.name), e.name
        checked += 1
    assert checked > 300


def test_tensor_page_has_every_public_member():
    text = (API / "tensor.md").read_text(encoding="utf-8")
    members = tensor_members()
    assert len(members) > 400
    for name, _, _ in members:
        assert re.search(rf"^- `{re.escape(name)}[`(]", text, re.M), name
    assert ("- `to_global(placement: Placement | None = None, sbp: Any = None) -> Tensor`"
            in text)
    assert "- `backward(gradient: Tensor | None = None, retain_graph: bool | None = None" in text
    assert "- `sbp`: " in text and "- `shape`: " in text
    # methods forwarding to flow._C show the function's overloads without the tensor itself,
    # in-place ones without api.yaml's `inplace` flag
    assert ("- `add(other: Tensor, *, alpha: int | float = 1, inplace: bool = False) -> Tensor`"
            "<br>`add(other: int | float, *, alpha: int | float = 1, inplace: bool = False) "
            "-> Tensor`") in text
    assert "- `add_(other: Tensor, *, alpha: int | float = 1) -> Tensor`<br>" in text
    assert "- `abs_() -> Tensor`" in text
    assert flow.Tensor.abs_.__doc__.startswith("In-place ``abs``")


def test_every_public_name_has_a_docstring():
    assert undocumented() == []
