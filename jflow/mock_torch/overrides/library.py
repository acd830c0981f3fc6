"""``torch.library``: PyTorch's operator-registration API. jflow has no PyTorch dispatcher:
``custom_op`` makes a Python op that runs its function eagerly (its ``register_autograd``
backward is used through ``flow.autograd.Function``; ``register_fake`` / ``register_kernel``
are kept for shape-only and per-device variants eager code never needs). Registering kernels
for operators by name (``Library.define`` / ``impl``, ``register_autograd("ns::op")``) raises:
no such operator exists here, as in a PyTorch build without that library's kernels."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NoReturn

__all__ = ["Library", "custom_op", "CustomOpDef", "register_fake", "register_autograd",
           "register_kernel", "impl", "define", "impl_abstract", "get_ctx", "triton_op",
           "opcheck"]


def _no_dispatcher(what: str) -> NoReturn:
    raise NotImplementedError(
        f"torch.library {what}: jflow has no PyTorch dispatcher to register operators in; "
        f"write the op as a Python function (torch.library.custom_op decorating a function "
        f"works) or as torch.autograd.Function")


class Library:
    """``torch.library.Library(ns, kind)``: constructible (libraries create one at import);
    ``define`` and ``impl`` raise (no dispatcher)."""

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        self.ns, self.kind, self.dispatch_key = ns, kind, dispatch_key

    def define(self, schema: str, alias_analysis: str = "", *, tags: Any = ()) -> NoReturn:
        """Raises (no dispatcher)."""
        _no_dispatcher(f"Library({self.ns!r}).define({schema!r})")

    def impl(self, op_name: Any, fn: Callable, dispatch_key: str = "", **kw: Any) -> NoReturn:
        """Raises (no dispatcher)."""
        _no_dispatcher(f"Library({self.ns!r}).impl({op_name!r})")

    def _destroy(self) -> None:
        """Nothing to unregister."""


#: the custom ops made so far, by qualified name (``"ns::name"``): ``torch.ops.ns.name``
REGISTRY: dict[str, CustomOpDef] = {}


class CustomOpDef:
    """What :func:`custom_op` makes: calling it runs the function eagerly; with
    :meth:`register_autograd`, through ``flow.autograd.Function`` with that backward. It is
    also ``torch.ops.<ns>.<name>`` (and its ``.default`` overload)."""

    def __init__(self, name: str, fn: Callable, mutates_args: Any) -> None:
        self._name, self._fn, self._mutates = name, fn, mutates_args
        REGISTRY[name] = self
        self.default = self
        self._backward: Callable | None = None
        self._setup_context: Callable | None = None
        self._fake: Callable | None = None
        self.__name__ = getattr(fn, "__name__", name)
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._backward is None:
            return self._fn(*args, **kwargs)
        return self._function().apply(*args, **kwargs)

    def _function(self) -> Any:
        from jflow.autograd import Function, no_grad  # noqa: PLC0415
        op = self

        class _Op(Function):
            @staticmethod
            def forward(ctx: Any, *args: Any) -> Any:
                with no_grad():
                    out = op._fn(*args)
                if op._setup_context is not None:
                    op._setup_context(ctx, args, out)
                return out

            @staticmethod
            def backward(ctx: Any, *grads: Any) -> Any:
                return op._backward(ctx, *grads)

        return _Op

    def register_fake(self, fn: Callable) -> Callable:
        """Keep the shape-only implementation (unused eagerly)."""
        self._fake = fn
        return fn

    def register_kernel(self, device_types: Any, fn: Callable | None = None) -> Any:
        """A per-device kernel: jflow runs the one function on every device, so this is
        accepted only when it is that function's job anyway — it raises, to not be silent."""
        _no_dispatcher(f"register_kernel on {self._name}")

    def register_autograd(self, backward: Callable, *, setup_context: Callable | None = None
                          ) -> None:
        """Use ``backward`` (and ``setup_context``) for this op's gradient."""
        self._backward, self._setup_context = backward, setup_context


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args: Iterable[str] | str,
              device_types: Any = None, schema: str | None = None, tags: Any = None) -> Any:
    """``@torch.library.custom_op("ns::name", mutates_args=())``: a :class:`CustomOpDef`."""
    def wrap(f: Callable) -> CustomOpDef:
        return CustomOpDef(name, f, mutates_args)
    return wrap(fn) if fn is not None else wrap


triton_op = custom_op


def register_fake(op: Any, func: Callable | None = None, /, *, lib: Any = None,
                  _stacklevel: int = 1, allow_override: bool = False) -> Any:
    """A shape-only implementation: kept on a :class:`CustomOpDef`; for an operator named by
    string there is nothing to attach it to, and it is returned unused (eager code never
    runs fake implementations, so no result changes)."""
    def wrap(f: Callable) -> Callable:
        target = REGISTRY.get(op) if isinstance(op, str) else op
        if isinstance(target, CustomOpDef):
            target.register_fake(f)
        return f
    return wrap(func) if func is not None else wrap


impl_abstract = register_fake


def register_autograd(op: Any, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib: Any = None) -> None:
    """The backward of a :class:`CustomOpDef` (or of one named ``"ns::name"``); any other
    operator raises (none exists here)."""
    target = REGISTRY.get(op) if isinstance(op, str) else op
    if isinstance(target, CustomOpDef):
        target.register_autograd(backward, setup_context=setup_context)
        return
    _no_dispatcher(f"register_autograd({op!r})")


def register_kernel(op: Any, device_types: Any, func: Callable | None = None, /, *,
                    lib: Any = None) -> NoReturn:
    """Raises (no dispatcher)."""
    _no_dispatcher(f"register_kernel({op!r})")


def impl(qualname: Any, types: Any = None, func: Any = None, *, lib: Any = None) -> NoReturn:
    """Raises (no dispatcher)."""
    _no_dispatcher(f"impl({qualname!r})")


def define(qualname: str, schema: str = "", *, lib: Any = None, tags: Any = ()) -> NoReturn:
    """Raises (no dispatcher)."""
    _no_dispatcher(f"define({qualname!r})")


def get_ctx() -> NoReturn:
    """Only meaningful inside a fake implementation, which jflow never runs."""
    raise RuntimeError("torch.library.get_ctx() is only valid inside a fake implementation; "
                       "jflow never runs fake implementations")


def opcheck(op: Any, args: Any, kwargs: Any = None, **kw: Any) -> NoReturn:
    """Raises: the checks exercise PyTorch's dispatcher."""
    _no_dispatcher("opcheck")
