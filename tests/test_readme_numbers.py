"""The README's speed figures come from the benchmark results files: between the README's
``<!-- speed figures -->`` markers, every bullet and every table row with a figure names one
``benchmarks/results_*.txt`` and every number it quotes outside code spans (``0.93x``,
``40.266 ms``; counts are written in words) appears verbatim, as a whole number, in that
file. A stale figure (the file rerun, the
README not) fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- speed figures", "<!-- /speed figures -->"
RESULTS = re.compile(r"benchmarks/results_\w+\.txt")
CODE = re.compile(r"`[^`]*`")
FIGURE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")


def speed_bullets(readme: str) -> list[str]:
    """The bullets (continuation lines joined) and the table rows quoting a figure, between
    the speed-figure markers."""
    start = readme.index(BEGIN)
    block = readme[readme.index("\n", start):readme.index(END, start)]
    bullets: list[str] = []
    for line in block.splitlines():
        if line.startswith("|"):
            if figures(line):
                bullets.append(line)
        elif line.startswith("- "):
            bullets.append(line)
        elif line.strip() and bullets and bullets[-1].startswith("- "):
            bullets[-1] += " " + line.strip()
    return bullets


def figures(text: str) -> list[str]:
    """The numbers quoted in ``text`` outside code spans (file names, commands)."""
    return FIGURE.findall(CODE.sub("", text))


def stale(bullet: str, results: str) -> list[str]:
    """The figures of ``bullet`` that do not appear, as whole numbers, in ``results``."""
    return [f for f in figures(bullet)
            if not re.search(rf"(?<![\d.]){re.escape(f)}(?!\d|\.\d)", results)]


def test_readme_speed_figures_are_in_their_results_files() -> None:
    bullets = speed_bullets((ROOT / "README.md").read_text())
    assert bullets, "no speed bullets between the README's speed-figure markers"
    problems = []
    for b in bullets:
        named = set(RESULTS.findall(b))
        if len(named) != 1:
            problems.append(f"names {sorted(named) or 'no results file'} (one needed): {b}")
            continue
        path = ROOT / named.pop()
        if not path.exists():
            problems.append(f"{path.name} does not exist: {b}")
            continue
        missing = stale(b, path.read_text())
        if missing:
            problems.append(f"{missing} not in {path.name}: {b}")
    assert not problems, "\n".join(problems)


def test_the_check_catches_a_stale_figure() -> None:
    results = "digits MLP (64)  0.211  0.227  0.519  0.557  0.93  0.93\n"
    fresh = "- eager is 0.93x torch, 0.211 ms (`benchmarks/results_train_step_cpu.txt`)"
    assert figures(fresh) == ["0.93", "0.211"]
    assert stale(fresh, results) == []
    assert stale("- eager is 2.6x torch, 0.21 ms, 41 vs 0.2 ms", results) == \
        ["2.6", "0.21", "41", "0.2"]
    assert figures("`benchmarks/results_x2.txt --number 300` on x86_64") == []


def test_table_rows_are_checked_like_bullets() -> None:
    readme = (f"{BEGIN} -->\nintro 2 cores\n\n| what | jflow | source |\n|---|---|---|\n"
              f"| one op | 5.49 µs | `benchmarks/results_a.txt` |\n"
              f"| no file | 1.5 µs | |\n\n- a bullet 0.93x "
              f"(`benchmarks/results_b.txt`)\n  continued 0.211\n{END}\n")
    rows = speed_bullets(readme)
    assert rows == ["| one op | 5.49 µs | `benchmarks/results_a.txt` |", "| no file | 1.5 µs | |",
                    "- a bullet 0.93x (`benchmarks/results_b.txt`) continued 0.211"]
    assert stale(rows[0], "x 5.49 y") == [] and stale(rows[0], "x 5.4 y") == ["5.49"]
