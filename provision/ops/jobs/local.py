"""Jobs on a mocked cluster: each node is a local folder and a local process tree.

Node ``R`` of a mocked cluster is ``$PROVISION_HOME/ssh/<stack>/mock-nodes/node-R`` (its ``home``,
``var/lib/provision/jobs``); a cluster with a shared filesystem also gets ``mock-nodes/shared`` (the
mount point's stand-in), which then holds the jobs, as ``/shared/provision/jobs`` does on real nodes.
Each rank runs under :mod:`provision.ops.jobs.supervise`, detached from this process, with the
node's environment (its ``/etc/provision/env`` copy, ``HOME``, and the mock runtime's launcher tools
from ``images/fake-node/bin`` first on ``PATH``). ``provision down`` removes the folders.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from provision.ops.jobs.backend import LogCallback
from provision.ops.jobs.mocknodes import mock_root, node_home, shared_dir
from provision.ops.jobs.model import STATUS_FILES, JobSpec, JobStatus, rank_status
from provision.ops.jobs.supervise import MOCK_STOP_SEC
from provision.ops.jobs.units import rank_script

#: The supervisor runs as a script (no package import: it starts in a few milliseconds).
_SUPERVISOR = str(Path(__file__).with_name("supervise.py"))


def _alive(pid: int | None) -> bool:
    """Whether ``pid`` is a running supervisor (not a zombie, not a reused pid)."""
    if not pid:
        return False
    proc = Path(f"/proc/{pid}")
    if proc.is_dir():
        try:
            stat = (proc / "stat").read_text()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            return False
        return stat.rsplit(")", 1)[-1].split()[0] != "Z" and _SUPERVISOR.encode() in cmdline
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return None


class LocalBackend:
    """Ranks as local process trees under the mock supervisor (see the module docs)."""

    name = "mock"

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster

    def _jobs_root(self, rank: int) -> Path:
        shared = shared_dir(self.cluster)
        base = shared if shared is not None else mock_root(self.cluster) / f"node-{rank}" / "var/lib"
        return base / "provision" / "jobs"

    def job_dir(self, rank: int, job_id: str) -> str:
        return str(self._jobs_root(rank) / job_id)

    def _env(self, rank: int) -> dict[str, str]:
        from provision.ops.access import mock_env_files
        from provision.planning.images import images_dir

        path, env = mock_env_files(self.cluster)[rank]
        fakes = images_dir() / "fake-node" / "bin"
        return {
            **os.environ,
            **env,
            "PROVISION_ENV_FILE": str(path),
            "PROVISION_NODE": f"{self.cluster.spec.name}-{rank}",
            "HOME": str(node_home(self.cluster, rank)),
            "PATH": os.pathsep.join([str(fakes), os.environ.get("PATH", "")]),
        }

    def submit(self, spec: JobSpec, runtime: Any = None) -> None:
        """Start the ranks as local process trees (the mocked nodes run the line here: ``runtime`` is not used)."""
        for rank in spec.ranks:
            folder = Path(self.job_dir(rank, spec.id))
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "job.json").write_text(spec.to_json(), encoding="utf-8")
            (folder / f"rank-{rank}.sh").write_text(rank_script(spec, rank, str(folder)), encoding="utf-8")
        self._start(spec, spec.ranks, spec.max_restarts)

    def _start(self, spec: JobSpec, ranks: Sequence[int], max_restarts: int) -> None:
        starting = {}
        for rank in ranks:  # every node's supervisor at once; each prints its pid and detaches
            folder = Path(self.job_dir(rank, spec.id))
            starting[rank] = subprocess.Popen(  # noqa: S603  # this interpreter, the supervisor script
                [sys.executable, _SUPERVISOR, str(folder), str(rank), str(max_restarts)],
                env=self._env(rank),
                cwd=node_home(self.cluster, rank),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        for rank, proc in starting.items():
            out, err = proc.communicate(timeout=60)
            pid = out.strip()
            if proc.returncode != 0 or not pid.isdigit():
                raise RuntimeError(f"the mock supervisor of rank {rank} did not start: {err.strip()}")
            (Path(self.job_dir(rank, spec.id)) / f"rank-{rank}.supervisor").write_text(pid + "\n", encoding="utf-8")

    def resume(self, spec: JobSpec, rank: int, restarts: int, runtime: Any = None) -> None:
        """Start lost rank ``rank`` again on its (new) node as restart ``restarts + 1``, with what is left of the
        job's restart budget; the node's folder is written again where the replacement left it empty."""
        folder = Path(self.job_dir(rank, spec.id))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "job.json").write_text(spec.to_json(), encoding="utf-8")
        (folder / f"rank-{rank}.sh").write_text(rank_script(spec, rank, str(folder)), encoding="utf-8")
        (folder / f"rank-{rank}.restarts").write_text(f"{restarts}\n", encoding="utf-8")
        self._start(spec, [rank], max(0, spec.max_restarts - restarts - 1))

    def _supervisor(self, rank: int, job_id: str) -> int | None:
        text = _read(Path(self.job_dir(rank, job_id)) / f"rank-{rank}.supervisor")
        return int(text) if text and text.strip().isdigit() else None

    def _status(self, spec: JobSpec) -> JobStatus:
        ranks = []
        for rank in spec.ranks:
            folder = Path(self.job_dir(rank, spec.id))
            alive = _alive(self._supervisor(rank, spec.id))  # before the files: a rank ending now shows its exit
            files = {k: v for k in STATUS_FILES if (v := _read(folder / f"rank-{rank}.{k}")) is not None}
            ranks.append(rank_status(rank, files, alive=alive, cancelled=(folder / "cancelled").exists()))
        return JobStatus(spec, tuple(ranks))

    def statuses(self, job_id: str | None = None) -> list[JobStatus]:
        from provision.ops.access import cluster_hosts

        specs: dict[str, JobSpec] = {}
        for rank in range(len(cluster_hosts(self.cluster))):
            root = self._jobs_root(rank)
            for path in sorted(root.glob("*/job.json")) if root.is_dir() else []:
                if job_id is not None and path.parent.name != job_id:
                    continue
                text = _read(path)
                if text:
                    specs.setdefault(path.parent.name, JobSpec.from_json(text))
        return [self._status(s) for s in specs.values()]

    def logs(
        self, spec: JobSpec, ranks: Sequence[int], *, follow: bool, tail: int | None, on_line: LogCallback
    ) -> None:
        handles: dict[int, list[Any]] = {}
        for rank in ranks:
            path = Path(self.job_dir(rank, spec.id)) / f"rank-{rank}.log"
            if tail is not None and path.exists():
                from collections import deque

                with path.open(encoding="utf-8", errors="replace") as f:
                    for line in deque(f, maxlen=tail):
                        on_line(rank, line.rstrip("\n"))
                handles[rank] = [path, path.stat().st_size, ""]
            else:
                handles[rank] = [path, 0, ""]
        while True:
            for rank, h in handles.items():
                path, offset, partial = h
                if not path.exists():
                    continue
                with path.open("rb") as f:
                    f.seek(offset)
                    data = f.read(1 << 20)
                h[1] = offset + len(data)
                text = partial + data.decode(errors="replace")
                *lines, h[2] = text.split("\n")
                for line in lines:
                    on_line(rank, line)
            if not follow:
                for rank, h in handles.items():
                    if h[2]:
                        on_line(rank, h[2])
                return
            running = [r for r in ranks if _alive(self._supervisor(r, spec.id))]
            if not running and all(h[1] >= h[0].stat().st_size for h in handles.values() if h[0].exists()):
                for rank, h in handles.items():
                    if h[2]:
                        on_line(rank, h[2])
                return
            time.sleep(0.2)

    def cancel(self, spec: JobSpec) -> None:
        for rank in spec.ranks:
            (Path(self.job_dir(rank, spec.id)) / "cancelled").touch()
        pids = {rank: self._supervisor(rank, spec.id) for rank in spec.ranks}
        for pid in pids.values():
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)  # type: ignore[arg-type]
        deadline = time.monotonic() + MOCK_STOP_SEC + 5
        while any(_alive(p) for p in pids.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        for rank in spec.ranks:  # whatever outlived its supervisor: the rank command's process group
            text = _read(Path(self.job_dir(rank, spec.id)) / f"rank-{rank}.pid")
            if text and text.strip().isdigit():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(os.getpgid(int(text)), signal.SIGKILL)


def stop_all(cluster: Any) -> int:
    """Stop every rank still running on a mocked cluster's nodes (``down`` does, before removing them).

    Works from the node folders alone (the cluster's outputs may already be gone). Returns how many ranks it stopped.
    """
    from provision.engine.automation import stack_ssh_dir  # access.ssh_dir (no import of access: no circle)

    root = stack_ssh_dir(cluster.stack) / "mock-nodes"
    found = []
    for path in root.rglob("rank-*.supervisor") if root.is_dir() else []:
        text = _read(path)
        pid = int(text) if text and text.strip().isdigit() else None
        if _alive(pid):
            (path.parent / "cancelled").touch()
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)  # type: ignore[arg-type]
            found.append((pid, path.with_name(path.name.replace(".supervisor", ".pid"))))
    deadline = time.monotonic() + MOCK_STOP_SEC + 5
    while any(_alive(p) for p, _ in found) and time.monotonic() < deadline:
        time.sleep(0.05)
    for _, pid_file in found:
        text = _read(pid_file)
        if text and text.strip().isdigit():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(os.getpgid(int(text)), signal.SIGKILL)
    return len(found)
