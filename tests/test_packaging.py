"""Packaging: the distribution's name, version, license and changelog agree; the wheel built
from this checkout installs into a fresh virtual environment and runs the quickstart there
(the installed copy, not the checkout); a checkout named ``jflow`` does not shadow the
package for a script run from the folder above it.

The wheel test builds offline (``pip wheel --no-build-isolation``: the test extra brings the
setuptools it needs) from a copy of the sources, so nothing is written into the checkout while
other tests run. Its virtual environment reuses this interpreter's packages (jax, numpy...)
through ``--system-site-packages``; its own site-packages comes first, so ``import jflow``
finds the wheel's copy (asserted), even where the checkout is also installed in editable mode.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import jflow

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent
DIST = "jflow-jax"


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _changelog_versions() -> list[tuple[str, str]]:
    """``(version, date)`` of each "## [x.y.z] - YYYY-MM-DD" heading, newest first."""
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    return re.findall(r"^## \[(\d+\.\d+\.\d+(?:[-.]?\w+)?)\] - (\d{4}-\d{2}-\d{2})$", text,
                      re.MULTILINE)


def test_distribution_name_and_version_source():
    project = _pyproject()["project"]
    # PyPI's "jflow" is an unrelated package (0.4_pre-alpha, 2010): ours is jflow-jax
    assert project["name"] == DIST
    # one version: the build reads jflow.__version__ (setuptools, statically)
    assert "version" in project["dynamic"] and "version" not in project
    dyn = _pyproject()["tool"]["setuptools"]["dynamic"]["version"]
    assert dyn == {"attr": "jflow.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", jflow.__version__)


def test_changelog_tracks_the_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## \[([^\]]+)\]", text, re.MULTILINE)
    assert headings[0] == "Unreleased", headings
    versions = _changelog_versions()
    # every section but "Unreleased" is a dated version, newest first
    assert len(versions) == len(headings) - 1, headings
    assert versions[0][0] == jflow.__version__
    dates = [d for _, d in versions]
    assert dates == sorted(dates, reverse=True)
    nums = [tuple(int(p) for p in re.findall(r"\d+", v)[:3]) for v, _ in versions]
    assert nums == sorted(nums, reverse=True) and len(set(nums)) == len(nums)
    # Keep a Changelog's kinds of change only
    kinds = set(re.findall(r"^### (.+)$", text, re.MULTILINE))
    assert kinds <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, kinds


def test_license_is_apache_2():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    for clause in ("1. Definitions.", "2. Grant of Copyright License.",
                   "3. Grant of Patent License.", "4. Redistribution.",
                   "9. Accepting Warranty or Additional Liability.",
                   "END OF TERMS AND CONDITIONS"):
        assert clause in text, clause
    assert _pyproject()["project"]["license"] == "Apache-2.0"


def test_install_hints_name_the_distribution():
    """No message or doc tells users to `pip install jflow[...]` (the unrelated package)."""
    bad = re.compile(r"pip install[^\n`]*?(?<![\w./-])['\"]?jflow(?:\[|['\"]|\s|$)")
    found = []
    for top in ("jflow", "docs", "tests", "examples", "benchmarks", "README.md", ".ci"):
        path = ROOT / top
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()
                                               and p.suffix in ("", ".py", ".md", ".yaml",
                                                                ".txt", ".toml", ".sh")]
        for f in files:
            if f == Path(__file__):
                continue
            try:
                text = f.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            found += [f"{f.relative_to(ROOT)}: {m.group(0)}" for m in bad.finditer(text)]
    assert not found, found
    from jflow.serialization import _safetensors
    assert "pip install 'jflow-jax[safetensors]'" in Path(_safetensors.__file__).read_text()


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _clean_env() -> dict[str, str]:
    """This environment without anything that would put the checkout on sys.path."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH")}


def test_wheel_installs_into_a_fresh_venv_and_runs_the_quickstart(tmp_path):
    # sources copied (the files the build reads), so the build writes nothing here
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "api.yaml", "README.md", "LICENSE", "__init__.py"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "jflow", src / "jflow",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
    dist = tmp_path / "dist"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                        "--no-build-isolation", "--no-index", "-q", str(src), "-w", str(dist)],
                       capture_output=True, text=True, timeout=600, env=_clean_env(),
                       cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (wheel,) = dist.glob("*.whl")
    assert wheel.name == f"jflow_jax-{jflow.__version__}-py3-none-any.whl"

    names = set(zipfile.ZipFile(wheel).namelist())
    info = f"jflow_jax-{jflow.__version__}.dist-info"
    for needed in ("jflow/__init__.py", "jflow/py.typed", "jflow/api.yaml", "jflow/_C.pyi",
                   "jflow/include/jflow/op.h", "jflow/mock_torch/torch_names.json.gz",
                   f"{info}/licenses/LICENSE", f"{info}/METADATA"):
        assert needed in names, needed
    # only the package: not the repository root's __init__.py, nor tests or examples
    assert {n.split("/")[0] for n in names} == {"jflow", info}
    meta = zipfile.ZipFile(wheel).read(f"{info}/METADATA").decode()
    assert f"Name: {DIST}\n" in meta and f"Version: {jflow.__version__}\n" in meta
    assert "License-Expression: Apache-2.0" in meta

    venv = tmp_path / "venv"
    r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                        str(venv)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    py = _venv_python(venv)
    # the system pip (a system site package) installs into the venv; --ignore-installed: an
    # editable install of the checkout outside the venv is neither touched nor trusted
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                        "--ignore-installed", str(wheel)], capture_output=True, text=True,
                       timeout=600, env=_clean_env(), cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]

    run = tmp_path / "run"  # a folder with nothing named jflow in it
    run.mkdir()
    shutil.copy2(ROOT / "examples" / "quickstart.py", run / "quickstart.py")
    # the quickstart first (it sets the CPU device count before JAX starts), then where
    # jflow came from, in the same process
    probe = ("import runpy\n"
             "runpy.run_path('quickstart.py', run_name='__main__')\n"
             "import importlib.metadata as m, pathlib, jflow\n"
             "print(pathlib.Path(jflow.__file__).resolve())\n"
             "print(jflow.__version__, m.version('jflow-jax'))\n"
             "print(pathlib.Path(jflow.sysconfig.get_include()).resolve())\n")
    r = subprocess.run([str(py), "-c", probe], capture_output=True, text=True, timeout=900,
                       env=_clean_env(), cwd=run, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert "quickstart OK" in r.stdout and "tiny model: eager loss" in r.stdout
    file, versions, include = r.stdout.strip().splitlines()[-3:]
    assert Path(file).is_relative_to(venv.resolve()), file  # the wheel's copy, not the checkout
    assert versions == f"{jflow.__version__} {jflow.__version__}"
    assert Path(include).is_relative_to(venv.resolve()) and (Path(include) / "jflow/op.h").is_file()


# ---- a checkout named jflow, a script run from the folder above it -----------------------


def test_checkout_named_jflow_does_not_shadow_the_package(tmp_path):
    """Before: the checkout was imported as an empty namespace package, and the script failed
    with "module 'jflow' has no attribute 'tensor'". Now the root's __init__.py loads the
    package in its place."""
    parent = tmp_path / "work"
    parent.mkdir()
    try:
        (parent / "jflow").symlink_to(ROOT, target_is_directory=True)
    except OSError:  # no symlinks (e.g. Windows without the privilege): a copy of the root
        shutil.copytree(ROOT, parent / "jflow", ignore=shutil.ignore_patterns(
            ".git", "__pycache__", "*.egg-info", "build", "dist"))
    (parent / "script.py").write_text(
        "import pathlib\nimport jflow as flow\n"
        "x = flow.tensor([1.0, -2.0]).abs() * 2\n"
        "print(x.numpy().tolist())\n"
        "print(pathlib.Path(flow.__file__).parent.name, pathlib.Path(flow.__file__).name)\n"
        "print(flow.nn.Linear.__module__.split('.')[0], type(flow).__name__)\n")
    r = subprocess.run([sys.executable, "script.py"], capture_output=True, text=True,
                       timeout=600, env=_clean_env(), cwd=parent, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().splitlines()[-3:] == ["[2.0, 4.0]", "jflow __init__.py",
                                                  "jflow module"]


def test_the_root_init_does_nothing_under_another_name(tmp_path):
    """pytest imports the repository root as a package under the folder's own name: then the
    root's __init__.py must not load (or shadow) anything."""
    init = str(ROOT / "__init__.py")
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('checkout', {init!r})\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "print('jflow' in sys.modules, sorted(k for k in vars(m) if not k.startswith('__')))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=_clean_env(), cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False []"


def test_py_typed_is_in_the_package():
    assert (Path(jflow.__file__).parent / "py.typed").is_file()
    assert "py.typed" in _pyproject()["tool"]["setuptools"]["package-data"]["jflow"]
