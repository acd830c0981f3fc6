"""``torch.nn.attention.flex_attention``: importable (libraries probe it); calling it raises —
jflow has no FlexAttention kernel generator (use ``scaled_dot_product_attention`` with a mask)."""

from __future__ import annotations

from jflow.mock_torch._refusals import refuser, refusing_class, refusing_functions

#: PyTorch's default block size for block masks (a constant libraries read at import)
_DEFAULT_SPARSE_BLOCK_SIZE = 128

__all__ = ["AuxRequest", "flex_attention", "create_block_mask", "create_mask", "BlockMask",
           "and_masks", "or_masks", "noop_mask"]


_refuse = refuser("torch.nn.attention.flex_attention",
                  "jflow has no FlexAttention; use F.scaled_dot_product_attention(attn_mask=)")

flex_attention, create_block_mask, create_mask, and_masks, or_masks, noop_mask = \
    refusing_functions(__name__, _refuse, "flex_attention", "create_block_mask", "create_mask",
                       "and_masks", "or_masks", "noop_mask")
BlockMask = refusing_class(__name__, _refuse, "BlockMask")


class AuxRequest:
    """Which auxiliary outputs (``lse``, ``max_scores``) a ``flex_attention`` call returns:
    a plain description (the call itself raises)."""

    def __init__(self, lse: bool = False, max_scores: bool = False) -> None:
        self.lse, self.max_scores = lse, max_scores
