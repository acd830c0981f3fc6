"""``torch.distributed.checkpoint.hf_storage``: DCP's safetensors readers / writers (raise
when constructed; jflow reads and writes .safetensors with ``flow.load`` / ``flow.save``)."""

from . import _Refused

__all__ = ["HuggingFaceStorageReader", "HuggingFaceStorageWriter"]


class HuggingFaceStorageReader(_Refused):
    """Raises when constructed."""


class HuggingFaceStorageWriter(_Refused):
    """Raises when constructed."""
