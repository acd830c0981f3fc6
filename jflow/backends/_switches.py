"""One context manager for every block-scoped switch of ``flow.backends``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def overridden(store: dict[str, Any], **values: Any) -> Iterator[None]:
    """Set ``values`` in ``store`` inside the block; the old ones come back after it."""
    old = {k: store[k] for k in values}
    store.update(values)
    try:
        yield
    finally:
        store.update(old)
