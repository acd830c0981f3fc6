"""``torch.ao``: quantization is not in jflow (see :mod:`torch.ao.quantization`)."""
