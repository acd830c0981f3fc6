"""``flow.Generator`` and ``flow.manual_seed``: PyTorch-style random state over JAX PRNG keys.

A generator is (seed, counter). Each draw uses ``fold_in(key(seed), counter)`` and advances
the counter, so draws are reproducible from the seed and never recompile.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from .tensor import Tensor, _wrap

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state"]

_DEFAULT_SEED = 67280421310721  # PyTorch's default, for familiarity


class Generator:
    """A source of random numbers: ``g = flow.Generator(); g.manual_seed(0)``."""

    __slots__ = ("_seed", "_counter", "_key", "device")

    def __init__(self, device: Any = "cpu") -> None:
        self.device = device
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed: int) -> Generator:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
        self._seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        self._counter = 0
        self._key = None
        return self

    def initial_seed(self) -> int:
        return self._seed

    def seed(self) -> int:
        """Re-seed from a non-deterministic source and return the seed."""
        import secrets
        s = secrets.randbits(63)
        self.manual_seed(s)
        return s

    def get_state(self) -> Tensor:
        import numpy as np
        return _wrap(jnp.asarray(np.array([self._seed, self._counter], dtype=np.uint64)))

    def set_state(self, state: Tensor) -> Generator:
        import numpy as np
        s, c = np.asarray(state._value).astype(np.uint64).tolist()
        self.manual_seed(int(s))
        self._counter = int(c)
        return self

    def _next(self) -> tuple[Tensor, Tensor]:
        """(key, counter) tensors for one draw; advances the state."""
        if self._key is None:
            with jax.ensure_compile_time_eval():
                self._key = _wrap(jax.random.PRNGKey(self._seed & 0x7FFFFFFFFFFFFFFF))
        c = self._counter
        self._counter += 1
        return self._key, _wrap(jnp.asarray(c, dtype=jnp.int64))

    def __repr__(self) -> str:
        return f"<flow.Generator seed={self._seed} draws={self._counter}>"


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (same seed -> same numbers)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    return default_generator.get_state()


def set_rng_state(state: Tensor) -> None:
    default_generator.set_state(state)
