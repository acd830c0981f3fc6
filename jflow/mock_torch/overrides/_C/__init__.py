"""``torch._C``: the bits of PyTorch's C++ binding programs reach for directly, answered as a
PyTorch build without JIT fusers, custom kernels or CUDA answers them (jflow's own
``jflow._C`` is its functional API, another thing). Dispatch keys exist for probing; no op
has a kernel registered for any of them."""

from __future__ import annotations

import enum
from typing import Any

import jflow

__mock_fallback__ = False

Generator = jflow.Generator
_VariableFunctions = jflow  # torch._C._VariableFunctions.<op>: the same ops as torch.<op>


#: PyTorch's dispatch key names (for probing: jflow dispatches by op, not by key)
_KEY_NAMES = """
    Undefined CompositeExplicitAutogradNonFunctional CompositeExplicitAutograd
    CompositeImplicitAutogradNestedTensor CompositeImplicitAutograd AutogradNestedTensor
    AutogradOther Autograd Conjugate ZeroTensor Negative BackendSelect ADInplaceOrView
    PythonTLSSnapshot Python FuncTorchDynamicLayerFrontMode
    FuncTorchDynamicLayerBackMode FuncTorchBatchedDecomposition FuncTorchBatched
    FuncTorchVmapMode FuncTorchGradWrapper PythonDispatcher PreDispatch Functionalize
    AutocastCPU AutocastMPS AutocastXPU AutocastHPU AutocastIPU AutocastCUDA
    AutocastPrivateUse1 Dense StartOfDenseBackends CPU CUDA HIP XLA MPS IPU XPU HPU VE
    Lazy MTIA MAIA PrivateUse1 PrivateUse2 PrivateUse3 Meta EndOfDenseBackends Quantized
    StartOfQuantizedBackends QuantizedCPU QuantizedCUDA QuantizedHIP QuantizedXLA
    QuantizedMPS QuantizedIPU QuantizedXPU QuantizedHPU QuantizedVE QuantizedLazy
    QuantizedMTIA QuantizedMAIA QuantizedPrivateUse1 QuantizedPrivateUse2
    QuantizedPrivateUse3 QuantizedMeta EndOfQuantizedBackends Sparse
    StartOfSparseBackends SparseCPU SparseCUDA SparseHIP SparseXLA SparseMPS SparseIPU
    SparseXPU SparseHPU SparseVE SparseLazy SparseMTIA SparseMAIA SparsePrivateUse1
    SparsePrivateUse2 SparsePrivateUse3 SparseMeta EndOfSparseBackends SparseCsr
    StartOfSparseCsrBackends SparseCsrCPU SparseCsrCUDA SparseCsrHIP SparseCsrXLA
    SparseCsrMPS SparseCsrIPU SparseCsrXPU SparseCsrHPU SparseCsrVE SparseCsrLazy
    SparseCsrMTIA SparseCsrMAIA SparseCsrPrivateUse1 SparseCsrPrivateUse2
    SparseCsrPrivateUse3 SparseCsrMeta EndOfSparseCsrBackends NestedTensor
    StartOfNestedTensorBackends NestedTensorCPU NestedTensorCUDA NestedTensorHIP
    NestedTensorXLA NestedTensorMPS NestedTensorIPU NestedTensorXPU NestedTensorHPU
    NestedTensorVE NestedTensorLazy NestedTensorMTIA NestedTensorMAIA
    NestedTensorPrivateUse1 NestedTensorPrivateUse2 NestedTensorPrivateUse3
    NestedTensorMeta EndOfNestedTensorBackends AutogradFunctionality
    StartOfAutogradFunctionalityBackends AutogradCPU AutogradCUDA AutogradHIP
    AutogradXLA AutogradMPS AutogradIPU AutogradXPU AutogradHPU AutogradVE AutogradLazy
    AutogradMTIA AutogradMAIA AutogradPrivateUse1 AutogradPrivateUse2
    AutogradPrivateUse3 AutogradMeta EndOfAutogradFunctionalityBackends
""".split()
DispatchKey = enum.Enum("DispatchKey", _KEY_NAMES, start=0)


class DispatchKeySet:
    """A set of :class:`DispatchKey` (for probing)."""

    def __init__(self, *keys: Any) -> None:
        self._keys = frozenset(k for k in keys if isinstance(k, DispatchKey))

    def has(self, key: DispatchKey) -> bool:
        """Whether ``key`` is in the set."""
        return key in self._keys

    def __or__(self, other: DispatchKeySet) -> DispatchKeySet:
        return DispatchKeySet(*self._keys, *other._keys)

    def add(self, key: DispatchKey) -> DispatchKeySet:
        """A set with ``key`` added."""
        return DispatchKeySet(*self._keys, key)

    def remove(self, key: DispatchKey) -> DispatchKeySet:
        """A set without ``key``."""
        return DispatchKeySet(*(k for k in self._keys if k is not key))


class _ExcludeDispatchKeyGuard:
    """A context excluding dispatch keys: there is no key-based dispatch to exclude from."""

    def __init__(self, keyset: Any) -> None:
        self.keyset = keyset

    def __enter__(self) -> _ExcludeDispatchKeyGuard:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


def _dispatch_has_kernel_for_dispatch_key(name: str, key: Any) -> bool:
    """False: no operator has kernels registered through PyTorch's dispatcher in jflow."""
    return False


def _dispatch_has_kernel(name: str) -> bool:
    """False (see :func:`_dispatch_has_kernel_for_dispatch_key`)."""
    return False


def _get_tracing_state() -> None:
    """None: ``torch.jit.trace`` never traces in jflow."""
    return None


def _log_api_usage_once(event: str) -> None:
    """PyTorch's usage logging: nothing is logged."""


def _get_cudnn_enabled() -> bool:
    """jflow has no cuDNN flags with an effect (see ``torch.backends.cudnn``)."""
    return bool(getattr(jflow.backends.cudnn, "enabled", False))


def _cuda_getDeviceCount() -> int:  # noqa: N802  (PyTorch's name)
    """The number of CUDA devices JAX sees."""
    return int(jflow.cuda.device_count())


def _jit_set_profiling_mode(flag: bool) -> bool:
    """TorchScript executor setting: TorchScript does not exist in jflow, so the previous
    value (False) is returned and nothing changes."""
    return False


_jit_set_profiling_executor = _jit_set_profiling_mode


def _jit_set_texpr_fuser_enabled(flag: bool) -> None:
    """TorchScript fuser switch: there is no TorchScript fuser in jflow."""


_jit_set_nvfuser_enabled = _jit_set_texpr_fuser_enabled
_jit_override_can_fuse_on_cpu = _jit_set_texpr_fuser_enabled
_jit_override_can_fuse_on_gpu = _jit_set_texpr_fuser_enabled


def _jit_texpr_fuser_enabled() -> bool:
    """False: no TorchScript fuser."""
    return False


def _get_default_device() -> str:
    """The default device's type."""
    return str(jflow.get_default_device())


def _set_grad_enabled(mode: bool) -> None:
    """``torch._C._set_grad_enabled``: as ``torch.set_grad_enabled`` used as a function."""
    jflow.set_grad_enabled(mode)


def _is_torch_function_mode_enabled() -> bool:
    """False: jflow has no ``__torch_function__`` modes."""
    return False


def _has_torch_function(args: Any) -> bool:
    """False: jflow tensors have no ``__torch_function__`` overrides."""
    return False


def _has_torch_function_unary(arg: Any) -> bool:
    """False (see :func:`_has_torch_function`)."""
    return False


_has_torch_function_variadic = _has_torch_function_unary
