"""``flow.experimental.custom_op_module(op_type_name, path)``: a user op from a folder.

OneFlow's seed ``user_relu`` keeps an op in one folder, one file per part. jflow's convention
(``<name>`` = ``op_type_name``):

=========================  ==========================================================
``<name>_op.py``           the op definition (required). Either it defines its ops itself
                           when imported (``define_op`` / ``register_kernel`` /
                           ``register_backward``), or it has a function
                           ``define(py_kernel)`` that jflow calls with the loaded
                           ``<name>_py_kernel`` module (typically
                           ``define_python_op(..., py_kernel.forward, py_kernel.backward)``).
``<name>_py_kernel.py``    NumPy ``forward(args)`` and ``backward(args)`` (optional; needed
                           by ``define(py_kernel)``).
``<name>_py_api.py``       the user's Python wrappers, e.g. built with
                           ``user_op_builder`` (optional; exposed as ``.api``).
=========================  ==========================================================

The parts load in that dependency order (kernel, definition, wrappers) when
``custom_op_module`` is called, so the ops exist as soon as it returns. OneFlow's chain
``m.py_api().cpp_def().py_kernel().build_load()`` is accepted: in jflow each call checks that
its part was found (``cpp_def``/``op_def`` = ``<name>_op.py``) and returns the module.
Loading the same folder twice returns the same object (an op can be defined only once).
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import types
from pathlib import Path

from ..ops.registry import list_ops

__all__ = ["custom_op_module", "CustomOpModule", "CustomOpModuleError"]

_LOADED: dict[tuple[str, str], CustomOpModule] = {}


class CustomOpModuleError(ImportError):
    """A folder that does not follow the convention (beyond a missing file or folder)."""


def _with_prefix(e: BaseException, prefix: str) -> BaseException:
    """``e``'s type with ``prefix`` before its message (its builtin base if the type cannot be
    rebuilt from a message), so callers can still catch what the user's code raised."""
    msg = f"{prefix}{e.args[0] if len(e.args) == 1 else e}"
    for cls in (type(e), *type(e).__mro__[1:]):
        if not issubclass(cls, Exception):
            break
        try:
            new = cls(msg)
        except Exception:  # a constructor that takes other arguments
            continue
        if str(new) in (msg, repr(msg)):  # KeyError quotes its message
            return new
    return CustomOpModuleError(msg)


class CustomOpModule:
    """A loaded op folder: ``.api`` (the ``<name>_py_api`` module), ``.op_module``,
    ``.kernel_module`` and ``.ops`` (names of the ops loading it defined)."""

    def __init__(self, op_type_name: str, path: Path) -> None:
        self.op_type_name = op_type_name
        self.path = path
        stem = op_type_name
        self.files = {"op": path / f"{stem}_op.py", "py_kernel": path / f"{stem}_py_kernel.py",
                      "py_api": path / f"{stem}_py_api.py"}
        self.op_module: types.ModuleType | None = None
        self.kernel_module: types.ModuleType | None = None
        self._api: types.ModuleType | None = None
        self.ops: list[str] = []

    def __repr__(self) -> str:
        return (f"<custom_op_module '{self.op_type_name}' from {self.path} "
                f"(ops: {', '.join(self.ops) or 'none'})>")

    def _where(self) -> str:
        return f"custom_op_module('{self.op_type_name}', '{self.path}')"

    def _missing(self, part: str, why: str) -> FileNotFoundError:
        f = self.files[part]
        return FileNotFoundError(f"{self._where()}: {why} needs {f.name}, which is not in "
                                 f"the folder (expected files: "
                                 f"{', '.join(p.name for p in self.files.values())})")

    # -- the parts ------------------------------------------------------------------------
    @property
    def api(self) -> types.ModuleType:
        """The ``<name>_py_api`` module: ``m.api.<fn>(...)`` calls a wrapper."""
        if self._api is None:
            raise self._missing("py_api", ".api")
        return self._api

    def py_api(self) -> CustomOpModule:
        """OneFlow's chain: the Python wrappers (``<name>_py_api.py``) are loaded."""
        if self._api is None:
            raise self._missing("py_api", ".py_api()")
        return self

    def op_def(self) -> CustomOpModule:
        """The op definition (``<name>_op.py``) is loaded."""
        return self

    def cpp_def(self) -> CustomOpModule:
        """OneFlow's name for :meth:`op_def` (jflow's definition is Python: ``<name>_op.py``;
        ops from C++ come from ``flow.config.load_library``)."""
        return self.op_def()

    def py_kernel(self) -> CustomOpModule:
        """OneFlow's chain: the NumPy kernels (``<name>_py_kernel.py``) are loaded."""
        if self.kernel_module is None:
            raise self._missing("py_kernel", ".py_kernel()")
        return self

    def build_load(self) -> CustomOpModule:
        """OneFlow's chain: nothing left to build — the parts loaded with the module."""
        return self

    # -- loading --------------------------------------------------------------------------
    def _import(self, part: str) -> types.ModuleType:
        f = self.files[part]
        mod_name = f"_jflow_custom_ops.{self.op_type_name}.{f.stem}"
        spec = importlib.util.spec_from_file_location(mod_name, f)
        if spec is None or spec.loader is None:
            raise CustomOpModuleError(f"{self._where()}: cannot import {f}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = mod
        try:
            spec.loader.exec_module(mod)
        except Exception as e:
            sys.modules.pop(mod_name, None)
            raise _with_prefix(e, f"{self._where()}: loading {f.name}: ") from e
        return mod

    def _load(self) -> None:
        before = set(list_ops())
        if self.files["py_kernel"].is_file():
            self.kernel_module = k = self._import("py_kernel")
            for fn in ("forward", "backward"):
                if hasattr(k, fn) and not callable(getattr(k, fn)):
                    raise CustomOpModuleError(f"{self._where()}: {self.files['py_kernel'].name}"
                                              f": '{fn}' must be a function {fn}(args)")
            if not callable(getattr(k, "forward", None)):
                raise CustomOpModuleError(f"{self._where()}: {self.files['py_kernel'].name} "
                                          f"must define forward(args) (NumPy arrays in and out)")
        self.op_module = m = self._import("op")
        define = getattr(m, "define", None)
        if define is not None:
            if not callable(define):
                raise CustomOpModuleError(f"{self._where()}: {self.files['op'].name}: 'define' "
                                          f"must be a function define(py_kernel)")
            wants_kernel = bool(inspect.signature(define).parameters)
            if wants_kernel and self.kernel_module is None:
                raise self._missing("py_kernel", f"define(py_kernel) in {self.files['op'].name}")
            try:
                define(self.kernel_module) if wants_kernel else define()
            except Exception as e:
                raise _with_prefix(e, f"{self._where()}: {self.files['op'].name}: define(): "
                                   ) from e
        self.ops = sorted(set(list_ops()) - before)
        if not self.ops:
            raise CustomOpModuleError(f"{self._where()}: {self.files['op'].name} defined no op "
                                      f"(call jflow.ops.define_op / define_python_op when it is "
                                      f"imported, or give it a function define(py_kernel))")
        if self.files["py_api"].is_file():
            self._api = self._import("py_api")


def custom_op_module(op_type_name: str, path: str | os.PathLike[str]) -> CustomOpModule:
    """Load the op folder ``path`` (files ``<op_type_name>_op.py``, ``_py_kernel.py``,
    ``_py_api.py``; see the module docs) and return it; ``.api.<fn>`` calls a wrapper."""
    if not isinstance(op_type_name, str) or not op_type_name.isidentifier():
        raise ValueError(f"custom_op_module: op_type_name must be an identifier (the files' "
                         f"prefix), got {op_type_name!r}")
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"custom_op_module('{op_type_name}'): path must be a folder path, got "
                        f"{type(path).__name__}")
    p = Path(path).expanduser().resolve()
    if not p.exists():
        raise FileNotFoundError(f"custom_op_module('{op_type_name}'): no such folder '{path}'")
    if not p.is_dir():
        raise NotADirectoryError(f"custom_op_module('{op_type_name}'): '{path}' is not a "
                                 f"folder (give the folder holding {op_type_name}_op.py)")
    key = (op_type_name, str(p))
    hit = _LOADED.get(key)
    if hit is not None:
        return hit
    m = CustomOpModule(op_type_name, p)
    if not m.files["op"].is_file():
        raise m._missing("op", "the op definition")
    m._load()
    _LOADED[key] = m
    return m

