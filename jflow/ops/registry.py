"""Op definitions (OneFlow's ODS + ``REGISTER_USER_OP``) and the primitive each one becomes.

:func:`define_op` declares an op — inputs (single / optional / variadic), outputs, typed attrs
with defaults, traits, an attr check, a logical shape+dtype inference function and SBP
signatures — and turns it into exactly one ``jax.extend.core.Primitive``:

* abstract eval  = the inference function (what ``jax.jit`` / ``jax.eval_shape`` see);
* impl           = the cached eager executable (``jflow.dispatch``);
* lowering       = per platform, the best kernel from ``jflow.kernels`` (chosen at lowering);
* batching       = one generic rule: the batch axes become the ``_vmap`` param and the kernel
  is lowered under ``jax.vmap``, so every backend (xla, python, pallas, ffi) batches exactly.

Params of a bind are the normalised attrs plus, when needed, two private params: ``_layout``
(how many arrays each declared input got: optional inputs 0/1, variadic ones n) and ``_vmap``
(in_axes of each enclosing vmap level, outermost first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
from jax import core
from jax.extend.core import Primitive
from jax.interpreters import batching

from .attrs import ATTR_TYPES, REQUIRED, normalize_attr

__all__ = ["Input", "Output", "Attr", "OpDef", "define_op", "get", "list_ops", "TRAITS",
           "OpDefinitionError", "REQUIRED"]

TRAITS = frozenset({"NoSideEffect", "NoGrad", "CpuOnly"})
_PRIVATE_PARAMS = ("_layout", "_vmap")


class OpDefinitionError(ValueError):
    """A bad op definition: raised by :func:`define_op` at definition time."""


@dataclass(frozen=True)
class Input:
    """An op input: a single tensor, an optional one, or a variadic list with a minimum."""

    name: str
    optional: bool = False
    variadic: bool = False
    min: int = 1

    def describe(self) -> str:
        if self.variadic:
            return f"Tensor[>={self.min}] {self.name}"
        return f"Tensor{'?' if self.optional else ''} {self.name}"


@dataclass(frozen=True)
class Output:
    """An op output; a variadic output's count is decided by the inference function."""

    name: str
    variadic: bool = False

    def describe(self) -> str:
        return f"Tensor{'[]' if self.variadic else ''} {self.name}"


@dataclass(frozen=True)
class Attr:
    """A typed attribute; ``default=None`` makes it optional, no default makes it required."""

    name: str
    type: str
    default: Any = REQUIRED

    def describe(self) -> str:
        d = "" if self.default is REQUIRED else f"={self.default!r}"
        return f"{self.type} {self.name}{d}"


def _as_input(x: Input | str) -> Input:
    return Input(x) if isinstance(x, str) else x


def _as_output(x: Output | str) -> Output:
    return Output(x) if isinstance(x, str) else x


def _to_np_dtype(d: Any) -> np.dtype:
    from ..dtypes import as_dtype
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

    # -- introspection ---------------------------------------------------------------
    def signature(self) -> str:
        ins = ", ".join(i.describe() for i in self.inputs)
        attrs = ", ".join(a.describe() for a in self.attrs)
        outs = ", ".join(o.describe() for o in self.outputs)
        sep = ", *, " if attrs and ins else ("*, " if attrs else "")
        traits = f"  [{', '.join(sorted(self.traits))}]" if self.traits else ""
        return f"{self.name}({ins}{sep}{attrs}) -> ({outs}){traits}"

    def has_trait(self, trait: str) -> bool:
        return trait in self.traits

    def __call__(self, *inputs: Any, **attrs: Any) -> Any:
        """Run the op on jflow tensors (checked entry; functors use the faster ``apply``)."""
        from ..tensor import Tensor
        for i, x in enumerate(inputs):
            items = x if isinstance(x, (list, tuple)) else [x]
            for t in items:
                if t is not None and not isinstance(t, Tensor):
                    raise TypeError(f"op '{self.name}': input {i} must be a jflow Tensor, "
                                    f"got {type(t).__name__}")
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
                out[a.name] = normalize_attr(a.type, v, a.default is None)
            except (TypeError, ValueError) as e:
                raise type(e)(f"op '{self.name}': attr '{a.name}' ({a.type}): {e}") from None
        unknown = set(given) - set(out)
        if unknown:
            raise TypeError(f"op '{self.name}' has no attr(s) {sorted(unknown)}; "
                            f"its attrs are {[a.name for a in self.attrs]}")
        if self.check is not None:
            try:
                self.check(**out)
            except (TypeError, ValueError) as e:
                raise type(e)(f"op '{self.name}': {e}") from None
        return out

    # -- structure ---------------------------------------------------------------------
    def layout_of(self, structured_inputs: Sequence[Any]) -> tuple[int, ...]:
        lay = []
        for spec, x in zip(self.inputs, structured_inputs):
            if spec.variadic:
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
        attrs = {k: v for k, v in params.items() if k not in _PRIVATE_PARAMS}
        return attrs, params.get("_layout"), params.get("_vmap", ())

    def infer_descs(self, in_avals: Sequence[Any], layout: Any, attrs: dict[str, Any]
                    ) -> list[core.ShapedArray]:
        """Run the inference function on per-example avals; normalise what it returns."""
        try:
            res = self.infer(*self.unflatten(in_avals, layout), **attrs)
        except (TypeError, ValueError) as e:
            msg = str(e)
            if not msg.startswith(f"op '{self.name}'"):
                msg = f"op '{self.name}': {msg}"
            raise type(e)(msg) from None
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

    # -- primitive rules -------------------------------------------------------------------
    def _abstract_eval(self, *avals: core.ShapedArray, **params: Any) -> list[core.ShapedArray]:
        attrs, layout, vmap = self.split_params(params)
        per_example, sizes = _strip_batch(avals, vmap)
        outs = self.infer_descs(per_example, layout, attrs)
        if sizes:
            outs = [core.ShapedArray(tuple(sizes) + o.shape, o.dtype) for o in outs]
        return outs

    def _batch_rule(self, args: Sequence[Any], dims: Sequence[Any], **params: Any):
        axes = tuple(None if d is None else 0 for d in dims)
        moved = [a if d is None or d == 0 else jax.numpy.moveaxis(a, d, 0)
                 for a, d in zip(args, dims)]
        new = dict(params)
        new["_vmap"] = (axes,) + tuple(params.get("_vmap", ()))
        outs = self.primitive.bind(*moved, **new)
        return outs, [0] * len(outs)


def _strip_batch(avals: Sequence[Any], vmap: tuple) -> tuple[list[Any], list[int]]:
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
        import difflib
        close = difflib.get_close_matches(name, list(_REGISTRY), n=3)
        hint = f"; did you mean {close}?" if close else ""
        raise KeyError(f"no jflow op named '{name}'{hint}") from None


def list_ops() -> list[str]:
    """Names of all registered ops, sorted."""
    return sorted(_REGISTRY)


def _check_definition(name: str, inputs: tuple[Input, ...], outputs: tuple[Output, ...],
                      attrs: tuple[Attr, ...], traits: frozenset[str], infer: Any) -> None:
    def fail(msg: str) -> None:
        raise OpDefinitionError(f"cannot define op '{name}': {msg}")

    if not isinstance(name, str) or not name.isidentifier():
        fail("op_type_name must be an identifier string")
    if name in _REGISTRY:
        fail("an op with this name is already registered")
    if not callable(infer):
        fail("an inference function (infer=) is required")
    unknown = traits - TRAITS
    if unknown:
        fail(f"unknown trait(s) {sorted(unknown)}; known traits are {sorted(TRAITS)}")
    names = [x.name for x in (*inputs, *outputs, *attrs)]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        fail(f"duplicate input/output/attr name(s) {sorted(dup)}")
    for n in names:
        if n.startswith("_"):
            fail(f"names starting with '_' are reserved: '{n}'")
    for i in inputs:
        if i.variadic and i.optional:
            fail(f"input '{i.name}' cannot be both optional and variadic")
        if i.variadic and i.min < 0:
            fail(f"input '{i.name}': variadic minimum must be >= 0")
    if not outputs:
        fail("an op needs at least one output")
    for a in attrs:
        if a.type not in ATTR_TYPES:
            fail(f"attr '{a.name}' has unknown type '{a.type}'; "
                 f"known types are {sorted(ATTR_TYPES)}")
        if a.default is REQUIRED or a.default is None:
            continue
        try:
            normalize_attr(a.type, a.default, False)
        except (TypeError, ValueError) as e:
            fail(f"default {a.default!r} of attr '{a.name}' is not a valid {a.type}: {e}")


def define_op(
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
) -> OpDef:
    """Declare an op and create its primitive.

    ``infer(*inputs, **attrs)`` receives one aval (``.shape``/``.dtype``) per declared input
    (``None`` for an absent optional, a list for a variadic one) and returns one object with
    ``.shape`` and ``.dtype`` per output (a list for a variadic output), e.g.
    ``jax.ShapeDtypeStruct``. ``check(**attrs)`` raises ``ValueError`` for bad attr values.
    ``sbp`` holds the op's SBP signatures (a list, or a function of the inputs' ndims).
    """
    from .. import dispatch
    from ..kernels import registry as kernels

    ins = tuple(_as_input(i) for i in inputs)
    outs = tuple(_as_output(o) for o in outputs)
    attrs_t = tuple(attrs)
    traits_f = frozenset(traits)
    _check_definition(name, ins, outs, attrs_t, traits_f, infer)

    op = OpDef(name=name, inputs=ins, outputs=outs, attrs=attrs_t, infer=infer,
               traits=traits_f, check=check, sbp=sbp, doc=doc,
               structured=any(i.optional or i.variadic for i in ins),
               builtin=_defining_builtins)
    prim = Primitive(f"jflow.{name}")
    prim.multiple_results = True
    prim.def_abstract_eval(op._abstract_eval)
    prim.def_impl(dispatch.primitive_impl(op))
    batching.primitive_batchers[prim] = op._batch_rule
    op.primitive = prim
    kernels.install_lowerings(op)
    op.apply = dispatch.make_apply(op)
    _REGISTRY[name] = op
    return op
