"""``torch.nn.modules.instancenorm``: jflow's instance-norm modules."""

from jflow.nn import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]
