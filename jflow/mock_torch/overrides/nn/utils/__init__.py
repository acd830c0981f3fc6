"""``torch.nn.utils``: jflow.nn.utils, plus ``torch.nn.utils.rnn``."""
