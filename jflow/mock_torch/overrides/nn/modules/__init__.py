"""``torch.nn.modules``: jflow.nn.modules (which has PyTorch's module files, ``sparse``,
``instancenorm``, ``flatten``, ``utils``, ``lazy``, ``adaptive`` among them)."""
