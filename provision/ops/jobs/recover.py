"""A detached job outlives its nodes: ranks lost with a node (spot preemption, a failed GPU replaced by the
health check or the cloud's repair) resume on the replacement from the newest checkpoint.

A rank is **lost** when its supervisor no longer runs it, it wrote no exit code and the job was not
cancelled: the VM it ran on is gone (with it its systemd unit, which lives under ``/run``) or was
replaced by a new one. A rank that never recorded a start counts as lost only once the job is
:data:`LOST_AFTER_S` old (before that it may still be starting: a fan-out to many nodes takes time);
on a cluster without a shared filesystem a replaced node's records are gone with it, so such a rank
is resumed after that grace. A rank that *exited* non-zero is not lost: its own supervisor restarted it
(``--max-restarts``) or gave up.

:func:`recover` resumes each lost rank of every live job whose restart budget is not spent
(``max_restarts`` counts every restart, for a failure or a lost node alike): the nodes are prepared
again first (a replaced node is new: its host key was re-pinned by :mod:`provision.ops.hostkeys`,
which drops the "prepared" markers), then the rank starts again under the node's supervisor with
``PROVISION_RESTART_COUNT`` one higher and ``PROVISION_RESUME_FROM`` set to the checkpoint folder's
newest entry. The surviving ranks keep running (torchrun's elastic rendezvous takes the new node in;
a rank that fails meanwhile is restarted by its supervisor within the same budget).

``provision jobs``, ``logs -f``, ``top``, ``up`` and ``run --restart-on-interruption`` call it, so the
user relaunches nothing. :func:`replace_mock_node` is the mocked cloud's node replacement: it ends the
node's processes without a word (as a preempted VM does) and gives the rank a fresh node.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provision.ops.jobs.model import JobStatus, RankStatus

#: Seconds after submission from which a rank with no recorded start is lost rather than still starting.
LOST_AFTER_S = 60.0


@dataclass(frozen=True)
class Resumed:
    """One lost rank started again (``restart``: its restart number, 1 for the first), or why it could not be
    (``error``: e.g. the node is not reachable yet)."""

    job_id: str
    rank: int
    restart: int
    error: str | None = None


def lost(rank: RankStatus, created: float, now: float | None = None) -> bool:
    """The rank's node (or its supervisor) lost it: not running, no exit code, not cancelled, and it had started
    (or the job, submitted at ``created``, is older than :data:`LOST_AFTER_S`)."""
    if rank.state != "failed" or rank.exit_code is not None:
        return False
    return rank.started is not None or (time.time() if now is None else now) - created > LOST_AFTER_S


def lost_ranks(job: JobStatus, now: float | None = None) -> list[RankStatus]:
    """The job's lost ranks, while the job is still worth resuming (no rank failed by its own exit code)."""
    if job.state == "cancelled" or any(r.state == "failed" and r.exit_code is not None for r in job.ranks):
        return []
    return [r for r in job.ranks if lost(r, job.spec.created, now)]


def recover(cluster: Any, jobs: list[JobStatus] | None = None) -> list[Resumed]:
    """Resume the lost ranks of ``jobs`` (default: every job on the cluster) within their restart budget."""
    from provision.ops.jobs import backend, list_jobs

    if cluster.spec.scheduler.kind != "none":  # Slurm handles a failed node itself (drain, requeue)
        return []
    found = list_jobs(cluster) if jobs is None else jobs
    todo = [(j, r) for j in found for r in lost_ranks(j) if r.restarts < j.spec.max_restarts]
    if not todo:
        return []
    from provision.ops.launch import ensure_prepared

    try:
        ensure_prepared(cluster)  # a replaced node is new: its env file, keys and runtime first
    except Exception as e:  # noqa: BLE001  # a node not back yet: say so, keep the listing; the next look retries
        return [Resumed(j.spec.id, r.rank, r.restarts + 1, f"{type(e).__name__}: {e}") for j, r in todo]
    engine = backend(cluster)
    runtime = None if cluster.mock else cluster.plan().runtime
    done = []
    for job, rank in todo:
        try:
            engine.resume(job.spec, rank.rank, rank.restarts, runtime)
        except Exception as e:  # noqa: BLE001  # as above: reported per rank, retried on the next look
            done.append(Resumed(job.spec.id, rank.rank, rank.restarts + 1, f"{type(e).__name__}: {e}"))
            continue
        done.append(Resumed(job.spec.id, rank.rank, rank.restarts + 1))
    return done


def replaced_nodes(cluster: Any, since: float) -> list[int]:
    """The ranks whose node was replaced since ``since`` (epoch seconds), as far as can be told from here.

    Mocked cluster: the mocked cloud's replacement marker. Real cluster: a node whose host key, as the cloud
    reports it (:func:`provision.ops.hostkeys.cloud_host_keys`), differs from the one pinned in the cluster's
    ``known_hosts``: a new VM has a new key. (A node that is gone and not replaced shows as unreachable.)
    """
    if cluster.mock:
        from provision.ops.jobs.local import mock_root

        found = []
        for marker in mock_root(cluster).glob("node-*/replaced"):
            with contextlib.suppress(OSError, ValueError):
                if float(marker.read_text().split()[0]) >= since:
                    found.append(int(marker.parent.name.split("-", 1)[1]))
        return sorted(found)
    from provision.ops.access import ssh_dir
    from provision.ops.hostkeys import _read, cloud_host_keys

    pinned = _read(ssh_dir(cluster) / "known_hosts")
    prefix = f"{cluster.spec.name}-"
    return sorted(
        int(alias[len(prefix) :])
        for alias, key in cloud_host_keys(cluster).items()
        if alias in pinned and pinned[alias] != key and alias[len(prefix) :].isdigit()
    )


def replace_mock_node(cluster: Any, rank: int) -> int:
    """The mocked cloud replaces node ``rank``: every process of the node's job ranks ends at once (SIGKILL:
    no exit code is written, as on a preempted VM) and the node comes back empty (its local folders gone; a
    shared folder stays). Returns how many rank processes it ended."""
    from provision.ops.jobs.local import _alive, mock_root

    node = mock_root(cluster) / f"node-{rank}"
    shared = mock_root(cluster) / "shared" / "provision" / "jobs"
    ended = 0
    for root in (node / "var/lib/provision/jobs", shared):
        for sup in root.glob(f"*/rank-{rank}.supervisor") if root.is_dir() else []:
            pid_text = sup.read_text().strip()
            pid = int(pid_text) if pid_text.isdigit() else None
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)  # type: ignore[arg-type]
                ended += 1
            child = sup.with_name(f"rank-{rank}.pid")
            text = child.read_text().strip() if child.exists() else ""
            if text.isdigit():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(os.getpgid(int(text)), signal.SIGKILL)
            end = time.monotonic() + 5
            while _alive(pid) and time.monotonic() < end:
                time.sleep(0.02)
    shutil.rmtree(node, ignore_errors=True)
    Path(node).mkdir(parents=True)
    (node / "replaced").write_text(f"{time.time():.3f}\n", encoding="utf-8")
    return ended
