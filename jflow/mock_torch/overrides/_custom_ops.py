"""``torch._custom_ops``: the older custom-op API, as :mod:`torch.library`'s."""

from .library import custom_op, get_ctx, impl_abstract  # noqa: F401

__all__ = ["custom_op", "get_ctx", "impl_abstract"]
