"""``.ci/run``'s exit status, with ``python3`` replaced by a stub on PATH (nothing is installed
and no tests run): under CI=true a failed install of an optional reference (torch, the
examples extra) fails the run instead of letting its comparisons skip; elsewhere it only
warns; pytest's "no tests collected" (exit 5) is a failure everywhere."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parent.parent / ".ci" / "run"

# the stub logs its arguments; `pip install` of what FAIL_INSTALL names fails, and
# `-m pytest` exits with PYTEST_RC
STUB = """#!/usr/bin/env bash
echo "$*" >> "$STUB_LOG"
case "$*" in
  *"pip install"*)
    if [ -n "${FAIL_INSTALL:-}" ] && [[ "$*" == *"$FAIL_INSTALL"* ]]; then exit 1; fi
    exit 0 ;;
  *"-m pytest"*) exit "${PYTEST_RC:-0}" ;;
esac
exit 0
"""


def _run(tmp_path: Path, *, ci: bool, fail_install: str = "", pytest_rc: int = 0
         ) -> tuple[int, list[str]]:
    """Run .ci/run with the stub; returns its exit status and the stub's calls."""
    stub_dir = tmp_path / "bin"
    stub_dir.mkdir(exist_ok=True)
    stub = stub_dir / "python3"
    stub.write_text(STUB)
    stub.chmod(0o755)
    log = tmp_path / "calls.log"
    log.write_text("")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(PATH=f"{stub_dir}{os.pathsep}{env.get('PATH', '')}", STUB_LOG=str(log),
               FAIL_INSTALL=fail_install, PYTEST_RC=str(pytest_rc))
    if ci:
        env["CI"] = "true"
    proc = subprocess.run(["bash", str(RUN)], env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    return proc.returncode, log.read_text().splitlines()


def _ran_pytest(calls: list[str]) -> bool:
    return any("-m pytest" in c for c in calls)


@pytest.mark.parametrize("missing", ["torch==2.13.0", ".[examples]", ".[ecosystem]"])
def test_ci_fails_when_an_optional_reference_does_not_install(tmp_path: Path,
                                                              missing: str) -> None:
    rc, calls = _run(tmp_path, ci=True, fail_install=missing)
    assert rc != 0
    assert not _ran_pytest(calls)


@pytest.mark.parametrize("missing", ["torch==2.13.0", ".[examples]", ".[ecosystem]"])
def test_outside_ci_a_missing_reference_only_skips(tmp_path: Path, missing: str) -> None:
    rc, calls = _run(tmp_path, ci=False, fail_install=missing)
    assert rc == 0
    assert _ran_pytest(calls)


def test_ci_passes_when_everything_installs(tmp_path: Path) -> None:
    rc, calls = _run(tmp_path, ci=True)
    assert rc == 0
    assert any("torch==2.13.0" in c for c in calls)
    assert any(".[examples]" in c for c in calls)
    assert any(".[ecosystem]" in c and "torch==2.13.0" in c for c in calls)  # torch kept
    assert _ran_pytest(calls)


@pytest.mark.parametrize("ci", [True, False])
def test_no_tests_collected_is_a_failure(tmp_path: Path, ci: bool) -> None:
    assert _run(tmp_path, ci=ci, pytest_rc=5)[0] == 1


def test_test_failures_fail_the_run(tmp_path: Path) -> None:
    assert _run(tmp_path, ci=True, pytest_rc=1)[0] == 1
