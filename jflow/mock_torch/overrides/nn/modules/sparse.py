"""``torch.nn.modules.sparse``: jflow's embedding modules (dense gradients; see
docs/porting.md on ``sparse=True``)."""

from jflow.nn import Embedding, EmbeddingBag

__all__ = ["Embedding", "EmbeddingBag"]
