"""``torch.autograd``: jflow's autograd, plus PyTorch's ``torch.autograd.graph`` API."""
