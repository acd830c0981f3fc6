"""``jflow.nn.graph``: where OneFlow users look for ``nn.Graph``. The implementation is
compiler code and lives in :mod:`jflow.compiler.graph` (with its config,
:mod:`jflow.compiler.graph_config`); this module re-exports it."""

from ..compiler.graph import Graph
from ..compiler.graph_config import GraphConfig

__all__ = ["Graph", "GraphConfig"]
