"""The ``ffi`` kernel backend: ops and XLA FFI kernels from C++/CUDA shared libraries.

A library built against ``jflow/op.h`` (see :mod:`jflow.sysconfig`) declares ops and kernels
with static registrations and exports ``jflow_library_describe``, a JSON description of both.
:func:`load_library` reads it and, all or nothing:

* defines each op with :func:`jflow.ops.define_op` (inputs, outputs, typed attrs with
  defaults, traits, SBP family; inference "same as input k" or the library's C++ function,
  called through ``jflow_library_infer``);
* registers each kernel's handler as an XLA FFI target (``jax.ffi.register_ffi_target``,
  platform ``cpu`` / ``CUDA`` / ``ROCM``) and as a jflow kernel of backend ``"ffi"`` for that
  platform, restricted to the dtypes/ranks of its typed buffers, so the registry picks it at
  lowering like any other kernel (eager, ``jax.jit``, ``jax.vmap``, autodiff through the
  op's Python backward rule).

Attrs reach the handler with the exact FFI types it decodes: float -> F32, double -> F64,
int32 -> S32, int64 -> S64, bool -> PRED, string -> string. A value that does not fit (1e39
for a C++ float, 2**70 for an int64) is refused when the op is called, naming op and attr.
For kernels written as plain functions (``JFLOW_REGISTER_KERNEL``) the loader also checks the
function's parameters against the op (number of inputs and outputs, attr types in declaration
order): a mismatch is a load-time error naming op, kernel and attr, not XLA's run-time "Failed
to decode all FFI handler operands". (Handlers registered raw, with
``JFLOW_REGISTER_FFI_HANDLER``, cannot be checked: their binding is XLA's business.)
"""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax import core

from ..dtypes import as_dtype
from ..ops import registry as reg
from ..ops.attrs import REQUIRED
from ..ops.primitive import define_op
from ..ops.registry import Attr, Input, OpDefinitionError, Output
from ..ops.registry import get as _get_op
from ..sharding import sbp as sbp_mod
from .registry import Kernel, register_backend, register_kernel

__all__ = ["load_library", "Library", "FfiKernel", "LibraryError", "loaded_libraries",
           "ABI_VERSION", "VMAP_METHODS", "SBP_FAMILIES"]

#: Version of the description format written by ``jflow/op.h`` (JFLOW_OP_ABI_VERSION).
ABI_VERSION = 1
_DESCRIBE = "jflow_library_describe"
_HANDLER = "jflow_library_handler"
_INFER = "jflow_library_infer"
_CHECK = "jflow_library_check"
_TMP = "jflow_library_tmp_size"
_SBP = "jflow_library_sbp"
#: jflow platform -> the platform name XLA registers FFI targets under
_XLA_PLATFORM = {"cpu": "cpu", "cuda": "CUDA", "rocm": "ROCM"}
#: jflow attr type -> the NumPy scalar type whose FFI encoding the C++ type decodes
_ATTR_SCALAR: dict[str, Any] = {"float": np.float32, "double": np.float64, "int32": np.int32,
                                "int64": np.int64, "bool": np.bool_}
#: list / shape attrs -> the NumPy dtype of the FFI array attribute the C++ Span decodes
_ATTR_ARRAY: dict[str, Any] = {"int32_list": np.int32, "int64_list": np.int64,
                               "float_list": np.float32, "shape": np.int64}
#: dtype attrs reach the kernel as xla::ffi::DataType: XLA's primitive-type number (uint8)
_XLA_DTYPE = {"bool": 1, "int8": 2, "int16": 3, "int32": 4, "int64": 5, "uint8": 6,
              "uint16": 7, "uint32": 8, "uint64": 9, "float16": 10, "float32": 11,
              "float64": 12, "complex64": 15, "bfloat16": 16, "complex128": 18}
_ATTR_TYPES = (*_ATTR_SCALAR, "string", *_ATTR_ARRAY, "dtype")
#: the kernel parameter type each declared attr type may be read as (a shape is an int64 Span)
_SAME_KERNEL_TYPE = {"shape": "int64_list"}
#: ``jax.ffi.ffi_call``'s vmap methods an op may declare with ``.VmapMethod(...)``
VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all")
#: ``.Sbp(family)`` names -> the arguments of jflow.sharding.sbp.elementwise
SBP_FAMILIES = {"elementwise": "none", "elementwise_linear": "linear"}


class LibraryError(ValueError):
    """A shared library that is not a usable jflow op library (no entry point, a bad
    declaration, a kernel that does not match its op)."""


@dataclass(frozen=True, eq=False)
class FfiKernel:
    """One C++/CUDA kernel: the FFI target it is registered as, and how to call it.

    Registered as the ``fn`` of a jflow kernel with backend ``"ffi"``; calling it directly on
    ``jax.Array`` inputs (``kernel(x, alpha=0.5)``) runs the handler alone, for debugging.
    """

    op_name: str
    platform: str
    name: str
    target: str
    library: str
    attrs: tuple[tuple[str, str], ...]
    vmap_method: str
    #: whether the function takes jflow::InputCounts / jflow::OutputCounts
    wants_counts: tuple[bool, bool] = (False, False)
    #: ``fn(in_avals, attrs) -> bytes`` for a kernel with SetInferTmpSizeFn: its scratch
    #: buffer is one more (uint8) output of the call, dropped from what the op returns
    tmp_size: Callable[[Sequence[Any], dict[str, Any]], int] | None = None

    def ffi_attrs(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The op's (normalised) attrs as the FFI scalars the handler decodes."""
        return {n: _to_ffi(self.op_name, n, t, attrs[n]) for n, t in self.attrs
                if attrs.get(n) is not None}

    def call(self, flat: Sequence[Any], out_avals: Sequence[Any], attrs: dict[str, Any],
             layout: Any = None) -> list[Any]:
        """Trace one call of the handler: ``out_avals`` from the op's inference, ``layout``
        the tensors per declared input (None: one each)."""
        shapes = [jax.ShapeDtypeStruct(tuple(a.shape), a.dtype) for a in out_avals]
        if self.tmp_size is not None:
            shapes.append(jax.ShapeDtypeStruct((self.tmp_size(flat, attrs),), np.uint8))
        fn = jax.ffi.ffi_call(self.target, shapes, vmap_method=self.vmap_method)
        kw = self.ffi_attrs(attrs)
        if self.wants_counts[0] or self.wants_counts[1]:
            op = _get_op(self.op_name)
            if self.wants_counts[0]:
                counts = layout if layout is not None else (1,) * len(op.inputs)
                kw["jflow_input_counts"] = np.asarray(counts, np.int64)
            if self.wants_counts[1]:
                extra = len(out_avals) - len(op.outputs) + 1
                kw["jflow_output_counts"] = np.asarray(
                    [extra if o.variadic else 1 for o in op.outputs], np.int64)
        outs = list(fn(*flat, **kw))
        return outs[:-1] if self.tmp_size is not None else outs

    def __call__(self, *arrays: Any, **attrs: Any) -> Any:
        op = _get_op(self.op_name)
        norm = op.normalize_attrs(attrs)
        arrays = tuple(jax.numpy.asarray(a) for a in arrays)
        avals = [core.ShapedArray(a.shape, a.dtype) for a in arrays]
        outs = self.call(arrays, op.infer_descs(avals, None, norm), norm)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self) -> str:
        return (f"<jflow ffi kernel '{self.name}' of op '{self.op_name}' for {self.platform} "
                f"from {self.library}>")


class Library:
    """A loaded jflow op library (what :func:`load_library` returns).

    ``ops``: names of the ops it defined; ``kernels``: its :class:`FfiKernel` objects;
    ``lib.<op_name>`` is the op itself (``lib.myrelu(x, alpha=0.2)``).
    """

    def __init__(self, path: str, cdll: ctypes.CDLL, ops: tuple[str, ...],
                 kernels: tuple[FfiKernel, ...]) -> None:
        self.path = path
        self.name = _lib_name(path)
        self.ops = ops
        self.kernels = kernels
        self._cdll = cdll  # keeps the library loaded (ctypes never unloads it anyway)

    def __getattr__(self, name: str) -> Any:
        ops = self.__dict__.get("ops", ())
        if name.startswith("_") or name not in ops:
            raise AttributeError(f"library '{self.__dict__.get('path')}' defines no op '{name}'; "
                                 f"its ops are "
                                 f"{list(ops)}")
        return _get_op(name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.ops))

    def __repr__(self) -> str:
        ks = ", ".join(f"{k.op_name}:{k.platform}:{k.name}" for k in self.kernels)
        return f"<jflow library '{self.path}' ops={list(self.ops)} kernels=[{ks}]>"


_lock = threading.Lock()
_LOADED: dict[str, Library] = {}     # realpath -> library
_OWNER: dict[str, str] = {}          # op name -> path of the library that defined it
_target_ids = itertools.count()


def loaded_libraries() -> list[Library]:
    """The libraries loaded in this process, in load order."""
    return list(_LOADED.values())


def load_library(path: str | os.PathLike[str]) -> Library:
    """Load a jflow op library: define its ops and register its kernels (see the module doc).

    Loading the same file again returns the same :class:`Library`. Nothing is registered
    when anything in the library is wrong (a name collision, a kernel that does not match
    its op...): the error names the library, the op and the culprit.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load_library: expected a path, got {type(path).__name__}")
    path = os.fspath(path)
    real = os.path.realpath(path)
    if not os.path.isfile(real):
        raise FileNotFoundError(f"load_library: no such file: '{path}'")
    with _lock:
        if real in _LOADED:
            return _LOADED[real]
        try:
            cdll = ctypes.CDLL(real, mode=os.RTLD_LOCAL)
        except OSError as e:
            raise OSError(f"load_library('{path}'): cannot load it as a shared library: {e}"
                          ) from None
        where = f"load_library('{path}')"
        desc = _describe(cdll, where)
        lib = _register(cdll, desc, real, where)
        _LOADED[real] = lib
        return lib


# ---- reading the description ----------------------------------------------------------------

def _lib_name(path: str) -> str:
    base = os.path.basename(path).split(".")[0]
    return base[3:] if base.startswith("lib") and len(base) > 3 else base


def _describe(cdll: ctypes.CDLL, where: str) -> dict[str, Any]:
    try:
        fn = getattr(cdll, _DESCRIBE)
    except AttributeError:
        raise LibraryError(f"{where}: not a jflow op library: it does not export "
                           f"'{_DESCRIBE}' (build it from sources that include \"jflow/op.h\" "
                           f"and declare ops with JFLOW_REGISTER_OP; flags: "
                           f"jflow.sysconfig.get_compile_flags())") from None
    fn.restype = ctypes.c_char_p
    fn.argtypes = []
    try:
        desc = json.loads(fn().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise LibraryError(f"{where}: unreadable op description: {e}") from None
    if not isinstance(desc, dict) or desc.get("abi") != ABI_VERSION:
        got = desc.get("abi") if isinstance(desc, dict) else None
        raise LibraryError(f"{where}: built with jflow/op.h ABI version {got}, this jflow reads "
                           f"version {ABI_VERSION}; rebuild the library against this jflow's "
                           f"header (jflow.sysconfig.get_include())")
    return desc


@dataclass
class _OpSpec:
    name: str
    inputs: list[str]
    outputs: list[str]
    in_specs: list[Input]
    out_specs: list[Output]
    #: non-plain inputs: name -> (optional, exact count or None, minimum), checked per call
    in_counts: dict[str, tuple[bool, int | None, int]]
    #: tensors each output starts with in inference (its count, minimum, or 1)
    out_init: list[int]
    attrs: list[tuple[str, str, Any]]  # name, type, default (REQUIRED when none)
    same_as: int | None
    infer_fn: bool
    check_fn: bool
    sbp_fn: bool
    traits: list[str]
    sbp: str | None
    vmap_method: str
    doc: str


def _parse_args(items: list[Any], kind: str, w: str
                ) -> tuple[list[str], list[Any], dict[str, tuple[bool, int | None, int]],
                           list[int]]:
    names, specs, counts, init = [], [], {}, []
    for it in items:
        if isinstance(it, str):
            names.append(it)
            specs.append(Input(it) if kind == "input" else Output(it))
            init.append(1)
            continue
        n, opt, cnt, mn = it["name"], bool(it["optional"]), it["count"], int(it["min"])
        if (cnt is not None and cnt < 1) or mn < 0:
            raise LibraryError(f"{w}: {kind} '{n}': counts must be >= 1 (minimum >= 0)")
        names.append(n)
        init.append(cnt if cnt is not None else mn)
        if kind == "output":
            specs.append(Output(n, variadic=True))
        elif opt and cnt == 1:
            specs.append(Input(n, optional=True))
        else:
            specs.append(Input(n, variadic=True, min=0 if opt else (cnt or mn)))
        counts[n] = (opt, cnt, mn)
    return names, specs, counts, init


def _parse_op(d: dict[str, Any], where: str) -> _OpSpec:
    name = d["name"]
    w = f"{where}: op '{name}'"
    inputs, in_specs, in_counts, _ = _parse_args(list(d["inputs"]), "input", w)
    outputs, out_specs, _, out_init = _parse_args(list(d["outputs"]), "output", w)
    attrs = []
    for a in d["attrs"]:
        if a["type"] not in _ATTR_TYPES:
            raise LibraryError(f"{w}: attr '{a['name']}' has unsupported type '{a['type']}' "
                               f"(supported: {list(_ATTR_TYPES)})")
        attrs.append((a["name"], a["type"], REQUIRED if a["default"] is None else a["default"]))
    same_as = None
    if d["infer_fn"]:
        if d["same_as"] is not None:
            raise LibraryError(f"{w}: declares both SameShapeAs('{d['same_as']}') and Infer(fn); "
                               f"keep one")
    elif d["same_as"] is not None:
        if d["same_as"] not in inputs:
            raise LibraryError(f"{w}: SameShapeAs('{d['same_as']}') names no input; inputs are "
                               f"{inputs}")
        if d["same_as"] in in_counts:
            raise LibraryError(f"{w}: SameShapeAs('{d['same_as']}') names an optional / "
                               f"variadic input; name a plain one or declare .Infer(fn)")
        same_as = inputs.index(d["same_as"])
    elif inputs and inputs[0] not in in_counts:
        same_as = 0
    else:
        why = "has no inputs" if not inputs else "has no plain first input"
        raise LibraryError(f"{w}: {why}, so its output shapes cannot default to an input's; "
                           f"declare .Infer(fn)")
    if d["sbp"] is not None and d.get("sbp_fn"):
        raise LibraryError(f"{w}: declares both Sbp('{d['sbp']}') and SetGetSbpFn(fn); keep one")
    if d["sbp"] is not None and d["sbp"] not in SBP_FAMILIES:
        raise LibraryError(f"{w}: unknown SBP family '{d['sbp']}'; known: {list(SBP_FAMILIES)}")
    if d["vmap_method"] not in VMAP_METHODS:
        raise LibraryError(f"{w}: unknown vmap method '{d['vmap_method']}'; known: "
                           f"{list(VMAP_METHODS)}")
    return _OpSpec(name, inputs, outputs, in_specs, out_specs, in_counts, out_init, attrs,
                   same_as, bool(d["infer_fn"]), bool(d.get("check_fn", False)),
                   bool(d.get("sbp_fn", False)),
                   list(d["traits"]), d["sbp"], d["vmap_method"], d["doc"])


def _owner(name: str) -> str:
    if name in _OWNER:
        return f"library '{_OWNER[name]}' already defines it (a process holds one version of an " \
               f"op: restart Python to load a rebuilt library)"
    if _get_op(name).builtin:
        return "it is a jflow built-in op"
    return "an op with this name is already registered (defined in Python)"


def _check_kernel(k: dict[str, Any], op: _OpSpec | None, existing: Any, where: str) -> None:
    """A kernel's platform, op and (for plain-function kernels) parameters against the op."""
    w = f"{where}: kernel '{k['name']}' ({k['platform']}) of op '{k['op']}'"
    if k["platform"] not in _XLA_PLATFORM:
        raise LibraryError(f"{w}: unknown platform '{k['platform']}'; use one of "
                           f"{list(_XLA_PLATFORM)}")
    if op is None and existing is None:
        raise LibraryError(f"{w}: the op is unknown: neither this library nor jflow defines "
                           f"an op '{k['op']}'")
    names = op.inputs + op.outputs if op is not None else \
        [x.name for x in (*existing.inputs, *existing.outputs)]
    for arg, dts in k["dtypes"].items():
        if arg not in names:
            raise LibraryError(f"{w}: Dtypes('{arg}', ...) names no input or output of the op "
                               f"({names})")
        for d in dts:
            try:
                as_dtype(d)
            except TypeError:
                raise LibraryError(f"{w}: Dtypes('{arg}', ...) has unknown dtype '{d}'"
                                   ) from None
    declared_types = [(n, t) for n, t, _ in op.attrs] if op is not None else \
        [(a.name, a.type) for a in existing.attrs]
    for n, t in declared_types:
        if t not in _ATTR_TYPES:
            raise LibraryError(f"{w}: attr '{n}' has type {t}, which a C++ kernel cannot "
                               f"receive (C++ kernels take {list(_ATTR_TYPES)})")
    params = k["params"]
    if params is None:  # a raw XLA FFI handler: nothing more to check
        return
    if op is None:
        raise LibraryError(f"{w}: a kernel written as a plain function takes its attr names "
                           f"from an op declared in the same library (JFLOW_REGISTER_OP); for "
                           f"an op defined elsewhere use JFLOW_REGISTER_FFI_HANDLER")
    ins = [p for p in params if p["kind"] == "in"]
    outs = [p for p in params if p["kind"] == "out"]
    attrs = [p["type"] for p in params if p["kind"] == "attr"]
    kinds = {p["kind"] for p in params}
    if k.get("tmp"):
        if not outs:
            raise LibraryError(f"{w}: declares SetInferTmpSizeFn, so its last Result must be "
                               f"the scratch buffer (xla::ffi::Result<xla::ffi::AnyBuffer>)")
        outs = outs[:-1]
    for rest, bufs, names_, plain, what in (
            ("in_rest", ins, op.inputs, [s.name for s in op.in_specs
                                         if not (s.optional or s.variadic)], "input"),
            ("out_rest", outs, op.outputs, [s.name for s in op.out_specs if not s.variadic],
             "output")):
        leading = 0  # buffers whose position is fixed: plain ones, exact counts
        for n in names_:
            if n in plain:
                leading += 1
                continue
            opt, cnt, _ = op.in_counts.get(n, (True, None, 0)) if what == "input" \
                else (True, None, 0)
            if opt or cnt is None:
                break
            leading += cnt
        if rest in kinds:
            if len(bufs) > leading:
                rest_t = "RemainingArgs" if what == "input" else "RemainingRets"
                raise LibraryError(f"{w}: the function takes {len(bufs)} {what} buffer(s) "
                                   f"before xla::ffi::{rest_t}, but the op has {leading} "
                                   f"{what} tensor(s) at fixed positions before its optional / "
                                   f"variadic ones ({names_})")
        elif len(bufs) != len(names_) or len(plain) != len(names_):
            raise LibraryError(f"{w}: the function takes {len(ins)} input buffer(s) and "
                               f"{len(outs)} Result(s); the op has inputs {op.inputs} and "
                               f"outputs {op.outputs}"
                               + ("" if len(plain) == len(names_) else
                                  f" (for its optional / variadic {what}s take "
                                  f"xla::ffi::Remaining{'Args' if what == 'input' else 'Rets'} "
                                  f"and jflow::{'Input' if what == 'input' else 'Output'}"
                                  f"Counts)"))
    declared = [(n, t) for n, t, _ in op.attrs]
    if len(attrs) != len(declared):
        decl = ", ".join(f"{t} {n}" for n, t in declared) or "none"
        raise LibraryError(f"{w}: the function takes {len(attrs)} attr parameter(s) "
                           f"({', '.join(attrs) or 'none'}); the op declares {len(declared)}: "
                           f"{decl} (attr parameters follow the op's declaration order)")
    for (n, t), got in zip(declared, attrs):
        if _SAME_KERNEL_TYPE.get(t, t) != got:
            raise LibraryError(f"{w}: attr '{n}' is declared {t} but the function takes it as "
                               f"{_CPP[got]}; make them agree (a {t} attr is a C++ {_CPP[t]})")
    for p in (*ins, *outs):
        if p["dtype"] == "unsupported":
            raise LibraryError(f"{w}: a typed buffer has a dtype jflow does not support")


_CPP = {"float": "float", "double": "double", "int32": "int32_t", "int64": "int64_t",
        "bool": "bool", "string": "std::string_view",
        "int32_list": "xla::ffi::Span<const int32_t>",
        "int64_list": "xla::ffi::Span<const int64_t>",
        "float_list": "xla::ffi::Span<const float>", "shape": "xla::ffi::Span<const int64_t>",
        "dtype": "xla::ffi::DataType"}


# ---- registering ------------------------------------------------------------------------------

def _validate(desc: dict[str, Any], where: str) -> tuple[list[_OpSpec], list[dict[str, Any]]]:
    """Every check on a library's description, before anything is registered."""
    try:
        return _validate_unchecked(desc, where)
    except (KeyError, TypeError, AttributeError) as e:
        raise LibraryError(f"{where}: malformed op description ({type(e).__name__}: {e})"
                           ) from None


def _validate_unchecked(desc: dict[str, Any], where: str
                        ) -> tuple[list[_OpSpec], list[dict[str, Any]]]:
    specs = [_parse_op(d, where) for d in desc["ops"]]
    kernels = list(desc["kernels"])
    by_name: dict[str, _OpSpec] = {}
    for s in specs:
        if s.name in by_name:
            raise LibraryError(f"{where}: op '{s.name}' is declared twice")
        by_name[s.name] = s
        if s.name in reg._REGISTRY:
            raise OpDefinitionError(f"{where}: cannot define op '{s.name}': {_owner(s.name)}")
        ins = tuple(s.in_specs)
        outs = tuple(s.out_specs)
        attrs = tuple(Attr(n, t, dflt, static=True) for n, t, dflt in s.attrs)
        try:  # the registry's own checks, made before any op is defined: all or nothing
            reg._check_definition(s.name, ins, outs, attrs, frozenset({"NoSideEffect", *s.traits}),
                                  lambda *a, **k: None, None)
        except OpDefinitionError as e:
            raise OpDefinitionError(f"{where}: {e}") from None
    for k in kernels:
        _check_kernel(k, by_name.get(k["op"]), reg._REGISTRY.get(k["op"]), where)
    return specs, kernels


def _register(cdll: ctypes.CDLL, desc: dict[str, Any], path: str, where: str) -> Library:
    specs, kernels = _validate(desc, where)
    by_name = {s.name: s for s in specs}
    handler_fn = getattr(cdll, _HANDLER)
    handler_fn.restype = ctypes.c_void_p
    handler_fn.argtypes = [ctypes.c_int64]
    pointers = []
    for i, k in enumerate(kernels):
        ptr = handler_fn(i)
        if not ptr:
            raise LibraryError(f"{where}: kernel '{k['name']}' has no handler")
        pointers.append(ptr)

    sbp_c = None
    if any(s.sbp_fn for s in specs):
        sbp_c = getattr(cdll, _SBP)
        sbp_c.restype = ctypes.c_char_p
        sbp_c.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    check_c = None
    if any(s.check_fn for s in specs):
        check_c = getattr(cdll, _CHECK)
        check_c.restype = ctypes.c_char_p
        check_c.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    infer_c = None
    if any(s.infer_fn for s in specs):
        infer_c = getattr(cdll, _INFER)
        infer_c.restype = ctypes.c_char_p
        infer_c.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    for s in specs:
        define_op(s.name, inputs=s.in_specs, outputs=s.out_specs,
                  # static: the C++ handler decodes attrs as FFI attributes, not operands
                  attrs=[Attr(n, t, dflt, static=True) for n, t, dflt in s.attrs],
                  infer=_make_infer(s, infer_c), traits=("NoSideEffect", *s.traits),
                  check=_make_check(s, check_c if s.check_fn else None),
                  doc=s.doc or f"C++ op from {path}",
                  sbp=_make_sbp(s, sbp_c) if s.sbp_fn else
                  None if s.sbp is None else sbp_mod.elementwise(SBP_FAMILIES[s.sbp]))
        _OWNER[s.name] = path

    tmp_c = None
    if any(k.get("tmp") for k in kernels):
        tmp_c = getattr(cdll, _TMP)
        tmp_c.restype = ctypes.c_char_p
        tmp_c.argtypes = [ctypes.c_int64, ctypes.c_char_p]
    out = []
    for i, (k, ptr) in enumerate(zip(kernels, pointers)):
        tmp = _make_tmp_size(k, i, tmp_c) if k.get("tmp") else None
        out.append(_register_kernel(k, ptr, by_name.get(k["op"]), path, tmp))
    return Library(path, cdll, tuple(s.name for s in specs), tuple(out))


def _counts(specs: Sequence[Any], n_flat: int, what: str, op: str) -> list[int]:
    """Tensors per declared input/output from the flat count (one non-plain one at most)."""
    odd = [i for i, x in enumerate(specs) if getattr(x, "optional", False) or x.variadic]
    counts = [1] * len(specs)
    if len(odd) > 1:
        raise ValueError(f"op '{op}': its C++ SBP function needs the count of each {what}, "
                         f"which cannot be told for several optional / variadic {what}s")
    if odd:
        counts[odd[0]] = n_flat - (len(specs) - 1)
    return counts


def _make_sbp(s: _OpSpec, sbp_c: Any) -> Callable[..., list[Any]]:
    """The op's SBP signatures from the library's SetGetSbpFn (flat inputs and outputs)."""
    types = {n: t for n, t, _ in s.attrs}
    name = s.name.encode()
    parse = {"B": sbp_mod.B, "P": sbp_mod.P}

    def sbp(in_shapes: Sequence[Sequence[int]], n_out: int = 1, **attrs: Any) -> list[Any]:
        ic = _counts(s.in_specs, len(in_shapes), "input", s.name)
        oc = _counts(s.out_specs, n_out, "output", s.name)
        lines = [" ".join(map(str, [len(ic), *ic])), str(len(in_shapes))]
        lines += [_encode_desc("unknown", shape) for shape in in_shapes]
        lines.append(" ".join(map(str, [len(oc), *oc])))
        lines += _encode_attrs(types, {n: v for n, v in attrs.items() if v is not None})
        answer = sbp_c(name, ("\n".join(lines) + "\n").encode()).decode("utf-8", "replace")
        status, _, body = answer.partition("\n")
        if status != "ok":
            msg = f"op '{s.name}': SBP function: {body}"
            raise (TypeError if status == "TypeError" else ValueError)(msg)
        sigs = []
        for line in body.strip("\n").splitlines():
            ins, _, outs = line.partition("|")
            conv = [[parse[t] if t in parse else sbp_mod.S(int(t[1:])) for t in part.split()]
                    for part in (ins, outs)]
            sigs.append(sbp_mod.Signature(tuple(conv[0]), tuple(conv[1])))
        return sigs
    return sbp


def _make_tmp_size(k: dict[str, Any], index: int, tmp_c: Any
                   ) -> Callable[[Sequence[Any], dict[str, Any]], int]:
    """The kernel's scratch size from its (flat, per-example) input avals and attrs."""
    op = _get_op(k["op"])
    types = {a.name: a.type for a in op.attrs}

    def tmp_size(ins: Sequence[Any], attrs: dict[str, Any]) -> int:
        answer = tmp_c(index, _encode_request(types, ins, attrs)).decode("utf-8", "replace")
        status, _, body = answer.partition("\n")
        if status != "ok":
            msg = f"op '{op.name}': kernel '{k['name']}': tmp size function: {body}"
            raise (TypeError if status == "TypeError" else ValueError)(msg)
        return int(body)
    return tmp_size


def _register_kernel(k: dict[str, Any], ptr: int, spec: _OpSpec | None, path: str,
                     tmp_size: Callable[..., int] | None = None) -> FfiKernel:
    op = _get_op(k["op"])
    platform = k["platform"]
    target = f"jflow.{_lib_name(path)}.{k['op']}.{platform}.{next(_target_ids)}"
    jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(ptr), platform=_XLA_PLATFORM[platform])
    attrs = tuple((a.name, a.type) for a in op.attrs)
    kinds = {p["kind"] for p in k["params"] or ()}
    fk = FfiKernel(op.name, platform, k["name"], target, path, attrs,
                   spec.vmap_method if spec is not None else "sequential",
                   ("input_counts" in kinds, "output_counts" in kinds), tmp_size)
    dtypes: dict[str, list[str]] = {}
    ranks: list[tuple[int, int]] = []
    if k["params"] is not None:
        ins = [p for p in k["params"] if p["kind"] == "in"]
        outs = [p for p in k["params"] if p["kind"] == "out"]
        for spec_, p in (*zip(op.inputs, ins), *zip(op.outputs, outs)):
            if p["dtype"] is not None:
                dtypes[spec_.name] = [p["dtype"]]
        ranks = [(i, p["rank"]) for i, p in enumerate(ins) if p["rank"] is not None]
    dtypes.update(k["dtypes"])
    register_kernel(op.name, fk, backend="ffi", platforms=(platform,), dtypes=dtypes or None,
                    priority=int(k["priority"]), condition=_rank_condition(ranks) if ranks
                    else None, name=k["name"])
    return fk


def _rank_condition(ranks: list[tuple[int, int]]) -> Callable[..., bool]:
    def condition(*avals: Any) -> bool:  # Buffer<dtype, rank> decodes only that rank
        return all(len(avals[i].shape) == r for i, r in ranks)
    return condition


def _to_ffi(op: str, name: str, typ: str, v: Any) -> Any:
    if typ == "string":
        return str(v)
    if typ == "dtype":
        dt = np.dtype(v).name
        if dt not in _XLA_DTYPE:
            raise ValueError(f"op '{op}': attr '{name}' (dtype): {dt} has no "
                             f"xla::ffi::DataType")
        return np.uint8(_XLA_DTYPE[dt])
    if typ in _ATTR_ARRAY:
        items = [_to_ffi(op, name, "float" if typ == "float_list" else
                         "int32" if typ == "int32_list" else "int64", x) for x in v]
        return np.asarray(items, dtype=_ATTR_ARRAY[typ])
    if typ not in _ATTR_SCALAR:
        raise TypeError(f"op '{op}': attr '{name}' has type {typ}, which a C++ kernel cannot "
                        f"receive (C++ kernels take {list(_ATTR_TYPES)})")
    scalar = _ATTR_SCALAR[typ]
    try:
        if typ in ("float", "double"):
            with np.errstate(over="raise"):
                out = scalar(v)
            if np.isfinite(v) and not np.isfinite(out):
                raise FloatingPointError
        else:
            out = scalar(v)
            if typ != "bool" and int(out) != v:
                raise OverflowError
    except (OverflowError, FloatingPointError):
        raise ValueError(f"op '{op}': attr '{name}' ({typ}): {v!r} does not fit in the C++ "
                         f"{_CPP[typ]} the kernel takes") from None
    return out


def _encode_desc(dtype_name: str, shape: Sequence[int]) -> str:
    """One tensor desc line of a request to the library: ``dtype rank dims...``."""
    return " ".join([dtype_name, str(len(shape)), *(str(int(d)) for d in shape)])


def _encode_request(types: dict[str, str], ins: Sequence[Any], attrs: dict[str, Any]) -> bytes:
    """An inference / tmp-size request: the inputs' descs, then the attrs that are set."""
    lines = [str(len(ins)), *(_encode_desc(np.dtype(a.dtype).name, a.shape) for a in ins)]
    lines += _encode_attrs(types, {n: v for n, v in attrs.items() if v is not None})
    return ("\n".join(lines) + "\n").encode()


def _encode_attrs(types: dict[str, str], attrs: dict[str, Any]) -> list[str]:
    """The attr lines of a request to the library's C++ inference / check function."""
    lines = [str(len(attrs))]
    for n, v in attrs.items():
        t = types[n]
        if t == "string":
            text = "x" + v.encode().hex()
        elif t == "dtype":
            text = np.dtype(v).name
        elif t in _ATTR_ARRAY:
            text = "L" + ",".join(repr(float(x)) if t == "float_list" else str(int(x))
                                  for x in v)
        elif t == "bool":
            text = str(int(v))
        elif t in ("float", "double"):
            text = repr(float(v))
        else:
            text = str(int(v))
        lines.append(f"{n} {text}")
    return lines


def _make_check(s: _OpSpec, check_c: Any = None) -> Callable[..., None] | None:
    """The op's attr check: every value must convert exactly to the C++ type (its range),
    then the library's own check (SetCheckAttrFn), if it declares one."""
    typed = [(n, t) for n, t, _ in s.attrs if t != "string"]
    if not typed and check_c is None:
        return None
    types = {n: t for n, t, _ in s.attrs}
    name = s.name.encode()

    def check(**attrs: Any) -> None:
        for n, t in typed:
            if attrs.get(n) is not None:
                _to_ffi(s.name, n, t, attrs[n])
        if check_c is None:
            return
        given = {n: v for n, v in attrs.items() if v is not None}
        req = "\n".join(_encode_attrs(types, given)) + "\n"
        answer = check_c(name, req.encode()).decode("utf-8", "replace")
        status, _, body = answer.partition("\n")
        if status == "ok":
            return
        if status == "AttrError":
            attr, _, msg = body.partition("\n")
            raise ValueError(f"attr '{attr}': {msg}")
        raise (TypeError if status == "TypeError" else ValueError)(body)
    return check


def _check_counts(s: _OpSpec, ins: Sequence[Any]) -> None:
    """Exact counts (``Input(name, n)``) and optional minimums the jflow Input cannot say."""
    for spec, x in zip(s.in_specs, ins):
        if spec.name not in s.in_counts or not isinstance(x, list):
            continue
        opt, cnt, mn = s.in_counts[spec.name]
        n = len(x)
        if opt and n == 0:
            continue
        if cnt is not None and n != cnt:
            raise ValueError(f"input '{spec.name}' takes {'0 or ' if opt else ''}exactly "
                             f"{cnt} tensors, got {n}")
        if cnt is None and n < mn:
            raise ValueError(f"input '{spec.name}' takes {'0 or ' if opt else ''}at least "
                             f"{mn} tensors, got {n}")


def _group_outputs(s: _OpSpec, flat: list[Any]) -> list[Any]:
    """Flat output descs -> one per declared output (a list for the variadic one)."""
    extra = len(flat) - len(s.outputs) + 1
    out, i = [], 0
    for spec in s.out_specs:
        if spec.variadic:
            out.append(flat[i:i + extra])
            i += extra
        else:
            out.append(flat[i])
            i += 1
    return out[0] if len(out) == 1 and s.out_specs[0].variadic else out


def _make_infer(s: _OpSpec, infer_c: Any) -> Callable[..., Any]:
    if s.same_as is not None:
        k = s.same_as

        def same(*ins: Any, **attrs: Any) -> list[Any]:
            _check_counts(s, ins)
            d = jax.ShapeDtypeStruct(tuple(ins[k].shape), ins[k].dtype)
            return _group_outputs(s, [d] * sum(s.out_init))
        return same

    types = {n: t for n, t, _ in s.attrs}
    name = s.name.encode()

    def infer(*ins: Any, **attrs: Any) -> list[Any]:
        _check_counts(s, ins)
        ins = tuple(a for x in ins for a in (x if isinstance(x, list) else
                                              [] if x is None else [x]))
        answer = infer_c(name, _encode_request(types, ins, attrs)).decode("utf-8", "replace")
        status, _, body = answer.partition("\n")
        if status == "TypeError":
            raise TypeError(body)
        if status != "ok":
            raise ValueError(body)
        outs = []
        for line in body.strip().splitlines():
            dt, _, *dims = line.split()
            try:
                dtype = as_dtype(dt).np
            except TypeError:
                raise TypeError(f"the C++ inference function set an unknown dtype '{dt}'"
                                ) from None
            outs.append(jax.ShapeDtypeStruct(tuple(int(d) for d in dims), dtype))
        return _group_outputs(s, outs)
    return infer


def _build_ffi(kernel: Kernel, op: Any, attrs: dict, out_avals: list, layout: Any
               ) -> Callable[..., list[Any]]:
    """The ``ffi`` backend: one ``jax.ffi.ffi_call`` of the kernel's target."""
    fk: FfiKernel = kernel.fn

    def run(*flat: Any) -> list[Any]:
        return fk.call(flat, out_avals, attrs, layout)
    return run


register_backend("ffi", _build_ffi)
