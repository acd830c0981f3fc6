"""Parse OneFlow ``functional_api.yaml`` signatures.

``"Tensor (Tensor input, Tensor other, *, Scalar alpha=1) => Add"`` becomes a
:class:`Signature` with a return type, parameters (type, name, default, keyword-only, list
size) and its target: the functor name, or with ``=> op:elu`` the op itself (jflow's
extension; checked against the op by :mod:`jflow.functional.opbind`). A malformed entry
raises :class:`ApiYamlError` naming the entry.
"""

from __future__ import annotations

import ast
import inspect
import keyword
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import dtypes
from .types import NO_MATCH, PY_ELEMENT, PY_RETURN_TYPES, PY_TYPES, convert, type_name

__all__ = ["Param", "Signature", "ApiYamlError", "parse_signature", "parse_entries", "TYPES",
           "NO_DEFAULT", "convert_default", "check_default_order", "python_signature",
           "overload_policy", "LazySignature"]

TYPES = frozenset({
    "Tensor", "TensorTuple", "Scalar", "Int32", "Int64", "Float", "Double", "Bool", "String",
    "Int32List", "Int64List", "FloatList", "Shape", "DataType", "Device", "Generator",
    "Placement", "Sbp", "SbpList",
})
RETURN_TYPES = frozenset({"Tensor", "TensorTuple", "Void", "Bool", "Int64", "Double", "Shape"})
#: Types that take a size ``[N]`` (a single value is then accepted and repeated N times).
LIST_TYPES = frozenset({"Int32List", "Int64List", "FloatList"})
#: OneFlow's DataType default names (``DataType dtype=kInt64``).
DTYPE_DEFAULTS = {"kBool": "bool", "kUInt8": "uint8", "kInt8": "int8", "kChar": "int8",
                  "kInt16": "int16", "kInt32": "int32", "kInt64": "int64",
                  "kFloat16": "float16", "kHalf": "float16", "kBFloat16": "bfloat16",
                  "kFloat": "float32", "kDouble": "float64"}


class ApiYamlError(ValueError):
    """A malformed functional-API yaml entry."""


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()


@dataclass(frozen=True)
class Param:
    """One parameter. ``default`` is already converted to what the functor receives (e.g.
    ``Int32List[2] k=1`` -> ``(1, 1)``); ``default_src`` is its yaml text."""

    type: str
    name: str
    default: Any = NO_DEFAULT
    kwonly: bool = False
    size: int | None = None  # N of Int32List[N]
    default_src: str | None = None

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    @property
    def default_as_written(self) -> Any:
        """The default as a caller would pass it: for a list type the yaml literal
        (``Int64List[2] padding=0`` -> 0, where ``default`` is ``(0, 0)``), else ``default``."""
        if self.type in LIST_TYPES and self.default_src is not None:
            return _literal(self.default_src)
        return self.default

    def describe(self) -> str:
        t = self.type + (f"[{self.size}]" if self.size is not None else "")
        if not self.has_default:
            d = ""
        elif self.default_src is not None:
            d = f"={self.default_src}"
        else:
            d = f"={self.default!r}"
        return f"{t} {self.name}{d}"


@dataclass(frozen=True)
class Signature:
    """One parsed signature; exactly one of ``functor`` (``=> Name``) and ``op``
    (``=> op:name``) is set. ``op_names`` (``=> op:relu(x=input)``) pairs an op input or attr
    name with the parameter that carries it, where the two names differ."""

    ret: str
    ret_names: tuple[str, ...] | None
    params: tuple[Param, ...]
    functor: str | None
    text: str
    op: str | None = None
    op_names: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        parts, star = [], False
        for p in self.params:
            if p.kwonly and not star:
                parts.append("*")
                star = True
            parts.append(p.describe())
        return f"({', '.join(parts)})"


_SIG = re.compile(r"^\s*(?P<ret>\w+)(?:\[(?P<names>[\w\s,]*)\])?\s*\((?P<params>.*)\)\s*"
                  r"=>\s*(?P<op>op:)?(?P<functor>\w+)(?:\((?P<renames>[^()]*)\))?\s*$", re.S)
_RENAME = re.compile(r"^\s*(?P<op_name>\w+)\s*=\s*(?P<param>\w+)\s*$")
_PARAM = re.compile(r"^(?P<type>\w+)(?:\[(?P<size>\d+)\])?\s+(?P<name>\w+)\s*"
                    r"(?:=\s*(?P<default>.+))?$", re.S)


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


def convert_default(where: str, ptype: str, name: str, size: int | None, src: str) -> Any:
    """The default's literal, converted as an argument of this type would be (None = optional);
    a default the type cannot accept is an error at load time, not at the first call."""
    src = src.strip()
    if ptype == "DataType" and src in DTYPE_DEFAULTS:
        return dtypes.as_dtype(DTYPE_DEFAULTS[src])
    try:
        raw = _literal(src)
    except (ValueError, SyntaxError, TypeError, RecursionError):
        raise ApiYamlError(f"{where}: bad default {src!r} for parameter '{name}'") from None
    if raw is None:
        return None
    if ptype == "DataType" and isinstance(raw, str):
        try:
            return dtypes.as_dtype(raw)
        except TypeError:
            pass
    value = convert(ptype, raw, size)
    if value is NO_MATCH:
        raise ApiYamlError(f"{where}: default {src} of parameter '{name}' is not a valid "
                           f"{type_name(ptype, size)}")
    return value


def parse_signature(text: str, where: str = "signature") -> Signature:
    """Parse one signature string; ``where`` (e.g. "api.yaml entry 'add'") prefixes errors."""
    if not isinstance(text, str):
        raise ApiYamlError(f"{where}: a signature must be a string, got {type(text).__name__}")
    m = _SIG.match(text)
    if not m:
        raise ApiYamlError(f"{where}: cannot parse signature {text!r}; expected "
                           f"'Ret (Type name, ..., *, Type name=default) => Functor' or "
                           f"'... => op:op_name' (optionally 'op:op_name(op_arg=param, ...)')")
    ret = m["ret"]
    if ret not in RETURN_TYPES:
        raise ApiYamlError(f"{where}: unknown return type '{ret}' in {text!r}")
    names = tuple(n.strip() for n in m["names"].split(",")) if m["names"] is not None else None
    if names is not None:
        if ret != "TensorTuple":
            raise ApiYamlError(f"{where}: only TensorTuple returns can be named, in {text!r}")
        if (not all(n.isidentifier() and not keyword.iskeyword(n) and not n.startswith("_")
                    for n in names) or len(set(names)) != len(names)):
            raise ApiYamlError(f"{where}: return names {list(names)} must be distinct "
                               f"identifiers not starting with '_', in {text!r}")
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
        name = pm["name"]
        if pm["type"] not in TYPES:
            raise ApiYamlError(f"{where}: unknown type '{pm['type']}' of parameter "
                               f"'{name}'; known types are {sorted(TYPES)}")
        # parameter names become Python parameters of the generated parser; '_' names are
        # reserved for the parser's own helpers
        if keyword.iskeyword(name) or name.startswith("_"):
            raise ApiYamlError(f"{where}: parameter name '{name}' is a Python keyword or "
                               f"starts with '_' (reserved), in {text!r}")
        if name in seen:
            raise ApiYamlError(f"{where}: parameter '{name}' appears twice")
        seen.add(name)
        size = int(pm["size"]) if pm["size"] else None
        if size is not None and pm["type"] not in LIST_TYPES:
            raise ApiYamlError(f"{where}: parameter '{name}': only {sorted(LIST_TYPES)} take a "
                               f"size [N], not {pm['type']}")
        if size is not None and size < 1:
            raise ApiYamlError(f"{where}: parameter '{name}': size [N] must be >= 1")
        default, src = NO_DEFAULT, None
        if pm["default"] is not None:
            src = pm["default"].strip()
            default = convert_default(where, pm["type"], name, size, src)
        params.append(Param(pm["type"], name, default, kwonly, size, src))
    if m["renames"] is not None and not m["op"]:
        raise ApiYamlError(f"{where}: only an op binding ('=> op:name(arg=param)') takes "
                           f"argument names, in {text!r}")
    if m["op"]:  # an omitted default may come from the op's attr: checked once bound
        return Signature(ret, names, tuple(params), None, text.strip(), op=m["functor"],
                         op_names=_op_names(where, m["renames"], text))
    check_default_order(where, params, text)
    return Signature(ret, names, tuple(params), m["functor"], text.strip())


def _op_names(where: str, src: str | None, text: str) -> tuple[tuple[str, str], ...]:
    """``x=input, y=other`` -> ``(("x", "input"), ("y", "other"))``."""
    if src is None:
        return ()
    out = []
    for item in src.split(","):
        m = _RENAME.match(item)
        if not m:
            raise ApiYamlError(f"{where}: cannot parse op argument {item.strip()!r} in {text!r}; "
                               f"expected 'op_arg=param'")
        out.append((m["op_name"], m["param"]))
    for k in (0, 1):
        seen = [pair[k] for pair in out]
        dup = sorted({n for n in seen if seen.count(n) > 1})
        if dup:
            raise ApiYamlError(f"{where}: '{dup[0]}' is named twice in the op arguments of "
                               f"{text!r}")
    return tuple(out)


def check_default_order(where: str, params: Sequence[Param], text: str) -> None:
    """A positional parameter without a default may not follow one with a default."""
    for prev, p in zip(params, params[1:]):
        if prev.has_default and not p.has_default and not p.kwonly:
            raise ApiYamlError(f"{where}: parameter '{p.name}' without a default follows "
                               f"one with a default in {text!r}")


@dataclass(frozen=True)
class Entry:
    name: str
    signatures: tuple[Signature, ...]
    bind_python: bool
    doc: str = ""
    numbers_as_tensors: bool = False


def parse_entries(data: Any, source: str = "api.yaml") -> list[Entry]:
    """Validate the loaded yaml (a list of mappings) and parse every signature."""
    if not isinstance(data, list):
        raise ApiYamlError(f"{source}: expected a list of entries, got {type(data).__name__}")
    out, names = [], set()
    reserved = {"public", "entries"}  # attributes of the namespace load_api returns
    for i, e in enumerate(data):
        where = f"{source} entry {i}"
        if not isinstance(e, dict) or "name" not in e or "signature" not in e:
            raise ApiYamlError(f"{where}: each entry needs 'name' and 'signature', got {e!r}")
        name = e["name"]
        where = f"{source} entry '{name}'"
        if (not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name)
                or name.startswith("_") or name in reserved):
            raise ApiYamlError(f"{where}: name must be an identifier that is not a Python "
                               f"keyword, does not start with '_' and is not one of "
                               f"{sorted(reserved)}")
        if name in names:
            raise ApiYamlError(f"{where}: defined twice")
        names.add(name)
        unknown = set(e) - {"name", "signature", "bind_python", "doc", "numbers_as_tensors"}
        if unknown:
            raise ApiYamlError(f"{where}: unknown key(s) {sorted(unknown)}")
        sigs = e["signature"]
        sigs = [sigs] if isinstance(sigs, str) else sigs
        if not isinstance(sigs, list) or not sigs or not all(isinstance(s, str) for s in sigs):
            raise ApiYamlError(f"{where}: signature must be a string or a list of strings")
        bind = e.get("bind_python", False)
        if not isinstance(bind, bool):
            raise ApiYamlError(f"{where}: bind_python must be True or False, got {bind!r}")
        doc = e.get("doc", "")
        if not isinstance(doc, str):
            raise ApiYamlError(f"{where}: doc must be a string, got {type(doc).__name__}")
        numbers = e.get("numbers_as_tensors", False)
        if not isinstance(numbers, bool) or (numbers and len(sigs) < 2):
            raise ApiYamlError(f"{where}: numbers_as_tensors must be True or False and is for "
                               f"an entry with overloads, got {numbers!r}")
        parsed = tuple(parse_signature(s, where) for s in sigs)
        described = [p.describe() for p in parsed]
        dup = {d for d in described if described.count(d) > 1}
        if dup:
            raise ApiYamlError(f"{where}: overload {sorted(dup)[0]} is listed twice")
        out.append(Entry(name, parsed, bind, doc, numbers))
    return out


# -- the Python-style signature of a generated function ----------------------------------------
#
# ``help(flow.nn.functional.conv2d)`` and ``inspect.signature`` show PyTorch-style parameters
# (``stride: 'int | Sequence[int]' = 1``) instead of the generated parser's ``(*args,
# **kwargs)``. Annotations are the ``_C.pyi`` stub's (``types.PY_TYPES``), as strings, so the
# stub, ``help()`` and the reference agree. Built on first use (:class:`LazySignature`):
# importing jflow builds none of them.

def _annotation(p: Param) -> str:
    t = PY_TYPES[p.type]
    if p.size is not None and p.type in PY_ELEMENT:
        t = f"{PY_ELEMENT[p.type]} | {t}"  # Int64List[2] stride=1: one int is repeated
    if p.has_default and p.default is None:
        t = f"{t} | None"
    return t


def _return_annotation(sig: Signature) -> str:
    if sig.ret_names:
        return f"tuple[{', '.join('Tensor' for _ in sig.ret_names)}]"
    return PY_RETURN_TYPES[sig.ret]


def _union(annotations: Sequence[str]) -> str:
    """``'int | Sequence[int]'`` and ``'str'`` -> ``'int | Sequence[int] | str'`` (each
    alternative once, ``None`` last)."""
    parts: list[str] = []
    for a in annotations:
        for part in a.split(" | "):
            if part not in parts:
                parts.append(part)
    if "None" in parts:
        parts.remove("None")
        parts.append("None")
    return " | ".join(parts)


def _shape(sig: Signature) -> tuple[tuple[str, bool, bool], ...]:
    return tuple((p.name, p.kwonly, p.has_default) for p in sig.params)


def overload_policy(signatures: Sequence[Signature]) -> str:
    """How :func:`python_signature` shows an entry: ``"single"`` (one signature),
    ``"merged"`` (overloads with the same parameter names, kinds and optionality, differing
    only in types or defaults: one signature whose annotations join the overloads' types and
    whose defaults are the first overload's, as PyTorch documents ``conv2d(..., padding=0)``
    for both its int and its string padding) or ``"first"`` (overloads with different
    parameters: the first overload; the docstring lists them all)."""
    if len(signatures) == 1:
        return "single"
    first = _shape(signatures[0])
    return "merged" if all(_shape(s) == first for s in signatures[1:]) else "first"


def python_signature(signatures: Sequence[Signature]) -> inspect.Signature:
    """The ``inspect.Signature`` of the function generated for these overloads (see
    :func:`overload_policy`): parameter names as in the yaml, positional-or-keyword up to the
    yaml's ``*`` and keyword-only after it, defaults as a caller writes them
    (``Int64List[2] stride=1`` -> ``stride=1``)."""
    merged = overload_policy(signatures) == "merged"
    shown = signatures if merged else signatures[:1]
    params = []
    for i, p in enumerate(shown[0].params):
        kind = (inspect.Parameter.KEYWORD_ONLY if p.kwonly
                else inspect.Parameter.POSITIONAL_OR_KEYWORD)
        default = p.default_as_written if p.has_default else inspect.Parameter.empty
        ann = _union([_annotation(s.params[i]) for s in shown])
        params.append(inspect.Parameter(p.name, kind, default=default, annotation=ann))
    ret = _union([_return_annotation(s) for s in shown])
    return inspect.Signature(params, return_annotation=ret)


class LazySignature(inspect.Signature):
    """An ``inspect.Signature`` built on first use, so that attaching one to each of the
    hundreds of generated functions costs nothing at import. ``inspect.signature(fn)``
    returns it as it is (it is a ``Signature``); its parameters and return annotation are
    computed when first read, and :meth:`replace` (used for bound methods and partials)
    returns a plain ``Signature``."""

    __slots__ = ("_build", "_built")

    def __init__(self, build: Callable[[], inspect.Signature]) -> None:
        # no super().__init__: the base slots are shadowed by the properties below
        self._build: Callable[[], inspect.Signature] | None = build
        self._built: inspect.Signature | None = None

    def _resolved(self) -> inspect.Signature:
        if self._built is None:
            assert self._build is not None
            self._built = self._build()
            self._build = None
        return self._built

    @property  # type: ignore[override]
    def _parameters(self) -> Any:
        return self._resolved().parameters

    @property  # type: ignore[override]
    def _return_annotation(self) -> Any:
        return self._resolved().return_annotation

    def replace(self, **changes: Any) -> inspect.Signature:  # type: ignore[override]
        return self._resolved().replace(**changes)

    def __repr__(self) -> str:
        return f"<Signature {self}>"
