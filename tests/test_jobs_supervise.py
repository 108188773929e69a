"""The mocked node's supervisor stops a rank as systemd stops a unit (``KillMode=control-group``): SIGTERM to the
rank's process group, SIGKILL only when the grace (``TimeoutStopSec``) runs out with the rank still there, and it is
done as soon as the rank's processes are gone, none of them left behind as a zombie.

Each case runs :func:`provision.ops.jobs.supervise.supervise` in a child Python (it installs signal handlers and
becomes a subreaper) that records every signal the supervisor sends, and signals it as ``cancel`` does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT, default_signals

SUPERVISE = ROOT / "provision" / "ops" / "jobs" / "supervise.py"

#: Runs supervise(JOB_DIR, 0, MAX_RESTARTS) with the grace GRACE; prints its exit code and the signals it sent.
DRIVER = """
import importlib.util, os, sys
from pathlib import Path

spec = importlib.util.spec_from_file_location("supervise", sys.argv[1])
sv = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sv)
sent = []
real_killpg = os.killpg

def killpg(pgid, signum):
    sent.append(int(signum))
    return real_killpg(pgid, signum)

os.killpg = killpg
sv.MOCK_STOP_SEC = float(sys.argv[3])
code = sv.supervise(Path(sys.argv[2]), 0, int(sys.argv[4]))
print(code, *sorted(set(sent) - {0}))
"""

#: A rank that stops cleanly: its command and a background helper left to the group end on SIGTERM. A short-lived
#: orphan (a double fork) ends while the rank runs.
CLEAN = """\
(sleep 0.01 & echo $! > "$D/orphan")
(sleep 300 &)
sleep 300 &
child=$!
trap 'kill -TERM "$child"' TERM
echo $$ > "$D/leader"
wait "$child"; rc=$?
exit "$rc"
"""

#: A rank whose processes ignore SIGTERM (an ignored signal stays ignored in the children).
STUBBORN = """\
trap '' TERM
echo attempt >> "$D/attempts"
(sleep 300 &)
sleep 300 &
child=$!
echo $$ > "$D/leader"
wait "$child"
"""


def _stop(tmp_path: Path, script: str, grace: float, max_restarts: int = 0) -> tuple[int, set[int], int]:
    """Start the supervisor on ``script``, SIGTERM it once the rank runs; (exit code, signals sent, rank's group)."""
    (tmp_path / "rank-0.sh").write_text(script, encoding="utf-8")
    proc = subprocess.Popen(  # noqa: S603  # this interpreter
        [sys.executable, "-c", DRIVER, str(SUPERVISE), str(tmp_path), str(grace), str(max_restarts)],
        env={**os.environ, "D": str(tmp_path)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_signals,  # noqa: PLW1509  # no threads here
    )
    leader = tmp_path / "leader"
    end = time.monotonic() + 60  # only bounds a hung test: nothing is timed
    while not leader.exists() and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.01)
    assert leader.exists(), proc.communicate()
    orphan = tmp_path / "orphan"
    if orphan.exists():  # reaped by the supervisor (its subreaper) while the rank runs, not left a zombie
        while Path(f"/proc/{orphan.read_text().strip()}").exists() and time.monotonic() < end:
            time.sleep(0.01)
        assert not Path(f"/proc/{orphan.read_text().strip()}").exists()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    code, *sent = (int(word) for word in out.split())
    return code, set(sent), int(leader.read_text())


def _gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_rank_that_ends_on_sigterm_gets_no_sigkill_and_leaves_no_zombie(tmp_path: Path) -> None:
    # A grace far longer than the rank needs: a supervisor that waited it out would end with SIGKILL.
    code, sent, group = _stop(tmp_path, CLEAN, grace=30.0)
    assert code == 128 + signal.SIGTERM  # the rank's own exit code, as its exit file has it
    assert signal.SIGTERM in sent and signal.SIGKILL not in sent, sent
    assert _gone(group)  # the orphaned helper was reaped too, not left a zombie in the group


def test_a_rank_that_ignores_sigterm_is_killed_when_the_grace_runs_out(tmp_path: Path) -> None:
    code, sent, group = _stop(tmp_path, STUBBORN, grace=0.2, max_restarts=3)
    assert code == -signal.SIGKILL  # and not restarted: the stop was asked for
    assert sent == {signal.SIGTERM, signal.SIGKILL}
    assert _gone(group)
    assert (tmp_path / "attempts").read_text().splitlines() == ["attempt"]
