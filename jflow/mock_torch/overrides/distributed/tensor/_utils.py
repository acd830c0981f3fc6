"""``torch.distributed.tensor._utils``: DTensor's layout helpers (no DTensor in jflow: they
raise when called; see :mod:`torch.distributed.tensor`)."""

from typing import Any, NoReturn

from . import _refuse


def compute_local_shape_and_global_offset(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (no DTensor)."""
    _refuse("_utils.compute_local_shape_and_global_offset")
