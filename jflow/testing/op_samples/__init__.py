"""Checker samples for the built-in ops, one module per op family (mirrors ``jflow/ops``).

Each module calls :func:`jflow.testing.register_samples` with NumPy inputs and an
independent NumPy reference for every op of its family.
"""

import importlib
import pkgutil


def load_builtin() -> None:
    """Import every sample module (idempotent)."""
    for m in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{m.name}")
