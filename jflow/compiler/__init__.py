"""Compiling jflow code into one XLA executable: ``flow.jit`` and the machinery ``nn.Graph``
builds on (moving module / optimizer / generator state in and out of ``jax.jit``)."""

from .jit import CompiledFunction, RecompileWarning, jit

__all__ = ["jit", "CompiledFunction", "RecompileWarning"]
