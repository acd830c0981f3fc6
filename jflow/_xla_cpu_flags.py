"""The XLA CPU flag jflow sets before JAX starts its CPU backend, and why (issue 40).

XLA's CPU compiler hands some operations to the YNNPACK library ("ynn fusions"). In this
jaxlib, by default, that takes convolutions, matrix products and reductions. YNNPACK's
convolution runs on one thread, where XLA's own (Eigen's) convolution runs on XLA's
intra-op thread pool. On 2 cores, a 3x3 convolution of a 32x32x32x32 NHWC batch takes
7.5 ms with YNNPACK on either core count, and 4.6 ms with XLA's own on 2 cores (8.0 ms on
one). So jflow keeps YNNPACK for matrix products and reductions, and leaves convolutions
to XLA. A CNN's training step gains most (benchmarks/results_real_models_cpu.txt, session
14); the flag changes nothing on GPU.

The flag is set through ``XLA_FLAGS``, which XLA reads once, when JAX starts its backends,
so it takes effect only if ``import jflow`` comes before the first JAX computation. It then
applies to every XLA CPU program of the process, the user's own JAX code included. It is
left alone when:
- ``XLA_FLAGS`` already names ``xla_cpu_experimental_ynn_fusion_type`` (the user chose);
- ``JFLOW_XLA_CPU_FLAGS=0`` is set;
- the jaxlib is not one it was checked on. An unknown flag in ``XLA_FLAGS`` aborts the
  process, so a newer jaxlib gets JAX's defaults until it is checked.
"""

from __future__ import annotations

import os

import jaxlib

FLAG = "xla_cpu_experimental_ynn_fusion_type"
#: YNNPACK for single matrix products and reductions, not for convolutions
VALUE = "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT,LIBRARY_FUSION_TYPE_REDUCE"
#: jaxlib versions whose XLA knows ``FLAG`` and these values (checked by hand)
CHECKED = ("0.10.",)


#: (the user's ``XLA_FLAGS`` or None when unset, what configure() set) once it set the flag
_CHANGED: list[tuple[str | None, str]] = []


def configure() -> bool:
    """Add ``--FLAG=VALUE`` to ``XLA_FLAGS`` unless one of the cases above holds; whether
    it did."""
    user = os.environ.get("XLA_FLAGS")
    flags = user or ""
    if (os.environ.get("JFLOW_XLA_CPU_FLAGS", "1") == "0" or FLAG in flags
            or not jaxlib.__version__.startswith(CHECKED)):
        return False
    os.environ["XLA_FLAGS"] = ours = f"{flags} --{FLAG}={VALUE}".strip()
    _CHANGED[:] = [(user, ours)]
    return True


def users_environ(env: dict[str, str]) -> dict[str, str]:
    """``env`` (a copy of ``os.environ``) with ``XLA_FLAGS`` as the user had it before
    ``import jflow``: what a launcher hands its processes (``python -m jflow.distributed.launch``
    imports jflow; its processes get the user's environment, and set the flag themselves
    when they import jflow)."""
    if _CHANGED and env.get("XLA_FLAGS") == _CHANGED[0][1]:
        user = _CHANGED[0][0]
        if user is None:
            env.pop("XLA_FLAGS")
        else:
            env["XLA_FLAGS"] = user
    return env
