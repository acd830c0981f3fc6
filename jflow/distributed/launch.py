"""``python -m jflow.distributed.launch``: start the processes of a multi-process jflow program
on this host, as OneFlow's ``oneflow.distributed.launch`` and PyTorch's ``torchrun`` do.

    python -m jflow.distributed.launch --nproc_per_node 2 --local_device_count 4 \\
        examples/digits_multiprocess.py --steps 8

starts ``--nproc_per_node`` copies of the script, each with the variables that
:func:`jflow.env.init_distributed` (called with no arguments) and
``flow.distributed.init_process_group`` read:

==========================  ===============================================================
``MASTER_ADDR``             host of process 0, which serves the coordinator
``MASTER_PORT``             its port
``WORLD_SIZE``              processes in all: ``nproc_per_node * nnodes``
``RANK``                    this process: ``node_rank * nproc_per_node + local_rank``
``LOCAL_RANK``              this process among those of this host: ``0..nproc_per_node-1``
``LOCAL_WORLD_SIZE``        ``nproc_per_node``
``JFLOW_LOCAL_DEVICE_COUNT``  CPU devices per process (only with ``--local_device_count``)
``PYTHONUNBUFFERED``        ``1``: each process's lines reach the launcher as printed
==========================  ===============================================================

Output: the launcher reads each process's stdout and stderr and writes them to its own, a
whole line at a time, each line prefixed with the process's rank (``[rank1]: loss 0.52``, as
torchrun prefixes them), so lines of different processes never mix mid-line.
``--no_prefix`` passes the processes' output through untouched (their own streams).

(a *rank* here is a process, as in PyTorch; ``flow.placement`` ranks devices). Several hosts:
run the launcher once per host with the same ``--nnodes``, ``--master_addr`` and
``--master_port`` and that host's ``--node_rank``.

The port: with ``--nnodes 1`` and no ``--master_port`` the launcher picks a free one (so two
programs on one host do not collide); with several hosts every launcher must name the same
port, so the default is then torchrun's fixed ``29500``.

The launcher waits for its processes. When one fails (nonzero exit), the others would block in
their next collective, so it terminates them (SIGTERM, then SIGKILL after ``--kill_timeout``
seconds) and exits with the failed process's code (128 + signal number for a process killed
by a signal, as a shell reports it). Ctrl-C or SIGTERM to the launcher is passed on to the
processes the same way.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from types import FrameType
from typing import Any

__all__ = ["main", "build_envs", "free_port", "DEFAULT_MULTI_NODE_PORT"]

#: the port every host uses when several are launched and none is named (torchrun's default)
DEFAULT_MULTI_NODE_PORT = 29500
_POLL_S = 0.1


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now (the OS picks it; a race with another program taking
    it before process 0 binds it is possible but unlikely)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m jflow.distributed.launch",
        description="Start the processes of a multi-process jflow program on this host "
                    "(the environment of torchrun / oneflow.distributed.launch).")
    ap.add_argument("--nproc_per_node", "--nproc-per-node", type=int, default=1,
                    help="processes to start on this host (default 1)")
    ap.add_argument("--nnodes", type=int, default=1, help="hosts in all (default 1)")
    ap.add_argument("--node_rank", "--node-rank", type=int, default=0,
                    help="this host's index, 0..nnodes-1 (default 0)")
    ap.add_argument("--master_addr", "--master-addr", default="127.0.0.1",
                    help="host of process 0, which serves the coordinator (default 127.0.0.1)")
    ap.add_argument("--master_port", "--master-port", type=int, default=None,
                    help="the coordinator's port (default: a free port with --nnodes 1, "
                         f"else {DEFAULT_MULTI_NODE_PORT})")
    ap.add_argument("--local_device_count", "--local-device-count", type=int, default=None,
                    help="CPU devices per process (sets JFLOW_LOCAL_DEVICE_COUNT, read by "
                         "flow.env.init_distributed; default: inherited, else JAX's 1)")
    ap.add_argument("--kill_timeout", "--kill-timeout", type=float, default=5.0,
                    help="seconds between SIGTERM and SIGKILL when stopping the processes "
                         "after one failed (default 5)")
    ap.add_argument("--no_prefix", "--no-prefix", action="store_true",
                    help="pass each process's output through as it is (default: whole "
                         "lines, each prefixed with [rankN]: )")
    ap.add_argument("-m", "--module", action="store_true",
                    help="run the script argument as a module (python -m MODULE)")
    ap.add_argument("script", help="the Python script (or module, with -m) every process runs")
    ap.add_argument("script_args", nargs=argparse.REMAINDER,
                    help="arguments passed on to the script")
    return ap


def _check(args: argparse.Namespace) -> None:
    where = "jflow.distributed.launch"
    if args.nproc_per_node < 1:
        raise SystemExit(f"{where}: --nproc_per_node must be >= 1, got {args.nproc_per_node}")
    if args.nnodes < 1:
        raise SystemExit(f"{where}: --nnodes must be >= 1, got {args.nnodes}")
    if not 0 <= args.node_rank < args.nnodes:
        raise SystemExit(f"{where}: --node_rank must be in 0..{args.nnodes - 1} "
                         f"(--nnodes {args.nnodes}), got {args.node_rank}")
    if args.local_device_count is not None and args.local_device_count < 1:
        raise SystemExit(f"{where}: --local_device_count must be >= 1, got "
                         f"{args.local_device_count}")
    if args.master_port is not None and not 0 < args.master_port < 65536:
        raise SystemExit(f"{where}: --master_port must be in 1..65535, got {args.master_port}")


def build_envs(nproc_per_node: int, nnodes: int = 1, node_rank: int = 0,
               master_addr: str = "127.0.0.1", master_port: int = DEFAULT_MULTI_NODE_PORT,
               local_device_count: int | None = None,
               base: dict[str, str] | None = None) -> list[dict[str, str]]:
    """The environment of each process this host starts: ``base`` (default ``os.environ``)
    plus the launcher variables (see the module docstring)."""
    flags = sys.modules.get("jflow._xla_cpu_flags")  # imported with the package (-m)
    if base is not None:
        base = dict(base)
    elif flags is not None:  # its XLA flag is jflow's import's, not the user's
        base = flags.users_environ(dict(os.environ))
    else:
        base = dict(os.environ)
    common = {"MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port),
              "WORLD_SIZE": str(nproc_per_node * nnodes),
              "LOCAL_WORLD_SIZE": str(nproc_per_node), "PYTHONUNBUFFERED": "1"}
    if local_device_count is not None:
        common["JFLOW_LOCAL_DEVICE_COUNT"] = str(local_device_count)
    return [dict(base, **common, RANK=str(node_rank * nproc_per_node + local),
                 LOCAL_RANK=str(local))
            for local in range(nproc_per_node)]


def _exit_code(returncode: int) -> int:
    """A child's return code as a shell reports it (killed by signal N: 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def _stop(procs: Sequence[subprocess.Popen], kill_timeout: float) -> None:
    """SIGTERM every process still running, then SIGKILL those left after ``kill_timeout``."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    deadline = time.monotonic() + kill_timeout
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(_POLL_S)
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()


_WRITE_LOCK = threading.Lock()


def _relay(stream: Any, rank: int, out: Any) -> None:
    """Copy a process's output stream to ``out`` line by line, each line prefixed with its
    rank and written whole under one lock (a last line without a newline gets one)."""
    prefix = f"[rank{rank}]: ".encode()
    for line in iter(stream.readline, b""):
        if not line.endswith(b"\n"):
            line += b"\n"
        with _WRITE_LOCK:
            if hasattr(out, "buffer"):  # a real stream: the bytes as the process wrote them
                out.buffer.write(prefix + line)
            else:  # a text-only stream (a test's capture)
                out.write((prefix + line).decode(errors="replace"))
            out.flush()
    stream.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line, start the processes, wait for them; returns (and, run as a
    program, exits with) 0 when all succeeded, else the first failure's exit code."""
    args = _parser().parse_args(argv)
    _check(args)
    port = args.master_port
    if port is None:
        port = free_port() if args.nnodes == 1 else DEFAULT_MULTI_NODE_PORT
    envs = build_envs(args.nproc_per_node, args.nnodes, args.node_rank, args.master_addr, port,
                      args.local_device_count)
    cmd = [sys.executable, "-u", *(["-m"] if args.module else []), args.script,
           *args.script_args]
    procs: list[subprocess.Popen] = []
    relays: list[threading.Thread] = []
    stopped: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopped.append(signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for env in envs:
            if args.no_prefix:
                procs.append(subprocess.Popen(cmd, env=env))
                continue
            p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            procs.append(p)
            for stream, out in ((p.stdout, sys.stdout), (p.stderr, sys.stderr)):
                t = threading.Thread(target=_relay, args=(stream, int(env["RANK"]), out),
                                     daemon=True)
                t.start()
                relays.append(t)
        while True:
            if stopped:
                print(f"jflow.distributed.launch: got signal {stopped[0]}, stopping the "
                      f"processes", file=sys.stderr, flush=True)
                _stop(procs, args.kill_timeout)
                return 128 + stopped[0]
            codes = [p.poll() for p in procs]
            failed = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                local, code = failed[0]
                rank = args.node_rank * args.nproc_per_node + local
                print(f"jflow.distributed.launch: process {rank} (local rank {local}, pid "
                      f"{procs[local].pid}) exited with code {code}; stopping the others",
                      file=sys.stderr, flush=True)
                _stop(procs, args.kill_timeout)
                return _exit_code(code)
            if all(c == 0 for c in codes):
                return 0
            time.sleep(_POLL_S)
    finally:
        if any(p.poll() is None for p in procs):  # an error in the launcher itself
            _stop(procs, args.kill_timeout)
        for t in relays:  # the processes have ended: their last lines are out before we are
            t.join(timeout=10)
        for s, h in old.items():
            signal.signal(s, h)


if __name__ == "__main__":
    sys.exit(main())
