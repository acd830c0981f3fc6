"""The functor library (OneFlow's functional library): ``=> Name`` in a yaml signature
refers to a functor registered here, and :func:`load_api` turns yaml into callables."""

from __future__ import annotations

import os
import types
from collections.abc import Callable
from typing import Any

import yaml

from .codegen import generate
from .signature import Entry, parse_entries

__all__ = ["functor", "FUNCTORS", "load_api", "load_entries"]

FUNCTORS: dict[str, Callable[..., Any]] = {}


def functor(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a functor under ``name`` (the name after ``=>`` in yaml signatures)."""
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in FUNCTORS and FUNCTORS[name] is not fn:
            raise KeyError(f"a functor named '{name}' is already registered")
        FUNCTORS[name] = fn
        return fn
    return deco


def load_entries(source: str | os.PathLike[str]) -> tuple[list[Entry], str]:
    """Parse a yaml file (path) or yaml text into entries."""
    text, where = None, "yaml"
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                           and source.endswith((".yaml", ".yml"))):
        where = os.fspath(source)
        with open(where, encoding="utf-8") as f:
            text = f.read()
    else:
        text = str(source)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return parse_entries(yaml.load(text, Loader=loader), where), where


def load_api(source: str | os.PathLike[str], functors: dict[str, Callable[..., Any]] | None = None,
             name: str = "functional") -> types.SimpleNamespace:
    """Generate functions for every entry of a yaml file or text.

    ``functors`` adds to (and may not override) the registered functor library. Returns a
    namespace with every function; ``.public`` lists the ``bind_python: True`` names.
    """
    entries, where = load_entries(source)
    lib = dict(FUNCTORS)
    for k, v in (functors or {}).items():
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
