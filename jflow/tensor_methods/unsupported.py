"""``Tensor`` methods of what jflow does not have — sparse, quantized, nested and MKL-DNN
layouts, XPU / IPU / MTIA devices — each raising an error that names the method and says why,
where PyTorch would raise too (a dense tensor asked for its sparse ``indices()``) or would
convert (``to_sparse()``). A call is an error, never an ``AttributeError``, so code probing
with ``hasattr`` takes PyTorch's path and a real call explains itself.

What PyTorch answers for a dense tensor is answered the same way elsewhere: ``layout``
(``flow.strided``), ``is_sparse`` / ``is_quantized`` / ... (False), ``dense_dim()`` /
``sparse_dim()`` (jflow/tensor.py), ``to_dense()`` and ``dequantize()`` (compat.py).
"""

from __future__ import annotations

from typing import Any, NoReturn

from ..tensor import Tensor

__all__ = ["SPARSE_INPUT", "TO_LAYOUT", "QUANTIZED"]

_DENSE = "every jflow tensor is dense (layout=flow.strided)"

#: methods that need a sparse tensor (PyTorch raises for a dense one too)
SPARSE_INPUT = ("indices", "values", "_indices", "_values", "_nnz", "coalesce", "is_coalesced",
                "crow_indices", "col_indices", "ccol_indices", "row_indices", "sparse_mask",
                "sparse_resize_", "sparse_resize_and_clear_", "resize_as_sparse_", "smm",
                "sspaddmm")
#: conversions to a layout jflow lacks -> what that layout is
TO_LAYOUT = {"to_sparse": "sparse", "to_sparse_coo": "sparse", "to_sparse_csr": "sparse",
             "to_sparse_csc": "sparse", "to_sparse_bsr": "sparse", "to_sparse_bsc": "sparse",
             "to_mkldnn": "MKL-DNN", "to_padded_tensor": "nested"}
#: what only a quantized tensor has
QUANTIZED = ("q_scale", "q_zero_point", "q_per_channel_scales", "q_per_channel_zero_points",
             "q_per_channel_axis", "qscheme", "int_repr")


def _sparse_input(name: str) -> Any:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> NoReturn:
        raise RuntimeError(f"Tensor.{name}(): expected a sparse tensor, but jflow has no "
                           f"sparse layouts: {_DENSE}")
    method.__doc__ = f"Raises: ``{name}`` needs a sparse tensor, and jflow has none."
    return method


def _to_layout(name: str, what: str) -> Any:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(f"Tensor.{name}(): jflow has no {what} tensors ({_DENSE}); "
                                  f"keep the tensor dense")
    method.__doc__ = f"Raises: jflow has no {what} layout to convert to."
    return method


def _quantized(name: str) -> Any:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError(f"Tensor.{name}(): jflow has no quantized tensors (no "
                                  f"quantized dtypes or layouts), so there is no "
                                  f"quantization parameter to read")
    method.__doc__ = f"Raises: ``{name}`` is a quantized tensor's, and jflow has none."
    return method


def xpu(self: Tensor, device: Any = None, non_blocking: bool = False,
        memory_format: Any = None) -> NoReturn:
    """Raises as a PyTorch built without XPU does: jflow has no XPU devices."""
    raise AssertionError("Tensor.xpu(): Torch not compiled with XPU enabled (jflow has no XPU "
                         "devices; use .cuda() or .to(device))")


def ipu(self: Tensor, device: Any = None, non_blocking: bool = False,
        memory_format: Any = None) -> NoReturn:
    """Raises as PyTorch does without IPU support: jflow has no IPU devices."""
    raise RuntimeError("Tensor.ipu(): PyTorch is not linked with support for ipu devices "
                       "(jflow has no IPU devices)")


def mtia(self: Tensor, device: Any = None, non_blocking: bool = False,
         memory_format: Any = None) -> NoReturn:
    """Raises as a PyTorch built without MTIA does: jflow has no MTIA devices."""
    raise AssertionError("Tensor.mtia(): Torch not compiled with MTIA enabled (jflow has no "
                         "MTIA devices)")


def _attach() -> None:
    for name in SPARSE_INPUT:
        setattr(Tensor, name, _sparse_input(name))
    for name, what in TO_LAYOUT.items():
        setattr(Tensor, name, _to_layout(name, what))
    for name in QUANTIZED:
        setattr(Tensor, name, _quantized(name))
    for fn in (xpu, ipu, mtia):
        setattr(Tensor, fn.__name__, fn)
    for name in (*SPARSE_INPUT, *TO_LAYOUT, *QUANTIZED):
        fn = getattr(Tensor, name)
        fn.__name__ = fn.__qualname__ = name


_attach()
