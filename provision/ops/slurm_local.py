"""A real Slurm on this machine: munged, slurmctld and slurmd for a mocked Slurm cluster and the tests.

The configuration is the project's own (:mod:`provision.planning.slurm`) for a one-node layout, with
what one unprivileged-cgroup-free host needs instead of the nodes' defaults: ports on loopback chosen
free, state, spool, logs and the munge socket in the folder, ``proctrack/linuxproc`` and no task
plugin (no cgroup), the node's one fake GPU ``File=/dev/null``, batch jobs scheduled without the delay
meant for high submission rates. Needs Debian's ``slurm-wlm`` and
``munge`` packages and root (slurmd runs jobs as their user). Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from provision.planning.slurm import NodeGroup, SlurmLayout, SlurmNode, SlurmPaths, render_all
from provision.spec.errors import UnsupportedError

BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")
START_WAIT_S = 60.0


def missing() -> str | None:
    """Why a local Slurm cannot start here, or ``None``."""
    absent = [b for b in BINARIES if shutil.which(b) is None and not Path("/usr/sbin", b).exists()]
    if absent:
        return f"{', '.join(absent)} not installed (apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "slurmd must run as root to start jobs as their user"
    return None


def _free_ports(n: int) -> list[int]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs. A zombie does not: it has exited and only waits for its parent to
    reap it, and a daemon's parent is PID 1, which in a container may reap late (seconds later, or never).
    ``/proc/PID/stat``'s third field is the state, ``Z`` for a zombie (proc(5))."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def _listening(port: int) -> bool:
    """Whether a socket of this machine listens on TCP ``port`` (``/proc/net/tcp``, ``tcp6``: the local address is
    ``HEXIP:HEXPORT`` and state ``0A`` is LISTEN, proc(5)); asked without connecting, which a daemon would log."""
    want = f":{port:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                words = line.split()
                if len(words) > 3 and words[1].endswith(want) and words[3] == "0A":
                    return True
    return False


def _binary(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


class LocalSlurm:
    """munged + slurmctld + slurmd in ``folder`` for a cluster ``name`` of one node (see the module docs)."""

    def __init__(self, folder: Path, name: str, *, gpus: int = 1) -> None:
        self.folder, self.name, self.gpus = folder, name, gpus
        self.nodes = 1
        self.node = f"{name}-0"

    @property
    def conf(self) -> Path:
        return self.folder / "etc" / "slurm.conf"

    @property
    def short(self) -> Path:
        """A short folder of this Slurm's own under the temp dir, named after its folder, for the munge socket
        and slurmd's spool (which holds the steps' Unix sockets): a Unix socket's path has at most 107 bytes,
        which a test's folder exceeds."""
        import hashlib
        import tempfile

        digest = hashlib.sha256(str(self.folder.resolve()).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"provision-slurm-{digest}"

    @property
    def socket(self) -> Path:
        return self.short / "munge.socket.2"

    def env(self) -> dict[str, str]:
        """What the Slurm client commands need to talk to this Slurm."""
        return {"SLURM_CONF": str(self.conf)}

    def layout(self) -> SlurmLayout:
        group = NodeGroup(
            partition="gpu",
            nodes=(SlurmNode(self.node, "127.0.0.1"),),
            gpus=self.gpus,
            gpu_type=None,
            cpus=1,
            memory_mib=256,
            features=("mock",),
            gpu_files="/dev/null",
        )
        return SlurmLayout(
            cluster=self.name.replace("-", "_")[:40],
            controller=SlurmNode(socket.gethostname().split(".")[0], "127.0.0.1"),
            groups=(group,),
            topology="tree",
            extra={
                "AuthInfo": f"socket={self.socket}",
                "MinJobAge": "60",
                # slurmctld schedules a submitted batch job at its next pass (once a second), not up to 3 s
                # later: the default delay spares a cluster fed jobs at a high rate, which one local node is
                # not (SchedulerParameters batch_sched_delay, https://slurm.schedmd.com/slurm.conf.html).
                # slurmctld reads the parameter at its first scheduling pass: the first job after a start
                # still waits the default.
                "SchedulerParameters": "batch_sched_delay=0",
            },
        )

    def paths(self, ctld: int, slurmd: int) -> SlurmPaths:
        f = self.folder
        return SlurmPaths(
            ctld_port=ctld,
            slurmd_port=slurmd,
            state_dir=str(f / "state"),
            spool_dir=str(self.short / "spool"),
            log_dir=str(f / "log"),
            run_dir=str(f / "run"),
            slurm_user="root",
            proctrack="proctrack/linuxproc",
            task="task/none",
            health_check=None,
        )

    def _pids(self) -> dict[str, int]:
        found = {}
        for name in ("munged", "slurmctld", "slurmd"):
            with contextlib.suppress(OSError, ValueError):
                found[name] = int((self.folder / "run" / f"{name}.pid").read_text().split()[0])
        return found

    def running(self) -> bool:
        """Whether the daemons of this folder run and answer."""
        pids = self._pids()
        if len(pids) < 3 or not all(alive(p) for p in pids.values()):
            return False
        ran = subprocess.run(  # noqa: S603
            [_binary("sinfo"), "-h", "-o", "%T"],
            env={**os.environ, **self.env()},
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        return ran.returncode == 0

    def start(self) -> LocalSlurm:
        """Write the configuration, start the daemons and wait (bounded) until the node is idle.

        Raises:
            UnsupportedError: the packages or root are missing.
            RuntimeError: a daemon did not come up (its log's tail).
        """
        why = missing()
        if why:
            raise UnsupportedError(f"a local Slurm cannot start: {why}")
        if self.running():
            return self
        self.stop()
        for sub in ("etc", "state", "log", "run", "munge", "jobs"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
        (self.folder / "jobs").chmod(0o755)
        key = self.folder / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
        ctld, slurmd = _free_ports(2)
        for name, text in render_all(self.layout(), self.paths(ctld, slurmd)).items():
            (self.folder / "etc" / name).write_text(text, encoding="utf-8")
        log = self.folder / "log"
        m = self.folder / "munge"
        (self.short / "spool").mkdir(mode=0o700, parents=True, exist_ok=True)
        started = subprocess.run(  # noqa: S603
            [
                _binary("munged"),
                "--force",
                f"--key-file={key}",
                f"--socket={self.socket}",
                f"--pid-file={self.folder / 'run' / 'munged.pid'}",
                f"--log-file={log / 'munged.log'}",
                f"--seed-file={m / 'munged.seed'}",
            ],
            check=False,
            timeout=30,
            capture_output=True,
            text=True,
        )
        if started.returncode != 0:
            raise RuntimeError(f"munged did not start: {started.stderr.strip()[-500:]}")
        env = {**os.environ, **self.env()}
        end = time.monotonic() + START_WAIT_S

        def daemon(name: str, *args: str) -> None:  # it daemonizes: this returns once it forked
            subprocess.run([_binary(name), *args], check=True, timeout=30, env=env, capture_output=True)  # noqa: S603

        daemon("slurmctld", "-f", str(self.conf))
        # slurmd registers as it starts and, finding no controller, tries again only a second later: it starts
        # once slurmctld listens.
        while not _listening(ctld) and time.monotonic() < end:
            time.sleep(0.02)
        daemon("slurmd", "-f", str(self.conf), "-N", self.node)
        while time.monotonic() < end:
            ran = subprocess.run(  # noqa: S603
                [_binary("sinfo"), "-h", "-N", "-o", "%N %T"],
                env=env,
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
            if ran.returncode == 0 and "idle" in ran.stdout:
                return self
            time.sleep(0.1)
        tails = {
            n: (log / f"{n}.log").read_text(errors="replace")[-1500:]
            for n in ("slurmctld", "slurmd")
            if (log / f"{n}.log").exists()
        }
        self.stop()
        raise RuntimeError(f"the local Slurm did not come up in {START_WAIT_S:.0f} s: {tails}")

    def stop(self) -> None:
        """Stop the daemons of this folder (by their pid files) and wait, bounded, until they have exited."""
        pids = self._pids()
        for pid in pids.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
        end = time.monotonic() + 20
        while any(alive(p) for p in pids.values()) and time.monotonic() < end:
            time.sleep(0.05)
        for pid in pids.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for name in pids:
            with contextlib.suppress(OSError):
                (self.folder / "run" / f"{name}.pid").unlink()
        shutil.rmtree(self.short, ignore_errors=True)


def mock_slurm(cluster: Any) -> LocalSlurm:
    """The local Slurm of a mocked Slurm cluster (in its mock node folders), started if it is not running."""
    from provision.ops.jobs.local import mock_root

    return LocalSlurm(mock_root(cluster) / "slurm", cluster.spec.name).start()


def stop_mock_slurm(cluster: Any) -> None:
    """Stop a mocked cluster's local Slurm, if it has one (``down``)."""
    from provision.ops.access import ssh_dir

    folder = ssh_dir(cluster) / "mock-nodes" / "slurm"
    if folder.is_dir():
        LocalSlurm(folder, cluster.spec.name).stop()
