"""Generate the argument parser of each functional-API function, once, at load time.

For a single signature the generated function has the signature's own Python parameters
(CPython binds the arguments) followed by one inline type check per parameter and the call of
the functor (or, for ``=> op:name``, of the op's ``apply``: see :mod:`.opbind`). For
overloads, one matcher per signature (same technique, returning ``NO_MATCH`` on a type
mismatch) is tried in order. Nothing is interpreted per call.

Each function also gets a docstring (the reference's description, then the yaml signatures)
and a ``__signature__`` built on first use (:func:`.signature.python_signature`), so
``help()`` and ``inspect.signature`` show PyTorch-style parameters, not ``(*args, **kwargs)``.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

from .. import dtypes as _dt
from ..tensor import Tensor
from .opbind import op_apply, op_call_source
from .signature import Entry, LazySignature, Signature, overload_policy, python_signature
from .types import CONVERTERS, EXACT, FAST, NO_MATCH, type_name

__all__ = ["generate", "entry_description"]

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
    """PyTorch's wording: ``f(): argument 'x' (position 1) must be Tensor, not str``."""
    idx = [p.name for p in sig.params].index(pname)
    p = sig.params[idx]
    where = f"argument '{pname}'" + ("" if p.kwonly else f" (position {idx + 1})")
    opt = " or None" if p.has_default and p.default is None else ""
    return TypeError(f"{fname}(): {where} must be {type_name(p.type, p.size)}{opt}, "
                     f"not {_describe_value(value)}")


def _bad_call(fname: str, sigs: tuple[Signature, ...], args: tuple, kwargs: dict) -> TypeError:
    got = ", ".join([_describe_value(a) for a in args]
                    + [f"{k}={_describe_value(v)}" for k, v in kwargs.items()])
    lines = "\n".join(f" * {s.describe()}" for s in sigs)
    return TypeError(f"{fname}() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:\n{lines}")


def _param_list(sig: Signature, k: int, all_optional: bool) -> str:
    """The Python parameter list of signature ``k``'s parser (defaults ``_d<i>_<k>``).

    ``all_optional`` (overload matchers): every parameter defaults to ``_MISSING`` and extra
    positional / keyword arguments are caught, so a matcher can refuse instead of raising.
    """
    parts, star = [], False
    for i, p in enumerate(sig.params):
        if p.kwonly and not star:
            parts.append("*_xa" if all_optional else "*")
            star = True
        if p.has_default:
            parts.append(f"{p.name}=_d{i}_{k}")
        else:
            parts.append(f"{p.name}={_MISSING_SRC}" if all_optional else p.name)
    if all_optional:
        if not star:
            parts.append("*_xa")
        parts.append("**_xk")
    return ", ".join(parts)


def _checks(sig: Signature, k: int, on_fail: Callable[[str], str], indent: str) -> list[str]:
    """One inline check per parameter: a cheap test for values that need no conversion (the
    default object itself included, converted at load time), else the parameter's converter
    ``_c<i>_<k>``; a failed conversion reports the value as given."""
    lines = []
    for i, p in enumerate(sig.params):
        v = p.name
        tests = []
        if p.has_default:
            tests.append(f"{v} is None" if p.default is None else f"{v} is _d{i}_{k}")
        if p.type in FAST:
            tests.append(FAST[p.type].format(v=v))
        test = " or ".join(tests)
        if p.type in EXACT:  # the fast test is the whole check
            lines.append(f"{indent}if not ({test}):")
            lines.append(f"{indent}    {on_fail(v)}")
            continue
        body = indent
        if tests:
            lines.append(f"{indent}if not ({test}):")
            body = indent + "    "
        lines.append(f"{body}_c = _c{i}_{k}({v}, {p.size})")
        lines.append(f"{body}if _c is _NO:")
        lines.append(f"{body}    {on_fail(v)}")
        lines.append(f"{body}{v} = _c")
    return lines


def _call(sig: Signature, k: int, args: list[str]) -> str:
    """The call of signature ``k``'s target (``_F<k>``) with one source expression per
    parameter: a functor takes them in order, an op (``=> op:name``) by input and attr."""
    if sig.op is not None:
        return op_call_source(sig, f"_F{k}", args)
    return f"_F{k}({', '.join(args)})"


def _ret(sig: Signature, call: str, k: int) -> str:
    if sig.ret_names:
        return f"_R{k}(*{call})"
    return call


def _tensor_fast_path(sig: Signature) -> list[str]:
    """For overloads: a positional-only call whose leading Tensor params match the first
    signature goes straight to its functor (it is tried first anyway, so order is kept)."""
    req = [p for p in sig.params if not p.has_default]
    if not req or any(p.type != "Tensor" or p.kwonly for p in req) or any(
            p.has_default is False for p in sig.params[len(req):]) or sig.params[:len(req)] != \
            tuple(req):
        return []
    n = len(req)
    checks = " and ".join(f"isinstance(args[{i}], _Tensor)" for i in range(n))
    rest = [f"_d{i}_0" for i in range(n, len(sig.params))]
    call = _call(sig, 0, [f"args[{i}]" for i in range(n)] + rest)
    return [f"    if not kwargs and len(args) == {n} and {checks}:",
            f"        return {_ret(sig, call, 0)}"]


def generate(entry: Entry, functors: dict[str, Callable[..., Any]], where: str) -> Callable:
    """Build the parser function for one yaml entry (raises if a functor is unknown)."""
    ns: dict[str, Any] = {"_Tensor": Tensor, "_dtype": _dt.dtype, "_NO": NO_MATCH,
                          "_MISSING": _MISSING, "_bad_arg": _bad_arg, "_bad_call": _bad_call,
                          "_sigs": entry.signatures}
    for k, sig in enumerate(entry.signatures):
        fn = op_apply(sig) if sig.op is not None else functors.get(sig.functor)
        if fn is None:
            raise KeyError(f"{where} entry '{entry.name}': signature {sig.text!r} refers to "
                           f"unknown functor '{sig.functor}'")
        ns[f"_F{k}"] = fn
        ns[f"_S{k}"] = sig
        if sig.ret_names:
            ns[f"_R{k}"] = namedtuple(entry.name, sig.ret_names)  # type: ignore[misc]
        for i, p in enumerate(sig.params):
            ns[f"_c{i}_{k}"] = CONVERTERS[p.type]
            if p.has_default:
                ns[f"_d{i}_{k}"] = p.default
    name = entry.name
    lines: list[str] = []
    if len(entry.signatures) == 1:
        sig = entry.signatures[0]
        lines.append(f"def {name}({_param_list(sig, 0, False)}):")
        lines += _checks(sig, 0, lambda v: f"raise _bad_arg({name!r}, _S0, {v!r}, {v})", "    ")
        call = _call(sig, 0, [p.name for p in sig.params])
        lines.append(f"    return {_ret(sig, call, 0)}")
    else:
        for k, sig in enumerate(entry.signatures):
            lines.append(f"def _m{k}({_param_list(sig, k, True)}):")
            missing = [p.name for p in sig.params if not p.has_default]
            cond = " or ".join(["_xa", "_xk"] + [f"{m} is _MISSING" for m in missing])
            lines.append(f"    if {cond}:")
            lines.append("        return _NO")
            lines += _checks(sig, k, lambda v: "return _NO", "    ")
            call = _call(sig, k, [p.name for p in sig.params])
            lines.append(f"    return {_ret(sig, call, k)}")
        lines.append(f"def {name}(*args, **kwargs):")
        lines += _tensor_fast_path(entry.signatures[0])
        for k in range(len(entry.signatures)):
            lines.append(f"    r = _m{k}(*args, **kwargs)")
            lines.append("    if r is not _NO:")
            lines.append("        return r")
        lines.append(f"    raise _bad_call({name!r}, _sigs, args, kwargs)")
    src = "\n".join(lines) + "\n"
    exec(compile(src, f"<jflow functional {name}>", "exec"), ns)
    fn = ns[name]
    fn.__doc__ = _docstring(entry, [ns[f"_F{k}"] for k in range(len(entry.signatures))])
    fn.__signature__ = LazySignature(lambda: python_signature(entry.signatures))
    fn._source = src
    fn._entry = entry
    return fn


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return " ".join(line.strip() for line in doc.strip().split("\n\n")[0].splitlines())


def entry_description(entry: Entry, targets: Sequence[Any]) -> list[str]:
    """What an entry does, in paragraphs: its yaml ``doc``, then the first paragraph of each
    distinct functor docstring (``targets``: what each overload calls; an ``=> op:`` binding
    contributes nothing, its op is described in the ops reference). The API reference and
    the generated function's docstring both use this."""
    docs = []
    d = _first_paragraph(entry.doc)
    if d:
        docs.append(d)
    for sig, target in zip(entry.signatures, targets):
        d = _first_paragraph(getattr(target, "__doc__", None)) if sig.functor else ""
        if d and d not in docs:
            docs.append(d)
    return docs


_POLICY_NOTE = {
    "merged": "``inspect.signature`` shows the overloads merged (same parameters, types "
              "joined, the first overload's defaults).",
    "first": "``inspect.signature`` shows the first overload.",
}


def _docstring(entry: Entry, targets: Sequence[Any]) -> str:
    """The description, then every signature in api.yaml's grammar (what the parser checks)."""
    sigs = "\n".join(f"    {entry.name}{s.describe()} -> {s.ret}" for s in entry.signatures)
    note = _POLICY_NOTE.get(overload_policy(entry.signatures))
    head = "\n\n".join(entry_description(entry, targets))
    label = "Signatures (api.yaml)" if len(entry.signatures) > 1 else "Signature (api.yaml)"
    parts = [head] if head else []
    parts.append(f"{label}:\n{sigs}")
    if note:
        parts.append(note)
    return "\n\n".join(parts)
