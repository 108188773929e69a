"""The mocked node's process supervisor for one rank of a job (what systemd does on a real node).

    python .../provision/ops/jobs/supervise.py JOB_DIR RANK MAX_RESTARTS     (standard library only)

It detaches (double fork: the caller returns at once, the supervisor belongs to no terminal),
prints its pid, then runs ``bash JOB_DIR/rank-RANK.sh`` in a process group of its own, its output
appended to ``rank-RANK.log``; a failed attempt is restarted at most MAX_RESTARTS times (systemd's
``Restart=on-failure`` with a start limit). SIGTERM stops the rank's whole process group (as
``KillMode=control-group``): SIGTERM, then SIGKILL once a grace period (``TimeoutStopSec``) has passed
with the rank still running; a rank that ends at once is done at once, as a systemd unit stops as soon
as its processes are gone (systemd.kill(5), systemd.service(5) ``TimeoutStopSec=``:
https://www.freedesktop.org/software/systemd/man/latest/systemd.kill.html). The stop never waits in
the signal handler: the handler sends SIGTERM and arms a timer (``setitimer``) whose SIGALRM sends
SIGKILL; the main loop reaps the rank as soon as it exits. The supervisor is the child subreaper of
the rank's processes (``PR_SET_CHILD_SUBREAPER``, as systemd is for its units; prctl(2)) and reaps
them as they exit (SIGCHLD), so a finished group is gone, not zombies left to the init process. The
environment (the node's env file, ``PATH``) is the caller's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

#: Seconds between a failed attempt and its restart in the mock (systemd's RestartSec on real nodes).
MOCK_RESTART_SEC = 0.2
#: Seconds a stopped rank gets between SIGTERM and SIGKILL in the mock.
MOCK_STOP_SEC = 5.0


#: prctl(2) option that makes this process the reaper of its orphaned descendants (linux/prctl.h).
_PR_SET_CHILD_SUBREAPER = 36


def _subreaper() -> None:
    """Become the reaper of the rank's orphans (Linux; elsewhere the init process reaps them, later)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _reap_orphans(leader: int | None = None) -> None:
    """Reap the exited orphans this process adopted, never ``leader`` (the rank's own process, whose exit status
    is :class:`subprocess.Popen`'s to take): each exited child is looked at first (``WNOWAIT``), then reaped."""
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if info is None or info.si_pid == leader:
            return
        with contextlib.suppress(ChildProcessError):
            os.waitpid(info.si_pid, 0)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)


def _stop_group(pgid: int, grace: float) -> None:
    """What is left of a rank whose leader was reaped: SIGTERM, SIGKILL when still there after ``grace``."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while True:
        _reap_orphans()
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    _signal_group(pgid, signal.SIGKILL)
    end = time.monotonic() + 1.0  # SIGKILL cannot be caught: the group ends at once; reap it
    while time.monotonic() < end:
        _reap_orphans()
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def supervise(job_dir: Path, rank: int, max_restarts: int) -> int:
    """Run the rank until it succeeds, is cancelled or has failed ``max_restarts + 1`` times; its last exit code."""
    script = job_dir / f"rank-{rank}.sh"
    log = job_dir / f"rank-{rank}.log"
    child: list[subprocess.Popen[bytes]] = []
    stop_at: list[float] = []  # set by SIGTERM/SIGINT: when the running rank's grace ends

    def running() -> subprocess.Popen[bytes] | None:
        # returncode only (no poll() here): the main thread may be inside Popen.wait.
        return child[0] if child and child[0].returncode is None else None

    def on_term(signum: int, frame: FrameType | None) -> None:
        if not stop_at:
            stop_at.append(time.monotonic() + MOCK_STOP_SEC)
        proc = running()
        if proc is not None:
            _signal_group(proc.pid, signal.SIGTERM)
            left = stop_at[0] - time.monotonic()
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        proc = running()  # the grace is over and the rank still runs
        if proc is not None:
            _signal_group(proc.pid, signal.SIGKILL)

    def on_child(signum: int, frame: FrameType | None) -> None:
        if not spawning:  # an attempt being started: its pid is not in ``child`` yet (its turn comes later)
            _reap_orphans(child[0].pid if child else None)

    spawning = [True]
    signal.signal(signal.SIGCHLD, on_child)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    _subreaper()
    attempt = 0
    while True:
        spawning[:] = [True]
        with log.open("ab") as out:
            proc = subprocess.Popen(  # noqa: S603  # the job's own script
                ["bash", str(script)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        child[:] = [proc]
        spawning.clear()
        if stop_at:  # asked to stop while the rank was starting: the handler did not see it yet
            on_term(signal.SIGTERM, None)
        code = proc.wait()  # returns as soon as the rank's leader exits (SIGALRM ends it after the grace)
        signal.setitimer(signal.ITIMER_REAL, 0)
        # What is left of the rank's process group (a command's own background children) goes with it:
        # it gets what is left of the grace when stopping, else 0.5 s.
        _stop_group(proc.pid, max(0.5, stop_at[0] - time.monotonic()) if stop_at else 0.5)
        if code == 0 or stop_at or (job_dir / "cancelled").exists() or attempt >= max_restarts:
            return code
        attempt += 1
        time.sleep(MOCK_RESTART_SEC)
        if stop_at:  # stopped between two attempts: no new one
            return code


def main(argv: list[str]) -> int:
    job_dir, rank, max_restarts = Path(argv[0]), int(argv[1]), int(argv[2])
    if os.fork() > 0:  # the caller's child exits at once; the grandchild is the supervisor
        return 0
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    pid = os.getpid()
    sys.stdout.write(f"{pid}\n")
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    code = supervise(job_dir, rank, max_restarts)
    (job_dir / f"rank-{rank}.supervisor-exit").write_text(f"{code}\n")
    return code


if __name__ == "__main__":  # pragma: no cover - a process of its own
    os._exit(main(sys.argv[1:]) if len(sys.argv) == 4 else 2)
