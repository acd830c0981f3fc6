"""``default_collate`` and ``default_convert``: samples -> batches of jflow tensors, following
PyTorch's rules so ported training loops see the same structure and dtypes."""

from __future__ import annotations

import collections.abc
from typing import Any

import numpy as np

from ... import dtypes as _dt
from ..._C import stack
from ...creation import as_tensor, tensor
from ...tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_collate(batch: Any) -> Any:
    """Merge a list of samples into one batch, recursing through the sample's structure.

    Tensors are stacked on a new first dimension (``flow.stack``); NumPy arrays and scalars
    become tensors first; Python ints give an int64 tensor, floats float64 and bools bool
    (PyTorch's choices, so dtypes match ported code); strings and bytes stay a list. Dicts,
    namedtuples and sequences are collated field by field; a tuple comes back as a list, as
    in PyTorch. Sequences of unequal length are an error rather than silently truncated.
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, (np.ndarray, np.memmap)):
        if elem.dtype.char in "SaUO":
            raise TypeError(_ERR.format(elem.dtype))
        return default_collate([as_tensor(b) for b in batch])
    if isinstance(elem, (np.bool_, np.number)):
        return as_tensor(np.asarray(batch))
    if isinstance(elem, bool):
        return tensor(batch, dtype=_dt.bool_)
    if isinstance(elem, int):
        return tensor(batch, dtype=_dt.int64)
    if isinstance(elem, float):
        return tensor(batch, dtype=_dt.float64)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        out = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(out)
        except TypeError:  # a Mapping whose constructor takes something else
            return out
    if _is_namedtuple(elem):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of "
                               "equal size")
        fields = [default_collate(list(s)) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return fields
        try:
            return type(elem)(fields)
        except TypeError:
            return fields
    raise TypeError(_ERR.format(type(elem)))


def default_convert(data: Any) -> Any:
    """Convert NumPy arrays and scalars in ``data`` to tensors without batching: the
    ``collate_fn`` used when ``batch_size=None`` turns automatic batching off."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, (np.ndarray, np.memmap, np.bool_, np.number)):
        if isinstance(data, np.ndarray) and data.dtype.char in "SaUO":
            return data
        return as_tensor(data)
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        out = {key: default_convert(v) for key, v in data.items()}
        try:
            return type(data)(out)
        except TypeError:
            return out
    if _is_namedtuple(data):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
