"""A multi-process failure prints jflow's error, not gRPC / absl C++ logs
(:mod:`jflow.foreign_logs`).

Two processes run tests/_consistency_worker.py's ``absent`` case without the launcher (the
launcher stops the other process at once, which races with its logging): process 0 raises
the consistency error and exits; process 1, asleep, loses the coordinator and is ended by
JAX's coordination client, which (unquieted) logs ``E.../F... coordination_service_agent.cc``
lines, ``Additional GRPC error information ...`` and ``*** Check failure stack trace: ***``.
Run once as a user would (nothing set: quiet), once with ``GRPC_VERBOSITY=ERROR`` set by the
user (respected: the lines are back, which also shows the check below can see them).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _spawn import ROOT, free_port, needs_gloo

from jflow import foreign_logs
from jflow.sharding.consistency import ENV_TIMEOUT

WORKER = Path(__file__).resolve().parent / "_consistency_worker.py"
TIMEOUT_S = 120

#: a C++ log line (absl / glog format ``E1202 03:41:46.500617  22717 file.cc:159] ...``, or
#: absl's ``E0000 00:00:...`` before its clock is set) or gRPC's / absl's own words
_FOREIGN = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d|grpc|absl::|Check failure stack trace",
                      re.IGNORECASE | re.MULTILINE)


def _run_pair(tmp_path: Path, **extra: str) -> tuple[list[int], list[str]]:
    """Both processes, each to its own file, waited for (never stopped early); return codes
    and stdout + stderr per process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]), JAX_PLATFORMS="cpu",
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), WORLD_SIZE="2",
        JFLOW_LOCAL_DEVICE_COUNT="2", **{ENV_TIMEOUT: "3"})
    for k in ("XLA_FLAGS", *foreign_logs.QUIET_ENV, "TF_CPP_MIN_LOG_LEVEL"):
        env.pop(k, None)
    env.update(extra)
    logs = [tmp_path / f"out{r}.txt" for r in range(2)]
    procs = []
    for r, log in enumerate(logs):
        with open(log, "w") as f:
            procs.append(subprocess.Popen([sys.executable, "-u", str(WORKER), "absent"],
                                          stdout=f, stderr=subprocess.STDOUT, cwd=str(ROOT),
                                          env=dict(env, RANK=str(r), LOCAL_RANK=str(r))))
    deadline = time.monotonic() + TIMEOUT_S
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(0.2)
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()
    outs = [log.read_text(errors="replace") for log in logs]
    assert time.monotonic() < deadline, f"the processes did not end within {TIMEOUT_S} s: {outs}"
    return [p.returncode for p in procs], outs


@needs_gloo
@pytest.mark.parametrize("user_setting", [None, "ERROR"])
def test_a_failed_consistency_check_is_not_buried_in_grpc_logs(tmp_path: Path,
                                                               user_setting: str | None) -> None:
    extra = {} if user_setting is None else {"GRPC_VERBOSITY": user_setting}
    codes, (out0, out1) = _run_pair(tmp_path, **extra)
    report = f"--- process 0 (rc {codes[0]}):\n{out0}\n--- process 1 (rc {codes[1]}):\n{out1}"
    assert codes[0] == 1 and codes[1] != 0, report  # 0 raised; 1 was ended (coordinator gone)
    assert ("RuntimeError: flow.distributed consistency check: process 1 did not reach this "
            "process's (0) global op call #2") in out0, report
    assert "NO-ERROR" not in out0 + out1, report
    foreign = _FOREIGN.findall(out0 + out1)
    if user_setting is None:
        assert not foreign, report
    else:  # the user's own setting wins: JAX's coordination client's lines are printed
        assert foreign and "coordination service" in out1, report


def test_quiet_sets_only_what_the_user_has_not() -> None:
    env: dict[str, str] = {}
    assert foreign_logs.quiet(env) == {"GRPC_VERBOSITY": "NONE"} == env
    env = {"GRPC_VERBOSITY": "DEBUG"}
    assert foreign_logs.quiet(env) == {} and env == {"GRPC_VERBOSITY": "DEBUG"}
    env = {"GRPC_VERBOSITY": ""}  # set but empty counts as unset
    assert foreign_logs.quiet(env) == {"GRPC_VERBOSITY": "NONE"} == env
