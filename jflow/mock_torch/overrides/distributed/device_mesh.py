"""``torch.distributed.device_mesh``: ``DeviceMesh`` / ``init_device_mesh`` (a mesh is a
``flow.placement``; see :mod:`jflow.distributed.tensor`)."""

from jflow.distributed.tensor import DeviceMesh, init_device_mesh

__all__ = ["DeviceMesh", "init_device_mesh"]
