"""``flow.special``: PyTorch's ``torch.special`` on jflow's ops and functors.

New functions are the api.yaml entries ``special_<name>`` (ops in ``jflow/ops/special.py``,
functors in ``jflow/functional/functors/special.py``); the others are PyTorch's aliases of
top-level functions (``expit`` is ``sigmoid``, ``gammaln`` is ``lgamma``, ``psi`` is
``digamma``, ``multigammaln`` is ``mvlgamma``, ``gammainc`` is ``igamma``...).
"""

from __future__ import annotations

from .functional import F

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc",
    "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1", "i1e",
    "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax",
    "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
    "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "sinc", "softmax", "spherical_bessel_j0", "xlog1py",
    "xlogy", "zeta",
]

# aliases of top-level functions
expit = F.sigmoid
logit = F.logit
erf = F.erf
erfc = F.erfc
erfinv = F.erfinv
exp2 = F.exp2
expm1 = F.expm1
log1p = F.log1p
gammaln = F.lgamma
digamma = F.digamma
psi = F.digamma
polygamma = F.polygamma
multigammaln = F.mvlgamma
xlogy = F.xlogy
sinc = F.sinc
round = F.round  # noqa: A001  (torch.special.round)
softmax = F.softmax
log_softmax = F.log_softmax
logsumexp = F.logsumexp
i0 = F.i0
gammainc = F.igamma
gammaincc = F.igammac

# torch.special's own functions
i0e = F.special_i0e
i1 = F.special_i1
i1e = F.special_i1e
ndtr = F.special_ndtr
ndtri = F.special_ndtri
log_ndtr = F.special_log_ndtr
erfcx = F.special_erfcx
entr = F.special_entr
xlog1py = F.special_xlog1py
zeta = F.special_zeta
bessel_j0 = F.special_bessel_j0
bessel_j1 = F.special_bessel_j1
bessel_y0 = F.special_bessel_y0
bessel_y1 = F.special_bessel_y1
modified_bessel_i0 = F.special_modified_bessel_i0
modified_bessel_i1 = F.special_modified_bessel_i1
modified_bessel_k0 = F.special_modified_bessel_k0
modified_bessel_k1 = F.special_modified_bessel_k1
scaled_modified_bessel_k0 = F.special_scaled_modified_bessel_k0
scaled_modified_bessel_k1 = F.special_scaled_modified_bessel_k1
spherical_bessel_j0 = F.special_spherical_bessel_j0
airy_ai = F.special_airy_ai
chebyshev_polynomial_t = F.special_chebyshev_polynomial_t
chebyshev_polynomial_u = F.special_chebyshev_polynomial_u
chebyshev_polynomial_v = F.special_chebyshev_polynomial_v
chebyshev_polynomial_w = F.special_chebyshev_polynomial_w
shifted_chebyshev_polynomial_t = F.special_shifted_chebyshev_polynomial_t
shifted_chebyshev_polynomial_u = F.special_shifted_chebyshev_polynomial_u
shifted_chebyshev_polynomial_v = F.special_shifted_chebyshev_polynomial_v
shifted_chebyshev_polynomial_w = F.special_shifted_chebyshev_polynomial_w
hermite_polynomial_h = F.special_hermite_polynomial_h
hermite_polynomial_he = F.special_hermite_polynomial_he
laguerre_polynomial_l = F.special_laguerre_polynomial_l
legendre_polynomial_p = F.special_legendre_polynomial_p
