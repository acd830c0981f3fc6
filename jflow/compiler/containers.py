"""Containers of tensors that ``jax.tree_util`` does not know, as arguments and results of a
compiled function: library output classes (transformers' ``ModelOutput``, a ``@dataclass``
subclassing ``OrderedDict``), cache objects (``DynamicCache``: a plain class holding lists of
per-layer tensors), user dataclasses, and classes registered with PyTorch's pytree API
(``flow.utils._pytree.register_pytree_node``).

:func:`to_tree` turns such objects into :class:`Node` s, a pytree JAX traces through; the
tensors inside become leaves (inputs or outputs of the executable) and :func:`from_tree`
rebuilds the objects. The rules, in order, for a value that is not a Tensor / Module /
Optimizer:

1. a type JAX knows (tuple, list, dict, namedtuple, ``None``, a class registered with
   ``jax.tree_util.register_pytree_node(_class)`` or ``register_dataclass``): JAX's own
   flattening, its children converted;
2. a type registered with ``flow.utils._pytree.register_pytree_node`` (``torch.utils._pytree``
   under the mock): its ``flatten_fn`` / ``unflatten_fn``;
3. a dataclass instance, an instance of a ``dict`` subclass, or an object whose ``__dict__``
   holds a tensor (directly or inside containers) or a list / dict / set: its attributes
   (``__dict__``, or a slotted dataclass's fields) and, for a dict subclass, its items. It is
   rebuilt as a **shallow copy of the same class**: ``cls.__new__(cls)`` without ``__init__``
   / ``__post_init__``, the attributes set into its ``__dict__`` and the items set with the
   dict base class's ``__setitem__`` (so ``isinstance``, attribute and key access work; an
   item that is the same object as an attribute -- ``ModelOutput``'s fields -- stays that same
   object).

Inside such an object, values that hold no tensor or array (numbers, strings, ``None``,
classes, a config object, a list of ints) are kept as they are: part of the signature of an
argument by value (by identity when unhashable: a different one traces again) and, in a
result, the value the trace saw (lists, dicts and sets among them are copied for each rebuilt
object). Every container on the way to a tensor is rebuilt (a fresh list, dict or object), so
an argument object changed in place inside the compiled function (``cache.update(...)``)
leaves the caller's object as it was: the new state reaches the caller through the results.
"""

from __future__ import annotations

import copy
import dataclasses
import types
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer
from ..tensor import Tensor
from ..utils import _pytree

__all__ = ["Node", "to_tree", "from_tree", "needs_tree", "torch_nodes"]

#: leaf types that are never containers (checked before anything else)
_LEAVES = (Tensor, Module, Optimizer, jax.Array, np.ndarray, np.generic, int, float, complex,
           bool, str, bytes, type(None))
#: values never taken apart in rule 3
_OPAQUE = (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType,
           types.ModuleType, Module, Optimizer, Tensor)
_MAX_DEPTH = 64


def torch_nodes() -> dict[type, tuple[Callable[..., Any], Callable[..., Any]]]:
    """The classes registered with ``flow.utils._pytree`` (PyTorch's pytree API)."""
    return _pytree._NODES


def _freeze(v: Any) -> Any:
    """A hashable stand-in for ``v`` compared by value (lists as tuples ...); raises TypeError
    when there is none."""
    if isinstance(v, (list, tuple)):
        return (type(v), tuple(_freeze(x) for x in v))
    if isinstance(v, (set, frozenset)):
        return (type(v), frozenset(_freeze(x) for x in v))
    if isinstance(v, dict):
        return (type(v), tuple((k, _freeze(x)) for k, x in v.items()))
    hash(v)
    return (type(v), v)


class Static:
    """A value without tensors inside a converted object: equal to another when the values
    are equal (of the same types; lists, tuples, dicts and sets compared by their items as
    they were when this was made), or by identity when the value is unhashable."""

    __slots__ = ("value", "_key")

    def __init__(self, value: Any) -> None:
        self.value = value
        try:
            self._key: Any = _freeze(value)
        except TypeError:
            self._key = ("id", id(value))

    def __eq__(self, other: object) -> bool:
        return type(other) is Static and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"Static({self.value!r})"


class Node:
    """A converted object: ``kind`` (``"pt"``: a flow.utils._pytree node; ``"obj"``: rule 3),
    its class, ``meta`` (hashable, compared by value: part of a cache key) and the converted
    values holding tensors (``children``, the pytree's children)."""

    __slots__ = ("kind", "cls", "meta", "children")

    def __init__(self, kind: str, cls: type, meta: Any, children: list[Any]) -> None:
        self.kind, self.cls, self.meta, self.children = kind, cls, meta, children

    def __repr__(self) -> str:
        return f"Node({self.cls.__name__}, {len(self.children)} children)"


class _Aux(tuple):
    """``(kind, cls, meta)``: a node's part of a PyTreeDef (what its repr shows, in recompile
    reasons, is the class and its attribute / item names)."""

    __slots__ = ()

    def __repr__(self) -> str:
        kind, cls, meta = self
        if kind == "pt":
            return f"{cls.__name__}[{meta.value!r}]"
        names, _, keys, *_ = meta
        return f"{cls.__name__}{{{', '.join(map(str, (*names, *keys)))}}}"


jax.tree_util.register_pytree_node(
    Node, lambda n: (n.children, _Aux((n.kind, n.cls, n.meta))),
    lambda aux, children: Node(aux[0], aux[1], aux[2], list(children)))


def _holds_tensor(x: Any, depth: int, seen: set[int] | None = None) -> bool:
    """Whether a tensor (or an array) is inside ``x`` (containers and ``__dict__`` s,
    ``depth`` levels)."""
    if isinstance(x, (Tensor, jax.Array, np.ndarray)):
        return True
    if depth <= 0 or isinstance(x, _LEAVES) or isinstance(x, _OPAQUE):
        return False
    seen = set() if seen is None else seen
    if id(x) in seen:
        return False
    seen.add(id(x))
    if isinstance(x, (list, tuple, set, frozenset)):
        return any(_holds_tensor(v, depth - 1, seen) for v in x)
    if isinstance(x, dict):
        if any(_holds_tensor(v, depth - 1, seen) for v in x.values()):
            return True
    d = getattr(x, "__dict__", None)
    if isinstance(d, dict):
        return any(_holds_tensor(v, depth - 1, seen) for v in d.values())
    if dataclasses.is_dataclass(x):
        return any(_holds_tensor(getattr(x, f.name, None), depth - 1, seen)
                   for f in dataclasses.fields(x))
    return False


def _is_object_container(x: Any) -> bool:
    """Rule 3 of the module docstring."""
    if isinstance(x, _OPAQUE):
        return False
    if dataclasses.is_dataclass(x) or isinstance(x, dict):
        return True
    d = getattr(x, "__dict__", None)
    # (an object holding a list / dict / set, even empty, may be filled in place inside the
    # call, as a cache is: taken apart, its copy is what the call changes)
    return isinstance(d, dict) and (any(type(v) in (list, dict, set) for v in d.values())
                                    or _holds_tensor(x, 4))


def needs_tree(leaves: list[Any]) -> bool:
    """Whether some leaf of a JAX flattening is a container for :func:`to_tree`."""
    for x in leaves:
        if not isinstance(x, _LEAVES):
            if type(x) in torch_nodes() or _is_object_container(x):
                return True
    return False


def _plain(x: Any) -> bool:
    """A value kept as it is inside an object: no tensor or array inside it, not a module."""
    return not isinstance(x, (Module, Optimizer)) and not _holds_tensor(x, _MAX_DEPTH)


def to_tree(x: Any, _active: set[int] | None = None, _depth: int = 0) -> Any:
    """``x`` with every container JAX does not know replaced by a :class:`Node` (the same
    object when there is none inside)."""
    if isinstance(x, _LEAVES):
        return x
    if _depth > _MAX_DEPTH:
        raise RecursionError(f"a container nested more than {_MAX_DEPTH} levels deep")
    active = set() if _active is None else _active
    if id(x) in active:
        raise ValueError(f"a {type(x).__name__} contains itself: compiled functions take and "
                         f"return trees of tensors")
    active.add(id(x))
    try:
        return _convert(x, active, _depth + 1)
    finally:
        active.discard(id(x))


def _convert(x: Any, active: set[int], depth: int) -> Any:
    children, treedef = jax.tree_util.tree_flatten(x, is_leaf=lambda y: y is not x)
    if not (treedef.num_leaves == 1 and treedef.num_nodes == 1):  # a JAX container
        new = [to_tree(c, active, depth) for c in children]
        if all(a is b for a, b in zip(new, children)):
            return x
        return jax.tree_util.tree_unflatten(treedef, new)
    nodes = torch_nodes()
    cls = type(x)
    if cls in nodes:
        kids, ctx = nodes[cls][0](x)
        return Node("pt", cls, Static(ctx), [to_tree(c, active, depth) for c in kids])
    if not _is_object_container(x):
        return x
    return _object_node(x, active, depth)


def _object_node(x: Any, active: set[int], depth: int) -> Node:
    cls = type(x)
    d = getattr(x, "__dict__", None)
    slotted = not isinstance(d, dict)
    if slotted:  # a dataclass with __slots__
        names = tuple(f.name for f in dataclasses.fields(x) if hasattr(x, f.name))
        attrs = [getattr(x, n) for n in names]
    else:
        names, attrs = tuple(d.keys()), list(d.values())
    keys: tuple = ()
    alias: tuple = ()
    items: list[Any] = []
    if isinstance(x, dict):
        base = _dict_base(cls)  # (OrderedDict's own order; the class may override access)
        keys = tuple(base.keys(x))
        by_id = {id(v): i for i, v in enumerate(attrs) if not _plain(v)}
        al = []
        for k in keys:
            v = base.__getitem__(x, k)
            i = by_id.get(id(v), -1)
            al.append(i)
            if i < 0:
                items.append(v)
        alias = tuple(al)
    statics, children = [], []
    for pos, v in enumerate((*attrs, *items)):
        if _plain(v):
            statics.append((pos, Static(v)))
        else:
            children.append(to_tree(v, active, depth))
    meta = (names, slotted, keys, alias, tuple(statics), len(attrs) + len(items))
    return Node("obj", cls, meta, children)


def _dict_base(cls: type) -> type:
    """The first of ``dict`` / ``OrderedDict`` / ``defaultdict`` ... in ``cls``'s MRO."""
    return next(b for b in cls.__mro__ if b.__module__ in ("builtins", "collections")
                and issubclass(b, dict))


def _rebuild(node: Node) -> Any:
    children = [from_tree(c) for c in node.children]
    if node.kind == "pt":
        return torch_nodes()[node.cls][1](children, node.meta.value)
    names, slotted, keys, alias, statics, n = node.meta
    values: list[Any] = [None] * n
    fixed = set()
    for pos, s in statics:
        v = s.value
        # (a list / dict / set without tensors is copied: the rebuilt object's own, as it
        # would be after a shallow copy of a tree)
        values[pos] = copy.deepcopy(v) if isinstance(v, (list, dict, set)) else v
        fixed.add(pos)
    it = iter(children)
    for pos in range(n):
        if pos not in fixed:
            values[pos] = next(it)
    cls = node.cls
    new = cls.__new__(cls)
    if slotted:
        for name, v in zip(names, values):
            object.__setattr__(new, name, v)
    else:
        object.__getattribute__(new, "__dict__").update(zip(names, values))
    if keys:
        base = _dict_base(cls)
        rest = iter(values[len(names):])
        for k, i in zip(keys, alias):
            base.__setitem__(new, k, values[i] if i >= 0 else next(rest))
    return new


def from_tree(x: Any) -> Any:
    """Undo :func:`to_tree`: rebuild the objects its nodes stand for."""
    if isinstance(x, Node):
        return _rebuild(x)
    if isinstance(x, _LEAVES):
        return x
    return jax.tree_util.tree_map(lambda n: _rebuild(n) if isinstance(n, Node) else n, x,
                                  is_leaf=lambda n: isinstance(n, (Node, Tensor, Module,
                                                                   Optimizer)))
