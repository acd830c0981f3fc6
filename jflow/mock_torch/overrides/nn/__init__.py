"""``torch.nn``: jflow.nn, plus the PyTorch module paths jflow.nn does not have."""
