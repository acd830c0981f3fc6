"""A jflow module trained by optax: the model stays a ``flow.nn`` module, its parameters a
dict of Tensors (a pytree), the loss a function of them through ``flow.func.functional_call``,
the gradient ``flow.func.grad`` and the update optax's — the whole step one ``jax.jit``.

    pip install -e .[examples]        # optax
    python examples/optax_mlp.py

The task: regress y = sin(3x) on [-1, 1] with a 1-32-32-1 tanh MLP and optax.adam.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

import jflow as flow
from jflow import func, nn


def make_model(seed: int) -> nn.Module:
    flow.manual_seed(seed)
    return nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                         nn.Linear(32, 1))


def train(steps: int = 300, lr: float = 1e-2, seed: int = 0, quiet: bool = False
          ) -> dict[str, Any]:
    try:
        import optax
    except ImportError:
        sys.exit("examples/optax_mlp.py needs optax: pip install -e .[examples]")
    model = make_model(seed)
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = flow.linspace(-1, 1, 64).reshape(64, 1)
    y = flow.sin(3 * x)

    def loss_fn(p: dict, xb: flow.Tensor, yb: flow.Tensor) -> flow.Tensor:
        return nn.functional.mse_loss(func.functional_call(model, p, (xb,)), yb)

    opt = optax.adam(lr)
    state = opt.init(params)  # Tensors are pytrees: optax sees their arrays

    @jax.jit
    def step(p: dict, s: Any, xb: flow.Tensor, yb: flow.Tensor) -> tuple:
        g, loss = func.grad_and_value(loss_fn)(p, xb, yb)
        updates, s = opt.update(g, s, p)
        return optax.apply_updates(p, updates), s, loss

    losses = []
    for i in range(steps):
        params, state, loss = step(params, state, x, y)
        losses.append(float(loss))
        if not quiet and (i + 1) % 100 == 0:
            print(f"step {i + 1:4d}  mse {losses[-1]:.5f}")
    model.load_state_dict(params)  # back into the module, for eager use
    return {"losses": losses, "model": model, "x": x, "y": y}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    del argv
    res = train()
    pred = res["model"](res["x"])
    err = float(np.abs(pred.detach().numpy() - res["y"].numpy()).max())
    print(f"max |error| after training: {err:.4f}")
    return res


if __name__ == "__main__":
    main()
