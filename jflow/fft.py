"""``flow.fft``: PyTorch's ``torch.fft`` on jflow's DFT ops.

Each function is the api.yaml entry ``fft_<name>`` (argument parsing and defaults there; sizes,
dims, ``norm`` and dtype promotion in ``jflow/functional/functors/fft.py``; the three
transform ops ``fft_c2c`` / ``fft_r2c`` / ``fft_c2r`` in ``jflow/ops/fft.py``).
"""

from __future__ import annotations

from .functional import F

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftshift",
           "ifftshift", "fftfreq", "rfftfreq"]

fft = F.fft_fft
ifft = F.fft_ifft
fft2 = F.fft_fft2
ifft2 = F.fft_ifft2
fftn = F.fft_fftn
ifftn = F.fft_ifftn
rfft = F.fft_rfft
irfft = F.fft_irfft
rfft2 = F.fft_rfft2
irfft2 = F.fft_irfft2
rfftn = F.fft_rfftn
irfftn = F.fft_irfftn
hfft = F.fft_hfft
ihfft = F.fft_ihfft
hfft2 = F.fft_hfft2
ihfft2 = F.fft_ihfft2
hfftn = F.fft_hfftn
ihfftn = F.fft_ihfftn
fftshift = F.fft_fftshift
ifftshift = F.fft_ifftshift
fftfreq = F.fft_fftfreq
rfftfreq = F.fft_rfftfreq
