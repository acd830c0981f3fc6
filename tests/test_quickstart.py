"""The README's first command: the quickstart runs and its own checks pass."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quickstart_runs():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "quickstart.py")],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert "quickstart OK" in r.stdout and "tiny model: eager loss" in r.stdout
