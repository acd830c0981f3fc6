"""Layers of ``flow.nn``."""

from . import activation as _act
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm
from .channelshuffle import ChannelShuffle
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .dropout import Dropout1d, Dropout2d, Dropout3d
from .fold import Fold, Unfold
from .linear import Flatten, Identity, Linear, Unflatten
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .module import Module
from .normalization import Dropout, Embedding, GroupNorm, LayerNorm, RMSNorm
from .padding import *  # noqa: F403
from .padding import __all__ as _padding_all
from .pixelshuffle import PixelShuffle, PixelUnshuffle
from .pooling import *  # noqa: F403
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d, Upsample
from .pooling import __all__ as _pooling_all
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from .transformer import (
    MultiheadAttention,
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .upsampling import UpsamplingBilinear2d, UpsamplingNearest2d

ELU, GELU, Hardtanh, LeakyReLU = _act.ELU, _act.GELU, _act.Hardtanh, _act.LeakyReLU
LogSigmoid, LogSoftmax, Mish, ReLU = _act.LogSigmoid, _act.LogSoftmax, _act.Mish, _act.ReLU
ReLU6, Sigmoid, SiLU, Softmax = _act.ReLU6, _act.Sigmoid, _act.SiLU, _act.Softmax
Softmax2d = _act.Softmax2d
Softmin, Softplus, Tanh = _act.Softmin, _act.Softplus, _act.Tanh

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "Identity", "Linear", "Flatten",
           "Unflatten", "ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "Mish", "Sigmoid",
           "LogSigmoid", "Tanh", "Softmax", "LogSoftmax", "Softmin", "ELU", "Softplus",
           "Hardtanh", "Dropout", "LayerNorm", "RMSNorm", "GroupNorm", "Embedding", "MSELoss",
           "L1Loss", "NLLLoss", "CrossEntropyLoss", "BCEWithLogitsLoss"]
__all__ += ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder"]
__all__ += ["TransformerDecoderLayer", "TransformerDecoder", "Transformer"]
__all__ += ["Dropout1d", "Dropout2d", "Dropout3d"]

# task D: instance / local response norm, EmbeddingBag, CTCLoss, alpha dropout, Bilinear
from .batchnorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: E402
from .dropout import AlphaDropout, FeatureAlphaDropout  # noqa: E402
from .linear import Bilinear  # noqa: E402
from .loss import CTCLoss  # noqa: E402
from .normalization import EmbeddingBag, LocalResponseNorm  # noqa: E402

__all__ += ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "AlphaDropout",
            "FeatureAlphaDropout", "Bilinear", "CTCLoss", "EmbeddingBag", "LocalResponseNorm"]
__all__ += ["Conv1d", "Conv2d", "ConvTranspose2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d",
            "BatchNorm1d", "BatchNorm2d", "Upsample"]
__all__ += ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell",
            "BCELoss"]
__all__ += ["ParameterList", "ParameterDict", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle",
            "Softmax2d", "UpsamplingNearest2d", "UpsamplingBilinear2d", "BatchNorm3d",
            "SyncBatchNorm", *_padding_all]  # module-parity additions
__all__ += ["Conv3d", "ConvTranspose1d", "ConvTranspose3d", "Unfold", "Fold"]  # conv family

# nn.functional activations, losses and distances
from . import loss as _loss  # noqa: E402
from .distance import CosineSimilarity, PairwiseDistance  # noqa: E402

_ISSUE14 = ["SELU", "CELU", "GLU", "Hardswish", "Hardsigmoid", "Hardshrink", "Softshrink",
            "Tanhshrink", "Softsign", "PReLU", "RReLU", "Threshold"]
_ISSUE14_LOSSES = ["SmoothL1Loss", "HuberLoss", "KLDivLoss", "SoftMarginLoss",
                   "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss",
                   "PoissonNLLLoss", "GaussianNLLLoss", "MultiMarginLoss", "TripletMarginLoss",
                   "MultiLabelSoftMarginLoss"]
globals().update({n: getattr(_act, n) for n in _ISSUE14})
globals().update({n: getattr(_loss, n) for n in _ISSUE14_LOSSES})
__all__ += [*_ISSUE14, *_ISSUE14_LOSSES, "CosineSimilarity", "PairwiseDistance"]
__all__ += [n for n in _pooling_all if n not in __all__]  # pooling 1-d / 3-d

# multilabel margin and triplet-with-distance losses (max unpool / fractional pooling: pooling)
from .loss import MultiLabelMarginLoss, TripletMarginWithDistanceLoss  # noqa: E402

__all__ += ["MultiLabelMarginLoss", "TripletMarginWithDistanceLoss"]

# PyTorch's module-file paths where jflow keeps the classes elsewhere, imported as PyTorch's
# package imports them, so `torch.nn.modules.sparse.Embedding` resolves after `import jflow`
from . import flatten, instancenorm, sparse, utils  # noqa: E402, F401

# lazy modules (the parameter's shape from the first call), PyTorch's deprecated aliases
from .batchnorm import (  # noqa: E402
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
)
from .conv import (  # noqa: E402
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
)
from .lazy import LazyModuleMixin  # noqa: E402,F401
from .linear import LazyLinear  # noqa: E402

__all__ += ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
            "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
            "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]
from .adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: E402
from .container import Container  # noqa: E402
from .loss import NLLLoss2d  # noqa: E402
from .normalization import CrossMapLRN2d  # noqa: E402

__all__ += ["AdaptiveLogSoftmaxWithLoss", "Container", "NLLLoss2d", "CrossMapLRN2d"]

# PyTorch 2.13's linear + cross entropy loss
from .loss import LinearCrossEntropyLoss  # noqa: E402

__all__ += ["LinearCrossEntropyLoss"]
