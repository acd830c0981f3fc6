"""The functional layer: ``api.yaml`` -> generated parsers -> functors -> ops.

``F`` holds every function of the built-in api.yaml (internal ones too); ``flow._C`` holds the
``bind_python: True`` ones. Users load their own yaml + functors with :func:`load_api`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import registry

# importing the functor modules registers their functors
from .functors import (  # noqa: F401
    activation,
    attention,
    complex,
    conv,
    factory,
    fft,
    fused,
    histogram,
    index,
    join,
    linalg,
    loss,
    math,
    matmul,
    nn,
    norm,
    pool,
    rearrange,
    reduce,
    search,
    slicing,
    special,
    unique,
    upsample,
    view,
)
from .registry import FUNCTORS, functor, load_api
from .signature import ApiYamlError

__all__ = ["F", "FUNCTORS", "functor", "load_api", "ApiYamlError", "api_yaml_path", "api_default"]


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
registry._API[0] = F  # for functors composed of other entries (registry.api)


def api_default(name: str, param: str) -> Any:
    """The default of parameter ``param`` of ``F.<name>`` (from the first overload that has
    it), as a caller would pass it (:attr:`Param.default_as_written`). A default is written
    once, in api.yaml (or, for an ``=> op:`` binding that leaves it out, on the op's attr);
    layers above the functional API (``flow.nn.functional``, the nn modules) read it here
    rather than restating it."""
    for sig in getattr(F, name)._entry.signatures:
        for p in sig.params:
            if p.name == param:
                if not p.has_default:
                    raise KeyError(f"F.{name}: parameter '{param}' has no default")
                return p.default_as_written
    raise KeyError(f"F.{name} has no parameter '{param}'")
