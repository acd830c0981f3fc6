"""``AdaptiveLogSoftmaxWithLoss`` (``torch.nn.modules.adaptive``): the adaptive softmax of
Grave et al. for large vocabularies — a head over the frequent words plus one entry per
cluster of rarer words, each cluster a low-rank projection and its own softmax.

PyTorch's parameters, state-dict keys (``head.weight``, ``tail.<i>.0.weight``,
``tail.<i>.1.weight``), checks, messages and results. How it computes differs where PyTorch's
shapes depend on the data: PyTorch runs each cluster only on the rows whose target falls in
it (``nonzero``: a host read, and in jflow a new compile for every new row count); here every
cluster runs on every row and each row keeps its own cluster's value (``where``), so shapes
are static — one compile per batch shape, and it works inside ``flow.jit`` — at the cost of
the clusters' (low-rank) projections on all rows. Values and gradients are the same (the rows
a cluster does not own get zero gradient from it). The check that targets lie in
``[0, n_classes)`` reads one flag back (PyTorch reads more); inside a trace it is skipped.
``predict`` likewise scores the full distribution and keeps the head's choice where it is in
the shortlist — PyTorch's result, ties included.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from jax.core import Tracer

from ... import _C
from ...tensor import Tensor
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """``forward(input, target) -> (output, loss)``: ``output[i]`` the log-probability of
    ``target[i]``, ``loss`` their negated mean; ``log_prob(input)`` the full (N, n_classes)
    log-distribution; ``predict(input)`` its argmax. See the module docstring."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs)) or (min(cutoffs) <= 0) \
                or (max(cutoffs) > (n_classes - 1)) or (len(set(cutoffs)) != len(cutoffs)) \
                or any(int(c) != c for c in cutoffs):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(self.in_features, self.head_size, bias=self.head_bias,
                           device=device, dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(self.in_features // (self.div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(
                Linear(self.in_features, hsz, bias=False, device=device, dtype=dtype),
                Linear(hsz, osz, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self) -> None:
        """Re-draw the head's and every cluster projection's weights, as at construction."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        targ_dim = target_.dim()
        if targ_dim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        elif targ_dim == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        is_batched = targ_dim > 0
        input = input_ if is_batched else input_.unsqueeze(0)
        target = target_ if is_batched else target_.unsqueeze(0)
        if not isinstance(target._meta, Tracer) and \
                bool(((target < 0) | (target >= self.n_classes)).any()):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, "
                               f"{target.max().item()}] were found. ")
        # the head's class of each row: its word in the shortlist, else its cluster's entry
        short = self.shortlist_size
        gather_inds = target
        output = None
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            in_cluster = (target >= low) & (target < high)
            gather_inds = _C.where(in_cluster, short + i, gather_inds)
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            relative = _C.clamp(target - low, 0, high - low - 1)
            local = cluster_logprob.gather(1, relative.unsqueeze(1)).squeeze(1)
            local = _C.where(in_cluster, local, 0.0)
            output = local if output is None else output + local
        head_logprob = F.log_softmax(self.head(input), dim=1)
        head = head_logprob.gather(1, gather_inds.unsqueeze(1)).squeeze(1)
        output = head if output is None else output + head
        loss = (-output).mean()
        if not is_batched:
            output = output.squeeze(0)
        return _ASMoutput(output, loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob
                         + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return _C.cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probability of every class: (N, in_features) -> (N, n_classes)."""
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row: (N, in_features) -> (N,)."""
        head_output = self.head(input)
        output = _C.argmax(head_output, dim=1)
        full = _C.argmax(self._get_full_log_prob(input, head_output), dim=1)
        return _C.where(output >= self.shortlist_size, full, output)
