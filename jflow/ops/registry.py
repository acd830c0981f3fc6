"""Op declarations (OneFlow's ODS + ``REGISTER_USER_OP``): pure data, and the op registry.

An :class:`OpDef` says what an op *is* — inputs (single / optional / variadic), outputs,
typed attrs with defaults, traits, an attr check, a logical shape+dtype inference function
and SBP signatures — and knows how to validate attrs and run its inference. It knows nothing
of JAX's rules, kernels or dispatch: :mod:`jflow.ops.primitive` assembles the primitive from
this declaration, the kernel registry and the rule registry (``define_op`` lives there).

Params of a bind are the normalised attrs plus, when needed, two private params: ``_layout``
(how many arrays each declared input got: optional inputs 0/1, variadic ones n) and ``_vmap``
(in_axes of each enclosing vmap level, outermost first). A dynamic attr's param is the marker
``DYNAMIC`` and its value is a trailing operand of the bind, after the inputs (in declaration
order, one per dynamic attr whose param is ``DYNAMIC``): :meth:`OpDef.split_dynamic` takes
them apart, :meth:`OpDef.with_dynamic` puts the values back into the attrs.
"""

from __future__ import annotations

import difflib
import keyword as _keyword
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from jax import core
from jax.extend.core import Primitive

from ..dtypes import as_dtype
from ..tensor import Tensor
from .attrs import (
    ATTR_TYPES,
    DYNAMIC,
    DYNAMIC_BY_DEFAULT,
    DYNAMIC_TYPES,
    REQUIRED,
    normalize_attr,
    normalize_dynamic,
)

__all__ = ["Input", "Output", "Attr", "param_name", "OpDef", "declare_op", "register", "get",
           "list_ops", "TRAITS", "OpDefinitionError", "REQUIRED", "DYNAMIC", "strip_batch"]

TRAITS = frozenset({"NoSideEffect", "NoGrad", "CpuOnly"})
_PRIVATE_PARAMS = ("_layout", "_vmap")
#: Attr names JAX (0.10) itself passes as keyword arguments next to a primitive's params
#: (``Primitive.bind(self, ...)``, lowering-cache helpers): an attr with one of these names
#: would fail inside JAX with "got multiple values for argument".
JAX_RESERVED_PARAMS = frozenset({"self", "primitive", "effects", "ctx", "eqn", "cache_key",
                                 "avals_in", "avals_out", "inline"})


class OpDefinitionError(ValueError):
    """A bad op definition: raised by :func:`define_op` at definition time."""


@dataclass(frozen=True)
class Input:
    """An op input: a single tensor, an optional one, or a variadic list with a minimum."""

    name: str
    optional: bool = False
    variadic: bool = False
    min: int = 1

    @property
    def param(self) -> str:
        """The Python parameter name of the input in the op's ``apply`` (see :func:`param_name`)."""
        return param_name(self.name)

    def describe(self) -> str:
        """The input as it reads in a signature (``Tensor? x``, ``Tensor[] xs``)."""
        if self.variadic:
            return f"Tensor[>={self.min}] {self.name}"
        return f"Tensor{'?' if self.optional else ''} {self.name}"


@dataclass(frozen=True)
class Output:
    """An op output; a variadic output's count is decided by the inference function."""

    name: str
    variadic: bool = False

    def describe(self) -> str:
        """The output as it reads in a signature."""
        return f"Tensor{'[]' if self.variadic else ''} {self.name}"


@dataclass(frozen=True)
class Attr:
    """A typed attribute; ``default=None`` makes it optional, no default makes it required.

    ``static`` decides how a value reaches the executable. Static: it is part of the cached
    executable (a new value compiles a new one) and kernels see a Python value. Dynamic: it
    is a runtime scalar operand (a new value costs no compile) and kernels and backward rules
    see a 0-d array or tracer, for arithmetic only (cast it with ``jflow.ops.attrs.scalar_as``
    to round as a Python float would). ``None`` (the default) means dynamic for float/double
    and static for everything else; ``static=True`` is for a float that shapes something or
    drives Python control flow, ``static=False`` makes an int attr dynamic. Only scalar types
    can be dynamic; ``None`` values of an optional dynamic attr stay static.
    """

    name: str
    type: str
    default: Any = REQUIRED
    static: bool | None = None

    @property
    def dynamic(self) -> bool:
        if self.static is None:
            return self.type in DYNAMIC_BY_DEFAULT
        return not self.static and self.type in DYNAMIC_TYPES

    def describe(self) -> str:
        """The attr as it reads in a signature: ``type name=default``."""
        d = "" if self.default is REQUIRED else f"={self.default!r}"
        return f"{self.type} {self.name}{d}"


def param_name(name: str) -> str:
    """The Python parameter an input of this name becomes: ``in`` (OneFlow's usual input
    name, a Python keyword) becomes ``in_``; the op itself keeps ``in`` everywhere else
    (signature, errors, the builder, SBP, kernels)."""
    return name + "_" if _keyword.iskeyword(name) else name


def _as_input(x: Input | str) -> Input:
    return Input(x) if isinstance(x, str) else x


def _as_output(x: Output | str) -> Output:
    return Output(x) if isinstance(x, str) else x


def _to_np_dtype(d: Any) -> np.dtype:
    return as_dtype(d).np


@dataclass(eq=False)
class OpDef:
    """A registered op. ``op.apply(*tensors, **attrs)`` runs it; see :mod:`jflow.dispatch`."""

    name: str
    inputs: tuple[Input, ...]
    outputs: tuple[Output, ...]
    attrs: tuple[Attr, ...]
    infer: Callable[..., Any]
    traits: frozenset[str]
    check: Callable[..., None] | None
    sbp: Any
    doc: str
    primitive: Primitive = field(repr=False, default=None)  # type: ignore[assignment]
    apply: Callable[..., Any] = field(repr=False, default=None)  # type: ignore[assignment]
    #: True when some input is optional or variadic, so binds carry ``_layout``.
    structured: bool = False
    #: True for the ops jflow itself defines (the checker requires samples for all of them).
    builtin: bool = False
    #: The module whose code defined the op (``jflow.ops.<family>`` for a built-in op): where
    #: its declaration is, and the family its rule, samples and functors are filed under.
    module: str = ""
    #: The op's backward rule (:func:`jflow.autograd.register_backward`), if it has one.
    grad_rule: Any = field(repr=False, default=None)
    #: The linear primitive carrying the rule into JAX's autodiff (see autograd.jax_rules).
    linear_primitive: Primitive = field(repr=False, default=None)  # type: ignore[assignment]
    #: Names of the dynamic attrs (runtime scalar operands; see :class:`Attr`), in order.
    dynamic_attrs: tuple[str, ...] = ()
    #: ``flops(in_avals, out_avals)``: multiply-adds of one call (:mod:`jflow.ops.cost`), for
    #: the heavy ops that declare it; lazy mode weighs a forward by it (SPLIT_FLOPS).
    flops: Callable[..., int] | None = field(repr=False, default=None)

    # -- introspection ---------------------------------------------------------------
    def signature(self) -> str:
        """The op's declaration in one line: inputs, attrs, outputs, traits."""
        ins = ", ".join(i.describe() for i in self.inputs)
        attrs = ", ".join(a.describe() for a in self.attrs)
        outs = ", ".join(o.describe() for o in self.outputs)
        sep = ", *, " if attrs and ins else ("*, " if attrs else "")
        traits = f"  [{', '.join(sorted(self.traits))}]" if self.traits else ""
        return f"{self.name}({ins}{sep}{attrs}) -> ({outs}){traits}"

    def has_trait(self, trait: str) -> bool:
        """Whether the op declares ``trait`` (``NoGrad``, ``NoSideEffect``, ...)."""
        return trait in self.traits

    def __call__(self, /, *inputs: Any, **attrs: Any) -> Any:
        """Run the op on jflow tensors (checked entry; functors use the faster ``apply``)."""
        for i, (spec, x) in enumerate(zip(self.inputs, inputs)):
            where = f"op '{self.name}': input {i} ('{spec.name}')"
            if spec.variadic:
                if not isinstance(x, (list, tuple)):
                    raise TypeError(f"{where} is variadic: pass a list of jflow Tensors, "
                                    f"got {type(x).__name__}")
                bad = [type(t).__name__ for t in x if not isinstance(t, Tensor)]
                if bad:
                    raise TypeError(f"{where} must be a list of jflow Tensors, got an item of "
                                    f"type {bad[0]}")
            elif not isinstance(x, Tensor) and not (spec.optional and x is None):
                raise TypeError(f"{where} must be a jflow Tensor"
                                f"{' or None' if spec.optional else ''}, got {type(x).__name__}")
        return self.apply(*inputs, **attrs)

    def __repr__(self) -> str:
        return f"<jflow op {self.signature()}>"

    # -- attrs -------------------------------------------------------------------------
    def normalize_attrs(self, given: dict[str, Any]) -> dict[str, Any]:
        """Validate attrs (types, required ones, the check fn) and return canonical values."""
        out: dict[str, Any] = {}
        for a in self.attrs:
            v = given.get(a.name, a.default)
            if v is REQUIRED:
                raise TypeError(f"op '{self.name}': missing required attr '{a.name}' ({a.type})")
            try:
                if a.name in self.dynamic_attrs:
                    out[a.name] = normalize_dynamic(a.type, v, a.default is None)
                else:
                    out[a.name] = normalize_attr(a.type, v, a.default is None)
            except (TypeError, ValueError) as e:
                raise type(e)(f"op '{self.name}': attr '{a.name}' ({a.type}): {e}") from None
        unknown = set(given) - set(out)
        if unknown:
            raise TypeError(f"op '{self.name}' has no attr(s) {sorted(unknown)}; "
                            f"its attrs are {[a.name for a in self.attrs]}")
        # a traced dynamic value cannot be checked (its value is not known while tracing)
        traced = self.dynamic_attrs and any(isinstance(out[n], core.Tracer)
                                            for n in self.dynamic_attrs)
        if self.check is not None and not traced:
            try:
                self.check(**out)
            except (TypeError, ValueError, IndexError) as e:
                raise _renamed(e, self.name) from None
        return out

    # -- structure ---------------------------------------------------------------------
    def layout_of(self, structured_inputs: Sequence[Any]) -> tuple[int, ...]:
        """The layout of a call's inputs (which are absent, how long each variadic one is)."""
        lay = []
        for spec, x in zip(self.inputs, structured_inputs):
            if spec.variadic:
                if not isinstance(x, (list, tuple)):  # a Tensor would iterate over its rows
                    raise TypeError(f"op '{self.name}': variadic input '{spec.name}' must be a "
                                    f"list of tensors, got {type(x).__name__}")
                if len(x) < spec.min:
                    raise ValueError(f"op '{self.name}': input '{spec.name}' needs at least "
                                     f"{spec.min} tensors, got {len(x)}")
                lay.append(len(x))
            else:
                lay.append(0 if x is None else 1)
        return tuple(lay)

    def unflatten(self, flat: Sequence[Any], layout: tuple[int, ...] | None) -> list[Any]:
        """Flat bind args -> one entry per declared input (None / list for optional / variadic)."""
        if layout is None:
            return list(flat)
        out, i = [], 0
        for spec, n in zip(self.inputs, layout):
            if spec.variadic:
                out.append(list(flat[i:i + n]))
            else:
                out.append(flat[i] if n else None)
            i += n
        return out

    def split_params(self, params: dict[str, Any]) -> tuple[dict[str, Any], Any, tuple]:
        """Primitive params -> (attrs, layout, vmap axes): what a kernel or rule is given."""
        attrs = {k: v for k, v in params.items() if k not in _PRIVATE_PARAMS}
        return attrs, params.get("_layout"), params.get("_vmap", ())

    # -- dynamic attrs -------------------------------------------------------------------
    def dynamic_in(self, params: dict[str, Any]) -> tuple[str, ...]:
        """The dynamic attrs whose values are operands of a bind with ``params``."""
        if not self.dynamic_attrs:
            return ()
        return tuple(n for n in self.dynamic_attrs if params.get(n) is DYNAMIC)

    def split_dynamic(self, args: Sequence[Any], params: dict[str, Any]
                      ) -> tuple[list[Any], list[Any]]:
        """A bind's operands -> (the op's flat inputs, the dynamic attr values)."""
        n = len(self.dynamic_in(params))
        args = list(args)
        return (args[:len(args) - n], args[len(args) - n:]) if n else (args, [])

    def with_dynamic(self, params: dict[str, Any], values: Sequence[Any]) -> dict[str, Any]:
        """``params`` with each ``DYNAMIC`` marker replaced by its value (in order)."""
        names = self.dynamic_in(params)
        if not names:
            return params
        new = dict(params)
        new.update(zip(names, values))
        return new

    def infer_descs(self, in_avals: Sequence[Any], layout: Any, attrs: dict[str, Any]
                    ) -> list[core.ShapedArray]:
        """Run the inference function on per-example avals; normalise what it returns."""
        try:
            res = self.infer(*self.unflatten(in_avals, layout), **attrs)
        except (TypeError, ValueError, IndexError) as e:
            raise _renamed(e, self.name) from None
        return self._flatten_inferred(res)

    def _flatten_inferred(self, res: Any) -> list[core.ShapedArray]:
        """One desc per declared output (a list for a variadic one) -> flat ShapedArrays.

        A single declared output may be returned bare (or as a 1-tuple when not variadic);
        several outputs come as a tuple/list with one item per declared output.
        """
        def bad(msg: str) -> ValueError:
            return ValueError(f"op '{self.name}': inference function {msg} (outputs: "
                              f"{', '.join(o.describe() for o in self.outputs)})")

        outs = self.outputs
        if len(outs) == 1:
            if outs[0].variadic:
                if not isinstance(res, (list, tuple)):
                    raise bad(f"must return a list for the variadic output, got "
                              f"{type(res).__name__}")
                per_output: list[Any] = [list(res)]
            elif isinstance(res, (list, tuple)):
                if len(res) != 1:
                    raise bad(f"returned {len(res)} outputs, the op declares 1")
                per_output = [res[0]]
            else:
                per_output = [res]
        else:
            if not isinstance(res, (list, tuple)) or len(res) != len(outs):
                got = len(res) if isinstance(res, (list, tuple)) else 1
                raise bad(f"returned {got} outputs, the op declares {len(outs)}")
            per_output = list(res)
        flat: list[Any] = []
        for spec, item in zip(outs, per_output):
            if spec.variadic:
                if not isinstance(item, (list, tuple)):
                    raise bad(f"must return a list for variadic output '{spec.name}', got "
                              f"{type(item).__name__}")
                flat.extend(item)
            else:
                flat.append(item)
        result = []
        for d in flat:
            if not (hasattr(d, "shape") and hasattr(d, "dtype")):
                raise bad(f"must return objects with .shape and .dtype (e.g. "
                          f"jax.ShapeDtypeStruct), got {type(d).__name__}")
            try:
                dt = _to_np_dtype(d.dtype)
            except TypeError as e:
                raise TypeError(f"op '{self.name}': inference function returned an output "
                                f"of dtype {d.dtype}: {e}") from None
            result.append(core.ShapedArray(tuple(int(s) for s in d.shape), dt))
        return result


def _renamed(e: Exception, op_name: str) -> Exception:
    """``e`` with its message prefixed by ``op 'name': `` (kept as is if it already is); an
    exception class that cannot be rebuilt from a message becomes its builtin base class."""
    msg = str(e)
    if not msg.startswith(f"op '{op_name}'"):
        msg = f"op '{op_name}': {msg}"
    try:
        new = type(e)(msg)
        if str(new) == msg:
            return new
    except Exception:  # a constructor that takes other arguments
        pass
    for base in (IndexError, TypeError, ValueError):
        if isinstance(e, base):
            return base(msg)
    return ValueError(msg)


def strip_batch(avals: Sequence[Any], vmap: tuple) -> tuple[list[Any], list[int]]:
    """Per-example avals and batch sizes (outermost first) for a ``_vmap`` param."""
    avals = list(avals)
    sizes = []
    for axes in vmap:
        size = None
        for i, ax in enumerate(axes):
            if ax is not None:
                size = avals[i].shape[0]
                avals[i] = core.ShapedArray(avals[i].shape[1:], avals[i].dtype)
        sizes.append(size)
    return avals, sizes


_REGISTRY: dict[str, OpDef] = {}
_defining_builtins = False


class builtin_definitions:
    """Context in which jflow's own op modules are imported: their ops are marked builtin."""

    def __enter__(self) -> None:
        global _defining_builtins
        _defining_builtins = True

    def __exit__(self, *exc: object) -> None:
        global _defining_builtins
        _defining_builtins = False


def get(name: str) -> OpDef:
    """Look up a registered op by its op_type_name."""
    try:
        return _REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(_REGISTRY), n=3)
        hint = f"; did you mean {close}?" if close else ""
        raise KeyError(f"no jflow op named '{name}'{hint}") from None


def list_ops() -> list[str]:
    """Names of all registered ops, sorted."""
    return sorted(_REGISTRY)


def is_registered(name: str) -> bool:
    """Whether an op named ``name`` is registered."""
    return name in _REGISTRY


def unregister(name: str) -> OpDef | None:
    """Forget op ``name`` (a user's op being replaced: ``define_python_op(replace=True)``);
    returns its definition, or None if there was none. Its kernels are the kernel
    registry's to forget (``kernels.registry.forget_kernels``)."""
    return _REGISTRY.pop(name, None)


def _check_definition(name: str, inputs: tuple[Any, ...], outputs: tuple[Any, ...],
                      attrs: tuple[Any, ...], traits: frozenset[str], infer: Any,
                      check: Any) -> None:
    def fail(msg: str) -> None:
        raise OpDefinitionError(f"cannot define op '{name}': {msg}")

    if not isinstance(name, str) or not name.isidentifier():
        fail("op_type_name must be an identifier string")
    if name in _REGISTRY:
        if _REGISTRY[name].builtin:
            fail("an op with this name is already registered (it is a jflow built-in op; "
                 "choose another op_type_name)")
        fail("an op with this name is already registered")
    if not callable(infer):
        fail("an inference function (infer=) is required")
    if check is not None and not callable(check):
        fail(f"check= must be a function of the attrs, got {type(check).__name__}")
    unknown = traits - TRAITS
    if unknown:
        fail(f"unknown trait(s) {sorted(unknown)}; known traits are {sorted(TRAITS)}")
    for kind, items, cls in (("input", inputs, Input), ("output", outputs, Output),
                             ("attr", attrs, Attr)):
        for x in items:
            if not isinstance(x, cls):
                fail(f"each {kind} must be a name or a jflow.ops.{cls.__name__}, got {x!r}")
    names = [x.name for x in (*inputs, *outputs, *attrs)]
    for n in names:
        # they become Python parameter names of the op's generated ``apply``; an input or
        # output may be a keyword (OneFlow's "in"): its parameter is then "in_"
        if not isinstance(n, str) or not n.isidentifier():
            fail(f"input/output/attr names must be Python identifiers, got {n!r}")
        if n.startswith("_"):
            fail(f"names starting with '_' are reserved: '{n}'")
    for a in attrs:
        if _keyword.iskeyword(a.name):
            fail(f"attr names must not be Python keywords (attrs are keyword arguments of the "
                 f"op's call), got {a.name!r}")
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        fail(f"duplicate input/output/attr name(s) {sorted(dup)}")
    for x in (*inputs, *outputs):
        if param_name(x.name) != x.name and param_name(x.name) in names:
            fail(f"'{x.name}' is a Python keyword, so its parameter is named "
                 f"'{param_name(x.name)}', which is also the name of another input/output/attr")
    for a in attrs:
        if a.name in JAX_RESERVED_PARAMS:
            fail(f"attr name '{a.name}' is reserved: JAX passes an argument of that name next "
                 f"to primitive params (reserved: {sorted(JAX_RESERVED_PARAMS)})")
    seen_optional = None
    for i in inputs:
        if i.optional:
            seen_optional = i.name
        elif seen_optional is not None:
            # inputs are Python parameters of the op's ``apply``; optional ones default to None
            fail(f"input '{i.name}' follows optional input '{seen_optional}'; put optional "
                 f"inputs last")
        if i.variadic and i.optional:
            fail(f"input '{i.name}' cannot be both optional and variadic")
        if i.variadic and (isinstance(i.min, bool) or not isinstance(i.min, int) or i.min < 0):
            fail(f"input '{i.name}': variadic minimum must be an int >= 0, got {i.min!r}")
    if not outputs:
        fail("an op needs at least one output")
    if sum(o.variadic for o in outputs) > 1:
        # outputs are flat at the primitive level: two variadic counts could not be told apart
        fail("at most one output can be variadic")
    for a in attrs:
        if a.type not in ATTR_TYPES:
            fail(f"attr '{a.name}' has unknown type '{a.type}'; "
                 f"known types are {sorted(ATTR_TYPES)}")
        if a.static is not None and not isinstance(a.static, bool):
            fail(f"attr '{a.name}': static= must be True, False or None, got {a.static!r}")
        if a.static is False and a.type not in DYNAMIC_TYPES:
            fail(f"attr '{a.name}' ({a.type}) cannot be dynamic: only scalar types "
                 f"{sorted(DYNAMIC_TYPES)} can be runtime operands")
        if a.default is REQUIRED or a.default is None:
            continue
        try:
            normalize_attr(a.type, a.default, False)
        except (TypeError, ValueError) as e:
            fail(f"default {a.default!r} of attr '{a.name}' is not a valid {a.type}: {e}")


def declare_op(
    name: str,
    *,
    inputs: Iterable[Input | str] = (),
    outputs: Iterable[Output | str] = ("out",),
    attrs: Iterable[Attr] = (),
    infer: Callable[..., Any],
    traits: Iterable[str] = ("NoSideEffect",),
    check: Callable[..., None] | None = None,
    sbp: Any = None,
    doc: str = "",
    module: str = "",
    flops: Callable[..., int] | None = None,
) -> OpDef:
    """Validate a declaration and return its :class:`OpDef` (not yet registered, no primitive).

    ``infer(*inputs, **attrs)`` receives one aval (``.shape``/``.dtype``) per declared input
    (``None`` for an absent optional, a list for a variadic one) and returns one object with
    ``.shape`` and ``.dtype`` per output (a list for a variadic output), e.g.
    ``jax.ShapeDtypeStruct``. ``check(**attrs)`` raises ``ValueError`` for bad attr values.
    ``sbp`` holds the op's SBP signatures (a list, or a function of the inputs' ndims).
    ``flops(in_avals, out_avals)`` estimates one call's multiply-adds (:mod:`jflow.ops.cost`;
    matrix products, convolutions, attention declare one).
    """
    if flops is not None and not callable(flops):
        raise OpDefinitionError(f"cannot define op '{name}': flops= must be a function of "
                                f"(input avals, output avals), got {type(flops).__name__}")
    for what, v in (("inputs", inputs), ("outputs", outputs), ("attrs", attrs),
                    ("traits", traits)):
        if isinstance(v, str):
            raise OpDefinitionError(f"cannot define op '{name}': {what}= must be a list, "
                                    f"got the string {v!r}")
    ins = tuple(_as_input(i) for i in inputs)
    outs = tuple(_as_output(o) for o in outputs)
    attrs_t = tuple(attrs)
    traits_f = frozenset(traits)
    _check_definition(name, ins, outs, attrs_t, traits_f, infer, check)
    return OpDef(name=name, inputs=ins, outputs=outs, attrs=attrs_t, infer=infer,
                 traits=traits_f, check=check, sbp=sbp, doc=doc,
                 structured=any(i.optional or i.variadic for i in ins),
                 builtin=_defining_builtins, module=module,
                 dynamic_attrs=tuple(a.name for a in attrs_t if a.dynamic), flops=flops)


def register(op: OpDef) -> OpDef:
    """Add an assembled op to the registry (its name must still be free)."""
    if op.name in _REGISTRY:
        raise OpDefinitionError(f"cannot define op '{op.name}': an op with this name is "
                                f"already registered")
    _REGISTRY[op.name] = op
    return op
