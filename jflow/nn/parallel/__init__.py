"""``flow.nn.parallel``: data parallelism (PyTorch's ``torch.nn.parallel``).

``DistributedDataParallel`` runs the wrapped module on global tensors, as OneFlow's does:
broadcast parameters, batches split over every device of every process, gradients reduced by
SBP (see :mod:`.distributed`).
"""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
