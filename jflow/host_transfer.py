"""Host data to a device array for a new tensor, fast for the shapes a training loop repeats.

``flow.tensor(batch)`` runs for every batch of a training loop. ``jax.device_put`` spends
~45 µs in Python on a small array (PyTorch's ``torch.tensor``: ~3 µs). A call of a jitted
function moves its NumPy arguments to the device in JAX's C++ dispatch instead (a few µs), so
an array whose (shape, dtype) has been seen :data:`HOT_AFTER` times goes through a jitted
identity: one small compile per such shape (kept on disk by the persistent compilation cache,
:mod:`jflow.compilation_cache`), then the fast path. Shapes seen fewer times keep
``device_put``: compiling for a shape used once would cost far more than it saves.

Both paths copy the caller's array first, as ``torch.tensor`` does. On CPU JAX may alias a
NumPy argument's memory for the input buffer (``device_put`` and a jitted call's arguments
alike), and the identity runs asynchronously: without the copy, a write to the caller's array
just after ``flow.tensor`` returned could show in the tensor (it did, for arrays of 256 KiB
and more, once their shape was hot). The fast path is for small arrays
(:data:`FAST_MAX_BYTES`), where the copy costs well under a microsecond; a large array's
``device_put`` costs little next to its copy.

Only at top level: under a trace (``flow.jit``, ``jax.grad``...) the data must become a
constant of the trace, which ``device_put`` under ``jax.ensure_compile_time_eval`` gives.
The sightings are counted in a bounded table (:data:`TABLE_SIZE` most recent shapes).
"""

from __future__ import annotations

from collections import OrderedDict

import jax
import numpy as np

from ._jax_compat import trace_state_clean_fn

__all__ = ["to_device", "queued_transfer", "HOT_AFTER", "TABLE_SIZE", "FAST_MAX_BYTES"]

#: sightings of a (shape, dtype) before its arrays take the jitted path. A training loop's
#: batches repeat one shape every step: 8 slow transfers (~40 µs each, once) are nothing
#: next to its run; code that makes a shape a few times (setup, evaluation, tests: 10-15% of
#: the suite's compiles at 2) compiles no identity for it (~25 ms and resident code each)
HOT_AFTER = 8
#: the largest array (bytes) that takes the jitted identity once its shape is hot; larger
#: ones take ``device_put`` (its ~40 µs are small next to copying them, and the identity
#: would copy them a second time into its output)
FAST_MAX_BYTES = 1 << 16
#: how many (shape, dtype) sightings are remembered (least recently seen dropped)
TABLE_SIZE = 256

_SEEN: OrderedDict[tuple[tuple[int, ...], np.dtype], int] = OrderedDict()
_IDENTITY = jax.jit(lambda x: x)
_TRACE_STATE_CLEAN = trace_state_clean_fn()


def queued_transfer(host: np.ndarray) -> jax.Array:
    """``host`` as a device array through the jitted identity whatever its shape: the
    transfer is queued behind the computations before it, where a ``device_put`` waits for
    them (an optimizer's new learning rate each step: +47% per step of a small MLP with a
    device_put). One compile per (shape, dtype); for values made every step. ``host`` must
    be private to the caller (it may be read after the return, see the module docstring)."""
    return _IDENTITY(host)


def to_device(host: np.ndarray) -> jax.Array:
    """``host`` (already of the tensor's dtype) as a new device array on the default device,
    independent of ``host``'s memory (see the module docstring)."""
    if (_TRACE_STATE_CLEAN is not None and host.nbytes <= FAST_MAX_BYTES
            and _TRACE_STATE_CLEAN()):
        key = (host.shape, host.dtype)
        n = _SEEN.get(key, 0)
        if n >= HOT_AFTER:
            return _IDENTITY(np.array(host, copy=True))
        _SEEN[key] = n + 1
        _SEEN.move_to_end(key)
        if len(_SEEN) > TABLE_SIZE:
            _SEEN.popitem(last=False)
    with jax.ensure_compile_time_eval():
        return jax.device_put(np.array(host, copy=True))
