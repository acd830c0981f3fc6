"""``torch.distributed.device_mesh``: ``DeviceMesh`` / ``init_device_mesh`` (raise when used;
jflow's device groups are ``flow.placement``)."""

from .tensor import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]
