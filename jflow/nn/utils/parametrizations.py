"""``flow.nn.utils.parametrizations``: ready-made parametrizations (see :mod:`.parametrize`),
as ``torch.nn.utils.parametrizations``: :func:`weight_norm`, :func:`spectral_norm`,
:func:`orthogonal`."""

from __future__ import annotations

from typing import Any

from ... import _C
from ... import linalg as _linalg
from ...autograd import no_grad
from ...creation import eye, randn, zeros_like
from ...dtypes import bool_, finfo
from ...tensor import Tensor
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from .parametrize import register_parametrization
from .weight_norm import _weight_norm, norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


class _WeightNorm(Module):
    """``weight = g * v / ||v||`` with the norm over every axis but ``dim`` (``-1``: the
    whole tensor); its ``right_inverse`` splits a weight into ``(g, v)``."""

    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Weight normalization of ``module.<name>`` as a parametrization: the magnitude in
    ``parametrizations.<name>.original0`` (the norm over every axis but ``dim``;
    ``dim=None``: one norm for the whole tensor) and the direction in ``original1``.
    A state dict of the older form (``<name>_g`` / ``<name>_v``,
    ``flow.nn.utils.weight_norm``) loads into it. Returns ``module``."""
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def old_keys(state_dict: dict, prefix: str, *_: Any) -> None:
        g, v = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g in state_dict and v in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v)

    module._register_load_state_dict_pre_hook(old_keys)
    return module


class _SpectralNorm(Module):
    """``weight / sigma``, ``sigma`` the largest singular value of the weight seen as a
    matrix (``dim`` first, the other axes flattened), estimated by power iteration: the
    buffers ``_u`` / ``_v`` hold the singular vectors' estimates and take
    ``n_power_iterations`` more steps at each training-mode read (without gradient, as
    PyTorch's). A 1-D weight is divided by its norm."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < max(ndim, 1):
            raise IndexError(f"spectral_norm(): dim {dim} is out of range for a {ndim}-D "
                             f"weight (expected in [{-ndim}, {ndim - 1}])")
        if n_power_iterations <= 0:
            raise ValueError(f"spectral_norm(): n_power_iterations must be positive, got "
                             f"{n_power_iterations}")
        self.dim = dim % ndim if ndim else 0
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            with no_grad():
                mat = self._as_matrix(weight.detach())
                h, w = mat.shape
                self.register_buffer("_u", F.normalize(mat.new_empty(h).normal_(0, 1), dim=0,
                                                       eps=eps))
                self.register_buffer("_v", F.normalize(mat.new_empty(w).normal_(0, 1), dim=0,
                                                       eps=eps))
            self._power_method(mat, 15)

    def _as_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.movedim(self.dim, 0)
        return weight.flatten(1)

    def _power_method(self, mat: Tensor, n: int) -> None:
        with no_grad():
            for _ in range(n):
                self._u.copy_(F.normalize(_C.mv(mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(_C.mv(mat.conj().t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._as_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        return weight / _C.vdot(u, _C.mv(mat, v))

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Spectral normalization (Miyato et al., 2018) of ``module.<name>`` as a
    parametrization: the weight divided by its largest singular value, estimated by
    ``n_power_iterations`` of power iteration per training-mode read (buffers
    ``parametrizations.<name>.0._u`` / ``._v``). ``dim``: the output axis (default 1 for
    transposed convolutions, else 0). Returns ``module``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"spectral_norm(): {type(module).__name__} has no parameter or buffer "
                         f"named '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# -- orthogonal ------------------------------------------------------------------------------

_ORTH_MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(q: Tensor) -> bool:
    """Whether the columns of ``q`` (every matrix of a batch) are orthonormal: ``q^H q``
    within ``10 n eps`` of the identity (PyTorch's test, so the same inputs count as
    orthogonal)."""
    n, k = q.shape[-2:]
    ident = eye(k, dtype=q.dtype, device=q.device)
    return bool(_C.allclose(q.mH @ q, ident, atol=10.0 * n * finfo(q.dtype).eps))


def _orthonormalize(a: Tensor) -> Tensor:
    """The Q of ``a = Q R`` (``a`` tall or square) with R's diagonal made non-negative, so Q
    is unique: geqrf's reflectors multiplied out, each column times the sign of its entry
    of R's diagonal (geqrf's diagonal is R's)."""
    reflectors, tau = _C.geqrf(a)
    q = _linalg.householder_product(reflectors, tau)
    return q * reflectors.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _Orthogonal(Module):
    """A matrix (or a batch: the last two axes) made orthogonal; a wide one is handled as its
    transpose, so that ``Q^T Q = I`` for a tall or square weight and ``Q Q^T = I`` for a
    wide one. From the original ``X`` (``n >= k`` after the transpose):

    * ``matrix_exp`` / ``cayley``: ``X``'s lower triangle, padded with zero columns to
      ``n x n``, gives the skew-symmetric ``A = L - L^H``; ``Q`` is the first ``k`` columns
      of ``exp(A)`` or of ``(I - A/2)^{-1} (I + A/2)``;
    * ``householder``: the product of the reflectors ``I - tau v v^T`` held below ``X``'s
      diagonal (``tau = 2 / (1 + |v|^2)``), each column times the integer part of ``X``'s
      diagonal entry: a sign, which gets no gradient.

    With trivialization (the default) the result is ``base @ Q``: the buffer ``base`` holds
    an orthogonal ``n x n`` matrix that :meth:`right_inverse` sets, and the original is reset
    to ``-I``, which every map sends to the identity (Lezcano-Casado 2019's dynamic
    trivialization: the optimizer then moves around ``base``)."""

    def __init__(self, weight: Tensor, orthogonal_map: str, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex():
            if orthogonal_map == "householder":
                # (PyTorch's error: complex reflectors give n(n-1) real parameters, too few
                # for the n^2 of a unitary matrix)
                raise ValueError("The householder parametrization does not support complex "
                                 "tensors.")
            raise NotImplementedError("orthogonal(): complex (unitary) weights are not "
                                      "supported: jflow's matrix_exp, linalg.solve and "
                                      "linalg.householder_product take real matrices")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        self.use_trivialization = use_trivialization
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2:]
        wide = n < k
        if wide:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map == "householder":
            v = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (v * v).sum(dim=-2))
            Q = _linalg.householder_product(v, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            low = X.tril()
            if n != k:
                pad = low.new_zeros(n, n - k).expand(*low.shape[:-2], -1, -1)
                low = _C.cat([low, pad], dim=-1)
            A = low - low.mH
            if self.orthogonal_map == "matrix_exp":
                Q = _C.matrix_exp(A)
            else:
                ident = eye(n, dtype=A.dtype, device=A.device)
                Q = _linalg.solve(_C.add(ident, A, alpha=-0.5), _C.add(ident, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        if self.use_trivialization:
            Q = self.base @ Q
        return Q.mT if wide else Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        """An original for the weight ``Q``. With trivialization: ``base`` becomes ``Q``
        when ``Q`` is square and orthogonal, else the orthogonal factor of its QR
        decomposition (a non-square ``Q`` first completed to ``n x n`` with random normal
        columns), and the original is ``-I``. Without: the inverse of ``householder``
        (geqrf's reflectors, their diagonal the signs of R's, flipped where geqrf made no
        reflection, ``tau == 0``); none for ``matrix_exp`` / ``cayley``
        (``NotImplementedError``: registration then keeps the weight as the original)."""
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape "
                             f"{tuple(self.shape)}. Got a tensor of shape {tuple(Q.shape)}.")
        with no_grad():
            given = Q
            n, k = Q.shape[-2:]
            wide = n < k
            if wide:
                Q = Q.mT
                n, k = k, n
            if not self.use_trivialization:
                if self.orthogonal_map != "householder":
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                X, tau = _C.geqrf(Q)
                sign = X.diagonal(dim1=-2, dim2=-1).sign()
                sign = _C.where(tau == 0.0, -sign, sign)
                diag = eye(n, k, dtype=bool_, device=X.device)
                X = _C.where(diag, sign.unsqueeze(-2), X)
                return X.mT if wide else X
            if n == k and _is_orthogonal(Q):
                base = Q.clone()
            else:
                if n != k:
                    fill = randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
                    Q = _C.cat([Q, fill], dim=-1)
                base = _orthonormalize(Q)
            self.base = base
            ident = eye(*given.shape[-2:], dtype=given.dtype, device=given.device)
            return zeros_like(given) - ident     # -I, a new tensor of the batch's shape


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Make ``module.<name>`` (a matrix or a batch of matrices) orthogonal as a
    parametrization: orthonormal columns for a tall or square weight, orthonormal rows for a
    wide one. ``orthogonal_map``: ``"matrix_exp"``, ``"cayley"`` or ``"householder"``
    (default: ``matrix_exp`` for a square weight, ``householder`` otherwise). With
    ``use_trivialization`` (default) an orthogonal ``base`` buffer
    (``parametrizations.<name>.0.base``) multiplies the map's result. The initial weight is
    the module's when it is orthogonal, else the Q of its QR decomposition (positive R
    diagonal) — with ``use_trivialization=False`` only for ``householder``: ``matrix_exp``
    and ``cayley`` map the weight itself. State-dict keys are PyTorch's. Real weights only.
    Returns ``module``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in _ORTH_MAPS:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    register_parametrization(module, name, orth, unsafe=True)
    return module
