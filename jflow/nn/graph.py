"""``flow.nn.Graph``: a whole training (or inference) step as one XLA executable, as OneFlow's
``nn.Graph``.

Subclass it, assign modules in ``__init__``, register optimizers with :meth:`add_optimizer`
and write :meth:`build`; calling the graph runs ``build`` — and, when optimizers were added,
each optimizer's ``step()`` and ``zero_grad()`` after it — compiled by ``jax.jit``
(:mod:`jflow.compiler`). Parameters, buffers and optimizer state are donated to the executable
and the new values written back into the modules and optimizers, so the same model can be
trained, evaluated or saved eagerly between graph calls. Learning rates and the random
generator are inputs (schedulers and dropout neither recompile nor freeze); a learning-rate
scheduler given to :meth:`add_optimizer` steps after every call, as in OneFlow.

Gradients live only inside the step (the eager ``.grad`` of parameters is left alone), as in
OneFlow's graph mode; ``flow.nn.utils.clip_grad_norm_`` in ``build`` works on them.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ..autograd import no_grad
from ..compiler.jit import PROFILER, CompiledFunction
from ..optim.optimizer import Optimizer
from .modules.module import Module

__all__ = ["Graph"]


class Graph:
    """Base class of compiled steps (see the module docstring)::

        class TrainStep(flow.nn.Graph):
            def __init__(self, model, opt):
                super().__init__()
                self.model = model
                self.add_optimizer(opt)
            def build(self, x, y):
                loss = F.cross_entropy(self.model(x), y)
                loss.backward()
                return loss
    """

    #: attributes the compiler need not search for modules: the Graph hands their contents
    #: over itself, and assigning a module to the Graph recreates the compiled step
    _state_known_to_compiler = frozenset({"_modules", "_optimizers", "_schedulers",
                                          "_compiled"})

    def __init__(self, *, explain: bool = False, max_cache_size: int = 8) -> None:
        d = self.__dict__
        d["_modules"] = OrderedDict()
        d["_optimizers"] = []
        d["_schedulers"] = []
        d["_compiled"] = None
        d["_explain"] = explain
        d["_max_cache_size"] = max_cache_size

    @property
    def name(self) -> str:
        """The subclass's name (used in messages and the repr)."""
        return type(self).__name__

    def __setattr__(self, name: str, value: Any) -> None:
        if "_modules" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() in __init__ "
                                 f"before assigning attributes")
        if isinstance(value, Module):
            self._modules[name] = value
            self.__dict__.pop(name, None)
            self.__dict__["_compiled"] = None
        else:
            self._modules.pop(name, None)
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        mods = self.__dict__.get("_modules", {})
        if name in mods:
            return mods[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def add_optimizer(self, optim: Optimizer, *, lr_sch: Any = None,
                      is_sparse: bool = False) -> None:
        """Step ``optim`` (then zero its grads) after every :meth:`build`; step ``lr_sch``
        after every call."""
        if not isinstance(optim, Optimizer):
            raise TypeError(f"{self.name}.add_optimizer(): expected a flow.optim.Optimizer, got "
                            f"{type(optim).__name__}")
        if is_sparse:
            raise NotImplementedError(f"{self.name}.add_optimizer(): is_sparse=True is not "
                                      f"supported by jflow")
        if lr_sch is not None and getattr(lr_sch, "optimizer", None) is not optim:
            raise ValueError(f"{self.name}.add_optimizer(): lr_sch must be a scheduler of this "
                             f"optimizer")
        self._optimizers.append(optim)
        if lr_sch is not None:
            self._schedulers.append(lr_sch)
        self.__dict__["_compiled"] = None

    def build(self, *args: Any, **kwargs: Any) -> Any:
        """The step to compile, written by subclasses (with optimizers, calling ``backward()``)."""
        raise NotImplementedError(f"{self.name}: nn.Graph subclasses must implement build()")

    def _step(self, *args: Any, **kwargs: Any) -> Any:
        if not self._optimizers:
            with no_grad():
                return self.build(*args, **kwargs)
        out = self.build(*args, **kwargs)
        params = [p for opt in self._optimizers for g in opt.param_groups for p in g["params"]]
        if not any(p.grad is not None for p in params):
            raise RuntimeError(f"{self.name}.build(): no optimized parameter got a gradient; a "
                               f"graph with an optimizer must call loss.backward() in build()")
        for opt in self._optimizers:
            opt.step()
            opt.zero_grad(set_to_none=True)
        return out

    def _after_call(self) -> None:
        for sch in self._schedulers:
            sch.step()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        c = self._compiled
        if c is None:
            for opt in self._optimizers:
                opt._prepare_state()
            c = CompiledFunction(self._step, donate=bool(self._optimizers),
                                 explain=self._explain, max_cache_size=self._max_cache_size,
                                 track_grads=False, modules=list(self._modules.values()),
                                 optimizers=list(self._optimizers),
                                 reach=(self.build,),
                                 after=self._after_call, name=self.name)
            self.__dict__["_compiled"] = c
        if PROFILER[0] is None:
            return c._call(*args, **kwargs)
        return c(*args, **kwargs)

    @property
    def recompile_reasons(self) -> list[str]:
        """Why each trace after the first happened (see ``flow.jit``)."""
        return [] if self._compiled is None else list(self._compiled.recompile_reasons)

    @property
    def trace_count(self) -> int:
        """How many times the step has been traced (compiled); 0 before the first call."""
        return 0 if self._compiled is None else self._compiled.trace_count

    def __repr__(self) -> str:
        lines = [f"({self.name}:nn.Graph)"]
        for k, m in self._modules.items():
            lines.append(f"  ({k}): " + repr(m).replace("\n", "\n  "))
        for opt in self._optimizers:
            lines.append(f"  (optimizer): {type(opt).__name__}")
        return "\n".join(lines)
