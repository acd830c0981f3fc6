"""The jflow ``Tensor``: a thin, mutable handle on an immutable ``jax.Array`` (or tracer).

In-place operations replace ``_value`` and bump ``_version``; everything else is a pure
function of values, which is what lets a Tensor flow through ``jax.jit`` / ``jax.vmap`` as a
pytree. ``Tensor`` is the bottom layer: it imports no other jflow layer. Methods that need a
higher layer are attached by the layer that owns them (as JAX's ``array_methods.py`` does):
``backward`` / ``register_hook`` by :mod:`jflow.autograd.engine`, ``to_global`` / ``to_local``
by :mod:`jflow.sharding.global_tensor`, operators and op-backed methods by
:mod:`jflow.tensor_methods` and :mod:`jflow.tensor_indexing`.
"""

from __future__ import annotations

import copy
import functools
import math
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from . import dtypes as _dt
from ._dims import wrap_dim
from ._malloc_trim import PENDING as _TRIM_PENDING
from ._malloc_trim import trim_pending as _trim_pending
from .device import DEFAULT_IS_META as _DEFAULT_IS_META
from .device import META as _META
from .device import MetaValue as _MetaValue
from .device import device as _device
from .device import is_meta_device as _is_meta_device
from .device import meta_value as _meta_value
from .device import no_data as _no_data
from .host_transfer import to_device
from .value_bounds import note_host as _note_bounds

__all__ = ["Tensor", "Size", "is_tensor"]

#: Whether grad mode is on (``flow.is_grad_enabled``), set by :mod:`jflow.autograd.grad_mode`
#: (a layer above). ``numpy()`` / ``__array__`` read it: as in PyTorch, a tensor that requires
#: grad is refused only while grad mode is on (under ``no_grad`` it converts).
GRAD_ENABLED: list[Callable[[], bool]] = [lambda: True]

_NUMPY_REQUIRES_GRAD = ("Can't call numpy() on Tensor that requires grad. Use "
                        "tensor.detach().numpy() instead.")


class _Reads(threading.local):
    """Per thread: ``checked`` is False while jflow itself converts data that may hold
    tensors (``flow.tensor([t0, t1])``: NumPy reads each through ``__array__``), which
    PyTorch allows for tensors that require grad."""

    checked = True


_READS = _Reads()


class Size(tuple):
    """A tensor's shape: a tuple of ints printed as ``flow.Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"flow.Size({list(self)})"

    def numel(self) -> int:
        """The number of elements of a tensor of this shape (1 for ``()``)."""
        n = 1
        for s in self:
            n *= s
        return n


class Tensor:
    """A multi-dimensional array with autograd metadata (see ``flow.tensor`` to create one)."""

    # ``_output_nr`` (which output of ``grad_fn`` this is) is set only together with grad_fn;
    # ``_global`` is None for a local tensor, else ``(placement, nd_sbp)`` (jflow.sharding)
    # ``_grad`` is ``.grad`` (a property: assignments are checked; jflow's own writes, which
    # are right by construction, set the slot); ``_view`` is set only on a view
    # (jflow.views.alias.View, a subclass with the same slots)
    __slots__ = ("_value", "_requires_grad", "_grad", "grad_fn", "_version", "_output_nr",
                 "_global", "_view", "__weakref__")

    #: True for views (jflow.views): in-place writes go through to the base
    _aliases = False

    def __init__(self, *args: Any, dtype: Any = None, device: Any = None,
                 requires_grad: bool = False) -> None:
        """``flow.Tensor(data)`` copies data as the default float dtype (as ``torch.Tensor``);
        ``flow.Tensor(2, 3)`` / ``flow.Tensor(flow.Size([2, 3]))`` makes a zero-filled tensor of
        that shape (immutable arrays have no uninitialised memory); ``flow.Tensor()`` is empty.
        As in PyTorch, a list or tuple is data: ``flow.Tensor((2, 3))`` is ``[2., 3.]``."""
        d = _dt.get_default_dtype() if dtype is None else _dt.as_dtype(dtype)
        if not args:
            value = _zeros_value((0,), d, device, "flow.Tensor")
        elif len(args) == 1 and not isinstance(args[0], (int, np.integer, Size)):
            data = args[0]
            if isinstance(data, (bool, float, np.bool_, np.floating)):
                raise TypeError(f"flow.Tensor(): data must be a sequence or an array, got "
                                f"{type(data).__name__} (use flow.tensor({data!r}) for a "
                                f"0-d tensor)")
            value = _tensor_value(data, d, device, "flow.Tensor")
        else:
            value = _zeros_value(_sizes(args, "flow.Tensor"), d, device, "flow.Tensor")
        _start(self, value)
        if requires_grad:
            self.requires_grad_()

    #: NumPy defers ``ndarray <op> tensor`` to the tensor's reflected operator (as for torch).
    __array_priority__ = 1000

    # -- metadata (read through ``_meta``: a view's replay or a lazy value never runs) ----
    @property
    def shape(self) -> Size:
        """The sizes of the dimensions, as a :class:``Size`` (a tuple)."""
        return Size(self._meta.shape)

    @property
    def dtype(self) -> _dt.dtype:
        """The element type (a :class:``jflow.dtype``)."""
        return _dt.from_numpy_dtype(self._meta.dtype)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self._meta.ndim

    def dim(self) -> int:
        """The number of dimensions (PyTorch's ``dim``, same as ``ndim``)."""
        return self._meta.ndim

    def numel(self) -> int:
        """The number of elements (PyTorch's ``numel``)."""
        return int(math.prod(self._meta.shape))

    def nelement(self) -> int:
        """The number of elements (alias of ``numel``)."""
        return self.numel()

    def element_size(self) -> int:
        """The size of one element in bytes."""
        return self._meta.dtype.itemsize

    @property
    def nbytes(self) -> int:
        """The bytes the elements take: ``numel() * element_size()``."""
        return self.numel() * self.element_size()

    def size(self, dim: int | None = None) -> Any:
        """The shape (a :class:`Size`), or the length of dimension ``dim`` (negative allowed)."""
        if dim is None:
            return Size(self._meta.shape)
        if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
            raise TypeError(f"Tensor.size(): argument 'dim' must be int, not "
                            f"{type(dim).__name__}")
        nd = self._meta.ndim
        if nd == 0:
            raise IndexError(f"Tensor.size(): dimension specified as {dim} but the tensor has "
                             f"no dimensions")
        return self._meta.shape[wrap_dim("Tensor.size", dim, nd)]

    #: PyTorch's flag for Intel XPU devices: jflow has none (mock_torch libraries probe it)
    is_xpu = False
    # PyTorch's other backend and layout flags: jflow tensors are dense (``layout`` is
    # ``flow.strided``: jflow.tensor_methods.compat), never quantized, nested or MKL-DNN, and
    # on no MPS / XLA-device / Vulkan / IPU / MAIA / MTIA backend (libraries probe these)
    is_sparse = False
    is_sparse_csr = False
    is_quantized = False
    is_nested = False
    is_mkldnn = False
    is_mps = False
    is_xla = False
    is_vulkan = False
    is_ipu = False
    is_maia = False
    is_mtia = False

    @property
    def itemsize(self) -> int:
        """The size of one element in bytes (``element_size()``)."""
        return self._meta.dtype.itemsize

    @property
    def is_cpu(self) -> bool:
        """Whether the tensor is on the CPU (False for meta tensors, as PyTorch)."""
        return self.device.type == "cpu"

    @property
    def output_nr(self) -> int:
        """Which output of ``grad_fn`` this tensor is (0 for a leaf)."""
        return self._output_nr if self.grad_fn is not None else 0

    @property
    def name(self) -> None:
        """None: jflow has no named tensors (PyTorch's ``names`` are all None too)."""
        return None

    def is_inference(self) -> bool:
        """False. PyTorch marks tensors made under ``inference_mode`` and refuses them in
        autograd and in-place ops later; jflow's ``inference_mode`` is ``no_grad`` with no
        such restrictions, so no jflow tensor is an inference tensor (code that clones
        inference tensors before using them needs nothing here)."""
        return False

    def is_distributed(self) -> bool:
        """False, as PyTorch answers for every dense tensor (a global tensor is
        ``is_global``)."""
        return False

    def dense_dim(self) -> int:
        """The number of dense dimensions: all of them (jflow tensors are dense)."""
        return self._meta.ndim

    def sparse_dim(self) -> int:
        """The number of sparse dimensions: 0 (jflow tensors are dense)."""
        return 0

    @property
    def device(self) -> _device:
        """The device holding the value (under a JAX trace: the first device)."""
        v = self._value
        if isinstance(v, Tracer):
            return _device(_device.from_jax(jax.devices()[0]))
        if v.__class__ is _MetaValue:
            return _META
        devs = v.devices()
        return _device.from_jax(next(iter(devs)))

    @property
    def is_meta(self) -> bool:
        """Whether this is a meta tensor: shape and dtype without data (jflow.meta)."""
        return self._meta.__class__ is _MetaValue

    # -- autograd --------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether autograd records operations on this tensor; settable on leaves."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Make this leaf record operations for autograd (floating tensors only)."""
        requires_grad = bool(requires_grad)
        if self.grad_fn is not None:
            if not requires_grad:
                raise RuntimeError("you can only change requires_grad flags of leaf variables; "
                                   "use detach() to get a tensor that does not require grad")
            return self
        if requires_grad and self._meta.dtype.kind not in "fcV":
            raise RuntimeError(f"only Tensors of floating point and complex dtype can require "
                               f"gradients, got {self.dtype}")
        self._requires_grad = requires_grad
        return self

    @property
    def grad(self) -> Tensor | None:
        """The gradient accumulated by backward (None until one reaches this tensor)."""
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            _check_grad(self, value)
        self._grad = value

    @property
    def is_leaf(self) -> bool:
        """Whether no autograd node made this tensor (no ``grad_fn``)."""
        return self.grad_fn is None

    def detach_(self) -> Tensor:
        """Detaches this tensor from the graph in place (no ``grad_fn``, no grad); returns it."""
        self.grad_fn = None
        self._requires_grad = False
        return self

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor too (leaves always keep theirs)."""
        if self.grad_fn is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        node = self.grad_fn
        if node.retained is None:
            node.retained = {}
        node.retained[self._output_nr] = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        """Whether ``retain_grad()`` was called on this non-leaf tensor."""
        node = self.grad_fn
        return bool(node is not None and node.retained and self._output_nr in node.retained)

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point one (bfloat16 included)."""
        return self._meta.dtype.kind == "f" or self._meta.dtype.name == "bfloat16"

    # -- conversion ----------------------------------------------------------------------
    def _concrete(self, what: str) -> jax.Array:
        v = self._value
        if isinstance(v, Tracer):
            raise RuntimeError(f"Tensor.{what}() needs a concrete value, but this tensor is "
                               f"being traced (inside jax.jit / vmap / grad); return it instead")
        if self._global is not None:  # the logical value: gathered / reduced to every rank
            return self._logical_value()  # attached by jflow.sharding.global_tensor
        if v.__class__ is _MetaValue:
            raise _no_data(f"Tensor.{what}()")
        return v

    # -- copying and pickling, by PyTorch's rules ----------------------------------------------
    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickling, as PyTorch pickles a tensor: the value (computed first when pending), the
        class (``nn.Parameter``), ``requires_grad`` and a global tensor's placement and SBP;
        no ``.grad`` and no history (a result of ops comes back as a leaf that requires
        grad). (A view pickles as a plain tensor: ``View.__reduce_ex__``.)"""
        value = np.asarray(self._concrete("__reduce_ex__"))
        return _unpickle, (_plain_class(self), value, self._requires_grad, self._global,
                           getattr(self, "__dict__", None) or None)

    def __copy__(self) -> Tensor:
        """``copy.copy``, as in PyTorch: a leaf sharing this tensor's elements (a write into
        either shows in the other), with its ``requires_grad`` and no ``.grad``. (A subclass
        such as ``nn.Parameter`` is copied with values of its own: see Parameter.)"""
        if _plain_class(self) is not Tensor:  # (a Parameter cannot be a view)
            rebuild, args = self.__reduce_ex__(4)
            return rebuild(*args)
        out = self.detach()
        if self._requires_grad:
            out.requires_grad_(True)
        return out

    def __deepcopy__(self, memo: dict) -> Tensor:
        """``copy.deepcopy``, as in PyTorch: graph leaves only (a result of ops raises); the
        copy has the value, class, ``requires_grad``, ``.grad`` (copied) and placement and
        SBP. Tensors that alias each other alias each other's copies (a view copied with its
        base is a view of the base's copy); a view copied alone owns its elements."""
        if id(self) in memo:
            return memo[id(self)]
        if self.grad_fn is not None:
            raise RuntimeError("copy.deepcopy(): only tensors created explicitly by the user "
                               "(graph leaves) can be deep-copied; this one is the result of "
                               "an op that requires grad (deep-copy .detach() instead)")
        out = _deep_copy(self, memo)
        memo[id(self)] = out
        if self._grad is not None:
            out._grad = self._grad.__deepcopy__(memo)
        return out

    # -- global tensors (placement + SBP; jflow.sharding) -------------------------------------
    @property
    def is_global(self) -> bool:
        """Whether this is a global tensor (with a placement and SBP)."""
        return self._global is not None

    @property
    def is_local(self) -> bool:
        """Whether this is a local tensor (no placement / SBP)."""
        return self._global is None

    @property
    def placement(self) -> Any:
        """A global tensor's placement (``RuntimeError`` for a local tensor)."""
        if self._global is None:
            raise RuntimeError("a local tensor has no placement; use .to_global(placement, sbp)")
        return self._global[0]

    @property
    def sbp(self) -> tuple:
        """A global tensor's SBP signature, one entry per placement dim."""
        if self._global is None:
            raise RuntimeError("a local tensor has no sbp; use .to_global(placement, sbp)")
        return self._global[1]

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The value as a NumPy array (read-only view where JAX allows). As in PyTorch, a
        tensor that requires grad is refused while grad mode is on (the array would silently
        leave the graph): use ``.detach().numpy()``, or ``force=True``, PyTorch's
        ``detach().cpu().resolve_conj()`` first (the value is always read from the host and
        a conjugate view resolved, so here ``force`` only skips that check). jflow's own
        readers of parameters (saving, printing, optimizers) use ``force=True``."""
        if not isinstance(force, bool):
            raise TypeError(f"Tensor.numpy: force must be a bool, got {type(force).__name__}")
        if not force and self.requires_grad and _READS.checked and GRAD_ENABLED[0]():
            raise RuntimeError(_NUMPY_REQUIRES_GRAD)
        return np.asarray(self._concrete("numpy"))

    def item(self) -> Any:
        """The value of a one-element tensor as a Python scalar (a device-to-host read)."""
        v = self._concrete("item")
        if v.size != 1:
            raise ValueError(f"Tensor.item: only one-element tensors can be converted to "
                             f"Python scalars, this one has {v.size} elements")
        out = np.asarray(v).reshape(()).item()
        if _TRIM_PENDING[0]:  # (once after any compile: jflow/_malloc_trim.py)
            _trim_pending()
        return out

    def tolist(self) -> Any:
        """The value as (nested) Python lists of scalars (a device-to-host read)."""
        return np.asarray(self._concrete("tolist")).tolist()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """NumPy's view of the value: read-only and zero-copy unless ``dtype`` or ``copy=True``
        asks for a new array (``copy=False`` with a dtype change is refused, as NumPy does).
        ``np.asarray(t)`` of a tensor that requires grad is refused as ``t.numpy()`` is."""
        if self.requires_grad and _READS.checked and GRAD_ENABLED[0]():
            raise RuntimeError(_NUMPY_REQUIRES_GRAD)
        a = np.asarray(self._concrete("__array__"))
        if dtype is not None and np.dtype(dtype) != a.dtype:
            if copy is False:
                raise ValueError(f"Tensor.__array__: converting {a.dtype} to {np.dtype(dtype)} "
                                 f"needs a copy, but copy=False was given")
            return a.astype(dtype)
        return a.copy() if copy else a

    def __len__(self) -> int:
        if self._meta.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._meta.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        """Rows along dim 0 (``self[i]``); a 0-d tensor refuses at ``iter()``, as PyTorch."""
        if self._meta.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._meta.shape[0]))  # type: ignore[index]

    def __contains__(self, element: Any) -> bool:
        """``x in t``: whether any entry equals ``element`` (a number or a tensor that
        broadcasts), as PyTorch's ``(element == t).any()``; HF models test
        ``pad_token_id in input_ids[:, [-1, 0]]``."""
        if not isinstance(element, (Tensor, bool, int, float, complex, np.number, np.bool_)):
            raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you "
                               f"passed in a {type(element)}.")
        return bool((self == element).any())

    def __bool__(self) -> bool:
        v = self._concrete("__bool__")
        if v.size != 1:
            raise RuntimeError(f"Boolean value of a tensor with {v.size} elements is ambiguous")
        return bool(np.asarray(v).reshape(()))

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __complex__(self) -> complex:
        """``complex(t)`` of a one-element tensor (any dtype, as PyTorch)."""
        return complex(self.item())

    def __index__(self) -> int:
        if self._meta.dtype.kind not in "iub":
            raise TypeError(f"only integer tensors can be used as an index, got {self.dtype}")
        return int(self.item())

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        v = self._value
        extra = ""
        if self.grad_fn is not None:
            extra += f", grad_fn=<{self.grad_fn.name()}>"
        elif self._requires_grad:
            extra += ", requires_grad=True"
        if self._global is not None:  # _global_repr: attached by jflow.sharding.global_tensor
            extra = self._global_repr() + extra
        if isinstance(v, Tracer):
            return f"tensor(<traced {tuple(v.shape)}>, dtype={self.dtype}{extra})"
        if v.__class__ is _MetaValue:  # PyTorch's form for data it does not have
            dt = "" if self.dtype is _dt.get_default_dtype() else f", dtype={self.dtype}"
            return f"tensor(..., device='meta', size={tuple(v.shape)}{dt}{extra})"
        a = np.asarray(self._concrete("__repr__"))
        body = np.array2string(a, separator=", ", prefix="tensor(", **_print_kwargs(a))
        if a.size == 0:
            body = "[]" if a.ndim == 1 else f"[], size={tuple(a.shape)}"
        return f"tensor({body}, dtype={self.dtype}{extra})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        """``f"{t:.3f}"`` formats a 0-d tensor's value, as PyTorch; any other tensor formats
        as its repr with an empty spec and raises TypeError with another (as PyTorch)."""
        if self._meta.ndim == 0 and not isinstance(self._meta, Tracer):
            return format(self.item(), spec)
        if spec:
            raise TypeError(f"unsupported format string {spec!r} passed to Tensor.__format__ "
                            f"(only a 0-dim tensor's value takes one; this tensor has shape "
                            f"{list(self._meta.shape)})")
        return repr(self)


#: ``flow.set_printoptions``: what a tensor's repr reads (None: NumPy's own default, which
#: jflow's repr has always used: 8 significant digits, 75 columns)
PRINT_OPTIONS: dict[str, Any] = {"precision": None, "threshold": 1000, "edgeitems": 3,
                                 "linewidth": None, "sci_mode": None}


def _print_kwargs(a: np.ndarray) -> dict[str, Any]:
    """``np.array2string`` arguments for the print options (sci_mode True: every float in
    scientific notation; False: never)."""
    o = PRINT_OPTIONS
    kw: dict[str, Any] = {"threshold": o["threshold"], "edgeitems": o["edgeitems"]}
    if o["precision"] is not None:
        kw["precision"] = o["precision"]
    if o["linewidth"] is not None:
        kw["max_line_width"] = o["linewidth"]
    if o["sci_mode"] is not None and a.dtype.kind == "f":
        p = 8 if o["precision"] is None else o["precision"]
        fmt = (lambda x: f"{x:.{p}e}") if o["sci_mode"] else (lambda x: f"{x:.{p}f}")
        kw["formatter"] = {"float_kind": fmt}
    return kw


#: Tensors jflow itself caches and never changes (cached scalar operands, implicit root
#: gradients), by id; ``flow.jit`` need not guard them when a trace reads them.
_CONSTANTS: dict[int, weakref.ref] = {}


def mark_constant(t: Tensor) -> Tensor:
    """Record that ``t`` is an internal constant (its value is never replaced)."""
    key = id(t)
    _CONSTANTS[key] = weakref.ref(t, lambda _, k=key: _CONSTANTS.pop(k, None))
    return t


def is_constant(t: Tensor) -> bool:
    ref = _CONSTANTS.get(id(t))
    return ref is not None and ref() is t


def is_tensor(x: object) -> bool:
    """Whether ``x`` is a jflow ``Tensor``."""
    return isinstance(x, Tensor)


def _check_grad(t: Tensor, g: Any) -> None:
    """What PyTorch checks when ``t.grad = g`` is assigned: a tensor (not ``t`` itself) of
    ``t``'s dtype and shape. Backward accumulates into ``.grad`` and optimizers read it as
    ``t``'s update, so a wrong one would be broadcast or cast silently later."""
    if not isinstance(g, Tensor):
        raise TypeError(f"Tensor.grad: assigned grad expected to be a Tensor or None but got "
                        f"grad of type {type(g).__name__}")
    if g is t:
        raise RuntimeError("Tensor.grad: can't assign Variable as its own grad")
    if g._meta.dtype != t._meta.dtype:
        raise RuntimeError(f"Tensor.grad: attempting to assign a gradient with dtype {g.dtype} "
                           f"to a tensor with dtype {t.dtype} (assigned grad has data of a "
                           f"different type)")
    if g._meta.shape != t._meta.shape:
        raise RuntimeError(f"Tensor.grad: attempting to assign a gradient of size "
                           f"{list(g._meta.shape)} to a tensor of size "
                           f"{list(t._meta.shape)} (assigned grad has data of a different "
                           f"size)")


_new = object.__new__


#: ``t._meta``: the ``_value`` slot read directly (the same member descriptor under a second
#: name), for metadata (``t._meta.shape``, ``.dtype``, ``.aval``). On a plain tensor it is the
#: same read as ``_value``, at the same cost; subclasses that put a property over ``_value``
#: don't run it: a view's slot holds an array of its shape and dtype, a lazy tensor's
#: (jflow.lazy_mode) the abstract value of its pending result, so metadata never replays or runs
#: anything.
Tensor._meta = Tensor.__dict__["_value"]


def _start(t: Any, value: Any) -> None:
    """The fields every new tensor starts with — ``value`` in its value slot, no grad, no
    history, version 0, not global — written here once: :func:`new_tensor` (and through it
    ``_wrap``, the pending tensors of lazy mode, unpickled parameters), ``Tensor.__init__``
    and ``nn.Parameter`` call it. The generated ``apply`` (jflow.dispatch) and lazy mode's
    fused recorders inline the same statements from :data:`NEW_FIELDS_SRC`;
    tests/test_tensor.py checks the two agree. ``value`` goes into the raw slot (``_meta``):
    a pending twin's ``_value`` property never runs."""
    t._meta = value
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._version = 0
    t._global = None


#: :func:`_start`'s statements after the value, on a tensor named ``{t}``: the text that
#: generated code inlines (its hot paths cannot afford the call)
NEW_FIELDS_SRC = ("{t}._requires_grad = False\n{t}._grad = None\n{t}.grad_fn = None\n"
                  "{t}._version = 0\n{t}._global = None\n")


def new_tensor(cls: type, value: Any) -> Any:
    """A new ``cls`` instance (Tensor or a slots-only subclass) holding ``value``, with the
    fields of a new tensor (:func:`_start`)."""
    t = _new(cls)
    _start(t, value)
    return t


#: A Tensor around an existing ``jax.Array`` / tracer, without copying (hot path)
_wrap = functools.partial(new_tensor, Tensor)


def _unpickle(cls: type, value: np.ndarray, requires_grad: bool, glob: Any,
              state: dict | None = None) -> Tensor:
    """A pickled tensor (:meth:`Tensor.__reduce_ex__`) rebuilt."""
    t = _wrap(jnp.asarray(value))
    if glob is not None:
        t = t.to_global(*glob)
    t._requires_grad = requires_grad
    return _as_class(t, cls, state)


_FIELDS = ("_value", "_requires_grad", "_grad", "grad_fn", "_version", "_global")


def _as_class(t: Tensor, cls: type, state: dict | None) -> Tensor:
    """Plain tensor ``t``'s fields in a new instance of ``cls`` (a subclass: ``nn.Parameter``,
    a user's class with attributes of its own, ``state``)."""
    if cls is Tensor:
        return t
    out = _new(cls)
    for name in _FIELDS:
        slot = Tensor.__dict__[name]
        slot.__set__(out, slot.__get__(t))
    if state:
        out.__dict__.update(state)
    return out


def _plain_class(t: Tensor) -> type:
    """``t``'s class without lazy mode's pending twin or the view class over it."""
    cls = type(t)
    while isinstance(cls.__dict__.get("_value"), property):
        cls = cls.__base__
    return cls


#: ``[fn(t, memo)]``: a deep copy of view ``t`` (jflow.views installs it: a view of the
#: copy of its base)
DEEP_COPY_VIEW: list[Any] = [None]


def _deep_copy(t: Tensor, memo: dict) -> Tensor:
    """A copy of ``t``'s elements and metadata, without ``.grad``."""
    if t._aliases:
        return DEEP_COPY_VIEW[0](t, memo)
    out = _wrap(t._value)  # (arrays are immutable: an in-place op re-points the copy)
    out._global = t._global
    out._requires_grad = t._requires_grad
    out = _as_class(out, _plain_class(t), None)
    state = getattr(t, "__dict__", None)
    if state:
        memo[id(t)] = out  # (its attributes may refer back to it)
        out.__dict__.update(copy.deepcopy(state, memo))
    return out


def _flatten(t: Tensor) -> tuple[tuple[Any], Any]:
    g = t._global
    return (t._value,), (t._requires_grad if g is None else (t._requires_grad, g))


def _unflatten(aux: Any, children: Any) -> Tensor:
    t = _wrap(children[0])
    if aux.__class__ is tuple:  # a global tensor: (requires_grad, (placement, nd_sbp))
        t._requires_grad, t._global = aux
    else:
        t._requires_grad = aux
    return t


jax.tree_util.register_pytree_node(Tensor, _flatten, _unflatten)


# -- converting Python / NumPy / JAX data to a tensor's value ---------------------------------
# (here, not in creation.py: ``Tensor(data)`` itself needs it, and Tensor is the bottom layer)

def _place(value: jax.Array, device: Any) -> jax.Array:
    if device is None:
        if _DEFAULT_IS_META[0]:
            return _meta_value(value.shape, value.dtype)
        return value
    if _is_meta_device(device):  # shape and dtype only (jflow.meta)
        return _meta_value(value.shape, value.dtype)
    return jax.device_put(value, _device(device).jax_device())


def _wants_meta(device: Any) -> bool:
    """Whether a tensor created for ``device`` (None: the default) is a meta tensor."""
    return _is_meta_device(device) if device is not None else _DEFAULT_IS_META[0]


#: ``[fn or None]``: set while a thread is in lazy mode (jflow.lazy_mode): ``fn(host array)`` gives
#: the pending value of a new tensor's data, which the next run of the pending ops transfers
#: with its other inputs (no transfer of its own), or None (not lazy on this thread)
HOST_DATA: list[Any] = [None]


def _tensor_value(data: Any, dtype: _dt.dtype | None, device: Any, fname: str,
                  copy: bool = True, pending: bool = False) -> jax.Array:
    """Convert data to a jax.Array: dtype kept for arrays, PyTorch defaults for Python data.
    ``pending``: in lazy mode host data may come back as a pending value (see HOST_DATA)."""
    if isinstance(data, (Tensor, jax.Array)):
        v = data._value if isinstance(data, Tensor) else data
        if v.__class__ is _MetaValue:  # a meta tensor stays one, as in PyTorch
            if device is not None and not _is_meta_device(device):
                raise _no_data(fname)
            return _meta_value(v.shape, v.dtype if dtype is None else dtype.np)
        if dtype is None:
            _dt.from_numpy_dtype(v.dtype)  # a clear error for dtypes jflow does not have
        elif v.dtype != dtype.np:
            v = v.astype(dtype.np)
        return _place(v, device)
    if isinstance(data, (np.ndarray, np.generic)):
        arr = data
        if dtype is None:
            _dt.from_numpy_dtype(arr.dtype)  # raises a clear error for unsupported dtypes
    else:
        prev, _READS.checked = _READS.checked, False  # tensors inside: read, as PyTorch
        try:
            arr = np.asarray(data)
        except (ValueError, TypeError) as e:
            raise TypeError(f"{fname}: could not convert {type(data).__name__} to a tensor: "
                            f"{e}") from None
        finally:
            _READS.checked = prev
        kind = arr.dtype.kind
        if kind in "uO" or (kind == "f" and np.abs(arr).max(initial=0) >= 2.0**63):
            arr, dtype = _big_ints(data, arr, dtype, fname)
        if arr.dtype == object or arr.dtype.kind not in "biufc":
            raise TypeError(f"{fname}: could not convert data of type {type(data).__name__} "
                            f"(NumPy infers {arr.dtype}) to a tensor")
        if dtype is None:
            dtype = {"b": _dt.bool_, "i": _dt.int64, "u": _dt.int64,
                     "c": _dt.default_complex()}.get(arr.dtype.kind, _dt.get_default_dtype())
        elif dtype.category == 1 and arr.dtype.kind in "iu" and arr.size:
            info = np.iinfo(dtype.np)  # Python ints that the integer dtype cannot hold
            lo, hi = int(arr.min()), int(arr.max())
            if lo < info.min or hi > info.max:
                raise OverflowError(f"{fname}: the value {lo if lo < info.min else hi} cannot "
                                    f"be converted to {dtype} without overflow (range "
                                    f"[{info.min}, {info.max}])")
    np_dtype = arr.dtype if dtype is None else dtype.np
    # converted on the host, then one transfer: ``jnp.array`` would compile a conversion per
    # new shape. With ``copy`` a fresh host copy: on CPU the device buffer may alias host
    # memory, and the tensor must not change when the caller's array does.
    if _wants_meta(device):  # shape and dtype only: nothing goes to a device (jflow.meta)
        return _meta_value(arr.shape, np_dtype)
    if copy and not (pending and device is None and HOST_DATA[0] is not None):
        host = np.asarray(arr, np_dtype)
        value = _place(to_device(host), device)  # (jflow.host_transfer)
    else:
        host = np.array(arr, dtype=np_dtype, copy=True) if copy else np.asarray(arr, np_dtype)
        if pending and copy and device is None and HOST_DATA[0] is not None:
            ref = HOST_DATA[0](host)  # (lazy mode: the pending run takes the host copy)
            if ref is not None:
                return ref
        with jax.ensure_compile_time_eval():
            value = _place(jax.device_put(host), device)
    if host.dtype.kind in "iu":  # an accelerator's index bounds checks read them from here
        _note_bounds(value, host)
    return value


_INT64_RANGE = (-(1 << 63), (1 << 63) - 1)


def _big_ints(data: Any, arr: np.ndarray, dtype: _dt.dtype | None, fname: str
              ) -> tuple[np.ndarray, _dt.dtype | None]:
    """Python ints beyond int64 in ``data``: NumPy would wrap them to uint64, turn them to
    float64 or give up (object); PyTorch refuses them unless the tensor is floating."""
    has_float, big, stack = False, None, [data]
    while stack:
        x = stack.pop()
        if isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, float):
            has_float = True
        elif type(x) is int and big is None and not _INT64_RANGE[0] <= x <= _INT64_RANGE[1]:
            big = x
    if big is None:
        return arr, dtype
    if (dtype is None and not has_float) or (dtype is not None and not dtype.is_floating_point):
        raise OverflowError(f"{fname}: the Python int {big} is out of range for "
                            f"{dtype or _dt.int64} (an integer tensor); pass a floating "
                            f"dtype to store it approximately")
    return np.asarray(data, dtype=np.float64), dtype or _dt.get_default_dtype()


def _zeros_value(shape: tuple, dtype: _dt.dtype, device: Any, fname: str) -> jax.Array:
    _sizes((shape,), fname)
    if _wants_meta(device):
        return _meta_value(shape, dtype.np)
    return _place(jnp.zeros(shape, dtype.np), device)


def _sizes(size: tuple, fname: str) -> tuple[int, ...]:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor) and s._meta.dtype.kind in "iu" and s.numel() == 1:
            s = int(s)  # (a one-element integer tensor: PyTorch reads its value)
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"{fname}(): size must be a sequence of ints, got "
                            f"{type(s).__name__} in {size!r}")
        if s < 0:
            raise ValueError(f"{fname}(): sizes must be non-negative, got {list(size)}")
        out.append(int(s))
    return tuple(out)
