"""``=> op:name``: a functional-API signature bound straight to an op's ``apply``.

Many functors did nothing but call one op with their arguments. Where the yaml signature
already says everything, it names the op instead of a functor (``"Tensor (Tensor x, Float
alpha) => op:elu"``) and the generated parser calls ``op.apply`` itself: the parameters named
after the op's inputs are passed positionally in the op's input order (an optional input the
signature leaves out is passed as None), those named after attrs as keywords. Where the API's
name differs from the op's (PyTorch's ``input``, OneFlow's ``x``: both are public, in
``flow._C`` keywords and in ``user_op_builder(...).Input("x", ...)``), the target pairs them:
``=> op:relu(x=input)``.

A parameter naming an attr that has a default may leave ``=default`` out: the op's default
applies, so the value is written once, on the op. Everything is checked when the yaml is
loaded, with an :class:`ApiYamlError` naming the entry: the op exists, every parameter is an
input (``Tensor``, ``TensorTuple`` for a variadic one) or an attr of a compatible type, every
required input and attr is a parameter, and the return type fits the op's outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..ops.attrs import REQUIRED
from ..ops.registry import OpDef
from ..ops.registry import get as get_op
from .signature import ApiYamlError, Param, Signature, check_default_order, convert_default

__all__ = ["bind_op", "op_apply", "op_args", "op_call_source"]

#: The op attr types a yaml parameter type can carry (the attr normalises the value).
_ATTR_TYPES_OF = {
    "Bool": {"bool"},
    "Int32": {"int32", "int64"},
    "Int64": {"int32", "int64"},
    "Float": {"float", "double"},
    "Double": {"float", "double"},
    "Scalar": {"float", "double", "int32", "int64"},
    "String": {"string"},
    "Int32List": {"int32_list", "int64_list", "shape"},
    "Int64List": {"int32_list", "int64_list", "shape"},
    "Shape": {"int32_list", "int64_list", "shape"},
    "FloatList": {"float_list"},
    "DataType": {"dtype"},
}


def _op(sig: Signature, where: str) -> OpDef:
    try:
        return get_op(sig.op)
    except KeyError:
        raise ApiYamlError(f"{where}: signature {sig.text!r} binds unknown op "
                           f"'{sig.op}'") from None


def op_args(sig: Signature) -> list[str]:
    """The op input or attr each parameter of a bound signature carries: its own name, or
    the one ``op:name(arg=param)`` pairs it with."""
    arg_of = {param: arg for arg, param in sig.op_names}
    return [arg_of.get(p.name, p.name) for p in sig.params]


def _check_names(sig: Signature, where: str) -> None:
    """``arg=param`` pairs name parameters of the signature, and no op argument is given
    twice (by a pair and by a parameter of that name)."""
    params = [p.name for p in sig.params]
    for arg, param in sig.op_names:
        if param not in params:
            raise ApiYamlError(f"{where}: op argument '{arg}={param}' of {sig.text!r} names no "
                               f"parameter of the signature")
    args = op_args(sig)
    dup = sorted({a for a in args if args.count(a) > 1})
    if dup:
        raise ApiYamlError(f"{where}: op argument '{dup[0]}' is given by two parameters of "
                           f"{sig.text!r}")


def _check_param(p: Param, arg: str, op: OpDef, sig: Signature, where: str) -> None:
    """``p`` carries input ``arg`` of the op (with a tensor type) or attr ``arg`` (of a
    compatible type)."""
    inputs = {i.name: i for i in op.inputs}
    attrs = {a.name: a for a in op.attrs}
    if arg in inputs:
        want = "TensorTuple" if inputs[arg].variadic else "Tensor"
        if p.type != want:
            raise ApiYamlError(f"{where}: parameter '{p.name}' of {sig.text!r} is input "
                               f"'{arg}' of op '{op.name}', so its type must be {want}, "
                               f"not {p.type}")
    elif arg in attrs:
        a = attrs[arg]
        if a.type not in _ATTR_TYPES_OF.get(p.type, ()):
            raise ApiYamlError(f"{where}: parameter '{p.name}' of {sig.text!r} is attr "
                               f"'{arg}' ({a.type}) of op '{op.name}', which a {p.type} "
                               f"cannot carry")
    else:
        via = "" if arg == p.name else f" (as '{arg}')"
        raise ApiYamlError(f"{where}: parameter '{p.name}'{via} of {sig.text!r} is neither an "
                           f"input nor an attr of op '{op.name}' (inputs "
                           f"{list(inputs)}, attrs {list(attrs)})")


def _with_op_default(p: Param, arg: str, op: OpDef, where: str) -> Param:
    """``p`` with the default of the attr it carries, when the yaml leaves it out."""
    attr = next((a for a in op.attrs if a.name == arg), None)
    if p.has_default or attr is None or attr.default is REQUIRED:
        return p
    src = repr(attr.default)
    return replace(p, default=convert_default(where, p.type, p.name, p.size, src),
                   default_src=src)


def _check_required(sig: Signature, op: OpDef, where: str) -> None:
    names = set(op_args(sig))
    missing = [i.name for i in op.inputs if not i.optional and i.name not in names]
    missing += [a.name for a in op.attrs if a.default is REQUIRED and a.name not in names]
    if missing:
        raise ApiYamlError(f"{where}: signature {sig.text!r} leaves out {missing}, which op "
                           f"'{op.name}' requires")


def _check_return(sig: Signature, op: OpDef, where: str) -> None:
    outs = op.outputs
    single = len(outs) == 1 and not outs[0].variadic
    if sig.ret == "Tensor" and single:
        return
    if sig.ret == "TensorTuple" and not single:
        if sig.ret_names is None or (len(sig.ret_names) == len(outs)
                                     and not any(o.variadic for o in outs)):
            return
    raise ApiYamlError(f"{where}: signature {sig.text!r} returns {sig.ret}"
                       f"{list(sig.ret_names) if sig.ret_names else ''}, but op '{op.name}' "
                       f"returns {[o.describe() for o in outs]}")


def bind_op(sig: Signature, where: str) -> Signature:
    """Check an ``=> op:name`` signature against its op and fill in the defaults it takes
    from the op's attrs; other signatures are returned as they are."""
    if sig.op is None:
        return sig
    op = _op(sig, where)
    _check_names(sig, where)
    args = op_args(sig)
    for p, arg in zip(sig.params, args):
        _check_param(p, arg, op, sig, where)
    _check_required(sig, op, where)
    _check_return(sig, op, where)
    params = tuple(_with_op_default(p, arg, op, where) for p, arg in zip(sig.params, args))
    check_default_order(where, params, sig.text)
    return replace(sig, params=params)


def op_apply(sig: Signature) -> Callable[..., Any]:
    """The callable a bound signature calls: its op's ``apply``."""
    return get_op(sig.op).apply


def op_call_source(sig: Signature, fn: str, args: Sequence[str]) -> str:
    """The call of a bound signature's op in generated code: ``fn`` names ``op.apply``,
    ``args`` holds the source expression of each parameter of ``sig``."""
    op = get_op(sig.op)
    given = dict(zip(op_args(sig), args))
    ins = [given.get(i.name, "None") for i in op.inputs]
    kws = [f"{a.name}={given[a.name]}" for a in op.attrs if a.name in given]
    return f"{fn}({', '.join(ins + kws)})"
