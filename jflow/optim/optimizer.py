"""``Optimizer``: parameter groups, per-parameter state, ``zero_grad`` and state dicts."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from ..autograd import enable_grad, no_grad
from ..creation import zero_grads
from ..dtypes import float32 as _F32
from ..lazy_mode import segment as _lazy
from ..lazy_mode.optimizer_step import note_new, record_step, run_step_eagerly
from ..tensor import Tensor
from .watched import WatchedGroup, WatchedList

__all__ = ["Optimizer", "required"]


def assign_(t: Tensor, new: Tensor) -> None:
    """Make ``new`` the value of ``t`` in place (an optimizer's update of a parameter or a
    state tensor, under no_grad): ``t`` keeps its identity and global layout."""
    if new._global != t._global:
        new = new.to_global(*t._global) if t._global is not None else new
    t._value = new._value
    t._version += 1


def _running_pending(step: Callable[..., Any]) -> Callable[..., Any]:
    """``step`` that ends by running what lazy mode recorded (jflow.lazy_mode): an eager
    training step — forward, backward, update — runs as one fused executable (two when its
    forward is heavy: the backward ran it already, see lazy_mode.segment.SPLIT_FLOPS).
    Outside lazy mode, a step whose structure repeats runs as one executable too
    (lazy_mode.optimizer_step.run_step_eagerly)."""
    @functools.wraps(step)
    def run(self: Optimizer, *args: Any, **kwargs: Any) -> Any:
        if _lazy.active() is None:  # eager: the whole update as one executable when it can
            if args or kwargs or not run_step_eagerly(self, step):
                return step(self, *args, **kwargs)
            return None
        if args or kwargs or not record_step(self, step):  # (one recorded node when it can)
            out = step(self, *args, **kwargs)
        else:
            out = None
        _lazy.flush()
        return out
    run._runs_pending = True  # type: ignore[attr-defined]
    return run


def scalar_dtype(p: Tensor) -> Any:
    """The dtype of a parameter's scalar state (step counts, running products, ASGD's eta and
    mu): float32 for a float16 / bfloat16 parameter — a bfloat16 count stops at 256 and
    Adam's beta2 = 0.999 rounds to 1, so a bias correction would be 0 and nothing would
    update — else the parameter's (PyTorch keeps them in float32 or wider too)."""
    d = p.dtype
    return _F32 if d.is_floating_point and d.itemsize < 4 else d


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required: Any = _Required()


class Optimizer:
    """Base class of optimizers, as ``torch.optim.Optimizer``.

    ``params`` is an iterable of tensors or of dicts (parameter groups with their own
    hyper-parameters). ``state[p]`` holds per-parameter state (tensors such as moments and
    the step count); subclasses implement :meth:`step`, updating parameters in place under
    ``flow.no_grad()`` so they stay the same objects (modules keep them).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_runs_pending", False):
            cls.step = _running_pending(step)

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: dict[Tensor, dict[str, Any]] = {}
        # (watched: a compiled step compares one counter instead of re-reading the groups)
        self.param_groups: list[dict[str, Any]] = WatchedList()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got a Tensor")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)
        note_new(self)  # (its first step may compile while the first backward does)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group (``{"params": [...], "lr": ...}``); missing options take the defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, set):
            # (as PyTorch: state dicts number parameters by position, a set has none)
            raise TypeError("optimizer parameters need to be organized in ordered "
                            "collections, but the ordering of tensors in sets will change "
                            "between runs. Please use a list instead.")
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = WatchedGroup(param_group)
        group["params"] = WatchedList(params)
        for k, v in self.defaults.items():
            if v is required and k not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {k}")
            group.setdefault(k, v)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized parameters: to ``None`` (default) or zeros."""
        zero_grads((p for g in self.param_groups for p in g["params"]), set_to_none)

    @staticmethod
    def _grads(group: dict[str, Any]) -> Any:
        """``(param, gradient)`` for the group's parameters that have a gradient (negated
        when the group maximizes)."""
        for p in group["params"]:
            if p.grad is not None:
                yield p, (-p.grad if group.get("maximize") else p.grad)

    @staticmethod
    def _descend_(p: Tensor, update: Tensor, lr: Any) -> None:
        """``p -= lr * update`` in place; ``lr`` is a float, or a 0-d tensor inside a compiled
        step (flow.jit / nn.Graph pass the learning rate as an input, so schedulers don't
        recompile)."""
        if isinstance(lr, Tensor):
            p.sub_(update * lr)
        else:
            p.add_(update, alpha=-lr)

    def _one_op_per_parameter(self) -> bool:
        """Whether this optimizer's eager step already updates each parameter with one
        fused op: then its step does not run as one whole-step executable by default
        (``lazy_mode.optimizer_step.fuses``: little faster, much larger to compile)."""
        return False

    def _initial_state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Any] | None:
        """The state ``step()`` would create for ``p`` on its first update, if creating it
        beforehand gives the same updates (None: state stays lazy)."""
        return None

    def _make_initial_state(self, want: Callable[[Tensor], bool]) -> list[Tensor]:
        """Create now, for each parameter ``want`` selects that has no state, the state its
        first update would create, where :meth:`_initial_state` can (same values, same
        updates); returns the parameters given state. The one way state is made ahead:
        nn.Graph's (:meth:`_prepare_state`), the fused eager / lazy first step's
        (``lazy_mode.optimizer_step``), flow.jit's first call's (``compiler/jit.py``)."""
        made = []
        state = self.state
        for g in self.param_groups:
            for p in g["params"]:
                if want(p) and not state.get(p):
                    s = self._initial_state(p, g)
                    if s is not None:
                        state[p] = s
                        made.append(p)
        return made

    def _prepare_state(self) -> None:
        """Create the state of every trainable parameter now where that changes nothing, so
        a compiled step (nn.Graph) sees its final state structure on the first call and
        traces once instead of twice."""
        self._make_initial_state(lambda p: p._requires_grad)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter that has a gradient; returns ``closure()``'s loss.

        The loop every optimizer shares: each parameter with a gradient gets its state
        (created by :meth:`_initial_state` on first use) and :meth:`_update` applies the
        optimizer's rule. Optimizers whose update spans parameters override ``step``."""
        loss = self._closure(closure)
        with no_grad():
            for group in self.param_groups:
                for p, g in self._grads(group):
                    state = self.state.get(p)
                    if not state:
                        state = self.state[p] = self._initial_state(p, group)
                    self._update(p, g, state, group)
        return loss

    def _update(self, p: Tensor, g: Tensor, state: dict[str, Any], group: dict[str, Any]
                ) -> None:
        """The rule: update ``p`` (and ``state``) in place from its gradient ``g``."""
        raise NotImplementedError(f"{type(self).__name__} must implement step() or _update()")

    @staticmethod
    def _weight_decay(p: Tensor, g: Tensor, lr: Any, wd: float, decoupled: bool = False
                      ) -> Tensor:
        """Weight decay: L2 (``g + wd * p``, returned) or decoupled (``p *= 1 - lr * wd``,
        AdamW-style; ``g`` returned as is)."""
        if wd == 0:
            return g
        if decoupled:
            p.mul_(1 - lr * wd)
            return g
        return g.add(p, alpha=wd)

    def _closure(self, closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # -- state dict -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``, with
        parameters numbered across groups in order (as PyTorch)."""
        index: dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            ids = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = ids
            groups.append(packed)
        state = {index[id(p)]: {k: (v.detach() if isinstance(v, Tensor) else v)
                                for k, v in s.items()}
                 for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyper-parameters and state saved by :meth:`state_dict` (state tensors are
        cast to their parameter's dtype, except the step count)."""
        if not isinstance(state_dict, dict) or "param_groups" not in state_dict \
                or "state" not in state_dict:
            raise ValueError("optimizer state_dict must be a dict with 'state' and "
                             "'param_groups'")
        saved = state_dict["param_groups"]
        if len(saved) != len(self.param_groups):
            raise ValueError(f"loaded state dict has {len(saved)} parameter groups, the "
                             f"optimizer has {len(self.param_groups)}")
        for i, (g, s) in enumerate(zip(self.param_groups, saved)):
            if len(g["params"]) != len(s["params"]):
                raise ValueError(f"loaded state dict contains a parameter group (index {i}) "
                                 f"of {len(s['params'])} parameters that doesn't match the "
                                 f"size of the optimizer's group ({len(g['params'])})")
        id_map = {sid: p for g, s in zip(self.param_groups, saved)
                  for sid, p in zip(s["params"], g["params"])}
        state: dict[Tensor, dict[str, Any]] = {}
        for k, v in state_dict["state"].items():
            key = int(k)
            if key not in id_map:
                continue
            p = id_map[key]
            entry = {}
            for name, val in v.items():
                if isinstance(val, Tensor):
                    if name != "step" and val.is_floating_point():
                        if tuple(val.shape) != tuple(p.shape) and val.ndim != 0:
                            raise ValueError(f"optimizer state '{name}' of parameter {key} "
                                             f"has shape {list(val.shape)}, the parameter "
                                             f"{list(p.shape)}")
                        val = val.to(p.dtype)
                    elif name == "step" and val.is_floating_point() and \
                            val.dtype.itemsize < scalar_dtype(p).itemsize:
                        val = val.to(scalar_dtype(p))  # (a bfloat16 count: older jflow saved one)
                    val = val.to(copy=True)
                entry[name] = val
            state[p] = entry
        self.state = state
        for g, s in zip(self.param_groups, saved):
            for k, v in s.items():
                if k != "params":
                    g[k] = v

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        lines.append(")")
        return "\n".join(lines)


# (the shared loop too: Adagrad, Adamax, NAdam, ... step through it)
Optimizer.step = _running_pending(Optimizer.step)  # type: ignore[method-assign]
