"""Generate the argument parser of each functional-API function, once, at load time.

For a single signature the generated function has the signature's own Python parameters
(CPython binds the arguments) followed by one inline type check per parameter and the functor
call. For overloads, one matcher per signature (same technique, returning ``NO_MATCH`` on a
type mismatch) is tried in order. Nothing is interpreted per call.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import Any

from .. import dtypes as _dt
from ..tensor import Tensor
from .signature import Entry, Signature
from .types import FAST, NO_MATCH, convert, type_name

__all__ = ["generate"]

_MISSING_SRC = "_MISSING"


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


def _describe_value(v: Any) -> str:
    if isinstance(v, Tensor):
        return "Tensor"
    if isinstance(v, (list, tuple)):
        return f"{type(v).__name__} of [{', '.join(sorted({_describe_value(e) for e in v}))}]"
    return type(v).__name__


def _bad_arg(fname: str, sig: Signature, pname: str, value: Any) -> TypeError:
    idx = [p.name for p in sig.params].index(pname)
    p = sig.params[idx]
    where = f"argument '{pname}'" + ("" if p.kwonly else f" (position {idx + 1})")
    t = type_name(p.type) + (f"[{p.size}]" if p.size else "")
    opt = " or None" if p.has_default and p.default is None else ""
    return TypeError(f"{fname}(): {where} must be {t}{opt}, not {_describe_value(value)}")


def _bad_call(fname: str, sigs: tuple[Signature, ...], args: tuple, kwargs: dict) -> TypeError:
    got = ", ".join([_describe_value(a) for a in args]
                    + [f"{k}={_describe_value(v)}" for k, v in kwargs.items()])
    lines = "\n".join(f" * {s.describe()}" for s in sigs)
    return TypeError(f"{fname}() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:\n{lines}")


def _param_list(sig: Signature, all_optional: bool) -> str:
    parts, star = [], False
    for i, p in enumerate(sig.params):
        if p.kwonly and not star:
            parts.append("*_xa" if all_optional else "*")
            star = True
        if all_optional:
            default = f"_d{i}" if p.has_default else _MISSING_SRC
        else:
            default = f"_d{i}" if p.has_default else None
        parts.append(p.name if default is None else f"{p.name}={default}")
    if all_optional:
        if not star:
            parts.append("*_xa")
        parts.append("**_xk")
    return ", ".join(parts)


def _checks(sig: Signature, on_fail: Callable[[str], str], indent: str) -> list[str]:
    lines = []
    for i, p in enumerate(sig.params):
        v = p.name
        fast = FAST.get(p.type, "False").format(v=v)
        if p.has_default and p.default is None:
            fast = f"{v} is None or {fast}"
        lines.append(f"{indent}if not ({fast}):")
        lines.append(f"{indent}    {v} = _convert({p.type!r}, {v}, {p.size})")
        lines.append(f"{indent}    if {v} is _NO:")
        lines.append(f"{indent}        {on_fail(v)}")
    return lines


def _ret(sig: Signature, call: str, k: int) -> str:
    if sig.ret_names:
        return f"_R{k}(*{call})"
    return call


def generate(entry: Entry, functors: dict[str, Callable[..., Any]], where: str) -> Callable:
    """Build the parser function for one yaml entry (raises if a functor is unknown)."""
    ns: dict[str, Any] = {"_Tensor": Tensor, "_dtype": _dt.dtype, "_convert": convert,
                          "_NO": NO_MATCH, "_MISSING": _MISSING, "_bad_arg": _bad_arg,
                          "_bad_call": _bad_call, "_sigs": entry.signatures}
    for k, sig in enumerate(entry.signatures):
        fn = functors.get(sig.functor)
        if fn is None:
            raise KeyError(f"{where} entry '{entry.name}': signature {sig.text!r} refers to "
                           f"unknown functor '{sig.functor}'")
        ns[f"_F{k}"] = fn
        ns[f"_S{k}"] = sig
        if sig.ret_names:
            ns[f"_R{k}"] = namedtuple(entry.name, sig.ret_names)  # type: ignore[misc]
        for i, p in enumerate(sig.params):
            if p.has_default:
                ns[f"_d{i}_{k}"] = p.default
    name = entry.name
    lines: list[str] = []
    if len(entry.signatures) == 1:
        sig = entry.signatures[0]
        params = _param_list(sig, False).replace("=_d", "=_d").split(", ") if sig.params else []
        params = [_suffix_default(x, 0) for x in params]
        lines.append(f"def {name}({', '.join(params)}):")
        lines += _checks(sig, lambda v: f"raise _bad_arg({name!r}, _S0, {v!r}, {v})", "    ")
        call = f"_F0({', '.join(p.name for p in sig.params)})"
        lines.append(f"    return {_ret(sig, call, 0)}")
    else:
        for k, sig in enumerate(entry.signatures):
            params = [_suffix_default(x, k) for x in _param_list(sig, True).split(", ")]
            lines.append(f"def _m{k}({', '.join(params)}):")
            missing = [p.name for p in sig.params if not p.has_default]
            cond = " or ".join(["_xa", "_xk"] + [f"{m} is _MISSING" for m in missing])
            lines.append(f"    if {cond}:")
            lines.append("        return _NO")
            lines += _checks(sig, lambda v: "return _NO", "    ")
            call = f"_F{k}({', '.join(p.name for p in sig.params)})"
            lines.append(f"    return {_ret(sig, call, k)}")
        lines.append(f"def {name}(*args, **kwargs):")
        for k in range(len(entry.signatures)):
            lines.append(f"    r = _m{k}(*args, **kwargs)")
            lines.append("    if r is not _NO:")
            lines.append("        return r")
        lines.append(f"    raise _bad_call({name!r}, _sigs, args, kwargs)")
    src = "\n".join(lines) + "\n"
    exec(compile(src, f"<jflow functional {name}>", "exec"), ns)
    fn = ns[name]
    fn.__doc__ = (entry.doc + "\n\n" if entry.doc else "") + "\n".join(
        f"{name}{s.describe()} -> {s.ret}" for s in entry.signatures)
    fn._source = src
    fn._entry = entry
    return fn


def _suffix_default(param_src: str, k: int) -> str:
    # "_d3" -> "_d3_k" so overloads keep separate defaults in one namespace
    if "=_d" in param_src:
        head, _, idx = param_src.rpartition("=_d")
        return f"{head}=_d{idx}_{k}"
    return param_src
