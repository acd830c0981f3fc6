"""Every OpInfo of PyTorch's op test database against jflow (``jflow.testing.opinfo``).

Runs the first 6 value samples (float32, or the first dtype the entry supports) and the first
3 float64 gradient samples of each of PyTorch's OpInfos, and writes what is present, the pass
rates and every failing sample to ``benchmarks/results_opinfo_cpu.txt`` (or ``--out``).
Needs PyTorch (a test-only reference). Takes a few minutes on 2 cores.

    python benchmarks/opinfo_sweep.py [--forward 6] [--grad 3] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from jflow.testing import opinfo


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--forward", type=int, default=6)
    p.add_argument("--grad", type=int, default=3)
    p.add_argument("--only", nargs="*", default=None, help="OpInfo names to run")
    p.add_argument("--out", default=str(Path(__file__).with_name("results_opinfo_cpu.txt")))
    a = p.parse_args()
    t0 = time.time()
    db = opinfo.op_db()
    if a.only:
        db = [i for i in db if i.name in a.only]
    reports = []
    for info in db:
        reports.append(opinfo.check_opinfo(info, a.forward, a.grad))
        print(f"{reports[-1].key}: {'present' if reports[-1].present else 'missing'} "
              f"{len(reports[-1].failures())} failing", file=sys.stderr, flush=True)
    present = [r for r in reports if r.present]
    fw = [o for r in present for o in r.forward if o.kind != "skip"]
    gr = [o for r in present for o in r.grads if o.kind != "skip"]
    fw_ok = sum(o.kind == "pass" for o in fw)
    gr_ok = sum(o.kind == "pass" for o in gr)
    clean = sum(not r.failures() for r in present)
    lines = [
        "# PyTorch's OpInfo database against jflow (benchmarks/opinfo_sweep.py)",
        f"# {a.forward} value samples (float32, or the first dtype an entry supports) and "
        f"{a.grad} float64 gradient samples per OpInfo; {time.time() - t0:.0f} s",
        f"present: {len(present)} / {len(reports)}",
        f"forward samples equal: {fw_ok} / {len(fw)} ({100 * fw_ok / max(len(fw), 1):.1f}%)",
        f"gradient samples equal: {gr_ok} / {len(gr)} ({100 * gr_ok / max(len(gr), 1):.1f}%)",
        f"OpInfos passing every sample: {clean}",
        "",
        "## missing",
        *sorted(r.key for r in reports if not r.present),
        "",
        "## failing samples",
    ]
    for r in present:
        for f in r.failures():
            lines.append(f"{r.key}: {f}")
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:6]))


if __name__ == "__main__":
    main()
