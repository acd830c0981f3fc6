"""Process-wide configuration, as OneFlow's ``flow.config``: loading C++/CUDA op libraries.

``flow.config.load_library("libmyrelu.so")`` defines the ops the library declares (with
``jflow/op.h``) and registers their XLA FFI kernels; it returns a
:class:`~jflow.kernels.ffi.Library` listing them (``lib.ops``, ``lib.kernels``, ``lib.<op>``).
See :mod:`jflow.kernels.ffi` and :mod:`jflow.utils.cpp_extension` (build + load in one call).
"""

from .kernels.ffi import Library, LibraryError, load_library, loaded_libraries

__all__ = ["load_library", "loaded_libraries", "Library", "LibraryError"]
