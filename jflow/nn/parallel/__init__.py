"""``flow.nn.parallel``: data parallelism (PyTorch's ``torch.nn.parallel``).

``DistributedDataParallel`` runs the wrapped module on global tensors, as OneFlow's does:
broadcast parameters, batches split over every device of every process, gradients reduced by
SBP (see :mod:`.distributed`). ``DataParallel`` is PyTorch's single-process wrapper for the
zero or one GPU a jflow process drives (see :mod:`.data_parallel`).
"""

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel", "DataParallel", "data_parallel"]
