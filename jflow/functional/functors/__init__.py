"""Functor implementations, one module per op family, named as in ``jflow/ops`` (helpers
shared by several families start with ``_``; ``tests/test_families.py`` keeps the names in
step). Ops whose api.yaml entry is a plain ``=> op:name`` binding have no functor."""
