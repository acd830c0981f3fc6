"""``jflow.mock_torch``: unmodified PyTorch programs (and libraries that ``import torch``)
run on jflow, as ``oneflow.mock_torch`` does for OneFlow.

    import jflow.mock_torch as mock
    with mock.enable():                 # or mock.enable() ... mock.disable()
        import torch                    # jflow, under PyTorch's names
        import torch.nn.functional as F

    eval $(python -m jflow.mock_torch)  # in a shell: `python train.py` then runs on jflow
    eval $(python -m jflow.mock_torch disable)

While enabled, ``torch`` and every ``torch.<path>`` resolve to a module that forwards to
``jflow.mock_torch.overrides.<path>`` (PyTorch's API where jflow's same-named module has
another, or names only PyTorch programs use: ``torch.jit``, ``torch._dynamo``...) and then to
``jflow.<path>`` (``torch.nn.modules.conv`` -> ``jflow.nn.modules.conv``), so
``isinstance(x, torch.Tensor)`` holds for jflow tensors and ``class Net(torch.nn.Module)``
is a jflow module. ``torch.__version__`` is :data:`TORCH_VERSION` (a PyTorch release string,
so a library's ``version.parse(torch.__version__) >= ...`` check passes; ``torch.__jflow__``
is jflow's own version). The real PyTorch cannot be imported meanwhile: an already imported
one is taken out of ``sys.modules`` and put back by :func:`disable`.

A name or module jflow lacks raises ``ImportError`` / ``AttributeError`` naming it — or,
with ``lazy=True`` and if PyTorch has it (:func:`torch_has`), becomes a placeholder that loads
fine and raises ``NotImplementedError("jflow has no torch.xxx ...")`` only when used (called,
subclassed, instantiated); ``isinstance(x, placeholder)`` is False. A name PyTorch lacks
fails as in PyTorch in both modes. ``verbose=True`` prints each equivalent and placeholder
when first touched; :func:`touched` lists them.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

__all__ = ["enable", "disable", "is_enabled", "touched", "torch_has", "TORCH_VERSION",
           "OVERRIDES"]

#: what ``torch.__version__`` reports while mocking (the PyTorch release whose API jflow
#: follows)
TORCH_VERSION = "2.13.0"

_STATE: dict[str, Any] = {"on": False, "lazy": False, "verbose": False, "saved": {},
                          "finder": None}
_TOUCHED: list[str] = []


# -- what PyTorch itself has (lazy mode's guide) -------------------------------------------------

_NAMES: dict[str, Any] = {}
#: the package whose modules answer ``torch.<path>`` before ``jflow.<path>``: PyTorch's API
#: where jflow's same-named module has another one (``torch.compiler``, ``torch._C``...) or
#: where only PyTorch programs need the name (``torch.jit``, ``torch._dynamo``, ``torch.fx``)
OVERRIDES = "jflow.mock_torch.overrides"


def _torch_names() -> dict[str, Any]:
    """PyTorch's module list and, for its public modules, their names (``torch_names.json.gz``,
    written from PyTorch by ``_gen_torch_names.py``): with ``lazy=True`` a name PyTorch lacks
    fails as it would in PyTorch instead of becoming a placeholder."""
    if not _NAMES:
        import gzip  # noqa: PLC0415
        import json  # noqa: PLC0415
        from pathlib import Path  # noqa: PLC0415
        with gzip.open(Path(__file__).with_name("torch_names.json.gz"), "rt") as f:
            data = json.load(f)
        _NAMES.update(modules=frozenset(data["modules"]),
                      attrs={k: frozenset(v) for k, v in data["attrs"].items()})
    return _NAMES


def torch_has(name: str) -> bool | None:
    """Whether PyTorch (the release of :data:`TORCH_VERSION`) has ``name`` (a module or a
    module's attribute): True / False, or None when unknown (a private module's names)."""
    names = _torch_names()
    if name in names["modules"]:
        return True
    parent, _, key = name.rpartition(".")
    if not parent:
        return name == "torch"
    attrs = names["attrs"].get(parent)
    return None if attrs is None else key in attrs


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


def _touch(name: str, kind: str = "placeholder") -> None:
    entry = f"{name} ({kind})"
    if entry not in _TOUCHED_SET:
        _TOUCHED_SET.add(entry)
        _TOUCHED.append(entry)
        if _STATE["verbose"]:
            print(f"jflow.mock_torch: {kind} {name} used", file=sys.stderr)


_TOUCHED_SET: set[str] = set()


def placeholder(name: str) -> Any:
    """A stand-in for the missing ``name`` (see the module docstring)."""
    def fail(*_: Any, **__: Any) -> Any:
        _touch(name)
        raise _missing(name)

    ns = {"__new__": fail, "__init_subclass__": classmethod(fail), "_mock_name": name,
          "__class_getitem__": classmethod(lambda c, item: c),  # type hints: x: torch.T[...]
          "__module__": name.rpartition(".")[0] or "torch",
          "__doc__": f"jflow.mock_torch placeholder for the missing {name}"}
    _touch(name, "placeholder loaded")
    return _PlaceholderType(name.rpartition(".")[2] or name, (), ns)


# -- forwarding modules ----------------------------------------------------------------------

def _jflow_name(name: str) -> str:
    return "jflow" + name[len("torch"):]


def _override_name(name: str) -> str:
    return OVERRIDES + name[len("torch"):]


def _find(modname: str) -> bool:
    try:
        return importlib.util.find_spec(modname) is not None
    except (ModuleNotFoundError, ValueError, ImportError):  # a parent is not a package
        return False


_OVERRIDE_SET: set[str] = set()


def _overridden(name: str) -> bool:
    """Whether ``torch.<path>`` has a module in :data:`OVERRIDES` (PyTorch's API for it)."""
    if not _OVERRIDE_SET:
        import pkgutil  # noqa: PLC0415
        pkg = importlib.import_module(OVERRIDES)
        _OVERRIDE_SET.add("torch")
        for info in pkgutil.walk_packages(pkg.__path__, OVERRIDES + "."):
            _OVERRIDE_SET.add("torch" + info.name[len(OVERRIDES):])
    return name in _OVERRIDE_SET


def _targets(name: str) -> list[types.ModuleType]:
    """The modules ``torch.<path>`` reads from, first wins: its override (if any), then
    ``jflow.<path>`` unless the override replaces jflow's module (``__mock_fallback__`` False)."""
    out: list[types.ModuleType] = []
    fallback = True
    if _overridden(name):
        ov = importlib.import_module(_override_name(name))
        out.append(ov)
        fallback = getattr(ov, "__mock_fallback__", True)
    if fallback and _find(_jflow_name(name)):
        out.append(importlib.import_module(_jflow_name(name)))
    return out


def _has(name: str) -> bool:
    return _overridden(name) or _find(_jflow_name(name))


class _TorchModule(types.ModuleType):
    """``torch.<path>``: attribute reads go to its override, then to ``jflow.<path>``;
    a submodule read is the ``torch.<path>.<sub>`` module; writes stay local, except to a
    setting the override defines as a property (it is jflow's)."""

    def __init__(self, name: str, targets: list[types.ModuleType]) -> None:
        super().__init__(name)
        self.__dict__["_jflow_targets"] = targets
        self.__dict__["_jflow_target"] = next(
            (t for t in targets if not t.__name__.startswith(OVERRIDES)), None)

    def __getattr__(self, key: str) -> Any:
        if key.startswith("__"):  # module machinery (__path__, __spec__ ...): never forwarded
            raise AttributeError(key)
        sub = f"{self.__name__}.{key}"
        if _overridden(sub):
            return importlib.import_module(sub)
        for target in self.__dict__["_jflow_targets"]:
            try:
                value = getattr(target, key)
            except AttributeError:
                continue
            if isinstance(value, types.ModuleType) and _has(sub):
                return importlib.import_module(sub)  # torch.nn is the torch.nn module
            if target.__name__.startswith(OVERRIDES) and not isinstance(value, types.ModuleType):
                _touch(sub, "equivalent")
            return value
        if _has(sub):
            return importlib.import_module(sub)
        if _STATE["lazy"]:
            known = torch_has(sub)
            if known is False:
                raise AttributeError(f"module {self.__name__!r} has no attribute {key!r} "
                                     f"(PyTorch {TORCH_VERSION} has no {sub} either)")
            if known is True and sub in _torch_names()["modules"]:
                return importlib.import_module(sub)  # a placeholder module
            return placeholder(sub)
        raise AttributeError(f"jflow has no {sub} (jflow.mock_torch forwards torch to jflow); "
                             f"see docs/porting.md")

    def __setattr__(self, key: str, value: Any) -> None:
        # a setting the override defines as a property (torch._dynamo.config.recompile_limit)
        # is jflow's: the write goes to it; any other write stays on this module
        for t in self.__dict__["_jflow_targets"]:
            if t.__name__.startswith(OVERRIDES) and isinstance(getattr(type(t), key, None),
                                                               property):
                setattr(t, key, value)
                return
        super().__setattr__(key, value)

    def __dir__(self) -> list[str]:
        names = set(super().__dir__())
        for t in self.__dict__["_jflow_targets"]:
            names |= set(dir(t))
        return sorted(names)


class _Loader(importlib.abc.Loader):
    def __init__(self, targets: list[types.ModuleType]) -> None:
        self.targets = targets

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        mod = _TorchModule(spec.name, self.targets)
        if spec.name == "torch":
            jflow = mod.__dict__["_jflow_target"]
            mod.__dict__["__version__"] = TORCH_VERSION
            mod.__dict__["__jflow__"] = getattr(jflow, "__version__", "")
        return mod

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class _Finder(importlib.abc.MetaPathFinder):
    """Answers every ``torch`` / ``torch.*`` import while mocking is on."""

    def find_spec(self, name: str, path: Any = None, target: Any = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if name != "torch" and not name.startswith("torch."):
            return None
        if _has(name):
            targets = _targets(name)
            if (_overridden(name) and name != "torch"
                    and not getattr(targets[0], "__mock_fallback__", True)):
                _touch(name, "equivalent")  # PyTorch's module, not jflow's
        elif _STATE["lazy"] and torch_has(name):
            _touch(name, "placeholder loaded")
            targets = []
        else:
            why = (f"PyTorch {TORCH_VERSION} has no module {name} either" if not torch_has(name)
                   else "enable(lazy=True) loads missing names as placeholders")
            raise ModuleNotFoundError(f"jflow has no module {name} (jflow.mock_torch forwards "
                                      f"torch to jflow; {why})", name=name)
        spec = importlib.machinery.ModuleSpec(name, _Loader(targets), is_package=True)
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
    """What the program reached that is not plain jflow, in first-use order: each entry is
    ``"torch.<name> (<kind>)"`` with kind ``equivalent`` (a PyTorch name answered by the
    mock's own layer, :data:`OVERRIDES`: ``torch.jit.script`` runs eagerly, ...),
    ``placeholder loaded`` (``lazy=True``: a missing name was looked up) or ``placeholder``
    (a placeholder was used and raised)."""
    return list(_TOUCHED)
