"""``flow.utils.model_zoo`` (``torch.utils.model_zoo``): ``load_url`` is
:func:`jflow.hub.load_state_dict_from_url` (offline: cached files only)."""

from ..hub import load_state_dict_from_url as load_url
from ..hub import tqdm

__all__ = ["load_url", "tqdm"]
