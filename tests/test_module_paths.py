"""The ``torch.nn.modules.<file>`` import paths that ported code uses resolve in jflow, to the
same classes as ``flow.nn.<Name>``; channel dropout; constructor sizes given as floats raise a
TypeError naming the argument (as PyTorch), instead of being truncated by ``int()``.

No XLA compile beyond a few tiny elementwise ops: these checks are about names and arguments.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np
import pytest

import jflow as flow
from jflow import nn

PATHS = {
    "jflow.nn.modules.dropout": ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d"],
    "jflow.nn.modules.activation": ["MultiheadAttention", "ReLU", "GELU"],
    "jflow.nn.modules.transformer": ["MultiheadAttention", "TransformerEncoderLayer",
                                     "TransformerEncoder", "TransformerDecoderLayer",
                                     "TransformerDecoder", "Transformer"],
    "jflow.nn.modules.conv": ["Conv1d", "Conv2d", "ConvTranspose2d"],
    "jflow.nn.modules.linear": ["Linear", "Identity"],
    # PyTorch's files for classes jflow keeps in other files
    "jflow.nn.modules.sparse": ["Embedding", "EmbeddingBag"],
    "jflow.nn.modules.instancenorm": ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"],
    "jflow.nn.modules.flatten": ["Flatten", "Unflatten"],
}


@pytest.mark.parametrize("module", sorted(PATHS))
def test_module_path_imports(module: str) -> None:
    mod = importlib.import_module(module)
    for name in PATHS[module]:
        assert getattr(mod, name) is getattr(nn, name), f"{module}.{name}"
        assert name in mod.__all__, f"{module}.__all__ lacks {name}"


def test_from_imports_as_ported_code_writes_them() -> None:
    from jflow.nn.modules.activation import MultiheadAttention
    from jflow.nn.modules.conv import Conv2d
    from jflow.nn.modules.dropout import Dropout
    from jflow.nn.modules.linear import Linear
    from jflow.nn.modules.transformer import Transformer, TransformerDecoderLayer

    assert MultiheadAttention is flow.nn.MultiheadAttention and Conv2d is nn.Conv2d
    assert Dropout is nn.Dropout and Linear is nn.Linear
    assert Transformer is nn.Transformer and TransformerDecoderLayer is nn.TransformerDecoderLayer


# -- channel dropout -------------------------------------------------------------------------------

@pytest.mark.parametrize("cls,shape", [(nn.Dropout1d, (4, 6, 3)), (nn.Dropout2d, (4, 6, 2, 3)),
                                       (nn.Dropout3d, (2, 6, 2, 2, 2))])
def test_channel_dropout(cls, shape) -> None:
    m = cls(0.5)
    y = m(flow.ones(*shape)).numpy()
    per_channel = y.reshape(shape[0], shape[1], -1)
    # each (sample, channel) is all zeros or all 1 / (1 - p)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    x = flow.ones(*shape)
    assert m.eval()(x) is x
    with pytest.raises(RuntimeError, match="Expected"):
        cls()(flow.ones(3))
    with pytest.raises(ValueError, match="between 0 and 1"):
        cls(1.5)
    assert np.all(cls(1.0)(flow.ones(*shape)).numpy() == 0)


def test_dropout2d_3d_input_is_batched_1d_as_pytorch() -> None:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = nn.Dropout2d(0.5)(flow.ones(4, 6, 3)).numpy()
    assert any("3D input" in str(x.message) for x in w)
    assert np.all(y.min(-1) == y.max(-1))


# -- integer arguments -----------------------------------------------------------------------------

_CONVS = [nn.Conv1d, nn.Conv2d, nn.ConvTranspose2d]


@pytest.mark.parametrize("cls", _CONVS)
@pytest.mark.parametrize("arg,kw", [
    ("in_channels", dict(in_channels=2.0, out_channels=2, kernel_size=3)),
    ("out_channels", dict(in_channels=2, out_channels=2.0, kernel_size=3)),
    ("kernel_size", dict(in_channels=2, out_channels=2, kernel_size=3.0)),
    ("kernel_size", dict(in_channels=2, out_channels=2, kernel_size=(3, 2.5))),
    ("stride", dict(in_channels=2, out_channels=2, kernel_size=3, stride=1.0)),
    ("groups", dict(in_channels=2, out_channels=2, kernel_size=3, groups=1.0)),
])
def test_conv_float_sizes_raise_type_error(cls, arg: str, kw: dict) -> None:
    with pytest.raises(TypeError, match=f"'{arg}'"):
        cls(**kw)


def test_conv_integer_like_sizes_accepted() -> None:
    m = nn.Conv2d(np.int64(2), 4, np.array([3, 2]), stride=[1, 2])
    assert m.kernel_size == (3, 2) and m.stride == (1, 2) and m.in_channels == 2
    assert nn.Conv1d(2, 4, (3,)).kernel_size == (3,)


def test_linear_float_features_raise_type_error() -> None:
    with pytest.raises(TypeError, match="'in_features'"):
        nn.Linear(2.0, 3)
    with pytest.raises(TypeError, match="'out_features'"):
        nn.Linear(2, 3.5)
    assert nn.Linear(np.int32(2), 3).in_features == 2


def test_pytorch_module_files_are_attributes_after_import_jflow() -> None:
    """Code with the import changed names classes by PyTorch's file path without importing
    the file (a ``safe_globals([...torch.nn.modules.sparse.Embedding...])`` list): a fresh
    interpreter, nothing imported but ``jflow``."""
    import subprocess
    import sys

    code = ("import jflow as torch\n"
            "m = torch.nn.modules\n"
            "assert m.sparse.Embedding is torch.nn.Embedding\n"
            "assert m.instancenorm.InstanceNorm2d is torch.nn.InstanceNorm2d\n"
            "assert m.flatten.Unflatten is torch.nn.Unflatten\n"
            "assert m.utils._pair(3) == (3, 3) and m.utils._triple((1, 2, 3)) == (1, 2, 3)\n"
            "assert m.linear.NonDynamicallyQuantizableLinear is torch.nn.Linear\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_every_pytorch_nn_modules_file_has_a_jflow_path() -> None:
    """Each public ``torch.nn.modules.<file>`` PyTorch has is importable under the mock, from
    jflow's own package or (modules jflow lacks: ``adaptive``, ``lazy``) the mock's layer."""
    import pkgutil

    import jflow.mock_torch as mock

    torch = pytest.importorskip("torch")
    # not yet in jflow: PyTorch 2.13's new chunked ``F.linear_cross_entropy`` and its options
    missing = {"linear_cross_entropy", "linear_cross_entropy_options"}
    files = sorted(m.name for m in pkgutil.iter_modules(torch.nn.modules.__path__)
                   if not m.name.startswith("_") and m.name not in missing)
    assert {"sparse", "instancenorm", "flatten", "utils", "rnn"} <= set(files)
    with mock.enable():
        for f in files:
            importlib.import_module(f"torch.nn.modules.{f}")
    for f in ("sparse", "instancenorm", "flatten", "utils"):
        importlib.import_module(f"jflow.nn.modules.{f}")


def test_multihead_attention_out_proj_class_name() -> None:
    """PyTorch's ``NonDynamicallyQuantizableLinear`` (MultiheadAttention's ``out_proj``) is
    jflow's ``Linear`` (no quantization to opt out of), so allow-lists naming it match."""
    from jflow.nn.modules.linear import NonDynamicallyQuantizableLinear

    assert NonDynamicallyQuantizableLinear is nn.Linear
    assert type(nn.MultiheadAttention(4, 2).out_proj) is NonDynamicallyQuantizableLinear
