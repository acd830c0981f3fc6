"""Parse OneFlow ``functional_api.yaml`` signatures.

``"Tensor (Tensor input, Tensor other, *, Scalar alpha=1) => Add"`` becomes a
:class:`Signature` with a return type, parameters (type, name, default, keyword-only, list
size) and the functor name. A malformed entry raises :class:`ApiYamlError` naming the entry.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Param", "Signature", "ApiYamlError", "parse_signature", "parse_entries", "TYPES",
           "NO_DEFAULT"]

TYPES = frozenset({
    "Tensor", "TensorTuple", "Scalar", "Int32", "Int64", "Float", "Double", "Bool", "String",
    "Int32List", "Int64List", "FloatList", "Shape", "DataType", "Device", "Generator",
    "Placement", "Sbp", "SbpList",
})
RETURN_TYPES = frozenset({"Tensor", "TensorTuple", "Void", "Bool", "Int64", "Double", "Shape"})


class ApiYamlError(ValueError):
    """A malformed functional-API yaml entry."""


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True)
class Param:
    type: str
    name: str
    default: Any = NO_DEFAULT
    kwonly: bool = False
    size: int | None = None  # N of Int32List[N]

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    def describe(self) -> str:
        t = self.type + (f"[{self.size}]" if self.size is not None else "")
        d = f"={self.default!r}" if self.has_default else ""
        return f"{t} {self.name}{d}"


@dataclass(frozen=True)
class Signature:
    ret: str
    ret_names: tuple[str, ...] | None
    params: tuple[Param, ...]
    functor: str
    text: str

    def describe(self) -> str:
        parts, star = [], False
        for p in self.params:
            if p.kwonly and not star:
                parts.append("*")
                star = True
            parts.append(p.describe())
        return f"({', '.join(parts)})"


_SIG = re.compile(r"^\s*(?P<ret>\w+)(?:\[(?P<names>[\w\s,]*)\])?\s*\((?P<params>.*)\)\s*"
                  r"=>\s*(?P<functor>\w+)\s*$", re.S)
_PARAM = re.compile(r"^(?P<type>\w+)(?:\[(?P<size>\d+)\])?\s+(?P<name>\w+)\s*(?:=\s*(?P<default>.+))?$",
                    re.S)


def _split_params(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _literal(text: str) -> Any:
    t = text.strip()
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    return ast.literal_eval(t)


def parse_signature(text: str, where: str = "signature") -> Signature:
    m = _SIG.match(text)
    if not m:
        raise ApiYamlError(f"{where}: cannot parse signature {text!r}; expected "
                           f"'Ret (Type name, ..., *, Type name=default) => Functor'")
    ret = m["ret"]
    if ret not in RETURN_TYPES:
        raise ApiYamlError(f"{where}: unknown return type '{ret}' in {text!r}")
    names = tuple(n.strip() for n in m["names"].split(",")) if m["names"] else None
    if names is not None and ret != "TensorTuple":
        raise ApiYamlError(f"{where}: only TensorTuple returns can be named, in {text!r}")
    params, kwonly, seen = [], False, set()
    for raw in _split_params(m["params"]):
        if raw == "*":
            if kwonly:
                raise ApiYamlError(f"{where}: '*' appears twice in {text!r}")
            kwonly = True
            continue
        pm = _PARAM.match(raw)
        if not pm:
            raise ApiYamlError(f"{where}: cannot parse parameter {raw!r} in {text!r}")
        if pm["type"] not in TYPES:
            raise ApiYamlError(f"{where}: unknown type '{pm['type']}' of parameter "
                               f"'{pm['name']}'; known types are {sorted(TYPES)}")
        if pm["name"] in seen:
            raise ApiYamlError(f"{where}: parameter '{pm['name']}' appears twice")
        seen.add(pm["name"])
        default = NO_DEFAULT
        if pm["default"] is not None:
            try:
                default = _literal(pm["default"])
            except (ValueError, SyntaxError):
                raise ApiYamlError(f"{where}: bad default {pm['default']!r} for parameter "
                                   f"'{pm['name']}'") from None
        elif params and params[-1].has_default and not kwonly:
            raise ApiYamlError(f"{where}: parameter '{pm['name']}' without a default follows "
                               f"one with a default in {text!r}")
        size = int(pm["size"]) if pm["size"] else None
        params.append(Param(pm["type"], pm["name"], default, kwonly, size))
    return Signature(ret, names, tuple(params), m["functor"], text.strip())


@dataclass(frozen=True)
class Entry:
    name: str
    signatures: tuple[Signature, ...]
    bind_python: bool
    doc: str = ""


def parse_entries(data: Any, source: str = "api.yaml") -> list[Entry]:
    """Validate the loaded yaml (a list of mappings) and parse every signature."""
    if not isinstance(data, list):
        raise ApiYamlError(f"{source}: expected a list of entries, got {type(data).__name__}")
    out, names = [], set()
    for i, e in enumerate(data):
        where = f"{source} entry {i}"
        if not isinstance(e, dict) or "name" not in e or "signature" not in e:
            raise ApiYamlError(f"{where}: each entry needs 'name' and 'signature', got {e!r}")
        name = e["name"]
        where = f"{source} entry '{name}'"
        if not isinstance(name, str) or not name.isidentifier():
            raise ApiYamlError(f"{where}: name must be an identifier")
        if name in names:
            raise ApiYamlError(f"{where}: defined twice")
        names.add(name)
        unknown = set(e) - {"name", "signature", "bind_python", "doc"}
        if unknown:
            raise ApiYamlError(f"{where}: unknown key(s) {sorted(unknown)}")
        sigs = e["signature"]
        sigs = [sigs] if isinstance(sigs, str) else sigs
        if not isinstance(sigs, list) or not sigs or not all(isinstance(s, str) for s in sigs):
            raise ApiYamlError(f"{where}: signature must be a string or a list of strings")
        out.append(Entry(name, tuple(parse_signature(s, where) for s in sigs),
                         bool(e.get("bind_python", False)), str(e.get("doc", ""))))
    return out
