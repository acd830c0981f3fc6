"""Layers of ``flow.nn``."""

from . import activation as _act
from .batchnorm import BatchNorm1d, BatchNorm2d
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, ConvTranspose2d
from .dropout import Dropout1d, Dropout2d, Dropout3d
from .linear import Flatten, Identity, Linear, Unflatten
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .module import Module
from .normalization import Dropout, Embedding, GroupNorm, LayerNorm, RMSNorm
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d, Upsample
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .transformer import (
    MultiheadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

ELU, GELU, Hardtanh, LeakyReLU = _act.ELU, _act.GELU, _act.Hardtanh, _act.LeakyReLU
LogSigmoid, LogSoftmax, Mish, ReLU = _act.LogSigmoid, _act.LogSoftmax, _act.Mish, _act.ReLU
ReLU6, Sigmoid, SiLU, Softmax = _act.ReLU6, _act.Sigmoid, _act.SiLU, _act.Softmax
Softmin, Softplus, Tanh = _act.Softmin, _act.Softplus, _act.Tanh

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "Identity", "Linear", "Flatten",
           "Unflatten", "ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "Mish", "Sigmoid",
           "LogSigmoid", "Tanh", "Softmax", "LogSoftmax", "Softmin", "ELU", "Softplus",
           "Hardtanh", "Dropout", "LayerNorm", "RMSNorm", "GroupNorm", "Embedding", "MSELoss",
           "L1Loss", "NLLLoss", "CrossEntropyLoss", "BCEWithLogitsLoss"]
__all__ += ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder"]
__all__ += ["TransformerDecoderLayer", "TransformerDecoder", "Transformer"]
__all__ += ["Dropout1d", "Dropout2d", "Dropout3d"]
__all__ += ["Conv1d", "Conv2d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
            "BatchNorm1d", "BatchNorm2d", "Upsample"]
__all__ += ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
            "BCELoss"]
