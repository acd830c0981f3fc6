"""``torch.distributed.tensor.device_mesh``: ``DeviceMesh`` (raises when built)."""

from . import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]
