"""Placement + SBP (OneFlow's distributed model) on ``jax.sharding`` (docs/sbp.md).

* :mod:`.sbp`, :mod:`.placement`  — the user-facing values and op SBP signatures;
* :mod:`.spec`                    — nd-SBP <-> ``PartitionSpec`` (partial sum = unreduced);
* :mod:`.boxing`                  — SBP conversions as collectives on local shards;
* :mod:`.boxing_plan`             — the cheapest chain of one-axis steps, and its bytes;
* :mod:`.hlo_traffic`             — the collective bytes of compiled HLO (tests, benchmarks);
* :mod:`.global_tensor`           — ``to_global`` / ``to_local`` / the logical value;
* :mod:`.execute`                 — signature inference and ops under ``shard_map``;
* :mod:`.explain`                 — what was chosen, per op call.
"""

from . import sbp
from .execute import SbpInferenceError
from .explain import explain
from .placement import placement

__all__ = ["sbp", "placement", "explain", "SbpInferenceError"]
