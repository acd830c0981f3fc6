"""How much of PyTorch's API jflow covers, by name (issue 14's counts): ``flow._C`` entries and
registered primitives, then — when PyTorch is installed — the public callables of ``torch``,
``torch.Tensor``, ``torch.nn.functional``, the ``torch.nn`` modules and ``torch.optim``
optimizers that jflow has under the same name.

    python benchmarks/api_coverage.py            # prints the table (results_api_coverage.txt)

A name counts when jflow has an attribute of that name; that it behaves like PyTorch is the
business of the tests (tests/test_*_parity.py, tests/compat/).
"""

from __future__ import annotations

import inspect
from typing import Any

import jflow as flow
from jflow.functional import F
from jflow.ops import list_ops


def _public(obj: Any, pred: Any) -> set[str]:
    """Public names of ``obj`` whose value satisfies ``pred`` (typing helpers excluded)."""
    return {n for n in dir(obj) if not n.startswith("_") and pred(getattr(obj, n, None))
            and getattr(getattr(obj, n, None), "__module__", "") != "typing"}


def rows() -> list[tuple[str, int, int | None, list[str]]]:
    """``(what, jflow has, PyTorch has or None, a few missing names)``."""
    out: list[tuple[str, int, int | None, list[str]]] = [
        ("flow._C functional entries", sum(e.bind_python for e in F.entries), None, []),
        ("registered primitives", len(list_ops()), None, [])]
    try:
        import torch
        import torch.nn.functional as tf
    except ImportError:
        return out

    def row(what: str, theirs: set[str], ours: Any) -> None:
        have = {n for n in theirs if hasattr(ours, n)}
        out.append((what, len(have), len(theirs), sorted(theirs - have)[:12]))

    row("torch.* callables", _public(torch, lambda o: callable(o) and not inspect.isclass(o)
                                     and not inspect.ismodule(o)), flow)
    row("Tensor methods", _public(torch.Tensor, callable), flow.Tensor)
    row("nn.functional functions", _public(tf, lambda o: callable(o) and not inspect.isclass(o)
                                           and not inspect.ismodule(o)), flow.nn.functional)
    row("nn modules", _public(torch.nn, lambda o: inspect.isclass(o)
                              and issubclass(o, torch.nn.Module)), flow.nn)
    row("optimizers", _public(torch.optim, lambda o: inspect.isclass(o)
                              and issubclass(o, torch.optim.Optimizer)
                              and o is not torch.optim.Optimizer), flow.optim)
    return out


def main() -> None:
    print(f"jflow {flow.__version__}; names jflow has / PyTorch has (PyTorch "
          f"{__import__('torch').__version__ if rows()[2:] else 'not installed'})")
    print(f"{'what':<28}{'jflow':>7}{'torch':>7}  first missing names")
    for what, ours, theirs, missing in rows():
        print(f"{what:<28}{ours:>7}{'' if theirs is None else theirs:>7}  "
              f"{', '.join(missing)}")


if __name__ == "__main__":
    main()
