"""jflow: an eager tensor library on JAX, built the way OneFlow builds its op system.

``import jflow as flow``: tensors and eager ops (``flow.tensor``, ``flow.add``...), the
functional API generated from api.yaml (``flow._C``), ops as JAX primitives
(``flow.ops``), kernels (``flow.kernels``), and interop with JAX (``flow.utils``).
"""

from . import _jax_setup  # noqa: F401  (x64 on, before anything touches JAX)
from . import dtypes
from .device import device
from .dtypes import (bfloat16, complex64, complex128, float16, float32, float64,
                     get_default_dtype, int8, int16, int32, int64, set_default_dtype, uint8)
from .dtypes import bool_ as bool  # noqa: A001  (flow.bool, as OneFlow/PyTorch)
from .dtypes import dtype, promote_types
from .tensor import Size, Tensor, is_tensor

float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
cfloat = complex64
cdouble = complex128

from . import ops, kernels  # noqa: E402  (ops first: the op layer pulls in the layers below it)
from .kernels import ffi as _ffi  # noqa: E402,F401  (the "ffi" backend: defines ops, so after ops)
from . import views  # noqa: E402,F401  (views alias their base: before the functional layer)
from . import functional  # noqa: E402
from . import _C  # noqa: E402
from .autograd import rules as _grad_rules  # noqa: E402,F401  (needs the functional layer)
from . import tensor_methods as _tensor_methods  # noqa: E402,F401
from . import tensor_indexing as _tensor_indexing  # noqa: E402,F401  (after: varargs forms win)
from . import tensor_complex as _tensor_complex  # noqa: E402,F401  (x.real, x.conj() ...)
from .tensor_complex import is_complex, is_conj, resolve_neg  # noqa: E402
from . import utils  # noqa: E402
from . import config, sysconfig  # noqa: E402  (C++ ops: load_library, build flags)
from . import env  # noqa: E402  (multi-process: init_distributed, ranks)
from . import distributed  # noqa: E402  (torch.distributed's process-group API on env)
from .creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full,  # noqa: E402
                       full_like, linspace, ones, ones_like, rand, rand_like, randint,
                       randint_like, randn, randn_like, tensor, zeros, zeros_like)
from .creation import bernoulli, multinomial, randperm  # noqa: E402
from .creation import empty_strided, logspace, normal  # noqa: E402  (0-d tensor bounds, overloads)
from .creation import frombuffer  # noqa: E402  (bytes-like objects, as torch.frombuffer)
from .storage import UntypedStorage, asarray  # noqa: E402  (byte storages: jflow.storage)
from .tensor_methods import gradient, histogram, histogramdd, unravel_index  # noqa: E402
from .tensor_methods import addcdiv, addcmul, lerp  # noqa: E402
from .tensor_methods import (atleast_1d, atleast_2d, atleast_3d,  # noqa: E402
                             broadcast_shapes, broadcast_tensors, can_cast,
                             detach, fill, is_floating_point, is_nonzero, is_same_size,
                             is_signed, numel, positive, result_type, scalar_tensor, select)
from .tensor_methods import INPLACE_FUNCTIONS as _INPLACE  # noqa: E402  (torch.<op>_)
globals().update(_INPLACE)
from . import linalg  # noqa: E402  (flow.linalg, as torch.linalg)
from . import special  # noqa: E402  (flow.special, as torch.special)
from . import fft, signal  # noqa: E402  (flow.fft / flow.signal, as torch's)
from .linalg import chain_matmul, einsum, tensordot  # noqa: E402  (varargs / nested dims)
from .linalg import torch_lu as lu  # noqa: E402  (torch.lu: LU and pivots, not linalg.lu)
from .tensor_indexing import block_diag, cartesian_prod, meshgrid  # noqa: E402  (varargs)
from .random import (Generator, default_generator, get_rng_state, initial_seed,  # noqa: E402
                     manual_seed, seed, set_rng_state)
from .sharding import placement, sbp  # noqa: E402
from . import experimental  # noqa: E402
from .user_op_builder import user_op_builder  # noqa: E402
from . import autograd  # noqa: E402
from .autograd import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: E402
from . import nn, optim  # noqa: E402
from .nn.utils.weight_norm import _weight_norm, norm_except_dim  # noqa: E402,F401  (torch's)
from .compiler import jit  # noqa: E402
from .lazy_mode import lazy, sync  # noqa: E402  (lazy eager: record, run fused when read)
from .serialization import load, save  # noqa: E402
from . import accelerator, amp, backends, cpu, cuda, onnx  # noqa: E402
from . import func  # noqa: E402  (torch.func's transforms, Tensors in and out)
from .utils.dlpack import from_dlpack, to_dlpack  # noqa: E402
from . import profiler  # noqa: E402  (torch.profiler's shape: ops, compiled steps, ranges)
from .amp import (autocast, inference_mode, is_autocast_enabled,  # noqa: E402
                  is_inference_mode_enabled)
from .amp.autocast_mode import (autocast_decrement_nesting,  # noqa: E402  (torch.*'s state)
                                autocast_increment_nesting, clear_autocast_cache,
                                get_autocast_dtype, is_autocast_cache_enabled,
                                set_autocast_cache_enabled, set_autocast_dtype,
                                set_autocast_enabled)
from .amp.autocast_legacy import *  # noqa: E402,F401,F403  (get_autocast_cpu_dtype ...)
from .backends import get_float32_matmul_precision, set_float32_matmul_precision  # noqa: E402
from .compiler import compile  # noqa: E402,A004  (flow.compile, as torch.compile)
from .dtypes import finfo, iinfo  # noqa: E402

# PyTorch-ecosystem surface (libraries that `import torch` reach for these; docs/porting.md
# "Libraries"): constants, limited-support dtypes, legacy tensor types, the default device,
# torch.hub / torch.distributions
import math as _math  # noqa: E402
pi = _math.pi
e = _math.e
inf = _math.inf
nan = _math.nan
del _math
from .dtypes import (float8_e4m3fn, float8_e4m3fnuz, float8_e5m2,  # noqa: E402
                     float8_e5m2fnuz, float8_e8m0fnu, uint16, uint32, uint64)
from ._legacy_types import (BFloat16Tensor, BoolTensor, ByteTensor, CharTensor,  # noqa: E402
                            DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor,
                            ShortTensor)
from .default_device import get_default_device, set_default_device  # noqa: E402
from .threads import get_num_threads, set_num_threads  # noqa: E402  (XLA's CPU pool)
from . import hub, distributions  # noqa: E402

# Memory formats and layouts (accepted, values unchanged: jflow arrays are row-major), the
# *_copy view variants and other compositions PyTorch's op database names
from .memory_format import (channels_last, channels_last_3d,  # noqa: E402
                            contiguous_format, layout, memory_format, preserve_format, strided)
from .tensor_methods import clone  # noqa: E402  (torch.clone with memory_format=)
from .view_copies import *  # noqa: E402,F401,F403  (alias_copy ... view_copy, unsafe_split)
from .composites import (as_strided_scatter, constant_pad_nd, empty_permuted,  # noqa: E402
                         native_batch_norm, native_group_norm, native_layer_norm,
                         nonzero_static, pca_lowrank, svd_lowrank)
from .composites import (alpha_dropout_, channel_shuffle, conv_tbc, convolution,  # noqa: E402
                         diagonal, dropout_, feature_alpha_dropout_, feature_dropout,
                         feature_dropout_, frobenius_norm, gru_cell, lstm_cell,
                         native_channel_shuffle, native_dropout, nuclear_norm, orgqr,
                         pixel_shuffle, pixel_unshuffle, resize_as_, rnn_relu_cell,
                         rnn_tanh_cell)
from .composites import (affine_grid_generator, as_strided_, conj_physical_,  # noqa: E402
                         embedding_renorm_, grid_sampler, grid_sampler_2d, grid_sampler_3d,
                         is_distributed, native_norm, segment_reduce)
from .composites import torch_range as range  # noqa: E402,A001  (the deprecated torch.range)
from .control_flow import cond  # noqa: E402  (torch.cond: structured control flow)
from .removed import eig, lstsq, matrix_rank, solve, symeig  # noqa: E402  (raise, as PyTorch)
from .introspection import (get_device, get_device_module, is_inference,  # noqa: E402
                            is_neg, is_storage, sym_float,
                            sym_int, sym_ite, sym_max, sym_min, sym_not, sym_sqrt, sym_sum,
                            typename)
from .global_settings import (are_deterministic_algorithms_enabled,  # noqa: E402
                              compiled_with_cxx11_abi, get_deterministic_debug_mode,
                              get_num_interop_threads, init_num_threads,
                              is_deterministic_algorithms_warn_only_enabled,
                              is_vulkan_available, is_warn_always_enabled,
                              set_default_tensor_type, set_deterministic_debug_mode,
                              set_flush_denormal, set_num_interop_threads, set_printoptions,
                              set_warn_always, use_deterministic_algorithms)
from .func import vmap  # noqa: E402  (torch.vmap is torch.func.vmap)
from .views import as_strided  # noqa: E402  (torch.as_strided: Tensor.as_strided's function)
from .autograd.anomaly_mode import (is_anomaly_check_nan_enabled,  # noqa: E402
                                    is_anomaly_enabled, set_anomaly_enabled)
from .tensor_methods.compat import ormqr  # noqa: E402  (torch.ormqr: the method's function)

# flow.<op>(...) for every public functional API function not shadowed above
_g = globals()
for _name in _C.__all__:
    if _name not in _g:
        _g[_name] = getattr(_C, _name)
del _g, _name

__version__ = "0.1.0"

#: ``torch.*`` families jflow does not have (no sparse or quantized layouts, no vendor
#: libraries): reaching one raises an AttributeError that says so (``hasattr`` stays False)
_UNSUPPORTED = (("sparse_", "sparse tensors"), ("quantize", "quantized tensors"),
                ("q_", "quantized tensors"), ("fake_quantize", "quantized tensors"),
                ("fbgemm_", "FBGEMM kernels"), ("mkldnn_", "oneDNN (MKL-DNN) tensors"),
                ("miopen_", "MIOpen kernels"), ("cudnn_", "cuDNN kernels"))
#: PyTorch's functions of sparse tensors only (the ``*_copy`` forms of their parts' views,
#: sparse products): refused as above
_SPARSE_COPIES = frozenset({"indices_copy", "values_copy", "crow_indices_copy",
                            "col_indices_copy", "ccol_indices_copy", "row_indices_copy",
                            "smm", "spmm", "hspmm", "sspaddmm", "dsmm", "hsmm", "saddmm",
                            "resize_as_sparse_"})


def __getattr__(name: str) -> object:
    if name in _SPARSE_COPIES:
        raise AttributeError(f"module 'jflow' has no attribute '{name}': jflow has no sparse "
                             f"tensors (torch.{name} has no jflow equivalent; see "
                             f"docs/porting.md)")
    for prefix, what in _UNSUPPORTED:
        if name.startswith(prefix):
            raise AttributeError(f"module 'jflow' has no attribute '{name}': jflow has no "
                                 f"{what} (torch.{name} has no jflow equivalent; see "
                                 f"docs/porting.md)")
    raise AttributeError(f"module 'jflow' has no attribute '{name}'")
