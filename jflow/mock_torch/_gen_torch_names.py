"""Write ``torch_names.json.gz`` (beside this file) from an installed PyTorch: its module list
and its public modules' names, which :func:`jflow.mock_torch.torch_has` reads. Run by hand
when jflow follows a new PyTorch release::

    python -m jflow.mock_torch._gen_torch_names jflow/mock_torch/torch_names.json.gz
"""

from __future__ import annotations

import gzip
import json
import os
import sys


def main(path: str) -> None:
    """Write the name list of the installed PyTorch to ``path``."""
    import sys

    import torch  # noqa: PLC0415  (a reference, only when run by hand)


    root = os.path.dirname(torch.__file__)
    mods = set()
    for dp, dns, fns in os.walk(root):
        rel = os.path.relpath(dp, os.path.dirname(root))
        parts = rel.split(os.sep)
        if "__pycache__" in parts or parts[-1] in ("include", "share", "bin", "lib", "test"):
            dns[:] = []
            continue
        if "__init__.py" in fns:
            mods.add(".".join(parts))
            for f in fns:
                if f.endswith(".py") and f != "__init__.py":
                    mods.add(".".join(parts) + "." + f[:-3])
        else:
            dns[:] = []
    mods = {m for m in mods if "._vendor" not in m and ".testing._internal" not in m}
    import torch._dynamo, torch.fx, torch.distributions, torch.utils.checkpoint, torch.jit  # noqa
    import torch.utils._pytree, torch.nn.attention, torch.hub, torch.ao.quantization  # noqa
    def keep(k: str) -> bool:
        parts = k.split(".")
        if len(parts) > 2 and parts[1].startswith("_") and k not in ("torch._dynamo.config",):
            return False
        if k in ("torch._meta_registrations", "torch._numpy", "torch._tensor_docs",
                 "torch._torch_docs", "torch._ops", "torch._tensor_str"):
            return False
        private = ("_inductor", "_functorch", "fx.experimental", "_export", "_higher_order",
                   "_subclasses", "_prims", "_refs", "_decomp", "_library", "_strobelight",
                   "_logging", "_guards", "onnx._internal", "distributed._")
        return (all(not p.startswith("_") for p in parts[2:])
                and not any(x in k for x in private))
    attrs = {k: sorted(a for a in dir(v) if not a.startswith("__"))
             for k, v in sorted(sys.modules.items()) if k.startswith("torch") and v is not None
             and (k == "torch" or k.startswith("torch.")) and keep(k)}
    attrs["torch.Tensor"] = sorted(a for a in dir(torch.Tensor) if not a.startswith("__"))
    out = {"torch": torch.__version__, "modules": sorted(mods), "attrs": attrs}
    data = gzip.compress(json.dumps(out, separators=(",", ":")).encode(), mtime=0)
    open(path, "wb").write(data)
    print(len(mods), len(attrs), len(data))


if __name__ == "__main__":
    main(sys.argv[1])
