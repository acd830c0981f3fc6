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

from .. import _codegen
from .. import dtypes as _dt
from ..ops.registry import get as get_op
from ..tensor import Tensor, _tensor_value, _wrap
from .opbind import op_apply, op_args, op_call_source
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


_NUMBERS = (bool, int, float, complex)


def _number_tensor(value: Any) -> Tensor:
    """A Python number given for an entry's first Tensor (``numbers_as_tensors``), as
    PyTorch's parser makes it: a 0-dim tensor of the number's own type (int64, the default
    float / complex dtype, bool)."""
    return _wrap(_tensor_value(value, None, None, "flow.tensor"))


def _numbers_retry(n: int, sig: Signature) -> list[str]:
    """An entry with ``numbers_as_tensors`` (PyTorch's add / sub / mul / div family): when
    none of its ``n`` overloads matched and the first argument is a Python number, they are
    tried again with it as a 0-dim tensor (``torch.div(5, 2, rounding_mode="floor")`` is
    ``tensor(2)``); a call that still matches none reports the arguments as given."""
    first = sig.params[0].name
    return [f"    _a0 = args[0] if args else kwargs.get({first!r})",
            "    if isinstance(_a0, _NUMBERS):",
            "        _t = _number_tensor(_a0)",
            f"        _ra, _rk = ((_t, *args[1:]), kwargs) if args else (args, {{**kwargs, "
            f"{first!r}: _t}})",
            f"        for _m in ({', '.join(f'_m{k}' for k in range(n))},):",
            "            r = _m(*_ra, **_rk)",
            "            if r is not _NO:",
            "                return r"]


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
                          "_sigs": entry.signatures, "_NUMBERS": _NUMBERS,
                          "_number_tensor": _number_tensor}
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
        if entry.numbers_as_tensors:
            lines += _numbers_retry(len(entry.signatures), entry.signatures[0])
        lines.append(f"    raise _bad_call({name!r}, _sigs, args, kwargs)")
    src = "\n".join(lines) + "\n"
    # the plain twin (jflow._codegen, plain mode): the same parse as a loop over the params
    ks = range(len(entry.signatures))
    ns["_PLAIN"] = _plain_parser(name, entry.signatures, [ns[f"_F{k}"] for k in ks],
                                 [ns.get(f"_R{k}") for k in ks], entry.numbers_as_tensors)
    fn = _codegen.define("parser", name, src, ns, plain={name: _parser_plain})[name]
    fn.__doc__ = _docstring(entry, [ns[f"_F{k}"] for k in range(len(entry.signatures))])
    fn.__signature__ = LazySignature(lambda: python_signature(entry.signatures))
    fn._entry = entry
    return fn


def _parser_plain(*args, **kwargs):  # type: ignore[no-untyped-def]  # noqa: ANN002, ANN003, ANN202
    """The code a generated parser runs in plain mode (jflow._codegen): its namespace's
    ``_PLAIN``, the :func:`_plain_parser` closure of its entry."""
    return _PLAIN(args, kwargs)  # type: ignore[name-defined]  # noqa: F821


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _names(names: list[str]) -> str:
    q = [f"'{n}'" for n in names]
    if len(q) <= 2:
        return " and ".join(q)
    return f"{', '.join(q[:-1])}, and {q[-1]}"


def _bind(fname: str, sig: Signature, args: tuple, kwargs: dict, strict: bool) -> Any:
    """The parameters' values of a call, as CPython binds the generated parser's parameter
    list (its error wording); ``strict=False`` (an overload's matcher) answers NO_MATCH where
    the matcher's ``*_xa`` / ``**_xk`` / ``_MISSING`` would refuse."""
    params = sig.params
    pos = [p for p in params if not p.kwonly]
    # (CPython's order: keywords first — unknown, given twice —, then too many positional,
    # then missing ones)
    names = {p.name for p in params}
    extra = [k for k in kwargs if k not in names]
    if extra:
        if not strict:
            return NO_MATCH
        raise TypeError(f"{fname}() got an unexpected keyword argument '{extra[0]}'")
    for p in pos[:len(args)]:
        if p.name in kwargs:  # (CPython raises this even for a matcher)
            raise TypeError(f"{fname}() got multiple values for argument '{p.name}'")
    if len(args) > len(pos):
        if not strict:
            return NO_MATCH
        req = sum(1 for p in pos if not p.has_default)
        takes = str(len(pos)) if req == len(pos) else f"from {req} to {len(pos)}"
        raise TypeError(f"{fname}() takes {takes} positional argument"
                        f"{'' if takes == '1' else 's'} but {len(args)} "
                        f"{'was' if len(args) == 1 else 'were'} given")
    kw = kwargs
    values, missing, missing_kw = [], [], []
    for i, p in enumerate(params):
        if i < len(args) and not p.kwonly:
            values.append(args[i])
        elif p.name in kw:
            values.append(kw[p.name])
        elif p.has_default:
            values.append(p.default)
        else:
            (missing_kw if p.kwonly else missing).append(p.name)
            values.append(None)
    if missing or missing_kw:
        if not strict:
            return NO_MATCH
        which = missing or missing_kw
        kind = "positional" if missing else "keyword-only"
        raise TypeError(f"{fname}() missing {_plural(len(which), f'required {kind} argument')}"
                        f": {_names(which)}")
    return values


def _plain_parser(name: str, sigs: tuple[Signature, ...], targets: list[Any],
                  rets: list[Any], numbers: bool = False) -> Callable[[tuple, dict], Any]:
    """A generated parser's plain twin: bind, check and convert each parameter, call the
    target (the first overload that matches) — the steps of :func:`generate`'s text as loops.
    ``targets`` / ``rets``: each overload's functor or ``op.apply`` and its named-tuple
    class or None (the generated parser's own objects)."""
    plans = []
    for sig, target, ret in zip(sigs, targets, rets):
        convs = [CONVERTERS[p.type] for p in sig.params]
        if sig.op is not None:
            op = get_op(sig.op)
            where = {a: j for j, a in enumerate(op_args(sig))}
            ins = [where.get(i.name) for i in op.inputs]
            kws = [(a.name, where[a.name]) for a in op.attrs if a.name in where]
            call = (ins, kws)
        else:
            call = None
        plans.append((sig, target, convs, ret, call))

    def check(sig: Signature, convs: list, values: list, strict: bool) -> Any:
        for i, (p, conv) in enumerate(zip(sig.params, convs)):
            v = values[i]
            if p.has_default and (v is None if p.default is None else v is p.default):
                continue  # (the default object itself: converted at load time)
            c = conv(v, p.size)
            if c is NO_MATCH:
                if strict:
                    raise _bad_arg(name, sig, p.name, v)
                return NO_MATCH
            values[i] = c
        return values

    def invoke(plan: tuple, values: list) -> Any:
        _, target, _, ret, call = plan
        if call is None:
            out = target(*values)
        else:
            ins, kws = call
            out = target(*[None if j is None else values[j] for j in ins],
                         **{a: values[j] for a, j in kws})
        return ret(*out) if ret is not None else out

    def parse(args: tuple, kwargs: dict) -> Any:
        if len(plans) == 1:
            sig, _, convs, _, _ = plans[0]
            values = check(sig, convs, _bind(name, sig, args, kwargs, True), True)
            return invoke(plans[0], values)
        for plan in plans:
            sig, _, convs, _, _ = plan
            values = _bind(name, sig, args, kwargs, False)
            if values is not NO_MATCH:
                values = check(sig, convs, values, False)
                if values is not NO_MATCH:
                    return invoke(plan, values)
        if numbers:  # (the generated text's _numbers_retry)
            first = sigs[0].params[0].name
            a0 = args[0] if args else kwargs.get(first)
            if isinstance(a0, _NUMBERS):
                t = _number_tensor(a0)
                ra, rk = ((t, *args[1:]), kwargs) if args else (args, {**kwargs, first: t})
                for plan in plans:
                    values = _bind(name, plan[0], ra, rk, False)
                    if values is not NO_MATCH:
                        values = check(plan[0], plan[2], values, False)
                        if values is not NO_MATCH:
                            return invoke(plan, values)
        raise _bad_call(name, sigs, args, kwargs)

    return parse


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
