"""The tutorials (docs/tutorials/) run as written and print what they say they print.

Each tutorial is one program: its ``python`` code blocks run in order. A ``text`` block right
after a ``python`` block is that block's output, compared line by line (trailing spaces
ignored). Tutorials 1-3 run in this process (cheap: jflow is already imported), each
in a fresh namespace. Tutorial 4 makes 8 CPU devices at its top, before JAX starts, tutorial
5 defines ops (global to a process) and tutorial 6 turns ``import torch`` into jflow, so
those run outside this process: in one fresh interpreter, one after the other, each in a
fresh namespace (4 first: its devices must come before any JAX work; 6 last: what it
enables stays on), so that jflow is imported once for the three, not three times. A
tutorial that raises is reported and the next one runs.

``python tests/test_tutorials.py docs/tutorials/1_tensors.md`` prints each block's output
(how the ``text`` blocks are written).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from _shared import shared_dir

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = ROOT / "docs" / "tutorials"
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_MARK = "@@jflow-tutorial-block@@"

#: tutorial file -> run in a fresh interpreter (else in this process)
TUTORIAL_FILES = {"1_tensors.md": False, "2_train.md": False, "3_compile.md": False,
                  "4_sbp.md": True, "5_custom_ops.md": True, "6_porting.md": True}


def blocks(path: Path) -> list[tuple[str, str | None]]:
    """``(code, expected output or None)`` for each python block of ``path``."""
    out: list[tuple[str, str | None]] = []
    prev = ""
    for m in _FENCE.finditer(path.read_text(encoding="utf-8")):
        lang, body = m[1], m[2]
        if lang == "python":
            out.append((body, None))
        elif lang == "text" and prev == "python":
            out[-1] = (out[-1][0], body)
        prev = lang
    return out


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def run_in_subprocess(names: list[str]) -> dict[str, list[str] | str]:
    """Each tutorial's blocks' stdout (or, where one raised, its traceback), the tutorials run
    in order in one fresh interpreter from the repository root, each in a fresh namespace."""
    program = textwrap.dedent('''
        import json, sys, traceback
        for name, codes in json.loads(sys.argv[1]):
            ns = {"__name__": "__main__"}
            try:
                for i, code in enumerate(codes):
                    print(MARK, name, i, flush=True)
                    exec(compile(code, f"{name} block {i + 1}", "exec"), ns)
                    sys.stdout.flush()
            except BaseException:
                print(MARK, name, "error", flush=True)
                print(traceback.format_exc(), flush=True)
        print(MARK, "end", flush=True)
    ''').replace("MARK", repr(_MARK))
    args = [[name, [code for code, _ in blocks(TUTORIALS / name)]] for name in names]
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1")
    run = subprocess.run([sys.executable, "-c", program, json.dumps(args)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"{names} failed:\n{run.stdout[-3000:]}{run.stderr[-5000:]}"
    out: dict[str, list[str] | str] = {name: [] for name in names}
    parts = run.stdout.split(_MARK + " ")[1:]
    assert parts and parts[-1].startswith("end"), run.stdout[-3000:] + run.stderr[-3000:]
    for part in parts[:-1]:
        head, _, text = part.partition("\n")
        name, what = head.split(" ")
        if what == "error":
            out[name] = f"{name} raised:\n{text}{run.stderr[-3000:]}"
        else:
            out[name].append(text)  # type: ignore[union-attr]
    return out


def run_in_process(path: Path, code_blocks: list[str]) -> list[str]:
    """Each block's stdout, the blocks run in order in one fresh namespace of this process."""
    ns: dict = {"__name__": "__main__"}
    outs = []
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for i, code in enumerate(code_blocks):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                exec(compile(code, f"{path.name} block {i + 1}", "exec"), ns)  # noqa: S102
            outs.append(buf.getvalue())
    finally:
        os.chdir(cwd)
    return outs


def run_tutorial(name: str, subprocess_outputs: dict | None = None
                 ) -> list[tuple[str, str | None, str]]:
    """``(code, expected, printed)`` per python block of the tutorial; a tutorial that runs
    outside this process is looked up in ``subprocess_outputs`` (what :func:`run_in_subprocess`
    gave), or run alone."""
    path = TUTORIALS / name
    found = blocks(path)
    if TUTORIAL_FILES[name]:
        got = (subprocess_outputs or run_in_subprocess([name]))[name]
        assert not isinstance(got, str), got
        printed = got
    else:
        printed = run_in_process(path, [code for code, _ in found])
    assert len(printed) == len(found)
    return [(code, expected, out) for (code, expected), out in zip(found, printed)]


def test_every_tutorial_is_tested_and_in_the_site():
    on_disk = {p.name for p in TUTORIALS.glob("*.md")} - {"index.md"}
    assert on_disk == set(TUTORIAL_FILES)
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    index = (TUTORIALS / "index.md").read_text(encoding="utf-8")
    for name in TUTORIAL_FILES:
        assert f"tutorials/{name}" in nav and f"]({name})" in index, name


def _needs_skip(name: str) -> str | None:
    if name == "5_custom_ops.md":
        from jflow.utils.cpp_extension import find_cxx
        if find_cxx() is None:
            return "tutorial 5 builds a C++ op: no C++ compiler"
    return None


@pytest.fixture(scope="module")
def subprocess_outputs(tmp_path_factory) -> dict:
    """The fresh-interpreter tutorials, run once per run in one interpreter (see the module
    docstring); pytest-xdist's workers share the result (tests/_shared.py)."""
    names = [n for n, fresh in TUTORIAL_FILES.items() if fresh and _needs_skip(n) is None]
    with shared_dir(tmp_path_factory, "tutorials") as d:
        done = d / "outputs.json"
        if not done.exists():
            done.write_text(json.dumps(run_in_subprocess(names)))
        return json.loads(done.read_text())


@pytest.mark.parametrize("name", list(TUTORIAL_FILES))
def test_tutorial_runs_and_prints_what_it_says(name: str, request) -> None:
    reason = _needs_skip(name)
    if reason:
        pytest.skip(reason)
    outputs = request.getfixturevalue("subprocess_outputs") if TUTORIAL_FILES[name] else None
    results = run_tutorial(name, outputs)
    checked = 0
    for i, (code, expected, out) in enumerate(results):
        if expected is None:
            continue
        checked += 1
        assert _lines(out) == _lines(expected), (
            f"{name}, block {i + 1}:\n{code}\nprinted:\n{out}\nthe tutorial says:\n{expected}")
    assert checked >= 2, f"{name} shows fewer than two outputs"


if __name__ == "__main__":  # print each block's output, to write a tutorial's text blocks
    for arg in sys.argv[1:]:
        t0 = time.perf_counter()
        name = Path(arg).name
        for i, (_, expected, out) in enumerate(run_tutorial(name)):
            flag = "" if expected is None else (
                "  (matches)" if _lines(out) == _lines(expected) else "  (DIFFERS)")
            print(f"--- block {i + 1}{flag}\n{out}", end="")
        print(f"--- {name}: {time.perf_counter() - t0:.1f} s")
