"""JAX configuration jflow needs before any array is made.

jflow has every dtype of PyTorch/OneFlow, int64 and float64 included, so JAX's 64-bit mode
is switched on once, here, at import, and so is JAX's persistent compilation cache
(:mod:`jflow.compilation_cache`). Defaults (float32 / int64) are jflow's business and are
applied by jflow's factories, never by JAX's own defaults.
"""

import jax

from . import _xla_cpu_flags, compilation_cache

_xla_cpu_flags.configure()  # before JAX starts its CPU backend (the module says why)

jax.config.update("jax_enable_x64", True)
compilation_cache.configure_from_env()  # on disk, per user: a second run compiles nothing

#: ``compiler_options`` of the executables that stand for a run of eager ops (a lazy segment,
#: the whole-backward of the tape): XLA may otherwise keep a bfloat16 / float16 intermediate
#: in float32 inside a fused program ("excess precision"), so a value would differ from the
#: one the ops compute one by one — ``r.float()`` of a bfloat16 ``r`` would not be ``r``'s
#: value. Eager semantics round every op's result to its dtype, as PyTorch does.
EAGER_ROUNDING = {"xla_allow_excess_precision": False}
