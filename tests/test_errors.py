"""Errors print as jflow's alone, naming the op (and, for a C++ kernel, the kernel).

* JAX's traceback filtering adds a note to every exception leaving a ``jax.jit`` ("For
  simplicity, JAX has removed its internal frames from the traceback of the following
  exception..."), printed after the message and announcing an exception that never follows.
  An eager op runs through a ``jax.jit`` executable, so every op error carried it; jflow's
  entry points (the generated op apply, ``flow.jit`` / ``nn.Graph``) drop it.
* A C++ kernel's ``ffi::Error`` reached Python as XLA's bare ``INVALID_ARGUMENT: ...``: jflow/op.h
  now wraps a kernel registered with ``JFLOW_REGISTER_KERNEL`` so that its error names the op
  and the kernel in every context; for a raw handler, eager dispatch names them (the kernel
  its executable was lowered with).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import traceback

import jax
import numpy as np
import pytest
from _shared import build_once

import jflow as flow
from jflow.config import load_library
from jflow.utils import cpp_extension

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOOTER = "JAX has removed its internal frames"


def _printed(e: BaseException) -> str:
    return "".join(traceback.format_exception(e))


def test_the_issue_example_prints_jflows_error_alone():
    """`flow.randn(2,3) @ flow.randn(4,5)` in a script: stderr ends with jflow's error."""
    code = "import jflow as flow\nflow.randn(2, 3) @ flow.randn(4, 5)\n"
    env = {k: v for k, v in os.environ.items() if k != "JAX_TRACEBACK_FILTERING"}
    env["PYTHONPATH"] = ROOT
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=600, cwd=ROOT, env=env, stdin=subprocess.DEVNULL)
    assert r.returncode == 1
    assert FOOTER not in r.stderr and "--------------------" not in r.stderr, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last == ("ValueError: op 'matmul': shapes cannot be multiplied (a is 2x3, b is 4x5; "
                    "the inner sizes 3 and 4 differ)"), r.stderr[-2000:]
    assert "Traceback (most recent call last)" in r.stderr  # a traceback, JAX frames filtered
    assert "jax/_src" not in r.stderr


class _Graph(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.lin = flow.nn.Linear(3, 4)

    def build(self, x):
        return self.lin(x)


def _lazy_matmul():
    with flow.lazy():
        return (flow.randn(2, 3) @ flow.randn(4, 5)).numpy()


CASES = {
    "matmul": (lambda: flow.randn(2, 3) @ flow.randn(4, 5), ValueError, "op 'matmul'"),
    "add": (lambda: flow.randn(2, 3) + flow.randn(4, 5), ValueError, "op 'add'"),
    "cat": (lambda: flow.cat([flow.randn(2, 3), flow.randn(4, 5)]), ValueError, "op 'cat'"),
    "getitem": (lambda: flow.randn(2, 3)[5], IndexError, "op 'getitem'"),
    "conv2d": (lambda: flow.nn.functional.conv2d(flow.randn(1, 3, 8, 8), flow.randn(4, 2, 3, 3)),
               ValueError, "op 'conv2d'"),
    "module": (lambda: flow.nn.Linear(3, 4)(flow.randn(2, 5)), ValueError, "op 'linear'"),
    "flow.jit": (lambda: flow.jit(lambda a, b: a @ b)(flow.randn(2, 3), flow.randn(4, 5)),
                 ValueError, "op 'matmul'"),
    "nn.Graph": (lambda: _Graph()(flow.randn(2, 5)), ValueError, "op 'linear'"),
    "lazy": (_lazy_matmul, ValueError, "op 'matmul'"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_no_jax_footer(case):
    fn, kind, names = CASES[case]
    with pytest.raises(kind) as info:
        fn()
    assert names in str(info.value)
    assert FOOTER not in _printed(info.value)
    assert not any(FOOTER in n for n in getattr(info.value, "__notes__", []))


def test_jax_own_errors_keep_the_footer():
    """Only jflow's entry points drop it: the user's own jax.jit keeps JAX's behaviour."""
    @jax.jit
    def f(a, b):
        return a @ b

    with pytest.raises(TypeError) as info:
        f(np.ones((2, 3)), np.ones((4, 5)))
    assert FOOTER in _printed(info.value)


# ---- a C++ kernel's run-time error ----------------------------------------------------------

LIB = r"""
#include "jflow/op.h"
namespace ffi = xla::ffi;

// y = x, refusing negative entries at run time: one kernel per dtype (a template)
JFLOW_REGISTER_OP("err_t_nonneg").Input("x").Output("y");
template <ffi::DataType T>
static ffi::Error NonNeg(ffi::Buffer<T> x, ffi::ResultBuffer<T> y) {
  for (size_t k = 0; k < x.element_count(); ++k) {
    if (x.typed_data()[k] < 0) return ffi::Error::InvalidArgument("negative input not allowed");
    y->typed_data()[k] = x.typed_data()[k];
  }
  return ffi::Error::Success();
}
JFLOW_REGISTER_KERNEL("err_t_nonneg", "cpu", NonNeg<ffi::F32>);
JFLOW_REGISTER_KERNEL("err_t_nonneg", "cpu", NonNeg<ffi::F64>);

// a handler written with XLA's own macro, registered raw
JFLOW_REGISTER_OP("err_t_raw").Input("x").Output("y");
static ffi::Error RawImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y) {
  return ffi::Error(ffi::ErrorCode::kOutOfRange, "raw handler refuses everything");
}
XLA_FFI_DEFINE_HANDLER_SYMBOL(RawHandler, RawImpl, ffi::Ffi::Bind()
    .Arg<ffi::Buffer<ffi::F32>>().Ret<ffi::Buffer<ffi::F32>>());
JFLOW_REGISTER_FFI_HANDLER("err_t_raw", "cpu", RawHandler);
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    if cpp_extension.find_cxx() is None:
        pytest.skip("no C++ compiler (g++ or $CXX): C++ op libraries cannot be built here")
    return load_library(build_once(tmp_path_factory, "errlib", LIB))  # once per run


def _eager(op, x):
    return op(x).numpy()


def _flow_jit(op, x):
    return flow.jit(lambda t: op(t) * 2)(x).numpy()


def _lazy(op, x):
    with flow.lazy():
        return (op(x) * 2).numpy()


def _jax_jit(op, x):
    return jax.jit(lambda a: flow.utils.to_jax(op(flow.utils.from_jax(a))))(
        flow.utils.to_jax(x))


@pytest.mark.parametrize("run", [_eager, _flow_jit, _lazy, _jax_jit])
@pytest.mark.parametrize("dtype, kernel", [(flow.float32, "NonNeg<ffi::F32>"),
                                           (flow.float64, "NonNeg<ffi::F64>")])
def test_cpp_kernel_runtime_error_names_op_and_kernel(lib, dtype, kernel, run):
    """A kernel registered with JFLOW_REGISTER_KERNEL: op.h's wrapper names op and kernel in
    its error, so every context says it (the dtype picks the kernel)."""
    op = flow.ops.get("err_t_nonneg")
    ok = flow.tensor([0.0, 1.5, 2.0], dtype=dtype)
    scale = 2 if run in (_flow_jit, _lazy) else 1  # (those two double the op's result)
    np.testing.assert_array_equal(np.asarray(run(op, ok)), ok.numpy() * scale)
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        run(op, flow.tensor([1.0, -2.0], dtype=dtype))
    assert str(info.value) == (f"INVALID_ARGUMENT: op 'err_t_nonneg': ffi kernel '{kernel}' "
                               "(cpu): negative input not allowed")
    assert FOOTER not in _printed(info.value) or run is _jax_jit  # (the user's jax.jit: JAX's)


def test_raw_ffi_handler_runtime_error_names_op_and_kernel(lib):
    """A raw XLA handler (JFLOW_REGISTER_FFI_HANDLER) has no wrapper: eager dispatch names
    the op and the kernel its executable was lowered with."""
    op = flow.ops.get("err_t_raw")
    with pytest.raises(jax.errors.JaxRuntimeError) as info:
        op(flow.ones(3)).numpy()
    assert str(info.value) == ("OUT_OF_RANGE: op 'err_t_raw': ffi kernel 'RawHandler' (cpu): "
                               "raw handler refuses everything")
    assert FOOTER not in _printed(info.value)
    with pytest.raises(jax.errors.JaxRuntimeError) as info:  # compiled: XLA's text only
        _flow_jit(op, flow.ones(3))
    assert str(info.value) == "OUT_OF_RANGE: raw handler refuses everything"


def test_cpp_kernel_error_in_a_script(lib, tmp_path):
    """As a user sees it: the last line of stderr names op and kernel."""
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent(f"""
        import jflow as flow
        flow.config.load_library({lib.path!r})
        flow.ops.get("err_t_nonneg")(flow.tensor([-1.0]))
    """))
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=600, cwd=str(tmp_path), env=env, stdin=subprocess.DEVNULL)
    assert r.returncode == 1
    last = r.stderr.strip().splitlines()[-1]
    assert last.endswith("JaxRuntimeError: INVALID_ARGUMENT: op 'err_t_nonneg': ffi kernel "
                         "'NonNeg<ffi::F32>' (cpu): negative input not allowed"), r.stderr[-2000:]
    assert FOOTER not in r.stderr
