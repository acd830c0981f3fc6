"""``torch._dynamo.external_utils``."""

from .._compiling import is_compiling

__all__ = ["is_compiling"]
