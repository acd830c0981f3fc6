"""The typed stub ``jflow/_C.pyi`` is generated from the functional yaml and kept in sync."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import jflow as flow
from jflow.functional import F, load_api
from jflow.functional.stub import REGENERATE, generate_stub, main, stub_path


def test_committed_stub_is_up_to_date():
    path = stub_path()
    assert path.exists(), f"{path} is missing; generate it with `{REGENERATE}`"
    assert path.read_text(encoding="utf-8") == generate_stub(), (
        f"{path} is out of date with the functional yaml; regenerate it with `{REGENERATE}`")


def _top_level_defs(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in tree.body if isinstance(n, ast.FunctionDef)]


def test_stub_is_valid_python_with_one_def_per_public_function():
    tree = ast.parse(generate_stub())
    defs = _top_level_defs(tree)
    public = [e for e in F.entries if e.bind_python]
    assert {d.name for d in defs} == set(flow._C.__all__) == {e.name for e in public}
    for e in public:
        mine = [d for d in defs if d.name == e.name]
        assert len(mine) == len(e.signatures)
        if len(mine) > 1:  # overloads are declared with @overload
            assert all(any(getattr(x, "id", None) == "overload" for x in d.decorator_list)
                       for d in mine)
    names = next(n for n in tree.body if isinstance(n, ast.Assign)
                 and n.targets[0].id == "__all__")
    assert [c.value for c in names.value.elts] == [e.name for e in public]


def test_stub_declares_parameters_defaults_and_named_tuples():
    yaml_text = """
- name: top
  signature: ["TensorTuple[values, indices] (Tensor input, Int32List[1] dim=None, *,
               Bool keepdim=False, DataType dtype=kInt64) => Top",
              "Tensor (Tensor input, String mode='fast', FloatList scale=[1.0, 2.0]) => One"]
  bind_python: True
- name: hidden
  signature: "Tensor (Tensor x) => One"
"""
    api = load_api(yaml_text, functors={"Top": lambda *a: (a[0], a[0]), "One": lambda *a: a[0]})
    text = generate_stub(api.entries)
    tree = ast.parse(text)
    assert [d.name for d in _top_level_defs(tree)] == ["top", "top"]
    assert "class _top_result(NamedTuple):\n    values: Tensor\n    indices: Tensor" in text
    assert ("    dim: int | Sequence[int] | None = None,\n    *,\n    keepdim: bool = False,\n"
            "    dtype: dtype = ...,\n) -> _top_result: ...") in text
    assert ("def top(input: Tensor, mode: str = 'fast', scale: Sequence[float] = (1.0, 2.0)) "
            "-> Tensor: ...") in text
    assert "from typing import NamedTuple, overload" in text
    assert "Generator" not in text and "hidden" not in text


def test_stub_refuses_names_that_shadow_annotations():
    api = load_api('- {name: dtype, signature: "Tensor (Tensor x) => One", bind_python: True}',
                   functors={"One": lambda x: x})
    with pytest.raises(ValueError, match=r"\['dtype'\] would shadow"):
        generate_stub(api.entries)


def test_check_mode_reports_an_out_of_date_stub(tmp_path, capsys):
    out = tmp_path / "_C.pyi"
    assert main(["--check", "--output", str(out)]) == 1
    assert REGENERATE in capsys.readouterr().err
    assert main(["--output", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == generate_stub()
    assert main(["--check", "--output", str(out)]) == 0
    out.write_text(out.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    assert main(["--check", "--output", str(out)]) == 1


def test_runs_as_a_module(tmp_path):
    out = tmp_path / "_C.pyi"
    root = Path(flow.__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "-m", "jflow.functional.stub", "--check", "--output",
                        str(out)], capture_output=True, text=True, cwd=root)
    assert r.returncode == 1 and "out of date" in r.stderr
