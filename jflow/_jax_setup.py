"""JAX configuration jflow needs before any array is made.

jflow has every dtype of PyTorch/OneFlow, int64 and float64 included, so JAX's 64-bit mode
is switched on once, here, at import. Defaults (float32 / int64) are jflow's business and are
applied by jflow's factories, never by JAX's own defaults.
"""

import jax

jax.config.update("jax_enable_x64", True)
