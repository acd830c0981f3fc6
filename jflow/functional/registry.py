"""The functor library (OneFlow's functional library): ``=> Name`` in a yaml signature
refers to a functor registered here (``=> op:name`` to an op, see :mod:`.opbind`), and
:func:`load_api` turns yaml into callables."""

from __future__ import annotations

import os
import types
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import yaml

from ..lazy_mode.checks import discard_checks_on_error
from .codegen import generate
from .opbind import bind_op
from .signature import ApiYamlError, Entry, parse_entries

__all__ = ["functor", "FUNCTORS", "load_api", "load_entries", "api"]

FUNCTORS: dict[str, Callable[..., Any]] = {}

#: the built-in functional API once built (``jflow.functional`` sets it): see :func:`api`
_API: list[Any] = [None]


def api() -> Any:
    """The built-in functional API (``flow._C``), for functors written in terms of other
    entries (a composition such as a loss). Bound late through this registry because the API
    is generated from the functors themselves: importing it would be an import cycle."""
    return _API[0]


def functor(name: str, *, checks: bool = False
            ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a functor under ``name`` (the name after ``=>`` in yaml signatures).
    ``checks``: it may defer a value check in lazy mode (an index bound, an integer
    divisor): registered so that the check is dropped when the call raises after deferring
    it (``lazy_mode.segment.discard_checks_on_error``)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"functor name must be an identifier, got {name!r}")

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if checks:
            fn = discard_checks_on_error(fn)
        if name in FUNCTORS and FUNCTORS[name] is not fn:
            raise KeyError(f"a functor named '{name}' is already registered")
        FUNCTORS[name] = fn
        return fn
    return deco


def load_entries(source: str | os.PathLike[str], name: str = "yaml"
                 ) -> tuple[list[Entry], str]:
    """Parse a yaml file (a path, or a one-line string ending in .yaml/.yml) or yaml text
    into entries, with ``=> op:name`` signatures checked against their op. Errors name the
    file (or ``name`` for text) and the entry."""
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                           and source.strip().endswith((".yaml", ".yml"))):
        where = os.fspath(source).strip()
        with open(where, encoding="utf-8") as f:
            text = f.read()
    elif isinstance(source, str):
        text, where = source, name
    else:
        raise TypeError(f"load_api: expected yaml text or a path, got {type(source).__name__}")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as e:
        raise ApiYamlError(f"{where}: invalid yaml: {e}") from None
    entries = [replace(e, signatures=tuple(bind_op(s, f"{where} entry '{e.name}'")
                                           for s in e.signatures))
               for e in parse_entries(data, where)]
    return entries, where


def load_api(source: str | os.PathLike[str], functors: dict[str, Callable[..., Any]] | None = None,
             name: str = "functional") -> types.SimpleNamespace:
    """Generate functions for every entry of a yaml file or text.

    ``functors`` adds to the registered functor library for this yaml only; a name that is
    also a registered functor means the given one here (so a functor jflow adds later cannot
    change what a user's yaml calls), and the built-in functions are unaffected. ``name``
    labels errors for yaml given as text. Returns a namespace with every function;
    ``.public`` lists the ``bind_python: True`` names, ``.entries`` the parsed entries.
    """
    entries, where = load_entries(source, name)
    lib = dict(FUNCTORS)
    for k, v in (functors or {}).items():
        if not callable(v):
            raise TypeError(f"load_api({where}): functor '{k}' must be callable, "
                            f"got {type(v).__name__}")
        lib[k] = v
    ns = types.SimpleNamespace()
    public = []
    for e in entries:
        setattr(ns, e.name, generate(e, lib, where))
        if e.bind_python:
            public.append(e.name)
    ns.public = public
    ns.entries = entries
    return ns
