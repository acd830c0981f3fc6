"""``torch.jit._state``: TorchScript's global switch (always off in jflow)."""

_enabled = False


def disable() -> None:
    """TorchScript is never on in jflow."""


def enable() -> None:
    """TorchScript does not exist in jflow: turning it on is refused."""
    raise NotImplementedError("torch.jit._state.enable: jflow has no TorchScript")
