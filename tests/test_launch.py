"""``python -m jflow.distributed.launch`` and the multi-process consistency check.

* the launcher's environment (``RANK``, ``WORLD_SIZE``, ...) and its failure handling (one
  process fails: the others are stopped and the launcher exits with that code, no hang),
  with plain Python scripts;
* examples/digits_multiprocess.py launched as 2 processes x 4 CPU devices (DDP, gloo), its
  loop without any cross-process sync (``--local-loss``), does not hang and prints the same
  per-step global-batch losses as the script run alone with plain local tensors (the
  reference: no DDP, no global tensors, one device). From step 2 on the losses depend on the
  SGD updates, so a gradient not reduced over both processes' rows, or summed where
  PyTorch's DDP averages (checked by hand: step 2 then reads 2.2683 instead of 2.2821),
  fails the comparison;
* processes that disagree (another op, another shape, another call order, a process that
  never arrives) stop with an error naming the op on both sides, within the check's timeout.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _spawn import ROOT, needs_gloo

from jflow.distributed import launch
from jflow.sharding.consistency import ENV_MODE, ENV_TIMEOUT, get_check, set_check

EXAMPLE = ROOT / "examples" / "digits_multiprocess.py"
WORKER = Path(__file__).resolve().parent / "_consistency_worker.py"
LAUNCHER = Path(launch.__file__).resolve()
STEPS = 20


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]), JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)  # each process sets its own device count
    for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
              "JFLOW_LOCAL_DEVICE_COUNT"):
        env.pop(k, None)
    env.update(extra)
    return env


def _run(argv: list[str], timeout_s: float, **env: str) -> tuple[int, str, float]:
    """Run ``python argv`` in its own session (a timeout kills the launcher and its
    processes); returns the exit code, stdout + stderr and the seconds it took."""
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=_env(**env), cwd=str(ROOT),
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        pytest.fail(f"python {' '.join(argv)} did not finish within {timeout_s} s:\n{out}")
    return p.returncode, out, time.monotonic() - t0


def _launch(args: list[str], timeout_s: float, *, as_module: bool = False,
            **env: str) -> tuple[int, str, float]:
    """The launcher: ``python -m jflow.distributed.launch`` (``as_module``, as users run it;
    test_launcher_sets_the_torchrun_environment), else its file run as a script. The same
    ``main()`` either way, but ``-m`` imports the jflow package (JAX with it, ~2.5 s of CPU)
    in a process that only starts and relays others; the launcher imports nothing of jflow
    itself, and the package's import changes no variable the processes inherit
    (test_launcher_sets_the_torchrun_environment compares their whole environments)."""
    if as_module:
        return _run(["-m", "jflow.distributed.launch", *args], timeout_s, **env)
    return _run([str(LAUNCHER), *args], timeout_s, **env)


# -- the launcher, without JAX -----------------------------------------------------------------
def test_launcher_sets_the_torchrun_environment(tmp_path: Path) -> None:
    script = tmp_path / "show.py"
    script.write_text(
        "import json, os, sys\n"
        "keys = ['RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'LOCAL_WORLD_SIZE', 'MASTER_ADDR',\n"
        "        'MASTER_PORT', 'JFLOW_LOCAL_DEVICE_COUNT', 'PYTHONUNBUFFERED']\n"
        "line = ' '.join(f'{k}={os.environ.get(k)}' for k in keys)\n"
        "with open(sys.argv[1] + os.environ['RANK'], 'w') as f:  # not stdout: lines interleave\n"
        "    f.write(f'ENV {line} {sys.argv[2:]}')\n"
        "with open(sys.argv[1] + os.environ['RANK'] + '.json', 'w') as f:\n"
        "    json.dump(dict(os.environ), f)\n")
    envs = {}
    for as_module in (True, False):  # as users run it; as the other tests do (see _launch)
        rc, out, _ = _launch(["--nproc_per_node", "3", "--nnodes", "2", "--node_rank", "1",
                              "--master_addr", "10.0.0.7", "--master_port", "4321",
                              "--local_device_count", "2", str(script), str(tmp_path / "env"),
                              "--lr", "0.1"], 60, as_module=as_module)
        assert rc == 0, out
        lines = sorted((tmp_path / f"env{r}").read_text() for r in range(3, 6))
        assert lines == [f"ENV RANK={3 + i} LOCAL_RANK={i} WORLD_SIZE=6 LOCAL_WORLD_SIZE=3 "
                         f"MASTER_ADDR=10.0.0.7 MASTER_PORT=4321 JFLOW_LOCAL_DEVICE_COUNT=2 "
                         f"PYTHONUNBUFFERED=1 ['--lr', '0.1']" for i in range(3)], out
        envs[as_module] = [json.loads((tmp_path / f"env{r}.json").read_text())
                           for r in range(3, 6)]
    # importing the jflow package (-m) changes nothing the processes inherit
    assert envs[True] == envs[False]


def test_launcher_prefixes_whole_lines_with_the_rank(tmp_path: Path) -> None:
    """Each process's lines reach the launcher's output whole, prefixed with its rank (as
    torchrun does), however the processes' writes interleave; --no_prefix passes through."""
    script = tmp_path / "talk.py"
    script.write_text("import os, sys\n"
                      "r = os.environ['RANK']\n"
                      "for i in range(200):\n"
                      "    sys.stdout.write(f'line {i} of rank ')\n"  # two writes per line
                      "    sys.stdout.write(f'{r} end\\n')\n"
                      "print(f'err of rank {r}', file=sys.stderr)\n"
                      "sys.stdout.write('no newline')\n")
    rc, out, _ = _launch(["--nproc_per_node", "2", str(script)], 60)
    assert rc == 0, out
    lines = out.splitlines()
    for r in (0, 1):
        mine = [ln for ln in lines if ln.startswith(f"[rank{r}]: ")]
        assert [ln for ln in mine if ln.startswith(f"[rank{r}]: line")] == \
            [f"[rank{r}]: line {i} of rank {r} end" for i in range(200)], out[:2000]
        assert f"[rank{r}]: err of rank {r}" in mine and f"[rank{r}]: no newline" in mine
    assert all(re.match(r"\[rank[01]\]: ", ln) for ln in lines), out[:2000]
    rc, out, _ = _launch(["--nproc_per_node", "1", "--no_prefix", str(script)], 60)
    assert rc == 0 and "line 0 of rank 0 end\n" in out and "[rank" not in out, out[:2000]


def test_launcher_default_ports() -> None:
    one = launch.build_envs(2, master_port=launch.free_port())
    assert one[0]["MASTER_PORT"] == one[1]["MASTER_PORT"] != str(launch.DEFAULT_MULTI_NODE_PORT)
    assert [e["RANK"] for e in one] == ["0", "1"] and one[0]["WORLD_SIZE"] == "2"
    assert "JFLOW_LOCAL_DEVICE_COUNT" not in launch.build_envs(1, base={})[0]


def test_launcher_stops_the_others_when_one_fails(tmp_path: Path) -> None:
    script = tmp_path / "fail.py"
    script.write_text("import os, sys, time\n"
                      "if os.environ['RANK'] == '1':\n"
                      "    sys.exit(3)\n"
                      "time.sleep(120)\n")
    rc, out, took = _launch(["--nproc_per_node", "2", "--kill_timeout", "2", str(script)], 60)
    assert rc == 3, out
    assert "process 1 (local rank 1" in out and "exited with code 3" in out, out
    assert took < 30, f"the launcher took {took:.0f} s to stop the sleeping process"


@pytest.mark.parametrize("argv,message", [
    (["--nproc_per_node", "0", "x.py"], "--nproc_per_node must be >= 1"),
    (["--nnodes", "2", "--node_rank", "2", "x.py"], "--node_rank must be in 0..1"),
    (["--local_device_count", "0", "x.py"], "--local_device_count must be >= 1"),
])
def test_launcher_rejects_bad_arguments(argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit, match=re.escape(message)):
        launch.main(argv)


# -- data-parallel training, launched vs. one process ------------------------------------------
def _losses(out: str) -> list[float]:
    return [float(v) for v in re.findall(r"^(?:\[rank\d+\]: )?step +\d+ +loss ([0-9.]+)$", out,
                                         re.M)]


def _global_losses(out: str) -> list[float]:
    """The per-step global-batch losses a ``--local-loss`` run prints after its loop."""
    return [float(v) for v in re.findall(
        r"^(?:\[rank\d+\]: )?step +\d+ +global-batch loss ([0-9.]+)$", out, re.M)]


@needs_gloo
def test_digits_two_processes_match_one_process_and_a_loop_without_sync_does_not_hang() -> None:
    """One launch checks both (each launch costs two process starts and their compiles):

    * no cross-process sync in the loop (``--local-loss``: rank 0 prints its own loss):
      eager global ops are independent executables, and run concurrently their gloo
      collectives paired up differently on the two processes (about 2 runs in 5 hung within
      8 steps, one process in the optimizer and the other in the next forward). Executables
      on a placement spanning processes now run one at a time (placement.wait_if_shared).
      20 steps give the race as many chances as two launches of 10;
    * the global-batch losses of those steps (averaged over the processes after the loop)
      equal the one-process run's, step by step."""
    pytest.importorskip("sklearn")
    # the one-process reference runs meanwhile (its own process: it needs no other)
    alone_p = subprocess.Popen([sys.executable, str(EXAMPLE), "--steps", str(STEPS)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=_env(), cwd=str(ROOT), start_new_session=True)
    try:
        rc, launched, _ = _launch(["--nproc_per_node", "2", "--local_device_count", "4",
                                   str(EXAMPLE), "--steps", str(STEPS), "--local-loss"], 240)
        alone, _ = alone_p.communicate(timeout=120)
    finally:
        if alone_p.poll() is None:
            os.killpg(alone_p.pid, signal.SIGKILL)
            alone_p.communicate()
    assert rc == 0, launched
    assert alone_p.returncode == 0, alone
    assert len(_losses(launched)) == STEPS, f"only rank 0 prints, once per step:\n{launched}"
    want, got = _losses(alone), _global_losses(launched)
    assert len(want) == STEPS, alone
    assert len(got) == STEPS, launched
    assert "2 processes, 8 devices" in launched, launched
    assert got == pytest.approx(want, rel=1e-5), (got, want)
    assert want[-1] < want[0] - 0.05, want  # it trains: the steps move the weights
    acc = [float(m) for m in re.findall(r"test accuracy ([0-9.]+)", alone + launched)]
    assert len(acc) == 2 and abs(acc[0] - acc[1]) <= 1 / 352, acc


# -- disagreeing processes -------------------------------------------------------------------
_MATMUL = "'matmul' with inputs [(16, 8) float32 S(0), (8, 3) float32 B]"


@needs_gloo
@pytest.mark.parametrize("case,expected", [
    ("op", [f"this process (0) runs {_MATMUL}", "as global op call #2, but process 1 runs "
            "'sigmoid' with inputs [(16, 8) float32 S(0)]"]),
    ("shape", [f"this process (0) runs {_MATMUL}",
               "but process 1 runs 'matmul' with inputs [(16, 8) float32 S(0), (8, 5) float32 "
               "B]"]),
    ("order", [f"this process (0) runs {_MATMUL}", "as global op call #2, but process 1 runs "
               f"{_MATMUL}", "as its call #3"]),
    ("absent", [f"process 1 did not reach this process's (0) global op call #2 ({_MATMUL}",
                "within 3 s"]),
])
def test_disagreeing_processes_fail_naming_the_op(case: str, expected: list[str]) -> None:
    rc, out, took = _launch(["--nproc_per_node", "2", "--local_device_count", "2",
                             "--kill_timeout", "2", str(WORKER), case], 90,
                            **{ENV_TIMEOUT: "3"})
    assert rc != 0, out
    assert "NO-ERROR" not in out, out
    assert "RuntimeError: flow.distributed consistency check" in out, out
    for text in expected:
        assert text in out, f"{text!r} not in:\n{out}"
    assert "The last global op all processes were checked at is call #1: 'relu'" in out, out
    assert not re.search(r"^\[rank\d\]: [IWEF]\d{4} |grpc|absl::", out, re.M | re.I), out  # quiet
    assert took < 45, f"took {took:.0f} s"


# -- configuration (this process: one process, nothing installed) ------------------------------
def test_check_is_off_in_one_process_and_configurable() -> None:
    import jflow as flow
    from jflow.sharding import consistency
    assert not consistency.installed()  # the pytest process never initialises jax.distributed
    old = flow.config.collective_check()
    try:
        assert flow.config.set_collective_check("all", timeout_s=7) == old
        assert get_check() == ("all", 7.0)
        with pytest.raises(ValueError, match=r"set_collective_check: mode must be one of"):
            set_check("sometimes")
        with pytest.raises(ValueError, match=r"timeout_s must be a positive number"):
            set_check(timeout_s=0)
    finally:
        set_check(*old)


def test_check_environment_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    from jflow.sharding import consistency
    monkeypatch.setenv(ENV_MODE, "ALL")
    monkeypatch.setenv(ENV_TIMEOUT, "12.5")
    assert (consistency._mode_from_env(), consistency._timeout_from_env()) == ("all", 12.5)
    monkeypatch.setenv(ENV_MODE, "maybe")
    with pytest.raises(ValueError, match=ENV_MODE):
        consistency._mode_from_env()
    monkeypatch.setenv(ENV_TIMEOUT, "soon")
    with pytest.raises(ValueError, match=ENV_TIMEOUT):
        consistency._timeout_from_env()


@pytest.mark.parametrize("error,expected", [
    ("UNAVAILABLE: recvmsg:Connection reset by peer\nAdditional GRPC error information",
     "this process (1) lost contact with the coordination service while reading process 0's "
     "fingerprint"),
    ("INTERNAL: something else\nAdditional GRPC error information",
     "reading process 0's fingerprint for global op call #"),
])
def test_a_lost_coordinator_is_reported_without_grpc_internals(error: str, expected: str) -> None:
    """When process 0 (which hosts the coordination service) stops on its own mismatch error,
    the other process's read fails; its error names the situation, not gRPC's text."""
    from jflow.sharding import consistency

    class Client:  # the two calls _exchange makes on jax.distributed's client
        def key_value_set(self, key: str, value: str) -> None:
            pass

        def blocking_key_value_get(self, key: str, timeout_ms: int) -> str:
            raise RuntimeError(error)

    with pytest.raises(RuntimeError) as info:
        consistency._exchange(Client(), 1, 2, "'relu' with inputs [(4,) float32 B]")
    text = str(info.value)
    assert expected in text and "'relu' with inputs [(4,) float32 B]" in text, text
    assert "grpc" not in text.lower() and info.value.__cause__ is None, text
    assert info.value.__suppress_context__
