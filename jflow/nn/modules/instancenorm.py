"""PyTorch's ``torch.nn.modules.instancenorm`` path: jflow's instance norms (kept in
``batchnorm``), for code that names the module file."""

from .batchnorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
