"""``torch.version``: what a CPU build of PyTorch reports (``cuda`` / ``hip`` are None), with
the PyTorch release whose API jflow follows as ``__version__``."""

from jflow.mock_torch import TORCH_VERSION

__version__ = TORCH_VERSION
cuda = None
hip = None
xpu = None
git_version = "jflow"
debug = False

__all__ = ["__version__", "cuda", "hip", "xpu", "git_version", "debug"]
