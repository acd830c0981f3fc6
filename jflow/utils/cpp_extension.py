"""Build C++/CUDA op libraries on the fly and load them (PyTorch's ``cpp_extension.load``).

``load(name, sources=[...])`` compiles each ``.cpp``/``.cc``/``.cxx`` source with the C++
compiler (``$CXX``, else ``g++``) and each ``.cu`` source with ``nvcc`` (``$CUDA_HOME/bin``,
then ``PATH``), links them into ``lib<name>.so`` and loads it with
:func:`jflow.config.load_library`. Flags come from :mod:`jflow.sysconfig`.

The library is cached in ``<build_directory>/<name>_<hash>/``, the hash covering the sources,
the headers next to them, jflow's header, the flags, the compilers and the JAX version: an
unchanged build is loaded without compiling, a changed one is rebuilt. The default build
directory is ``$JFLOW_EXTENSIONS_DIR``, else ``~/.cache/jflow/extensions``.

A ``.cu`` source when nvcc cannot be found is an error (nothing is silently dropped): build
the CUDA source only when :func:`find_nvcc` finds one, as ``examples/custom_ops/myrelu`` does.
Compiler errors are raised as :class:`BuildError` with the command and the compiler's output.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from .. import sysconfig
from ..kernels.ffi import load_library

__all__ = ["load", "build", "BuildError", "find_nvcc", "find_cxx", "default_build_directory",
           "CPP_SUFFIXES", "CUDA_SUFFIXES"]

CPP_SUFFIXES = (".cpp", ".cc", ".cxx", ".c++")
CUDA_SUFFIXES = (".cu",)
_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".cuh", ".inl")


class BuildError(RuntimeError):
    """A compile or link step failed; the message holds the command and the compiler output."""


def find_cxx() -> str | None:
    """The C++ compiler: ``$CXX`` or ``g++`` on PATH (None when there is none)."""
    cxx = os.environ.get("CXX", "g++")
    return shutil.which(cxx)


def find_nvcc() -> str | None:
    """nvcc from ``$CUDA_HOME`` / ``$CUDA_PATH``, ``PATH`` or ``/usr/local/cuda`` (or None)."""
    for env in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(env)
        if home and os.access(os.path.join(home, "bin", "nvcc"), os.X_OK):
            return os.path.join(home, "bin", "nvcc")
    found = shutil.which("nvcc")
    if found:
        return found
    default = "/usr/local/cuda/bin/nvcc"
    return default if os.access(default, os.X_OK) else None


def default_build_directory() -> str:
    return os.environ.get("JFLOW_EXTENSIONS_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "jflow", "extensions")


def _cuda_lib_dir(nvcc: str) -> str | None:
    """The directory holding libcudart.so (nvcc may be a wrapper script outside CUDA's tree)."""
    homes = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
             os.path.dirname(os.path.dirname(os.path.realpath(nvcc))), "/usr/local/cuda"]
    for home in filter(None, homes):
        for sub in ("lib64", os.path.join("targets", "x86_64-linux", "lib"), "lib"):
            d = os.path.join(home, sub)
            if os.path.isfile(os.path.join(d, "libcudart.so")):
                return d
    return None


def _check_flags(fn: str, what: str, flags: Any) -> list[str]:
    if flags is None:
        return []
    if isinstance(flags, str) or not all(isinstance(f, str) for f in flags):
        raise TypeError(f"{fn}: {what} must be a list of strings, got {flags!r}")
    return list(flags)


def _tool_version(exe: str) -> str:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
        return out.stdout
    except (OSError, subprocess.SubprocessError):
        return exe


def _run(cmd: list[str], what: str, verbose: bool) -> None:
    if verbose:
        print(" ".join(cmd), file=sys.stderr, flush=True)
    try:
        res = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise BuildError(f"{what}: cannot run {cmd[0]}: {e}") from None
    if verbose and (res.stdout or res.stderr):
        print(res.stdout + res.stderr, file=sys.stderr, flush=True)
    if res.returncode != 0:
        raise BuildError(f"{what} failed (exit code {res.returncode}):\n$ {' '.join(cmd)}\n"
                         f"{res.stdout}{res.stderr}".rstrip())


def load(name: str, sources: Sequence[str | os.PathLike[str]], extra_cflags: Sequence[str] | None
         = None, extra_cuda_cflags: Sequence[str] | None = None,
         extra_ldflags: Sequence[str] | None = None,
         extra_include_paths: Sequence[str] | None = None,
         build_directory: str | os.PathLike[str] | None = None, verbose: bool = False) -> Any:
    """Compile ``sources`` into ``lib<name>.so`` (cached) and load it; returns the
    :class:`jflow.kernels.ffi.Library` handle listing the ops it registered.

    ``extra_cflags`` go to the C++ compiler, ``extra_cuda_cflags`` to nvcc, ``extra_ldflags``
    to the link; ``extra_include_paths`` to both compilers. ``verbose`` prints the commands
    and the compiler output.
    """
    return load_library(build(name, sources, extra_cflags, extra_cuda_cflags, extra_ldflags,
                              extra_include_paths, build_directory, verbose))


def build(name: str, sources: Sequence[str | os.PathLike[str]], extra_cflags: Sequence[str] |
          None = None, extra_cuda_cflags: Sequence[str] | None = None,
          extra_ldflags: Sequence[str] | None = None,
          extra_include_paths: Sequence[str] | None = None,
          build_directory: str | os.PathLike[str] | None = None, verbose: bool = False) -> str:
    """What :func:`load` does, without loading: returns the path of ``lib<name>.so`` (e.g. to
    ship it, or to load it later with ``flow.config.load_library``)."""
    fn = f"cpp_extension.load('{name}')"
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"cpp_extension.load: name must be an identifier, got {name!r}")
    if isinstance(sources, (str, os.PathLike)) or not sources:
        raise TypeError(f"{fn}: sources must be a non-empty list of paths, got {sources!r}")
    cflags = _check_flags(fn, "extra_cflags", extra_cflags)
    cuflags = _check_flags(fn, "extra_cuda_cflags", extra_cuda_cflags)
    ldflags = _check_flags(fn, "extra_ldflags", extra_ldflags)
    incs = [f"-I{os.path.abspath(p)}" for p in _check_flags(fn, "extra_include_paths",
                                                            extra_include_paths)]
    srcs = [os.path.abspath(os.fspath(s)) for s in sources]
    for s in srcs:
        if not os.path.isfile(s):
            raise FileNotFoundError(f"{fn}: no such source file: '{s}'")
        if not s.endswith(CPP_SUFFIXES + CUDA_SUFFIXES):
            raise ValueError(f"{fn}: '{s}' is neither C++ ({', '.join(CPP_SUFFIXES)}) nor CUDA "
                             f"(.cu)")
    cu = [s for s in srcs if s.endswith(CUDA_SUFFIXES)]
    cxx = find_cxx()
    if cxx is None:
        raise BuildError(f"{fn}: no C++ compiler found (looked for "
                         f"'{os.environ.get('CXX', 'g++')}'; set $CXX)")
    nvcc = None
    if cu:
        nvcc = find_nvcc()
        if nvcc is None:
            raise BuildError(f"{fn}: {os.path.basename(cu[0])} is a CUDA source but nvcc was not "
                             f"found (set $CUDA_HOME or put nvcc on PATH); leave the .cu source "
                             f"out to build the CPU kernels only")

    import jax
    key = hashlib.sha256()
    for part in (name, jax.__version__, cxx, _tool_version(cxx), nvcc or "",
                 _tool_version(nvcc) if nvcc else "", *cflags, "|", *cuflags, "|", *ldflags,
                 "|", *incs):
        key.update(part.encode() + b"\0")
    deps = set(srcs)
    for d in {os.path.dirname(s) for s in srcs}:  # headers next to the sources
        deps.update(os.path.join(d, f) for f in os.listdir(d) if f.endswith(_HEADER_SUFFIXES))
    deps.add(os.path.join(sysconfig.get_include(), "jflow", "op.h"))
    for p in sorted(deps):
        key.update(os.path.basename(p).encode() + b"\0")
        with open(p, "rb") as f:
            key.update(hashlib.sha256(f.read()).digest())

    root = os.fspath(build_directory) if build_directory is not None else \
        default_build_directory()
    out_dir = os.path.join(root, f"{name}_{key.hexdigest()[:16]}")
    so = os.path.join(out_dir, f"lib{name}.so")
    if not os.path.isfile(so):
        os.makedirs(out_dir, exist_ok=True)
        _build(fn, so, out_dir, srcs, cxx, nvcc, cflags + incs, cuflags + incs, ldflags, verbose)
    elif verbose:
        print(f"{fn}: using the cached {so}", file=sys.stderr, flush=True)
    return so


def _build(fn: str, so: str, out_dir: str, srcs: list[str], cxx: str, nvcc: str | None,
           cflags: list[str], cuflags: list[str], ldflags: list[str], verbose: bool) -> None:
    # objects in a private temporary directory and an atomic rename of the library: parallel
    # builds of the same extension (pytest -n) never see a half-written file
    with tempfile.TemporaryDirectory(dir=out_dir, prefix="build_") as tmp:
        objs = []
        for i, s in enumerate(srcs):
            obj = os.path.join(tmp, f"{i}_{os.path.basename(s)}.o")
            if s.endswith(CUDA_SUFFIXES):
                assert nvcc is not None
                cmd = [nvcc, "-c", s, "-o", obj, "-O2", *sysconfig.get_cuda_compile_flags(),
                       *cuflags]
            else:
                cmd = [cxx, "-c", s, "-o", obj, "-O2", *sysconfig.get_compile_flags(), *cflags]
            _run(cmd, f"{fn}: compiling {os.path.basename(s)}", verbose)
            objs.append(obj)
        tmp_so = os.path.join(tmp, os.path.basename(so))
        link = [cxx, *objs, "-o", tmp_so, *sysconfig.get_link_flags()]
        if nvcc is not None:  # kernel launches need the CUDA runtime
            lib = _cuda_lib_dir(nvcc)
            link += [f"-L{lib}", f"-Wl,-rpath,{lib}"] if lib else []
            link.append("-lcudart")
        _run(link + ldflags, f"{fn}: linking lib{os.path.basename(so)[3:]}", verbose)
        os.replace(tmp_so, so)
