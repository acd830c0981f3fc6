"""Compiler and linker flags for C++/CUDA op libraries (OneFlow's / TensorFlow's sysconfig).

A jflow op library includes ``"jflow/op.h"`` (shipped in this package), which includes XLA's
FFI headers (shipped with jaxlib). So two include directories are needed:

* :func:`get_include` — jflow's own include directory (the one holding ``jflow/op.h``), as a
  single path like TensorFlow's ``get_include()``;
* :func:`get_include_dirs` — both: jflow's and ``jax.ffi.include_dir()``.

:func:`get_compile_flags` carries both (``-I`` for jflow's, ``-isystem`` for XLA's so that the
warnings in XLA's headers do not drown the user's own) plus ``-std=c++17 -fPIC``. Nothing has
to be linked: a handler reaches XLA only through the FFI call frame it is given, so
:func:`get_link_flags` is just ``-shared`` and :func:`get_lib` is the package directory (for
build scripts that expect one). From a shell::

    g++ $(python -c "import jflow; print(' '.join(jflow.sysconfig.get_compile_flags()))") \\
        myrelu.cpp -o libmyrelu.so \\
        $(python -c "import jflow; print(' '.join(jflow.sysconfig.get_link_flags()))")

or ``python -m jflow.sysconfig --cflags`` / ``--ldflags``.
"""

from __future__ import annotations

import os
import sys

__all__ = ["get_include", "get_include_dirs", "get_compile_flags", "get_cuda_compile_flags",
           "get_link_flags", "get_lib"]

_PKG = os.path.dirname(os.path.abspath(__file__))


def get_include() -> str:
    """The directory holding ``jflow/op.h`` (``#include "jflow/op.h"``)."""
    return os.path.join(_PKG, "include")


def _jax_include() -> str:
    import jax.ffi
    return jax.ffi.include_dir()


def get_include_dirs() -> list[str]:
    """Every include directory a jflow op library needs: jflow's, then XLA FFI's (jaxlib)."""
    return [get_include(), _jax_include()]


def get_compile_flags() -> list[str]:
    """Flags for compiling a C++ source of a jflow op library with g++ / clang++."""
    return ["-std=c++17", "-fPIC", f"-I{get_include()}", "-isystem", _jax_include()]


def get_cuda_compile_flags() -> list[str]:
    """Flags for compiling a ``.cu`` source of a jflow op library with nvcc."""
    return ["-std=c++17", "-Xcompiler", "-fPIC", f"-I{get_include()}", "-isystem", _jax_include()]


def get_link_flags() -> list[str]:
    """Flags for linking the objects into the shared library ``flow.config.load_library``
    loads (no jflow library to link against)."""
    return ["-shared"]


def get_lib() -> str:
    """jflow's package directory (there is no compiled jflow library to link)."""
    return _PKG


def _main(argv: list[str]) -> int:
    flags = {"--cflags": get_compile_flags, "--cuda-cflags": get_cuda_compile_flags,
             "--ldflags": get_link_flags, "--include": lambda: [get_include()],
             "--lib": lambda: [get_lib()]}
    if len(argv) != 1 or argv[0] not in flags:
        print(f"usage: python -m jflow.sysconfig {{{'|'.join(flags)}}}", file=sys.stderr)
        return 2
    print(" ".join(flags[argv[0]]()))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
