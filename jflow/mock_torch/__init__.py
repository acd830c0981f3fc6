"""``jflow.mock_torch``: unmodified PyTorch programs (and libraries that ``import torch``)
run on jflow, as ``oneflow.mock_torch`` does for OneFlow.

    import jflow.mock_torch as mock
    with mock.enable():                 # or mock.enable() ... mock.disable()
        import torch                    # jflow, under PyTorch's names
        import torch.nn.functional as F

    eval $(python -m jflow.mock_torch)  # in a shell: `python train.py` then runs on jflow
    eval $(python -m jflow.mock_torch disable)

While enabled, ``torch`` and every ``torch.<path>`` resolve to a module that forwards to
``jflow.<path>`` (``torch.nn.modules.conv`` -> ``jflow.nn.modules.conv``), so
``isinstance(x, torch.Tensor)`` holds for jflow tensors and ``class Net(torch.nn.Module)``
is a jflow module. ``torch.__version__`` is :data:`TORCH_VERSION` (a PyTorch release string,
so a library's ``version.parse(torch.__version__) >= ...`` check passes; ``torch.__jflow__``
is jflow's own version). The real PyTorch cannot be imported meanwhile: an already imported
one is taken out of ``sys.modules`` and put back by :func:`disable`.

A name or module jflow lacks raises ``ImportError`` / ``AttributeError`` naming it — or,
with ``lazy=True``, becomes a placeholder that loads fine and raises
``NotImplementedError("jflow has no torch.xxx ...")`` only when used (called, subclassed,
instantiated); ``isinstance(x, placeholder)`` is False. ``verbose=True`` prints each
placeholder when first touched; :func:`touched` lists them.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

__all__ = ["enable", "disable", "is_enabled", "touched", "TORCH_VERSION"]

#: what ``torch.__version__`` reports while mocking (the PyTorch release whose API jflow
#: follows)
TORCH_VERSION = "2.13.0"

_STATE: dict[str, Any] = {"on": False, "lazy": False, "verbose": False, "saved": {},
                          "finder": None}
_TOUCHED: list[str] = []


def _jflow_name(name: str) -> str:
    return "jflow" + name[len("torch"):]


def _jflow_has(name: str) -> bool:
    """Whether ``torch.<path>`` has a jflow module ``jflow.<path>``."""
    try:
        return importlib.util.find_spec(_jflow_name(name)) is not None
    except (ModuleNotFoundError, ValueError):  # a parent is not a package
        return False


# -- placeholders (lazy=True) --------------------------------------------------------------------

class _PlaceholderType(type):
    """The type of placeholders: ``isinstance(x, placeholder)`` is False, never an error
    (libraries probe types at import); an attribute is a placeholder for the longer name;
    calling, instantiating or subclassing one raises."""

    def __instancecheck__(cls, obj: Any) -> bool:
        return False

    def __subclasscheck__(cls, sub: Any) -> bool:
        return False

    def __getattr__(cls, key: str) -> Any:
        if key.startswith("__"):
            raise AttributeError(key)
        return placeholder(f"{type.__getattribute__(cls, '_mock_name')}.{key}")


def _missing(name: str) -> NotImplementedError:
    return NotImplementedError(f"jflow has no {name} (jflow.mock_torch placeholder); see "
                               f"docs/porting.md for what is supported")


def _touch(name: str) -> None:
    if name not in _TOUCHED:
        _TOUCHED.append(name)
        if _STATE["verbose"]:
            print(f"jflow.mock_torch: placeholder {name} used", file=sys.stderr)


def placeholder(name: str) -> Any:
    """A stand-in for the missing ``name`` (see the module docstring)."""
    def fail(*_: Any, **__: Any) -> Any:
        _touch(name)
        raise _missing(name)

    ns = {"__new__": fail, "__init_subclass__": classmethod(fail), "_mock_name": name,
          "__class_getitem__": classmethod(lambda c, item: c),  # type hints: x: torch.T[...]
          "__module__": name.rpartition(".")[0] or "torch",
          "__doc__": f"jflow.mock_torch placeholder for the missing {name}"}
    return _PlaceholderType(name.rpartition(".")[2] or name, (), ns)


# -- forwarding modules ----------------------------------------------------------------------

class _TorchModule(types.ModuleType):
    """``torch.<path>``: attribute reads go to ``jflow.<path>``; writes stay local."""

    def __init__(self, name: str, target: types.ModuleType | None) -> None:
        super().__init__(name)
        self.__dict__["_jflow_target"] = target

    def __getattr__(self, key: str) -> Any:
        target = self.__dict__["_jflow_target"]
        if key.startswith("__"):  # module machinery (__path__, __spec__ ...): never forwarded
            raise AttributeError(key)
        if target is not None:
            try:
                return getattr(target, key)
            except AttributeError:
                pass
            sub = f"{self.__name__}.{key}"  # a submodule not imported yet
            if _jflow_has(sub):
                return importlib.import_module(sub)
        if _STATE["lazy"]:
            return placeholder(f"{self.__name__}.{key}")
        raise AttributeError(f"jflow has no {self.__name__}.{key} (jflow.mock_torch forwards "
                             f"torch to jflow); see docs/porting.md")

    def __dir__(self) -> list[str]:
        target = self.__dict__["_jflow_target"]
        return sorted(set(super().__dir__()) | set(dir(target) if target else ()))


class _Loader(importlib.abc.Loader):
    def __init__(self, target: types.ModuleType | None) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        mod = _TorchModule(spec.name, self.target)
        if spec.name == "torch":
            mod.__dict__["__version__"] = TORCH_VERSION
            mod.__dict__["__jflow__"] = getattr(self.target, "__version__", "")
        return mod

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class _Finder(importlib.abc.MetaPathFinder):
    """Answers every ``torch`` / ``torch.*`` import while mocking is on."""

    def find_spec(self, name: str, path: Any = None, target: Any = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if name != "torch" and not name.startswith("torch."):
            return None
        if _jflow_has(name):
            mod: types.ModuleType | None = importlib.import_module(_jflow_name(name))
        elif _STATE["lazy"]:
            _touch(name)
            mod = None
        else:
            raise ModuleNotFoundError(f"jflow has no module {name} (jflow.mock_torch forwards "
                                      f"torch to jflow; enable(lazy=True) loads missing "
                                      f"names as placeholders)", name=name)
        spec = importlib.machinery.ModuleSpec(name, _Loader(mod), is_package=True)
        spec.submodule_search_locations = []
        return spec


# -- switching -----------------------------------------------------------------------------------

class _Enabled:
    """What :func:`enable` returns: mocking is already on; ``with`` turns it off at exit."""

    def __enter__(self) -> _Enabled:
        return self

    def __exit__(self, *exc: Any) -> None:
        disable()


def enable(lazy: bool = False, verbose: bool = False) -> _Enabled:
    """Make ``import torch`` (and ``torch.*``) give jflow; usable as a context manager."""
    import jflow  # noqa: F401, PLC0415  (the targets; imported before the finder is in place)
    if _STATE["on"]:
        disable()
    saved = {k: v for k, v in sys.modules.items() if k == "torch" or k.startswith("torch.")}
    for k in saved:
        del sys.modules[k]
    finder = _Finder()
    sys.meta_path.insert(0, finder)
    _STATE.update(on=True, lazy=lazy, verbose=verbose, saved=saved, finder=finder)
    return _Enabled()


def disable() -> None:
    """Undo :func:`enable`: the mocked modules leave ``sys.modules``, a real PyTorch imported
    before comes back, and ``import torch`` finds the real one again."""
    if not _STATE["on"]:
        return
    for k in [k for k in sys.modules if k == "torch" or k.startswith("torch.")]:
        if isinstance(sys.modules[k], _TorchModule):
            del sys.modules[k]
    sys.modules.update(_STATE["saved"])
    finder = _STATE["finder"]
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    _STATE.update(on=False, saved={}, finder=None)


def is_enabled() -> bool:
    """Whether ``import torch`` currently resolves to jflow (between enable and disable)."""
    return bool(_STATE["on"])


def touched() -> list[str]:
    """The placeholders used so far (``lazy=True``)."""
    return list(_TOUCHED)
