"""``flow.utils._pytree`` (``torch.utils._pytree``): PyTorch's pytree API. Containers are
PyTorch's: tuple, list, dict, namedtuple, OrderedDict, defaultdict (dicts in insertion order,
as PyTorch; ``jax.tree_util`` sorts keys, so this is its own small implementation), plus what
:func:`register_pytree_node` adds; anything else (a Tensor, ``None``) is a leaf, as in
PyTorch. ``tree_flatten`` returns ``(leaves, TreeSpec)``."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure", "tree_map",
           "tree_map_", "tree_map_only", "tree_all", "tree_any", "register_pytree_node",
           "TreeSpec", "LeafSpec", "PyTree", "tree_iter", "treespec_dumps"]

PyTree = Any

# type -> (flatten(x) -> (children, context), unflatten(children, context) -> x)
_NODES: dict[type, tuple[Callable[[Any], Any], Callable[[list[Any], Any], Any]]] = {}


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _flatten_node(x: Any) -> tuple[type, Any, list[Any]] | None:
    """``(type, context, children)`` of a container, None for a leaf."""
    t = type(x)
    if t in _NODES:
        children, ctx = _NODES[t][0](x)
        return t, ctx, list(children)
    if _is_namedtuple(x):
        return t, t, list(x)
    if t in (tuple, list):
        return t, None, list(x)
    if t in (dict, collections.OrderedDict, collections.defaultdict):
        return t, (list(x.keys()), getattr(x, "default_factory", None)), list(x.values())
    return None


def _unflatten_node(t: type, ctx: Any, children: list[Any]) -> Any:
    if t in _NODES:
        return _NODES[t][1](children, ctx)
    if t in (tuple, list):
        return t(children)
    if isinstance(ctx, type):  # a namedtuple
        return ctx(*children)
    keys, factory = ctx
    if t is collections.defaultdict:
        return collections.defaultdict(factory, zip(keys, children))
    return t(zip(keys, children))


class TreeSpec:
    """The structure of a pytree: a node's type, its context (dict keys ...) and its
    children's specs; a leaf's spec is a :class:`LeafSpec`."""

    def __init__(self, type: Any, context: Any,  # noqa: A002  (PyTorch's name)
                 children_specs: list[TreeSpec]) -> None:
        self.type, self.context, self.children_specs = type, context, children_specs
        self.num_leaves: int = sum(c.num_leaves for c in children_specs)
        self.num_nodes: int = 1 + sum(c.num_nodes for c in children_specs)

    @property
    def num_children(self) -> int:
        """Children of the root."""
        return len(self.children_specs)

    def is_leaf(self) -> bool:
        """Whether this is a single leaf."""
        return False

    def unflatten(self, leaves: Iterable[Any]) -> PyTree:
        """Rebuild the tree from leaves."""
        items = list(leaves)
        if len(items) != self.num_leaves:
            raise ValueError(f"tree_unflatten: expected {self.num_leaves} leaves, got "
                             f"{len(items)}")
        return self._build(iter(items))

    def _build(self, it: Any) -> PyTree:
        return _unflatten_node(self.type, self.context,
                               [c._build(it) for c in self.children_specs])

    def _key(self) -> Any:
        return (self.type, repr(self.context), tuple(c._key() for c in self.children_specs))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TreeSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        name = getattr(self.type, "__name__", str(self.type))
        kids = ", ".join(map(repr, self.children_specs))
        return f"TreeSpec({name}, {self.context!r}, [{kids}])"


class LeafSpec(TreeSpec):
    """The structure of a single leaf."""

    def __init__(self) -> None:
        super().__init__(None, None, [])
        self.num_leaves = 1
        self.num_nodes = 1

    def is_leaf(self) -> bool:
        """True."""
        return True

    def _build(self, it: Any) -> PyTree:
        return next(it)

    def _key(self) -> Any:
        return "*"

    def __repr__(self) -> str:
        return "*"


def _flatten(tree: Any, is_leaf: Callable[[Any], bool] | None, leaves: list[Any]) -> TreeSpec:
    if is_leaf is not None and is_leaf(tree):
        leaves.append(tree)
        return LeafSpec()
    node = _flatten_node(tree)
    if node is None:
        leaves.append(tree)
        return LeafSpec()
    t, ctx, children = node
    return TreeSpec(t, ctx, [_flatten(c, is_leaf, leaves) for c in children])


def tree_flatten(tree: PyTree, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Any], TreeSpec]:
    """``(leaves, spec)``, in PyTorch's order (dict values in insertion order)."""
    leaves: list[Any] = []
    return leaves, _flatten(tree, is_leaf, leaves)


def tree_unflatten(leaves: Iterable[Any], treespec: TreeSpec) -> PyTree:
    """The tree with ``treespec``'s structure and these leaves."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): expected treespec to be a "
                        f"TreeSpec, got {type(treespec).__name__}")
    return treespec.unflatten(leaves)


def tree_leaves(tree: PyTree, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: Callable[[Any], bool] | None = None) -> TreeSpec:
    """The structure."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
             is_leaf: Callable[[Any], bool] | None = None) -> PyTree:
    """A tree of ``func(leaf, *leaves of rests)`` (``rests`` have ``tree``'s structure)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [tree_flatten(r, is_leaf)[0] for r in rests]
    return spec.unflatten([func(x, *(o[i] for o in others)) for i, x in enumerate(leaves)])


def tree_iter(tree: PyTree, is_leaf: Callable[[Any], bool] | None = None) -> Iterable[Any]:
    """An iterator over the leaves."""
    return iter(tree_leaves(tree, is_leaf))






def tree_map_(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
              is_leaf: Callable[[Any], bool] | None = None) -> PyTree:
    """Call ``func`` on every leaf (for its effect); returns ``tree``."""
    leaves = tree_leaves(tree, is_leaf)
    others = [tree_leaves(r, is_leaf) for r in rests]
    for i, leaf in enumerate(leaves):
        func(leaf, *(o[i] for o in others))
    return tree


def _types(type_or_types: Any) -> tuple[type, ...]:
    return type_or_types if isinstance(type_or_types, tuple) else (type_or_types,)


def tree_map_only(type_or_types: Any, func: Callable[[Any], Any], tree: PyTree,
                  is_leaf: Callable[[Any], bool] | None = None) -> PyTree:
    """Apply ``func`` to leaves of the given type(s), keep the others."""
    types = _types(type_or_types)
    return tree_map(lambda x: func(x) if isinstance(x, types) else x, tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether ``pred`` holds for every leaf."""
    return all(pred(x) for x in tree_leaves(tree, is_leaf))


def tree_any(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether ``pred`` holds for some leaf."""
    return any(pred(x) for x in tree_leaves(tree, is_leaf))


def register_pytree_node(cls: type, flatten_fn: Callable[[Any], tuple[list[Any], Any]],
                         unflatten_fn: Callable[[Iterable[Any], Any], Any], *,
                         serialized_type_name: str | None = None, to_dumpable_context: Any = None,
                         from_dumpable_context: Any = None, flatten_with_keys_fn: Any = None
                         ) -> None:
    """Make ``cls`` a container: PyTorch's ``flatten_fn(x) -> (children, context)`` and
    ``unflatten_fn(children, context)``."""
    _NODES[cls] = (flatten_fn, lambda children, ctx: unflatten_fn(children, ctx))


_register_pytree_node = register_pytree_node


def treespec_dumps(treespec: TreeSpec, protocol: int | None = None) -> str:
    """A string form of the structure (jflow's: not PyTorch's JSON schema)."""
    return repr(treespec)


# -- key paths and the dict helpers libraries reuse --------------------------------------------

Context = Any


@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """Position ``idx`` in a sequence (a key-path entry)."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """Key ``key`` of a mapping (a key-path entry)."""

    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """Attribute ``name`` (a key-path entry)."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


def _dict_flatten(d: dict[Any, Any]) -> tuple[list[Any], Context]:
    return list(d.values()), list(d.keys())


def _dict_flatten_with_keys(d: dict[Any, Any]) -> tuple[list[tuple[MappingKey, Any]], Context]:
    values, context = _dict_flatten(d)
    return [(MappingKey(k), v) for k, v in zip(context, values)], context


def _dict_unflatten(values: Iterable[Any], context: Context) -> dict[Any, Any]:
    return dict(zip(context, values))


#: the registered container types (PyTorch's name; the built-in ones are handled directly)
SUPPORTED_NODES = _NODES


def register_pytree_flatten_spec(cls: type, flatten_fn_spec: Any,
                                 flatten_fn_exact_match_spec: Any = None) -> None:
    """FX's flatten-spec registry: FX tracing is not in jflow, so there is nothing to use it;
    accepted so libraries that register at import load."""


def treespec_loads(serialized: str) -> TreeSpec:
    """Raises: :func:`treespec_dumps` writes jflow's own form, not PyTorch's schema."""
    raise NotImplementedError("torch.utils._pytree.treespec_loads: jflow does not read "
                              "PyTorch's serialized tree specs")
