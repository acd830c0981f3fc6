"""The functional layer (DESIGN §6): ``api.yaml`` -> generated parsers -> functors -> ops.

``F`` holds every function of the built-in api.yaml (internal ones too); ``flow._C`` holds the
``bind_python: True`` ones. Users load their own yaml + functors with :func:`load_api`.
"""

from __future__ import annotations

from pathlib import Path

# importing the functor modules registers their functors
from .functors import (  # noqa: F401
    attention,
    conv,
    creation,
    fused,
    index,
    loss,
    math,
    matmul,
    nn,
    norm,
    reduce,
    shape,
)
from .registry import FUNCTORS, functor, load_api
from .signature import ApiYamlError

__all__ = ["F", "FUNCTORS", "functor", "load_api", "ApiYamlError", "api_yaml_path"]


def api_yaml_path() -> Path:
    """The built-in api.yaml: packaged next to jflow, or at the source checkout's root."""
    here = Path(__file__).resolve().parent.parent
    for p in (here / "api.yaml", here.parent / "api.yaml"):
        if p.exists():
            return p
    raise FileNotFoundError(f"jflow: api.yaml not found next to {here} or in {here.parent}")


def _api_text() -> str:
    """The text of the built-in api.yaml."""
    return api_yaml_path().read_text(encoding="utf-8")


F = load_api(_api_text(), name="jflow")
