"""Ops whose kernels are NumPy functions (OneFlow's "Python Kernel").

OneFlow's seed ``user_relu`` declares two ops (``user_relu_forward`` and its backward op) and
computes both with a module holding ``forward(args)`` and ``backward(args)`` on NumPy arrays.
:func:`define_python_op` does the same in one call, with jflow's parts underneath:

* the op itself (:func:`jflow.ops.define_op`), whose inference gives the output shapes;
* a ``python`` kernel (``jax.pure_callback``) calling ``forward(args)``;
* a grad op ``<name>_grad`` whose python kernel calls ``backward(args)``;
* the op's backward rule, which calls the grad op.

So the op works eagerly, under ``jax.jit`` and ``jax.vmap``, on the tape
(``y.sum().backward()``) and under ``jax.grad`` / ``jax.vjp`` — everything reverse mode needs.
A NumPy backward is opaque to JAX, so it cannot itself be differentiated: forward mode
(``jax.jvp``) and higher-order gradients raise an error that says so. Write the backward
rule with jflow ops (``register_backward``) when you need those.

Kernel outputs are checked against the op's inference by the kernel registry: a ``forward``
or ``backward`` that returns the wrong shape or dtype is an error naming the op and the
function (eagerly a ``ValueError``; under the user's ``jax.jit`` JAX's ``JaxRuntimeError``,
whose message carries the same text).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ..autograd.rule import GradientNotFoundError, register_backward
from ..kernels import registry as _kernel_registry
from ..kernels.registry import PLATFORMS, register_kernel
from . import registry as _op_registry
from .infer import desc
from .primitive import define_op
from .registry import Attr, Input, OpDef, OpDefinitionError, Output, get

__all__ = ["define_python_op", "INPUT_SHAPES_ATTR", "INPUT_DTYPES_ATTR", "seed_name"]

#: Attrs of the grad op: the forward inputs' (per-example) shapes and dtypes, which are the
#: shapes and dtypes of the gradients the NumPy backward returns (its inference).
INPUT_SHAPES_ATTR = "input_shapes"
INPUT_DTYPES_ATTR = "input_dtypes"


def _kernel_name(fn: Callable[..., Any]) -> str:
    """``<module stem>.<function>``: how errors name the user's NumPy function."""
    mod = str(getattr(fn, "__module__", "") or "").rsplit(".", 1)[-1]
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return f"{mod}.{qual}" if mod and mod != "__main__" else str(qual)


def _call(fn: Callable[..., Any], arrays: Sequence[np.ndarray], attrs: dict[str, Any]) -> Any:
    """The seeds' calling convention ``fn(args)``; the op's attrs, if any, as keywords."""
    return fn(tuple(arrays), **attrs) if attrs else fn(tuple(arrays))


def _same_as_first_input(n_out: int) -> Callable[..., Any]:
    def infer(*avals: Any, **attrs: Any) -> Any:
        d = desc(avals[0].shape, avals[0].dtype)
        return d if n_out == 1 else tuple(d for _ in range(n_out))
    return infer


#: What each python op was defined with (op name -> parts), so that running the defining
#: code again (a notebook cell) can tell an identical definition from a different one.
_DEFINITIONS: dict[str, dict[str, Any]] = {}


#: The seeds' names of a python op's one input and output (OneFlow's ``in`` / ``out``, as in
#: ``user_relu``'s builder calls) -> define_python_op's default names.
_SEED_NAMES = {"input": ("in", "x"), "output": ("out", "y")}


def seed_name(op_name: str, kind: str, name: str) -> str:
    """The declared name the builder should use for ``name``: ``in`` / ``out`` mean ``x`` /
    ``y`` for a python op that kept the default single input ``x`` / output ``y`` (so the
    seeds' ``.Input("in", [x]).Output("out")`` runs it); any other name is itself."""
    parts = _DEFINITIONS.get(op_name)
    seed, default = _SEED_NAMES[kind]
    if parts is None or name != seed:
        return name
    declared = [getattr(d, "name", d) for d in parts["inputs" if kind == "input" else "outputs"]]
    return default if declared == [default] else name


def _same(a: Any, b: Any) -> bool:
    """Equality that never raises (closure cells may hold arrays, whose ``==`` is elementwise)."""
    if a is b:
        return True
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an undecidable comparison counts as different
        return False


def _fn_key(fn: Any) -> Any:
    """A function as compared across definitions: its code (equal when a cell is re-run),
    defaults and closure values; anything else (a callable object) as itself."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return fn
    try:
        cells = tuple(c.cell_contents for c in (fn.__closure__ or ()))
    except ValueError:  # an empty cell
        return fn
    return (code, fn.__defaults__, fn.__kwdefaults__, cells)


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [k for k in new if not _same(old.get(k), new[k])]


def _remove_python_op(name: str) -> None:
    """Forget python op ``name`` and its grad op (``replace=True``): registry entries,
    kernels, and every compiled executable that may hold their old kernels. The old
    :class:`OpDef` objects stop working with an error saying what replaced them."""
    parts = _DEFINITIONS.pop(name)
    names = (name, parts["grad_op_name"])
    for n in names:
        old = _op_registry.unregister(n)
        if old is not None and old.apply is not None:
            caches = getattr(old.apply, "_caches", None)
            if caches is not None:
                caches[0].clear()
            old.apply = _replaced(n)
    # jitted functions traced with the old primitive (jax.jit, flow.jit, eager executables)
    # must retrace: a cached executable would run the old kernel
    _kernel_registry.forget_kernels(names)


def _replaced(name: str) -> Callable[..., Any]:
    def apply(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"op '{name}' was redefined by define_python_op(..., replace=True); "
                           f"this is the old definition: use the op that call returned, or "
                           f"jflow.ops.get('{name}')")
    return apply


def _unique(base: str, fallback: str, taken: set[str]) -> str:
    name = base if base not in taken else fallback
    if name in taken:
        raise OpDefinitionError(f"cannot name a gradient '{base}' or '{fallback}': both are "
                                f"taken ({sorted(taken)})")
    taken.add(name)
    return name


def define_python_op(
    name: str,
    forward: Callable[..., Any],
    backward: Callable[..., Any] | None = None,
    *,
    inputs: Iterable[Input | str] = ("x",),
    outputs: Iterable[Output | str] = ("y",),
    attrs: Iterable[Attr] = (),
    infer: Callable[..., Any] | None = None,
    save: Iterable[str] | None = None,
    traits: Iterable[str] = ("NoSideEffect",),
    check: Callable[..., None] | None = None,
    sbp: Any = None,
    grad_sbp: Any = None,
    platforms: Iterable[str] = PLATFORMS,
    grad_op_name: str | None = None,
    doc: str = "",
    replace: bool = False,
) -> OpDef:
    """Define op ``name`` computed by NumPy ``forward(args)`` (and ``backward(args)``).

    ``forward(args)`` gets a tuple of NumPy arrays, one per input, and returns the output
    (a tuple of arrays for several outputs). ``backward(args)`` gets the tensors named in
    ``save`` (default: the op's outputs) followed by one output gradient per output — the
    seeds' ``(y, dy)`` — and returns one gradient per input (``None`` = zeros). If the op
    has attrs they are passed to both as keywords: ``forward(args, alpha=0.1)``.

    ``infer`` is the op's shape/dtype inference as in :func:`define_op` (default: every
    output like the first input); jflow gives its shapes to ``jax.pure_callback`` and checks
    what the NumPy functions return against it. The gradients' shapes and dtypes are the
    inputs'. Without ``backward`` the op has no backward rule (differentiating it raises
    "the gradient function ... is not found" unless ``traits`` has "NoGrad").

    ``sbp`` / ``grad_sbp`` are the SBP signatures of the op and of its grad op (inputs: the
    saved tensors, then the output gradients). Without them global tensors are gathered and
    the NumPy function sees whole tensors; with them it runs per shard. ``grad_sbp`` needs
    every input in ``save`` (the gradients' shapes are then read from the saved inputs).

    Defining ``name`` again in the same process (re-running a notebook cell) returns the
    existing op when the definition is identical (same functions' code, closure values and
    every other argument); a different definition is an error unless ``replace=True``, which
    drops the old op, its grad op, kernels and compiled executables first (the old op
    object then raises if called).

    Returns the op; its grad op is ``jflow.ops.get(grad_op_name or name + "_grad")``.
    """
    def fail(msg: str) -> None:
        raise OpDefinitionError(f"cannot define python op '{name}': {msg}")

    if not callable(forward):
        fail(f"forward must be a function forward(args) on NumPy arrays, got "
             f"{type(forward).__name__}")
    if backward is not None and not callable(backward):
        fail(f"backward must be a function backward(args) on NumPy arrays or None, got "
             f"{type(backward).__name__}")
    for what, v in (("inputs", inputs), ("outputs", outputs), ("traits", traits),
                    ("save", save)):
        if isinstance(v, str):
            fail(f"{what}= must be a list, got the string {v!r}")
    ins = [Input(i) if isinstance(i, str) else i for i in inputs]
    outs = [Output(o) if isinstance(o, str) else o for o in outputs]
    attrs_t = tuple(attrs)
    for i in ins:
        if isinstance(i, Input) and (i.optional or i.variadic):
            fail(f"input '{i.name}': python ops take plain tensor inputs (no optional or "
                 f"variadic ones); use define_op + register_kernel(backend='python') for those")
    for o in outs:
        if isinstance(o, Output) and o.variadic:
            fail(f"output '{o.name}': python ops have a fixed number of outputs")
    if infer is None:
        if not ins:
            fail("an op without inputs needs infer= (there is no input to copy the shape of)")
        infer = _same_as_first_input(len(outs))
    platforms = (platforms,) if isinstance(platforms, str) else tuple(platforms)
    traits = tuple(traits)
    grad_name = grad_op_name or f"{name}_grad"
    if not isinstance(replace, bool):
        fail(f"replace= must be True or False, got {replace!r}")
    parts = {"forward": _fn_key(forward), "backward": _fn_key(backward), "inputs": tuple(ins),
             "outputs": tuple(outs), "attrs": attrs_t, "infer": _fn_key(infer),
             "save": None if save is None else tuple(save), "traits": traits,
             "check": _fn_key(check), "sbp": sbp, "grad_sbp": grad_sbp,
             "platforms": platforms, "grad_op_name": grad_name, "doc": doc}
    # the op's own name first: when the op already exists, its grad op does too, and the
    # remedy is replace=, not grad_op_name=
    if isinstance(name, str) and _op_registry.is_registered(name):
        old = _DEFINITIONS.get(name)
        if old is None:
            kind = ("a jflow built-in op" if get(name).builtin
                    else "not a python op: replace= only replaces define_python_op's ops")
            raise OpDefinitionError(f"cannot define op '{name}': an op with this name is "
                                    f"already registered ({kind}); choose another name")
        diff = _differences(old, parts)
        if not diff:
            return get(name)
        if not replace:
            fail(f"an op with this name is already defined differently (differs in: "
                 f"{', '.join(diff)}); pass replace=True to replace it (e.g. when re-running "
                 f"a notebook cell), or choose another name")
    if backward is not None:
        if "NoGrad" in traits:
            fail("a backward was given but the op is marked NoGrad")
        # fail before anything is registered: a half-defined pair could not be defined again
        if grad_name == name:
            fail("grad_op_name must differ from the op's name")
        taken = _op_registry.is_registered(grad_name) and not (
            replace and name in _DEFINITIONS
            and _DEFINITIONS[name]["grad_op_name"] == grad_name)
        if taken:
            fail(f"its grad op name '{grad_name}' is already registered by another op "
                 f"(pass grad_op_name= with a free name, e.g. grad_op_name='{name}_backward')")

    plan = None
    if backward is not None:
        plan = _plan_grad(name, grad_name, [getattr(i, "name", i) for i in ins],
                          [getattr(o, "name", o) for o in outs], attrs_t, save, grad_sbp)

    if replace and name in _DEFINITIONS:
        _remove_python_op(name)
    op = define_op(name, inputs=ins, outputs=outs, attrs=attrs_t, infer=infer, traits=traits,
                   check=check, sbp=sbp, doc=doc)

    def forward_kernel(*arrays: np.ndarray, **attr_values: Any) -> Any:
        return _call(forward, arrays, attr_values)

    register_kernel(name, forward_kernel, backend="python", platforms=platforms,
                    name=_kernel_name(forward))
    if backward is not None:
        assert plan is not None
        _define_grad(op, backward, grad_name, plan, attrs_t, grad_sbp, platforms)
    _DEFINITIONS[name] = parts
    return op


def _plan_grad(name: str, grad_name: str, in_names: list[str], out_names: list[str],
               attrs: tuple[Attr, ...], save: Iterable[str] | None, grad_sbp: Any
               ) -> tuple[list[str], list[str], list[str]]:
    """Check ``save`` and the attr names and name the grad op's inputs and outputs (before
    anything is registered): ``(saved names, grad inputs d<out>..., grad outputs d<in>...)``."""
    def fail(msg: str) -> None:
        raise OpDefinitionError(f"cannot define python op '{name}': {msg}")

    save_l = list(out_names if save is None else save)
    for s in save_l:
        if s not in in_names and s not in out_names:
            fail(f"save= names '{s}', which is not an input {in_names} or output {out_names}")
    unsaved = [n for n in in_names if n not in save_l]
    if grad_sbp is not None and unsaved:
        fail(f"grad_sbp= needs every input in save= (the grad op then reads the gradients' "
             f"shapes from them, which stays right in a shard); not saved: {unsaved}")
    attr_names = {getattr(a, "name", None) for a in attrs}
    for reserved in (INPUT_SHAPES_ATTR, INPUT_DTYPES_ATTR):
        if reserved in attr_names:
            fail(f"attr name '{reserved}' is reserved for its grad op '{grad_name}'")
    taken = set(save_l) | {a for a in attr_names if isinstance(a, str)}
    try:
        grad_ins = [_unique(f"d{o}", f"{o}_grad", taken) for o in out_names]
        grad_outs = [_unique(f"d{i}", f"{i}_grad", taken) for i in in_names]
    except OpDefinitionError as e:
        fail(f"grad op '{grad_name}': {e}")
    return save_l, grad_ins, grad_outs


def _define_grad(op: OpDef, backward: Callable[..., Any], grad_name: str,
                 plan: tuple[list[str], list[str], list[str]], attrs: tuple[Attr, ...],
                 grad_sbp: Any, platforms: tuple[str, ...]) -> None:
    """The grad op ``(saved..., d<out>...) -> (d<in>...)`` and the backward rule using it."""
    name = op.name
    in_names = [i.name for i in op.inputs]
    save_l, grad_ins, grad_outs = plan
    n_in = len(in_names)
    # Where each gradient's shape and dtype come from: the saved input itself (the grad op's
    # k-th input), or, for an input that is not saved, the attrs (the forward call's shapes).
    # Saved inputs are right under vmap and in a shard (physical shapes); the attrs hold the
    # per-example logical shapes, which is why a split grad_sbp needs every input saved.
    source = [("in", save_l.index(n)) if n in save_l else ("attr", 0) for n in in_names]
    unsaved = [i for i, (kind, _) in enumerate(source) if kind == "attr"]
    for k, i in enumerate(unsaved):
        source[i] = ("attr", k)
    extra_attrs = ([Attr(INPUT_SHAPES_ATTR, "shape_list"), Attr(INPUT_DTYPES_ATTR, "dtype_list")]
                   if unsaved else [])

    def expected(items: Sequence[Any], attr_values: dict[str, Any]) -> list[tuple[tuple, Any]]:
        out = []
        for kind, k in source:
            if kind == "in":
                out.append((tuple(items[k].shape), np.dtype(items[k].dtype)))
            else:
                out.append((tuple(attr_values[INPUT_SHAPES_ATTR][k]),
                            np.dtype(attr_values[INPUT_DTYPES_ATTR][k])))
        return out

    def grad_infer(*avals: Any, **attrs_: Any) -> Any:
        descs = [desc(s, d) for s, d in expected(avals, attrs_)]
        return descs[0] if n_in == 1 else tuple(descs)

    grad_op = define_op(
        grad_name, inputs=[*save_l, *grad_ins], outputs=grad_outs,
        attrs=[*attrs, *extra_attrs], infer=grad_infer, sbp=grad_sbp,
        doc=f"The NumPy backward of python op '{name}' ({_kernel_name(backward)}).")
    bname = _kernel_name(backward)

    def backward_kernel(*arrays: np.ndarray, **attr_values: Any) -> list[np.ndarray]:
        want = expected(arrays, attr_values)
        attr_values.pop(INPUT_SHAPES_ATTR, None)
        attr_values.pop(INPUT_DTYPES_ATTR, None)
        res = _call(backward, arrays, attr_values)
        if n_in == 1 and not isinstance(res, (tuple, list)):
            res = [res]
        if not isinstance(res, (tuple, list)) or len(res) != n_in:
            got = len(res) if isinstance(res, (tuple, list)) else 1
            raise ValueError(f"{bname}(args) returned {got} gradient(s); python op '{name}' "
                             f"has {n_in} input(s) {in_names}: return one per input "
                             f"(None for no gradient)")
        out = []
        for i, (g, (s, d)) in enumerate(zip(res, want)):
            if g is None:
                out.append(np.zeros(s, d))
                continue
            g = np.asarray(g)
            if g.shape != s or g.dtype != d:
                hint = (f" (NumPy promotes dtypes: cast with .astype(np.{d.name}))"
                        if g.shape == s else "")
                raise ValueError(f"{bname}(args) of python op '{name}' returned a gradient "
                                 f"for input {i} ('{in_names[i]}') with shape {g.shape} dtype "
                                 f"{g.dtype}; the input has shape {s} dtype {d}{hint}")
            out.append(g)
        return out

    register_kernel(grad_name, backward_kernel, backend="python", platforms=platforms,
                    name=bname)

    @register_backward(name, save=save_l)
    def _python_op_backward(ctx: Any, *grads: Any) -> Any:
        filled = []
        for g, shape, dtype in zip(grads, ctx.output_shapes, ctx.output_dtypes):
            if g is None:  # an integer output: the NumPy backward still gets an array
                g = get("full").apply(shape=shape, value=0.0, dtype=dtype)
            filled.append(g)
        extra = ({INPUT_SHAPES_ATTR: [ctx.input_shapes[i] for i in unsaved],
                  INPUT_DTYPES_ATTR: [ctx.input_dtypes[i] for i in unsaved]} if unsaved else {})
        return grad_op.apply(*ctx.saved_tensors, *filled, **ctx.attrs, **extra)

    @register_backward(grad_name)
    def _no_second_derivative(ctx: Any, *grads: Any) -> Any:
        raise GradientNotFoundError(
            f"op '{grad_name}' runs the NumPy backward of python op '{name}' ({bname}), which "
            f"cannot be differentiated: forward mode (jax.jvp, jacfwd) and higher-order "
            f"gradients of '{name}' need a backward rule written with jflow ops "
            f"(jflow.autograd.register_backward) instead of a NumPy backward")
