"""``torch.distributed._composable``: see :mod:`torch.distributed.fsdp`."""
