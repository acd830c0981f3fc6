"""The docs site (mkdocs.yml) builds in strict mode: every page in the nav, no broken link
between pages or to repository files (docs/hooks/repo_links.py), no missing anchor. Skips
when MkDocs is not installed (``pip install -e ".[docs]"``); .ci/run also builds it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _build(site: Path, config: Path = ROOT / "mkdocs.yml") -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                           str(config), "--site-dir", str(site)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def test_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    run = _build(tmp_path / "site")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-5000:]
    site = tmp_path / "site"
    for page in ("index.html", "tutorials/4_sbp/index.html", "api/tensor/index.html",
                 "api/functional/index.html", "architecture/index.html"):
        assert (site / page).is_file(), page
    assert (site / "search" / "search_index.json").is_file()  # the search plugin ran
    # a repository file linked from a guide shows as its path, not as a dead link
    custom = (site / "custom_ops" / "index.html").read_text(encoding="utf-8")
    assert "<code>examples/custom_ops/</code>" in custom
    assert 'href="../examples/custom_ops/' not in custom
    # the reference's signatures are rendered as Python code blocks
    functional = (site / "api" / "functional" / "index.html").read_text(encoding="utf-8")
    assert re.search(r'<div class="highlight"><pre><span></span><code><span class="n">conv2d'
                     r'</span><span class="p">\(</span>', functional)


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    # strict mode is what CI relies on: a page linking a missing page, or a repository
    # file that does not exist, must fail the build
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    docs = tmp_path / "docs"
    (docs / "hooks").mkdir(parents=True)
    (docs / "hooks" / "repo_links.py").write_text(
        (ROOT / "docs" / "hooks" / "repo_links.py").read_text(encoding="utf-8"))
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:")[0]
    (tmp_path / "mkdocs.yml").write_text(config + "\nnav:\n  - index.md\n")
    (docs / "index.md").write_text("# x\n\n[a page](nowhere.md)\n")
    run = _build(tmp_path / "site", tmp_path / "mkdocs.yml")
    assert run.returncode != 0 and "nowhere.md" in run.stdout + run.stderr
    (docs / "index.md").write_text("# x\n\n[a file](../no_such_file.py)\n")
    run = _build(tmp_path / "site", tmp_path / "mkdocs.yml")
    assert run.returncode != 0 and "no_such_file.py" in run.stdout + run.stderr
    (tmp_path / "present.py").write_text("")
    (docs / "index.md").write_text("# x\n\n[a file](../present.py)\n")
    run = _build(tmp_path / "site", tmp_path / "mkdocs.yml")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
