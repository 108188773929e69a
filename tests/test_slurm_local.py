"""The local Slurm's process handling (:mod:`provision.ops.slurm_local`), no Slurm needed: a daemon that has exited
is stopped even while it waits, as a zombie, for a PID 1 that reaps late (a container's init)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from provision.ops import slurm_local
from provision.ops.slurm_local import LocalSlurm, alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _zombie() -> subprocess.Popen[bytes]:
    """A child that has exited and is not reaped yet (the caller reaps it)."""
    child = subprocess.Popen(["/bin/true"])  # noqa: S603
    for _ in range(400):  # it exits at once; the bound only keeps a broken machine from hanging the test
        stat = Path(f"/proc/{child.pid}/stat").read_text()
        if stat.rpartition(")")[2].split()[0] == "Z":
            return child
        time.sleep(0.005)
    raise AssertionError(f"pid {child.pid} did not exit: {stat}")


def test_a_zombie_is_not_alive_and_a_running_or_reaped_process_reads_as_such() -> None:
    child = _zombie()
    try:
        assert Path(f"/proc/{child.pid}").exists()  # still in the process table
        assert not alive(child.pid)
        assert alive(os.getpid())
    finally:
        child.wait()
    assert not alive(child.pid)


def test_stop_does_not_wait_for_daemons_that_exited_but_are_not_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    children = {name: _zombie() for name in ("munged", "slurmctld", "slurmd")}
    local = LocalSlurm(tmp_path / "s", "z")
    (local.folder / "run").mkdir(parents=True)
    for name, child in children.items():
        (local.folder / "run" / f"{name}.pid").write_text(f"{child.pid}\n")
    slept: list[float] = []

    def no_sleep(seconds: float) -> None:
        slept.append(seconds)
        raise AssertionError(f"stop() waited {seconds} s for daemons that had exited")

    monkeypatch.setattr(slurm_local.time, "sleep", no_sleep)
    try:
        assert not local.running()
        local.stop()
    finally:
        monkeypatch.undo()
        for child in children.values():
            child.wait()
    assert slept == []
    assert not any((local.folder / "run" / f"{name}.pid").exists() for name in children)


def test_slurmd_starts_once_the_controller_listens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """slurmd registers as it starts; one that finds no controller registers only at its next try, later."""
    events: list[str] = []
    answers = iter([False, False, True])

    def listening(port: int) -> bool:
        up = next(answers, True)
        events.append(f"listening={up}")
        return up

    def run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        name = Path(argv[0]).name
        events.append(name)
        out = "z-0 idle\n" if name == "sinfo" else ""
        return subprocess.CompletedProcess(argv, 0, out, "")

    monkeypatch.setattr(slurm_local, "missing", lambda: None)
    monkeypatch.setattr(slurm_local, "_listening", listening)
    monkeypatch.setattr(slurm_local.subprocess, "run", run)
    monkeypatch.setattr(slurm_local.time, "sleep", lambda _s: None)
    local = LocalSlurm(tmp_path / "s", "z")
    monkeypatch.setattr(LocalSlurm, "short", tmp_path / "short")
    local.start()
    assert events == [
        "munged",
        "slurmctld",
        "listening=False",
        "listening=False",
        "listening=True",
        "slurmd",
        "sinfo",
    ]
