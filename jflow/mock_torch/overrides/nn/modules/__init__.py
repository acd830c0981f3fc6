"""``torch.nn.modules``: jflow.nn.modules (which has PyTorch's module files, ``sparse``,
``instancenorm``, ``flatten``, ``utils`` among them), plus the files of modules jflow lacks
(``adaptive``, ``lazy``)."""
