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


def test_readme_snippet_runs():
    """The README's first code block (jflow ops eager, under jax.jit and jax.grad) runs."""
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    start = readme.index("```python\n") + len("```python\n")
    code = readme[start:readme.index("```", start)]
    assert "jax.grad" in code and "to_jax" in code
    exec(compile(code, "README.md", "exec"), {})
