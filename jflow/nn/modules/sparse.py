"""PyTorch's ``torch.nn.modules.sparse`` path: jflow's embedding modules (kept in
``normalization``; dense gradients, see docs/porting.md on ``sparse=True``), so code naming
the module file (``torch.nn.modules.sparse.Embedding`` in a ``safe_globals`` list) runs."""

from .normalization import Embedding, EmbeddingBag

__all__ = ["Embedding", "EmbeddingBag"]
