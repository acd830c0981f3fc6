"""``torch.nn.modules``: jflow.nn.modules, plus PyTorch's module files jflow splits
differently (``instancenorm``, ``sparse``, ``flatten``, ``utils``, ...)."""
