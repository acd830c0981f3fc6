"""``torch.nn.attention.flex_attention``: importable (libraries probe it); calling it raises —
jflow has no FlexAttention kernel generator (use ``scaled_dot_product_attention`` with a mask)."""

from __future__ import annotations

from typing import Any, NoReturn

#: PyTorch's default block size for block masks (a constant libraries read at import)
_DEFAULT_SPARSE_BLOCK_SIZE = 128

__all__ = ["AuxRequest", "flex_attention", "create_block_mask", "create_mask", "BlockMask",
           "and_masks", "or_masks", "noop_mask"]


def _refuse(name: str) -> NoReturn:
    raise NotImplementedError(f"torch.nn.attention.flex_attention.{name}: jflow has no "
                              f"FlexAttention; use F.scaled_dot_product_attention(attn_mask=)")


def flex_attention(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("flex_attention")


def create_block_mask(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("create_block_mask")


def create_mask(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("create_mask")


def and_masks(*args: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("and_masks")


def or_masks(*args: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("or_masks")


def noop_mask(*args: Any) -> NoReturn:
    """Raises (see the module docstring)."""
    _refuse("noop_mask")


class BlockMask:
    """Not in jflow: constructing one raises."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _refuse("BlockMask")


class AuxRequest:
    """Which auxiliary outputs (``lse``, ``max_scores``) a ``flex_attention`` call returns:
    a plain description (the call itself raises)."""

    def __init__(self, lse: bool = False, max_scores: bool = False) -> None:
        self.lse, self.max_scores = lse, max_scores
