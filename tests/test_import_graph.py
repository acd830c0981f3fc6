"""The package's module import graph has no cycles, and function-level imports say why.

The graph is built from the source with ``ast`` (nothing is imported): one edge per import of
a jflow module, at top level or inside a function. A cycle means two modules each need the
other, which is how layering decays; the layer order it protects is in docs/architecture.md.
A function-level import is allowed only to break a real import-time cycle, and must say so
in a comment on its line or the line above.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "jflow"

#: Cycles that are allowed, as sorted tuples of module names (keep this short; none today).
ALLOWED_CYCLES: set[tuple[str, ...]] = set()


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(name: str, path: Path, modules: dict[str, Path]):
    """``(target module, line, inside a function)`` for each import of a jflow module."""
    is_pkg = path.name == "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def nearest(target: str) -> str | None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        return target or None

    def visit(node: ast.AST, in_function: bool):
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                      ast.Lambda))
            targets: list[str] = []
            if isinstance(child, ast.Import):
                targets = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = name.split(".") if is_pkg else name.split(".")[:-1]
                    base = base[:len(base) - (child.level - 1)]
                    mod = ".".join(base + ([child.module] if child.module else []))
                else:
                    mod = child.module or ""
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod
                           for a in child.names]
            for t in targets:
                t = nearest(t) if t.startswith("jflow") else None
                if t is not None and t != name:
                    yield t, child.lineno, in_function
            yield from visit(child, inner)

    yield from visit(tree, False)


@functools.cache  # (parsing every module takes ~2 s: once for the tests that read it)
def _graph():
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    local: list[tuple[str, int, str]] = []
    for m, p in modules.items():
        for t, line, in_function in _imports(m, p, modules):
            edges[m].add(t)
            if in_function:
                local.append((m, line, t))
    return modules, edges, local


def _cycles(edges: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(tuple(sorted(comp)))
    return out


def test_no_import_cycles():
    _, edges, _ = _graph()
    bad = [c for c in _cycles(edges) if c not in ALLOWED_CYCLES]
    assert not bad, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in bad)


def test_function_level_imports_say_why():
    modules, _, local = _graph()
    missing = []
    for m, line, target in local:
        lines = modules[m].read_text(encoding="utf-8").splitlines()
        here, above = lines[line - 1], lines[line - 2] if line > 1 else ""
        if "#" not in here and not above.strip().startswith("#"):
            missing.append(f"{modules[m].relative_to(ROOT.parent)}:{line}: imports {target}")
    assert not missing, ("function-level imports without a comment saying which cycle they "
                         "break:\n" + "\n".join(missing))


def test_tensor_is_the_bottom_layer():
    """``Tensor`` needs nothing above dtypes/device/_dims: higher layers attach their methods.
    (_malloc_trim is a leaf on ctypes alone: ``item()`` runs its pending trim; value_bounds a
    leaf on NumPy: new tensors note their index bounds there; memory_format, base layer: the
    ``layout`` attribute.)"""
    _, edges, _ = _graph()
    assert edges["jflow.tensor"] <= {"jflow.dtypes", "jflow.device", "jflow._dims",
                                     "jflow.host_transfer", "jflow._malloc_trim",
                                     "jflow.value_bounds", "jflow.memory_format"}
    assert not edges["jflow.value_bounds"]


def test_kernel_registry_does_not_reach_up():
    """The kernel registry reads op declarations; it never imports the assembly or dispatch."""
    _, edges, _ = _graph()
    assert not edges["jflow.kernels.registry"] & {"jflow.ops.primitive", "jflow.dispatch",
                                                  "jflow.ops"}
    assert "jflow.kernels.registry" in edges["jflow.ops.primitive"]
    assert "jflow.autograd.jax_rules" in edges["jflow.ops.primitive"]
    assert "jflow.dispatch" in edges["jflow.ops.primitive"]


def test_the_checker_sees_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("src,expected", [
    ("from .tensor import Tensor\n", [("jflow.tensor", False)]),
    ("def f():\n    from .ops import registry\n", [("jflow.ops.registry", True)]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .tensor import Tensor\n", []),
])
def test_the_graph_reads_imports(tmp_path, src, expected):
    p = tmp_path / "mod.py"
    p.write_text(src)
    modules = _modules() | {"jflow.mod": p}
    got = [(t, f) for t, _, f in _imports("jflow.mod", p, modules)]
    assert got == expected
