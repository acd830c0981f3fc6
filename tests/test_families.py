"""One family name per concern: an op defined in ``jflow/ops/<family>.py`` has its backward
rule in ``jflow/autograd/rules/<family>.py``, its checker samples in
``jflow/testing/op_samples/<family>.py`` and its functors (where it has any) in
``jflow/functional/functors/<family>.py``, so whoever looks for one part of an op finds the
others by the same file name.

Each convention is one test listing every violation (not one test per op: a broken
convention reads as one failure with the whole list).

Which module defined an op is recorded by ``define_op`` (``op.module``: a helper such as
``_unary`` in ``ops/math.py`` counts for its module).
"""

from __future__ import annotations

import pkgutil
import re

import pytest

import jflow
import jflow.autograd.rules
import jflow.functional.functors
import jflow.testing.op_samples
from jflow.functional import FUNCTORS
from jflow.testing import get_samples
from jflow.testing.op_samples import load_builtin

load_builtin()

#: Modules of ``jflow.ops`` that are machinery, not op families.
_NOT_FAMILIES = frozenset({"registry", "primitive", "attrs", "infer", "python_op"})

DEFINED_IN = {n: jflow.ops.get(n).module for n in jflow.ops.list_ops()}
BUILTIN = sorted(n for n in jflow.ops.list_ops() if jflow.ops.get(n).builtin)
FAMILIES = sorted(m.name for m in pkgutil.iter_modules(jflow.ops.__path__)
                  if not m.name.startswith("_") and m.name not in _NOT_FAMILIES)


def _family(op: str) -> str:
    return DEFINED_IN[op].rsplit(".", 1)[1]


def test_every_builtin_op_is_defined_in_a_family_module() -> None:
    missing = [n for n in BUILTIN if n not in DEFINED_IN]
    assert not missing, f"built-in ops whose defining module was not recorded: {missing}"
    stray = {n: DEFINED_IN[n] for n in BUILTIN
             if DEFINED_IN[n] is None or _family(n) not in FAMILIES}
    assert not stray, f"built-in ops defined outside jflow/ops/<family>.py: {stray}"


@pytest.mark.parametrize("package", [jflow.autograd.rules, jflow.functional.functors,
                                     jflow.testing.op_samples],
                         ids=["rules", "functors", "op_samples"])
def test_family_packages_hold_only_family_files(package) -> None:
    """A rules / functors / samples module is named after an op family (no ``creation.py``
    beside ``ops/factory.py``); helpers start with ``_``."""
    names = [m.name for m in pkgutil.iter_modules(package.__path__)
             if not m.name.startswith("_")]
    stray = sorted(set(names) - set(FAMILIES))
    assert not stray, (f"{package.__name__} has modules that are no op family of jflow/ops "
                       f"({FAMILIES}): {stray}")


def test_rules_live_in_the_family_file() -> None:
    wrong = []
    for op_name in BUILTIN:
        rule = jflow.ops.get(op_name).grad_rule
        if rule is None:
            continue
        where, want = rule.apply.__module__, f"jflow.autograd.rules.{_family(op_name)}"
        if where != want:
            wrong.append(f"op '{op_name}' (defined in {DEFINED_IN[op_name]}): its backward rule "
                         f"belongs in {want}, not {where}")
    assert not wrong, "\n".join(wrong)


def test_samples_live_in_the_family_file() -> None:
    wrong = []
    for op_name in BUILTIN:
        where = get_samples(op_name).module
        want = f"jflow.testing.op_samples.{_family(op_name)}"
        if where != want:
            wrong.append(f"op '{op_name}' (defined in {DEFINED_IN[op_name]}): its checker "
                         f"samples belong in {want}, not {where}")
    assert not wrong, "\n".join(wrong)


def _op_of_functor(name: str) -> str | None:
    """The op a functor is named after (``LayerNorm`` -> ``layer_norm``; ``ScalarAdd`` and
    ``ScalarRAdd`` -> ``add``), or None where its name is no op's (``Chunk``, ``MatMul``)."""
    base = re.sub(r"^Scalar(R(?=[A-Z]))?", "", name) or name
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", base).lower()
    return snake if snake in DEFINED_IN else None


_NAMED_AFTER_OPS = sorted(n for n in FUNCTORS if _op_of_functor(n))


def test_functor_names_map_to_ops() -> None:
    """The mapping below is well defined for most functors (a guard against a renaming that
    would quietly leave every functor unchecked)."""
    assert len(_NAMED_AFTER_OPS) > len(FUNCTORS) // 2


def test_functors_live_in_the_family_file() -> None:
    """A functor named after an op lives in the functors file of that op's family."""
    wrong = []
    for functor_name in _NAMED_AFTER_OPS:
        op = _op_of_functor(functor_name)
        where = FUNCTORS[functor_name].__module__
        want = f"jflow.functional.functors.{_family(op)}"
        if where != want:
            wrong.append(f"functor '{functor_name}' (of op '{op}', defined in {DEFINED_IN[op]}) "
                         f"belongs in {want}, not {where}")
    assert not wrong, "\n".join(wrong)
