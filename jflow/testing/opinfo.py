"""PyTorch's own op test database (OpInfo) run against jflow: a differential test.

PyTorch keeps one entry per op in ``torch.testing._internal.common_methods_invocations.op_db``
(sample inputs per dtype, whether the op has gradients, aliases). This module runs those
samples through PyTorch and through jflow and compares the results:

- **resolve**: an OpInfo's jflow callable comes from its name (``"linalg.solve"`` ->
  ``flow.linalg.solve``, ``"__radd__"`` -> ``flow.Tensor.__radd__``); an op that PyTorch's
  database wraps in a lambda (``lambda x, n: torch.polygamma(n, x)``) runs that lambda with
  ``torch`` bound to jflow, so its argument shuffling is PyTorch's own.
- **values**: float32 samples, outputs compared by shape, dtype and value (``RTOL``/``ATOL``);
  ops that draw random numbers (jflow's generator is not PyTorch's) and ``empty`` factories
  compare shape and dtype only (``SHAPE_ONLY``).
- **gradients**: float64 samples with ``requires_grad``; a random real cotangent per
  differentiable output, and the gradients of every leaf the sample holds compared. The
  suite compares its one gradient sample in float32, on the first value sample's run or
  (through a gradient wrapper) right after the value samples
  (``check_opinfo(float32_grads=True)``: no float64 forward to compile).

A sample PyTorch itself refuses is skipped. PyTorch is needed (it is a test-only reference:
``tests/test_opinfo.py`` runs this where PyTorch is installed, ``benchmarks/opinfo_sweep.py``
runs every sample and writes the report).
"""

from __future__ import annotations

import dataclasses
import itertools
import types
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import jflow as flow

#: Value tolerances (float32 samples) and gradient tolerances (float64 samples).
RTOL, ATOL = 1e-4, 1e-5
GRAD_RTOL, GRAD_ATOL = 1e-5, 1e-7
#: Gradient tolerances where a gradient sample runs in float32 (``check_opinfo``'s
#: ``float32_grads``): the value tolerances.
GRAD32_RTOL, GRAD32_ATOL = RTOL, ATOL

#: OpInfos whose values are random draws or uninitialized memory: only the outputs' shapes and
#: dtypes are compared (jflow's generator is seeded like PyTorch's but draws other numbers).
SHAPE_ONLY = frozenset({
    "bernoulli", "cauchy", "exponential", "geometric", "log_normal", "normal", "uniform",
    "multinomial", "rand_like", "randn", "randn_like", "randint", "randint_like",
    "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d",
    "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout",
    "nn.functional.rrelu", "svd_lowrank", "pca_lowrank",
    "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d",
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
    "empty_permuted",
})


@dataclasses.dataclass
class Outcome:
    """One sample's result: ``kind`` is ``pass``, ``mismatch``, ``error`` (jflow raised where
    PyTorch computed) or ``skip`` (PyTorch refused the sample)."""

    kind: str
    detail: str = ""


def op_db() -> list[Any]:
    """PyTorch's OpInfo list (imports PyTorch's testing internals: a few seconds)."""
    from torch.testing._internal.common_methods_invocations import op_db as db
    return list(db)


def key(info: Any) -> str:
    """``name`` or ``name.variant``: the id of an OpInfo in reports and allow-lists."""
    return f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name


# -- resolving an OpInfo to a jflow callable --------------------------------------------------

def _path(root: Any, dotted: str) -> Any:
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


class _TorchAsFlow(types.ModuleType):
    """``torch`` for a lambda from PyTorch's database: every name resolves on jflow."""

    def __init__(self) -> None:
        super().__init__("torch")

    def __getattr__(self, name: str) -> Any:
        value = getattr(flow, name, None)
        if value is None:
            raise AttributeError(f"jflow has no torch.{name}")
        return value


#: id(module globals) -> (those globals, how many names they held, the copy ``_on_flow``
#: binds): PyTorch's database module holds thousands of names, and copying them was 3 ms of
#: every sample's run.
_FLOW_GLOBALS: dict[int, tuple[dict, int, dict]] = {}


def _on_flow(fn: Callable) -> Callable:
    """A function of PyTorch's testing code (a sample's lambda, a gradient wrapper) with its
    global ``torch`` bound to jflow (one copy of each module's globals, made again when the
    module gained or lost a name)."""
    src = fn.__globals__
    got = _FLOW_GLOBALS.get(id(src))
    if got is None or got[0] is not src or got[1] != len(src):
        got = (src, len(src), dict(src, torch=_TorchAsFlow(), wrapper_set_seed=_seeded))
        _FLOW_GLOBALS[id(src)] = got
    names = got[2]
    out = types.FunctionType(fn.__code__, names, fn.__name__, fn.__defaults__, fn.__closure__)
    out.__kwdefaults__ = fn.__kwdefaults__
    return out


def _unseeded(op: Callable) -> Callable:
    """A database lambda with its ``wrapper_set_seed`` calls left unseeded (to tell whether
    the op draws random numbers); any other op as it is."""
    if not (isinstance(op, types.FunctionType) and "torch.testing" in (op.__module__ or "")):
        return op
    names = dict(op.__globals__, wrapper_set_seed=lambda f, *a, **k: f(*a, **k))
    out = types.FunctionType(op.__code__, names, op.__name__, op.__defaults__, op.__closure__)
    out.__kwdefaults__ = op.__kwdefaults__
    return out


def _torch_seed(seed: int) -> None:
    """Seeds PyTorch's CPU generator, the one the database's samples and ops draw from.

    ``torch.manual_seed`` also queues a seed for every accelerator backend, formatting the
    caller's stack three times (~1.5 ms a call, four calls a sample)."""
    import torch

    torch.default_generator.manual_seed(seed)


def _seeded(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    flow.manual_seed(42)
    return fn(*args, **kwargs)


def resolve(info: Any) -> Callable | None:
    """The jflow callable an OpInfo tests, or None where jflow has none."""
    import torch

    op = info.op
    if isinstance(op, types.FunctionType) and "torch.testing" in (op.__module__ or ""):
        if op.__code__.co_freevars:
            return None
        fn = _on_flow(op)
        target = _lambda_target(op)
        if target is not None and _path(flow, target) is None:
            return None
        # an attribute the lambda reads that neither jflow nor its Tensor has (``x.resize_``)
        # makes the op missing, not an error
        spaces = (flow, flow.Tensor, flow.nn, flow.nn.functional, flow.linalg, flow.special,
                  flow.fft)
        attrs = [n for n in _code_names(op.__code__) if n not in op.__globals__]
        if any(all(getattr(ns, n, None) is None for ns in spaces) for n in attrs):
            return None
        return fn
    if isinstance(op, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)) or \
            type(op).__name__ == "_JittedFunction":
        return None  # ATen internals and CUDA jiterator kernels: no public Python API
    if info.name.startswith("__") or type(op).__name__ in ("method_descriptor",
                                                          "wrapper_descriptor"):
        meth = getattr(flow.Tensor, getattr(op, "__name__", info.name), None)
        return meth
    found = _path(flow, info.name)
    if found is None and not info.name.count("."):
        found = getattr(flow.Tensor, info.name, None)  # method-only ops
    return found if callable(found) else None


def _code_names(code: types.CodeType) -> list[str]:
    """The global and attribute names a code object reads, nested lambdas included."""
    names = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names += _code_names(c)
    return names


def _lambda_target(op: Callable) -> str | None:
    """The jflow attribute a database lambda reaches through ``torch`` (``Tensor.item``,
    ``polygamma``), read from its code's names, so a lambda over a missing function counts
    as missing rather than as an error."""
    names = _code_names(op.__code__)
    if "torch" not in names:
        return None
    i = names.index("torch")
    rest = [n for n in names[i + 1:] if n not in ("wrapper_set_seed",)]
    if not rest:
        return None
    if rest[0] in ("Tensor", "nn", "linalg", "special", "fft") and len(rest) > 1:
        return ".".join(rest[:2] if rest[0] != "nn" else rest[:3])
    return rest[0]


# -- converting samples and comparing results ------------------------------------------------

def _dtype(d: Any) -> Any:
    return getattr(flow, str(d).rsplit(".", 1)[1])


class _Converter:
    """Converts a sample's PyTorch values to jflow values, one jflow tensor per PyTorch
    tensor (shared tensors stay shared; leaves keep ``requires_grad``)."""

    def __init__(self) -> None:
        self.tensors: dict[int, tuple[Any, Any]] = {}

    def __call__(self, obj: Any) -> Any:
        import torch

        if isinstance(obj, torch.Tensor):
            got = self.tensors.get(id(obj))
            if got is None:
                got = (obj, self._tensor(obj))
                self.tensors[id(obj)] = got
            return got[1]
        if isinstance(obj, torch.dtype):
            return _dtype(obj)
        if isinstance(obj, torch.device):
            return str(obj)
        if isinstance(obj, torch.Size):
            return tuple(obj)
        if isinstance(obj, (torch.memory_format, torch.layout)):
            name = str(obj).rsplit(".", 1)[1]
            if not hasattr(flow, name):
                raise AttributeError(f"jflow has no torch.{name}")
            return getattr(flow, name)
        if isinstance(obj, torch.Generator):
            return None
        if isinstance(obj, torch.nn.Module):  # a module argument (a distance function)
            return self._module(obj)
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            return type(obj)(*[self(v) for v in obj])
        if isinstance(obj, (list, tuple)):
            return type(obj)(self(v) for v in obj)
        if isinstance(obj, dict):
            return {k: self(v) for k, v in obj.items()}
        if callable(obj) and (getattr(obj, "__module__", "") or "").startswith("torch"):
            name = getattr(obj, "__name__", "")
            module = obj.__module__.replace("torch", "", 1).lstrip(".")
            found = _path(flow, f"{module}.{name}" if module else name) or getattr(flow, name,
                                                                                   None)
            if found is None:
                raise AttributeError(f"jflow has no {obj.__module__}.{name}")
            return found
        return obj

    @staticmethod
    def _module(m: Any) -> Any:
        """jflow's module of the same class name, with the PyTorch module's plain settings
        (a module without parameters, as the database passes)."""
        cls = getattr(flow.nn, type(m).__name__, None)
        if cls is None or list(m.parameters()) or list(m.buffers()):
            raise AttributeError(f"jflow has no module matching {type(m).__name__}")
        out = cls()
        for k, v in vars(m).items():
            if not k.startswith("_") and isinstance(v, (bool, int, float, str, type(None))):
                setattr(out, k, v)
        return out

    @staticmethod
    def _tensor(t: Any) -> Any:
        import torch

        base = t._base
        if base is not None and base.dtype == t.dtype and not t.is_conj() and not t.is_neg():
            # a view in the sample (as_strided's partial views): rebuilt on its base, so
            # storage offsets mean the same thing in jflow
            out = _Converter._tensor(base.detach()).as_strided(
                tuple(t.shape), t.stride(), t.storage_offset())
            if t.requires_grad and t.is_leaf:
                out.requires_grad_(True)
            return out
        src = t.detach().resolve_conj().resolve_neg().cpu()
        out = _host_tensor(src.float().numpy().astype(_dtype(src.dtype).np)
                           if src.dtype == torch.bfloat16 else src.numpy(), _dtype(src.dtype))
        if t.requires_grad:
            out.requires_grad_(True)
        return out


def _host_tensor(arr: np.ndarray, dtype: Any) -> Any:
    """A jflow tensor holding a copy of ``arr`` (of ``dtype``), moved with ``device_put``.

    ``flow.tensor`` compiles a jitted identity for a (shape, dtype) it has seen twice (fast
    for a training loop's batches, jflow.host_transfer); the harness converts hundreds of
    shapes a handful of times each, so that compile would be most of what conversion costs.
    """
    out = flow.from_numpy(np.array(arr, dtype=dtype.np, copy=True))
    return out if out.dtype == dtype else out.to(dtype)


def _np(t: Any) -> np.ndarray:
    import torch

    if isinstance(t, torch.Tensor):
        if t._is_zerotensor():  # a gradient PyTorch knows is zero without storing it
            return np.zeros(tuple(t.shape), str(t.dtype).rsplit(".", 1)[1])
        t = t.detach().resolve_conj().resolve_neg().cpu()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    out = np.asarray(t.detach().numpy())
    return out.astype(np.float32) if t.dtype == flow.bfloat16 else out


def compare(want: Any, got: Any, rtol: float, atol: float, shape_only: bool = False,
            where: str = "output") -> str:
    """'' when ``got`` (jflow) equals ``want`` (PyTorch), else what differs."""
    import torch

    if isinstance(want, torch.Tensor):
        if not isinstance(got, flow.Tensor):
            return f"{where}: expected a tensor, got {type(got).__name__}"
        if tuple(want.shape) != tuple(got.shape):
            return f"{where}: shape {tuple(got.shape)}, PyTorch {tuple(want.shape)}"
        if str(want.dtype).rsplit(".", 1)[1] != str(got.dtype).rsplit(".", 1)[1]:
            return f"{where}: dtype {got.dtype}, PyTorch {want.dtype}"
        if shape_only:
            return ""
        w, g = _np(want), _np(got)
        if w.dtype.kind in "biu":
            ok = np.array_equal(w, g)
        else:
            ok = np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
        if not ok:
            with np.errstate(all="ignore"):
                err = np.nanmax(np.abs(g.astype(np.complex128) - w)) if w.size else 0.0
            return f"{where}: values differ (max abs error {err:.3g})"
        return ""
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            return f"{where}: expected a sequence of {len(want)}, got {type(got).__name__}"
        for i, (w, g) in enumerate(zip(want, got)):
            why = compare(w, g, rtol, atol, shape_only, f"{where}[{i}]")
            if why:
                return why
        return ""
    if isinstance(want, (bool, int, float, complex)) and not isinstance(want, torch.Tensor):
        if isinstance(got, flow.Tensor):
            return f"{where}: expected a Python {type(want).__name__}, got a tensor"
        if shape_only:
            return ""
        if isinstance(want, float) and np.isnan(want):
            return "" if isinstance(got, float) and np.isnan(got) else f"{where}: {got} != nan"
        return "" if np.isclose(got, want, rtol=rtol, atol=atol) else f"{where}: {got} != {want}"
    if want is None:
        return "" if got is None else f"{where}: expected None"
    return ""


def _same(a: Any, b: Any) -> bool:
    """Whether two PyTorch results are identical (NaN equal to NaN)."""
    import torch

    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
                and bool(torch.equal(a.detach().isnan(), b.detach().isnan()) if
                         a.is_floating_point() or a.is_complex() else True)
                and bool(torch.equal(torch.nan_to_num(a.detach()), torch.nan_to_num(b.detach()))
                         if a.is_floating_point() or a.is_complex()
                         else torch.equal(a.detach(), b.detach())))
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(
            _same(x, y) for x, y in zip(a, b))
    return True


def _leaves(sample: Any) -> list[Any]:
    import torch

    out: list[Any] = []

    def walk(o: Any) -> None:
        if isinstance(o, torch.Tensor):
            if o.requires_grad and o.is_leaf and all(o is not x for x in out):
                out.append(o)
        elif isinstance(o, (list, tuple)):
            for v in o:
                walk(v)
        elif isinstance(o, dict):
            for v in o.values():
                walk(v)

    walk([sample.input, sample.args, sample.kwargs])
    return out


def _outputs(out: Any) -> list[Any]:
    """The floating outputs of a result (tensors in nested sequences)."""
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _outputs(o)]
    return [out] if hasattr(out, "dtype") and hasattr(out, "shape") else []


def run_sample(info: Any, fn: Callable, sample: Any, grad: bool = False,
               grad_tol: tuple[float, float] = (GRAD_RTOL, GRAD_ATOL)) -> Outcome:
    """Runs one sample through PyTorch (``info.op``) and jflow (``fn``) and compares its
    values, or (``grad``) its gradients (at ``grad_tol``: rtol, atol)."""
    values, grads = _run(info, fn, sample, grad=grad, values=not grad, grad_tol=grad_tol)
    return grads if grad else values


def run_sample_values_and_grads(info: Any, fn: Callable, sample: Any,
                                grad_tol: tuple[float, float] = (GRAD_RTOL, GRAD_ATOL)
                                ) -> tuple[Outcome, Outcome]:
    """Runs one gradient sample and compares both its values and its gradients, from one
    forward on each side (the outcomes of ``run_sample(..., grad=False)`` and ``grad=True``
    on this sample, where the entry's gradient wrapper is the plain call)."""
    if _grad_wrapper(info) is not None:
        raise ValueError(f"run_sample_values_and_grads: {key(info)} differentiates through "
                         f"its gradient wrapper, so its values are compared without it: "
                         f"use run_sample for each")
    values, grads = _run(info, fn, sample, grad=True, values=True, grad_tol=grad_tol)
    return values, grads


def _run(info: Any, fn: Callable, sample: Any, grad: bool, values: bool,
         grad_tol: tuple[float, float] = (GRAD_RTOL, GRAD_ATOL)) -> tuple[Outcome, Outcome]:
    """The shared body: the value and the gradient outcomes asked for (the others None)."""
    import torch

    def both(o: Outcome) -> tuple[Any, Any]:
        return (o if values else None), (o if grad else None)

    name = info.name
    # Gradients go through the entry's wrapper, as PyTorch's own gradient tests do: e.g. a
    # Hermitian input is made Hermitian inside (``A + A.mH``), so the gradient does not
    # depend on which triangle an implementation reads. Random ops' wrappers are left out.
    wrap = _grad_wrapper(info) if grad else None
    _torch_seed(0)
    try:
        if wrap is None:
            want = info.op(sample.input, *sample.args, **sample.kwargs)
        else:
            want = wrap(info.op, sample.input, *sample.args, **sample.kwargs)
    except Exception as e:  # noqa: BLE001  (a sample PyTorch refuses is not ours to judge)
        return both(Outcome("skip", f"PyTorch raised {type(e).__name__}"))
    # a sample whose PyTorch result changes with the seed draws random numbers (dropout
    # passed positionally, a random op the list does not name): shapes and dtypes only
    # (the database's lambdas seed every call: run them unseeded, under two seeds)
    unseeded = _unseeded(info.op)
    draws = []
    for seed in (1, 2):
        _torch_seed(seed)
        with torch.no_grad():
            try:
                draws.append(unseeded(sample.input, *sample.args, **sample.kwargs) if wrap is None
                             else wrap(unseeded, sample.input, *sample.args, **sample.kwargs))
            except Exception:  # noqa: BLE001
                draws.append(want)
    try:
        random_draw = not _same(draws[0], draws[1])
    except Exception:  # noqa: BLE001  (a dtype PyTorch cannot compare: chalf)
        random_draw = False
    conv = _Converter()
    try:
        args = conv([sample.input, list(sample.args), dict(sample.kwargs)])
        if wrap is None:
            got = fn(args[0], *args[1], **args[2])
        else:
            got = _on_flow(wrap)(fn, args[0], *args[1], **args[2])
    except Exception as e:  # noqa: BLE001  (any jflow failure is the finding)
        return both(Outcome("error", f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
                            if str(e) else type(e).__name__))
    post = getattr(sample, "output_process_fn_grad", None)
    if post is not None and isinstance(post, types.FunctionType):
        # the sample's own projection of its outputs onto what is unique (eigenvectors up to
        # sign: an eigh sample compares |V|), for values and gradients alike
        try:
            want, got = post(want), _on_flow(post)(got)
        except Exception as e:  # noqa: BLE001
            return both(Outcome("error",
                                f"output_process_fn_grad: {type(e).__name__}: {e}"[:200]))
    shape_only = name in SHAPE_ONLY or random_draw
    value_out = grad_out = None
    try:
        if values:
            why = compare(want, got, RTOL, ATOL, shape_only)
            value_out = Outcome("mismatch", why) if why else Outcome("pass")
        if grad:
            grad_out = _compare_grads(want, got, _leaves(sample), conv, shape_only,
                                      *grad_tol)
    except Exception as e:  # noqa: BLE001  (a result that cannot even be compared)
        failed = Outcome("error", f"comparing: {type(e).__name__}: {str(e)[:160]}")
        value_out = value_out or (failed if values else None)
        grad_out = failed if grad else None
    return value_out, grad_out


def _compare_grads(want: Any, got: Any, leaves: list[Any], conv: _Converter,
                   shape_only: bool = False, rtol: float = GRAD_RTOL,
                   atol: float = GRAD_ATOL) -> Outcome:
    import torch

    outs_t = [o for o in _outputs(want) if o.requires_grad and (o.is_floating_point()
                                                                 or o.is_complex())]
    if not leaves or not outs_t:
        return Outcome("skip", "no differentiable output")
    got_outs = _outputs(got)
    outs_w = _outputs(want)
    if len(got_outs) != len(outs_w):
        return Outcome("mismatch", f"{len(got_outs)} outputs, PyTorch {len(outs_w)}")
    rng = np.random.default_rng(0)
    # PyTorch's side differentiates sum(output * c) (complex: real * c + imag * ci); jflow's
    # takes the same cotangents as grad_outputs (c + i ci: PyTorch's convention for a real
    # loss of a complex output), so no loss of its own is built: a product, a sum and their
    # backwards per output shape would each compile an executable
    loss_t, outs_f, cots_f = 0, [], []
    for w, g in zip(outs_w, got_outs):
        if not (w.requires_grad and (w.is_floating_point() or w.is_complex())) or \
                w.numel() == 0:  # an empty output carries no gradient either way
            continue
        if not isinstance(g, flow.Tensor) or not g.requires_grad:
            if shape_only:  # a random draw PyTorch marks differentiable (bernoulli: zero)
                continue
            return Outcome("mismatch", "an output PyTorch differentiates does not require grad")
        c = rng.standard_normal(tuple(w.shape))
        if w.is_complex():
            ci = rng.standard_normal(tuple(w.shape))
            loss_t = loss_t + (w.real * torch.tensor(c) + w.imag * torch.tensor(ci)).sum()
            cot = c + 1j * ci
        else:
            loss_t = loss_t + (w * torch.tensor(c, dtype=w.dtype)).sum()
            cot = c
        if tuple(g.shape) != tuple(w.shape):
            return Outcome("mismatch", f"output shape {tuple(g.shape)}, PyTorch "
                                       f"{tuple(w.shape)}")
        outs_f.append(g)
        cots_f.append(_host_tensor(cot, g.dtype))
    if not outs_f:  # only random draws, which jflow does not differentiate
        return Outcome("pass")
    try:
        gt = torch.autograd.grad(loss_t, leaves, allow_unused=True)
    except Exception as e:  # noqa: BLE001
        return Outcome("skip", f"PyTorch's backward raised {type(e).__name__}")
    mine = [conv.tensors[id(t)][1] for t in leaves]
    try:
        gf = flow.autograd.grad(outs_f, mine, grad_outputs=cots_f, allow_unused=True)
    except Exception as e:  # noqa: BLE001
        return Outcome("error", f"backward: {type(e).__name__}: {str(e).splitlines()[0][:160]}"
                       if str(e) else type(e).__name__)
    for i, (w, g) in enumerate(zip(gt, gf)):
        if w is None:
            if g is not None and np.any(_np(g) != 0):
                return Outcome("mismatch", f"grad[{i}]: nonzero where PyTorch has none")
            continue
        if g is None:
            if np.any(_np(w) != 0):
                return Outcome("mismatch", f"grad[{i}]: None where PyTorch has one")
            continue
        why = compare(w, g, rtol, atol, shape_only, where=f"grad[{i}]")
        if why:
            return Outcome("mismatch", why)
    return Outcome("pass")


#: The dtype of value samples, in order of preference: the first one an OpInfo supports
#: (integer-only ops such as ``gcd`` run their int64 samples).
FORWARD_DTYPES = ("float32", "int64", "bool", "complex64", "float64")


def samples(info: Any, dtype_name: str, limit: int, grad: bool,
            requires_grad: bool | None = None) -> Iterator[Any]:
    """The first ``limit`` samples of ``info`` for ``dtype_name`` (for values: the first of
    ``FORWARD_DTYPES`` PyTorch's entry supports)."""
    import torch

    supported = info.supported_dtypes("cpu")
    if not grad:
        dtype_name = next((d for d in FORWARD_DTYPES if getattr(torch, d) in supported), "")
        if not dtype_name:
            return
    dtype = getattr(torch, dtype_name)
    if dtype not in supported:
        return
    if grad and not info.supports_autograd:
        return
    _torch_seed(0)  # the database draws its inputs from PyTorch's global generator
    gen = info.sample_inputs("cpu", dtype,
                             requires_grad=grad if requires_grad is None else requires_grad)
    for i, s in enumerate(gen):
        if i >= limit:
            return
        yield s


@dataclasses.dataclass
class OpReport:
    """Every compared sample of one OpInfo."""

    key: str
    present: bool
    forward: list[Outcome] = dataclasses.field(default_factory=list)
    grads: list[Outcome] = dataclasses.field(default_factory=list)

    def failures(self) -> list[str]:
        return [f"forward: {o.kind}: {o.detail}" for o in self.forward
                if o.kind in ("error", "mismatch")] + \
               [f"gradient: {o.kind}: {o.detail}" for o in self.grads
                if o.kind in ("error", "mismatch")]


def check_opinfo(info: Any, forward_samples: int = 6, grad_samples: int = 3,
                 float32_grads: bool = False) -> OpReport:
    """Runs an OpInfo's first float32 samples (values) and float64 samples (gradients).

    ``float32_grads``: the first value sample is drawn requiring grad and is also the first
    gradient sample: one float32 run compares its values and its gradients (against
    PyTorch's float32 gradients, at ``GRAD32_RTOL``/``GRAD32_ATOL``); further gradient
    samples run in float64. Why: each op, shape and dtype an eager jflow call meets is an
    XLA compile, and the float64 forward of the gradient sample was a quarter of the compiles
    of ``tests/test_opinfo.py`` (two value samples, one gradient sample) while comparing
    nothing the float32 run cannot. An entry differentiated through a gradient wrapper
    (values are compared without it) or listed in ``SEPARATE_GRAD_RUN`` runs its first
    gradient sample in float32 on its own, after the value samples (its forward's programs
    are compiled by then: only the wrapper's and the backward's compile). Entries whose
    values are in another dtype, with no float32 backward, or listed in ``GRAD_FLOAT64``
    keep the float64 run.
    """
    import warnings

    fn = resolve(info)
    rep = OpReport(key(info), fn is not None)
    if fn is None:
        return rep
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if float32_grads and forward_samples > 0 and grad_samples > 0 and \
                _float32_grads_apply(info):
            fw = samples(info, "float32", forward_samples, grad=False, requires_grad=True)
            first = next(fw, None)
            if first is not None:
                values, grads = run_sample_values_and_grads(info, fn, first,
                                                            (GRAD32_RTOL, GRAD32_ATOL))
                rep.forward.append(values)
                rep.grads.append(grads)
                for s in fw:
                    rep.forward.append(run_sample(info, fn, s))
                if grad_samples > 1:  # (the float64 samples after the first)
                    for s in itertools.islice(samples(info, "float64", grad_samples, grad=True),
                                              1, None):
                        rep.grads.append(run_sample(info, fn, s, grad=True))
                return rep
        for s in samples(info, "float32", forward_samples, grad=False):
            rep.forward.append(run_sample(info, fn, s))
        first32 = 0
        if float32_grads and forward_samples > 0 and grad_samples > 0 and \
                _float32_grad_sample_applies(info):
            # its own float32 run: the value run compiled its forward's programs
            for s in samples(info, "float32", 1, grad=True):
                rep.grads.append(run_sample(info, fn, s, grad=True,
                                            grad_tol=(GRAD32_RTOL, GRAD32_ATOL)))
                first32 = 1
        for s in itertools.islice(samples(info, "float64", grad_samples, grad=True),
                                  first32, None):
            rep.grads.append(run_sample(info, fn, s, grad=True))
    return rep


#: OpInfos whose gradients ``check_opinfo(float32_grads=True)`` still compares in float64
#: (name -> why): PyTorch's float32 backward rounds beyond the float32 tolerances.
GRAD_FLOAT64: dict[str, str] = {
    # on the (5, 5, 5) sample PyTorch's float32 gradient is 3.6e-3 from the float64 one
    # (jflow's: 4e-7)
    "logcumsumexp": "PyTorch's float32 backward rounds; jflow's is within 4e-7 of float64",
}

#: OpInfos whose float32 gradient sample runs on its own rather than on the first value
#: sample's run (name -> why); it is drawn requiring grad, as a wrapper entry's is.
SEPARATE_GRAD_RUN: dict[str, str] = {
    # its samples drawn requiring grad are one, two without: a value sample would be lost
    "nn.functional.multi_head_attention_forward": "fewer samples when drawn requiring grad",
}


def _float32_grad_sample_applies(info: Any) -> bool:
    """Whether ``float32_grads`` compares ``info``'s first gradient sample in float32, on a
    run of its own or (``_float32_grads_apply``) on the first value sample's run."""
    import torch

    return (info.supports_autograd and key(info) not in GRAD_FLOAT64
            and _forward_dtype(info) == "float32"
            and torch.float32 in info.supported_backward_dtypes("cpu"))


def _float32_grads_apply(info: Any) -> bool:
    """Whether ``float32_grads`` compares ``info``'s first gradient sample in float32 on the
    first value sample's run (see ``check_opinfo``): not through a gradient wrapper (values
    are compared without it) nor where drawing it requiring grad changes the samples."""
    import torch

    return (_float32_grad_sample_applies(info) and key(info) not in SEPARATE_GRAD_RUN
            and _grad_wrapper(info) is None
            and torch.float64 in info.supported_dtypes("cpu"))


def _grad_wrapper(info: Any) -> Callable | None:
    """The entry's gradient wrapper (``A + A.mH`` for a Hermitian input), or None where it is
    the plain call (or a random op's seeding wrapper, which the comparison leaves out)."""
    w = info.gradcheck_wrapper
    return None if w.__name__ in ("<lambda>", "wrapper_set_seed") else w


def _forward_dtype(info: Any) -> str:
    """The dtype of ``info``'s value samples (see ``FORWARD_DTYPES``)."""
    import torch

    supported = info.supported_dtypes("cpu")
    return next((d for d in FORWARD_DTYPES if getattr(torch, d) in supported), "")


#: OpInfos that differ from PyTorch on purpose or through a known, tracked gap: name -> why.
#: Each deliberate difference is documented in docs/porting.md ("What differs, and why").
ALLOWED: dict[str, str] = {
    # PyTorch 2.13 gives `input` the gradient at the scattered elements; the derivative is
    # the gradient outside them (flagged in the PR that added the op). jflow returns the
    # derivative; docs/porting.md, "What differs".
    "as_strided_scatter": "PyTorch's input gradient is wrong; jflow's is the derivative",
    # complex32 is not supported (docs/porting.md, "Not supported"): chalf raises
    "chalf": "complex32 is not supported",
    # float32 rounding of exp of a matrix with entries up to 9: on the 5x5x5 sample jflow's
    # result is 0.031 from the float64 value, PyTorch's 0.050 (out of 9.3e4)
    "matrix_exp": "float32 rounding; jflow's result is closer to the float64 value",
    # jflow has no sparse layouts (docs/porting.md, "Not supported")
    "to_sparse": "jflow has no sparse layouts: Tensor.to_sparse() raises NotImplementedError",
}
