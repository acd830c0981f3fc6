"""The op checker over every built-in op (DESIGN §9): abstract eval, NumPy reference,
jit, vmap and error samples. An op registered without samples fails here."""

from __future__ import annotations

import pytest

import jflow
from jflow.testing import check_op, samples_registered
from jflow.testing.op_samples import load_builtin

load_builtin()
BUILTIN = sorted(n for n in jflow.ops.list_ops() if jflow.ops.get(n).builtin)


def test_every_builtin_op_has_samples() -> None:
    missing = sorted(set(BUILTIN) - set(samples_registered()))
    assert not missing, f"ops registered without checker samples: {missing}"


def test_samples_name_real_ops() -> None:
    unknown = sorted(set(samples_registered()) - set(jflow.ops.list_ops()))
    assert not unknown, f"samples registered for unknown ops: {unknown}"


@pytest.mark.parametrize("op_name", [n for n in BUILTIN if n in samples_registered()])
def test_op(op_name: str) -> None:
    check_op(op_name)
