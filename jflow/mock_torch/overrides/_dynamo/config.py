"""``torch._dynamo.config``: Dynamo's settings, readable and writable so programs that tune
them run. jflow's compiler (it traces with JAX, once per input signature) reads one:
``recompile_limit`` (and its old name ``cache_size_limit``) is ``flow.compile``'s limit of traced
signatures past which new ones run eagerly (``jflow.compiler.jit.RECOMPILE_LIMIT``)."""

import importlib
import sys
import types

_jit = importlib.import_module("jflow.compiler.jit")  # (the module; the package exports jit())

accumulated_cache_size_limit = 256
suppress_errors = False
verbose = False
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
automatic_dynamic_shapes = True
assume_static_by_default = True
optimize_ddp = True
inline_inbuilt_nn_modules = True


class _Config(types.ModuleType):
    """This module's type: ``recompile_limit`` / ``cache_size_limit`` read and write
    jflow's limit."""

    @property
    def recompile_limit(self) -> int:
        return _jit.RECOMPILE_LIMIT[0]

    @recompile_limit.setter
    def recompile_limit(self, value: int) -> None:
        _jit.RECOMPILE_LIMIT[0] = value

    cache_size_limit = recompile_limit


sys.modules[__name__].__class__ = _Config
