"""Dispatch of one op call: local eager (cached executable) or traced (``primitive.bind``).

For every op, :func:`make_apply` generates at definition time a small Python function with
the op's own signature (inputs positional, attrs keyword). A call does only this:

1. look up ``(attrs...)`` in the op's bounded cache -> a ``jax.jit`` of the bind (built, with
   attr validation and the check fn, on the first call with those attrs);
2. if no input is a tracer, call that jitted function (JAX's C++ fast path) and wrap the
   result in a Tensor — otherwise bind the primitive on the tracers (inside ``jax.jit``,
   ``jax.vmap``, ``jax.grad`` of user code), which JAX stages like any primitive.

An op with dynamic attrs (:class:`jflow.ops.Attr`) has two caches: the raw attr values ->
``(executable, params, dynamic values)`` (cheap entries: a new value is validated once and
stored), and the static part of the attrs (dynamic values replaced by ``DYNAMIC``, or None)
-> ``(executable, params)``, so every value shares one executable; the values are passed
as trailing scalar arguments (Python numbers: weakly typed, like a Python float in the
kernel). An op without dynamic attrs runs exactly the code it always did.
"""

from __future__ import annotations

import inspect
import operator
import types
from collections.abc import Callable
from typing import Any

import jax
from jax.core import Tracer

from . import _codegen
from ._jax_compat import drop_traceback_note as _drop_note
from .autograd.graph import record, record1, record2, record_single
from .kernels.registry import reraise_host_error as _reraise_host_error
from .lazy_mode.record import record_lazy1, record_lazy2
from .lazy_values import HOOK as _LAZY_HOOK
from .lazy_values import LOCAL as _LAZY_LOCAL
from .meta import abstract_bind as _abstract_bind
from .ops.attrs import DYNAMIC, REQUIRED
from .sharding.execute import global_apply
from .tensor import NEW_FIELDS_SRC
from .tensor import Tensor as _Tensor
from .tensor import _wrap as _new_tensor

__all__ = ["make_apply", "primitive_impl", "CACHE_SIZE", "watch_inputs", "executables",
           "donating_executable"]

#: ``[fn or None]``: while set (by ``flow.jit`` while it traces), every op call first passes
#: the op and its inputs (tensors; None or lists for optional / variadic inputs) to ``fn``, so
#: tensors the traced code reads without them being inputs of the executable (captured
#: constants) can be found and guarded.
_WATCH: list[Any] = [None]


def watch_inputs(fn: Callable[[Any, tuple], None] | None) -> Callable[[Any, tuple], None] | None:
    """Install ``fn`` as the input watcher (None removes it); returns the previous one."""
    old = _WATCH[0]
    _WATCH[0] = fn
    return old

#: Executables kept per op (distinct attr values); the oldest are dropped beyond this.
CACHE_SIZE = 512


def _make_executable(op: Any, params: dict[str, Any],
                     donate: tuple[int, ...] = ()) -> Callable[..., Any]:
    prim = op.primitive
    if len(op.outputs) == 1 and not op.outputs[0].variadic:
        def run(*args: Any) -> Any:
            return prim.bind(*args, **params)[0]
    else:
        def run(*args: Any) -> Any:
            return prim.bind(*args, **params)
    run.__name__ = op.name
    run.__qualname__ = f"jflow.{op.name}"
    return jax.jit(run, donate_argnums=donate) if donate else jax.jit(run)


def _store(cache: dict, key: Any, value: Any) -> None:
    if len(cache) >= CACHE_SIZE:
        del cache[next(iter(cache))]
    cache[key] = value


def primitive_impl(op: Any) -> Callable[..., Any]:
    """The primitive's impl: ``bind`` on concrete arrays runs the cached executable."""
    cache: dict[Any, Any] = {}

    def impl(*args: Any, **params: Any) -> Any:
        key = tuple(params.items())
        f = cache.get(key)
        if f is None:
            prim = op.primitive
            f = jax.jit(lambda *a: prim.bind(*a, **params))
            _store(cache, key, f)
        return f(*args)

    return impl


def _dynamic_builder(op: Any, cache: dict) -> Callable[..., Any]:
    """``build`` of an op with dynamic attrs: entries are ``(executable, params, values)``.

    Automatic dynamic (as PyTorch's compiler treats sizes): the first value seen for a
    static part of the attrs gets a static executable (no scalar operands: the call is as
    cheap as an op without dynamic attrs, e.g. ``nn.LeakyReLU(0.2)`` in a model); from the
    second distinct value on, one executable with the values as operands serves them all."""
    attr_names = [a.name for a in op.attrs]
    dyn = op.dynamic_attrs
    exes: dict[Any, Any] = {}  # static part of the attrs (or every attr) -> (executable, params)
    first: dict[Any, Any] = {}  # static part -> the attrs of its first call, or _MANY

    def executable(skey: Any, params: dict, layout: Any) -> tuple[Any, dict]:
        hit = exes.get(skey)
        if hit is None:
            if op.structured:
                params["_layout"] = layout
            hit = (_make_executable(op, params), params)
            _store(exes, skey, hit)
        return hit

    def build(key: Any, layout: Any, /, **given: Any) -> tuple[Callable[..., Any], dict, tuple]:
        params = op.normalize_attrs(given)
        static = dict(params)
        values = []
        traced = False
        for n in dyn:
            v = params[n]
            if v is not None:  # None stays static
                values.append(v)
                params[n] = DYNAMIC
                traced = traced or (v.__class__ is not float and isinstance(v, Tracer))
        skey = (layout, *[params[n] for n in attr_names])
        entry = None
        if not traced:
            full = (layout, *[static[n] for n in attr_names])
            seen = first.get(skey)
            if seen is None or seen == full:
                if seen is None:
                    _store(first, skey, full)
                hit = executable(full, static, layout)
                entry = (hit[0], hit[1], ())
            else:
                first[skey] = _MANY
        if entry is None:
            hit = executable(skey, params, layout)
            entry = (hit[0], hit[1], tuple(values))
        if not traced:
            try:
                _store(cache, key, entry)
            except (TypeError, ValueError):  # unhashable raw attrs: not kept
                pass
        return entry

    build.executables = exes  # for executables(op)
    return build


_MANY = object()  # a static part seen with several values: dynamic from now on


def _builder(op: Any, cache: dict) -> Callable[..., Any]:
    attr_names = [a.name for a in op.attrs]

    def build(key: Any, layout: Any, /, **given: Any) -> tuple[Callable[..., Any], dict]:
        attrs = op.normalize_attrs(given)
        if op.structured:
            nkey = (layout, *attrs.values())
        elif len(attr_names) == 1:  # a single attr is its own key (no tuple on the hot path)
            nkey = attrs[attr_names[0]]
        else:
            nkey = tuple(attrs[n] for n in attr_names)
        hit = cache.get(nkey)
        if hit is None:
            params = dict(attrs)
            if op.structured:
                params["_layout"] = layout
            hit = (_make_executable(op, params), params)
            _store(cache, nkey, hit)
        try:
            if key is not nkey and key != nkey:
                _store(cache, key, hit)
        except (TypeError, ValueError):  # unhashable raw attrs (lists, arrays): the
            pass                         # normalised key alone is kept
        return hit

    return build


def _global_apply(op: Any, params: dict, ins: Any, single: bool, dv: tuple = ()) -> Any:
    return global_apply(op, params, list(ins), single, dv)


def _traced(prim: Any, params: dict, vals: list, single: bool) -> Any:
    outs = prim.bind(*vals, **params)
    if single:
        return _new_tensor(outs[0])
    return tuple(_new_tensor(o) for o in outs)


def _check_inputs(op: Any, inputs: tuple) -> None:
    """Raise the checked call's TypeError when an input of ``op.apply`` is not a Tensor."""
    for i, (spec, x) in enumerate(zip(op.inputs, inputs)):
        items = x if spec.variadic and isinstance(x, (list, tuple)) else [x]
        for t in items:
            if not isinstance(t, _Tensor) and not (spec.optional and t is None):
                raise TypeError(f"op '{op.name}': input {i} ('{spec.name}') must be a jflow "
                                f"Tensor{' or None' if spec.optional else ''}, got "
                                f"{type(t).__name__} (wrap arrays with flow.tensor / "
                                f"jflow.utils.from_jax)") from None


#: lazy mode's test in a generated apply (jflow.lazy_mode): some thread is lazy (one list
#: read, the only cost outside lazy mode), this one is, and flow.jit is not tracing (it
#: records the call itself); then the call records into this thread's segment. (Inlined
#: rather than a hook function: one frame less per recorded op.)
_LAZY_HEAD = ["    if _lazy[0] is not None and (_seg := _lazy_local.active) is not None "
              "and _watch[0] is None:"]


def make_apply(op: Any) -> Callable[..., Any]:
    """Generate the op's eager/traced entry ``apply(*inputs, **attrs)``."""
    cache: dict[Any, Any] = {}
    ins = op.inputs
    single = len(op.outputs) == 1 and not op.outputs[0].variadic
    dyn = bool(op.dynamic_attrs)
    sig = []
    for i in ins:
        sig.append(f"{i.param}=None" if i.optional else i.param)
    build = _dynamic_builder(op, cache) if dyn else _builder(op, cache)
    ns: dict[str, Any] = {"_cache": cache, "_build": build, "_Tracer": Tracer,
                          "_wrap": _new_tensor, "_traced": _traced, "_prim": op.primitive,
                          "_layout_of": op.layout_of, "_new": object.__new__, "_T": _Tensor,
                          "_any": any, "_isinstance": isinstance, "_tuple": tuple, "_map": map,
                          "_value_of": operator.attrgetter("_value"),
                          "_JaxRuntimeError": jax.errors.JaxRuntimeError,
                          "_reraise_host_error": _reraise_host_error, "_record": record,
                          "_record1": record1, "_record2": record2,
                          "_record_single": record_single,
                          "_record_lazy1": record_lazy1, "_record_lazy2": record_lazy2,
                          "_global_apply": _global_apply,
                          "_watch": _WATCH, "_op": op, "_lazy": _LAZY_HOOK,
                          "_lazy_local": _LAZY_LOCAL,
                          "_check_inputs": _check_inputs, "_abstract": _abstract_bind,
                          "_drop_note": _drop_note}
    attr_sig = []
    for a in op.attrs:
        if a.default is REQUIRED:
            attr_sig.append(a.name)
        else:
            ns[f"_D_{a.name}"] = a.default
            attr_sig.append(f"{a.name}=_D_{a.name}")
    head = ", ".join(sig + (["*"] + attr_sig if attr_sig else []))
    names = [a.name for a in op.attrs]
    # every local of the generated function starts with "_" (reserved: op argument names
    # cannot), and builtins are reached through "_" aliases, so argument names never clash
    lines = [f"def apply({head}):"]
    # the cache is keyed by the raw attr values; as True == 1 in Python, a bool / int attr's
    # key keeps the two apart (a wrapped value never hits: it goes through validation)
    def k(a: Any) -> str:
        if a.type == "bool":
            return f"({a.name} if {a.name}.__class__ is bool or {a.name} is None else ({a.name},))"
        if a.type in ("int32", "int64"):
            return f"({a.name} if {a.name}.__class__ is not bool else ({a.name},))"
        return a.name
    keys = [k(a) for a in op.attrs]
    if ins:  # (one list lookup on the hot path; set only while flow.jit traces)
        lines.append("    if _watch[0] is not None:")
        lines.append(f"        _watch[0](_op, ({''.join(i.param + ', ' for i in ins)}))")
    # optional inputs only (no variadic ones): the layout and the grad test inlined
    fixed = op.structured and not any(i.variadic for i in ins)
    if fixed:
        parts = [f"(0 if {i.param} is None else 1)" for i in ins]
        lines.append(f"    _layout = ({''.join(x + ', ' for x in parts)})")
    elif op.structured:
        lines.append(f"    _layout = _layout_of(({''.join(i.param + ', ' for i in ins)}))")
    if op.structured:
        key = f"(_layout, {''.join(x + ', ' for x in keys)})"
    if not op.structured:
        lines.append("    _layout = None")
        key = keys[0] if len(keys) == 1 else f"({''.join(x + ', ' for x in keys)})"
    # an op with dynamic attrs: cache entries also hold the values passed to the executable
    entry = "_f, _params, _dv" if dyn else "_f, _params"
    lookup = [
        "    try:",
        f"        {entry} = _cache[{key}]",
        "    except (KeyError, TypeError):",
        f"        {entry} = _build({key}, _layout{''.join(f', {n}={n}' for n in names)})",
    ]
    grad = bool(ins) and not op.has_trait("NoGrad")
    defaults = [a.name for a in op.attrs if a.default is not REQUIRED]
    if not op.structured and len(op.attrs) >= 2 and len(defaults) == len(op.attrs):
        # every attr left at its default (the common call, e.g. matmul without transposes):
        # the entry is kept aside, no key tuple is built and hashed
        ns["_dflt"] = []
        at_default = " and ".join(f"{n} is _D_{n}" for n in defaults)
        lines += [f"    if {at_default} and _dflt:", f"        {entry} = _dflt[0]",
                  "    else:"]
        lines += ["    " + line for line in lookup]
        lines += [f"        if {at_default}:", f"            _dflt[:] = [({entry})]"]
    else:
        lines += lookup
    if op.structured:
        structured_needs = " or ".join(
            f"({i.param} is not None and {i.param}._requires_grad)" if i.optional else
            f"{i.param}._requires_grad" for i in ins) if fixed else \
            "_any(_i._requires_grad for _i in _ins)"
        lines.append("    _ins = []")
        for i in ins:
            if i.variadic:
                lines.append(f"    _ins += {i.param}")
            elif i.optional:
                lines.append(f"    if {i.param} is not None: _ins.append({i.param})")
            else:
                lines.append(f"    _ins.append({i.param})")
        if ins:  # lazy mode (jflow.lazy_mode): the call is recorded, not run
            dv_arg, dv_rec = ("_dv", ", _dv") if dyn else ("()", "")
            rec_s = "_record_single" if single else "_record"
            lines += _LAZY_HEAD + [
                f"        _t = _seg.add(_f, _tuple(_ins), {dv_arg}, {single})",
                "        if _t is not NotImplemented:"]
            if grad:
                lines += [f"            if {structured_needs}:",
                          f"                return {rec_s}(_op, _params, _ins, _t{dv_rec})"]
            lines.append("            return _t")
        lines.append("    _vals = [*_map(_value_of, _ins)]")  # (C-level: no comprehension frame)
        # global tensors (placement + SBP) run through the sharded executor
        gdv = ", _dv" if dyn else ""
        is_global = " or ".join(
            f"({i.param} is not None and {i.param}._global is not None)" if i.optional else
            f"{i.param}._global is not None" for i in ins) if fixed else \
            "_any(_i._global is not None for _i in _ins)"
        lines += [f"    if {is_global}:",
                  f"        return _global_apply(_op, _params, _ins, {single}{gdv})"]
        lines.append("    if not _any(_isinstance(_v, _Tracer) for _v in _vals):")
        call = "_f(*_vals, *_dv)" if dyn else "_f(*_vals)"
        traced_vals = "[*_vals, *_dv]" if dyn else "_vals"
        needs_grad = structured_needs
        ins_expr = "_ins"
    else:
        if ins and single and len(ins) in (1, 2):  # lazy mode: recorded with its node,
            args = "".join(i.param + ", " for i in ins)  # in one frame (lazy_mode.record)
            lines += _LAZY_HEAD + [
                f"        _t = _record_lazy{len(ins)}(_seg, _f, {args}{'_dv' if dyn else '()'}, "
                f"{'_op' if grad else 'None'}, _params)",
                "        if _t is not NotImplemented:", "            return _t"]
        elif ins:  # lazy mode (jflow.lazy_mode): the call is recorded, not run
            args = "".join(i.param + ", " for i in ins)
            lines += _LAZY_HEAD + [
                f"        _t = _seg.add(_f, ({args}), {'_dv' if dyn else '()'}, {single})",
                "        if _t is not NotImplemented:"]
            if grad:
                lazy_needs = " or ".join(f"{i.param}._requires_grad" for i in ins)
                lazy_rec = f"_record(_op, _params, ({args}), _t{', _dv' if dyn else ''})"
                lines += [f"            if {lazy_needs}:", f"                return {lazy_rec}"]
            lines.append("            return _t")
        if ins:  # global tensors (placement + SBP) run through the sharded executor
            is_global = " or ".join(f"{i.param}._global is not None" for i in ins)
            args = "".join(i.param + ", " for i in ins)
            gdv = ", _dv" if dyn else ""
            lines += [f"    if {is_global}:",
                      f"        return _global_apply(_op, _params, ({args}), {single}{gdv})"]
        for k, i in enumerate(ins):
            lines.append(f"    _v{k} = {i.param}._value")
        vs = [f"_v{k}" for k in range(len(ins))]
        cond = " or ".join(f"_isinstance({v}, _Tracer)" for v in vs) or "False"
        lines.append(f"    if not ({cond}):")
        call = f"_f({''.join(v + ', ' for v in vs)}*_dv)" if dyn else f"_f({', '.join(vs)})"
        traced_vals = f"[{''.join(v + ', ' for v in vs)}*_dv]" if dyn else f"[{', '.join(vs)}]"
        needs_grad = " or ".join(f"{i.param}._requires_grad" for i in ins)
        ins_expr = f"({''.join(i.param + ', ' for i in ins)})"
    # the try costs nothing unless the call fails: then a python kernel's own error is raised
    # instead of JAX's runtime-error wrapper around it
    if single:  # Tensor construction inlined (this is the hot path)
        lines += ["        _t = _new(_T)", "        try:", f"            _t._value = {call}",
                  "        except _JaxRuntimeError:",
                  f"            _reraise_host_error(_op, {traced_vals})",
                  # a meta input (jflow.meta): JAX refuses it as an argument; the op's
                  # abstract evaluation gives the meta result (any other TypeError re-raised)
                  "        except TypeError:",
                  f"            _t._value = _abstract(_prim, _params, {traced_vals})[0]",
                  *["        " + line for line in NEW_FIELDS_SRC.format(t="_t").splitlines()]]
    else:
        lines += ["        try:", f"            _t = _tuple(_map(_wrap, {call}))",
                  "        except _JaxRuntimeError:",
                  f"            _reraise_host_error(_op, {traced_vals})",
                  "        except TypeError:",
                  f"            _t = _tuple(_map(_wrap, _abstract(_prim, _params, {traced_vals})))"]
    lines += ["    else:", f"        _t = _traced(_prim, _params, {traced_vals}, {single})"]
    if grad:  # the tape: record only when some input requires grad
        extra = ", _dv" if dyn else ""  # the node keeps the dynamic values for its rule
        if single and not op.structured and len(ins) in (1, 2):  # loop-free recorders
            names_ = ", ".join(i.param for i in ins)
            rec = f"_record{len(ins)}(_op, _params, {names_}, _t{extra})"
        elif single and op.structured:
            rec = f"_record_single(_op, _params, {ins_expr}, _t{extra})"
        else:
            rec = f"_record(_op, _params, {ins_expr}, _t{extra})"
        lines += [f"    if {needs_grad}:", f"        return {rec}"]
    lines.append("    return _t")
    # a raw array (or anything not a Tensor) among the inputs: the checked call's error, not
    # "'ArrayImpl' object has no attribute '_global'" (the try costs nothing on success); any
    # error leaves without the footer JAX's traceback filtering adds at the executable's
    # jax.jit (_jax_compat.drop_traceback_note: it announces an exception that never follows)
    args_expr = "".join(i.param + ", " for i in ins)
    lines = [lines[0], "    try:"] + ["    " + line for line in lines[1:]] + [
        "    except AttributeError as _e:", f"        _check_inputs(_op, ({args_expr}))",
        "        _drop_note(_e)", "        raise",
        "    except Exception as _e:", "        _drop_note(_e)", "        raise"]
    src = "\n".join(lines) + "\n"
    # the plain twin (jflow._codegen, plain mode): the same steps as a closure over the op
    ns["_PLAIN"] = _plain_apply(op, cache, build)
    fn = _codegen.define("apply", op.name, src, ns, plain={"apply": _apply_plain})["apply"]
    fn.__name__ = op.name
    fn.__qualname__ = f"{op.name}.apply"
    fn.__doc__ = f"Apply op {op.signature()}"
    fn._caches = (cache, build)  # for executables(op)
    # profiling (jflow.profiler): a second code object for the same function object, swapped
    # in while a profiler runs (every reference to op.apply sees it), so the plain path pays
    # nothing; it times the body, kept as its own function (generated or plain, as apply)
    gen, plain = _codegen.twin_codes(fn)
    inner = types.FunctionType(gen, ns, fn.__name__, fn.__defaults__)
    inner.__kwdefaults__ = fn.__kwdefaults__
    # (the op's signature in both modes: the plain code takes ``*args, **kwargs``)
    fn.__signature__ = inspect.signature(inner)
    _codegen.register_twin(inner, gen, plain)
    ns["_inner"] = inner
    ns["_profiled_call"] = _profiled_call
    profiled = _codegen.define("profiled", op.name, _PROFILED_SRC, ns)["_profiled"]
    fn._codes = (gen, profiled.__code__)
    return fn


def _apply_plain(*args, **kwargs):  # type: ignore[no-untyped-def]  # noqa: ANN002, ANN003, ANN202
    """The code a generated ``apply`` runs in plain mode (jflow._codegen): its namespace's
    ``_PLAIN``, the :func:`_plain_apply` closure of its op."""
    return _PLAIN(args, kwargs)  # type: ignore[name-defined]  # noqa: F821


def _attr_key(a: Any) -> Callable[[Any], Any]:
    """The cache key part of one attr value (a generated ``apply``'s ``k(a)``): as True == 1
    in Python, a bool / int attr's key keeps the two apart."""
    if a.type == "bool":
        return lambda v: v if v.__class__ is bool or v is None else (v,)
    if a.type in ("int32", "int64"):
        return lambda v: v if v.__class__ is not bool else (v,)
    return lambda v: v


def _plain_apply(op: Any, cache: dict, build: Callable[..., Any]) -> Callable[[tuple, dict], Any]:
    """A generated ``apply``'s plain twin: the steps of :func:`make_apply`'s text, written once
    as a loop over the op's inputs and attrs (what ``JFLOW_CODEGEN=0`` runs)."""
    ins = op.inputs
    n_in = len(ins)
    params_in = [i.param for i in ins]
    attrs = op.attrs
    keys = [_attr_key(a) for a in attrs]
    single = len(op.outputs) == 1 and not op.outputs[0].variadic
    dyn = bool(op.dynamic_attrs)
    grad = bool(ins) and not op.has_trait("NoGrad")
    structured = op.structured
    fixed = structured and not any(i.variadic for i in ins)
    prim = op.primitive
    fname = f"{op.name}.apply"

    def bind(args: tuple, kwargs: dict) -> tuple[list, dict]:
        """The call's inputs and attrs, as CPython binds the generated signature."""
        if len(args) > n_in:
            raise TypeError(f"{fname}() takes {n_in} positional argument"
                            f"{'' if n_in == 1 else 's'} but {len(args)} were given")
        kw = dict(kwargs)
        inputs = list(args)
        for p in params_in[:len(args)]:
            if p in kw:
                raise TypeError(f"{fname}() got multiple values for argument '{p}'")
        for i in ins[len(args):]:
            if i.param in kw:
                inputs.append(kw.pop(i.param))
            elif i.optional:
                inputs.append(None)
            else:
                raise TypeError(f"{fname}() missing 1 required positional argument: "
                                f"'{i.param}'")
        given = {}
        for a in attrs:
            if a.name in kw:
                given[a.name] = kw.pop(a.name)
            elif a.default is REQUIRED:
                raise TypeError(f"{fname}() missing 1 required keyword-only argument: "
                                f"'{a.name}'")
            else:
                given[a.name] = a.default
        if kw:
            raise TypeError(f"{fname}() got an unexpected keyword argument '{next(iter(kw))}'")
        return inputs, given

    def apply(args: tuple, kwargs: dict) -> Any:
        inputs, given = bind(args, kwargs)
        try:
            return run(inputs, given)
        except AttributeError as e:
            _check_inputs(op, tuple(inputs))
            _drop_note(e)
            raise
        except Exception as e:
            _drop_note(e)
            raise

    def run(inputs: list, given: dict) -> Any:
        if ins and _WATCH[0] is not None:
            _WATCH[0](op, tuple(inputs))
        if fixed:
            layout = tuple(0 if x is None else 1 for x in inputs)
        elif structured:
            layout = op.layout_of(tuple(inputs))
        else:
            layout = None
        kparts = [k(given[a.name]) for k, a in zip(keys, attrs)]
        if structured:
            key = (layout, *kparts)
        else:
            key = kparts[0] if len(kparts) == 1 else tuple(kparts)
        try:
            entry = cache[key]
        except (KeyError, TypeError):
            entry = build(key, layout, **given)
        f, params = entry[0], entry[1]
        dv = entry[2] if dyn else ()
        if structured:  # the flat inputs: optional ones left out, variadic ones spread
            flat: Any = []
            for i, x in zip(ins, inputs):
                if i.variadic:
                    flat += x
                elif not i.optional or x is not None:
                    flat.append(x)
        else:
            flat = tuple(inputs)
        seg = _LAZY_LOCAL.active if _LAZY_HOOK[0] is not None else None
        if ins and seg is not None and _WATCH[0] is None:  # lazy mode: recorded, not run
            if not structured and single and n_in in (1, 2):  # (the fused recorders)
                rec = record_lazy1 if n_in == 1 else record_lazy2
                t = rec(seg, f, *inputs, dv, op if grad else None, params)
                if t is not NotImplemented:
                    return t
            else:
                t = seg.add(f, tuple(flat), dv, single)
                if t is not NotImplemented:
                    if grad and any(x._requires_grad for x in flat):
                        rec = record_single if single and structured else record
                        return rec(op, params, flat, t, dv)
                    return t
        # (the generated order: a structured op reads the values before its global test)
        if structured:
            vals = [x._value for x in flat]
        if ins and any(x._global is not None for x in flat):
            return global_apply(op, params, list(flat), single, dv)
        if not structured:
            vals = [x._value for x in flat]
        call = [*vals, *dv]
        if not any(isinstance(v, Tracer) for v in vals):
            if single:
                try:
                    t = _new_tensor(f(*call))
                except jax.errors.JaxRuntimeError:
                    _reraise_host_error(op, call)
                except TypeError:  # a meta input (jflow.meta): the abstract evaluation
                    t = _new_tensor(_abstract_bind(prim, params, call)[0])
            else:
                try:
                    t = tuple(map(_new_tensor, f(*call)))
                except jax.errors.JaxRuntimeError:
                    _reraise_host_error(op, call)
                except TypeError:
                    t = tuple(map(_new_tensor, _abstract_bind(prim, params, call)))
        else:
            t = _traced(prim, params, call, single)
        if grad and any(x._requires_grad for x in flat):
            if single and not structured and n_in in (1, 2):
                return (record1 if n_in == 1 else record2)(op, params, *inputs, t, dv)
            if single and structured:
                return record_single(op, params, flat, t, dv)
            return record(op, params, flat, t, dv)
        return t

    return apply


#: ``[fn or None]``: the active profiler's ``fn(op, body, args, kwargs)`` (jflow.profiler)
PROFILER: list[Any] = [None]

_PROFILED_SRC = ("def _profiled(*args, **kwargs):\n"
                 "    return _profiled_call(_op, _inner, args, kwargs)\n")


def _profiled_call(op: Any, body: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    hook = PROFILER[0]
    if hook is None:  # (a profiler stopping while another thread is in an op)
        return body(*args, **kwargs)
    return hook(op, body, args, kwargs)


def set_profiled(op: Any, on: bool) -> None:
    """Switch ``op.apply`` between its plain and its profiled code."""
    codes = getattr(op.apply, "_codes", None)
    if codes is not None:  # (off: the code of the current mode, generated or plain)
        op.apply.__code__ = codes[1] if on else _codegen.current_code(op.apply)


#: op -> {(attrs..., donated positions): executable} of :func:`donating_executable`
_DONATING: dict[Any, dict[Any, Any]] = {}


def donating_executable(op: Any, donate: tuple[int, ...], **attrs: Any) -> Callable[..., Any]:
    """``op``'s eager executable for ``attrs`` that *donates* its inputs at positions
    ``donate``: called on arrays, it returns the outputs' arrays, written into the donated
    inputs' buffers where shapes allow (XLA's input/output aliasing), and those inputs are
    deleted. For a caller that replaces the donated values by the results and knows nothing
    else reads them — an optimizer's per-parameter update of its parameter and state
    (``optim.Adam``): no new buffer per step, no old and new value at once. The caller passes
    concrete, local arrays (not tracers, lazy or global values) and takes ``op.apply``
    otherwise; the primitive's abstract evaluation checks shapes and dtypes as ``op.apply``'s
    does. Bounded cache per op (:data:`CACHE_SIZE`)."""
    if op.structured or op.dynamic_attrs:
        raise ValueError(f"donating_executable(): op '{op.name}' has optional or variadic "
                         f"inputs or dynamic attrs; only ops with fixed inputs and static "
                         f"attrs have one")
    cache = _DONATING.setdefault(op, {})
    key = (*attrs.items(), donate)
    f = cache.get(key)
    if f is None:
        f = _make_executable(op, op.normalize_attrs(attrs), donate)
        _store(cache, key, f)
    return f


def executables(op: Any) -> int:
    """How many executables ``op``'s eager dispatch holds now (tests count compiles)."""
    cache, build = op.apply._caches
    found = {id(e[0]) for e in cache.values()}
    found |= {id(e[0]) for e in getattr(build, "executables", {}).values()}
    return len(found)
