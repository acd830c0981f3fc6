"""The functional layer: ``api.yaml`` -> generated parsers -> functors -> ops.

``F`` holds every function of the built-in api.yaml (internal ones too); ``flow._C`` holds the
``bind_python: True`` ones. Users load their own yaml + functors with :func:`load_api`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..ops.math import UNARY_FUNCTIONS, UnaryFunction, derive_unary_parts
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


def _unary_entries(functions: Iterable[UnaryFunction]) -> str:
    """The api.yaml text of each declared unary function's derived entry
    (``ops.math.unary_function``): ``Tensor (Tensor input) => <Functor>``, public."""
    return "".join(f'- {{name: "{u.name}", signature: "Tensor (Tensor input) => {u.functor}", '
                   f'bind_python: True}}\n' for u in functions if u.api_entry)


F = load_api(_api_text() + "\n" + _unary_entries(UNARY_FUNCTIONS.values()), name="jflow")
registry._API[0] = F  # for functors composed of other entries (registry.api)
#: the derived entries F holds (the built-in ones, then any declared later)
_DERIVED = {u.name for u in UNARY_FUNCTIONS.values() if u.api_entry}


def _derive_entry(u: UnaryFunction) -> None:
    """A unary function declared after F was built (a test's, a user's) gets its entry in
    ``F`` (``flow._C`` and ``flow.<name>`` are bound at import: they keep the built-in ones)."""
    if not u.api_entry or u.name in _DERIVED:
        return
    if hasattr(F, u.name):
        raise ApiYamlError(f"unary_function('{u.name}'): the functional API already has an "
                           f"entry '{u.name}'")
    ns = load_api(_unary_entries([u]), name=f"unary_function('{u.name}')")
    setattr(F, u.name, getattr(ns, u.name))
    F.entries.extend(ns.entries)
    F.public.append(u.name)
    _DERIVED.add(u.name)


def _forget_entry(name: str) -> None:
    if name in _DERIVED:
        _DERIVED.discard(name)
        delattr(F, name)
        F.entries[:] = [e for e in F.entries if e.name != name]
        F.public.remove(name)


derive_unary_parts(_derive_entry, _forget_entry)


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
