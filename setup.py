"""Packaging hook: ship the top-level api.yaml inside the built ``jflow`` package.

(An editable install reads it from the checkout's root; see jflow.functional.api_yaml_path.)
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "jflow" / "api.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(__file__).parent / "api.yaml", target)


setup(cmdclass={"build_py": BuildPy})
