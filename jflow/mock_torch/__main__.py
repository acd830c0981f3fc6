"""``eval $(python -m jflow.mock_torch [--lazy] [--verbose])``: shell lines that make
``import torch`` give jflow in the programs started from that shell (a ``PYTHONPATH``
entry whose ``torch`` package enables :mod:`jflow.mock_torch`);
``eval $(python -m jflow.mock_torch disable)`` removes them."""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Sequence
from pathlib import Path

SHIM = str(Path(__file__).resolve().parent / "shim")


def lines(argv: Sequence[str] | None = None) -> list[str]:
    p = argparse.ArgumentParser(prog="python -m jflow.mock_torch", description=__doc__)
    p.add_argument("action", nargs="?", choices=["enable", "disable"], default="enable")
    p.add_argument("--lazy", action="store_true", help="missing names load as placeholders")
    p.add_argument("--verbose", action="store_true", help="print placeholders when used")
    args = p.parse_args(argv)
    rest = [e for e in os.environ.get("PYTHONPATH", "").split(os.pathsep) if e and e != SHIM]
    if args.action == "disable":
        path = os.pathsep.join(rest)
        return ([f"export PYTHONPATH={shlex.quote(path)}"] if path else ["unset PYTHONPATH"]) + [
            "unset JFLOW_MOCK_TORCH_LAZY JFLOW_MOCK_TORCH_VERBOSE"]
    return [f"export PYTHONPATH={shlex.quote(os.pathsep.join([SHIM, *rest]))}",
            f"export JFLOW_MOCK_TORCH_LAZY={int(args.lazy)}",
            f"export JFLOW_MOCK_TORCH_VERBOSE={int(args.verbose)}"]


if __name__ == "__main__":
    print("; ".join(lines()))
