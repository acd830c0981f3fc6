"""The functional layer (DESIGN §6): ``api.yaml`` -> generated parsers -> functors -> ops.

``F`` holds every function of the built-in api.yaml (internal ones too); ``flow._C`` holds the
``bind_python: True`` ones. Users load their own yaml + functors with :func:`load_api`.
"""

from __future__ import annotations

from pathlib import Path

from .functors import creation as _creation  # noqa: F401  (registers functors)
from .functors import math as _math  # noqa: F401
from .functors import shape as _shape  # noqa: F401
from .functors import reduce as _reduce  # noqa: F401
from .functors import index as _index, matmul as _matmul, nn as _nn  # noqa: F401
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
    # TEMPORARY during parallel development: parts in functional/api_parts/*.yaml are appended
    # to api.yaml; they are merged into api.yaml before this lands.
    text = api_yaml_path().read_text(encoding="utf-8")
    parts = Path(__file__).resolve().parent / "api_parts"
    for p in sorted(parts.glob("*.yaml")) if parts.exists() else ():
        text += "\n" + p.read_text(encoding="utf-8")
    return text


F = load_api(_api_text(), name="jflow")
