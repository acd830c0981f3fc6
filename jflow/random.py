"""``flow.Generator`` and ``flow.manual_seed``: PyTorch-style random state over JAX PRNG keys.

A generator is (seed, counter). Each draw uses ``fold_in(key(seed), counter)`` and advances
the counter, so draws are reproducible from the seed and never recompile.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from .device import device as _device
from .tensor import Tensor, _wrap

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed",
           "get_rng_state", "set_rng_state"]

_DEFAULT_SEED = 67280421310721  # PyTorch's default, for familiarity


class Generator:
    """A source of random numbers: ``g = flow.Generator(); g.manual_seed(0)``.

    The state is a 64-bit seed and a draw counter. Draw ``n`` uses the PRNG key of the seed
    folded with ``n`` (inside the random ops), so the same seed always replays the same
    sequence, and generators never share state with each other or with JAX.
    """

    # ``_base``: inside a compiled function (flow.jit / nn.Graph), the traced draw counter at
    # entry (draw n uses ``_base + n``), so random numbers are not frozen into the executable
    __slots__ = ("_seed", "_counter", "_key", "_base", "device")

    def __init__(self, device: Any = "cpu") -> None:
        self.device = _device(device)
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed: int) -> Generator:
        """Reset to ``seed`` (any int in [-2**63, 2**64); negatives wrap as in PyTorch)."""
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"manual_seed: seed must be an int, got {type(seed).__name__}")
        seed = int(seed)
        if not -(1 << 63) <= seed < (1 << 64):
            raise ValueError(f"manual_seed: seed must be within [-2**63, 2**64), got {seed}")
        self._seed = seed & 0xFFFFFFFFFFFFFFFF
        self._counter = 0
        self._key = None
        self._base = None
        return self

    def initial_seed(self) -> int:
        """The seed this generator was last seeded with."""
        return self._seed

    def seed(self) -> int:
        """Re-seed from a non-deterministic source and return the seed."""
        import secrets
        s = secrets.randbits(63)
        self.manual_seed(s)
        return s

    def get_state(self) -> Tensor:
        """The state as a uint8 tensor of 16 bytes (seed, draw counter), as PyTorch's
        ByteTensor state; pass it to :meth:`set_state` to replay from this point."""
        raw = np.array([self._seed, self._counter], dtype="<u8").view(np.uint8)
        return _wrap(jax.device_put(raw))

    def set_state(self, new_state: Tensor) -> Generator:
        """Restores a state from ``get_state()`` (a uint8 tensor of 16 bytes); returns self."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"set_state: expected a Tensor from get_state(), got "
                            f"{type(new_state).__name__}")
        raw = np.asarray(new_state._value)
        if raw.dtype != np.uint8 or raw.shape != (16,):
            raise ValueError(f"set_state: expected a uint8 tensor of 16 bytes from "
                             f"get_state(), got {raw.dtype}{list(raw.shape)}")
        seed, counter = np.ascontiguousarray(raw).view("<u8").tolist()
        self.manual_seed(int(seed))
        self._counter = int(counter)
        return self

    def _key_tensor(self) -> Tensor:
        if self._key is None:
            with jax.ensure_compile_time_eval():
                self._key = _wrap(jax.random.PRNGKey(np.uint64(self._seed)))
        return self._key

    def _next(self) -> tuple[Tensor, Tensor]:
        """(key, counter) tensors for one draw; advances the state."""
        key = self._key_tensor()
        c = self._counter
        self._counter += 1
        if self._base is not None:
            return key, _wrap(self._base + c)
        if _tracing_guard is not None:
            _tracing_guard(self)
        return key, _wrap(jax.device_put(np.int64(c)))

    def __repr__(self) -> str:
        return f"<flow.Generator seed={self._seed} draws={self._counter}>"


#: set by jflow.compiler while it traces: called with a generator that is not an input of
#: the compiled function (its draws would be frozen into the executable)
_tracing_guard: Any = None

default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (same seed -> same numbers)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    """Re-seeds the default generator from a non-deterministic source; returns the seed."""
    return default_generator.seed()


def initial_seed() -> int:
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state, as a uint8 tensor (for ``set_rng_state``)."""
    return default_generator.get_state()


def set_rng_state(state: Tensor) -> None:
    """Restores the default generator's state from ``get_rng_state()``."""
    default_generator.set_state(state)
