"""Recurrent layers as PyTorch's: ``RNN`` (tanh / relu), ``LSTM``, ``GRU`` and their cells
``RNNCell``, ``LSTMCell``, ``GRUCell``.

Parameter names, shapes, gate order (LSTM ``i, f, g, o``; GRU ``r, z, n``) and initialisation
(every parameter ~ U(±1/√hidden_size)) follow PyTorch, so a PyTorch ``state_dict`` loads as is.

The input projection of a whole layer is one matmul. The recurrence is then one op per layer
and direction, ``lstm_layer``, ``gru_layer`` or ``rnn_layer`` (jflow/ops/rnn.py: a
``lax.scan``, its gradient a hand-written scan backwards in time), so eagerly it is one call per
layer and direction, and a compiled step's (``flow.jit`` / ``nn.Graph``) program does not grow
with the sequence length. No cuDNN kernel is used, so there is nothing to
``flatten_parameters`` (a no-op, kept for code that calls it). Second derivatives
(``create_graph=True``) take a slower step-by-step form of the same recurrences.

A :class:`~jflow.nn.utils.rnn.PackedSequence` input runs as its padded batch (sorted by
length): each sequence's final states are read at its own last step, and its backward
direction runs it flipped within its length (one ``index_select`` each way), so every layer
kind and its recurrence op serve packed batches unchanged; the steps past a sequence's end
compute on padding that nothing reads (as PyTorch's CPU kernel does not; the result is the
same).

Under autocast a layer runs unlowered in its input's dtype (float32 in, float32 out): the
recurrence ops take one dtype for the input, states and weights. PyTorch's CPU layers differ
by kernel there (its GRU returns float32 from bfloat16 products, its RNN bfloat16, its LSTM
fails in oneDNN); jflow's values are PyTorch's without autocast (docs/porting.md).

An LSTM with projections (``proj_size > 0``) loops over the time steps in Python with jflow
ops (each step one ``linear`` on the hidden state, the gate arithmetic and the projection): the
``lstm_layer`` op has no projection. The cells (``RNNCell``, ``LSTMCell``, ``GRUCell``) run
one step with jflow ops (``_rnn_step``, ``_lstm_step``, ``_gru_step``).
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np

from ... import _C
from ...amp import autocast_mode as _autocast
from ...creation import empty, zeros
from ...ops import get as _get_op
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import (
    PackedSequence,
    host_ints,
    lengths_of,
    packed_from_padded,
    padded_from_packed,
    steps_at,
)
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
#: each layer kind's recurrence, one op per layer and direction (forward, gradient and tangent
#: each a lax.scan: jflow/ops/rnn.py)
_LSTM_LAYER = _get_op("lstm_layer").apply
_GRU_LAYER = _get_op("gru_layer").apply
_RNN_LAYER = _get_op("rnn_layer").apply


# -- one time step of each cell kind (shared by the layers and the cells) ----------------------

def _rnn_step(gi: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None, relu: bool) -> Tensor:
    """h' = act(gi + h W_hh^T + b_hh), where gi = x W_ih^T + b_ih is precomputed."""
    pre = gi + F.linear(h, w_hh, b_hh)
    return _C.relu(pre) if relu else _C.tanh(pre)


def _lstm_step(gi: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None
               ) -> tuple[Tensor, Tensor]:
    """PyTorch's LSTM step, gates in order i, f, g, o."""
    gates = gi + F.linear(h, w_hh, b_hh)
    i, f, g, o = _C.chunk(gates, 4, -1)
    c2 = _C.sigmoid(f) * c + _C.sigmoid(i) * _C.tanh(g)
    return _C.sigmoid(o) * _C.tanh(c2), c2


def _gru_step(gi: Tensor, h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    """PyTorch's GRU step, gates r, z, n; b_hn sits inside the reset product (as cuDNN and
    PyTorch), so the hidden projection is kept apart from the input one."""
    gh = F.linear(h, w_hh, b_hh)
    i_r, i_z, i_n = _C.chunk(gi, 3, -1)
    h_r, h_z, h_n = _C.chunk(gh, 3, -1)
    r = _C.sigmoid(i_r + h_r)
    z = _C.sigmoid(i_z + h_z)
    n = _C.tanh(i_n + r * h_n)
    return n + z * (h - n)       # = (1 - z) * n + z * h


def _check_tensor(input: Any, name: str, packed_too: bool) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: expected a Tensor{' or a PackedSequence' if packed_too else ''}"
                        f" input, got {type(input).__name__}")


class RNNBase(Module):
    """The multi-layer, optionally bidirectional recurrence shared by ``RNN``, ``LSTM`` and
    ``GRU``; ``mode`` is ``"RNN_TANH"``, ``"RNN_RELU"``, ``"LSTM"`` or ``"GRU"``."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
                or not 0 <= dropout <= 1):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                          f"non-zero dropout expects num_layers greater than 1, but got "
                          f"dropout={dropout} and num_layers={num_layers}", stacklevel=2)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool) or hidden_size <= 0:
            raise ValueError(f"hidden_size must be a positive integer, got {hidden_size!r}")
        if not isinstance(num_layers, int) or isinstance(num_layers, bool) or num_layers <= 0:
            raise ValueError(f"num_layers must be a positive integer, got {num_layers!r}")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size > 0 and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.mode = mode
        self.input_size, self.hidden_size = int(input_size), int(hidden_size)
        self.num_layers, self.bias, self.batch_first = num_layers, bool(bias), bool(batch_first)
        self.dropout, self.bidirectional = float(dropout), bool(bidirectional)
        self.proj_size = int(proj_size)
        num_dirs = 2 if bidirectional else 1
        gate_size = _GATES[mode] * self.hidden_size
        real_hidden = self.proj_size or self.hidden_size  # (the size of h: projected or not)
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for d in range(num_dirs):
                in_size = self.input_size if layer == 0 else real_hidden * num_dirs
                sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
                shapes = [("weight_ih", (gate_size, in_size)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if self.proj_size:
                    shapes.append(("weight_hr", (self.proj_size, self.hidden_size)))
                names = []
                for base, shape in shapes:
                    setattr(self, base + sfx, Parameter(empty(*shape, dtype=dtype,
                                                              device=device)))
                    names.append(base + sfx)
                self._flat_weights_names += names
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's init: every weight and bias ~ U(-1/√hidden_size, 1/√hidden_size)."""
        stdv = 1.0 / math.sqrt(self.hidden_size)
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """No-op: there is no fused weight buffer to compact (kept for PyTorch code)."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters, one list per layer and direction (PyTorch's order)."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    @property
    def _num_dirs(self) -> int:
        return 2 if self.bidirectional else 1

    def _layer_params(self, layer: int, d: int) -> tuple[Any, Any, Any, Any]:
        sfx = f"_l{layer}" + ("_reverse" if d == 1 else "")
        if self.bias:
            return (getattr(self, "weight_ih" + sfx), getattr(self, "weight_hh" + sfx),
                    getattr(self, "bias_ih" + sfx), getattr(self, "bias_hh" + sfx))
        return getattr(self, "weight_ih" + sfx), getattr(self, "weight_hh" + sfx), None, None

    def _check_states(self, hs: Any, batch: int) -> None:
        """The initial states' shapes: ``h`` ``(layers * dirs, batch, proj_size or
        hidden_size)``, an LSTM's ``c`` ``(layers * dirs, batch, hidden_size)``."""
        for k, h in enumerate(hs):
            size = self.hidden_size if k == 1 else (self.proj_size or self.hidden_size)
            expected = (self.num_layers * self._num_dirs, batch, size)
            if tuple(h.shape) != expected:
                raise RuntimeError(f"Expected {'hidden' if k == 0 else 'cell'} size "
                                   f"{expected}, got {list(h.shape)}")

    def _prepare(self, input: Any, hx: Any) -> tuple[Tensor, Any, bool]:
        """Validates; returns (time-major 3-D input, hx batched or None, is_batched)."""
        name = type(self).__name__
        _check_tensor(input, name, True)
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             "tensor instead")
        batched = input.dim() == 3
        hs = hx if isinstance(hx, (tuple, list)) else ((hx,) if hx is not None else ())
        if self.mode == "LSTM" and hx is not None and (not isinstance(hx, (tuple, list))
                                                       or len(hx) != 2):
            raise TypeError("LSTM: hx must be a tuple (h_0, c_0)")
        for h in hs:
            want = 3 if batched else 2
            if h.dim() != want:
                raise RuntimeError(f"For {'batched 3-D' if batched else 'unbatched 2-D'} "
                                   f"input, hx{' and cx' if self.mode == 'LSTM' else ''} "
                                   f"should also be {want}-D but got {h.dim()}-D tensor")
        if not batched:
            input = _C.unsqueeze(input, 1)          # (T, 1, I): time-major, batch of one
            hs = tuple(_C.unsqueeze(h, 1) for h in hs)
        elif self.batch_first:
            input = _C.transpose(input, 0, 1)
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")
        self._check_states(hs, input.shape[1])
        return input, (hs if hs else None), batched

    def _direction(self, x: Tensor, state: list[Tensor], layer: int, d: int,
                   reverse: bool) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """One layer and direction over time-major ``x`` from ``state``: (every step's output
        ``(T, N, H)``, every step's states (one ``(T, N, H)`` per state kind), the final
        states)."""
        w_ih, w_hh, b_ih, b_hh = self._layer_params(layer, d)
        if self.proj_size:  # projected: step by step, h = (o * tanh(c)) W_hr^T
            w_hr = getattr(self, f"weight_hr_l{layer}" + ("_reverse" if d == 1 else ""))
            gi = _C.unbind(F.linear(x, w_ih, b_ih), 0)
            hs_: list[Any] = [None] * x.shape[0]
            cs: list[Any] = [None] * x.shape[0]
            for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
                h, c = _lstm_step(gi[t], state[0], state[1], w_hh, b_hh)
                state = [F.linear(h, w_hr), c]
                hs_[t], cs[t] = state
            y = _C.stack(hs_, 0)
            return y, [y, _C.stack(cs, 0)], state
        # the whole recurrence: one op (jflow/ops/rnn.py); the input projection one matmul
        gi = F.linear(x, w_ih, b_ih)
        b = b_hh if b_hh is not None else zeros(w_hh.shape[0], dtype=w_hh.dtype,
                                                device=w_hh.device)
        if self.mode == "LSTM":
            y, h_n, c_n, c, _ = _LSTM_LAYER(gi, state[0], state[1], w_hh, b, reverse=reverse)
            return y, [y, c], [h_n, c_n]
        if self.mode == "GRU":
            y, h_n, _, _ = _GRU_LAYER(gi, state[0], w_hh, b, reverse=reverse)
        else:
            y, h_n = _RNN_LAYER(gi, state[0], w_hh, b, reverse=reverse,
                                nonlinearity="relu" if self.mode == "RNN_RELU" else "tanh")
        return y, [y], [h_n]

    def _run(self, x: Tensor, hs: Any, lengths: np.ndarray | None = None
             ) -> tuple[Tensor, list[list[Tensor]]]:
        """Runs all layers over time-major ``x``; returns (last layer's output, final states
        per state kind, each a list over layer*direction). ``lengths`` (a packed input's,
        decreasing) ends sequence ``j`` after ``lengths[j]`` steps: its final states are
        those of its own last step, and its backward direction starts there (the steps
        past its end run on padding and are read by nothing)."""
        if _autocast.state.dtype is not None:  # (autocast: the recurrence in x's dtype)
            with _autocast.autocast(_autocast.state.device, enabled=False):
                return self._run(x, hs, lengths)
        n_state = 2 if self.mode == "LSTM" else 1
        n_dirs = self._num_dirs
        if hs is None:
            hs = tuple(zeros(self.num_layers * n_dirs, x.shape[1],
                             self.hidden_size if k else (self.proj_size or self.hidden_size),
                             dtype=x.dtype, device=x.device) for k in range(n_state))
        steps = x.shape[0]
        ragged = lengths is not None and bool(np.any(lengths != steps))
        if ragged:
            last = (lengths - 1)[None, :]
            t = np.arange(steps)[:, None]
            flip = np.where(t < lengths[None, :], lengths[None, :] - 1 - t, t)
        finals: list[list[Tensor]] = [[] for _ in range(n_state)]
        for layer in range(self.num_layers):
            outs = []
            for d in range(n_dirs):
                state = [h[layer * n_dirs + d] for h in hs]
                if not ragged:
                    y, _, ends = self._direction(x, state, layer, d, reverse=d == 1)
                else:  # the backward direction runs each sequence flipped within its length
                    xd = steps_at(x, flip) if d == 1 else x
                    y, history, _ = self._direction(xd, state, layer, d, reverse=False)
                    ends = [_C.squeeze(steps_at(s, last), 0) for s in history]
                    y = steps_at(y, flip) if d == 1 else y
                outs.append(y)
                for k in range(n_state):
                    finals[k].append(ends[k])
            x = outs[0] if n_dirs == 1 else _C.cat(outs, 2)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        return x, finals

    def forward(self, input: Tensor | PackedSequence, hx: Any = None) -> tuple[Any, Any]:
        """``(output, h_n)`` (LSTM: ``(output, (h_n, c_n))``) of a ``(L, N, H_in)`` input, or
        of a :class:`PackedSequence` (then ``output`` is packed alike)."""
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        x, hs, batched = self._prepare(input, hx)
        out, finals = self._run(x, hs)
        states = [_C.stack(f, 0) for f in finals]
        if not batched:
            out = _C.squeeze(out, 1)
            states = [_C.squeeze(s, 1) for s in states]
        elif self.batch_first:
            out = _C.transpose(out, 0, 1)
        return out, (tuple(states) if self.mode == "LSTM" else states[0])

    def _forward_packed(self, packed: PackedSequence, hx: Any) -> tuple[PackedSequence, Any]:
        """A packed batch: run it padded (sorted by length, time-major), states taken at each
        sequence's last step, the output packed with the input's layout."""
        name = type(self).__name__
        data = packed.data
        if data.dim() != 2:
            raise ValueError(f"{name}: a packed input's data must be 2-D (steps, input_size), "
                             f"got shape {tuple(data.shape)}")
        if data.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {data.shape[-1]}")
        batch_sizes = host_ints(packed.batch_sizes, name, "input.batch_sizes")
        lengths = lengths_of(batch_sizes)
        hs = hx if isinstance(hx, (tuple, list)) else ((hx,) if hx is not None else ())
        if self.mode == "LSTM" and hx is not None and (not isinstance(hx, (tuple, list))
                                                       or len(hx) != 2):
            raise TypeError("LSTM: hx must be a tuple (h_0, c_0)")
        if packed.sorted_indices is not None:  # hx is in the caller's order: sort it too
            hs = tuple(_C.index_select(h, 1, packed.sorted_indices.to(device=h.device))
                       for h in hs)
        self._check_states(hs, lengths.size)
        x = padded_from_packed(data, batch_sizes, batch_sizes.size)
        out, finals = self._run(x, hs or None, lengths)
        out = packed_from_padded(out, batch_sizes)
        states = [_C.stack(f, 0) for f in finals]
        if packed.unsorted_indices is not None:
            states = [_C.index_select(s, 1, packed.unsorted_indices.to(device=s.device))
                      for s in states]
        out = PackedSequence(out, packed.batch_sizes, packed.sorted_indices,
                             packed.unsorted_indices)
        return out, (tuple(states) if self.mode == "LSTM" else states[0])

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class RNN(RNNBase):
    """Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``, act tanh or relu.

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False)``; ``forward(input, hx=None)``
    returns ``(output, h_n)``.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None, proj_size: int = 0) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device=device, dtype=dtype)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        return s if self.nonlinearity == "tanh" else s + ", nonlinearity='relu'"


class LSTM(RNNBase):
    """Long short-term memory, gates ``i, f, g, o`` (PyTorch's order and formulas).

    ``forward(input, (h_0, c_0)=None)`` returns ``(output, (h_n, c_n))``. With
    ``proj_size > 0`` the hidden state is projected, ``h = (o * tanh(c)) W_hr^T`` (PyTorch's
    ``weight_hr_l{k}``): ``h`` and the output have ``proj_size`` features, ``c`` keeps
    ``hidden_size``; such a layer's recurrence loops over the steps with jflow ops (the
    ``lstm_layer`` op has no projection).
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)


class GRU(RNNBase):
    """Gated recurrent unit, gates ``r, z, n`` (PyTorch's order and formulas, with ``b_hn``
    inside the reset product). ``forward(input, hx=None)`` returns ``(output, h_n)``."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device: Any = None, dtype: Any = None,
                 proj_size: int = 0) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device=device, dtype=dtype)


# -- cells -----------------------------------------------------------------------------------

class RNNCellBase(Module):
    """Parameters ``weight_ih (G*H, I)``, ``weight_hh (G*H, H)``, ``bias_ih``, ``bias_hh``
    (``G`` gates), initialised U(±1/√hidden_size) as PyTorch."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = int(input_size), int(hidden_size), bias
        g = num_chunks * self.hidden_size
        self.weight_ih = Parameter(empty(g, self.input_size, dtype=dtype, device=device))
        self.weight_hh = Parameter(empty(g, self.hidden_size, dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(empty(g, dtype=dtype, device=device))
            self.bias_hh = Parameter(empty(g, dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's init: every weight and bias ~ U(-1/√hidden_size, 1/√hidden_size)."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for w in self.parameters():
            init.uniform_(w, -stdv, stdv)

    def _prepare(self, input: Any, hx: Any, n_state: int) -> tuple[Tensor, list[Tensor], bool]:
        """Validates; returns (2-D input, batched states (zeros when hx is None), batched)."""
        name = type(self).__name__
        _check_tensor(input, name, False)
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D "
                             "instead")
        batched = input.dim() == 2
        if hx is None:
            hs = [zeros(input.shape[0] if batched else 1, self.hidden_size, dtype=input.dtype,
                        device=input.device)] * n_state
        else:
            hs = list(hx) if n_state == 2 else [hx]
            for h in hs:
                if h.dim() != input.dim():
                    raise RuntimeError(f"{name}: Expected hidden to be {input.dim()}D, got "
                                       f"{h.dim()}D instead")
        if not batched:
            input = _C.unsqueeze(input, 0)
            if hx is not None:
                hs = [_C.unsqueeze(h, 0) for h in hs]
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} "
                               f"expected {self.input_size}")
        for h in hs:
            if tuple(h.shape) != (input.shape[0], self.hidden_size):
                raise RuntimeError(f"Expected hidden size {(input.shape[0], self.hidden_size)}"
                                   f", got {list(h.shape)}")
        return input, hs, batched

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        nl = getattr(self, "nonlinearity", "tanh")
        return s if nl == "tanh" else s + f", nonlinearity={nl}"


class RNNCell(RNNCellBase):
    """One Elman RNN step: ``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        super().__init__(input_size, hidden_size, bias, 1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """``h'`` ``(N, hidden_size)`` from ``input`` ``(N, input_size)``; ``hx=None``: zeros."""
        x, (h,), batched = self._prepare(input, hx, 1)
        h = _rnn_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                      self.bias_hh, self.nonlinearity == "relu")
        return h if batched else _C.squeeze(h, 0)


class LSTMCell(RNNCellBase):
    """One LSTM step; ``forward(input, (h, c)=None)`` returns ``(h', c')``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, Tensor]:
        """``(h', c')``, each ``(N, hidden_size)``, from ``input`` and ``hx=(h, c)`` (zeros)."""
        x, (h, c), batched = self._prepare(input, hx, 2)
        h, c = _lstm_step(F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh,
                          self.bias_hh)
        return (h, c) if batched else (_C.squeeze(h, 0), _C.squeeze(c, 0))


class GRUCell(RNNCellBase):
    """One GRU step (gates ``r, z, n``)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """``h'`` ``(N, hidden_size)`` from ``input`` ``(N, input_size)``; ``hx=None``: zeros."""
        x, (h,), batched = self._prepare(input, hx, 1)
        h = _gru_step(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh,
                      self.bias_hh)
        return h if batched else _C.squeeze(h, 0)
