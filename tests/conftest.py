"""Test session setup: 8 virtual CPU devices for the SBP tests (must precede any JAX work)."""

import jax

jax.config.update("jax_num_cpu_devices", 8)
