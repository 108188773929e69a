"""The mocked node's process supervisor for one rank of a job (what systemd does on a real node).

    python .../provision/ops/jobs/supervise.py JOB_DIR RANK MAX_RESTARTS     (standard library only)

It detaches (double fork: the caller returns at once, the supervisor belongs to no terminal),
prints its pid, then runs ``bash JOB_DIR/rank-RANK.sh`` in a process group of its own, its output
appended to ``rank-RANK.log``; a failed attempt is restarted at most MAX_RESTARTS times (systemd's
``Restart=on-failure`` with a start limit). SIGTERM stops the rank's whole process group (as
``KillMode=control-group``): SIGTERM, then SIGKILL after a grace period. The environment (the node's
env file, ``PATH``) is the caller's.
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


def _stop_group(pgid: int, grace: float) -> None:
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def supervise(job_dir: Path, rank: int, max_restarts: int) -> int:
    """Run the rank until it succeeds, is cancelled or has failed ``max_restarts + 1`` times; its last exit code."""
    script = job_dir / f"rank-{rank}.sh"
    log = job_dir / f"rank-{rank}.log"
    child: list[subprocess.Popen[bytes]] = []
    stopping: list[bool] = []

    def on_term(signum: int, frame: FrameType | None) -> None:
        stopping.append(True)
        if child and child[0].poll() is None:
            _stop_group(child[0].pid, MOCK_STOP_SEC)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    code, attempt = 0, 0
    while True:
        with log.open("ab") as out:
            proc = subprocess.Popen(  # noqa: S603  # the job's own script
                ["bash", str(script)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        child[:] = [proc]
        code = proc.wait()
        # What is left of the rank's process group (a command's own background children) goes with it.
        _stop_group(proc.pid, 0.5)
        if code == 0 or stopping or (job_dir / "cancelled").exists() or attempt >= max_restarts:
            return code
        attempt += 1
        time.sleep(MOCK_RESTART_SEC)


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
